#!/usr/bin/env python3
"""TG_TOK_SPM (pieces with scores, text/spm.c) against two references:

1. sentencepiece itself: a small BPE model trained here with Debian's
   spm_train (--model_type=bpe --byte_fallback, identity normalization,
   whitespace kept), its vocabulary (spm_export_vocab: pieces and scores)
   converted two ways, and the ids of `tiny_gpt tokenizer encode` compared
   with `spm_encode --output_format=id` line by line on a varied text
   (code, several scripts, emoji, characters the model never saw, tabs
   and runs of spaces):
     - spm.safetensors: the pieces as sentencepiece spells them (U+2581
       for a space, "<0xXX>" bytes), no merge floor: what a GGUF
       vocabulary gives;
     - tokenizer.bin: the file llama2.c's tokenizer.py writes from the
       same model (U+2581 as ' ', "\\n<s>\\n" and "\\n</s>\\n"), read as
       run.c reads it.
2. run.c's encoder, reimplemented below from its loop (every adjacent
   pair rescanned after each merge, the highest score above -1e10 winning,
   the leftmost on a tie; characters looked up whole, else byte + 3), on
   tokenizer.bin, and on a hand-made llama2.c tokenizer with ties, byte
   fallback, raw byte pieces that merge, and texts long enough for the
   heap (more than 64 symbols).

    parity_spm.py TINY_GPT

Exits 77 (skipped) when spm_train, spm_encode or spm_export_vocab is
missing, and 1 then under CI=true (scripts/reference-tools.sh installs
Debian's sentencepiece). A mismatch prints the line, both id lists and
exits 1."""
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

tiny_gpt = sys.argv[1]
tools = [shutil.which(t) for t in ("spm_train", "spm_encode", "spm_export_vocab")]
if not all(tools):
    print("spm_train, spm_encode or spm_export_vocab not found: scripts/reference-tools.sh installs Debian's "
          "sentencepiece")
    sys.exit(1 if os.environ.get("CI") == "true" else 77)

tmp = tempfile.mkdtemp(prefix="tg_parity_spm_")
failures = 0


