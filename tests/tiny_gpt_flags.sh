#!/usr/bin/env bash
# The flags a nanoGPT user types: --flag=value, suggestions for a mistyped
# flag, --help on stdout, --config files (and the shipped recipe),
# --grad-accum (the same losses as a larger batch), --beta1, eval --ckpt,
# sample --num-samples / --prompt-file / --vocab, the warmup warning, and
# the README's commands in the order a new user runs them.
#   tests/tiny_gpt_flags.sh path/to/tiny_gpt path/to/st_edit
. "$(dirname "$0")/tiny_gpt_lib.sh"
src=$(cd "$(dirname "$0")/.." && pwd)

# 1. --flag=value is --flag value
run=(--steps 6 --eval-interval 3 --eval-iters 4)
"$bin" train "${small[@]}" "${run[@]}" --out "$work/a" >/dev/null 2>&1
eq=()
for ((i = 0; i < ${#small[@]}; i += 2)); do eq+=("${small[i]}=${small[i + 1]}"); done
"$bin" train "${eq[@]}" --steps=6 --eval-interval=3 --eval-iters=4 --out="$work/b" >/dev/null 2>&1
[ -s "$work/b/metrics.csv" ] && [ "$(untimed "$work/a")" = "$(untimed "$work/b")" ] &&
  cmp -s "$work/a/last.safetensors" "$work/b/last.safetensors" && ok "--flag=value trains the run --flag value does" ||
  bad "--flag=value: a different run"

# 2. a mistyped flag names the closest one
expect_fail "suggests --steps" "unknown flag '--stepz'; did you mean --steps? (see --help)" "$bin" train --stepz 3
expect_fail "suggests --n-layer" "did you mean --n-layer?" "$bin" train --n_layr=3
expect_fail "suggests --num-samples" "did you mean --num-samples?" "$bin" sample --num-sample 3
expect_fail "nothing close" "unknown flag '--xyzzy' (see --help)" "$bin" train --xyzzy
expect_fail "a value after --flag=" "--lr: 'fast' is not a number" "$bin" train --lr=fast

# 3. --help goes to stdout and succeeds
for c in train sample eval step attn; do
  out=$("$bin" $c --help 2>"$work/help.err")
  rc=$?
  if [ $rc -eq 0 ] && grep -q "^usage: tiny_gpt $c" <<<"$out" && [ ! -s "$work/help.err" ]; then :
  else bad "$c --help: exit $rc, stdout '$(head -1 <<<"$out")', stderr '$(cat "$work/help.err")'"; fi
done
out=$("$bin" --help 2>/dev/null) && grep -q "^usage: tiny_gpt <command>" <<<"$out" &&
  grep -q -- "--grad-accum" <<<"$("$bin" train --help)" && ok "--help of every command is on stdout" || bad "tiny_gpt --help"

# 4. --config: name = value lines, '_' or '-', comments, quotes; flags win
cat > "$work/run.conf" <<EOF
# a small model
n_layer = 2
n-head = 2        # '-' works as well as '_'
n_embd=48
block_size = 32
batch_size = 16
lr = 3e-3
min_lr = 3e-4
warmup = 50
eval_iters = 20
corpus_chars = 100000
steps = 500       # the command line says 6
eval_interval = 3
out = "$work/never"
EOF
"$bin" train --config "$work/run.conf" --threads 1 --steps 6 --eval-iters 4 --out "$work/c" >/dev/null 2>&1
[ -s "$work/c/metrics.csv" ] && [ "$(untimed "$work/a")" = "$(untimed "$work/c")" ] && [ ! -e "$work/never" ] &&
  ok "--config gives the same run as the flags, and the command line overrides it" || bad "--config run differs"
printf 'n_layer 2\n' > "$work/bad1.conf"
expect_fail "config line without =" "--config $work/bad1.conf:1: expected 'name = value', got 'n_layer 2'" \
  "$bin" train --config "$work/bad1.conf"
printf '# fine\n\nn_layer = 2\nn_layr = 3\n' > "$work/bad2.conf"
expect_fail "unknown setting" "--config $work/bad2.conf:4: unknown setting 'n_layr'; did you mean n-layer?" \
  "$bin" train --config "$work/bad2.conf"
printf 'lr = quick\n' > "$work/bad3.conf"
expect_fail "bad value in a config" "--config $work/bad3.conf:1: lr: 'quick' is not a number" \
  "$bin" train --config "$work/bad3.conf"
expect_fail "missing config" "--config $work/nope.conf: No such file or directory" "$bin" train --config "$work/nope.conf"
# a config file is read only up to 1 MiB (issue 20: --config /dev/zero read until memory ran out)
vlimit=200000   # a sanitized build's shadow memory does not fit ulimit -v: the timeout alone
ldd "$bin" 2>/dev/null | grep -q libasan && vlimit=unlimited
expect_fail "--config /dev/zero is refused at once, within 200 MB" \
  "--config /dev/zero: more than 1048576 bytes; a config file holds at most 1 MiB" \
  bash -c 'ulimit -v "$1"; exec timeout 20 "$0" train --config /dev/zero' "$bin" "$vlimit"
{ printf 'lr = quick\n'; head -c $((1 << 20)) /dev/zero | tr '\0' '#'; } > "$work/big.conf"
expect_fail "a config file over 1 MiB is refused naming its size" \
  "--config $work/big.conf: 1048587 bytes; a config file holds at most 1 MiB (1048576 bytes)" \
  "$bin" train --config "$work/big.conf"
{ printf 'lr = quick\n'; head -c $(((1 << 20) - 11)) /dev/zero | tr '\0' '#'; } > "$work/mib.conf"
expect_fail "... and one of exactly 1 MiB is read" "--config $work/mib.conf:1: lr: 'quick' is not a number" \
  "$bin" train --config "$work/mib.conf"
# issue 20's messages. A config file cannot name another (it was "unknown setting 'config'; did you mean config?")
printf 'config = other.conf\n' > "$work/nest.conf"
expect_fail "a config file that sets config" \
  "--config $work/nest.conf:1: 'config' cannot be set in a config file: a config file does not name another" \
  "$bin" train --config "$work/nest.conf"
# a UTF-8 BOM at the start is skipped (line 1 is read as 'lr = quick'); other bytes are shown as \xNN, not raw
printf '\xef\xbb\xbflr = quick\n' > "$work/bom.conf"
expect_fail "a BOM at the start of a config file is skipped" "--config $work/bom.conf:1: lr: 'quick' is not a number" \
  "$bin" train --config "$work/bom.conf"
printf '\xff\xfe\x01 = 2\n' > "$work/bin1.conf"
expect_fail "binary in a setting's name is shown escaped" \
  "--config $work/bin1.conf:1: unknown setting '\\xff\\xfe\\x01' (see --help)" "$bin" train --config "$work/bin1.conf"
printf 'n_layer = 2\n\x1b[31mred\xc2\xa0\n' > "$work/bin2.conf"
expect_fail "... and in a line" "--config $work/bin2.conf:2: expected 'name = value', got '\\x1b[31mred\\xc2\\xa0'" \
  "$bin" train --config "$work/bin2.conf"
expect_fail "... and in a value on the command line" "--lr: '\\xc2\\xa03' is not a number" "$bin" train --lr $'\xc2\xa03'
# a word setting checked after parsing (a choice of values) names its line as a number does; the command
# line's value, which wins, is named as the flag
printf 'steps = 3\nsampling = epoch\n' > "$work/w1.conf"
expect_fail "a bad --sampling in a config file names its line" \
  "--config $work/w1.conf:2: sampling: 'epoch' is not random or epochs" "$bin" train --config "$work/w1.conf"
printf '# Muon\noptimizer = sgd\n' > "$work/w2.conf"
expect_fail "a bad --optimizer in a config file names its line" \
  "--config $work/w2.conf:2: optimizer: 'sgd' is not adamw or muon" "$bin" train --config "$work/w2.conf"
printf 'schedule = linear\ndtype = f16\n' > "$work/w3.conf"
expect_fail "... and --dtype" "--config $work/w3.conf:2: dtype: 'f16' is not f32 or f64" "$bin" train --config "$work/w3.conf"
expect_fail "... and --schedule" "--config $work/w3.conf:1: schedule: 'linear' is not cosine or wsd" \
  "$bin" train --config "$work/w3.conf" --dtype f32
out=$("$bin" train --config "$work/w2.conf" --optimizer adam 2>&1 >/dev/null)
grep -qx "tiny_gpt train: --optimizer: 'adam' is not adamw or muon" <<<"$out" &&
  ok "the command line's value over the file's is named as the flag" || bad "command line over a config: $out"
# a flag that needs a value does not take the next flag as one (--config took --out as its file)
expect_fail "--config followed by a flag" "--config needs a value, and '--out' after it is a flag (write --config=VALUE" \
  "$bin" train --config --out "$work/o"
expect_fail "... as any flag that needs a value" "--out needs a value, and '--steps' after it is a flag" \
  "$bin" train --out --steps 3
# numbers: a subnormal or 1e400 is out of range (they were "not a number"), with the range; only decimal is taken
printf 'lr = 4.9e-324\n' > "$work/sub.conf"
expect_fail "a subnormal number is out of range" "--config $work/sub.conf:1: lr: 4.9e-324 is out of range: too close to 0 (a value other than 0 needs a magnitude of at least 2.2250738585072014e-308); the range is [0, 10]" \
  "$bin" train --config "$work/sub.conf"
expect_fail "... and so is 1e400" "--lr: 1e400 is outside [0, 10]" "$bin" train --lr 1e400
expect_fail "a range is written exactly" "--corpus-chars: 2e9 is outside [1000, 1073741824]" "$bin" train --corpus-chars 2e9
printf 'n_layer = 0x1\nlr = quick\n' > "$work/hex.conf"
expect_fail "hexadecimal is refused" \
  "--config $work/hex.conf:1: n_layer: '0x1' is not a number (write it in decimal, as 3, -0.5 or 6e-4)" \
  "$bin" train --config "$work/hex.conf"
for v in 0x2 0x1p1 ' 2' $'\t2'; do   # strtod takes them whole; --xyzzy after them stops a run that would start
  want=${v/$'\t'/\\x09}
  expect_fail "--n-layer '$want' is refused" "--n-layer: '$want' is not a number (write it in decimal" \
    "$bin" train --n-layer "$v" --xyzzy
done
# the shipped recipe: every line is a flag, with nanoGPT's values
conf=$src/examples/tiny_gpt/configs/shakespeare_char.conf
printf 'the quick brown fox jumps over the lazy dog. %.0s' $(seq 60) > "$work/text.txt"
"$bin" train --config "$conf" --data "$work/text.txt" --steps 2 --warmup 1 --eval-iters 1 --threads 1 \
  --out "$work/shk" >/dev/null 2>&1
hdr=$(header "$work/shk/last.safetensors")
miss=""
for kv in n_layer:4 n_head:4 n_embd:128 block_size:64 train.batch_size:12 train.lr:0.001 train.min_lr:0.0001 \
          train.beta2:0.99 train.weight_decay:0.1 train.eval_interval:250 train.dropout:0; do
  grep -qF "\"${kv%%:*}\":\"${kv#*:}\"" <<<"$hdr" || miss="$miss ${kv%%:*}"
done
[ -z "$miss" ] && ok "shakespeare_char.conf is the nanoGPT CPU recipe, recorded in the checkpoint" ||
  bad "shakespeare_char.conf: not recorded:$miss"
# the speedrun recipe (configs/speedrun.conf) runs as its comment says, on a budget, its tokenizer trained
printf 'the quick brown fox jumps over the lazy dog %d. ' $(seq 2000) > "$work/text2.txt"
"$bin" train --config "$src/configs/speedrun.conf" --data "$work/text2.txt" --time-budget 15 --steps 2 --warmup 1 \
  --eval-iters 1 --threads 1 --out "$work/spr" >/dev/null 2>&1
hdr=$(header "$work/spr/last.safetensors")
miss=""
for kv in arch:llama n_kv_head:2 train.optimizer:muon train.time_budget:15 train.batch_size:8 train.sampling:epochs; do
  grep -qF "\"${kv%%:*}\":\"${kv#*:}\"" <<<"$hdr" || miss="$miss ${kv%%:*}"
done
[ -z "$miss" ] && ok "configs/speedrun.conf trains on a budget, its settings recorded" ||
  bad "configs/speedrun.conf: not recorded:$miss ($(head -c 300 <<<"$hdr"))"

# 5. --grad-accum N: the losses of a batch N times larger (f64, and f32)
for dt in f64 f32; do
  for bias in false true; do
    ga=("${small[@]}" --steps 8 --eval-interval 4 --eval-iters 3 --dtype $dt --bias $bias)
    "$bin" train "${ga[@]}" --batch-size 12 --out "$work/g1$dt$bias" >/dev/null 2>&1
    "$bin" train "${ga[@]}" --batch-size 4 --grad-accum 3 --out "$work/g3$dt$bias" >/dev/null 2>&1
    tol=$([ $dt = f64 ] && echo 2e-6 || echo 2e-4)
    if [ "$(losses "$work/g1$dt$bias" | wc -l)" -eq 8 ] &&
       paste -d, "$work/g1$dt$bias/metrics.csv" "$work/g3$dt$bias/metrics.csv" | awk -F, -v tol=$tol '
         NR > 1 { for (c = 2; c <= 9; c++) if (c != 4 && c != 5) {
                    a = $c; b = $(c + 9); if ((a == "") != (b == "")) bad = 1
                    d = a - b; if (d < 0) d = -d; if (d > tol * (a < 0 ? -a : a) + 1e-6) bad = 1 } }
         END { exit bad }'; then :
    else bad "--grad-accum 3 x 4 differs from --batch-size 12 ($dt, bias $bias)"; paste -d' ' <(losses "$work/g1$dt$bias") <(losses "$work/g3$dt$bias") | head -4; fi
  done
done
ok "--batch-size 4 --grad-accum 3 follows --batch-size 12: losses and evaluations (f64 and f32, bias on and off)"

# 6. --beta1
"$bin" train "${small[@]}" "${run[@]}" --beta1 0.5 --out "$work/b1" >/dev/null 2>&1
l_def=$(losses "$work/a" | sed -n 3p)
l_b1=$(losses "$work/b1" | sed -n 3p)
[ -n "$l_b1" ] && [ "$l_def" != "$l_b1" ] && grep -qF '"train.beta1":"0.5"' <<<"$(header "$work/b1/last.safetensors")" &&
  ok "--beta1 0.5 changes the run and is recorded" || bad "--beta1: '$l_def' vs '$l_b1'"

# 7. eval --ckpt prints what training printed at that step
line=$(grep '^step 6: ' <<<"$("$bin" train "${small[@]}" "${run[@]}" --force --out "$work/e" 2>&1)" | sed 's/ (floor.*//')
got=$("$bin" eval --ckpt "$work/e/last.safetensors" 2>&1)
gotb=$("$bin" eval --ckpt "$work/e/best.safetensors" 2>&1)
[ -n "$line" ] && [ "$got" = "$line" ] && [ "$gotb" = "$line" ] &&
  ok "eval --ckpt (last and best) reproduces '$line'" || bad "eval --ckpt: '$got' / '$gotb' vs '$line'"
"$st_edit" "$work/e/best.safetensors" "$work/bare.safetensors" -train.data -train.data_bytes -train.data_checksum -vocab
expect_fail "eval of weights that do not say their text" "does not record the text it was trained on: give it with --data" \
  "$bin" eval --ckpt "$work/bare.safetensors"
out=$("$bin" eval --ckpt "$work/e/best.safetensors" --eval-iters 2 --batch-size 3 2>&1)
grep -q "^step 6: train loss [0-9.]*, val loss [0-9.]* ([0-9.]* bits per byte)$" <<<"$out" && [ "$out" != "$line" ] &&
  ok "eval --ckpt --eval-iters --batch-size estimates anew" || bad "eval --eval-iters: $out"
expect_fail "eval modes do not mix" "--ckpt (loss on the run's data) excludes --init" \
  "$bin" eval --ckpt "$work/e/best.safetensors" --init "$work/e/best.safetensors"

# 8. sample: --num-samples, --prompt-file, --vocab
s=$("$bin" sample --ckpt "$work/a/best.safetensors" --prompt "the " --tokens 20 --num-samples 3 --seed 4 2>&1)
n=$(grep -c '^the ' <<<"$s")
seps=$(grep -c '^---------------$' <<<"$s")
[ "$n" -eq 3 ] && [ "$seps" -eq 2 ] && ok "--num-samples 3: three samples between two separators" ||
  bad "--num-samples: $n samples, $seps separators: $s"
printf 'the ' > "$work/prompt.txt"
s1=$("$bin" sample --ckpt "$work/a/best.safetensors" --prompt "the " --tokens 20 --seed 4 2>&1)
s2=$("$bin" sample --ckpt "$work/a/best.safetensors" --prompt-file "$work/prompt.txt" --tokens 20 --seed 4 2>&1)
[ -n "$s1" ] && [ "$s1" = "$s2" ] && ok "--prompt-file is --prompt with the file's text" || bad "--prompt-file: '$s2' vs '$s1'"
expect_fail "prompt and prompt file" "--prompt and --prompt-file exclude each other" \
  "$bin" sample --ckpt "$work/a/best.safetensors" --prompt "a" --prompt-file "$work/prompt.txt"
"$st_edit" "$work/a/best.safetensors" "$work/novocab.safetensors" -vocab
expect_fail "weights without a vocabulary" "give --vocab FILE" "$bin" sample --ckpt "$work/novocab.safetensors"
s3=$("$bin" sample --ckpt "$work/novocab.safetensors" --vocab "$work/text.txt" --prompt "the " --tokens 5 2>&1)
grep -q "does not match the --vocab file's vocabulary" <<<"$s3" && ok "--vocab of another text is refused by its size" ||
  bad "--vocab mismatch: $s3"
# a file whose bytes are the checkpoint's vocabulary (its "vocab" entry lists them)
vocab=$(header "$work/a/best.safetensors" | grep -o '"vocab":"[0-9,]*"' | grep -o '[0-9][0-9,]*')
for b in ${vocab//,/ }; do printf "\\$(printf %03o "$b")"; done > "$work/vocab.txt"
s4=$("$bin" sample --ckpt "$work/novocab.safetensors" --vocab "$work/vocab.txt" --prompt "the " --tokens 20 --seed 4 2>&1)
[ -n "$vocab" ] && [ "$s4" = "$s1" ] && ok "--vocab FILE: the weights sample as with their own vocabulary" ||
  bad "--vocab: '$s4' vs '$s1'"

# 9. warnings and messages a new user meets
out=$("$bin" train "${small[@]}" --steps 20 --warmup 30 --eval-iters 1 --out "$work/w" 2>&1)
grep -q "warning: --warmup 30 is not shorter than --steps 20" <<<"$out" && ok "warmup not shorter than the run: a warning" ||
  bad "no warmup warning: $(head -3 <<<"$out")"
: > "$work/empty.txt"
expect_fail "empty data" "--data $work/empty.txt: the file is empty" "$bin" train --data "$work/empty.txt" --out "$work/x"

# 10. the README, in a new user's order: the demo's training, then the README's sample line
demo=$(grep '^build/tiny_gpt train' "$src/scripts/demo.sh" | sed 's/ *#.*//')
readme=$(grep -m1 '^build/tiny_gpt sample' "$src/README.md" | sed 's/ *#.*//')
if [ -n "$demo" ] && [ -n "$readme" ]; then
  (cd "$work" && eval "${demo/build\/tiny_gpt/\"$bin\"} --steps 3 --eval-interval 3 --eval-iters 2 --threads 1" >/dev/null 2>&1)
  s=$(cd "$work" && eval "${readme/build\/tiny_gpt/\"$bin\"} --tokens 10" 2>&1)
  [ $? -eq 0 ] && grep -q "^the " <<<"$s" && ok "the README's sample line works right after the demo ($readme)" ||
    bad "README sample after the demo: $s"
else bad "README or demo.sh: no train/sample line"; fi

finish
