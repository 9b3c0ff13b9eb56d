#!/usr/bin/env bash
# The README's demo command: installs what is missing, builds tiny_gpt and
# the libraries (so that `cmake --install build --prefix P` works next),
# trains tiny_gpt on its built-in corpus (a few minutes at most on 2
# cores), then samples from the trained model.
#   scripts/demo.sh [--threads N]   or   THREADS=N scripts/demo.sh
# N threads (and build jobs) instead of every core: on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
while [ $# -gt 0 ]; do
  case $1 in
    --threads) [ $# -ge 2 ] || { echo "demo.sh: --threads needs a number" >&2; exit 2; }; THREADS=$2; shift 2 ;;
    --threads=*) THREADS=${1#--threads=}; shift ;;
    *) echo "demo.sh: unknown argument '$1' (usage: scripts/demo.sh [--threads N], or THREADS=N scripts/demo.sh)" >&2
       exit 2 ;;
  esac
done
if [ -n "${THREADS:-}" ] && ! [[ $THREADS =~ ^[0-9]+$ && $THREADS -ge 1 && $THREADS -le 1024 ]]; then
  echo "demo.sh: THREADS / --threads '$THREADS' is not a number of threads from 1 to 1024" >&2
  exit 2
fi
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"${THREADS:-$(nproc 2>/dev/null || echo 2)}" --target tiny_gpt tapegrad tapegrad_shared tapegrad_dist tapegrad_dist_shared
build/tiny_gpt train --steps 600 --eval-interval 200 --eval-iters 50 --out out-demo --force ${THREADS:+--threads "$THREADS"}   # a new run each time
build/tiny_gpt sample --ckpt out-demo/best.safetensors --prompt "the " --tokens 300 ${THREADS:+--threads "$THREADS"}
