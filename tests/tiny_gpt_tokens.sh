#!/usr/bin/env bash
# tiny_gpt train on pre-tokenized files (--data-tokens, --val-tokens,
# --vocab-size), written here by a small python writer in nanoGPT's raw
# uint16 format and llm.c's (256-int32 header): both formats are read,
# give the same run, and equal a run on the text they encode; with
# --tokenizer the tokenizer is kept (sample decodes, bits per byte =
# loss / ln 2 / decoded bytes per token), without it sample speaks ids
# and no bits per byte are claimed; a resume reads the recorded files and
# refuses others; ids >= V, truncated files and a bad header are refused
# with the library's message and the flag, before the model is built.
#   tests/tiny_gpt_tokens.sh path/to/tiny_gpt path/to/st_edit path/to/llama2c_run
. "$(dirname "$0")/tiny_gpt_lib.sh"
command -v python3 >/dev/null || { echo "skipped: python3 writes the token files"; exit 77; }

for i in $(seq 300); do
  printf 'the cat %d sees the caf\xc3\xa9 dog %d for \xe2\x82\xac%d.\n' $((i % 7)) $((i % 3)) $((i % 5))
done >"$work/text.txt"
tok=$work/tok.safetensors
"$bin" tokenizer train --data "$work/text.txt" --vocab-size 320 --out "$tok" >/dev/null 2>&1 || bad "tokenizer train"
nids=$("$bin" tokenizer info --tokenizer "$tok" | sed -n 's/^ids \([0-9]*\) .*/\1/p')
"$bin" tokenizer encode --tokenizer "$tok" <"$work/text.txt" >"$work/ids.txt"
# the same ids with EOS (2, a special: 0 bytes) after every 20th, as a data script may put between documents
tr ' ' '\n' <"$work/ids.txt" | awk '{printf "%s%s", (NR > 1 ? " " : ""), $1} NR % 20 == 0 {printf " 2"} END {print ""}' \
  >"$work/ids_eos.txt"

# write FORMAT OUT IDS [first last]: the ids of file IDS (a slice, python's [first:last]) as raw uint16 or llm.c's file
write() {
  python3 - "$@" <<'EOF'
import struct, sys
fmt, out = sys.argv[1], sys.argv[2]
ids = [int(x) for x in open(sys.argv[3]).read().split()]
if len(sys.argv) > 4:
    a, b = int(sys.argv[4]), int(sys.argv[5])
    ids = ids[a:b if b else None]
body = struct.pack('<%dH' % len(ids), *ids)
if fmt == 'llmc':
    body = struct.pack('<256i', *([20240520, 1, len(ids)] + [0] * 253)) + body
open(out, 'wb').write(body)
EOF
}
n=$(wc -w <"$work/ids.txt")
write raw "$work/all.bin" "$work/ids.txt"
n=$(wc -w <"$work/ids_eos.txt")
cut=$((n * 9 / 10))
write raw "$work/train.bin" "$work/ids_eos.txt" 0 $cut
write raw "$work/val.bin" "$work/ids_eos.txt" $cut 0
write llmc "$work/train_llmc.bin" "$work/ids_eos.txt" 0 $cut
write llmc "$work/val_llmc.bin" "$work/ids_eos.txt" $cut 0
small=(--n-layer 2 --n-head 2 --n-embd 32 --block-size 32 --batch-size 8 --lr 1e-2 --warmup 10 --eval-iters 4
       --threads 1 --steps 60 --eval-interval 30)

# 1. the same ids as a text with --tokenizer, as one raw file (split 90/10 likewise): the same run
"$bin" train "${small[@]}" --data "$work/text.txt" --tokenizer "$tok" --out "$work/text" >/dev/null 2>&1 || bad "text run"
"$bin" train "${small[@]}" --data-tokens "$work/all.bin" --tokenizer "$tok" --out "$work/all" >"$work/all.log" 2>&1 ||
  bad "token-file run failed: $(tail -2 "$work/all.log")"
