#!/usr/bin/env bash
# tiny_gpt train to a wall-clock budget: --time-budget S ends the whole
# run (tokenizer, evaluations, saves) within S seconds, its steps chosen
# from timed ones and recorded, so a budget run is the run `--steps N`
# gives and a resume continues it bit for bit; --schedule wsd's learning
# rates; --tokenizer bpe:V learns from the train split alone and a resume
# does not learn it again.
#   tests/tiny_gpt_budget.sh path/to/tiny_gpt [path/to/st_edit]
. "$(dirname "$0")/tiny_gpt_lib.sh"

# a checkpoint's metadata value; the checksum of its tensors (what follows the header)
meta() { header "$1" | grep -o "\"$2\":\"[^\"]*\"" | cut -d'"' -f4; }
tensors() { local n; n=$(od -An -tu8 -N8 "$1" | tr -d ' '); tail -c +$((9 + n)) "$1" | cksum; }
now() { date +%s.%N; }
# wait (up to 30 s) until the run logging to $1 has chosen its steps
until_planned() { for _ in $(seq 3000); do grep -q "holds .* steps" "$1" && break; sleep 0.01; done; }

# 1. the budget is honoured, a tokenizer trained inside it. The machine is
# shared: the run's own total must be within the budget and the wall time
# the test measures within it plus 2 s (the process's start and end under
# load); a run the budget stopped early because the machine slowed after
# its steps were timed (it says so; section 2 tests that) is tried again,
# up to three runs in all (under a sanitizer beside other tests, two in a
# row have been seen to run late).
budget_run() {
  rm -rf "$work/b"
  local t0 t1
  t0=$(now)
  "$bin" train "${small[@]}" --tokenizer bpe:380 --time-budget 20 --eval-interval 200 --out "$work/b" \
    >"$work/b.log" 2>&1
  rc=$?
  t1=$(now)
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  own=$(sed -n 's/^tiny_gpt: the run took \([0-9.]*\) s of its --time-budget 20 s.*/\1/p' "$work/b.log")
}
budget_run
for try in 2 3; do
  [ $rc -eq 0 ] && grep -q "ran out at step" "$work/b.log" || break
  echo "note: the machine slowed during budget run $((try - 1)), which stopped at its deadline: run $try"
  budget_run
done
n=$(sed -n 's/^tiny_gpt: --time-budget 20 s holds \([0-9]*\) steps.*/\1/p' "$work/b.log")
[ $rc -eq 0 ] && [ -n "$own" ] && [ -n "$n" ] || bad "the budget run: exit $rc, $(tail -3 "$work/b.log")"
awk -v o="${own:-99}" -v w="$wall" 'BEGIN { exit !(o <= 20 && w < 22 && o >= 10) }' &&
  ok "--time-budget 20 (a BPE tokenizer trained in it): $n steps, the run's own total $own s, wall $wall s" ||
  bad "--time-budget 20: own total ${own:-none} s, wall $wall s (wanted <= 20, < 22, and >= 10: the budget used)"
grep -q "^tiny_gpt train: --tokenizer bpe:380: trained 380 ids" "$work/b.log" && ok "the tokenizer was trained" ||
  bad "no tokenizer line: $(head -3 "$work/b.log")"
# the third run stopped at its deadline too (a loaded machine): its resume
# runs the rest of the chosen steps (section 2 tests that it is the same run)
if grep -q "ran out at step" "$work/b.log"; then
  echo "note: budget run 3 stopped at its deadline as well: resumed to its end"
  "$bin" train --resume --out "$work/b" >"$work/b2.log" 2>&1 || bad "the budget run's resume: $(tail -2 "$work/b2.log")"
