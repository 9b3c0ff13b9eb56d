#!/usr/bin/env bash
# tiny_gpt train on several processes (mpirun, docs/distributed.md)
# follows one process with the whole batch, resumes on another number of
# processes, and stops every process when one of them goes wrong.
#   tests/tiny_gpt_mpi.sh path/to/tiny_gpt path/to/st_edit HAVE_MPI
# Skipped (77) without MPI or Open MPI's mpirun (tests/mpi_run.sh runs it:
# localhost, oversubscribed, as root in CI).
#
# What "the same losses" means here: metrics.csv with --log-digits 17
# (every step's loss and every evaluation's train and val loss, f64 read
# back exactly) against the one-process run of the whole batch, each
# value within 1e-12 relative in f64 (1e-5 in f32), over 20 steps: the
# sums across processes add the same numbers in another order, nothing
# else differs. R = 3 with batches of 5 does not divide the parameter
# counts (the zero-1 shards have remainders) nor the one-process batch
# of 15 into powers of two.
. "$(dirname "$0")/tiny_gpt_lib.sh"
have=${3:-}
here=$(dirname "$0")
bash "$here/mpi_run.sh" "$have" 1 true >/dev/null || { echo "no MPI: $([ "${CI:-}" = true ] && echo 'FAILED under CI=true' || echo skipped)"; [ "${CI:-}" = true ] && exit 1; exit 77; }
mpi() {   # mpi NP ARGS...: tiny_gpt (or any program, after --) on NP ranks
  local np=$1
  shift
  if [ "$1" = -- ]; then shift; bash "$here/mpi_run.sh" "$have" "$np" "$@"
  else bash "$here/mpi_run.sh" "$have" "$np" "$bin" "$@"; fi
}

base=(--n-layer 2 --n-head 2 --n-embd 48 --block-size 32 --lr 3e-3 --min-lr 3e-4 --warmup 5 --eval-iters 2
      --threads 1 --corpus-chars 100000 --steps 20 --eval-interval 10 --log-digits 17 --grad-clip 0.5)

