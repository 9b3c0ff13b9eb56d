#!/usr/bin/env bash
# tiny_gpt trained with a BPE tokenizer (train --tokenizer): a GPT and a
# Llama learn, the checkpoint holds the tokenizer so sample, eval and
# export need nothing else, eval reproduces the val loss train printed,
# bits per byte equal loss / ln 2 / the val split's bytes per token
# computed here from `tiny_gpt tokenizer encode|decode`, a resume keeps
# the tokenizer (another is refused), and a BPE Llama exported to
# llama2.c's files generates the greedy text `sample --temperature 0` does
# in the suite's reader of run.c (tests/llama2c_run.c).
#   tests/tiny_gpt_bpe.sh path/to/tiny_gpt path/to/st_edit path/to/llama2c_run
. "$(dirname "$0")/tiny_gpt_lib.sh"
run_c=$3
command -v python3 >/dev/null || { echo "skipped: python3 is needed to compute bytes per token"; exit 77; }

# a text with UTF-8 characters of 2, 3 and 4 bytes, in paragraphs (a Llama's documents)
for i in $(seq 300); do
  printf 'the cat %d sees the caf\xc3\xa9 dog %d for \xe2\x82\xac%d \xf0\x9f\x98\x80.\n' $((i % 7)) $((i % 3)) $((i % 5))
  [ $((i % 4)) -eq 0 ] && printf '\n'
done >"$work/text.txt"
tok=$work/tok.safetensors
"$bin" tokenizer train --data "$work/text.txt" --vocab-size 320 --out "$tok" >/dev/null 2>&1 || bad "tokenizer train"
nids=$("$bin" tokenizer info --tokenizer "$tok" | sed -n 's/^ids \([0-9]*\) .*/\1/p')
common=(--n-head 2 --n-embd 32 --batch-size 8 --lr 1e-2 --warmup 10 --eval-iters 4 --threads 1 --data "$work/text.txt")
gpt=("${common[@]}" --n-layer 2 --block-size 32 --tokenizer "$tok")

# the val split's bytes per token: the text's last 10% (from int(0.9 n), moved back to a character's
# start) encoded alone, by `tokenizer encode` (docs: a Llama's documents, cut at blank lines)
bpt() {   # bpt TEXT TOKENIZER gpt|docs
  python3 - "$bin" "$1" "$2" "$3" <<'EOF'
import subprocess, sys
bin, path, tok, kind = sys.argv[1:]
text = open(path, 'rb').read()
enc = lambda b: [int(x) for x in subprocess.run([bin, 'tokenizer', 'encode', '--tokenizer', tok], input=b,
                                                  capture_output=True, check=True).stdout.split()]
mark = int(0.9 * len(text))
for _ in range(3):
    if 0 < mark < len(text) and text[mark] & 0xc0 == 0x80:
        mark -= 1
val = text[mark:]
if kind == 'gpt':
    ids = enc(val)
else:   # documents end after the first newline of a blank line; each is 1 (BOS) + the ids of " " + it
    ids, i = [], 0
    while i < len(val):
        end = val.find(b'\n\n', i)
        end = len(val) if end < 0 else end + 1
        if val[i:end] not in (b'', b'\n'):
            ids += [1] + enc(b' ' + val[i:end])
        i = end + 1 if end < len(val) else end
print(len(val) / len(ids))
EOF
}
# check_bpb NAME DIR BPT: metrics.csv's last val_bpb = val_loss / ln 2 / BPT
check_bpb() {
  local row
  row=$(awk -F, 'NR > 1 && $9 != "" {r = $7 " " $9} END {print r}' "$2/metrics.csv")
  awk -v r="$row" -v b="$3" 'BEGIN { split(r, a, " "); w = a[1] / log(2) / b; d = w - a[2]; if (d < 0) d = -d
                                     exit !(b > 1.2 && a[2] > 0 && d < 3e-6) }' &&
    ok "$1: val_bpb $row = loss / ln 2 / $3 bytes per token" || bad "$1: (val_loss val_bpb) $row, bytes per token $3"
}

# 1. a GPT
"$bin" train "${gpt[@]}" --steps 80 --eval-interval 40 --out "$work/g" >"$work/g.log" 2>&1 ||
  bad "GPT training failed: $(tail -3 "$work/g.log")"
hdr=$(header "$work/g/best.safetensors")
grep -qF '"vocab":"tokenizer"' <<<"$hdr" && grep -qF "\"vocab_size\":\"$nids\"" <<<"$hdr" && grep -qF '"tokenizer":"bpe"' <<<"$hdr" &&
  [ "${nids:-0}" -gt 259 ] && ok "the checkpoint holds the tokenizer; vocab_size is its $nids ids" || bad "checkpoint metadata: $hdr"
