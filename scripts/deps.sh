#!/usr/bin/env bash
# Makes sure the Debian packages tapegrad builds with are installed.
# As root it installs the missing ones with apt-get; otherwise it prints
# the exact command to run and exits non-zero.
#   scripts/deps.sh          what the library, the examples and the demo need
#                            (Open MPI: tiny_gpt train on several processes,
#                            and the tests that run it)
#   scripts/deps.sh --test   also what the test suite uses: chromium, for the
#                            browser test of tiny_gpt attn's page, and
#                            clang-format, for the style test (without them
#                            those tests are skipped)
set -euo pipefail

pkgs=(gcc g++ make cmake pkg-config libopenblas-dev check libsubunit-dev libstb-dev libcjson-dev libpcre2-dev
      libopenmpi-dev openmpi-bin)
if [ "${1:-}" = "--test" ]; then pkgs+=(chromium clang-format); fi
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "tapegrad: missing packages: ${missing[*]} (this script knows only Debian's apt-get)" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  echo "tapegrad: installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
else
  echo "tapegrad: these Debian packages are missing: ${missing[*]}" >&2
  echo "Install them, then run this again:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
