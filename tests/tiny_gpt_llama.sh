#!/usr/bin/env bash
# tiny_gpt with --arch llama, as a llama2.c user runs it: train, resume,
# evaluate, sample with run.c's conventions, and export to llama2.c's
# files, which the test suite's own reader of that format (llama2c_run,
# written from run.c's documented behaviour) runs: the same greedy text
# token for token, the same loss; import round-trips bit for bit.
#   tests/tiny_gpt_llama.sh path/to/tiny_gpt path/to/st_edit path/to/llama2c_run
. "$(dirname "$0")/tiny_gpt_lib.sh"
run_c=$3

# a text of lines (one document: BOS + " " + the text) a small model learns in 150 steps
for i in $(seq 400); do printf 'the cat %d sees the dog %d.\n' $((i % 7)) $((i % 3)); done > "$work/text.txt"
llama=(--arch llama --n-layer 2 --n-head 4 --n-kv-head 2 --n-embd 32 --hidden-dim 40 --block-size 256
       --batch-size 4 --lr 1e-2 --warmup 10 --eval-iters 4 --threads 1 --data "$work/text.txt")

# 1. train, with a stop and --resume alone on the way: the same run
"$bin" train "${llama[@]}" --steps 150 --eval-interval 50 --out "$work/ref" >"$work/ref.log" 2>&1 ||
  bad "llama training failed: $(tail -3 "$work/ref.log")"
"$bin" train "${llama[@]}" --steps 150 --eval-interval 50 --stop-at 70 --out "$work/r" >/dev/null 2>&1
"$bin" train --resume --out "$work/r" >/dev/null 2>&1
[ "$(untimed "$work/ref")" = "$(untimed "$work/r")" ] && cmp -s "$work/ref/last.safetensors" "$work/r/last.safetensors" &&
  ok "a stopped and resumed Llama run is the uninterrupted one" || bad "llama resume differs"
hdr=$(header "$work/ref/best.safetensors")
for kv in arch:llama n_kv_head:2 hidden_dim:40 rope_theta:10000 tied:true vocab:llama2c vocab_size:259; do
  grep -qF "\"${kv%%:*}\":\"${kv#*:}\"" <<<"$hdr" || bad "metadata lacks ${kv%%:*} = ${kv#*:}"
done
first=$(evals "$work/ref" | head -1 | cut -d' ' -f3)
last=$(evals "$work/ref" | tail -1 | cut -d' ' -f3)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.5 && a > 5) }' && ok "val loss falls ($first -> $last)" ||
  bad "val loss $first -> $last"
line=$(grep '^step 150: ' "$work/ref.log" | sed 's/ (floor.*//')
[ -n "$line" ] && [ "$("$bin" eval --ckpt "$work/ref/last.safetensors" 2>&1)" = "$line" ] &&
  ok "eval --ckpt of a Llama reproduces '$line'" || bad "llama eval --ckpt"

# 2. export to llama2.c's files; the reader runs them as run.c would
"$bin" export --ckpt "$work/ref/best.safetensors" --format llama2c --out "$work/model.bin" \
  --tokenizer "$work/tok.bin" >/dev/null 2>&1 || bad "export failed"
size=$(stat -c %s "$work/model.bin")
# 7 int32, then 259x32 + 2 layers x (32 + 32x32 + 2 x 16x32 + 32x32 + 32 + 3 x 40x32) + 32 + 2 x 256x4 floats
want=$((28 + 4 * (259 * 32 + 2 * (32 + 1024 + 1024 + 1024 + 32 + 3 * 1280) + 32 + 2 * 1024)))
[ "$size" = "$want" ] && ok "model.bin has run.c's layout ($size bytes)" || bad "model.bin is $size bytes, want $want"
# --ckpt DIR: the run's best, as sample and eval take it
"$bin" export --ckpt "$work/ref" --out "$work/model_dir.bin" --tokenizer "$work/tok_dir.bin" >"$work/dir.log" 2>&1 &&
  cmp -s "$work/model.bin" "$work/model_dir.bin" && grep -q "best.safetensors" "$work/dir.log" &&
  ok "export --ckpt DIR reads the run's best.safetensors" || bad "export --ckpt DIR: $(cat "$work/dir.log")"