def run(args, data=None):
    r = subprocess.run(args, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode:
        sys.exit("%s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr.decode(errors="replace")))
    return r.stdout


def ours(tok, text):
    out = run([tiny_gpt, "tokenizer", "encode", "--tokenizer", tok], text.encode() if isinstance(text, str) else text)
    return [int(x) for x in out.split()]


# ---- run.c's encoder, from its loop --------------------------------------------

def read_llama2c(path):
    data = open(path, "rb").read()
    pieces, scores, at = [], [], 4
    while at < len(data):
        s, n = struct.unpack_from("<fi", data, at)
        pieces.append(data[at + 8:at + 8 + n])
        scores.append(s)
        at += 8 + n
    return pieces, scores


def runc_encode(pieces, scores, text):
    """run.c's encode(text, bos=0, eos=0): ids of " " + text (a C string)."""
    lookup = {}
    for i, p in enumerate(pieces):
        lookup.setdefault(p, i)
    text = text.split(b"\0")[0]
    toks = []
    if text:
        toks.append(lookup.get(b" ", -1))
    i = 0
    while i < len(text):
        k = 1
        while i + k < len(text) and k < 4 and (text[i + k] & 0xC0) == 0x80:
            k += 1
        ch = text[i:i + k]
        if ch in lookup:
            toks.append(lookup[ch])
        else:
            toks.extend(b + 3 for b in ch)
        i += k
    while True:
        best, best_id, best_at = -1e10, -1, -1
        for j in range(len(toks) - 1):
            c = lookup.get(pieces[toks[j]] + pieces[toks[j + 1]], -1)
            if c != -1 and scores[c] > best:
                best, best_id, best_at = scores[c], c, j
        if best_at == -1:
            return toks
        toks[best_at:best_at + 2] = [best_id]


def write_llama2c(path, pieces, scores):
    with open(path, "wb") as f:
        f.write(struct.pack("<i", max(len(p) for p in pieces)))
        for p, s in zip(pieces, scores):
            f.write(struct.pack("<fi", s, len(p)) + p)


def compare(what, text, got, want):
    global failures
    if got != want:
        failures += 1
        if failures <= 10:
            print("MISMATCH %s on %r:\n  tapegrad %s\n  reference %s" % (what, text[:80], got, want))


# ---- 1. sentencepiece ------------------------------------------------------------

rng = random.Random(7)
words = ("the quick brown fox jumps over a lazy dog and then some more words of English text "
         "int main ( void ) { return printf ( \"%d\\n\" , x ) ; } def f ( x ) : return x ** 2 "
         "Привет мир как дела хорошо こんにちは 世界 東京 日本語 café naïve résumé Straße "
         "مرحبا بالعالم γειά σου κόσμε שלום עולם").split()
lines = []
for _ in range(3000):
    n = rng.randint(1, 14)
    sep = lambda: rng.choice([" "] * 12 + ["  ", "\t", "   "])
    lines.append("".join(rng.choice(words) + sep() for _ in range(n)).rstrip(" "))
with open(os.path.join(tmp, "train.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
run(["spm_train", "--input=" + os.path.join(tmp, "train.txt"), "--model_prefix=" + os.path.join(tmp, "m"),
     "--model_type=bpe", "--vocab_size=700", "--byte_fallback=true", "--character_coverage=1.0",
     "--normalization_rule_name=identity", "--remove_extra_whitespaces=false", "--add_dummy_prefix=true",
     "--minloglevel=2"])
model = os.path.join(tmp, "m.model")
vocab = []
for line in run(["spm_export_vocab", "--model=" + model]).decode().split("\n"):
    if line:
        p, s = line.rsplit("\t", 1)
        vocab.append((p, float(s)))
assert [p for p, _ in vocab[:4]] == ["<unk>", "<s>", "</s>", "<0x00>"], vocab[:4]
V = len(vocab)


def piece_type(i, p):
    return 2 if i == 0 else 3 if i < 3 else 6 if 3 <= i < 259 else 1


# spm.safetensors: the tokenizer entries of docs/tokenizers.md, kind "spm"
def write_safetensors(path, tensors, meta):
    import json
    header, blobs, at = {"__metadata__": meta}, [], 0
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(blob)]}
        blobs.append(blob)
        at += len(blob)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


spelled = [p.encode() for p, _ in vocab]
offsets = [0]
for p in spelled:
    offsets.append(offsets[-1] + len(p))
types = [piece_type(i, p) for i, (p, _) in enumerate(vocab)]
spm_st = os.path.join(tmp, "spm.safetensors")
write_safetensors(spm_st, [
    ("tokenizer.pieces", "U8", [offsets[-1]], b"".join(spelled)),
    ("tokenizer.offsets", "I64", [V + 1], struct.pack("<%dq" % (V + 1), *offsets)),
    ("tokenizer.special", "U8", [V], bytes(1 if t in (2, 3) else 0 for t in types)),
    ("tokenizer.scores", "F32", [V], struct.pack("<%df" % V, *[s for _, s in vocab])),
    ("tokenizer.types", "U8", [V], bytes(types)),
], {"tokenizer": "spm", "tokenizer.version": "1", "tokenizer.bos": "1", "tokenizer.eos": "2", "tokenizer.unk": "0",
    "tokenizer.space_u2581": "1", "tokenizer.add_prefix": "1", "tokenizer.merge_floor": "-inf"})

# tokenizer.bin as llama2.c's tokenizer.py writes it
l2c_pieces = []
for i, (p, _) in enumerate(vocab):
    p = "\n<s>\n" if i == 1 else "\n</s>\n" if i == 2 else p
    l2c_pieces.append(p.replace("\u2581", " ").encode())
l2c_scores = [s for _, s in vocab]
l2c = os.path.join(tmp, "tokenizer.bin")
write_llama2c(l2c, l2c_pieces, l2c_scores)

tests = [
    "the quick brown fox", "  two leading spaces", "trailing spaces   ", "tabs\tand\t\tmore tabs",
    "int main(void) { return printf(\"%d\\n\", x); }", "def f(x): pass", "    indented code();",
    "Привет, мир! Как дела?", "こんにちは世界、東京へようこそ", "café naïve résumé Straße", "مرحبا بالعالم",
    "γειά σου κόσμε", "שלום עולם", "emoji 😀🎉👍🏽 and 🇫🇷 flags", "unseen: ₿ ∑ ∫ ♞ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "mixed Привет the 世界 café 😀 x", "a", " ", "     ", "x y z", "numbers 1234567890 3.14159",
    "CAPITALS AND MiXeD CaSe", "theth ethe the the thethe", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
] + [lines[k] for k in range(0, 3000, 97)] + [
    " ".join(rng.choice(words) for _ in range(60)),   # long: the heap path
]
assert not any("\n" in t for t in tests)   # spm_encode encodes each line on its own
with open(os.path.join(tmp, "tests.txt"), "w") as f:
    f.write("\n".join(tests) + "\n")
spm_ids = [[int(x) for x in l.split()] for l in
           run(["spm_encode", "--model=" + model, "--output_format=id",
                "--input=" + os.path.join(tmp, "tests.txt")]).decode().split("\n")[:len(tests)]]
for text, want in zip(tests, spm_ids):
    compare("spm.safetensors vs spm_encode", text, ours(spm_st, text), want)
    compare("tokenizer.bin vs spm_encode", text, ours(l2c, text), want)
    compare("run.c's loop on tokenizer.bin vs spm_encode", text, runc_encode(l2c_pieces, l2c_scores, text.encode()),
            want)
print("sentencepiece: %d texts, %d ids, vocabulary of %d" % (len(tests), sum(map(len, spm_ids)), V))

# ---- 2. run.c's loop on a hand-made llama2.c tokenizer -----------------------------

def hand_made(raw_bytes, seed):
    """3 specials, the 256 bytes (raw or "<0xXX>"), then merges of a small
    alphabet with scores from a few values (many ties)."""
    r = random.Random(seed)
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"]
    pieces += [bytes([b]) if raw_bytes else b"<0x%02X>" % b for b in range(256)]
    scores = [0.0] * 259
    alphabet = [b" ", b"a", b"b", b"c", "é".encode(), "😀".encode()]
    have = set(pieces)
    for c in alphabet:   # the characters themselves
        if c not in have:
            pieces.append(c)
            scores.append(0.0)
            have.add(c)
    pool = list(alphabet)
    while len(pieces) < 259 + 120:
        p = r.choice(pool) + r.choice(pool)
        if p in have or len(p) > 12:
            continue
        pieces.append(p)
        scores.append(float(r.choice([-1, -2, -3, -3, -5, -8])))
        have.add(p)
        pool.append(p)
    if raw_bytes:   # a piece only the bytes of a character not in the vocabulary make
        pieces.append("ü".encode())
        scores.append(-1.0)
    return pieces, scores


for raw in (False, True):
    pieces, scores = hand_made(raw, 11 + raw)
    path = os.path.join(tmp, "hand%d.bin" % raw)
    write_llama2c(path, pieces, scores)
    r = random.Random(3)
    chars = [" ", "a", "b", "c", "é", "😀", "ü", "x", "\n"]
    texts = ["".join(r.choice(chars) for _ in range(r.choice([1, 2, 5, 20, 70, 200]))) for _ in range(150)]
    texts += ["", "abcabc", "ab ab", "üüü", "éa", "😀😀"]
    for text in texts:
        compare("hand-made (%s bytes) vs run.c's loop" % ("raw" if raw else "<0xXX>"), text, ours(path, text),
                runc_encode(pieces, scores, text.encode()))
    print("hand-made llama2.c tokenizer, %s byte pieces: %d texts" % ("raw" if raw else "<0xXX>", len(texts)))

shutil.rmtree(tmp)
if failures:
    print("%d mismatches" % failures)
    sys.exit(1)
print("all equal")