first=$(evals "$work/g" | head -1 | cut -d' ' -f3)
last=$(evals "$work/g" | tail -1 | cut -d' ' -f3)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(a > 5 && b < a - 2) }' && ok "GPT val loss falls ($first -> $last)" ||
  bad "GPT val loss $first -> $last"
line=$(grep '^step 80: ' "$work/g.log")
[ -n "$line" ] && [ "$("$bin" eval --ckpt "$work/g/last.safetensors" 2>/dev/null)" = "$line" ] &&
  ok "eval --ckpt reproduces '$line'" || bad "eval --ckpt: '$("$bin" eval --ckpt "$work/g/last.safetensors" 2>&1)' vs '$line'"
check_bpb "GPT" "$work/g" "$(bpt "$work/text.txt" "$tok" gpt)"
out=$("$bin" sample --ckpt "$work/g/best.safetensors" --prompt "the cat" --tokens 60 --temperature 0 2>&1)
iconv -f UTF-8 -t UTF-8 <<<"$out" >/dev/null 2>&1 && grep -q "the caf$(printf '\xc3\xa9') dog" <<<"$out" &&
  ok "sample decodes valid UTF-8 text: ${out:0:60}" || bad "sample: $out"
# attn takes the tokenizer's checkpoint: one position per token, each labelled with its piece (issue 20)
text=$(printf 'the caf\xc3\xa9 <dog> & "cat"')
ids=$(printf '%s' "$text" | "$bin" tokenizer encode --tokenizer "$tok")
nt=$(wc -w <<<"$ids")
want="<code id=\"text\">"
for id in $ids; do   # a piece's bytes, escaped for HTML, a space as an open box
  piece=$(echo "$id" | "$bin" tokenizer decode --tokenizer "$tok" | sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g; s/"/\&quot;/g')
  want+="<span>${piece// /$'\xe2\x90\xa3'}</span>"
done
want+="</code>"
out=$("$bin" attn --ckpt "$work/g/best.safetensors" --text "$text" --out "$work/maps" 2>&1)
grep -qF "wrote 4 attention maps (2 layers x 2 heads, $nt tokens)" <<<"$out" && [ "$nt" -lt ${#text} ] &&
  grep -qF "Text ($nt tokens): $want" "$work/maps/index.html" && ! grep -qF '<dog>' "$work/maps/index.html" &&
  [ "$(od -An -tx1 -N4 "$work/maps/attn_l1_h1.png" | tr -d ' ')" = 89504e47 ] &&
  ok "attn of a BPE GPT: $nt tokens labelled with their pieces, escaped" ||
  bad "attn of a BPE GPT: $out; $(grep -o 'Text ([^)]*): <code id="text">.*</code>' "$work/maps/index.html")"
expect_fail "attn: more tokens than block_size" "--text has 40 tokens (the checkpoint's tokenizer's), more than the checkpoint's block_size 32" \
  "$bin" attn --ckpt "$work/g/best.safetensors" --text "$(printf 'xq%.0s' $(seq 20))" --out "$work/maps2"
# a stopped and resumed run (the tokenizer from the checkpoint, or given again) is the uninterrupted one
"$bin" train "${gpt[@]}" --steps 80 --eval-interval 40 --stop-at 50 --out "$work/r" >/dev/null 2>&1
"$bin" train --resume --out "$work/r" >/dev/null 2>&1
cmp -s "$work/g/last.safetensors" "$work/r/last.safetensors" && ok "stop + --resume alone: the same checkpoint" ||
  bad "resume differs"
"$bin" train "${gpt[@]}" --steps 80 --eval-interval 40 --stop-at 50 --out "$work/r2" >/dev/null 2>&1
cp "$tok" "$work/copy.safetensors"
"$bin" train --resume --out "$work/r2" --tokenizer "$work/copy.safetensors" >/dev/null 2>&1 &&
  cmp -s "$work/g/last.safetensors" "$work/r2/last.safetensors" && ok "--resume with the same tokenizer (a copy)" ||
  bad "resume with the same tokenizer"
"$bin" tokenizer train --data "$work/text.txt" --vocab-size 280 --out "$work/tok2.safetensors" >/dev/null 2>&1
"$bin" train "${gpt[@]}" --steps 80 --stop-at 10 --out "$work/r3" >/dev/null 2>&1
expect_fail "--resume with another tokenizer" "--tokenizer $work/tok2.safetensors is not the tokenizer of the run" \
  "$bin" train --resume --out "$work/r3" --tokenizer "$work/tok2.safetensors"
"$bin" train "${common[@]}" --n-layer 1 --block-size 32 --steps 10 --stop-at 5 --out "$work/bytes" >/dev/null 2>&1
expect_fail "--tokenizer on a run of bytes" "is not the tokenizer of the run (it has a byte vocabulary)" \
  "$bin" train --resume --out "$work/bytes" --tokenizer "$tok"

# 2. a Llama: documents BOS + " " + text; exported, it runs in the reader of run.c with the same ids
llama=("${common[@]}" --arch llama --n-layer 2 --n-kv-head 1 --hidden-dim 48 --block-size 64 --tokenizer "$tok")
"$bin" train "${llama[@]}" --steps 150 --eval-interval 50 --out "$work/l" >"$work/l.log" 2>&1 ||
  bad "Llama training failed: $(tail -3 "$work/l.log")"
last=$(evals "$work/l" | tail -1 | cut -d' ' -f3)
awk -v b="$last" 'BEGIN { exit !(b < 1.5) }' && ok "Llama val loss $last" || bad "Llama val loss $last"
line=$(grep '^step 150: ' "$work/l.log")
[ -n "$line" ] && [ "$("$bin" eval --ckpt "$work/l/last.safetensors" 2>/dev/null)" = "$line" ] &&
  ok "eval --ckpt of the BPE Llama reproduces '$line'" || bad "llama eval --ckpt"
check_bpb "Llama" "$work/l" "$(bpt "$work/text.txt" "$tok" docs)"
"$bin" export --ckpt "$work/l/best.safetensors" --format llama2c --out "$work/model.bin" --tokenizer "$work/tok.bin" \
  >/dev/null 2>&1 || bad "export failed"
"$bin" tokenizer export --tokenizer "$tok" --out "$work/tok_direct.bin" >/dev/null 2>&1
cmp -s "$work/tok.bin" "$work/tok_direct.bin" && ok "export wrote the checkpoint's tokenizer as tokenizer.bin" ||
  bad "export's tokenizer.bin differs from tokenizer export's"
for prompt in "the cat" "the cat 4 sees the" ""; do
  n=1; [ -n "$prompt" ] && n=$((1 + $(printf ' %s' "$prompt" | "$bin" tokenizer encode --tokenizer "$tok" | wc -w)))
  ours=$("$bin" sample --ckpt "$work/l/best.safetensors" --prompt "$prompt" --tokens 55 --temperature 0 2>/dev/null)
  theirs=$("$run_c" "$work/model.bin" "$work/tok.bin" "$prompt" $((n - 1 + 55)))
  if [ ${#ours} -ge $((${#prompt} + 30)) ] && [ "$ours" = "$theirs" ]; then
    ok "greedy text of '$prompt' equals the llama2.c reader's, ${#ours} bytes: ${ours:0:50}..."
  else bad "greedy '$prompt': tiny_gpt '${ours:0:100}' vs reader '${theirs:0:100}'"; fi
done
out=$("$bin" attn --ckpt "$work/l" --text "the cat" --out "$work/lmaps" 2>&1)
grep -qF "wrote 4 attention maps (2 layers x 2 heads, " <<<"$out" && ok "attn of a BPE Llama (its run's directory)" ||
  bad "attn of a BPE Llama: $out"
# documents end where the model says BOS: both stop there
for i in $(seq 80); do printf 'the dog sees a bird.\n\nsome birds sing.\n\n'; done >"$work/docs.txt"
"$bin" tokenizer train --data "$work/docs.txt" --vocab-size 280 --out "$work/dtok.safetensors" >/dev/null 2>&1
"$bin" train "${llama[@]}" --data "$work/docs.txt" --tokenizer "$work/dtok.safetensors" --steps 100 --eval-interval 100 \
  --out "$work/p" >/dev/null 2>&1
"$bin" export --ckpt "$work/p/last.safetensors" --out "$work/p.bin" --tokenizer "$work/ptok.bin" >/dev/null 2>&1
ours=$("$bin" sample --ckpt "$work/p/last.safetensors" --prompt "some" --tokens 50 --temperature 0 2>"$work/bos.err")
theirs=$("$run_c" "$work/p.bin" "$work/ptok.bin" "some" 55)
[ "$ours" = "some birds sing." ] && [ "$theirs" = "$ours" ] && ok "a document ends at BOS in both: '$ours'" ||
  bad "BOS stop: tiny_gpt '$ours', reader '$theirs'"
grep -qE "^tiny_gpt sample: notice: stopped at token [0-9]+ of 50: the model produced BOS \(id 1\), which ends a text$" \
  "$work/bos.err" && ok "sample says it stopped at the tokenizer's BOS" || bad "BOS notice: $(cat "$work/bos.err")"
# GPT-2's kind of tokenizer has no BOS: not for a Llama
for b in $(seq 0 255); do printf "$(printf '\\%03o' "$b")" | base64 | tr -d '\n'; echo " $b"; done >"$work/small.tiktoken"
expect_fail "a Llama with a tokenizer without BOS" "has no BOS id, which a Llama's documents start with" \
  "$bin" train "${llama[@]}" --tokenizer "$work/small.tiktoken" --steps 2 --out "$work/x"
expect_fail "--vocab-size without token files" "--vocab-size goes with --data-tokens" \
  "$bin" train "${gpt[@]}" --vocab-size 400 --steps 2 --out "$work/x"
finish
