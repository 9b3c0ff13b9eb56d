#!/usr/bin/env bash
# tiny_gpt end to end, as a user runs it: training on the built-in corpus
# gets near the corpus's entropy floor; a stopped and resumed run gives the
# same losses as one that was not; sampling works; training draws
# loss.png and `attn` writes one PNG per layer and head plus index.html
# (tests/test_heatmap.c checks their pixels); and bad arguments,
# missing or malformed files, prompts outside the vocabulary and
# mismatched checkpoints each fail with a clear message.
#   tests/tiny_gpt_cli.sh path/to/tiny_gpt path/to/st_edit
. "$(dirname "$0")/tiny_gpt_lib.sh"

# 1. training gets near the entropy floor
log=$("$bin" train "${small[@]}" --steps 800 --eval-interval 200 --out "$work/a" 2>&1)
floor=$(sed -n 's/.*entropy floor is \([0-9.]*\).*/\1/p' <<<"$log")
val=$(sed -n 's/^val loss \([0-9.]*\)$/\1/p' <<<"$log")
if [ -n "$floor" ] && [ -n "$val" ] && awk -v v="$val" -v f="$floor" 'BEGIN { exit !(v - f < 0.15 && v >= f - 0.05) }'; then
  ok "val loss $val within 0.15 of the entropy floor $floor"
else
  bad "training: floor '$floor' val '$val'"; echo "$log" | tail -5
fi
for f in best.safetensors last.safetensors metrics.csv; do
  [ -s "$work/a/$f" ] && ok "wrote $f" || bad "missing $work/a/$f"
done
rows=$(grep -c '^[0-9]' "$work/a/metrics.csv")
[ "$rows" -eq 801 ] && ok "metrics.csv has a row for step 0 and each of the 800 steps" || bad "metrics.csv has $rows rows"

# 2. same seed, same losses; stopped + resumed = uninterrupted
run() { "$bin" train "${small[@]}" --steps 40 --eval-interval 10 --dropout 0.1 "$@" 2>/dev/null; }
run --out "$work/b" >/dev/null
run --out "$work/c" --stop-at 25 >/dev/null
"$bin" train --resume --out "$work/c" >/dev/null 2>&1
loss_b=$(losses "$work/b")
loss_c=$(losses "$work/c")
if [ "$(wc -l <<<"$loss_b")" -eq 40 ] && [ "$loss_b" = "$loss_c" ]; then ok "resumed run has the same 40 losses"
else bad "resume: losses differ"; diff <(echo "$loss_b") <(echo "$loss_c") | head -5; fi
run --out "$work/d" >/dev/null
loss_d=$(losses "$work/d")
[ "$loss_b" = "$loss_d" ] && ok "same seed, same losses" || bad "two runs with one seed differ"
if cmp -s "$work/b/last.safetensors" "$work/c/last.safetensors"; then ok "resumed final checkpoint is byte-identical"
else bad "resumed final checkpoint differs"; fi

