#!/usr/bin/python3
"""Parity of a Hugging Face directory that `tiny_gpt export --format hf`
writes against transformers' semantics, with a PyTorch GPT-2 and Llama
written here from transformers' modeling code (transformers itself is not
needed): GPT-2's Conv1D (x @ W + b with W stored (in, out)), its
LayerNorm with layer_norm_epsilon, the activation named by
activation_function ("gelu": the exact erf GELU; "gelu_new": the tanh
form), the tied head; LlamaRMSNorm (x * rsqrt(mean(x^2) + eps) * w),
RoPE by rotate_half with inv_freq = theta^(-2i/d) over cat(freqs, freqs),
repeat_kv for grouped-query attention, the SiLU-gated MLP, lm_head or the
tied embedding.

    parity_hf.py BINARY [--keep DIR]

For each config (GPT with and without biases, Llama with interleaved and
halves RoPE pairs, MHA, GQA and MQA, tied and untied) random f64 weights
under tapegrad's names are written as a checkpoint, exported with
    BINARY export --ckpt W --format hf --out DIR
and the directory alone (config.json, model.safetensors) is run by the
reference in float64; tapegrad's logits come from
    BINARY eval --init W --batch B --dtype f64 --dump-logits L
and must agree: max|logits - ref| <= 1e-10 (1 + max|ref|). Then
    BINARY import --format hf --model DIR --out W2 --ids-only
must give back the same tensors bit for bit. A GPT trained with
--gelu tanh is exported as activation_function "gelu_new" (GPT-2's
published value) and run with the tanh form; for the erf GPTs the same
directory with "gelu_new" is run too, and must differ from tapegrad's
logits (so the reference reads the field the export wrote; the figure
printed is what the choice of GELU changes for these weights).
Exit 0 if all pass, 1 if any fails, 77 if torch is not importable (1
under CI=true).
"""

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parity_common as pc  # noqa: E402  (exits 77 without torch/numpy, 1 under CI)
import numpy as np  # noqa: E402
import torch  # noqa: E402
import safetensors_io as st  # noqa: E402

TOL = 1e-10

# name, family, config
CONFIGS = [
    ("gpt_bias", "gpt", dict(n_layer=2, n_head=3, n_embd=12, block_size=9, vocab_size=37, bias=True)),
    ("gpt_nobias", "gpt", dict(n_layer=1, n_head=2, n_embd=8, block_size=7, vocab_size=29, bias=False)),
    ("gpt_tanh_gelu", "gpt", dict(n_layer=2, n_head=2, n_embd=8, block_size=7, vocab_size=31, bias=True, gelu="tanh")),
    ("llama_interleaved_gqa_untied", "llama",
     dict(n_layer=2, n_head=4, n_kv_head=2, n_embd=32, hidden_dim=40, block_size=9, vocab_size=41,
          rope_theta=10000.0, norm_eps=1e-5, tied=False, rope="interleaved")),
    ("llama_halves_mha_tied", "llama",
     dict(n_layer=1, n_head=2, n_kv_head=2, n_embd=16, hidden_dim=24, block_size=8, vocab_size=33,
          rope_theta=500000.0, norm_eps=1e-6, tied=True, rope="halves")),
    ("llama_interleaved_mqa_tied", "llama",
     dict(n_layer=2, n_head=4, n_kv_head=1, n_embd=24, hidden_dim=20, block_size=6, vocab_size=30,
          rope_theta=10000.0, norm_eps=1e-5, tied=True, rope="interleaved")),
]


# ---- random checkpoints under tapegrad's names ----------------------------------

def gpt_weights(c, rng):
    C, V = c["n_embd"], c["vocab_size"]
    w = {"transformer.wte.weight": rng.normal(0, 0.3, (V, C)),
         "transformer.wpe.weight": rng.normal(0, 0.3, (c["block_size"], C))}
    for i in range(c["n_layer"]):
        p = "transformer.h.%d." % i
        for name, shape in [("ln_1", (C,)), ("attn.c_attn", (3 * C, C)), ("attn.c_proj", (C, C)),
                            ("ln_2", (C,)), ("mlp.c_fc", (4 * C, C)), ("mlp.c_proj", (C, 4 * C))]:
            ln = name.startswith("ln")
            w[p + name + ".weight"] = 1 + rng.normal(0, 0.1, shape) if ln else rng.normal(0, 0.3, shape)
            if c["bias"]:
                w[p + name + ".bias"] = rng.normal(0, 0.1, shape[:1])
    w["transformer.ln_f.weight"] = 1 + rng.normal(0, 0.1, (C,))
    if c["bias"]:
        w["transformer.ln_f.bias"] = rng.normal(0, 0.1, (C,))
    meta = {"arch": "gpt", "n_layer": str(c["n_layer"]), "n_head": str(c["n_head"]), "n_embd": str(C),
            "block_size": str(c["block_size"]), "vocab_size": str(V), "bias": "true" if c["bias"] else "false",
            "gelu": c.get("gelu", "erf"), "vocab": "ids:%d" % V}
    return w, meta


