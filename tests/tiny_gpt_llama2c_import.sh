#!/usr/bin/env bash
# The llama2.c round trip with tokenizers (issue 22): `import --format
# llama2c` takes every tokenizer.bin `export` writes (the byte vocabulary,
# tapegrad's BPE written with scores -id) and llama2.c's own layout (3
# specials, 256 "<0xXX>" byte pieces, characters, then merges scored by
# rank), read as run.c reads it; the imported model samples and evaluates
# with it (the same greedy text as the trained model, and as the suite's
# run.c reader, tests/llama2c_run.c, on the same files); export of the
# import writes the same bytes. An import without a tokenizer is refused
# unless --ids-only; sample and eval then take --tokenizer F, whose size
# must be the model's.
#   tests/tiny_gpt_llama2c_import.sh path/to/tiny_gpt path/to/st_edit path/to/llama2c_run
. "$(dirname "$0")/tiny_gpt_lib.sh"
reader=$3

for i in $(seq 150); do
  printf 'the cat sat on the mat. the dog ran to the door.\n\nsome birds sing in the rain, caf\xc3\xa9 na\xc3\xafve.\n\n'
done >"$work/text"
"$bin" tokenizer train --data "$work/text" --vocab-size 320 --out "$work/tok.safetensors" >/dev/null 2>&1 ||
  bad "tokenizer train"
llama=(--arch llama --n-layer 1 --n-head 2 --n-kv-head 1 --n-embd 32 --hidden-dim 48 --block-size 64 --batch-size 8
       --steps 200 --eval-interval 200 --eval-iters 2 --threads 1 --lr 1e-2)
"$bin" train "${llama[@]}" --data "$work/text" --tokenizer "$work/tok.safetensors" --out "$work/b" >/dev/null 2>&1 &&
  "$bin" export --ckpt "$work/b/last.safetensors" --out "$work/b.bin" --tokenizer "$work/btok.bin" >/dev/null 2>&1 ||
  bad "train and export a Llama with a BPE tokenizer"
V=$(od -An -td4 -j20 -N4 "$work/b.bin" | tr -d ' -')
greedy() { "$bin" sample --ckpt "$1" --prompt "the cat" --tokens 60 --temperature 0 "${@:2}" 2>/dev/null; }
want=$(greedy "$work/b/last.safetensors")

# 1. the BPE tokenizer.bin export wrote
"$bin" import --format llama2c --model "$work/b.bin" --tokenizer "$work/btok.bin" --out "$work/bi.safetensors" \
  >/dev/null 2>"$work/err" && ok "import takes the BPE tokenizer.bin export wrote ($V ids)" ||
  bad "import of the BPE tokenizer.bin: $(cat "$work/err")"