[ "$(untimed "$work/text")" = "$(untimed "$work/all")" ] && [ -n "$(evals "$work/all")" ] &&
  ok "a raw token file of a text's ids trains exactly as the text does (bits per byte included)" ||
  { bad "token file vs text"; diff <(untimed "$work/text") <(untimed "$work/all") | head -4; }
grep -q "all.bin: $(wc -w <"$work/ids.txt") tokens (nanoGPT's format)" "$work/all.log" && ok "the raw file is recognised as nanoGPT's" ||
  bad "format line: $(grep tokens "$work/all.log")"

# 2. two files, raw and llm.c's: the same run; the tokenizer is kept, vocab padded to 320
"$bin" train "${small[@]}" --data-tokens "$work/train.bin" --val-tokens "$work/val.bin" --vocab-size 320 \
  --tokenizer "$tok" --out "$work/raw" >"$work/raw.log" 2>&1 || bad "raw run: $(tail -2 "$work/raw.log")"
"$bin" train "${small[@]}" --data-tokens "$work/train_llmc.bin" --val-tokens "$work/val_llmc.bin" --vocab-size 320 \
  --tokenizer "$tok" --out "$work/llmc" >"$work/llmc.log" 2>&1 || bad "llm.c run: $(tail -2 "$work/llmc.log")"
grep -q "train_llmc.bin: $cut tokens (llm.c's format)" "$work/llmc.log" && [ "$(untimed "$work/raw")" = "$(untimed "$work/llmc")" ] &&
  ok "llm.c's files are recognised, and train as the raw ones do" || bad "llm.c vs raw"
hdr=$(header "$work/llmc/best.safetensors")
grep -qF '"vocab_size":"320"' <<<"$hdr" && grep -qF '"vocab":"tokenizer"' <<<"$hdr" && ok "vocab_size 320 >= the tokenizer's $nids, kept in the checkpoint" ||
  bad "metadata: $hdr"
bpt=$(python3 - "$bin" "$tok" "$work/ids_eos.txt" "$cut" <<'EOF'
import subprocess, sys
bin, tok, path, cut = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
val = open(path).read().split()[cut:]
text = subprocess.run([bin, 'tokenizer', 'decode', '--tokenizer', tok], input=' '.join(v for v in val if v != '2').encode(),
                      capture_output=True, check=True).stdout
print(len(text) / len(val))
EOF
)
row=$(awk -F, 'NR > 1 && $9 != "" {r = $7 " " $9} END {print r}' "$work/llmc/metrics.csv")
awk -v r="$row" -v b="$bpt" 'BEGIN { split(r, a, " "); d = a[1] / log(2) / b - a[2]; if (d < 0) d = -d
                                     exit !(b > 1.2 && a[2] > 0 && d < 3e-6) }' &&
  ok "val_bpb $row = loss / ln 2 / $bpt decoded bytes per token (EOS 0 bytes)" || bad "bpb: $row vs $bpt bytes per token"
line=$(grep '^step 60: ' "$work/llmc.log")
[ -n "$line" ] && [ "$("$bin" eval --ckpt "$work/llmc/last.safetensors" 2>/dev/null)" = "$line" ] &&
  ok "eval --ckpt reads the recorded token files: '$line'" || bad "eval --ckpt of a token run"
out=$("$bin" sample --ckpt "$work/llmc/best.safetensors" --prompt "the cat" --tokens 40 --temperature 0 2>&1)
grep -q "the caf$(printf '\xc3\xa9') dog" <<<"$out" && ok "sample decodes with the stored tokenizer: ${out:0:40}" || bad "sample: $out"

# 3. without a tokenizer: ids in, ids out, no bits per byte
"$bin" train "${small[@]}" --data-tokens "$work/train.bin" --val-tokens "$work/val.bin" --vocab-size 320 \
  --out "$work/ids" >"$work/ids.log" 2>&1 || bad "ids run: $(tail -2 "$work/ids.log")"
