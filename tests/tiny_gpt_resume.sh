#!/usr/bin/env bash
# tiny_gpt train's runs survive what users do to them: Ctrl-C and then only
# `--resume --out DIR` continues the same run (every setting from the
# checkpoint); kill -9 at any moment, saves included, loses nothing and
# leaves no temporary behind; flags given again are checked against the
# run; a training state read back is validated, and refusing it writes
# nothing; a directory holding a run is not overwritten by accident; a
# crafted checkpoint is refused at once, not after gigabytes.
#   tests/tiny_gpt_resume.sh path/to/tiny_gpt path/to/st_edit
. "$(dirname "$0")/tiny_gpt_lib.sh"

# a schedule unlike the defaults, so that falling back to them shows
cfg=("${small[@]}" --steps 300 --eval-interval 50 --eval-iters 4 --dropout 0.1 --lr 2e-3 --min-lr 1e-4
     --warmup 10 --batch-size 8)
"$bin" train "${cfg[@]}" --out "$work/ref" >"$work/ref.log" 2>&1 || bad "the reference run failed: $(tail -2 "$work/ref.log")"

same_run() {   # same_run NAME DIR: DIR's run equals the reference, row for row and byte for byte
  if [ "$(untimed "$work/ref")" = "$(untimed "$2")" ] && cmp -s "$work/ref/last.safetensors" "$2/last.safetensors" &&
     cmp -s "$work/ref/best.safetensors" "$2/best.safetensors"; then ok "$1"
  else bad "$1"; diff <(untimed "$work/ref") <(untimed "$2") | head -6; fi
}

# stopped_run NAME K ARGS...: the run ARGS into $work/NAME and, stopped at
# step K and resumed with --resume alone, into $work/NAME2; true when the
# two are the same run, row for row and byte for byte (else it shows how
# their rows differ)
stopped_run() {
  local d=$work/$1 k=$2
  shift 2
  "$bin" train "$@" --out "$d" >"$d.log" 2>&1 || bad "the run $d failed: $(tail -2 "$d.log")"
  "$bin" train "$@" --stop-at "$k" --out "${d}2" >/dev/null 2>&1
  "$bin" train --resume --out "${d}2" >"${d}2.log" 2>&1 || bad "its resume failed: $(tail -2 "${d}2.log")"
  [ "$(untimed "$d")" = "$(untimed "${d}2")" ] && cmp -s "$d/last.safetensors" "${d}2/last.safetensors" &&
    cmp -s "$d/best.safetensors" "${d}2/best.safetensors" && return 0
  diff <(untimed "$d") <(untimed "${d}2") | head -6
  return 1
}

# 1. Ctrl-C, then nothing but --resume --out: the same run
"$bin" train "${cfg[@]}" --out "$work/int" >"$work/int.log" 2>&1 &
pid=$!
wait_rows "$work/int" 120
kill -INT $pid
wait $pid
rc=$?
hint=$(grep -o 'continue with: .*' "$work/int.log")
[ $rc -eq 130 ] && [ "$hint" = "continue with: tiny_gpt train --resume --out $work/int" ] &&
  ok "Ctrl-C saves, exits 130 and prints the command that continues" || bad "Ctrl-C: exit $rc, hint '$hint'"
"$bin" train --resume --out "$work/int" >"$work/int2.log" 2>&1
grep -q "continuing at step [0-9]* of 300" "$work/int2.log" && ok "the resume found 300 steps in the checkpoint" ||
  bad "resume: $(head -3 "$work/int2.log")"
same_run "Ctrl-C + --resume --out alone: the same losses, evaluations and checkpoints" "$work/int"

# 2. kill -9 six times at random moments, resuming each time on another
# number of threads (results are the same bits on any thread count)
rm -rf "$work/k"
"$bin" train "${cfg[@]}" --out "$work/k" >/dev/null 2>&1 &
pid=$!
RANDOM=7
for i in 1 2 3 4 5 6; do
  wait_rows "$work/k" $((RANDOM % 40 + 40 * i)) || break
  kill -9 $pid
  wait $pid 2>/dev/null
  "$bin" train --resume --threads $((i % 3 + 2)) --out "$work/k" >/dev/null 2>"$work/k.err" &
  pid=$!