fi
last=$(awk -F, 'NR > 1 {s = $1} END {print s}' "$work/b/metrics.csv")
[ "$(meta "$work/b/last.safetensors" train.steps)" = "$n" ] &&
  [ "$(meta "$work/b/last.safetensors" train.budget_steps)" = "$n" ] &&
  [ "$(meta "$work/b/last.safetensors" train.decay_steps)" = "$n" ] &&
  [ "$(meta "$work/b/last.safetensors" train.step)" = "$n" ] && [ "$last" = "$n" ] &&
  ok "the chosen steps are recorded (train.steps, train.budget_steps, train.decay_steps) and run" ||
  bad "recorded: steps $(meta "$work/b/last.safetensors" train.steps), budget_steps \
$(meta "$work/b/last.safetensors" train.budget_steps), metrics end at $last, chosen $n"

# 2. the budget is a deadline: a machine slower than when the steps were
# timed (here the process is stopped once they are chosen, and woken 8.5 s
# after its start, 1.5 s before the deadline: whatever the timing
# measured, the rest of the steps no longer fit; a fixed pause of 5 s did
# not stop a run whose steps were timed on a loaded machine and then ran
# 2.6 times faster) stops the run at the budget, resumable; the budget run
# resumed is the run `--steps N` gives: the same rows and the same tensors
# (dropout on, warmup-stable-decay)
cfg=("${small[@]}" --dropout 0.1 --eval-interval 50 --warmup 10 --schedule wsd --decay-frac 0.3)
t0=$(date +%s.%N)
"$bin" train "${cfg[@]}" --time-budget 10 --out "$work/r" >"$work/r.log" 2>&1 &
pid=$!
until_planned "$work/r.log"
kill -STOP $pid
sleep "$(awk -v t0="$t0" -v now="$(date +%s.%N)" 'BEGIN { p = 8.5 - (now - t0); print (p > 0 ? p : 0) }')"
kill -CONT $pid
wait $pid || bad "the budget run stopped at its deadline: exit $?, $(tail -2 "$work/r.log")"
m=$(sed -n 's/^tiny_gpt: --time-budget 10 s holds \([0-9]*\) steps.*/\1/p' "$work/r.log")
k=$(sed -n 's/.*--time-budget 10 s ran out at step \([0-9]*\) of .*/\1/p' "$work/r.log")
own=$(sed -n 's/^tiny_gpt: the run took \([0-9.]*\) s of its --time-budget 10 s.*/\1/p' "$work/r.log")
[ -n "$k" ] && [ "$k" -lt "${m:-0}" ] && awk -v o="${own:-99}" 'BEGIN { exit !(o <= 10) }' &&
  ok "slowed after the timing, the run stops at its deadline: step $k of $m, $own s of 10" ||
  bad "deadline: step '${k}' of '${m}', own total '${own}': $(grep -v '^step' "$work/r.log" | tail -3)"
"$bin" train --resume --out "$work/r" >"$work/r2.log" 2>&1 || bad "the resume: $(tail -2 "$work/r2.log")"
grep -q "continuing at step ${k:-x} of $m\$" "$work/r2.log" && ! grep -q "holds .* steps" "$work/r2.log" &&
  ok "the resume continues the $m chosen steps, choosing none" || bad "resume: $(head -4 "$work/r2.log")"
"$bin" train "${cfg[@]}" --steps "${m:-1}" --out "$work/p" >"$work/p.log" 2>&1 || bad "--steps $m: $(tail -2 "$work/p.log")"
if [ "$(untimed "$work/r")" = "$(untimed "$work/p")" ] &&
   [ "$(tensors "$work/r/last.safetensors")" = "$(tensors "$work/p/last.safetensors")" ] &&
   [ "$(tensors "$work/r/best.safetensors")" = "$(tensors "$work/p/best.safetensors")" ]; then
  ok "budget run stopped at $k + --resume = --steps $m: the same losses, rates and tensors, bit for bit"
else bad "the resumed budget run differs from --steps $m"; diff <(untimed "$work/r") <(untimed "$work/p") | head -4; fi
expect_fail "a resume keeps its budget" "--time-budget 7 differs from the run's 10" \
  "$bin" train --resume --time-budget 7 --out "$work/r"