grep -q "^step 60: train loss [0-9.]*, val loss [0-9.]* (no bits per byte: token ids without a tokenizer)$" "$work/ids.log" &&
  [ -z "$(awk -F, 'NR > 1 {printf "%s%s", $8, $9}' "$work/ids/metrics.csv")" ] &&
  ok "without a tokenizer no bits per byte, on the console or in metrics.csv" || bad "bpb of ids: $(grep '^step 60:' "$work/ids.log")"
[ "$(evals "$work/ids")" = "$(evals "$work/raw")" ] && ok "the losses are the tokenizer run's" || bad "ids vs raw losses"
prompt=$(cut -d' ' -f1-5 "$work/ids.txt")
out=$("$bin" sample --ckpt "$work/ids/best.safetensors" --prompt "$prompt" --tokens 20 --temperature 0 2>&1)
[[ "$out" =~ ^"$prompt"( [0-9]+){20}$ ]] && ok "sample of an ids model prints the prompt's and 20 new ids" ||
  bad "ids sample: $out"
expect_fail "sample of an ids model without a prompt" "give the prompt as ids" \
  "$bin" sample --ckpt "$work/ids/best.safetensors"
# the same weights as the tokenizer run's: its greedy ids, decoded, are that run's greedy text
prompt=$(printf 'the cat' | "$bin" tokenizer encode --tokenizer "$tok")
ids_text=$("$bin" sample --ckpt "$work/ids/best.safetensors" --prompt "$prompt" --tokens 20 --temperature 0 2>&1 |
           "$bin" tokenizer decode --tokenizer "$tok")