done
wait $pid
same_run "six kill -9 and resumes: metrics.csv has every step once, the checkpoints are the uninterrupted run's" "$work/k"
steps=$(awk -F, 'NR > 1 {print $1}' "$work/k/metrics.csv" | uniq -d | wc -l)
[ "$steps" -eq 0 ] && ok "no step repeats in metrics.csv" || bad "$steps steps repeat in metrics.csv"

# 3. the console numbers steps as metrics.csv does
last=$(grep -o 'step [0-9]*/300' "$work/ref.log" | tail -1)
rows=$(awk -F, 'NR > 1 {print $1}' "$work/ref/metrics.csv" | tr '\n' ' ')
[ "$last" = "step 300/300" ] && [ "$rows" = "$(seq -s ' ' 0 300) " ] &&
  [ "$(evals "$work/ref" | cut -d' ' -f1 | tr '\n' ' ')" = "0 50 100 150 200 250 300 " ] &&
  ok "console step 300/300 is row 300; rows 0..300 once each; evaluations at 0, 50, ..., 300" ||
  bad "numbering: console '$last', rows '$rows'"
grep -q "^step 300: train loss [0-9.]*, val loss [0-9.]* ([0-9.]* bits per byte)" "$work/ref.log" &&
  ok "the console's evaluation line gives bits per byte" || bad "no bpb in: $(grep '^step 300:' "$work/ref.log")"
awk -F, 'NR > 1 && $7 != "" { d = $7 / log(2) - $9; if (d > 1e-5 || d < -1e-5) bad = 1 } END { exit bad }' \
  "$work/ref/metrics.csv" && ok "val_bpb = val_loss / ln 2 for the byte vocabulary" || bad "val_bpb column wrong"

# 4. kills during saves (one every step) leave temporaries the next run removes
rm -rf "$work/s"
left=0
for i in 1 2 3 4 5 6 7 8; do
  if [ -e "$work/s/last.safetensors" ]; then args=(--resume); else args=("${cfg[@]}" --eval-interval 1); fi
  "$bin" train "${args[@]}" --out "$work/s" >/dev/null 2>&1 &
  pid=$!
  sleep 0.$((RANDOM % 30 + 20))
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  ls "$work/s" | grep -q '\.tmp\.' && left=$((left + 1))
done
touch "$work/s/last.safetensors.tmp.Zz09aB" "$work/s/notes.tmp.Zz09aB"
err=$("$bin" train --resume --stop-at 1 --out "$work/s" 2>&1 >/dev/null)
tmps=$(ls "$work/s" | grep '\.tmp\.' | tr '\n' ' ')
[ "$tmps" = "notes.tmp.Zz09aB " ] && grep -q "removed $work/s/last.safetensors.tmp.Zz09aB" <<<"$err" &&
  ok "a new run removes its own stale temporaries ($left of 8 kills left one), and only its own" ||
  bad "temporaries left: '$tmps'; $err"

# 5. the training state read back is validated; refusing it writes nothing
cp -r "$work/int" "$work/v"
crafted() {   # crafted NAME WANT EDIT...: resume from a last.safetensors with EDITs
  local name=$1 want=$2
  shift 2
  "$st_edit" "$work/int/last.safetensors" "$work/v/last.safetensors" "$@" || { bad "st_edit $*"; return; }
  local before
  before=$(snapshot "$work/v")
  expect_fail "$name" "$want" "$bin" train --resume --steps 400 --out "$work/v"
  [ "$(snapshot "$work/v")" = "$before" ] || bad "$name: the refused resume changed $work/v"
}
crafted "negative train.step" "'train.step' = '-5' is not an integer in [0," train.step=-5
crafted "train.step with junk after it" "'train.step' = '12abc' is not an integer" train.step=12abc
crafted "negative optimizer.steps" "'optimizer.steps' = '-1' is not an integer in [0," optimizer.steps=-1
crafted "optimizer.steps not the step" "'optimizer.steps' = 7 differs from 'train.step' = 300" optimizer.steps=7
crafted "NaN best val" "'train.best_val' = 'nan' is not a number" train.best_val=nan
crafted "malformed random stream" "'train.data_rng' = '1:2:3' is not a random-stream state" train.data_rng=1:2:3
crafted "a learning rate that is not a number" "metadata 'train.lr': 'fast' is not a number" train.lr=fast
crafted "a recorded value out of range" "metadata 'train.dropout': 2 is outside [0, 0.999]" train.dropout=2
crafted "a data checksum of another text" "is not the text the run was trained on" \
  train.data_checksum=fnv1a64:0123456789abcdef