# 2b. a machine that slows evenly once the steps are timed (the process
# stopped for 60 ms of every 120 from then on): its evaluations and saves
# slow as its steps do, and the run still ends within the budget, all its
# steps done or stopped as in section 2
"$bin" train "${small[@]}" --eval-interval 10 --time-budget 8 --out "$work/e" >"$work/e.log" 2>&1 &
pid=$!
until_planned "$work/e.log"
(while kill -STOP $pid 2>/dev/null; do sleep 0.06; kill -CONT $pid 2>/dev/null; sleep 0.06; done) &
throttle=$!
wait $pid
rc=$?
kill $throttle 2>/dev/null; wait $throttle 2>/dev/null
own=$(sed -n 's/^tiny_gpt: the run took \([0-9.]*\) s of its --time-budget 8 s.*/\1/p' "$work/e.log")
[ $rc -eq 0 ] && awk -v o="${own:-99}" 'BEGIN { exit !(o <= 8) }' &&
  ok "slowed evenly after the timing, the run ends within the budget: $own s of 8" ||
  bad "slowed evenly: exit $rc, own total '${own}' s of 8: $(grep -v '^step' "$work/e.log" | tail -3)"

# 3. --steps caps the steps a budget holds
"$bin" train "${small[@]}" --time-budget 30 --steps 37 --eval-interval 20 --out "$work/c" >"$work/c.log" 2>&1
[ "$(meta "$work/c/last.safetensors" train.steps)" = 37 ] && grep -q "holds 37 steps" "$work/c.log" &&
  ok "--steps 37 caps a budget that holds more" || bad "cap: $(grep holds "$work/c.log")"

# 4. warmup-stable-decay's rates, by hand: warmup 10, 100 steps, decay_frac
# 0.3: lr 1e-2 through step 70, then down 9e-3 / 30 a step; metrics.csv's
# row s holds the rate step s trained at (index s - 1)
"$bin" train "${small[@]}" --steps 100 --warmup 10 --lr 1e-2 --min-lr 1e-3 --schedule wsd --decay-frac 0.3 \
  --eval-interval 100 --out "$work/w" >/dev/null 2>&1 || bad "the wsd run"
want="1 0.000909091
10 0.00909091
11 0.01
71 0.01
72 0.0097
86 0.0055
100 0.0013"
got=$(awk -F, 'NR > 1 && ($1 == 1 || $1 == 10 || $1 == 11 || $1 == 71 || $1 == 72 || $1 == 86 || $1 == 100) {print $1, $3}' \
  "$work/w/metrics.csv")
[ "$got" = "$want" ] && ok "--schedule wsd: the rates worked out by hand" || bad "wsd rates: $(echo $got)"
[ "$(meta "$work/w/last.safetensors" train.schedule)" = wsd ] &&
  [ "$(meta "$work/w/last.safetensors" train.decay_frac)" = 0.3 ] && ok "the schedule is recorded" ||
  bad "schedule not recorded"

# 5. --tokenizer bpe:V never sees the val split: the text's last 10% holds a
# word found nowhere else, many times (a tokenizer learned from the whole
# text makes a piece of it)
for i in $(seq 500); do echo "the cat sat on the mat $((i % 9)) and the dog ran"; done >"$work/t.txt"
for i in $(seq 300); do printf 'zqxjvk '; done >>"$work/t.txt"
len=$(wc -c <"$work/t.txt")
head -c $((len * 9 / 10)) "$work/t.txt" >"$work/t90.txt"
grep -q zqxjvk "$work/t90.txt" && bad "the test's text: the word is in the train split"
"$bin" train --data "$work/t.txt" --tokenizer bpe:300 --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 \
  --steps 6 --stop-at 3 --eval-iters 2 --threads 1 --out "$work/k" >"$work/k.log" 2>&1 || bad "bpe run: $(tail -2 "$work/k.log")"
