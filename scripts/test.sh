#!/usr/bin/env bash
# The README's test command: installs what is missing, configures, builds
# with -Wall -Wextra -Werror, and runs every test through CTest.
#   scripts/test.sh              Release build in build/
#   scripts/test.sh --sanitize   AddressSanitizer + UndefinedBehaviorSanitizer
#                                + LeakSanitizer build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test

dir=build
flags=(-DCMAKE_BUILD_TYPE=Release -DTG_WERROR=ON)
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTG_WERROR=ON -DTG_SANITIZE=ON)
  export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$dir" "${flags[@]}"
cmake --build "$dir" -j"$jobs"
cd "$dir"
ctest --output-on-failure -j"$jobs"