crafted "optimizer state missing" "not a training checkpoint" -optimizer.v
cp "$work/int/last.safetensors" "$work/v/last.safetensors"

# 6. flags given again: the same value is fine, a model or run flag that
# differs is an error naming both values, a schedule flag is a notice
expect_fail "model flag differs" "--n-embd 64 differs from the run's 48" \
  "$bin" train --resume --steps 400 --n-embd 64 --out "$work/v"
expect_fail "seed differs" "--seed 5 differs from the run's 1337" "$bin" train --resume --steps 400 --seed 5 --out "$work/v"
expect_fail "optimizer flag differs" "--weight-decay 0 differs from the run's 0.1" \
  "$bin" train --resume --steps 400 --weight-decay 0 --out "$work/v"
expect_fail "batch differs" "--batch-size 4 x --grad-accum 1 = 4 sequences per step differs from the run's 8" \
  "$bin" train --resume --steps 400 --batch-size 4 --out "$work/v"
printf 'some other text, long enough for windows of 33 characters in both splits of it. %.0s' $(seq 20) > "$work/other.txt"
expect_fail "data differs" "is not the text the run was trained on: the built-in corpus" \
  "$bin" train --resume --steps 400 --data "$work/other.txt" --out "$work/v"
out=$("$bin" train --resume --out "$work/v" "${cfg[@]}" --steps 320 --lr 1e-3 2>&1)
grep -q "notice: --steps 320 replaces the run's 300" <<<"$out" && grep -q "notice: --lr 0.001 replaces the run's 0.002" <<<"$out" &&
  ! grep -q "notice: --n-layer\|notice: --dropout" <<<"$out" && grep -q "^val loss" <<<"$out" &&
  ok "the run's own flags again are fine; a longer --steps and another --lr are notices, and it trains on" ||
  bad "resume with flags: $out"
# a longer --steps keeps the run's cosine (--decay-steps, here 300): the new steps train at --min-lr, and a notice says so
grep -qF "notice: the cosine schedule ends at the run's --decay-steps 300, so steps 301 to 320 train at --min-lr 0.0001; give --decay-steps 320 to decay over the longer run instead" <<<"$out" &&
  awk -F, 'NR > 1 && $1 > 300 { n++; if ($3 != 0.0001) bad = 1 } END { exit bad || n != 20 }' "$work/v/metrics.csv" &&
  ok "resumed with a longer --steps: steps 301-320 at --min-lr, said in a notice" ||
  bad "longer resume: $(grep -i 'cosine' <<<"$out"); lr $(awk -F, '$1 > 298 {printf "%s ", $3}' "$work/v/metrics.csv")"
# --decay-steps: the cosine reaches --min-lr there (nanoGPT's lr_decay_iters), recorded and kept on resume
dcfg=("${small[@]}" --steps 30 --eval-interval 10 --eval-iters 2 --warmup 4 --lr 1e-2 --min-lr 1e-3 --decay-steps 20)
"$bin" train "${dcfg[@]}" --out "$work/dec" >/dev/null 2>&1
"$bin" train "${dcfg[@]}" --stop-at 12 --out "$work/dec2" >/dev/null 2>&1
"$bin" train --resume --out "$work/dec2" >/dev/null 2>&1
awk -F, 'NR > 1 && $1 > 0 { if (($1 > 20) != ($3 == 0.001)) bad = 1 } END { exit bad }' "$work/dec/metrics.csv" &&
  grep -qF '"train.decay_steps":"20"' <<<"$(header "$work/dec/last.safetensors")" &&
  [ "$(untimed "$work/dec")" = "$(untimed "$work/dec2")" ] &&
  ok "--decay-steps 20 of 30: steps 21-30 at --min-lr; recorded, and a resume keeps it" ||
  bad "--decay-steps: lr $(awk -F, 'NR > 1 {printf "%s ", $3}' "$work/dec/metrics.csv")"