def llama_weights(c, rng):
    C, V, Hd = c["n_embd"], c["vocab_size"], c["hidden_dim"]
    kv = c["n_kv_head"] * (C // c["n_head"])
    w = {"tok_embeddings.weight": rng.normal(0, 0.3, (V, C))}
    for i in range(c["n_layer"]):
        p = "layers.%d." % i
        for name, shape in [("attention.wq", (C, C)), ("attention.wk", (kv, C)), ("attention.wv", (kv, C)),
                            ("attention.wo", (C, C)), ("feed_forward.w1", (Hd, C)), ("feed_forward.w2", (C, Hd)),
                            ("feed_forward.w3", (Hd, C))]:
            w[p + name + ".weight"] = rng.normal(0, 0.3, shape)
        w[p + "attention_norm.weight"] = 1 + rng.normal(0, 0.1, (C,))
        w[p + "ffn_norm.weight"] = 1 + rng.normal(0, 0.1, (C,))
    w["norm.weight"] = 1 + rng.normal(0, 0.1, (C,))
    if not c["tied"]:
        w["output.weight"] = rng.normal(0, 0.3, (V, C))
    meta = {"arch": "llama", "n_layer": str(c["n_layer"]), "n_head": str(c["n_head"]),
            "n_kv_head": str(c["n_kv_head"]), "n_embd": str(C), "hidden_dim": str(Hd),
            "block_size": str(c["block_size"]), "vocab_size": str(V), "rope_theta": repr(c["rope_theta"]),
            "norm_eps": repr(c["norm_eps"]), "tied": "true" if c["tied"] else "false", "rope": c["rope"],
            "bias": "false", "vocab": "ids:%d" % V}
    return w, meta


# ---- transformers' semantics, from the directory alone ------------------------------

def t(a):
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))


