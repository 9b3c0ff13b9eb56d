#!/usr/bin/env bash
# The README's test command: installs what is missing, configures, builds
# with -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror, and runs every test through CTest.
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
status=0
ctest --output-on-failure -j"$jobs" -O ctest.log || status=$?
# a parity test skips without its reference tool (under CI=true it fails instead)
skipped=$(sed -n 's/^[[:space:]]*[0-9]* - \(parity_[A-Za-z0-9_]*\) (Skipped)$/\1/p' ctest.log | paste -sd ' ' -)
if [ -n "$skipped" ]; then
  echo "Skipped, their reference tools missing: ${skipped}"
  echo "The one command that installs those tools: scripts/reference-tools.sh"
fi
exit $status