"$bin" train "${dcfg[@]}" --stop-at 12 --out "$work/dec3" >/dev/null 2>&1
out=$("$bin" train --resume --decay-steps 30 --out "$work/dec3" 2>&1)
grep -q "notice: --decay-steps 30 replaces the run's 20" <<<"$out" &&
  grep -q "notice: the schedule changed: step 13 trains at learning rate 0.00[0-9]*, where the run's schedule gave 0.00" <<<"$out" &&
  ok "a new --decay-steps on resume: a notice gives the learning rate before and after" || bad "--decay-steps on resume: $out"
out=$("$bin" train --resume --out "$work/v" --steps 330 --batch-size 4 --grad-accum 2 2>&1)
grep -q "notice: --grad-accum 2 replaces the run's 1" <<<"$out" && grep -q "^val loss" <<<"$out" &&
  ok "the batch may be split differently on resume" || bad "batch split: $out"

# a moved text (same bytes) is a notice; a changed one an error
head -c 40000 /dev/urandom | base64 -w 80 > "$work/t.txt"
"$bin" train "${small[@]}" --data "$work/t.txt" --steps 4 --eval-interval 2 --out "$work/d" >/dev/null 2>&1
mv "$work/t.txt" "$work/t2.txt"
expect_fail "recorded text moved" "the run's text: $work/t.txt: No such file or directory (give its new place with --data)" \
  "$bin" train --resume --steps 6 --out "$work/d"
out=$("$bin" train --resume --steps 6 --data "$work/t2.txt" --out "$work/d" 2>&1)
grep -q "is now read from $work/t2.txt (the same bytes)" <<<"$out" && ok "a moved text is a notice" || bad "moved text: $out"
echo "changed" >> "$work/t2.txt"
expect_fail "recorded text changed" "is not the text the run was trained on" \
  "$bin" train --resume --steps 8 --data "$work/t2.txt" --out "$work/d"

# 7. a directory holding a run
expect_fail "train into a finished run" "$work/ref already holds a run (at step 300 of 300: finished); continue it with --resume" \
  "$bin" train "${small[@]}" --out "$work/ref"
"$bin" train "${small[@]}" --steps 30 --stop-at 10 --out "$work/r" >/dev/null 2>&1
expect_fail "train into a resumable run" "(at step 10 of 30: resumable)" "$bin" train "${small[@]}" --out "$work/r"
"$bin" train "${small[@]}" --steps 12 --eval-interval 4 --force --out "$work/r" >/dev/null 2>&1 &&
  [ "$(grep -c '^[0-9]' "$work/r/metrics.csv")" -eq 13 ] && ok "--force starts over" || bad "--force"
"$bin" train "${cfg[@]}" --steps 100000 --out "$work/busy" >/dev/null 2>&1 &
pid=$!
wait_rows "$work/busy" 2
expect_fail "two runs in one directory" "another tiny_gpt is training in this directory" \
  "$bin" train --resume --out "$work/busy"
kill $pid; wait $pid 2>/dev/null

# 8. crafted checkpoints are refused at once, before anything big is allocated
fast() {   # fast NAME WANT EDIT...
  local name=$1 want=$2
  shift 2
  "$st_edit" "$work/ref/best.safetensors" "$work/crafted.safetensors" "$@" || { bad "st_edit $*"; return; }
  local t0=$SECONDS
  expect_fail "$name" "$want" timeout 20 "$bin" sample --ckpt "$work/crafted.safetensors" --tokens 5
  [ $((SECONDS - t0)) -le 2 ] || bad "$name took $((SECONDS - t0)) s"
}
fast "n_layer 16777216" "describes 465467083536 parameters, but the file holds only 58320 float values" n_layer=16777216
fast "n_embd at the cap" "so 'transformer.wte.weight' should be (26,16777216), but it is (26,48)" n_embd=16777216
fast "block_size at the cap" "so 'transformer.wpe.weight' should be (16777216,48), but it is (32,48)" block_size=16777216
fast "vocab_size at the cap" "should be (16777216,48)" vocab_size=16777216
fast "a dropped layer tensor" "describes 58320 parameters, but the file holds only 49104 float values: a tensor" \
  -transformer.h.1.mlp.c_fc.weight