# close NAME DIR_A DIR_B TOL: the same rows, every loss within TOL relative
close() {
  local out
  out=$(awk -F, -v tol="$4" '
    function rel(x, y,   d, m) { d = x - y; d = d < 0 ? -d : d; m = y < 0 ? -y : y; return m > 0 ? d / m : d }
    FNR == 1 { next }
    NR == FNR { a[$1] = $2 "," $6 "," $7; na++; next }
    { nb++
      if (!($1 in a)) { miss++; next }
      split(a[$1], v, ","); c[1] = $2; c[2] = $6; c[3] = $7
      for (i = 1; i <= 3; i++) {
        if ((v[i] == "") != (c[i] == "")) { miss++; continue }
        if (v[i] == "") continue
        r = rel(c[i], v[i]); n++; if (r > worst) worst = r
      } }
    END { printf "%d rows, %d losses, worst relative difference %.3g", nb, n, worst
          exit !(na == nb && nb > 0 && !miss && n > nb && worst <= tol) }' "$2/metrics.csv" "$3/metrics.csv")
  if [ $? -eq 0 ]; then ok "$1 ($out)"; else bad "$1: $out (tolerance $4)"; fi
}

# run NAME ARGS...: a run into $work/NAME, its stderr in $work/NAME.log
run1() { local d=$1; shift; "$bin" train "${base[@]}" "$@" --out "$work/$d" >"$work/$d.out" 2>"$work/$d.log" ||
  bad "$d failed: $(tail -3 "$work/$d.log")"; }
runn() { local np=$1 d=$2; shift 2; mpi "$np" train "${base[@]}" "$@" --out "$work/$d" >"$work/$d.out" 2>"$work/$d.log" ||
  bad "$d failed: $(tail -3 "$work/$d.log")"; }

# 1. R processes x B = one process x R B, to float rounding
run1 g8 --dtype f64 --batch-size 8
runn 2 g2 --dtype f64 --batch-size 4
close "2 x batch 4 = batch 8 (GPT, f64)" "$work/g8" "$work/g2" 1e-12
run1 g15 --dtype f64 --batch-size 15
runn 3 g3 --dtype f64 --batch-size 5
close "3 x batch 5 = batch 15 (GPT, f64)" "$work/g15" "$work/g3" 1e-12
run1 b8 --dtype f64 --batch-size 8 --bias true
runn 2 b2 --dtype f64 --batch-size 4 --bias true
close "2 x 4 = 8 with biases (GPT, f64)" "$work/b8" "$work/b2" 1e-12
run1 b15 --dtype f64 --batch-size 15 --bias true
runn 3 b3 --dtype f64 --batch-size 5 --bias true
close "3 x 5 = 15 with biases (GPT, f64)" "$work/b15" "$work/b3" 1e-12
run1 l8 --dtype f64 --batch-size 8 --arch llama --n-kv-head 1
runn 2 l2 --dtype f64 --batch-size 4 --arch llama --n-kv-head 1
close "2 x 4 = 8 (Llama, GQA, f64)" "$work/l8" "$work/l2" 1e-12
run1 l15 --dtype f64 --batch-size 15 --arch llama --tied false
runn 3 l3 --dtype f64 --batch-size 5 --arch llama --tied false
close "3 x 5 = 15 (Llama, untied, f64)" "$work/l15" "$work/l3" 1e-12
run1 a12 --dtype f64 --batch-size 12
runn 2 a2 --dtype f64 --batch-size 3 --grad-accum 2
close "2 x batch 3 x --grad-accum 2 = batch 12 (f64)" "$work/a12" "$work/a2" 1e-12
run1 f8 --batch-size 8
runn 2 f2 --batch-size 4
close "2 x 4 = 8 (GPT, f32)" "$work/f8" "$work/f2" 1e-5
run1 fl15 --batch-size 15 --arch llama
runn 3 fl3 --batch-size 5 --arch llama
close "3 x 5 = 15 (Llama, f32)" "$work/fl15" "$work/fl3" 1e-5
# --full-val: the whole val split, its windows shared out among the
# processes in micro-batches of their own batch (5 here, 15 alone)
run1 v15 --dtype f64 --batch-size 15 --full-val
runn 3 v3 --dtype f64 --batch-size 5 --full-val
close "3 x 5 = 15 with --full-val (the whole val split, f64)" "$work/v15" "$work/v3" 1e-12
[ "$(tail -1 "$work/v3/metrics.csv" | cut -d, -f7)" != "$(tail -1 "$work/g3/metrics.csv" | cut -d, -f7)" ] &&
  ok "--full-val's val loss is not the estimate's" || bad "--full-val left the val loss as the estimate's"
# a BPE tokenizer (a Llama: documents with BOS)
for i in $(seq 400); do
  printf 'the cat %d sees the caf\xc3\xa9 dog %d by the river %d.\n' $((i % 7)) $((i % 3)) $((i % 5))
  [ $((i % 4)) -eq 0 ] && printf '\n'
done >"$work/text.txt"
"$bin" tokenizer train --data "$work/text.txt" --vocab-size 320 --out "$work/tok.safetensors" >/dev/null 2>&1 ||
  bad "tokenizer train"
run1 t8 --dtype f64 --batch-size 8 --arch llama --data "$work/text.txt" --tokenizer "$work/tok.safetensors"
runn 2 t2 --dtype f64 --batch-size 4 --arch llama --data "$work/text.txt" --tokenizer "$work/tok.safetensors"
close "2 x 4 = 8 with a BPE tokenizer (Llama, f64)" "$work/t8" "$work/t2" 1e-12
grep -q "2 processes x 1 thread; 8 sequences per step (2 x --batch-size 4 x --grad-accum 1)" "$work/g2.log" &&
  [ "$(grep -c . "$work/g2.out")" -eq 1 ] && ! grep -q "rank" "$work/g2.log" &&
  ok "rank 0 alone prints: one header, one 'val loss' line" || bad "output: $(head -3 "$work/g2.log") / $(cat "$work/g2.out")"
header "$work/g2/last.safetensors" | grep -q '"train.global_batch":"8"' &&
  header "$work/g2/last.safetensors" | grep -q '"train.ranks":"2"' &&
  ok "the checkpoint records the global batch (8) and the processes (2)" || bad "metadata: $(header "$work/g2/last.safetensors")"

want=$(grep -o "^step 20: train loss [0-9.]*, val loss [0-9.]* ([0-9.]* bits per byte)" "$work/g2.log")
got=$("$bin" eval --ckpt "$work/g2/last.safetensors" 2>&1)
[ -n "$want" ] && [ "$got" = "$want" ] && ok "eval --ckpt of a 2-process run prints training's line ($want)" ||
  bad "eval --ckpt: '$got', training printed '$want'"

# 2. --zero 1: the same losses, a third of the moments per process
runn 3 z3 --dtype f64 --batch-size 5 --zero 1
close "--zero 1 on 3 processes = without (f64)" "$work/g3" "$work/z3" 1e-12
close "--zero 1 on 3 processes = one process x 15 (f64)" "$work/g15" "$work/z3" 1e-12
runn 2 fz2 --batch-size 4 --zero 1
close "--zero 1 on 2 processes = one process x 8 (f32)" "$work/f8" "$work/fz2" 1e-5
mb() { grep -o "AdamW's moments [0-9.]* MB" "$1" | grep -o "[0-9.]*"; }
awk -v a="$(mb "$work/g3.log")" -v b="$(mb "$work/z3.log")" 'BEGIN { d = 3 * b - a; exit !(a > 0 && d < 0.01 * a && -d < 0.01 * a) }' &&
  ok "--zero 1: AdamW's moments per process $(mb "$work/z3.log") MB, a third of $(mb "$work/g3.log") MB" ||
  bad "moments: $(mb "$work/g3.log") and $(mb "$work/z3.log") MB"
# the tensors of a checkpoint with their shapes and places, and its metadata's keys
layout() { head -c 65536 "$1" | tr -d '\000' | LC_ALL=C grep -ao '"[a-z_.0-9]*":{"dtype":"F[0-9]*","shape":\[[0-9,]*\],"data_offsets":\[[0-9,]*\]}'
           header "$1" | grep -o '"[a-z_.]*":' | sort; }
[ -n "$(layout "$work/z3/last.safetensors" | grep optimizer.m)" ] &&
  cmp -s <(layout "$work/g3/last.safetensors") <(layout "$work/z3/last.safetensors") &&
  ok "--zero 1's checkpoint holds the whole state (the same tensors and settings)" ||
  bad "zero-1 checkpoint: $(diff <(layout "$work/g3/last.safetensors") <(layout "$work/z3/last.safetensors") | head -5)"

# 3. resumed on another number of processes, the global batch kept
runn 2 r21 --dtype f64 --batch-size 4 --stop-at 10
"$bin" train --resume --out "$work/r21" >/dev/null 2>"$work/r21b.log" || bad "resume on 1: $(tail -2 "$work/r21b.log")"
grep -q "notice: --batch-size 8 on each of 1 processes keeps the run's 8 sequences per step" "$work/r21b.log" &&
  ok "resumed on 1 process, --batch-size follows the global batch" || bad "notice: $(cat "$work/r21b.log")"
close "2 processes to step 10, then 1: the uninterrupted run's losses" "$work/g2" "$work/r21" 1e-12
run1 r13 --dtype f64 --batch-size 15 --stop-at 10
mpi 3 train --resume --out "$work/r13" >/dev/null 2>"$work/r13b.log" || bad "resume on 3: $(tail -2 "$work/r13b.log")"
close "1 process to step 10, then 3: the uninterrupted run's losses" "$work/g15" "$work/r13" 1e-12
runn 3 rz --dtype f64 --batch-size 4 --zero 1 --stop-at 10
mpi 2 train --resume --out "$work/rz" >/dev/null 2>"$work/rzb.log" || bad "zero-1 resume on 2: $(tail -2 "$work/rzb.log")"
close "--zero 1 on 3 processes to step 10, then on 2 (other shards): batch 12's losses" "$work/a12" "$work/rz" 1e-12
expect_fail "a global batch that does not split among the processes" \
  "the run's 8" mpi 3 train --resume --out "$work/g2" --steps 30

# 3b. --optimizer muon: R processes = one process, without --zero (every
# process runs Muon on every matrix) and with --zero 1 (each process
# orthogonalises its own whole matrices, the weights then sent to all);
# resumed with --zero 1 on another number of processes (the momentum of
# every matrix gathered into the checkpoint)
run1 mu15 --dtype f64 --batch-size 15 --optimizer muon
runn 3 mu3 --dtype f64 --batch-size 5 --optimizer muon
close "Muon: 3 x batch 5 = batch 15 (f64)" "$work/mu15" "$work/mu3" 1e-12
runn 3 muz3 --dtype f64 --batch-size 5 --optimizer muon --zero 1
close "Muon --zero 1 (matrices shared out): 3 x batch 5 = batch 15 (f64)" "$work/mu15" "$work/muz3" 1e-12
[ "$(untimed "$work/mu15" | tail -1)" != "$(untimed "$work/g15" | tail -1)" ] && ok "Muon's run is not AdamW's" ||
  bad "Muon's run equals AdamW's"
run1 muf8 --batch-size 8 --optimizer muon --bias true
runn 2 mufz2 --batch-size 4 --optimizer muon --bias true --zero 1
close "Muon --zero 1 with biases: 2 x 4 = 8 (f32)" "$work/muf8" "$work/mufz2" 1e-5
run1 mu12 --dtype f64 --batch-size 12 --optimizer muon --arch llama --n-kv-head 1
runn 3 muzr --dtype f64 --batch-size 4 --optimizer muon --arch llama --n-kv-head 1 --zero 1 --stop-at 10
mpi 2 train --resume --out "$work/muzr" >/dev/null 2>"$work/muzrb.log" || bad "Muon zero-1 resume on 2: $(tail -2 "$work/muzrb.log")"
close "Muon --zero 1 on 3 processes to step 10, then on 2: batch 12's losses (Llama, f64)" "$work/mu12" "$work/muzr" 1e-12

# 3c. --sampling epochs: the processes share each batch of the epochs'
# windows, and a resume on another number of processes continues it
run1 ep15 --dtype f64 --batch-size 15 --sampling epochs
runn 3 ep3 --dtype f64 --batch-size 5 --sampling epochs
close "--sampling epochs: 3 x batch 5 = batch 15 (f64)" "$work/ep15" "$work/ep3" 1e-12
runn 3 epr --dtype f64 --batch-size 5 --sampling epochs --stop-at 10
"$bin" train --resume --out "$work/epr" >/dev/null 2>"$work/eprb.log" || bad "epochs resume on 1: $(tail -2 "$work/eprb.log")"
close "--sampling epochs on 3 processes to step 10, then 1: the uninterrupted run's losses" "$work/ep15" "$work/epr" 1e-12
[ "$(untimed "$work/ep15" | tail -1)" != "$(untimed "$work/g15" | tail -1)" ] && ok "the epochs' run is not the random windows'" ||
  bad "--sampling epochs trained as random windows do"

# 4. every process must run rank 0's run: one message naming the rank and the field
head -c 40000 /dev/urandom | base64 >"$work/a.txt"
head -c 40000 /dev/urandom | base64 >"$work/b.txt"
out=$(mpi 1 train "${base[@]}" --data "$work/a.txt" --out "$work/m1" : -np 1 "$bin" train "${base[@]}" \
  --data "$work/b.txt" --out "$work/m1" 2>&1 >/dev/null)
rc=$?
[ $rc -ne 0 ] && [ "$(grep -c "tiny_gpt train: rank 1: the data's" <<<"$out")" -eq 1 ] && [ ! -e "$work/m1/metrics.csv" ] &&
  ok "another text on rank 1: one message naming rank 1 and the data; nothing written" ||
  bad "data mismatch: exit $rc: $out"
out=$(mpi 1 train "${base[@]}" --out "$work/m2" : -np 1 "$bin" train "${base[@]}" --lr 2e-3 --out "$work/m2" 2>&1 >/dev/null)
grep -q "tiny_gpt train: rank 1: --lr is 0.002 here but 0.003 on rank 0" <<<"$out" &&
  ok "another --lr on rank 1 is named" || bad "lr mismatch: $out"
out=$(mpi 2 -- "$bin" train "${base[@]}" --out "$work/m3" : -np 1 "$bin" train "${base[@]}" --data /nonexistent \
  --out "$work/m3" 2>&1 >/dev/null)
rc=$?
[ $rc -ne 0 ] && [ "$(grep -c "tiny_gpt train: rank 2: /nonexistent: No such file or directory" <<<"$out")" -eq 1 ] &&
  ok "a file missing on rank 2: every rank stops, one message" || bad "missing file: exit $rc: $out"
expect_fail "a flag's error is printed once" "tiny_gpt train: unknown flag '--lrr'" mpi 2 train --lrr 1
[ "$(mpi 2 train --lrr 1 2>&1 | grep -c "unknown flag")" -eq 1 ] && ok "... exactly once" || bad "flag error repeated"
expect_fail "other commands run as one process" "runs as one process, not 2" mpi 2 sample --ckpt "$work/g2/best.safetensors"
# 4b. ranks whose models differ: compared before rank 0's weights are broadcast (issue 20: the broadcast
# overran a smaller model), one message naming the field and both values, nothing written
printf 'abc def\n%.0s' $(seq 3000) >"$work/c98.txt"
{ cat "$work/c98.txt"; printf 'xyz!\n'; } >"$work/c99.txt"
"$bin" tokenizer train --data "$work/c99.txt" --vocab-size 300 --out "$work/tok99.safetensors" >/dev/null 2>&1 ||
  bad "tokenizer train"
"$bin" tokenizer encode --tokenizer "$work/tok99.safetensors" <"$work/c99.txt" |
  python3 -c 'import sys, struct; ids = sys.stdin.read().split(); sys.stdout.buffer.write(struct.pack("<%dH" % len(ids), *map(int, ids)))' \
  >"$work/c99.bin"
# mismatch NAME WANT ARGS0 -- ARGS1: rank 0 with ARGS0, rank 1 with ARGS1
mismatch() {
  local name=$1 want=$2 a=() b=() out rc d="$work/mm$RANDOM"
  shift 2
  while [ "$1" != -- ]; do a+=("$1"); shift; done
  shift
  b=("$@")
  out=$(mpi 1 train "${base[@]}" "${a[@]}" --out "$d" : -np 1 "$bin" train "${base[@]}" "${b[@]}" --out "$d" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -eq 1 ] && [ "$(grep -c "tiny_gpt train: rank 1: " <<<"$out")" -eq 1 ] && grep -qF -- "$want" <<<"$out" &&
     ! grep -qi "MPI_ERR\|AddressSanitizer\|runtime error" <<<"$out" && [ ! -e "$d/metrics.csv" ]; then ok "$name"
  else bad "$name: exit $rc: $out (wanted: $want)"; fi
}
mismatch "a text with one more character on rank 1 (a larger vocabulary): the data's size named" \
  "rank 1: the data's size in bytes is 24005 here but 24000 on rank 0" --data "$work/c98.txt" -- --data "$work/c99.txt"
mismatch "a text with one character less on rank 1 (a smaller model)" \
  "rank 1: the data's size in bytes is 24000 here but 24005 on rank 0" --data "$work/c99.txt" -- --data "$work/c98.txt"
mismatch "--tokenizer on rank 0 only" "rank 1: vocab_size is 12 here but 264 on rank 0" \
  --data "$work/c99.txt" --tokenizer "$work/tok99.safetensors" -- --data "$work/c99.txt"
mismatch "--n-layer 2 on rank 0, 1 on rank 1" "rank 1: n_layer is 1 here but 2 on rank 0" -- --n-layer 1
mismatch "--n-layer 1 on rank 0, 2 on rank 1" "rank 1: n_layer is 2 here but 1 on rank 0" --n-layer 1 --
mismatch "a text on rank 0, token files on rank 1: the data named" \
  "rank 1: the data is token files (--data-tokens) here but a text (--data or the built-in corpus) on rank 0" \
  --data "$work/c99.txt" -- --data-tokens "$work/c99.bin" --vocab-size 300
mismatch "token files on rank 0, a text on rank 1" \
  "rank 1: the data is a text (--data or the built-in corpus) here but token files (--data-tokens) on rank 0" \
  --data-tokens "$work/c99.bin" --vocab-size 300 -- --data "$work/c99.txt"

# 5. one process failing during training ends the job within seconds
t0=$(date +%s)
out=$(timeout 120 bash "$here/mpi_run.sh" "$have" 1 "$bin" train "${base[@]}" --steps 400 --out "$work/n" : \
  -np 1 env TINY_GPT_FAULT=nan:5 "$bin" train "${base[@]}" --steps 400 --out "$work/n" 2>&1 >/dev/null)
rc=$?
dt=$(($(date +%s) - t0))
[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "tiny_gpt train: rank 1: step 5: the loss is nan" <<<"$out" && [ $dt -lt 30 ] &&
  ok "a NaN on rank 1 at step 5 stops both ranks (${dt} s), naming rank 1" || bad "NaN on one rank: exit $rc in ${dt} s: $out"

# 6. kill -9 of one rank ends the job; its last checkpoint resumes
long=(--dtype f64 --batch-size 4 --steps 80 --eval-interval 20)
runn 2 kref "${long[@]}"
bash "$here/mpi_run.sh" "$have" 2 "$bin" train "${base[@]}" "${long[@]}" --out "$work/k" >/dev/null 2>"$work/k.log" &
pid=$!
if wait_rows "$work/k" 46; then
  victim=$(pgrep -P "$pid" | tail -1)   # a rank: a child of mpirun
  kill -9 "$victim"
  t0=$(date +%s)
  wait $pid
  rc=$?
  dt=$(($(date +%s) - t0))
  [ $rc -ne 0 ] && [ $dt -lt 30 ] && ok "kill -9 of one rank ends the job (exit $rc, ${dt} s)" ||
    bad "after kill -9: exit $rc in ${dt} s"
  mpi 2 train --resume --out "$work/k" >/dev/null 2>"$work/k2.log" || bad "resume after kill -9: $(tail -2 "$work/k2.log")"
  close "resumed after the kill: the uninterrupted run's losses" "$work/kref" "$work/k" 1e-12
else
  bad "the run to kill did not reach step 45: $(tail -3 "$work/k.log")"
  wait $pid
fi

# 7. stopping mpirun (SIGTERM; Ctrl-C in a terminal too, but a background
# job here ignores SIGINT): after odls_base_sigkill_timeout seconds mpirun
# passes SIGTERM on to every rank and SIGKILLs them as long after; the
# ranks stop at one step and rank 0 saves, which then resumes
OMPI_MCA_odls_base_sigkill_timeout=4 bash "$here/mpi_run.sh" "$have" 2 "$bin" train "${base[@]}" --dtype f64 \
  --batch-size 4 --steps 100000 --eval-interval 20 --out "$work/c" >/dev/null 2>"$work/c.log" &
pid=$!
if wait_rows "$work/c" 22; then
  kill -TERM $pid
  wait $pid
  at=$(grep -o "stopped at step [0-9]*; continue with: tiny_gpt train --resume --out $work/c" "$work/c.log" | grep -o "[0-9]*" | head -1)
  [ -n "$at" ] && [ "$(grep -c "stopped at step" "$work/c.log")" -eq 1 ] &&
    header "$work/c/last.safetensors" | grep -q "\"train.step\":\"$at\"" &&
    ok "mpirun stopped: the ranks stop at one step ($at) and rank 0 saves it" || bad "stopping: $(tail -4 "$work/c.log")"
  mpi 2 train --resume --out "$work/c" --steps $((${at:-0} + 5)) >/dev/null 2>"$work/c2.log" &&
    grep -q "continuing at step ${at:-x} of $((${at:-0} + 5))" "$work/c2.log" && ok "... and the run resumes there" ||
    bad "resume after stopping: $(tail -3 "$work/c2.log")"
else
  bad "the run to stop did not start: $(tail -3 "$work/c.log")"
  kill -TERM $pid
  wait $pid
fi

# --time-budget on 2 processes: rank 0 times the steps and chooses, every
# rank runs that many (a rank running more or fewer would hang the job in
# a collective), within the budget (or stopped at its deadline)
mpi 2 train --n-layer 2 --n-head 2 --n-embd 48 --block-size 32 --batch-size 4 --eval-iters 2 --threads 1 \
  --corpus-chars 100000 --eval-interval 100 --time-budget 8 --out "$work/tb" >/dev/null 2>"$work/tb.log"
rc=$?
n=$(sed -n 's/^tiny_gpt: --time-budget 8 s holds \([0-9]*\) steps.*/\1/p' "$work/tb.log")
own=$(sed -n 's/^tiny_gpt: the run took \([0-9.]*\) s of its --time-budget 8 s.*/\1/p' "$work/tb.log")
at=$(header "$work/tb/last.safetensors" | grep -o '"train.step":"[0-9]*"' | grep -o '[0-9]*')
[ $rc -eq 0 ] && [ "$(grep -c "holds .* steps" "$work/tb.log")" -eq 1 ] && [ -n "$n" ] &&
  header "$work/tb/last.safetensors" | grep -q "\"train.budget_steps\":\"$n\"" &&
  { [ "$at" = "$n" ] || grep -q "ran out at step $at of $n" "$work/tb.log"; } &&
  awk -v o="${own:-99}" 'BEGIN { exit !(o <= 8) }' &&
  ok "--time-budget 8 on 2 processes: $n steps chosen once, run to step $at in $own s" ||
  bad "--time-budget on 2 processes: exit $rc, $(grep -v '^step' "$work/tb.log" | tail -4)"
# 8. the README's and tiny_gpt's manual's mpirun commands exactly as they give them (cut out of their
# sh blocks), each from a new directory holding build/ (tiny_gpt and
# train_custom) and train_custom's input.txt: the root form as root, the
# plain form as a user (nobody, through setpriv, when this runs as root).
# Each plain command has its root form beside it. tiny_gpt's default run is
# stopped (SIGTERM) once its first progress line shows; train_custom's runs
# whole.
top=$(cd "$here/.." && pwd)   # the README and tiny_gpt's manual, which it links
mapfile -t cmds < <(sed -n '/^ *```sh$/,/^ *```$/p' "$top/README.md" "$top/examples/tiny_gpt/README.md" | sed -n 's/^ *\(mpirun [^#]*[^# ]\) *\(#.*\)\{0,1\}$/\1/p')
plain=() root=()
for c in "${cmds[@]}"; do
  case $c in "mpirun --allow-run-as-root "*) root+=("$c") ;; *) plain+=("$c") ;; esac
done
for c in "${plain[@]}"; do
  printf '%s\n' "${root[@]}" | grep -qxF "mpirun --allow-run-as-root ${c#mpirun }" || bad "README: '$c' has no root form beside it"
done
[ ${#plain[@]} -ge 2 ] && printf '%s\n' "${plain[@]}" | grep -qxF "mpirun -np 2 build/tiny_gpt train" ||
  bad "README: no 'mpirun -np 2 build/tiny_gpt train' in an sh block (found: ${cmds[*]})"
readme_run() {   # AS CMD: runs CMD as AS (root, or a user: nobody when this is root) in a new directory; output in $work/rr.log
  local as=$1 cmd=$2 d pid
  d=$(mktemp -d "$work/readme.XXXXXX")
  chmod a+x "$work"   # (mktemp's 0700) for the user to reach d
  mkdir "$d/build" && cp "$bin" "$d/build/tiny_gpt" && cp "$(dirname "$bin")/train_custom" "$d/build/" &&
    cat "$here"/../docs/*.md >"$d/input.txt" && chmod -R a+rwX "$d" || { bad "readme_run: setting up $d"; return 1; }
  if [ "$as" = user ] && [ "$(id -u)" = 0 ]; then
    (cd "$d" && exec setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$d" bash -c "exec $cmd") >"$work/rr.log" 2>&1 &
  else
    (cd "$d" && exec bash -c "exec $cmd") >"$work/rr.log" 2>&1 &
  fi
  pid=$!
  case $cmd in
    *tiny_gpt*)   # the default run: until its first progress line, then stopped
      for _ in $(seq 3000); do grep -q "^step 10/" "$work/rr.log" && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
      kill -TERM $pid 2>/dev/null ;;
  esac
  wait $pid
}
for c in "${root[@]}" "${plain[@]}"; do
  as=root
  [ "$c" = "${c#mpirun --allow-run-as-root }" ] && as=user
  readme_run "$as" "$c"
  rc=$?
  case $c in
    *tiny_gpt*) grep -q "^tiny_gpt: 2 processes x" "$work/rr.log" && grep -q "^step 10/" "$work/rr.log" ;;
    *train_custom*) [ $rc -eq 0 ] && grep -q "^train_custom: .*, 2 processes$" "$work/rr.log" && grep -q "^step 300: " "$work/rr.log" ;;
    *) false ;;
  esac && ! grep -q "run as root" "$work/rr.log" && ok "README, as $as: '$c' runs ($(grep '^step' "$work/rr.log" | tail -1))" ||
    bad "README, as $as: '$c': exit $rc, $(head -c 600 "$work/rr.log")"
done
finish