def causal_attention(q, k, v):
    """q, k, v (B, H, T, d): softmax(q k^T / sqrt(d) + causal mask) v."""
    T, d = q.shape[2], q.shape[3]
    s = q @ k.transpose(-1, -2) / math.sqrt(d)
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    s = s.masked_fill(mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def hf_gpt2(cfg, w, idx):
    """GPT2LMHeadModel's forward: Conv1D x @ W + b, W (in, out)."""
    C, H = cfg["n_embd"], cfg["n_head"]
    eps = cfg["layer_norm_epsilon"]
    act = {"gelu": lambda x: torch.nn.functional.gelu(x),
           "gelu_new": lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
           }[cfg["activation_function"]]
    pre = "transformer." if "transformer.wte.weight" in w else ""

    def W(n):
        return t(w[pre + n])

    def conv1d(x, n):
        return x @ W(n + ".weight") + W(n + ".bias")

    def ln(x, n):
        return torch.nn.functional.layer_norm(x, (C,), W(n + ".weight"), W(n + ".bias"), eps)

    B, T = idx.shape
    ids = torch.from_numpy(idx.astype(np.int64))
    h = W("wte.weight")[ids] + W("wpe.weight")[torch.arange(T)]
    for i in range(cfg["n_layer"]):
        p = "h.%d." % i
        qkv = conv1d(ln(h, p + "ln_1"), p + "attn.c_attn")
        q, k, v = qkv.split(C, dim=2)
        heads = [x.view(B, T, H, C // H).transpose(1, 2) for x in (q, k, v)]
        o = causal_attention(*heads).transpose(1, 2).reshape(B, T, C)
        h = h + conv1d(o, p + "attn.c_proj")
        m = act(conv1d(ln(h, p + "ln_2"), p + "mlp.c_fc"))
        h = h + conv1d(m, p + "mlp.c_proj")
    h = ln(h, "ln_f")
    head = W("wte.weight") if "lm_head.weight" not in w or cfg.get("tie_word_embeddings", True) else t(w["lm_head.weight"])
    return (h @ head.T).numpy()


def rotate_half(x):
    d = x.shape[-1] // 2
    return torch.cat((-x[..., d:], x[..., :d]), dim=-1)


def hf_llama(cfg, w, idx):
    """LlamaForCausalLM's forward."""
    C, H, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg.get("head_dim") or C // H
    eps, theta = cfg["rms_norm_eps"], cfg["rope_theta"]

    def W(n):
        return t(w[n])

    def rms(x, n):
        var = x.pow(2).mean(-1, keepdim=True)
        return W(n) * (x * torch.rsqrt(var + eps))

    def lin(x, n):
        return x @ W(n).T

    B, T = idx.shape
    ids = torch.from_numpy(idx.astype(np.int64))
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.int64).double() / d))
    freqs = torch.arange(T).double()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    h = W("model.embed_tokens.weight")[ids]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        x = rms(h, p + "input_layernorm.weight")
        q = lin(x, p + "self_attn.q_proj.weight").view(B, T, H, d).transpose(1, 2)
        k = lin(x, p + "self_attn.k_proj.weight").view(B, T, KV, d).transpose(1, 2)
        v = lin(x, p + "self_attn.v_proj.weight").view(B, T, KV, d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = H // KV   # repeat_kv
        k = k[:, :, None].expand(B, KV, rep, T, d).reshape(B, H, T, d)
        v = v[:, :, None].expand(B, KV, rep, T, d).reshape(B, H, T, d)
        o = causal_attention(q, k, v).transpose(1, 2).reshape(B, T, C)
        h = h + lin(o, p + "self_attn.o_proj.weight")
        x = rms(h, p + "post_attention_layernorm.weight")
        gate = lin(x, p + "mlp.gate_proj.weight")
        h = h + lin(torch.nn.functional.silu(gate) * lin(x, p + "mlp.up_proj.weight"), p + "mlp.down_proj.weight")
    h = rms(h, "model.norm.weight")
    head = "model.embed_tokens.weight" if cfg.get("tie_word_embeddings", True) else "lm_head.weight"
    if not cfg.get("tie_word_embeddings", True) and head not in w:
        raise ValueError("untied, but no lm_head.weight")
    return (h @ W(head).T).numpy()


def run(binary, args):
    r = subprocess.run([binary] + args, capture_output=True, text=True, timeout=300)
    return r.returncode, (r.stdout + r.stderr).strip()


def main():
    args = sys.argv[1:]
    keep = None
    if "--keep" in args:
        keep = args[args.index("--keep") + 1]
        del args[args.index("--keep"):args.index("--keep") + 2]
    if len(args) != 1:
        print(__doc__)
        return 2
    binary = args[0]
    work = keep or tempfile.mkdtemp(prefix="tg_parity_hf_")
    os.makedirs(work, exist_ok=True)
    checks = pc.Checks()
    rng = np.random.default_rng(2026)
    try:
        for name, family, c in CONFIGS:
            w, meta = (gpt_weights if family == "gpt" else llama_weights)(c, rng)
            wpath, bpath = os.path.join(work, name + ".safetensors"), os.path.join(work, name + "_batch.safetensors")
            lpath, dpath = os.path.join(work, name + "_logits.safetensors"), os.path.join(work, name + "_hf")
            st.write(wpath, w, meta)
            B, T = 2, c["block_size"]
            idx, targets = pc.random_batch(c, B, T, rng, 0.0)
            pc.write_batch(bpath, idx, targets, "I32")
            rc, out = run(binary, ["export", "--ckpt", wpath, "--format", "hf", "--out", dpath])
            if rc:
                checks.record(False, name + " export", out)
                continue
            rc, out = run(binary, ["eval", "--init", wpath, "--batch", bpath, "--dtype", "f64", "--dump-logits", lpath])
            if rc:
                checks.record(False, name + " eval", out)
                continue
            got = st.read(lpath)[0]["logits"]
            with open(os.path.join(dpath, "config.json")) as f:
                cfg = json.load(f)
            hw = st.read(os.path.join(dpath, "model.safetensors"))[0]
            ref = (hf_gpt2 if family == "gpt" else hf_llama)(cfg, hw, idx)
            err = float(np.max(np.abs(got - ref)))
            scale = 1 + float(np.max(np.abs(ref)))
            checks.record(got.shape == ref.shape and err <= TOL * scale, name + " logits vs transformers' semantics",
                          "%s: max|diff| %.3g (tolerance %.3g)" % (cfg["architectures"][0], err, TOL * scale))
            if family == "gpt":
                want = "gelu_new" if c.get("gelu") == "tanh" else "gelu"
                checks.record(cfg["activation_function"] == want, name + " activation_function",
                              "%s (want %s)" % (cfg["activation_function"], want))
                if want == "gelu":
                    cfg_new = dict(cfg, activation_function="gelu_new")
                    d_new = float(np.max(np.abs(got - hf_gpt2(cfg_new, hw, idx))))
                    checks.record(0 < d_new < 1e-2 * scale, name + " erf GELU vs GPT-2's gelu_new",
                                  "max|diff| %.3g: what the choice of GELU changes" % d_new)
            # and back
            w2 = os.path.join(work, name + "_back.safetensors")
            rc, out = run(binary, ["import", "--format", "hf", "--model", dpath, "--out", w2, "--ids-only"])
            if rc:
                checks.record(False, name + " import", out)
                continue
            back = st.read(w2)[0]
            same = set(back) == set(w) and all(back[n].dtype == np.float64 and np.array_equal(back[n], w[n])
                                               for n in w)
            checks.record(same, name + " import of the export", "the same %d tensors bit for bit" % len(w)
                          if same else "tensors differ: %s" % sorted(set(back) ^ set(w)))
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return checks.summary()


if __name__ == "__main__":
    sys.exit(main())