# 9. --optimizer muon: the checkpoint holds Muon's momentum, and stop +
# --resume is the uninterrupted run byte for byte (with dropout, clipping
# and a warmup that the stop falls inside); the optimizer is recorded, so
# a resume with the other one is refused, in the flags and in the state
mcfg=("${small[@]}" --steps 40 --eval-interval 10 --eval-iters 2 --warmup 15 --dropout 0.1 --grad-clip 0.5
      --optimizer muon --muon-lr 0.03 --muon-momentum 0.9)
if stopped_run mu 13 "${mcfg[@]}" && h=$(header "$work/mu/last.safetensors") && grep -qF '"muon.steps":"40"' <<<"$h" &&
   grep -qF '"train.optimizer":"muon"' <<<"$h" &&
   grep -q '"muon.momentum"' < <(head -c 65536 "$work/mu/last.safetensors" | tr -d '\000'); then
  ok "--optimizer muon: stop at 13 + --resume equals the uninterrupted run byte for byte; momentum and optimizer recorded"
else bad "--optimizer muon resume"; fi
# the same run with AdamW is another run (Muon does change the training)
"$bin" train "${small[@]}" --steps 40 --eval-interval 10 --eval-iters 2 --warmup 15 --dropout 0.1 --grad-clip 0.5 \
  --out "$work/ad" --force >/dev/null 2>&1
[ "$(untimed "$work/mu" | tail -1)" != "$(untimed "$work/ad" | tail -1)" ] && ok "Muon's run differs from AdamW's" ||
  bad "Muon's run equals AdamW's"
"$bin" train "${mcfg[@]}" --stop-at 13 --out "$work/mu3" >/dev/null 2>&1
expect_fail "resume with the other optimizer" "--optimizer adamw differs from the run's muon" \
  "$bin" train --resume --optimizer adamw --out "$work/mu3"
expect_fail "another Muon momentum" "--muon-momentum 0.95 differs from the run's 0.9" \
  "$bin" train --resume --muon-momentum 0.95 --out "$work/mu3"
cp -r "$work/mu3" "$work/mu4"
"$st_edit" "$work/mu3/last.safetensors" "$work/mu4/last.safetensors" train.optimizer=adamw || bad "st_edit train.optimizer"
expect_fail "Muon's state in a run recorded as AdamW's" "the checkpoint's run trains with Muon (tensor 'muon.momentum' present) but this one does not" \
  "$bin" train --resume --out "$work/mu4"
"$st_edit" "$work/int/last.safetensors" "$work/mu4/last.safetensors" train.optimizer=muon || bad "st_edit train.optimizer"
expect_fail "an AdamW checkpoint resumed as Muon's" "the checkpoint's run does not train with Muon (tensor 'muon.momentum' absent) but this one does" \
  "$bin" train --resume --out "$work/mu4"
"$st_edit" "$work/mu3/last.safetensors" "$work/mu4/last.safetensors" muon.steps=3 || bad "st_edit muon.steps"
expect_fail "muon.steps not the step" "'muon.steps' = 3 differs from 'train.step' = 13" "$bin" train --resume --out "$work/mu4"
expect_fail "--muon-lr without Muon" "--muon-lr is a setting of --optimizer muon (this run's optimizer is adamw)" \
  "$bin" train "${small[@]}" --muon-lr 0.01 --out "$work/mu5"
expect_fail "an unknown optimizer" "--optimizer: 'sgd' is not adamw or muon" "$bin" train "${small[@]}" --optimizer sgd --out "$work/mu5"

# 10. --ema: the checkpoint holds the averages, and stop + --resume is the
# uninterrupted run byte for byte (with Muon, so every state is there);
# every evaluation is of the raw weights and of the averages, each line
# saying whose; best.safetensors holds the lower of the two and says whose,
# last.safetensors both: `eval --ckpt` prints what training printed for the
# file, and --weights picks; the decay is part of the run
ecfg=("${mcfg[@]}" --ema 0.8)
if stopped_run em 17 "${ecfg[@]}" && h=$(header "$work/em/last.safetensors") &&
   grep -qF '"ema.decay":"0.80000000000000004"' <<<"$h" && grep -qF '"train.ema":"0.8"' <<<"$h" &&
   grep -qF '"weights":"raw"' <<<"$h" &&
   grep -q '"ema.values"' < <(head -c 65536 "$work/em/last.safetensors" | tr -d '\000'); then
  ok "--ema: stop at 17 + --resume equals the uninterrupted run byte for byte; the averages, the decay and whose the weights are recorded"