"$bin" tokenizer train --data "$work/t90.txt" --vocab-size 300 --out "$work/t90.tok" >/dev/null 2>&1
"$bin" tokenizer train --data "$work/t.txt" --vocab-size 300 --out "$work/all.tok" >/dev/null 2>&1
ids() { "$bin" tokenizer encode --tokenizer "$1" <"$2"; }
printf ' zqxjvk' >"$work/word.txt"
[ "$(ids "$work/k/last.safetensors" "$work/t.txt")" = "$(ids "$work/t90.tok" "$work/t.txt")" ] &&
  ok "bpe:300 is the tokenizer learned from the first 90% of the text: the same ids for the whole text" ||
  bad "bpe:300 differs from the one learned from the first 90%"
a=$(ids "$work/k/last.safetensors" "$work/word.txt" | wc -w)
b=$(ids "$work/all.tok" "$work/word.txt" | wc -w)
[ "$b" -lt "$a" ] && [ "$a" -eq 7 ] &&
  ok "the val split's word: $a ids under bpe:300 (its bytes), $b under a tokenizer learned from all the text" ||
  bad "the val split's word: $a ids under bpe:300, $b learned from all"
"$bin" train --resume --tokenizer bpe:300 --out "$work/k" >"$work/k2.log" 2>&1 || bad "bpe resume: $(tail -2 "$work/k2.log")"
! grep -q "trained" "$work/k2.log" && [ "$(ids "$work/k/last.safetensors" "$work/t.txt")" = "$(ids "$work/t90.tok" "$work/t.txt")" ] &&
  ok "a resume keeps the checkpoint's tokenizer, learning none" || bad "bpe resume: $(head -3 "$work/k2.log")"
# bpe:V:spaces is tokenizer train --words spaces (pieces may join words and
# punctuation, as tapegrad 0.2 trained); the default keeps them apart
for i in $(seq 400); do echo "the lord, the cat; sat. on the mat! o'er $((i % 7))th, the lord."; done >"$work/p.txt"
head -c $(($(wc -c <"$work/p.txt") * 9 / 10)) "$work/p.txt" >"$work/p90.txt"
"$bin" train --data "$work/p.txt" --tokenizer bpe:330:spaces --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 \
  --steps 2 --eval-iters 1 --threads 1 --out "$work/ks" >"$work/ks.log" 2>&1 || bad "bpe:330:spaces run: $(tail -2 "$work/ks.log")"
"$bin" tokenizer train --data "$work/p90.txt" --vocab-size 330 --words spaces --out "$work/p90s.tok" >/dev/null 2>&1
"$bin" tokenizer train --data "$work/p90.txt" --vocab-size 330 --out "$work/p90c.tok" >/dev/null 2>&1
[ "$(ids "$work/ks/last.safetensors" "$work/p.txt")" = "$(ids "$work/p90s.tok" "$work/p.txt")" ] &&
  [ "$(ids "$work/p90c.tok" "$work/p.txt")" != "$(ids "$work/p90s.tok" "$work/p.txt")" ] &&
  [ "$(printf ' lord,' | ids "$work/p90s.tok" /dev/stdin | wc -w)" -eq 1 ] &&
  [ "$(printf ' lord,' | ids "$work/p90c.tok" /dev/stdin | wc -w)" -eq 2 ] &&
  ok "bpe:330:spaces is tokenizer train --words spaces (' lord,' one piece); the default cuts it at the comma" ||
  bad "bpe:330:spaces: not the --words spaces tokenizer, or the default joins words and punctuation"

# 6. refused, each with its reason
expect_fail "--decay-steps with --time-budget" "--decay-steps goes without --time-budget" \
  "$bin" train "${small[@]}" --time-budget 5 --decay-steps 10 --out "$work/e1"
expect_fail "an unknown --schedule" "--schedule: 'linear' is not cosine or wsd" \
  "$bin" train "${small[@]}" --schedule linear --out "$work/e2"
