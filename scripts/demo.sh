#!/usr/bin/env bash
# The README's demo command: installs what is missing, builds, and runs the
# example program (a graph, its backward, and a gradient check).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target readme_example
OPENBLAS_NUM_THREADS=1 build/readme_example