else bad "--ema resume"; fi
meta() { header "$1" | grep -o "\"$2\":\"[^\"]*\"" | cut -d'"' -f4; }
lines() { grep "^step $2: .* of the $3 weights" "$work/$1.log" | sed "s/ (floor .*//"; }
best=$(meta "$work/em/best.safetensors" train.step)
w=$(meta "$work/em/best.safetensors" weights)
got=$("$bin" eval --ckpt "$work/em/best.safetensors" 2>/dev/null)
[ -n "$best" ] && [ -n "$(lines em "$best" "$w")" ] && [ "$got" = "$(lines em "$best" "$w")" ] &&
  ok "--ema: best.safetensors (step $best, the $w weights) evaluates to the run's line for them" ||
  bad "--ema best: '$got' vs '$(lines em "$best" "$w")' (weights '$w')"
# best is the lower val loss of the two at its step
vals=$(for x in raw ema; do lines em "$best" $x | sed 's/.*val loss \([0-9.]*\).*/\1/'; done | tr '\n' ' ')
awk -v w="$w" -v v="$vals" 'BEGIN { split(v, a, " "); exit !(w == "raw" ? a[1] < a[2] : a[2] <= a[1]) }' &&
  ok "--ema: best holds the lower of the two val losses at step $best ($vals: $w)" || bad "--ema best: $w of $vals"
both=$("$bin" eval --ckpt "$work/em/last.safetensors" 2>/dev/null)
[ "$both" = "$(lines em 40 raw; lines em 40 ema)" ] && [ "$(grep -c . <<<"$both")" = 2 ] &&
  ok "--ema: eval of last.safetensors prints exactly the two lines training printed at step 40" ||
  bad "--ema last: '$both' vs '$(lines em 40 raw; lines em 40 ema)'"
[ "$("$bin" eval --ckpt "$work/em/last.safetensors" --weights ema 2>/dev/null)" = "$(lines em 40 ema)" ] &&
  [ "$("$bin" eval --ckpt "$work/em/last.safetensors" --weights raw 2>/dev/null)" = "$(lines em 40 raw)" ] &&
  ok "--ema: eval --weights ema|raw picks one of them" || bad "--ema: --weights does not pick"
[ "$(untimed "$work/em" | tail -1)" != "$(untimed "$work/mu" | tail -1)" ] && ok "--ema's evaluations differ from the weights'" ||
  bad "--ema's evaluations equal the weights'"
# averages that lag far behind (decay 0.999 over 30 steps: mostly the
# initial weights) evaluate worse than the weights: best holds the raw
# weights, says so, and refuses --weights ema
"$bin" train "${small[@]}" --steps 30 --eval-interval 10 --eval-iters 2 --warmup 5 --ema 0.999 --out "$work/el" \
  >"$work/el.log" 2>&1 || bad "the lagging --ema run: $(tail -2 "$work/el.log")"
lb=$(meta "$work/el/best.safetensors" train.step)
[ "$(meta "$work/el/best.safetensors" weights)" = raw ] && [ "$lb" = 30 ] &&
  [ "$("$bin" eval --ckpt "$work/el/best.safetensors" 2>/dev/null)" = "$(lines el 30 raw)" ] &&
  grep -q "best val loss .* (the raw weights of step 30, in best.safetensors)" "$work/el.log" &&
  ok "--ema whose averages are worse: best.safetensors holds the raw weights of step 30, says so, evaluates to their line" ||
  bad "lagging --ema: best step '$lb', weights '$(meta "$work/el/best.safetensors" weights)': $(grep '^step 30: ' "$work/el.log")"
expect_fail "--weights ema of a best holding the raw weights" \
  "--weights ema: $work/el/best.safetensors holds the raw weights alone (metadata 'weights' raw" \
  "$bin" eval --ckpt "$work/el/best.safetensors" --weights ema
# and averages that smooth a high constant rate's noise evaluate better
# (here by 0.02): best holds them, says so, and refuses --weights raw
"$bin" train "${small[@]}" --lr 3e-2 --min-lr 3e-2 --steps 80 --eval-interval 40 --eval-iters 20 --warmup 5 \
  --ema 0.9 --out "$work/eb" >"$work/eb.log" 2>&1 || bad "the smoothing --ema run: $(tail -2 "$work/eb.log")"