text=$("$bin" sample --ckpt "$work/raw/best.safetensors" --prompt "the cat" --tokens 20 --temperature 0 2>&1)
[ ${#text} -gt 40 ] && [ "$ids_text" = "$text" ] && ok "its ids decode to the tokenizer run's greedy text: ${text:0:40}" ||
  bad "ids decode: '$ids_text' vs '$text'"

# 4. resume: the recorded files; another is refused
"$bin" train "${small[@]}" --data-tokens "$work/train.bin" --val-tokens "$work/val.bin" --vocab-size 320 \
  --stop-at 40 --out "$work/res" >/dev/null 2>&1
"$bin" train --resume --out "$work/res" >/dev/null 2>&1
cmp -s "$work/ids/last.safetensors" "$work/res/last.safetensors" && ok "stop + --resume alone reads the same token files" ||
  bad "resume of a token run"
"$bin" train "${small[@]}" --data-tokens "$work/train.bin" --vocab-size 320 --stop-at 10 --out "$work/res2" >/dev/null 2>&1
expect_fail "resume with another token file" "--data-tokens $work/val.bin" \
  "$bin" train --resume --out "$work/res2" --data-tokens "$work/val.bin"
expect_fail "resume with another vocab size" "--vocab-size 400 differs from the run's 320" \
  "$bin" train --resume --out "$work/res2" --vocab-size 400
expect_fail "--data with a token run" "--data (a text) excludes --data-tokens" \
  "$bin" train --resume --out "$work/res2" --data "$work/text.txt"

# 5. refusals: the library's messages, with the flag
t=("$bin" train "${small[@]}" --out "$work/bad" --vocab-size 320)
python3 -c "import struct; open('$work/big.bin','wb').write(struct.pack('<4H', 5, 6, 400, 7) * 100)"
expect_fail "an id >= --vocab-size" "--data-tokens: token file $work/big.bin: offset 4 (token 2): id 400 is not below the vocabulary size 320" \
  "${t[@]}" --data-tokens "$work/big.bin"
head -c $((1024 + 2 * cut - 6)) "$work/train_llmc.bin" >"$work/cut.bin"
expect_fail "a truncated llm.c file" "truncated" "${t[@]}" --data-tokens "$work/train.bin" --val-tokens "$work/cut.bin"
expect_fail "a truncated llm.c file names --val-tokens" "--val-tokens: token file" \
  "${t[@]}" --data-tokens "$work/train.bin" --val-tokens "$work/cut.bin"
head -c 1001 "$work/train.bin" >"$work/odd.bin"
expect_fail "a raw file of an odd size" "is not a whole number of uint16 ids (truncated?)" "${t[@]}" --data-tokens "$work/odd.bin"
python3 -c "import struct; open('$work/ver.bin','wb').write(struct.pack('<256i', 20240520, 7, 4, *[0]*253) + bytes(8))"
expect_fail "an llm.c header of an unknown version" "llm.c version 7" "${t[@]}" --data-tokens "$work/ver.bin"
python3 -c "import struct; open('$work/magic.bin','wb').write(struct.pack('<256i', 20240521, 1, 4, *[0]*253) + bytes(8))"
expect_fail "a wrong magic (read as raw: its first ids are not ids)" "offset 0 (token 0): id 55433 is not below the vocabulary size 320" \
  "${t[@]}" --data-tokens "$work/magic.bin"
expect_fail "--vocab-size below the tokenizer's" "--vocab-size 280 is smaller than the tokenizer's $nids ids" \
  "$bin" train "${small[@]}" --data-tokens "$work/train.bin" --vocab-size 280 --tokenizer "$tok" --out "$work/bad"
expect_fail "token files without a vocabulary size" "--data-tokens needs --vocab-size V" \
  "$bin" train "${small[@]}" --data-tokens "$work/train.bin" --out "$work/bad"
expect_fail "--val-tokens alone" "--val-tokens goes with --data-tokens" "$bin" train --val-tokens "$work/val.bin" --out "$work/bad"
[ ! -e "$work/bad/last.safetensors" ] && ok "refused runs write no checkpoint" || bad "a refused run wrote a checkpoint"

# 6. a bad token file is refused before the model exists (issue 20: with GPT-2-small's shape it was refused
# only after the 124M-parameter model, its gradients and AdamW's moments were built: seconds and a GB):
# under a 400 MB address-space limit, within 2 s
gpt2=(--n-layer 12 --n-head 12 --n-embd 768 --block-size 1024 --batch-size 1 --threads 1 --out "$work/bad2")
head -c $((4 * 2000 + 1)) /dev/zero >"$work/trunc.bin"   # 2000 ids of 0 and one byte: truncated by one byte
python3 -c "import struct; open('$work/big32.bin','wb').write(struct.pack('<256i', 20240520, 2, 3000, *[0]*253) + struct.pack('<3000I', *([7] * 2999 + [2**31])))"
# fast NAME WANT ARGS...: refused with WANT, in under 2 s, within 400 MB of address space (a sanitized
# build, whose shadow memory ulimit -v forbids, by the time alone)
vlimit=400000
ldd "$bin" 2>/dev/null | grep -q libasan && vlimit=unlimited
fast() {
  local name=$1 want=$2 out rc t0 ms
  shift 2
  t0=$(date +%s%N)
  out=$(ulimit -v $vlimit; "$bin" train "${gpt2[@]}" "$@" 2>&1 >/dev/null)
  rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  if [ $rc -eq 1 ] && grep -qF -- "$want" <<<"$out" && [ $ms -lt 2000 ]; then ok "$name (${ms} ms, under ulimit -v $vlimit)"
  else bad "$name: exit $rc in ${ms} ms: $out (wanted: $want)"; fi
}
fast "a raw file one byte short, with GPT-2-small's shape: refused at once" \
  "--data-tokens: token file $work/trunc.bin: 8001 bytes is not a whole number of uint16 ids (truncated?)" \
  --vocab-size 50304 --data-tokens "$work/trunc.bin"
fast "a valid train file and a val file one byte short: refused at once" "--val-tokens: token file $work/trunc.bin" \
  --vocab-size 50304 --data-tokens "$work/train.bin" --val-tokens "$work/trunc.bin"
fast "an id of 2^31 in an llm.c uint32 file, --vocab-size 16777216: refused at once" \
  "--data-tokens: token file $work/big32.bin: offset 13020 (token 2999): id 2147483648 is not below the vocabulary size 16777216" \
  --vocab-size 16777216 --n-layer 1 --data-tokens "$work/big32.bin"
finish