expect_fail "--decay-frac without wsd" "--decay-frac is a setting of --schedule wsd" \
  "$bin" train "${small[@]}" --decay-frac 0.5 --out "$work/e3"
expect_fail "bpe:V below the bytes" "bpe:V wants V" "$bin" train "${small[@]}" --tokenizer bpe:12 --out "$work/e4"
expect_fail "bpe:V:words" "--tokenizer bpe:300:words: after bpe:V comes nothing, :classes or :spaces" \
  "$bin" train "${small[@]}" --tokenizer bpe:300:words --out "$work/e4"
expect_fail "tokenizer train --words" "--words letters: expected classes or spaces" \
  "$bin" tokenizer train --data "$work/p.txt" --words letters --out "$work/e4.tok"
expect_fail "a budget too small for one step" "--time-budget 0.05: not one step fits" \
  "$bin" train "${small[@]}" --time-budget 0.05 --out "$work/e5"
[ ! -e "$work/e1" ] && [ ! -e "$work/e4" ] && [ ! -e "$work/e4.tok" ] && ok "a refused run leaves no OUT" || bad "a refused run left OUT"

# 7. the plan's record is checked at resume, never carried on bad:
# train.budget_steps is a step count, the run's train.steps until a resume
# gives the run other steps, which records the step it did so at
# (train.budget_left_at, at most both)
"$bin" train "${small[@]}" --time-budget 6 --stop-at 6 --eval-interval 3 --out "$work/v" >"$work/v.log" 2>&1 ||
  bad "the budget run stopped at 6: $(tail -2 "$work/v.log")"
nb=$(meta "$work/v/last.safetensors" train.budget_steps)
edited() { rm -rf "$work/v2"; mkdir "$work/v2"; "$st_edit" "$1/last.safetensors" "$work/v2/last.safetensors" "${@:2}"; }
for v in nan -5 0 9223372036854775807; do
  edited "$work/v" train.budget_steps=$v
  expect_fail "train.budget_steps $v" "'train.budget_steps' = '$v' is not an integer in [1, 1000000000000]" \
    "$bin" train --resume --stop-at 7 --out "$work/v2"
done
edited "$work/v" train.budget_steps=3
expect_fail "train.budget_steps 3 beside train.steps $nb, 6 steps done" \
  "'train.budget_steps' = '3' is not the run's 'train.steps' $nb, and no resume gave the run other steps" \
  "$bin" train --resume --stop-at 7 --out "$work/v2"
"$bin" train --resume --steps 8 --out "$work/v" >"$work/v3.log" 2>&1 || bad "a resume to 8 steps: $(tail -2 "$work/v3.log")"
[ "$(meta "$work/v/last.safetensors" train.budget_left_at)" = 6 ] && [ "$(meta "$work/v/last.safetensors" train.steps)" = 8 ] &&
  [ "$(meta "$work/v/last.safetensors" train.budget_steps)" = "$nb" ] &&
  ok "a resume to other steps (8 of the budget's $nb) records where it left them: train.budget_left_at 6" ||
  bad "resumed to 8: left_at '$(meta "$work/v/last.safetensors" train.budget_left_at)', steps $(meta "$work/v/last.safetensors" train.steps)"
"$bin" train --resume --steps 9 --out "$work/v" >"$work/v4.log" 2>&1 && [ "$(meta "$work/v/last.safetensors" train.step)" = 9 ] &&
  [ "$(meta "$work/v/last.safetensors" train.budget_left_at)" = 6 ] && ok "and resumes on from that record" ||
  bad "a resume to 9: $(tail -2 "$work/v4.log")"
edited "$work/v" train.budget_left_at=10
expect_fail "train.budget_left_at past the steps done" "'train.budget_left_at' = '10' is not an integer in [0, 9]" \
  "$bin" train --resume --steps 10 --out "$work/v2"
finish