# run.c -n STEPS generates STEPS - (prompt ids - 1) tokens; it prints no single byte that is not
# printable ASCII (tiny_gpt prints every byte): compare what both print
printable() { LC_ALL=C tr -cd '\11-\15\40-\176'; }
for prompt in "the " "the cat 4 sees" ""; do
  np=$(( ${#prompt} + (${#prompt} > 0 ? 2 : 1) - 1 ))   # BOS, the dummy " ", one id per byte; minus the first
  ours=$("$bin" sample --ckpt "$work/ref/best.safetensors" --prompt "$prompt" --tokens 220 --temperature 0 2>/dev/null | printable)
  theirs=$("$run_c" "$work/model.bin" "$work/tok.bin" "$prompt" $((np + 220)))
  if [ ${#ours} -ge $((${#prompt} + 200)) ] && [ "$ours" = "$theirs" ]; then
    ok "greedy text of '$prompt' equals the llama2.c reader's, all ${#ours} bytes: ${ours:0:40}..."
  else bad "greedy '$prompt': tiny_gpt '${ours:0:80}' vs reader '${theirs:0:80}'"; fi
done
"$run_c" "$work/model.bin" "$work/tok.bin" "the cat 5 sees the dog 2.
the cat 6 sees the bird 0." 0 "$work/batch.safetensors" >"$work/rl.txt"
theirs=$(sed -n 's/^loss //p' "$work/rl.txt")
ours=$("$bin" eval --init "$work/ref/best.safetensors" --batch "$work/batch.safetensors" 2>&1 | sed -n 's/^loss //p')
awk -v a="$ours" -v b="$theirs" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-5 * a) }' &&
  ok "the reader's loss $theirs equals tiny_gpt's $ours on the same tokens" || bad "loss: reader '$theirs' vs tiny_gpt '$ours'"
# eval --text: the same text encoded as sample encodes a prompt (BOS, " ", the bytes), scored in one window
printf 'the cat 5 sees the dog 2.\nthe cat 6 sees the bird 0.' >"$work/score.txt"
line=$("$bin" eval --ckpt "$work/ref/best.safetensors" --text "$work/score.txt" 2>&1)
nll=$(sed -n 's/^nll \([0-9.]*\) nats per token over 53 predictions (perplexity [0-9.]*)$/\1/p' <<<"$line")
awk -v a="$nll" -v b="$theirs" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-5 * a) }' &&
  ok "eval --text: '$line', the reader's loss $theirs" || bad "eval --text: '$line' vs the reader's loss '$theirs'"
# a text longer than the block: its first block_size (256) ids, 255 predictions
for i in $(seq 40); do printf 'the cat %d sees the dog %d.\n' $((i % 7)) $((i % 3)); done >"$work/long.txt"
head -c 254 "$work/long.txt" >"$work/cut.txt"
a=$("$bin" eval --ckpt "$work/ref/best.safetensors" --text "$work/long.txt" 2>&1)
b=$("$bin" eval --ckpt "$work/ref/best.safetensors" --text "$work/cut.txt" 2>&1)
grep -q "over 255 predictions" <<<"$a" && [ "$a" = "$b" ] && ok "eval --text scores the first block_size ids: $a" ||
  bad "eval --text of a long text '$a' vs its first 254 bytes '$b'"
: >"$work/empty.txt"
expect_fail "eval --text of an empty text" "gives 1 id: at least two are needed for one prediction" \
  "$bin" eval --ckpt "$work/ref/best.safetensors" --text "$work/empty.txt"
expect_fail "eval --text with --data" "--text (one window of a text) excludes --data" \
  "$bin" eval --ckpt "$work/ref/best.safetensors" --text "$work/score.txt" --data "$work/text.txt"

# decoding allocates nothing per token: the same heap allocations for 20 and 200 tokens
a20=$("$bin" sample --ckpt "$work/ref/best.safetensors" --prompt "the " --tokens 20 --temperature 0 --stats 2>&1 >/dev/null)
a200=$("$bin" sample --ckpt "$work/ref/best.safetensors" --prompt "the " --tokens 200 --temperature 0 --stats 2>&1 >/dev/null)
n20=$(sed -n 's/.*; \([0-9]*\) heap allocations$/\1/p' <<<"$a20")
n200=$(sed -n 's/.*; \([0-9]*\) heap allocations$/\1/p' <<<"$a200")
[ -n "$n20" ] && [ "$n20" = "$n200" ] && ok "decoding makes no heap allocation per token ($n20 for 20 tokens and for 200)" ||
  bad "allocations while decoding: '$a20' / '$a200'"

# documents end where the model says BOS: both stop there, and sample says why (issue 20)
for i in $(seq 80); do printf 'the dog sees a bird.\n\nsome birds sing.\n\n'; done > "$work/docs.txt"
"$bin" train "${llama[@]}" --data "$work/docs.txt" --steps 100 --eval-interval 100 --out "$work/p" >/dev/null 2>&1
"$bin" export --ckpt "$work/p/last.safetensors" --out "$work/p.bin" --tokenizer "$work/ptok.bin" >/dev/null 2>&1
ours=$("$bin" sample --ckpt "$work/p/last.safetensors" --prompt "some" --tokens 200 --temperature 0 --stats 2>"$work/bos.err")
theirs=$("$run_c" "$work/p.bin" "$work/ptok.bin" "some" 205)
[ -n "$ours" ] && [ ${#ours} -lt 100 ] && [ "$theirs" = "$ours" ] && ok "a document ends at BOS in both: '$ours'" ||
  bad "BOS stop: tiny_gpt '$ours', reader '$theirs'"
n=$(sed -n 's/^tiny_gpt sample: notice: stopped at token \([0-9]*\) of 200: the model produced BOS (id 1), which ends a text$/\1/p' \
  "$work/bos.err")
[ -n "$n" ] && [ "$n" -gt $(( ${#ours} - 4 )) ] && [ "$n" -lt 100 ] &&
  grep -qE "^tiny_gpt sample: $n tokens made \(of 200 asked for\) in " "$work/bos.err" &&
  ok "sample says it stopped at BOS (token $n of 200), and --stats counts the $n tokens made" ||
  bad "BOS stop, stderr: $(cat "$work/bos.err")"

# 3. import round-trips bit for bit, both ways
"$bin" import --format llama2c --model "$work/model.bin" --tokenizer "$work/tok.bin" --out "$work/imp.safetensors" \
  >/dev/null 2>&1 || bad "import failed"
"$bin" export --ckpt "$work/imp.safetensors" --out "$work/model2.bin" --tokenizer "$work/tok2.bin" >/dev/null 2>&1
cmp -s "$work/model.bin" "$work/model2.bin" && cmp -s "$work/tok.bin" "$work/tok2.bin" &&
  ok "export(import(model.bin)) is model.bin, byte for byte" || bad "re-export differs"
a=$("$bin" eval --init "$work/ref/best.safetensors" --batch "$work/batch.safetensors" 2>&1)
b=$("$bin" eval --init "$work/imp.safetensors" --batch "$work/batch.safetensors" 2>&1)
[ -n "$a" ] && [ "$a" = "$b" ] && ok "the imported weights are the exported ones (loss $a)" || bad "import: '$a' vs '$b'"
# an untied head goes through both ways too
"$bin" train "${llama[@]}" --tied false --n-kv-head 1 --steps 4 --eval-interval 4 --out "$work/u" >/dev/null 2>&1
"$bin" export --ckpt "$work/u/last.safetensors" --out "$work/u.bin" --tokenizer "$work/utok.bin" >/dev/null 2>&1
vs=$(od -An -td4 -j20 -N4 "$work/u.bin" | tr -d ' ')
"$bin" import --model "$work/u.bin" --tokenizer "$work/utok.bin" --out "$work/u.safetensors" >/dev/null 2>&1
"$bin" export --ckpt "$work/u.safetensors" --out "$work/u2.bin" >/dev/null 2>&1
[ "$vs" = "-259" ] && cmp -s "$work/u.bin" "$work/u2.bin" && ok "an untied, multi-query Llama: vocab_size -259, round trip exact" ||
  bad "untied export: vocab_size '$vs'"
ours=$("$bin" sample --ckpt "$work/u/last.safetensors" --prompt "the " --tokens 30 --temperature 0 2>&1 | printable)
theirs=$("$run_c" "$work/u.bin" "$work/utok.bin" "the " 35)
[ "$ours" = "$theirs" ] && ok "the untied MQA model samples as the reader does" || bad "untied: '$ours' vs '$theirs'"

# 4. what run.c cannot take is refused, with the reason
"$bin" train --n-layer 1 --n-head 2 --n-embd 16 --block-size 32 --steps 2 --eval-iters 1 --threads 1 --out "$work/g" \
  >/dev/null 2>&1
expect_fail "export of a GPT" "llama2c export needs a Llama checkpoint, this one is a gpt" \
  "$bin" export --ckpt "$work/g/last.safetensors" --out "$work/x.bin"
"$bin" train "${llama[@]}" --rope halves --steps 2 --eval-iters 1 --out "$work/h" >/dev/null 2>&1
expect_fail "export of HF-style RoPE" "run.c hard-codes RoPE with interleaved pairs" \
  "$bin" export --ckpt "$work/h/last.safetensors" --out "$work/x.bin"
head -c 1000 "$work/model.bin" > "$work/short.bin"
expect_fail "import of a truncated file" "does not match the file's size (1000 bytes" \
  "$bin" import --model "$work/short.bin" --ids-only --out "$work/x.safetensors"
[ ! -e "$work/x.bin" ] && [ ! -e "$work/x.safetensors" ] && ok "refused exports and imports write nothing" ||
  bad "a refused export or import wrote a file"
# import refuses what sample could not run or run.c could not read, writing nothing (issue 20)
python3 - "$work" <<'PY'
import struct, sys
w = sys.argv[1]
model = open(w + '/model.bin', 'rb').read()
tok = open(w + '/tok.bin', 'rb').read()
def put(name, b): open(w + '/' + name, 'wb').write(b)
for name, x in (('nan', float('nan')), ('inf', float('inf'))):
    put(name + '.bin', model[:28 + 4 * 1000] + struct.pack('<f', x) + model[28 + 4 * 1001:])
def llama(dim, hidden, layers, heads, kv, vocab, seq):   # a zero model of that header, tied
    hd = dim // heads
    ckv = kv * hd
    floats = dim * (2 * dim + 2 * ckv + 3 * hidden + 2) * layers + dim * (abs(vocab) * (1 if vocab > 0 else 2) + 1) + seq * hd
    return struct.pack('<7i', dim, hidden, layers, heads, kv, vocab, seq) + bytes(4 * floats)
put('v100.bin', llama(8, 8, 1, 2, 2, 100, 4))
put('v258.bin', llama(8, 8, 1, 2, 2, -258, 4))
put('vmin.bin', struct.pack('<7i', 8, 8, 1, 2, 2, -2**31, 4) + bytes(4000))
put('huge.bin', struct.pack('<7i', 2**30, 2**30, 2**31 - 1, 1, 1, 2**31 - 1, 2**31 - 1) + bytes(64))
put('huge2.bin', struct.pack('<7i', 2**15, 2**31 - 1, 2**14, 1, 1, 2**30, 2**31 - 1) + bytes(64))
for name, m in (('m-1', -1), ('m0', 0), ('m1', 1), ('mmax', 2**31 - 1)):
    put('tok_' + name + '.bin', struct.pack('<i', m) + tok[4:])
put('tok_trail.bin', tok + b'garbage')
put('tok_extra.bin', tok + struct.pack('<fi', 0.0, 3) + b'abc')
PY
imp() { "$bin" import --model "$1" --tokenizer "${2:-$work/tok.bin}" --out "$work/bad.safetensors"; }
expect_fail "import of a NaN weight" "nan.bin: offset 4028: the weight 1000 of the file is nan" \
  imp "$work/nan.bin"
expect_fail "import of an infinite weight" "offset 4028: the weight 1000 of the file is inf" imp "$work/inf.bin"
expect_fail "import of vocab_size 100 with a tokenizer (below its 259 ids)" "vocab_size 100 is below the 259 ids of llama2.c's tokenizers" \
  imp "$work/v100.bin"
expect_fail "import of vocab_size -258 (untied, below the byte vocabulary)" "vocab_size 258 is below the 259 ids" \
  imp "$work/v258.bin"
expect_fail "import of vocab_size INT32_MIN" "vocab_size -2147483648, seq_len 4) does not describe a Llama" \
  imp "$work/vmin.bin"
expect_fail "import of a huge header" "does not describe a Llama" imp "$work/huge.bin"
# (its size would pass 2^63; the parameter count's limits, a 2^28-wide MLP and 2^40 elements, refuse it first)
expect_fail "import of a header whose size passes 2^63" "seq_len 2147483647) does not describe a Llama" \
  imp "$work/huge2.bin"
for m in -1 0 1 2147483647; do
  [ $m = 2147483647 ] && f=mmax || f=m$m
  expect_fail "import with max_token_length $m" "offset 0: max_token_length $m is not the longest piece's length 6" \
    imp "$work/model.bin" "$work/tok_$f.bin"
done
expect_fail "import of a tokenizer with trailing garbage" "7 bytes after the vocab_size 259 entries" \
  imp "$work/model.bin" "$work/tok_trail.bin"
expect_fail "import of a tokenizer with an entry beyond vocab_size" "11 bytes after the vocab_size 259 entries" \
  imp "$work/model.bin" "$work/tok_extra.bin"
[ ! -e "$work/bad.safetensors" ] && ok "refused imports write nothing" || bad "a refused import wrote a checkpoint"
# 5. GGUF (what llama.cpp makes of the file: tests/gguf_llama.js): its frame, and what is refused
"$bin" export --ckpt "$work/ref/best.safetensors" --format gguf --out "$work/m.gguf" >/dev/null 2>&1
"$bin" export --ckpt "$work/ref/best.safetensors" --format gguf --type q8_0 --out "$work/m8.gguf" >/dev/null 2>&1
hdr=$(od -An -tu4 -N8 "$work/m.gguf" 2>/dev/null | tr -s ' ')
s32=$(stat -c %s "$work/m.gguf" 2>/dev/null || echo 0); s8=$(stat -c %s "$work/m8.gguf" 2>/dev/null || echo 0)
[ "$hdr" = " 1179993927 3" ] && [ "$s8" -gt 0 ] && [ $((s8 * 2)) -lt "$s32" ] &&
  ok "export --format gguf: 'GGUF' version 3, $s32 bytes; q8_0 $s8 bytes" || bad "gguf: header '$hdr', sizes $s32 $s8"
# a GPT goes as llama.cpp's gpt2 (tests/gguf_gpt.js runs it), an erf one with a notice
msg=$("$bin" export --ckpt "$work/g/last.safetensors" --format gguf --out "$work/g.gguf" 2>&1)
LC_ALL=C grep -aq 'gpt2.context_length' "$work/g.gguf" 2>/dev/null && grep -q "notice: this GPT computes GELU's exact erf" <<<"$msg" &&
  ok "gguf export of a GPT: llama.cpp's gpt2, with the GELU notice" || bad "gguf export of a GPT: $msg"
expect_fail "gguf export --type q4_0" "--type: f32, f16 or q8_0" \
  "$bin" export --ckpt "$work/ref/best.safetensors" --format gguf --type q4_0 --out "$work/x.gguf"
expect_fail "gguf export with --tokenizer" "--tokenizer goes with --format llama2c" \
  "$bin" export --ckpt "$work/ref/best.safetensors" --format gguf --tokenizer "$work/t.bin" --out "$work/x.gguf"
expect_fail "llama2c export with --type" "--type goes with --format gguf" \
  "$bin" export --ckpt "$work/ref/best.safetensors" --type f16 --out "$work/x.bin"
# llama.cpp finds tokens by their text: a learned piece spelled like a special
# is refused (such a piece joins letters and punctuation: --words spaces)
for i in $(seq 300); do printf '<s> x\n'; done >"$work/spec.txt"
"$bin" tokenizer train --data "$work/spec.txt" --vocab-size 264 --words spaces --out "$work/spec.safetensors" >/dev/null 2>&1
"$bin" train --arch llama --n-layer 1 --n-head 2 --n-embd 16 --hidden-dim 16 --block-size 32 --batch-size 2 \
  --steps 2 --eval-iters 1 --threads 1 --data "$work/spec.txt" --tokenizer "$work/spec.safetensors" \
  --out "$work/sp" >/dev/null 2>&1
expect_fail "gguf export of a piece spelled like a special" \
  "is written \"<s>\" in llama.cpp's vocabulary, as is a special token (id 1)" \
  "$bin" export --ckpt "$work/sp/last.safetensors" --format gguf --out "$work/x.gguf"
[ ! -e "$work/x.gguf" ] && [ ! -e "$work/x.bin" ] && ok "refused GGUF exports write nothing" ||
  bad "a refused GGUF export wrote a file"

expect_fail "llama flags on a gpt" "--n-kv-head is a setting of --arch llama (this run is a gpt)" \
  "$bin" train --n-kv-head 2 --out "$work/y"
expect_fail "kv heads that do not divide" "--n-kv-head 3 must divide --n-head 4" "$bin" train "${llama[@]}" --n-kv-head 3 --out "$work/y"
expect_fail "bias on a llama" "--bias true: the Llama has no biases" "$bin" train "${llama[@]}" --bias true --out "$work/y"
expect_fail "unknown arch" "--arch: 'mamba' is not one of gpt, llama" "$bin" train --arch mamba --out "$work/y"

finish
