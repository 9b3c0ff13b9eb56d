#!/usr/bin/env bash
# The README's demo command: installs what is missing, builds tiny_gpt and
# the libraries (so that `cmake --install build --prefix P` works next),
# trains tiny_gpt on its built-in corpus (a few minutes at most on 2
# cores), then samples from the trained model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target tiny_gpt tapegrad tapegrad_shared tapegrad_dist tapegrad_dist_shared
build/tiny_gpt train --steps 600 --eval-interval 200 --eval-iters 50 --out out-demo --force   # a new run each time
build/tiny_gpt sample --ckpt out-demo/best.safetensors --prompt "the " --tokens 300
