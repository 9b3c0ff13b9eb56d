# Shared by the tiny_gpt_*.sh tests: sourced with the tiny_gpt binary as
# $1 and the st_edit helper as $2. Gives a scratch directory $work,
# ok/bad counters, expect_fail, the small model flags and the metrics
# readers; `finish` prints the tally and exits with it.
set -u
bin=$1
st_edit=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
finish() { echo "$pass passed, $fail failed"; [ $fail -eq 0 ]; exit $?; }

# expect_fail NAME SUBSTRING CMD... : CMD exits non-zero and stderr holds SUBSTRING
expect_fail() {
  local name=$1 want=$2
  shift 2
  local out rc
  out=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$want" <<<"$out"; then ok "$name"
  else bad "$name: exit $rc, stderr: $out (wanted: $want)"; fi
}

small=(--n-layer 2 --n-head 2 --n-embd 48 --block-size 32 --batch-size 16 --lr 3e-3 --min-lr 3e-4
       --warmup 50 --eval-iters 20 --threads 1 --corpus-chars 100000)

# "step loss" of every optimizer step in DIR/metrics.csv (columns: metrics.h)
losses() { awk -F, 'NR > 1 && $2 != "" {print $1, $2}' "$1/metrics.csv"; }
# "step train_loss val_loss" of every evaluation
evals() { awk -F, 'NR > 1 && $7 != "" {print $1, $6, $7}' "$1/metrics.csv"; }
# the metrics without the timing columns (which differ from run to run)
untimed() { cut -d, -f1-3,6- "$1/metrics.csv"; }
# the JSON header of a safetensors file, as text (grep it for metadata)
header() { head -c 65536 "$1" | tr -d '\000' | LC_ALL=C grep -ao '"__metadata__":{[^}]*}'; }
# a listing of DIR with sizes and checksums, to show that nothing changed
snapshot() { (cd "$1" && for f in $(ls -A); do echo "$f $(cksum < "$f")"; done); }

# wait_rows DIR N: until DIR/metrics.csv has N rows (0: the rows came),
# or the process $pid ended or 30 s passed (1)
wait_rows() {
  for _ in $(seq 6000); do
    local n
    n=$(grep -c '^[0-9]' "$1/metrics.csv" 2>/dev/null)
    [ "${n:-0}" -ge "$2" ] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.005
  done
  return 1
}