# 3. sampling
s=$("$bin" sample --ckpt "$work/a/best.safetensors" --prompt "the " --tokens 60 --seed 3 2>&1)
if [ $? -eq 0 ] && [ ${#s} -ge 60 ] && grep -q "^the " <<<"$s"; then ok "sample: ${s//$'\n'/ | }"
else bad "sample failed: $s"; fi
s1=$("$bin" sample --ckpt "$work/a/best.safetensors" --prompt "a" --tokens 30 --seed 9 2>/dev/null)
s2=$("$bin" sample --ckpt "$work/a/best.safetensors" --prompt "a" --tokens 30 --seed 9 2>/dev/null)
[ -n "$s1" ] && [ "$s1" = "$s2" ] && ok "sample: same seed, same text" || bad "sample not reproducible"

# 3a. --attn composed (the teaching path) computes what the fused op does: the
# same greedy text through the KV cache, and training losses equal to rounding
g1=$("$bin" sample --ckpt "$work/a/best.safetensors" --prompt "the " --tokens 60 --temperature 0 2>/dev/null)
g2=$("$bin" sample --ckpt "$work/a/best.safetensors" --prompt "the " --tokens 60 --temperature 0 --attn composed 2>/dev/null)
[ ${#g1} -ge 60 ] && [ "$g1" = "$g2" ] && ok "sample: same greedy text with --attn fused and composed" \
  || bad "sample: --attn fused '$g1' vs composed '$g2'"
"$bin" train "${small[@]}" --steps 20 --eval-interval 20 --out "$work/af" >/dev/null 2>&1
"$bin" train "${small[@]}" --steps 20 --eval-interval 20 --attn composed --out "$work/ac" >/dev/null 2>&1
la=$(losses "$work/af" | cut -d' ' -f2)
lc=$(losses "$work/ac" | cut -d' ' -f2)
if [ "$(wc -l <<<"$la")" -eq 20 ] && paste <(echo "$la") <(echo "$lc") |
   awk '{ d = $1 - $2; if (d < 0) d = -d; if (!($2 > 0) || d > 1e-4 * $2) bad = 1 } END { exit bad }'; then
  ok "train: 20 losses with --attn fused and composed agree within 1e-4"
else bad "train: --attn fused vs composed losses differ"; paste <(echo "$la") <(echo "$lc") | head -5; fi

# 3b. --init starts from given weights (here: the trained ones), not from scratch
log=$("$bin" train "${small[@]}" --steps 5 --eval-interval 5 --init "$work/a/best.safetensors" --out "$work/f" 2>&1)
v0=$(sed -n 's/^step 0: train loss [0-9.]*, val loss \([0-9.]*\).*/\1/p' <<<"$log")
if [ -n "$v0" ] && awk -v v="$v0" 'BEGIN { exit !(v < 1.0) }'; then ok "--init: step-0 val loss $v0 is the trained model's"
else bad "--init: step-0 val loss '$v0'"; echo "$log" | tail -3; fi

# 3c. pictures: the loss curve beside metrics.csv, attention maps and their page
is_png() { [ "$(od -An -tx1 -N8 "$1" 2>/dev/null | tr -d ' \n')" = "89504e470d0a1a0a" ]; }
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{ print $1*16777216 + $2*65536 + $3*256 + $4 "x" $5*16777216 + $6*65536 + $7*256 + $8 }'; }
for d in a c; do   # c: drawn when stopped, redrawn after the resume
  if is_png "$work/$d/loss.png" && [ "$(png_size "$work/$d/loss.png")" = "800x480" ]; then ok "$d/loss.png is an 800x480 PNG"
  else bad "$d/loss.png missing or not 800x480"; fi
done
# 12 characters: cells of min(32, 512/12) = 32 px, a map of 384 x 384 px inside a 422 x 513 picture:
# 422 = 12 margin + 10 + 4 query labels + 384 + 12; 513 = 12 + 14 + 4 + 7 + 8 title and axes line
# + 14 + 4 key labels + 384 + 12 + 12 + 3 + 7 + 8 + 12 colour scale, ticks, blocked swatch + 12
text="the cat sees"
out=$("$bin" attn --ckpt "$work/a/best.safetensors" --text "$text" --out "$work/maps" 2>&1)
files=$(ls "$work/maps" 2>/dev/null | tr '\n' ' ')
want="attn_l0_h0.png attn_l0_h1.png attn_l1_h0.png attn_l1_h1.png index.html "
if [ "$files" = "$want" ] && grep -q "wrote 4 attention maps (2 layers x 2 heads, 12 tokens)" <<<"$out"; then
  ok "attn wrote $files"
else bad "attn: files '$files', output: $out"; fi
for f in "$work"/maps/attn_*.png; do
  is_png "$f" && [ "$(png_size "$f")" = "422x513" ] || bad "$(basename "$f") is not a 422x513 PNG ($(png_size "$f"))"
done
page="$work/maps/index.html"
miss=""
for l in 0 1; do for h in 0 1; do
  grep -qF "layer $l, head $h <a href=\"attn_l${l}_h${h}.png\">" "$page" || miss="$miss l$l/h$h"
  grep -qF "<canvas class=\"map\" data-map=\"$((2 * l + h))\">" "$page" || miss="$miss canvas$((2 * l + h))"
  [ "$(grep -oE "<pre id=\"w$((2 * l + h))\" hidden>[A-Za-z0-9_-]*</pre>" "$page" | sed 's/<[^>]*>//g' | tr -d '\n' | wc -c)" = \
    $((4 * 12 * 13 / 2)) ] || miss="$miss weights$((2 * l + h))"   # 4 characters per visible cell
done; done
sp=$'\xe2\x90\xa3'   # the page shows a space as an open box; the script labels both axes from these
axis="<code id=\"text\"><span>t</span><span>h</span><span>e</span><span>$sp</span><span>c</span><span>a</span><span>t</span>"
axis+="<span>$sp</span><span>s</span><span>e</span><span>e</span><span>s</span></code>"
[ -z "$miss" ] && [ "$(grep -cF "$axis" "$page")" = 1 ] && ok "index.html has every layer and head, their weights and the characters" \
  || bad "index.html: missing$miss, text line $(grep -cF "$axis" "$page")"
# self-contained: one inline <script> (no attributes, so no src), nothing that names or fetches
# another resource, and the only links are the PNGs beside the page
ext='://|src=|srcset|<link|url\(|@import|<img|<iframe|<object|<embed|<audio|<video|fetch\(|XMLHttpRequest|'
ext+='import\(|WebSocket|EventSource|sendBeacon|new Image|\.src\b|location\.|window\.open'
links=$(grep -oE 'href="[^"]*"' "$page" | sort -u | tr '\n' ' ')
if grep -qE "$ext" "$page"; then bad "index.html refers to something outside itself: $(grep -oE "$ext" "$page" | head -3)"
elif [ "$(grep -o '<script' "$page" | wc -l)" != 1 ] || [ "$(grep -c '<script>' "$page")" != 1 ]; then
  bad "index.html: want exactly one inline <script>, got $(grep -o '<script[^>]*>' "$page" | tr '\n' ' ')"
elif [ "$links" != 'href="attn_l0_h0.png" href="attn_l0_h1.png" href="attn_l1_h0.png" href="attn_l1_h1.png" ' ]; then
  bad "index.html links to '$links', want only the four PNGs"
else ok "index.html is self-contained (one inline script; links: the PNGs)"; fi
# again into the same directory: files replaced, no temporaries left
"$bin" attn --ckpt "$work/a/best.safetensors" --text "a dog" --out "$work/maps" >/dev/null 2>&1
files=$(ls "$work/maps" | tr '\n' ' ')
# 5 characters: a 160 x 160 map; the picture is as wide as the colour scale (12 + 256 + 6 + 35 + 12)
[ "$files" = "$want" ] && [ "$(png_size "$work/maps/attn_l1_h1.png")" = "321x289" ] && ok "attn replaces its files" \
  || bad "attn rerun: '$files' $(png_size "$work/maps/attn_l1_h1.png")"

# 4. errors
expect_fail "unknown command" "unknown command 'trian'" "$bin" trian
expect_fail "unknown flag" "unknown flag '--stepz'" "$bin" train --stepz 3
expect_fail "bad number" "--steps: 'ten' is not a number" "$bin" train --steps ten
expect_fail "out of range" "--dropout: 1.5 is outside" "$bin" train --dropout 1.5
expect_fail "missing value" "--lr needs a value" "$bin" train --lr
expect_fail "bad --attn" "--attn: 'flash' is not fused or composed" "$bin" eval --attn flash
expect_fail "heads do not divide" "n_embd 10 is not divisible by n_head 3" \
  "$bin" train --n-embd 10 --n-head 3 --steps 1 --out "$work/e"
expect_fail "missing data file" "$work/nope.txt: No such file" "$bin" train --data "$work/nope.txt" --out "$work/e"
printf 'tiny' > "$work/tiny.txt"
expect_fail "data too short" "use more text or a smaller --block-size" "$bin" train --data "$work/tiny.txt" --out "$work/e"
expect_fail "missing checkpoint" "nope.safetensors" "$bin" sample --ckpt "$work/nope.safetensors"
printf 'not a safetensors file at all' > "$work/junk.safetensors"
expect_fail "malformed checkpoint" "junk.safetensors" "$bin" sample --ckpt "$work/junk.safetensors"
expect_fail "prompt outside vocabulary" "is not in the vocabulary" \
  "$bin" sample --ckpt "$work/a/best.safetensors" --prompt "THE"
expect_fail "resume with another block size" "--block-size 16 differs from the run's 32" \
  "$bin" train "${small[@]}" --block-size 16 --steps 60 --resume --out "$work/b"
expect_fail "resume and init together" "--resume excludes --init" \
  "$bin" train --resume --init "$work/a/best.safetensors" --out "$work/b"
expect_fail "resume when nothing to resume" "last.safetensors does not exist: there is no run to continue" \
  "$bin" train --resume --out "$work/empty"
attn() { "$bin" attn --ckpt "$work/a/best.safetensors" "$@"; }
expect_fail "attn: missing checkpoint" "$work/nope.safetensors" \
  "$bin" attn --ckpt "$work/nope.safetensors" --text "the" --out "$work/m1"
expect_fail "attn: character outside the vocabulary" "the text's character 'Q' (byte 81, offset 4) is not in the vocabulary" \
  attn --text "the Q" --out "$work/m1"
expect_fail "attn: text longer than block_size" "--text has 33 characters, more than the checkpoint's block_size 32" \
  attn --text "$(printf 'a%.0s' $(seq 33))" --out "$work/m1"
expect_fail "attn: empty text" "--text is empty" attn --text "" --out "$work/m1"
expect_fail "attn: no text" "--text is required" attn --out "$work/m1"
expect_fail "attn: out dir under a file" "--out $work/tiny.txt/maps: Not a directory" \
  attn --text "the" --out "$work/tiny.txt/maps"
expect_fail "attn: out is a file" "--out $work/tiny.txt: exists and is not a directory" \
  attn --text "the" --out "$work/tiny.txt"
[ -e "$work/m1" ] && bad "a failed attn left $work/m1 behind" || ok "failed attn runs wrote nothing"
expect_fail "eval without batch" "--init and --batch are required" "$bin" eval --init "$work/a/best.safetensors"

# 5. what a new user tripped on (issue 20)
src=$(cd "$(dirname "$0")/.." && pwd)
# --ckpt DIR: a run's directory reads its best checkpoint, else its last, and says which
s=$("$bin" sample --ckpt "$work/a" --prompt "the " --tokens 20 --seed 3 2>"$work/dir.err")
[ "$s" = "$("$bin" sample --ckpt "$work/a/best.safetensors" --prompt "the " --tokens 20 --seed 3 2>/dev/null)" ] &&
  grep -qF "$work/a is a run's directory: reading $work/a/best.safetensors" "$work/dir.err" &&
  ok "sample --ckpt DIR reads DIR/best.safetensors and says so" || bad "sample --ckpt DIR: '$s' $(cat "$work/dir.err")"
mkdir -p "$work/onlylast"
cp "$work/a/last.safetensors" "$work/onlylast/"
line=$("$bin" eval --ckpt "$work/a/last.safetensors" --eval-iters 4 2>/dev/null)
[ -n "$line" ] && [ "$("$bin" eval --ckpt "$work/onlylast" --eval-iters 4 2>"$work/dir.err")" = "$line" ] &&
  grep -qF "reading $work/onlylast/last.safetensors (its latest weights; it has no best.safetensors)" "$work/dir.err" &&
  ok "eval --ckpt DIR without best.safetensors reads DIR/last.safetensors and says so" ||
  bad "eval --ckpt DIR: $(cat "$work/dir.err")"
"$bin" attn --ckpt "$work/a" --text "the" --out "$work/dirmaps" >/dev/null 2>&1 && [ -s "$work/dirmaps/index.html" ] &&
  ok "attn --ckpt DIR" || bad "attn --ckpt DIR"
mkdir -p "$work/norun"
expect_fail "--ckpt of a directory without a checkpoint" \
  "--ckpt $work/norun is a directory without best.safetensors or last.safetensors" "$bin" sample --ckpt "$work/norun"
# a failed train removes the directory it made, never one the user had
expect_fail "train on a missing text" "$work/nope.txt" "$bin" train --data "$work/nope.txt" --out "$work/made"
mkdir -p "$work/mine"
expect_fail "train on a missing text into the user's directory" "$work/nope.txt" \
  "$bin" train --data "$work/nope.txt" --out "$work/mine"
[ ! -e "$work/made" ] && [ -d "$work/mine" ] && ok "a failed train leaves no directory it made, and keeps the user's" ||
  bad "after failed runs: made $(ls -d "$work/made" 2>&1), mine $(ls -d "$work/mine" 2>&1)"
# counts in words: one step, one token
out=$("$bin" train "${small[@]}" --steps 1 --eval-iters 2 --out "$work/one" 2>&1)
grep -q "tiny_gpt: 1 step in" <<<"$out" && ! grep -qE '\b1 (steps|threads|tokens)\b' <<<"$out" &&
  ok "one step is '1 step'" || bad "plural: $(grep -E '\b1 [a-z]+s\b' <<<"$out")"
out=$("$bin" attn --ckpt "$work/a/best.safetensors" --text "t" --out "$work/onemap" 2>&1)
grep -qF "wrote 4 attention maps (2 layers x 2 heads, 1 token) and" <<<"$out" &&
  grep -qF "Text (1 character):" "$work/onemap/index.html" && ok "attn of one character: '1 token', '1 character'" ||
  bad "attn of one character: $out; $(grep -o 'Text ([^)]*)' "$work/onemap/index.html")"
# --help: --tokens counts tokens (a BPE model's are not characters)
"$bin" sample --help | grep -qE '^ *--tokens +tokens to generate' && ok "sample --help: --tokens counts tokens" ||
  bad "sample --help: $("$bin" sample --help | grep -- --tokens)"
# --stats reports what was made, on a line of its own after the text (stdout and stderr to one pipe)
out=$("$bin" sample --ckpt "$work/a/best.safetensors" --prompt "the" --tokens 7 --seed 2 --stats 2>&1 | cat)
grep -qE '^tiny_gpt sample: 7 tokens made in [0-9.]+ s: .* heap allocations$' <<<"$out" &&
  [ "$(tail -c 1 <<<"$out" | od -An -c | tr -d ' ')" = '\n' ] && ok "--stats: '7 tokens made', a line of its own" ||
  bad "--stats line: $out"
# evaluations say how far they are on a terminal (script(1) gives the program one)
if command -v script >/dev/null; then
  out=$(script -qfec "$bin eval --ckpt $work/a/best.safetensors --eval-iters 30" /dev/null 2>&1)
  grep -q "step 800: estimating the train loss, batch 1 of 30" <<<"$out" &&
    grep -q "step 800: estimating the val loss, batch 1 of 30" <<<"$out" && grep -q "step 800: train loss" <<<"$out" &&
    ok "eval on a terminal counts its batches" || bad "eval progress on a terminal: ${out:0:300}"
  out=$(script -qfec "$bin train ${small[*]} --steps 2 --eval-iters 25 --out $work/tty" /dev/null 2>&1)
  grep -q "step 2: estimating the val loss, batch 1 of 25" <<<"$out" && ok "train's evaluations on a terminal count their batches" ||
    bad "train progress on a terminal: ${out:0:300}"
  out=$("$bin" eval --ckpt "$work/a/best.safetensors" --eval-iters 30 2>&1)
  ! grep -q "estimating" <<<"$out" && ok "no progress line when stderr is not a terminal" || bad "progress in a log: $out"
else ok "skipped: no script(1) for a terminal"; fi
# --full-val: the val loss is the split's own (every token once), so it
# does not move with --eval-iters while the train estimate does; the run
# records it and eval --ckpt reproduces the run's line; on any batch size
# the same to rounding; a run without it is evaluated whole on request
"$bin" train "${small[@]}" --steps 20 --eval-interval 10 --eval-iters 3 --full-val --out "$work/fv" >"$work/fv.log" 2>&1 ||
  bad "the --full-val run failed: $(tail -2 "$work/fv.log")"
val_of() { sed -n 's/.*val loss \([0-9.]*\).*/\1/p' <<<"$1"; }
line=$(grep "^step 20: " "$work/fv.log" | sed "s/ (floor .*//")
a=$("$bin" eval --ckpt "$work/fv/last.safetensors" 2>/dev/null)
b=$("$bin" eval --ckpt "$work/fv/last.safetensors" --eval-iters 9 2>/dev/null)
c=$("$bin" eval --ckpt "$work/fv/last.safetensors" --batch-size 5 2>/dev/null)
[ -n "$line" ] && [ "$a" = "$line" ] && [ "$(val_of "$b")" = "$(val_of "$a")" ] && [ "$b" != "$a" ] &&
  awk -v x="$(val_of "$c")" -v y="$(val_of "$a")" 'BEGIN { exit !(x - y < 2e-4 && y - x < 2e-4) }' &&
  ok "--full-val: eval --ckpt gives the run's line; the val loss is the same for --eval-iters 3 and 9 and batch 5" ||
  bad "--full-val: run '$line', eval '$a', --eval-iters 9 '$b', --batch-size 5 '$c'"
est=$("$bin" eval --ckpt "$work/a/last.safetensors" --eval-iters 4 2>/dev/null)
whole=$("$bin" eval --ckpt "$work/a/last.safetensors" --eval-iters 4 --full-val 2>/dev/null)
whole2=$("$bin" eval --ckpt "$work/a/last.safetensors" --eval-iters 2 --full-val 2>/dev/null)
[ -n "$whole" ] && [ "$(val_of "$whole")" != "$(val_of "$est")" ] && [ "$(val_of "$whole")" = "$(val_of "$whole2")" ] &&
  ok "eval --full-val on a run without it: the whole split ($(val_of "$whole") against the estimate's $(val_of "$est"))" ||
  bad "eval --full-val: '$whole' against '$est' and '$whole2'"
expect_fail "--full-val without --ckpt" "--full-val go with --ckpt" "$bin" eval --full-val

# eval --ckpt checks the run's token files whole before it builds the model (as train does)
for i in $(seq 3000); do printf "\\$(printf '%03o' $(( (i * 7 + i / 3) % 40 )))\\000"; done >"$work/ids.bin"
"$bin" train --data-tokens "$work/ids.bin" --vocab-size 40 --n-layer 1 --n-head 1 --n-embd 8 --block-size 8 --steps 2 \
  --eval-iters 2 --threads 1 --out "$work/tk" >/dev/null 2>&1 || bad "training on token ids"
# attn takes a model of token ids as sample does: ids separated by spaces, each labelled with its number
out=$("$bin" attn --ckpt "$work/tk" --text "3 17 39" --out "$work/idmaps" 2>&1)
grep -qF "wrote 1 attention map (1 layer x 1 head, 3 tokens)" <<<"$out" &&
  grep -qF 'Text (3 tokens): <code id="text"><span>3</span><span>17</span><span>39</span></code>' "$work/idmaps/index.html" &&
  ok "attn of a model of token ids labels them with their numbers" || bad "attn of an ids model: $out"
expect_fail "attn: not an id" "--text is ids below 40 separated by spaces, and \"40\" is not one" \
  "$bin" attn --ckpt "$work/tk" --text "3 40" --out "$work/idmaps2"
"$st_edit" "$work/tk/last.safetensors" "$work/tk_broken.safetensors" -transformer.h.0.mlp.c_fc.weight || bad "st_edit"
head -c 5999 "$work/ids.bin" >"$work/short.bin" && mv "$work/short.bin" "$work/ids.bin"
expect_fail "eval --ckpt of a truncated token file, before the (broken) model" \
  "--data-tokens: token file $work/ids.bin: 5999 bytes is not a whole number of uint16 ids" \
  "$bin" eval --ckpt "$work/tk_broken.safetensors"
# scripts/demo.sh takes a number of threads (run here with stubs for set-up, cmake and tiny_gpt)
mkdir -p "$work/demo/scripts" "$work/demo/build" "$work/demo/bin"
cp "$src/scripts/demo.sh" "$work/demo/scripts/"
printf '#!/bin/sh\n' >"$work/demo/scripts/deps.sh"
printf '#!/bin/sh\necho "cmake $*" >>"%s"\n' "$work/demo/log" >"$work/demo/bin/cmake"
printf '#!/bin/sh\necho "tiny_gpt $*" >>"%s"\n' "$work/demo/log" >"$work/demo/build/tiny_gpt"
chmod +x "$work/demo/scripts/deps.sh" "$work/demo/bin/cmake" "$work/demo/build/tiny_gpt"
demo() { rm -f "$work/demo/log"; PATH="$work/demo/bin:$PATH" "$@" bash "$work/demo/scripts/demo.sh" "${args[@]}" 2>&1 >/dev/null; }
args=(); demo env THREADS=3
t3=$(grep -c -- '--threads 3$' "$work/demo/log")
args=(--threads 2); demo env -u THREADS
t2=$(grep -c -- '--threads 2$' "$work/demo/log")
[ "$t3" = 2 ] && [ "$t2" = 2 ] && grep -q -- "--build build -j2 " "$work/demo/log" &&
  ok "demo.sh: THREADS=3 or --threads 2 reach train and sample (and the build's jobs)" ||
  bad "demo.sh threads: $t3, $t2: $(cat "$work/demo/log" 2>&1)"
args=(); msg=$(demo env THREADS=many)
grep -q "THREADS / --threads 'many' is not a number of threads" <<<"$msg" && [ ! -e "$work/demo/log" ] &&
  ok "demo.sh refuses THREADS=many before doing anything" || bad "demo.sh THREADS=many: $msg"
# --gelu tanh (GPT-2's GELU) is the model's: in the checkpoint, fixed on resume, a GPT's only
"$bin" train "${small[@]}" --steps 3 --eval-interval 3 --eval-iters 2 --gelu tanh --out "$work/gt" >/dev/null 2>&1
"$bin" train "${small[@]}" --steps 3 --eval-interval 3 --eval-iters 2 --out "$work/ge" >/dev/null 2>&1
header "$work/gt/last.safetensors" | grep -q '"gelu":"tanh"' && header "$work/ge/last.safetensors" | grep -q '"gelu":"erf"' &&
  ! cmp -s "$work/gt/last.safetensors" "$work/ge/last.safetensors" &&
  ok "--gelu tanh trains another model and its checkpoints say gelu tanh (the default erf)" ||
  bad "--gelu: $(header "$work/gt/last.safetensors")"
expect_fail "--gelu is fixed on resume" "--gelu erf differs from the run's tanh" \
  "$bin" train "${small[@]}" --steps 4 --gelu erf --resume --out "$work/gt"
expect_fail "--gelu's values" "--gelu: 'fast' is not erf or tanh" "$bin" train --gelu fast --out "$work/gx"
expect_fail "--gelu on a llama" "--gelu is a setting of --arch gpt" "$bin" train --arch llama --gelu tanh --out "$work/gx"
# issue 23's options are the model's: in the checkpoint (absent when off), fixed on resume and --init,
# and sample, eval and the exports take or refuse the model
opts=(--mlp relu2 --qk-norm --zero-init-proj --untie-head --logit-softcap 15)
"$bin" train "${small[@]}" --steps 3 --eval-interval 3 --eval-iters 2 "${opts[@]}" --out "$work/op" >/dev/null 2>&1
h=$(header "$work/op/last.safetensors")
for kv in '"mlp":"relu2"' '"qk_norm":"true"' '"zero_init_proj":"true"' '"tied":"false"' '"logit_softcap":"15"'; do
  grep -qF "$kv" <<<"$h" && ok "--mlp relu2 --qk-norm ...: the checkpoint holds $kv" || bad "options: no $kv in $h"
done
head -c 65536 "$work/op/last.safetensors" | grep -qa '"lm_head.weight"' &&
  ok "--untie-head: the checkpoint holds lm_head.weight" || bad "--untie-head: no lm_head.weight tensor"
! head -c 65536 "$work/ge/last.safetensors" | grep -qa '"lm_head.weight"' &&
  ok "a default GPT's checkpoint holds no lm_head.weight" || bad "a default GPT has lm_head.weight"
h=$(header "$work/ge/last.safetensors")
! grep -qE '"(mlp|qk_norm|zero_init_proj|tied|logit_softcap|lm_head.weight)"' <<<"$h" &&
  ok "a default GPT's checkpoint has none of the options' keys (today's file)" || bad "default keys: $h"
out=$("$bin" sample --ckpt "$work/op/last.safetensors" --tokens 8 2>&1) && out=$("$bin" eval --ckpt "$work/op/last.safetensors" 2>&1) &&
  ok "sample and eval run a checkpoint with every option" || bad "options sample/eval: $out"
expect_fail "--qk-norm is fixed on resume" "--qk-norm is on but" \
  "$bin" train "${small[@]}" --steps 4 --qk-norm --resume --out "$work/ge"
expect_fail "--mlp is fixed on resume" "--mlp swiglu differs from the run's relu2" \
  "$bin" train "${small[@]}" --steps 4 --mlp swiglu --resume --out "$work/op"
expect_fail "--mlp's values" "--mlp: 'relu3' is not gelu, relu2 or swiglu" "$bin" train --mlp relu3 --out "$work/gx"
expect_fail "--gelu with another MLP" "--gelu is a setting of --mlp gelu (this run's MLP is relu2)" \
  "$bin" train --mlp relu2 --gelu tanh --out "$work/gx"
expect_fail "--tied true with --untie-head" "--tied true contradicts --untie-head true" \
  "$bin" train --arch llama --tied true --untie-head --out "$work/gx"
"$bin" train "${small[@]}" --steps 3 --eval-interval 3 --eval-iters 2 --arch llama --qk-norm --out "$work/lq" >/dev/null 2>&1
expect_fail "a llama2.c export of a model run.c cannot compute" "this model has --qk-norm, which llama2.c's run.c cannot express" \
  "$bin" export --ckpt "$work/lq/last.safetensors" --format llama2c --out "$work/op.bin"
expect_fail "a GGUF export of a QK-norm Llama" "this model has --qk-norm, which llama.cpp's architecture" \
  "$bin" export --ckpt "$work/lq/last.safetensors" --format gguf --out "$work/lq.gguf"
expect_fail "an HF export of a ReLU-squared GPT" "this model has --mlp relu2, which transformers'" \
  "$bin" export --ckpt "$work/op/last.safetensors" --format hf --out "$work/op_hf"
[ ! -e "$work/op.bin" ] && [ ! -e "$work/lq.gguf" ] && [ ! -e "$work/op_hf/config.json" ] &&
  ok "a refused export writes nothing" || bad "a refused export left a file"
# a GGUF export of an erf GPT says llama.cpp computes the tanh form, with both forms' mean nll: on a
# short --text (one window) the figures are eval --text's of the model and of the model relabelled tanh
printf 'the cat sat on the mat' >"$work/gelu.txt"   # under the block size: one window
"$st_edit" "$work/ge/last.safetensors" "$work/ge_tanh.safetensors" gelu=tanh >/dev/null
erf_nll=$("$bin" eval --ckpt "$work/ge/last.safetensors" --text "$work/gelu.txt" | awk '{print $2}')
tanh_nll=$("$bin" eval --ckpt "$work/ge_tanh.safetensors" --text "$work/gelu.txt" | awk '{print $2}')
msg=$("$bin" export --ckpt "$work/ge/last.safetensors" --format gguf --out "$work/ge.gguf" --text "$work/gelu.txt" 2>&1)
grep -q "notice: this GPT computes GELU's exact erf form; llama.cpp's gpt2 computes the tanh form" <<<"$msg" &&
  grep -q "on $work/gelu.txt, [0-9]* predictions, mean nll $erf_nll with erf, $tanh_nll with tanh (" <<<"$msg" &&
  [ -s "$work/ge.gguf" ] &&
  ok "gguf export of an erf GPT: a notice with eval --text's nll of each form ($erf_nll, $tanh_nll)" ||
  bad "gguf export's GELU notice: $msg (eval --text: $erf_nll erf, $tanh_nll tanh)"
msg=$("$bin" export --ckpt "$work/ge/last.safetensors" --format gguf --out "$work/ge.gguf" 2>&1)
grep -Eq "notice: .*(on the run's val text \(.*\), [0-9]+ predictions, mean nll [0-9.]+ with erf, [0-9.]+ with tanh|the val text is not available \(.+\))" <<<"$msg" &&
  ok "gguf export of an erf GPT without --text: the run's val text, or why not: ${msg##*: on }" ||
  bad "gguf export's GELU notice without --text: $msg"
msg=$("$bin" export --ckpt "$work/gt/last.safetensors" --format gguf --out "$work/gt.gguf" 2>&1)
! grep -q notice <<<"$msg" && [ -s "$work/gt.gguf" ] && ok "gguf export of a tanh GPT: no notice" ||
  bad "gguf export of a tanh GPT: $msg"
expect_fail "export --text is gguf's" "--text goes with --format gguf" \
  "$bin" export --ckpt "$work/ge/last.safetensors" --format hf --out "$work/hfx" --text "$work/gelu.txt"
# docs/distributed.md's commands read files a clone has or that the page downloads
doc=$src/docs/distributed.md
missing=""
for f in $(grep -o -- '--data [^ `]*' "$doc" | cut -d' ' -f2 | sort -u); do
  case $f in /*) continue ;; esac   # a path every machine mounts (across machines)
  [ -e "$src/$f" ] || grep -qE "curl .*-[a-zA-Z]*o $f " "$doc" || missing="$missing $f"
done
[ -z "$missing" ] && ok "docs/distributed.md: every --data file is downloaded there or in the repository" ||
  bad "docs/distributed.md sends users to$missing"

# 6. the progress line's ETA counts the evaluations left at their measured
# cost: here they are most of the run (four of about a second after step 1,
# twenty steps of a few ms), so the ETA at step 1 is most of the run's
# time, where the steps alone said 0s
t0=$(date +%s.%N)
"$bin" train "${small[@]}" --steps 20 --eval-interval 5 --eval-iters 250 --log-interval 1 --out "$work/eta" \
  >"$work/eta.log" 2>&1 || bad "the ETA run: $(tail -2 "$work/eta.log")"
wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
eta=$(sed -n 's|^step 1/20 .*ETA \([0-9]*\)s$|\1|p' "$work/eta.log")
awk -v e="${eta:-0}" -v w="$wall" 'BEGIN { exit !(e >= 0.5 * w && e <= 1.2 * w) }' &&
  ok "the ETA at step 1 (${eta}s) counts the 4 evaluations left: most of the run's $wall s" ||
  bad "the ETA at step 1: '${eta}' s, the run took $wall s: $(grep '^step 1/' "$work/eta.log")"

finish
