#!/usr/bin/env bash
# Fuzzes the readers of outside files (tests/fuzz/README.md) with clang's
# libFuzzer under AddressSanitizer + UndefinedBehaviorSanitizer (and
# LeakSanitizer): builds the harnesses in build-fuzz/, then runs each for
# SECONDS on a copy of its seed corpus, tests/fuzz/corpus/<reader>/. An
# input that crashes, leaks, trips a sanitizer or times out is saved in
# tests/fuzz/crashes/<reader>/ (which CTest replays from then on).
#   scripts/fuzz.sh [SECONDS] [READER...]
#   SECONDS  per reader, default 60
#   READER   safetensors tokenizer tiktoken tokfile config llama2c llama2c_tok gguf hf checkpoint (default: all)
# Environment: CLANG (default clang), FUZZ_BUILD (default build-fuzz),
# FUZZ_FLAGS (more libFuzzer flags, e.g. "-jobs=2 -workers=2").
# Exits 1 when a reader crashed, after running the others.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
all=(safetensors tokenizer tiktoken tokfile config llama2c llama2c_tok gguf hf checkpoint)
secs=60
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then secs=$1; shift; fi
readers=("$@")
[ ${#readers[@]} -gt 0 ] || readers=("${all[@]}")
for r in "${readers[@]}"; do
  [[ " ${all[*]} " == *" $r "* ]] || { echo "fuzz.sh: unknown reader '$r' (known: ${all[*]})" >&2; exit 2; }
done
cc=${CLANG:-clang}
build=${FUZZ_BUILD:-build-fuzz}

# clang and its libFuzzer runtime (Debian: libclang-rt-14-dev beside clang-14)
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
  >"$probe/p.c"
if ! command -v "$cc" >/dev/null || ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>"$probe/log"; then
  echo "fuzz.sh: $cc cannot link -fsanitize=fuzzer,address,undefined programs:" >&2
  sed 's/^/  /' "$probe/log" >&2 2>/dev/null || true
  v=$(command -v "$cc" >/dev/null && "$cc" -dumpversion | cut -d. -f1 || echo 14)
  echo "Install clang and its runtime libraries: sudo apt-get install clang libclang-rt-$v-dev" >&2
  exit 1
fi

# the library and harnesses with coverage (fuzzer-no-link) and the sanitizers (TG_SANITIZE);
# no -Werror: clang's warnings are not the gcc builds' contract
CC=$cc cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTG_WERROR=OFF -DTG_SANITIZE=ON \
  -DTG_FUZZ_LIBFUZZER=ON -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target "${readers[@]/#/fuzz_}"

export OPENBLAS_NUM_THREADS=1
# the harnesses write each input to a file: in memory when /dev/shm is there
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
summary=()
for r in "${readers[@]}"; do
  work=$(mktemp -d)
  cp -r "tests/fuzz/corpus/$r" "$work/corpus"
  mkdir -p "tests/fuzz/crashes/$r"
  log=$build/fuzz_$r.log
  echo "== fuzz_$r: $secs s on a copy of tests/fuzz/corpus/$r ($(ls "$work/corpus" | wc -l) seeds); log $log"
  rc=0
  # shellcheck disable=SC2086
  "$build/tests/fuzz_$r" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$root/tests/fuzz/crashes/$r/" ${FUZZ_FLAGS:-} "$work/corpus" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  grown=$(ls "$work/corpus" | wc -l)
  if [ $rc -ne 0 ]; then
    status=1
    saved=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    grep -m3 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY' "$log" || tail -20 "$log"
    summary+=("fuzz_$r: CRASH (exit $rc) after ${execs:-?} executions; input saved: ${saved:-see $log}")
  else
    summary+=("fuzz_$r: ${execs:-?} executions in $secs s (${rate:-?}/s), $cov, corpus $(ls "tests/fuzz/corpus/$r" | wc -l) -> $grown, no crash")
  fi
  rm -rf "$work"
done
printf '%s\n' "${summary[@]}"
exit $status
