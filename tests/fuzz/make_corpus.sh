#!/usr/bin/env bash
# Regenerates the fuzz seed corpora, tests/fuzz/corpus/<reader>/, from a
# build's tiny_gpt (real files: a tokenizer trained, two tiny models
# trained one step, a Llama exported to llama2.c's files and imported back,
# training checkpoints of tiny runs with each optimizer and state)
# and python3 (token files, and the hand-crafted edge files: empty,
# truncated, huge claimed sizes, ...). Every file is small (a few KB).
#   tests/fuzz/make_corpus.sh [BUILD_DIR]     (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
bin=$build/tiny_gpt
[ -x "$bin" ] || { echo "$bin not found: build first (cmake --build build)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 writes the token files and edge files" >&2; exit 1; }
corpus=$root/tests/fuzz/corpus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1

# ---- the project's own files ------------------------------------------------
for i in $(seq 60); do
  printf 'the cat %d sees the caf\xc3\xa9 dog %d for \xe2\x82\xac%d \xf0\x9f\x98\x80.\n' $((i % 7)) $((i % 3)) $((i % 5))
  [ $((i % 4)) -eq 0 ] && printf '\n'
done >"$work/text.txt"
# a GPT-2-style rank file: the 256 bytes, then a few merges
{
  for b in $(seq 0 255); do printf "$(printf '\\%03o' "$b")" | base64 | tr -d '\n'; echo " $b"; done
  r=256
  for p in 'th' 'the' ' the' 'ca' 'cat' ' cat' "$(printf 'caf\xc3\xa9')" "$(printf '\xe2\x82\xac')"; do
    printf '%s' "$p" | base64 | tr -d '\n'; echo " $r"; r=$((r + 1))
  done
} >"$work/small.tiktoken"
q() { "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }; }
q "$bin" tokenizer train --data "$work/text.txt" --vocab-size 280 --out "$work/tok.safetensors"
q "$bin" tokenizer train --data "$work/text.txt" --vocab-size 262 --out "$work/tok_small.safetensors"
tiny=(--n-layer 1 --n-head 2 --n-embd 4 --block-size 8 --batch-size 2 --eval-iters 1 --threads 1 --steps 1
      --data "$work/text.txt")
llama=(--arch llama --n-kv-head 1 --hidden-dim 8)
q "$bin" train "${tiny[@]}" "${llama[@]}" --out "$work/llama"
q "$bin" train "${tiny[@]}" --out "$work/gpt"
q "$bin" train "${tiny[@]}" "${llama[@]}" --tokenizer "$work/tok.safetensors" --out "$work/llama_bpe"
q "$bin" train "${tiny[@]}" --tokenizer "$work/small.tiktoken" --out "$work/gpt_tiktoken"
q "$bin" export --ckpt "$work/llama/best.safetensors" --format llama2c --out "$work/model.bin" \
  --tokenizer "$work/tokenizer.bin"
q "$bin" export --ckpt "$work/llama_bpe/best.safetensors" --format llama2c --out "$work/model_bpe.bin" \
  --tokenizer "$work/tokenizer_bpe.bin"
q "$bin" import --format llama2c --model "$work/model.bin" --tokenizer "$work/tokenizer.bin" \
  --out "$work/imported.safetensors"
"$bin" tokenizer encode --tokenizer "$work/tok.safetensors" <"$work/text.txt" >"$work/ids.txt"
q "$bin" export --ckpt "$work/llama/best.safetensors" --format gguf --out "$work/llama.gguf"
q "$bin" export --ckpt "$work/llama_bpe/best.safetensors" --format gguf --type f16 --out "$work/llama_bpe.gguf"
# training checkpoints (fuzz_checkpoint): each optimizer, the averages, epochs, a budget's plan, f64, a stopped run
ck=(--n-layer 1 --n-head 2 --n-embd 4 --block-size 8 --batch-size 2 --eval-iters 1 --eval-interval 1 --threads 1
    --steps 2 --data "$work/text.txt")
q "$bin" train "${ck[@]}" --out "$work/ck_gpt"
q "$bin" train "${ck[@]}" "${llama[@]}" --optimizer muon --out "$work/ck_llama_muon"
q "$bin" train "${ck[@]}" --optimizer muon --out "$work/ck_gpt_muon"
q "$bin" train "${ck[@]}" --ema 0.9 --out "$work/ck_gpt_ema"
q "$bin" train "${ck[@]}" "${llama[@]}" --sampling epochs --out "$work/ck_llama_epochs"
q "$bin" train "${ck[@]}" --steps 9 --time-budget 5 --stop-at 2 --out "$work/ck_gpt_budget"
q "$bin" train "${ck[@]}" --dtype f64 --out "$work/ck_gpt_f64"
q "$bin" train "${ck[@]}" --steps 5 --stop-at 1 --dropout 0.1 --out "$work/ck_gpt_stopped"
q "$bin" train "${ck[@]}" "${llama[@]}" --tokenizer "$work/tok.safetensors" --optimizer muon --ema 0.5 \
  --sampling epochs --out "$work/ck_llama_all"

rm -rf "$corpus"
mkdir -p "$corpus"/{safetensors,tokenizer,tiktoken,tokfile,config,llama2c,llama2c_tok,gguf}
# the same ranks without the pieces no merge of two earlier ones makes ('café', '€'), which a
# tokenizer.json cannot say: the hf export's GPT
head -n 262 "$work/small.tiktoken" >"$work/hf.tiktoken"
q "$bin" train "${tiny[@]}" --tokenizer "$work/hf.tiktoken" --out "$work/gpt_hf"
q "$bin" export --ckpt "$work/gpt_hf/best.safetensors" --format hf --out "$work/hf_gpt"
q "$bin" export --ckpt "$work/llama/best.safetensors" --format hf --out "$work/hf_llama"
# GPTs as llama.cpp's gpt2: a text's bytes (f16: rows of 4) and GPT-2-style ranks (tokens + merges)
q "$bin" export --ckpt "$work/gpt/best.safetensors" --format gguf --type q8_0 --out "$work/gpt_bytes.gguf"
q "$bin" export --ckpt "$work/gpt_hf/best.safetensors" --format gguf --out "$work/gpt_tiktoken.gguf"
q "$bin" export --ckpt "$work/llama_bpe/best.safetensors" --format hf --out "$work/hf_llama_bpe"
q "$bin" export --ckpt "$work/gpt/best.safetensors" --format hf --out "$work/hf_gpt_bytes"

rm -rf "$corpus"
mkdir -p "$corpus"/{safetensors,tokenizer,tiktoken,tokfile,config,llama2c,llama2c_tok,gguf,hf,checkpoint}
for r in gpt llama_muon gpt_muon gpt_ema llama_epochs gpt_budget gpt_f64 gpt_stopped llama_all; do
  cp "$work/ck_$r/last.safetensors" "$corpus/checkpoint/${r}_last.safetensors"
done
cp "$work/ck_gpt/best.safetensors" "$corpus/checkpoint/gpt_best.safetensors"
cp "$work/ck_gpt_ema/best.safetensors" "$corpus/checkpoint/gpt_ema_best.safetensors"
cp "$work/tok.safetensors" "$corpus/safetensors/tokenizer_bpe.safetensors"
cp "$work/llama.gguf" "$corpus/gguf/llama_bytes_f32.gguf"
cp "$work/llama_bpe.gguf" "$corpus/gguf/llama_bpe_f16.gguf"
head -c 200 "$work/llama.gguf" >"$corpus/gguf/cut_short.gguf"
cp "$work/gpt_bytes.gguf" "$corpus/gguf/gpt_bytes_f16.gguf"
cp "$work/gpt_tiktoken.gguf" "$corpus/gguf/gpt_tiktoken_f32.gguf"
# crafted GGUF files: tiny models that import and the refusals of the reader (tests/gguf_edge_files.py)
python3 "$root/tests/gguf_edge_files.py" "$corpus/gguf" >/dev/null
cp "$work/llama/best.safetensors" "$corpus/safetensors/ckpt_llama.safetensors"
cp "$work/gpt/best.safetensors" "$corpus/safetensors/ckpt_gpt.safetensors"
cp "$work/gpt_tiktoken/best.safetensors" "$corpus/safetensors/ckpt_gpt_tiktoken.safetensors"
cp "$work/imported.safetensors" "$corpus/safetensors/imported_llama2c.safetensors"
cp "$work/tok.safetensors" "$corpus/tokenizer/bpe.safetensors"
cp "$work/tok_small.safetensors" "$corpus/tokenizer/bpe_small.safetensors"
cp "$work/llama_bpe/best.safetensors" "$corpus/tokenizer/ckpt_llama_bpe.safetensors"
cp "$work/gpt_tiktoken/best.safetensors" "$corpus/tokenizer/ckpt_gpt_tiktoken.safetensors"
cp "$work/gpt/best.safetensors" "$corpus/tokenizer/ckpt_no_tokenizer.safetensors"
cp "$work/small.tiktoken" "$corpus/tiktoken/small.tiktoken"
cp "$root/examples/tiny_gpt/configs/shakespeare_char.conf" "$corpus/config/shakespeare_char.conf"

# ---- written here: token files, llama2c inputs, edge files ------------------
python3 - "$corpus" "$work" <<'PY'
import base64, json, os, struct, sys
corpus, work = sys.argv[1], sys.argv[2]
def put(reader, name, data):
    if isinstance(data, str): data = data.encode()
    with open(os.path.join(corpus, reader, name), "wb") as f: f.write(data)
def read(name):
    with open(os.path.join(work, name), "rb") as f: return f.read()

# safetensors: every dtype, metadata, scalars, zero sizes; and broken ones
def st(tensors, meta=None, pad=b"", raw_header=None, tail=b""):
    hdr, data = {}, b""
    if meta is not None: hdr["__metadata__"] = meta
    for name, dtype, shape, b in tensors:
        hdr[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = raw_header if raw_header is not None else json.dumps(hdr).encode() + pad
    return struct.pack("<Q", len(h)) + h + data + tail
mixed = [("f32", "F32", [2, 3], struct.pack("<6f", 1, -2, 3.5, 0, float("inf"), float("nan"))),
         ("f64", "F64", [3], struct.pack("<3d", 1e300, -1e-300, 2)),
         ("i32", "I32", [2], struct.pack("<2i", -7, 2**31 - 1)),
         ("i64", "I64", [2], struct.pack("<2q", 5, 2**40)),
         ("u8", "U8", [4], bytes([0, 1, 1, 0])), ("bool", "BOOL", [2, 1], bytes([1, 2])),
         ("bf16", "BF16", [2], b"\x80\x3f\x00\x40"), ("f16", "F16", [1], b"\x00\x3c"),
         ("scalar", "F32", [], struct.pack("<f", 4)), ("empty", "F32", [0, 5], b"")]
put("safetensors", "mixed_dtypes.safetensors", st(mixed, {"k": "v", "format": "pt"}, b"    "))
put("safetensors", "empty_header.safetensors", st([], raw_header=b"{}"))
put("safetensors", "edge_empty", b"")
put("safetensors", "edge_short_length", b"\x10\x00\x00")
put("safetensors", "edge_header_cut", st(mixed)[:40])
put("safetensors", "edge_data_cut", st(mixed)[:-5])
put("safetensors", "edge_huge_header_len", struct.pack("<Q", 2**63 + 5) + b"{}")
put("safetensors", "edge_huge_shape", st([], raw_header=json.dumps({"x": {"dtype": "F32",
    "shape": [2**62, 2**62], "data_offsets": [0, 0]}}).encode()))
put("safetensors", "edge_offsets_out", st([], raw_header=json.dumps({"x": {"dtype": "U8", "shape": [4],
    "data_offsets": [0, 2**64 - 1]}}).encode(), tail=b"abcd"))
put("safetensors", "edge_overlap", st([], raw_header=json.dumps({"a": {"dtype": "U8", "shape": [2],
    "data_offsets": [0, 2]}, "b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}).encode(), tail=b"abc"))
put("safetensors", "edge_duplicate", st([], raw_header=b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
    b'"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', tail=b"ab"))
put("safetensors", "edge_bad_json", st([], raw_header=b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]'))
put("safetensors", "edge_meta_not_string", st([], raw_header=b'{"__metadata__":{"k":1}}'))
put("safetensors", "edge_deep_json", st([], raw_header=b"[" * 3000 + b"]" * 3000))
# model configs with issue 23's architecture options (tg_model_config_read's keys)
x = [("x", "F32", [2], struct.pack("<2f", 0, 0))]
put("safetensors", "config_gpt_options.safetensors", st(x, {"arch": "gpt", "n_layer": "2", "n_head": "2",
    "n_embd": "8", "block_size": "8", "vocab_size": "11", "bias": "false", "dropout": "0", "gelu": "erf",
    "tied": "false", "mlp": "relu2", "qk_norm": "true", "zero_init_proj": "true", "logit_softcap": "15"}))
put("safetensors", "config_llama_options.safetensors", st(x, {"arch": "llama", "n_layer": "1", "n_head": "2",
    "n_kv_head": "1", "n_embd": "8", "hidden_dim": "32", "block_size": "8", "vocab_size": "11",
    "rope_theta": "10000", "norm_eps": "1e-05", "tied": "false", "rope": "interleaved", "bias": "false",
    "dropout": "0", "mlp": "gelu", "gelu": "tanh", "qk_norm": "true", "logit_softcap": "30.5"}))

# tokenizer files: cut ones, and one whose merges lie
tok = read("tok.safetensors")
put("tokenizer", "edge_empty", b"")
put("tokenizer", "edge_cut_header", tok[:100])
put("tokenizer", "edge_cut_data", tok[:-10])
n = struct.unpack("<Q", tok[:8])[0]
h = json.loads(tok[8:8 + n])
h["__metadata__"]["tokenizer.bos"] = "279"
put("tokenizer", "edge_bos_not_special", st([], raw_header=json.dumps(h).encode(), tail=tok[8 + n:]))
h["__metadata__"]["tokenizer.bos"] = "1"
h["__metadata__"]["tokenizer"] = "tiktoken"
h["__metadata__"]["tokenizer.pattern"] = "(a|b)*c"
put("tokenizer", "edge_tiktoken_pattern", st([], raw_header=json.dumps(h).encode(), tail=tok[8 + n:]))

# tiktoken rank files
small = read("small.tiktoken").decode()
lines = small.splitlines(True)
put("tiktoken", "edge_empty", b"")
put("tiktoken", "edge_blank_lines", "\n" * 300)
put("tiktoken", "edge_no_final_newline", small.rstrip("\n"))
put("tiktoken", "edge_missing_byte", "".join(lines[1:]))
put("tiktoken", "edge_duplicate_rank", small + lines[-1])
put("tiktoken", "edge_rank_gap", small + base64.b64encode(b"dog").decode() + " 9999999999\n")
put("tiktoken", "edge_bad_base64", small + "@@@@ 264\n")
put("tiktoken", "edge_crlf", small.replace("\n", "\r\n"))
put("tiktoken", "edge_long_piece", small + base64.b64encode(b"x" * 3000).decode() + " 264\n")

# token files: nanoGPT's raw uint16, llm.c's v1 (uint16) and v2 (uint32)
ids = [int(x) for x in read("ids.txt").split()][:1500]
raw = struct.pack("<%dH" % len(ids), *ids)
def llmc(version, ids, count=None, magic=20240520):
    hdr = [magic, version, len(ids) if count is None else count] + [0] * 253
    return struct.pack("<256i", *hdr) + struct.pack("<%d%s" % (len(ids), "H" if version == 1 else "I"), *ids)
put("tokfile", "nanogpt.bin", raw)
put("tokfile", "llmc_v1.bin", llmc(1, ids[:500]))
put("tokfile", "llmc_v2.bin", llmc(2, ids[:300] + [50303, 0]))
put("tokfile", "edge_empty", b"")
put("tokfile", "edge_odd", raw[:101])
put("tokfile", "edge_llmc_header_only", llmc(1, []))
put("tokfile", "edge_llmc_count_high", llmc(1, ids[:10], count=2**31 - 1))
put("tokfile", "edge_llmc_count_negative", llmc(2, ids[:10], count=-3))
put("tokfile", "edge_llmc_bad_version", llmc(3, ids[:10]))
put("tokfile", "edge_llmc_cut_header", llmc(1, ids[:10])[:600])
put("tokfile", "edge_id_too_big", struct.pack("<4H", 1, 2, 65535, 3))
put("tokfile", "edge_llmc_id_too_big", llmc(2, [1, 2**31 + 5]))

# --config files
put("config", "small.conf", "# a tiny Llama\narch = llama\nn_layer = 1\nn-head = 2\n--n_embd = 8\n"
    "block_size=16\nlr = 3e-3   # inline comment\ndata = \"a # b.txt\"\nbias = false\nresume = true\n"
    "seed = 42\nrope-theta = 1e4\n")
put("config", "crlf.conf", "steps = 10\r\nbatch_size = 4\r\n\r\n")
put("config", "edge_empty", b"")
put("config", "edge_nul", b"steps = 1\n\x00\n")
put("config", "edge_unknown_flag", "n_layr = 2\n")
put("config", "edge_no_equals", "n_layer 2\n")
put("config", "edge_no_name", " = 2\n")
put("config", "edge_out_of_range", "n_layer = 100000\n")
put("config", "edge_bad_number", "lr = 1e-3x\n")
put("config", "edge_huge_number", "seed = 99999999999999999999999999\nlr = 1e400\n")
put("config", "edge_bad_bool", "bias = maybe\n")
put("config", "edge_nested_config", "config = other.conf\n")
put("config", "edge_open_quote", "data = \"abc\nout = \"\n")
put("config", "edge_long_line", "data = " + "x" * 3000 + "\n")
put("config", "edge_bom", b"\xef\xbb\xbfn_layer = 2\nsteps = 3\n")
put("config", "edge_binary", b"\xff\xfe\x01 = 2\n\x1b[31m\xc2\xa0\n")
put("config", "edge_not_decimal", "n_layer = 0x1\nlr = inf\nsteps = \" 3\"\n")
put("config", "edge_subnormal", "lr = 4.9e-324\n")

# llama2c: u32 L, model.bin's L bytes, then tokenizer.bin (L past the end: the model alone)
model, tk = read("model.bin"), read("tokenizer.bin")
mbpe, tbpe = read("model_bpe.bin"), read("tokenizer_bpe.bin")
both = lambda m, t: struct.pack("<I", len(m)) + m + t
alone = lambda m: struct.pack("<I", 0xFFFFFFFF) + m
put("llama2c", "model_and_tokenizer", both(model, tk))
put("llama2c", "model_alone", alone(model))
put("llama2c", "bpe_model_and_tokenizer", both(mbpe, tbpe))
put("llama2c", "edge_empty", b"")
put("llama2c", "edge_header_only", alone(model[:28]))
put("llama2c", "edge_model_cut", alone(model[:-4]))
put("llama2c", "edge_model_nan", alone(model[:100] + struct.pack("<f", float("nan")) + model[104:]))
put("llama2c", "edge_tokenizer_empty", both(model, b""))
put("llama2c", "edge_tokenizer_cut", both(model, tk[:-3]))
put("llama2c", "edge_tokenizer_extra", both(model, tk + b"\0\0\0\0"))
put("llama2c", "edge_tokenizer_negative_len", both(model, tk[:4] + b"\0\0\0\0" + struct.pack("<i", -5) + tk[12:]))
# llama2c_tok: tokenizer.bin alone (the exports above, and llama2.c's own layout: "<0xXX>" bytes, scored merges)
def l2c(pieces, scores):
    return struct.pack("<i", max(map(len, pieces))) + b"".join(struct.pack("<fi", s, len(p)) + p for p, s in zip(pieces, scores))
spm = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [b"<0x%02X>" % b for b in range(256)]
merges = [b" ", b"e", b"t", b"h", b"a", b"th", b" t", b"he", b" th", b"the", b" the", b"\xc3\xa9", b"caf", b"caf\xc3\xa9"]
sp = l2c(spm + merges, [0.0] * 259 + [-float(k) for k in range(len(merges))])
put("llama2c_tok", "bytes_export", tk)
put("llama2c_tok", "bpe_export", tbpe)
put("llama2c_tok", "sentencepiece_layout", sp)
put("llama2c_tok", "edge_empty", b"")
put("llama2c_tok", "edge_header_only", sp[:4])
put("llama2c_tok", "edge_cut", sp[:-3])
put("llama2c_tok", "edge_huge_length", sp[:4] + struct.pack("<fi", 0, 2**31 - 1) + sp[12:])
put("llama2c_tok", "edge_nan_score", sp[:4] + struct.pack("<f", float("nan")) + sp[8:])
put("llama2c_tok", "edge_byte_wrong", sp.replace(b"<0x41>", b"<0x4Z>"))
put("llama2c_tok", "edge_max_len_small", struct.pack("<i", 2) + sp[4:])
put("llama2c_tok", "edge_specials_only", sp[:4 + 13 + 13 + 14])
# llama2c: a zero model of sp's 273 ids with llama2.c's own tokenizer layout (pieces with scores)
def zero_llama(dim, hidden, layers, heads, kv, vocab, seq):
    hd = dim // heads
    floats = dim * (2 * dim + 2 * kv * hd + 3 * hidden + 2) * layers + dim * (abs(vocab) + 1) + seq * hd
    return struct.pack("<7i", dim, hidden, layers, heads, kv, vocab, seq) + bytes(4 * floats)
put("llama2c", "sentencepiece_layout", both(zero_llama(8, 8, 1, 2, 2, len(spm + merges), 4), sp))
hdr = list(struct.unpack("<7i", model[:28]))
for name, k, v in [("edge_vocab_min", 5, -2**31), ("edge_heads_zero", 3, 0), ("edge_huge_dims", 0, 2**31 - 1),
                   ("edge_layers_negative", 2, -1), ("edge_kv_heads_over", 4, 7)]:
    h2 = hdr[:]
    h2[k] = v
    put("llama2c", name, alone(struct.pack("<7i", *h2) + model[28:]))
PY
# hf: a flag byte (bit 0: ids-only), then u32-length-prefixed config.json, model.safetensors,
# tokenizer.json, model.safetensors.index.json, shard.safetensors, vocab.json, merges.txt
python3 - "$corpus" "$work" <<'PY'
import json, os, struct, sys
corpus, work = sys.argv[1], sys.argv[2]
def put(name, data):
    with open(os.path.join(corpus, "hf", name), "wb") as f:
        f.write(data)
def rd(*p):
    with open(os.path.join(work, *p), "rb") as f:
        return f.read()
def pack(flag, *files):
    return bytes([flag]) + b"".join(struct.pack("<I", len(x)) + x for x in files)
gcfg, gmodel, gtok = rd("hf_gpt", "config.json"), rd("hf_gpt", "model.safetensors"), rd("hf_gpt", "tokenizer.json")
lcfg, lmodel = rd("hf_llama", "config.json"), rd("hf_llama", "model.safetensors")
tj = json.loads(gtok)
vocab = json.dumps(tj["model"]["vocab"], ensure_ascii=False).encode()
merges = ("#version: 0.2\n" + "".join(m + "\n" for m in tj["model"]["merges"])).encode()
names = list(json.loads(gmodel[8:8 + struct.unpack("<Q", gmodel[:8])[0]]))
index = json.dumps({"weight_map": {n: "shard.safetensors" for n in names if n != "__metadata__"}}).encode()
put("gpt_tokenizer_json", pack(0, gcfg, gmodel, gtok))
put("gpt_vocab_merges", pack(0, gcfg, gmodel, b"", b"", b"", vocab, merges))
put("gpt_sharded", pack(0, gcfg, b"", gtok, index, gmodel))
put("llama_ids_only", pack(1, lcfg, lmodel))
put("edge_empty", b"")
put("edge_config_only", pack(1, gcfg))
put("edge_huge_llama", pack(1, lcfg.replace(b'"hidden_size":4', b'"hidden_size":16777216'), lmodel))
put("edge_model_type", pack(1, gcfg.replace(b'"gpt2"', b'"mistral"'), gmodel))
put("edge_huge_layers_gpt", pack(0, gcfg.replace(b'"n_layer":1,', b'"n_layer":65536,'), gmodel, gtok))
put("edge_huge_layers_llama", pack(1, lcfg.replace(b'"num_hidden_layers":1,', b'"num_hidden_layers":65536,'), lmodel))
put("edge_config_bom", pack(0, b"\xef\xbb\xbf" + gcfg, gmodel, gtok))
put("edge_config_trailing", pack(0, gcfg.replace(b'"use_cache":true,', b'"use_cache":true,"x":{}}{'), gmodel, gtok))
put("gpt_config_repeated_keys", pack(0, gcfg.replace(b'{"architectures"', b'{"n_layer":7,"tapegrad":{"bias":"true",'
                                                     b'"bias":"false"},"architectures"'), gmodel, gtok))
# a chain of merges "aa", "aaa", ... (each piece's merge found by tiktoken's rule: formats/gpt2.c)
chain = json.loads(gtok)
ids = {k: v for k, v in chain["model"]["vocab"].items() if v < 256}
ids.update({"a" * n: 254 + n for n in range(2, 8)})
ids["<|endoftext|>"] = 262
chain["model"]["vocab"], chain["model"]["merges"] = ids, ["a" * (n - 1) + " a" for n in range(2, 8)]
put("gpt_merge_chain", pack(0, gcfg, gmodel, json.dumps(chain, ensure_ascii=False).encode()))
# files that are not regular files (fuzz_hf.c: bit k + 1 of the first byte; length 0 a directory, 1 a pipe,
# 2 a link to /dev/zero)
def odd(flag, files, k, stand_in):
    files = list(files) + [b""] * (k + 1 - len(files))
    files[k] = stand_in
    return pack(flag | 1 << (k + 1), *files)
put("edge_config_pipe", odd(0, [gcfg, gmodel, gtok], 0, b"p"))
put("edge_model_dir", odd(0, [gcfg, gmodel, gtok], 1, b""))
put("edge_model_devzero", odd(0, [gcfg, gmodel, gtok], 1, b"zz"))
put("edge_tokenizer_pipe", odd(0, [gcfg, gmodel, gtok], 2, b"p"))
put("edge_shard_pipe", odd(0, [gcfg, b"", gtok, index, gmodel], 4, b"p"))
put("llama_rope_old_spelling", pack(1, lcfg.replace(b'"rope_permuted_from"', b'"rope"'), lmodel))
put("edge_rope_permuted_bad", pack(1, lcfg.replace(b'"rope_permuted_from":"interleaved"',
                                                   b'"rope_permuted_from":"halves"'), lmodel))
put("edge_index_escape", pack(1, gcfg, b"", b"", b'{"weight_map": {"transformer.wte.weight": "../x"}}', gmodel))
put("edge_tokenizer_cut", pack(0, gcfg, gmodel, gtok[:len(gtok) // 2]))
put("edge_merges_reordered", pack(0, gcfg, gmodel, b"", b"", b"", vocab,
                                 b"#version: 0.2\n" + b"\n".join(reversed(merges.split(b"\n")[1:]))))
# the other tokenizer.json forms: each kind export writes, and a Llama's as transformers writes it
put("llama_llama2c_bytes", pack(0, lcfg, lmodel, rd("hf_llama", "tokenizer.json")))
bcfg, bmodel = rd("hf_llama_bpe", "config.json"), rd("hf_llama_bpe", "model.safetensors")
put("llama_bpe", pack(0, bcfg, bmodel, rd("hf_llama_bpe", "tokenizer.json")))
put("gpt_bytes", pack(0, rd("hf_gpt_bytes", "config.json"), rd("hf_gpt_bytes", "model.safetensors"),
                      rd("hf_gpt_bytes", "tokenizer.json")))
U = "\u2581"
sp = {"<unk>": 0, "<s>": 1, "</s>": 2}
sp.update({"<0x%02X>" % b: 3 + b for b in range(256)})
for p in [U, "a", "b", U + "a", "ab", U + "ab", "c", U + "c"]:
    sp[p] = len(sp)
spm = {"version": "1.0", "added_tokens": [{"id": i, "content": c, "special": True} for i, c in
                                          enumerate(["<unk>", "<s>", "</s>"])],
       "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": U},
                                                          {"type": "Replace", "pattern": {"String": " "}, "content": U}]},
       "pre_tokenizer": None,
       "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                                   {"Sequence": {"id": "A", "type_id": 0}}],
                          "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
       "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "byte_fallback": True, "fuse_unk": True,
                 "vocab": sp, "merges": [U + " a", "a b", U + "a b", U + " ab", U + " c"]}}
put("llama_spm", pack(0, bcfg, bmodel, json.dumps(spm, ensure_ascii=False).encode()))
meta = dict(spm, normalizer=None, pre_tokenizer={"type": "Metaspace", "replacement": U, "prepend_scheme": "first",
                                                 "split": False})
put("llama_spm_metaspace", pack(0, bcfg, bmodel, json.dumps(meta, ensure_ascii=False).encode()))
cut = dict(spm, model=dict(spm["model"], merges=[U + " a", "a b", U + "a b"]))
put("edge_spm_split_unlisted", pack(0, bcfg, bmodel, json.dumps(cut, ensure_ascii=False).encode()))
PY
# checkpoint: real ones edited in one way each (metadata set or dropped, a tensor dropped or a value changed)
python3 - "$corpus" <<'PY'
import json, math, os, struct, sys
d = os.path.join(sys.argv[1], "checkpoint")
def load(name):
    with open(os.path.join(d, name), "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    meta = h.pop("__metadata__", {})
    ts = {k: (v["dtype"], v["shape"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in h.items()}
    return meta, ts
def save(name, meta, ts, cut=None):
    hdr, data = {"__metadata__": meta}, b""
    for k, (dt, shape, raw) in ts.items():
        hdr[k] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(hdr).encode()
    out = struct.pack("<Q", len(h)) + h + data
    with open(os.path.join(d, name), "wb") as f:
        f.write(out[:cut] if cut else out)
def edit(src, name, set_meta=None, drop=(), value=None):
    meta, ts = load(src)
    meta.update(set_meta or {})
    for k in drop:
        meta.pop(k, None); ts.pop(k, None)
    if value:   # (tensor, element, new value) in the tensor's dtype
        k, i, x = value
        dt, shape, raw = ts[k]
        fmt, size = ("<f", 4) if dt == "F32" else ("<d", 8)
        ts[k] = (dt, shape, raw[:i * size] + struct.pack(fmt, x) + raw[(i + 1) * size:])
    save(name, meta, ts)
g, m, e = "gpt_last.safetensors", "gpt_muon_last.safetensors", "gpt_ema_last.safetensors"
open(os.path.join(d, "edge_empty"), "wb").close()
with open(os.path.join(d, g), "rb") as f:
    whole = f.read()
with open(os.path.join(d, "edge_cut"), "wb") as f:
    f.write(whole[:len(whole) - 7])
edit(g, "edge_optimizer_steps", {"optimizer.steps": "5"})
edit(g, "edge_step_negative", {"train.step": "-1", "optimizer.steps": "-1"})
edit(g, "edge_rng", {"train.data_rng": "123"})
edit(g, "edge_best_nan", {"train.best_val": "nan"})
edit(g, "edge_windows_negative", {"train.windows": "-4"})
edit(g, "edge_no_dropout_rng", drop=["train.dropout_rng"])
edit(g, "edge_v_negative", value=("optimizer.v", 3, -1.0))
edit(g, "edge_m_nan", value=("optimizer.m", 0, math.nan))
edit(g, "edge_weight_inf", value=("transformer.wte.weight", 2, math.inf))
edit(g, "edge_weights_only", drop=["optimizer.m"])
edit(g, "edge_n_layer_huge", {"n_layer": "65536"})
edit(g, "edge_vocab_short", {"vocab": "10,32,97"})
edit(g, "edge_f64_run", {"train.dtype": "f64"})
meta, ts = load(g)
dt, shape, raw = ts["transformer.wte.weight"]
ts["lm_head.weight"] = (dt, shape, raw[:-4] + struct.pack("<f", 1.5))   # a tied head that is not the embedding
save("edge_tied_head_differs", meta, ts)
edit(e, "edge_ema_decay_missing", drop=["ema.decay"])
edit(e, "edge_ema_decay_other", {"ema.decay": "0.5"})
edit(e, "edge_ema_decay_nan", {"ema.decay": "nan"})
edit(e, "edge_ema_nan", value=("ema.values", 1, math.nan))
meta, ts = load(e)
dt, shape, raw = ts["ema.values"]
ts["ema.values"] = (dt, [shape[0] - 1], raw[:-4])
save("edge_ema_short", meta, ts)
edit(e, "edge_ema_dropped", drop=["ema.values"])
edit(m, "edge_muon_steps", {"muon.steps": "1"})
edit(m, "edge_muon_nan", value=("muon.momentum", 0, math.nan))
edit(m, "edge_muon_dropped", drop=["muon.momentum"])
meta, ts = load(m)
dt, shape, raw = ts["muon.momentum"]
ts["muon.momentum"] = (dt, [shape[0] + 1], raw + raw[:4])
save("edge_muon_long", meta, ts)
PY
du -sh "$corpus"; for d in "$corpus"/*/; do echo "$(basename "$d"): $(ls "$d" | wc -l) files, $(du -sb "$d" | cut -f1) bytes"; done
