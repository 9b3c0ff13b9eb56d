#!/usr/bin/env bash
# Installs the reference tools tapegrad's tokenizer tests and benchmarks
# compare with, so that tests/parity_tiktoken.js runs instead of skipping
# and bench/tokenizers.py has every column:
#   - Debian's sentencepiece (spm_train, spm_encode), and nodejs + npm if
#     there is no node;
#   - the npm packages tiktoken and tokenizers (pinned versions) into
#     bench/node_modules, or into $TAPEGRAD_NODE_MODULES when it is set
#     (the place the test and the benchmark look).
# As root it installs the Debian packages with apt-get; otherwise it says
# which to install. About 90 MB of npm packages (tokenizers ships native
# addons for every platform) and a few seconds on a warm network.
#   scripts/reference-tools.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${TAPEGRAD_NODE_MODULES:-$root/bench/node_modules}
npm_pkgs=(tiktoken@1.0.22 tokenizers@0.23.2)

pkgs=(sentencepiece)
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "reference-tools: installing ${missing[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
  else
    echo "reference-tools: missing Debian packages: ${missing[*]}; run: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

have() { [ -f "$dest/$1/package.json" ] && [ "$(node -p "require('$dest/$1/package.json').version")" = "$2" ]; }
if have tiktoken 1.0.22 && have tokenizers 0.23.2; then
  echo "reference-tools: ${npm_pkgs[*]} already in $dest"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "reference-tools: npm install ${npm_pkgs[*]} -> $dest"
npm install --prefix "$tmp" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "${npm_pkgs[@]}"
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$tmp/node_modules" "$dest"
echo "reference-tools: done ($(du -sh "$dest" | cut -f1) in $dest)"