got=$(greedy "$work/bi.safetensors")
[ ${#want} -gt 40 ] && [ "$got" = "$want" ] && ok "the import samples as the trained model: '${want:0:40}...'" ||
  bad "greedy text: import '$got', trained '$want'"
theirs=$("$reader" "$work/b.bin" "$work/btok.bin" "the cat" 65)
[ -n "$theirs" ] && [ "${want:0:${#theirs}}" = "$theirs" ] && ok "and as run.c's reader reads the files" ||
  bad "run.c's reader: '$theirs', tiny_gpt '$want'"
"$bin" export --ckpt "$work/bi.safetensors" --out "$work/b2.bin" --tokenizer "$work/btok2.bin" >/dev/null 2>&1 &&
  cmp -s "$work/b.bin" "$work/b2.bin" && cmp -s "$work/btok.bin" "$work/btok2.bin" &&
  ok "export(import) writes model.bin and the BPE tokenizer.bin byte for byte" || bad "re-export of the BPE import differs"
a=$("$bin" eval --ckpt "$work/bi.safetensors" --data "$work/text" --eval-iters 4 2>&1)
grep -qE '^step 0: train loss [0-9.]+, val loss [0-9.]+' <<<"$a" && ok "the import evaluates: $a" || bad "eval: $a"

# 2. llama2.c's own layout: "<0xXX>" bytes, the characters, then merges
# scored -rank (sentencepiece's BPE as llama2.c's tokenizer.py writes it)
python3 - "$work" "$V" <<'PY'
import struct, sys
work, V = sys.argv[1], int(sys.argv[2])
text = open(work + "/text", "rb").read().decode()
pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [b"<0x%02X>" % b for b in range(256)]
scores = [0.0] * 259
for c in sorted(set(text) - {"\n"}):
    pieces.append(c.encode())
    scores.append(0.0)
words = {}
for w in text.replace("\n", " ").split(" "):
    if w:
        words[" " + w] = words.get(" " + w, 0) + 1
seqs = {w: list(w) for w in words}
k = 0
while len(pieces) < V:   # the most frequent pair of each round, merged
    cnt = {}
    for w, s in seqs.items():
        for a, b in zip(s, s[1:]):
            cnt[(a, b)] = cnt.get((a, b), 0) + words[w]
    if not cnt:
        break
    (a, b), _ = max(cnt.items(), key=lambda x: (x[1], x[0]))
    pieces.append((a + b).encode())
    scores.append(-float(k))
    k += 1
    for w, s in seqs.items():
        i, out = 0, []
        while i < len(s):
            if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(s[i])
                i += 1
        seqs[w] = out
while len(pieces) < V:
    pieces.append(b"<extra_%d>" % len(pieces))
    scores.append(-1e4)
with open(work + "/l2c.bin", "wb") as f:
    f.write(struct.pack("<i", max(map(len, pieces))))
    for p, s in zip(pieces, scores):
        f.write(struct.pack("<fi", s, len(p)) + p)
PY
"$bin" import --model "$work/b.bin" --tokenizer "$work/l2c.bin" --out "$work/l.safetensors" >/dev/null 2>"$work/err" &&
  ok "import takes llama2.c's own layout ('<0xXX>' bytes, scored merges)" || bad "import of l2c.bin: $(cat "$work/err")"
got=$(greedy "$work/l.safetensors")
theirs=$("$reader" "$work/b.bin" "$work/l2c.bin" "the cat" 65)
[ -n "$got" ] && [ "$got" = "$theirs" ] && ok "it samples as run.c's reader does with that tokenizer: '${got:0:40}'" ||
  bad "llama2.c layout: tiny_gpt '$got', reader '$theirs'"
for s in 'the cat sat on the mat.' ' the  dog   ran' 'caf\xc3\xa9 na\xc3\xafve, birds!' '\xf0\x9f\x98\x80 x\tz'; do
  printf "$s" >"$work/s"
  a="1 $("$bin" tokenizer encode --tokenizer "$work/l2c.bin" <"$work/s")"
  b=$("$reader" --encode "$work/l2c.bin" <"$work/s")
  [ "$a" = "$b" ] && ok "'$s': the ids of run.c's reader ($(wc -w <<<"$a"))" || bad "'$s': tapegrad '$a', reader '$b'"
  "$bin" tokenizer encode --tokenizer "$work/l2c.bin" <"$work/s" | "$bin" tokenizer decode --tokenizer "$work/l2c.bin" \
    >"$work/back"
  cmp -s "$work/s" "$work/back" && ok "'$s': decode(encode) is the text" || bad "'$s': decoded '$(cat "$work/back")'"
done
"$bin" export --ckpt "$work/l.safetensors" --out "$work/l2.bin" --tokenizer "$work/l2c2.bin" >/dev/null 2>&1 &&
  cmp -s "$work/l2c.bin" "$work/l2c2.bin" && ok "export(import) writes llama2.c's tokenizer.bin back byte for byte" ||
  bad "re-export of llama2.c's tokenizer differs"

# training takes llama2.c's tokenizer too (tokenizer.bin as --tokenizer), and export writes it back
"$bin" train "${llama[@]}" --steps 150 --eval-interval 150 --data "$work/text" --tokenizer "$work/l2c.bin" \
  --out "$work/sr" >"$work/sr.log" 2>&1 &&
  "$bin" export --ckpt "$work/sr/last.safetensors" --out "$work/s.bin" --tokenizer "$work/stok.bin" >/dev/null 2>&1 ||
  bad "train and export with llama2.c's tokenizer: $(tail -3 "$work/sr.log")"
got=$(greedy "$work/sr/last.safetensors")
theirs=$("$reader" "$work/s.bin" "$work/stok.bin" "the cat" 65)
cmp -s "$work/l2c.bin" "$work/stok.bin" && [ -n "$got" ] && [ "${got:0:${#theirs}}" = "$theirs" ] &&
  [[ "$got" == "the cat sat"* ]] && ok "train --tokenizer tokenizer.bin: '${got:0:30}...', as run.c's reader" ||
  bad "train with llama2.c's tokenizer: '$got', reader '$theirs'"

# 3. the byte vocabulary: a model trained without a tokenizer, back to llama2.c's bytes
"$bin" train "${llama[@]}" --steps 4 --eval-interval 4 --data "$work/text" --out "$work/y" >/dev/null 2>&1
"$bin" export --ckpt "$work/y/last.safetensors" --out "$work/y.bin" --tokenizer "$work/ytok.bin" >/dev/null 2>&1
"$bin" import --model "$work/y.bin" --tokenizer "$work/ytok.bin" --out "$work/yi.safetensors" >/dev/null 2>&1 &&
  "$bin" export --ckpt "$work/yi.safetensors" --out "$work/y2.bin" --tokenizer "$work/ytok2.bin" >/dev/null 2>&1 &&
  cmp -s "$work/y.bin" "$work/y2.bin" && cmp -s "$work/ytok.bin" "$work/ytok2.bin" &&
  ok "the byte vocabulary's tokenizer.bin: round trip byte for byte" || bad "byte vocabulary round trip"

# 4. without a tokenizer: refused unless --ids-only; then --tokenizer F
expect_fail "import without a tokenizer" "--tokenizer tokenizer.bin is required: the model's ids mean nothing without it" \
  "$bin" import --model "$work/b.bin" --out "$work/x.safetensors"
expect_fail "import with both" "--tokenizer and --ids-only exclude each other" \
  "$bin" import --model "$work/b.bin" --tokenizer "$work/btok.bin" --ids-only --out "$work/x.safetensors"
[ ! -e "$work/x.safetensors" ] && ok "a refused import writes nothing" || bad "a refused import wrote a checkpoint"
"$bin" import --model "$work/b.bin" --ids-only --out "$work/ids.safetensors" >/dev/null 2>&1 &&
  ok "import --ids-only" || bad "import --ids-only"
got=$("$bin" sample --ckpt "$work/ids.safetensors" --prompt "1 2" --tokens 5 --temperature 0 2>/dev/null)
[[ "$got" =~ ^1\ 2(\ [0-9]+){5}$ ]] && ok "an ids-only model samples ids: '$got'" || bad "ids-only sample: '$got'"
for t in btok.bin tok.safetensors b/last.safetensors; do
  got=$(greedy "$work/ids.safetensors" --tokenizer "$work/$t")
  [ "$got" = "$want" ] && ok "sample --tokenizer $t gives the trained model's text" || bad "--tokenizer $t: '$got'"
done
a=$("$bin" eval --ckpt "$work/bi.safetensors" --data "$work/text" --eval-iters 4 2>&1)
b=$("$bin" eval --ckpt "$work/ids.safetensors" --data "$work/text" --eval-iters 4 --tokenizer "$work/btok.bin" 2>&1)
[ -n "$a" ] && [ "$a" = "$b" ] && ok "eval --tokenizer: the same losses as the import with its tokenizer" ||
  bad "eval --tokenizer: '$b' vs '$a'"
expect_fail "sample --tokenizer of another size" "--tokenizer $work/ytok.bin has 259 ids and the model $V (vocab_size)" \
  "$bin" sample --ckpt "$work/ids.safetensors" --tokenizer "$work/ytok.bin" --tokens 3
expect_fail "eval --tokenizer of another size" "--tokenizer $work/ytok.bin has 259 ids and the model $V (vocab_size)" \
  "$bin" eval --ckpt "$work/ids.safetensors" --data "$work/text" --tokenizer "$work/ytok.bin"
expect_fail "sample --tokenizer other than the checkpoint's own" "the checkpoint holds a tokenizer of its own" \
  "$bin" sample --ckpt "$work/b/last.safetensors" --tokenizer "$work/l2c.bin" --tokens 3
got=$(greedy "$work/b/last.safetensors" --tokenizer "$work/tok.safetensors")
[ "$got" = "$want" ] && ok "sample --tokenizer the checkpoint's own is taken" || bad "own tokenizer: '$got'"
expect_fail "--vocab and --tokenizer" "--vocab (a text's bytes) and --tokenizer exclude each other" \
  "$bin" sample --ckpt "$work/ids.safetensors" --tokenizer "$work/btok.bin" --vocab "$work/text"
expect_fail "eval --tokenizer without --ckpt" "--tokenizer, --eval-iters, --batch-size and --full-val go with --ckpt" \
  "$bin" eval --tokenizer "$work/btok.bin" --init "$work/b.bin"
finish
