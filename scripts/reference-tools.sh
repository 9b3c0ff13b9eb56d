#!/usr/bin/env bash
# Installs every reference tool tapegrad's parity tests and benchmarks
# compare with, so that no parity test skips (under CI=true a skip is a
# failure) and bench/ has every column:
#   - Debian's python3-torch and python3-numpy (tests/parity_torch.py,
#     tests/parity_llama.py, bench/*.py run by /usr/bin/python3),
#     sentencepiece (spm_train, spm_encode: bench/tokenizers.py), and
#     nodejs + npm if there is no node or no npm;
#   - the npm packages tiktoken, tokenizers and node-llama-cpp (llama.cpp
#     with prebuilt CPU binaries: tests/gguf_llama.js) (pinned versions) into
#     bench/node_modules, or into $TAPEGRAD_NODE_MODULES when it is set
#     (the one place tests/parity_tiktoken.js and bench/tokenizers.py then
#     look).
# Idempotent: when everything is there it only checks (well under a
# second). As root it installs the missing Debian packages with apt-get;
# otherwise it prints the `sudo apt-get install` command, still installs
# the npm packages when node and npm are there, and exits 1. On a fresh
# machine at most about 400 MB of Debian packages to fetch (torch and its
# libraries; nodejs, and Debian's npm with its node-* packages) and about
# 90 MB of npm packages for tiktoken and tokenizers (native addons for
# every platform), plus about 100 MB for node-llama-cpp (its prebuilt CPU
# binaries, and llama.cpp's source as a git bundle; its GPU builds are
# removed).
#   scripts/reference-tools.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${TAPEGRAD_NODE_MODULES:-$root/bench/node_modules}
npm_pkgs=(tiktoken@1.0.22 tokenizers@0.23.2 node-llama-cpp@3.21.1)

pkgs=(python3-torch python3-numpy sentencepiece)
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
status=0
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "reference-tools: installing ${missing[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    echo "reference-tools: missing Debian packages: ${missing[*]}; run: sudo apt-get install -y ${missing[*]}" >&2
    status=1
  fi
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "reference-tools: node and npm are needed for ${npm_pkgs[*]}" >&2
  exit 1
fi

# name@version is in $dest
have() { node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' \
           "$dest/${1%@*}/package.json" "${1#*@}" 2>/dev/null; }
need=()
for p in "${npm_pkgs[@]}"; do have "$p" || need+=("$p"); done
if [ ${#need[@]} -eq 0 ]; then
  if [ $status -eq 0 ]; then
    echo "reference-tools: all there (${pkgs[*]}; ${npm_pkgs[*]} in $dest)"
  else
    echo "reference-tools: ${npm_pkgs[*]} already in $dest"
  fi
  exit $status
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "reference-tools: npm install ${npm_pkgs[*]} -> $dest"
npm install --prefix "$tmp" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "${npm_pkgs[@]}"
for p in "${npm_pkgs[@]}"; do
  node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' \
    "$tmp/node_modules/${p%@*}/package.json" "${p#*@}" || { echo "reference-tools: npm did not install $p" >&2; exit 1; }
done
# node-llama-cpp's GPU builds (CUDA, Vulkan: some 600 MB): the tests run on the CPU (gpu: false)
rm -rf "$tmp"/node_modules/@node-llama-cpp/*-cuda* "$tmp"/node_modules/@node-llama-cpp/*-vulkan*
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tmp/node_modules" "$dest"
echo "reference-tools: done ($(du -sh "$dest" | cut -f1) in $dest)"
exit $status