[ "$(meta "$work/eb/best.safetensors" weights)" = ema ] && [ "$(meta "$work/eb/best.safetensors" train.step)" = 80 ] &&
  [ "$("$bin" eval --ckpt "$work/eb/best.safetensors" 2>/dev/null)" = "$(lines eb 80 ema)" ] &&
  grep -q "best val loss .* (the ema weights of step 80, in best.safetensors)" "$work/eb.log" &&
  ok "--ema whose averages are better: best.safetensors holds them (step 80), says so, evaluates to their line" ||
  bad "smoothing --ema: best '$(meta "$work/eb/best.safetensors" weights)' at $(meta "$work/eb/best.safetensors" train.step): $(grep '^step 80: ' "$work/eb.log")"
expect_fail "--weights raw of a best holding the averages" \
  "--weights raw: $work/eb/best.safetensors holds the averages alone (metadata 'weights' ema" \
  "$bin" eval --ckpt "$work/eb/best.safetensors" --weights raw
expect_fail "--weights of a run without --ema" "--weights ema: the run of $work/mu/best.safetensors kept no averages" \
  "$bin" eval --ckpt "$work/mu/best.safetensors" --weights ema
expect_fail "--weights neither" "--weights: 'best' is not ema or raw" \
  "$bin" eval --ckpt "$work/el/last.safetensors" --weights best
"$bin" train "${ecfg[@]}" --stop-at 5 --out "$work/em3" >/dev/null 2>&1
expect_fail "resume with another decay" "--ema 0.9 differs from the run's 0.8" "$bin" train --resume --ema 0.9 --out "$work/em3"
mkdir -p "$work/em4"
"$st_edit" "$work/em3/last.safetensors" "$work/em4/last.safetensors" train.ema=0 || bad "st_edit train.ema"
expect_fail "the averages in a run recorded without them" "the checkpoint's run averages its weights (tensor 'ema.values' present) but this one does not" \
  "$bin" train --resume --out "$work/em4"
expect_fail "--ema 1" "--ema" "$bin" train "${small[@]}" --ema 1 --out "$work/em5"

# 11. --sampling epochs: the windows drawn so far are in the checkpoint, so
# stop + --resume is the uninterrupted run byte for byte, across epochs
# (the 90,000-token split holds 2,811 windows of 32: 40 steps of 16 are
# 640 of them, so use a batch that crosses: --batch-size 100 reaches
# 4,000); the sampling is part of the run
pcfg=("${mcfg[@]}" --batch-size 100 --sampling epochs)
if stopped_run ep 29 "${pcfg[@]}" && h=$(header "$work/ep/last.safetensors") &&
   grep -qF '"train.windows":"4000"' <<<"$h" && grep -qF '"train.sampling":"epochs"' <<<"$h"; then
  ok "--sampling epochs: stop at 29 (inside the second epoch) + --resume equals the uninterrupted run byte for byte"
else bad "--sampling epochs resume"; fi
"$bin" train "${mcfg[@]}" --batch-size 100 --out "$work/ep3" >/dev/null 2>&1
[ "$(untimed "$work/ep" | tail -1)" != "$(untimed "$work/ep3" | tail -1)" ] && ok "the epochs' run differs from the random windows'" ||
  bad "--sampling epochs trained as random windows do"
grep -qF '"train.windows":"4000"' < <(header "$work/ep3/last.safetensors") && ok "random windows are counted too" ||
  bad "train.windows of a random run: $(header "$work/ep3/last.safetensors" | grep -o '"train.windows":"[0-9]*"')"
expect_fail "resume with the other sampling" "--sampling random differs from the run's epochs" \
  "$bin" train --resume --sampling random --steps 50 --out "$work/ep2"
cp -r "$work/ep2" "$work/ep4"
"$st_edit" "$work/ep2/last.safetensors" "$work/ep4/last.safetensors" train.windows=-1 || bad "st_edit train.windows"
expect_fail "a negative windows count" "train.windows" "$bin" train --resume --steps 50 --out "$work/ep4"
expect_fail "an unknown sampling" "--sampling: 'shuffle' is not random or epochs" \
  "$bin" train "${small[@]}" --sampling shuffle --out "$work/ep5"

finish
