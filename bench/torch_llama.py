"""PyTorch reference for tapegrad's Llama (llama2.c's model.py semantics).

Model (config dict: n_layer, n_head, n_kv_head, n_embd, hidden_dim,
block_size, vocab_size, rope_theta, norm_eps, tied, rope, dropout;
C = n_embd, H = n_head, Hkv = n_kv_head, dh = C / H, G = H / Hkv):
    x = tok_embeddings[idx]                           (B,T,C), then dropout
        (no position embedding: RoPE carries the positions)
    per layer:  h = x + attention(attention_norm(x))
                x = h + feed_forward(ffn_norm(h))
      attention: q = wq x (B,T,H,dh), k = wk x, v = wv x (B,T,Hkv,dh);
                 RoPE on q and k: the pair i of a head at position p turns
                 by p * theta^(-2i/dh); query head h reads kv head h // G;
                 causal softmax(q k^T / sqrt(dh)) v; wo; no biases anywhere
      feed_forward: w2(silu(w1 x) * w3 x), w1 and w3 (hidden, C), w2 (C, hidden)
    RMSNorm: x * rsqrt(mean(x^2) + eps) * weight (in the model's dtype)
    logits = norm(x) @ output^T; output is tok_embeddings when tied.
Two pairings of the RoPE coordinates (config "rope"):
    "interleaved": (x[2i], x[2i+1]), Meta's Llama and llama2.c, written with
                   real cos/sin on the (..., dh/2, 2) view;
    "halves":      (x[i], x[i + dh/2]), Hugging Face's, written as HF
                   does: x cos + rotate_half(x) sin, cos/sin repeated twice.
The speedrun options (issue 23; their defaults are the model above):
    mlp="relu2" | "gelu": feed_forward.c_proj(act(feed_forward.c_fc x)),
        hidden_dim wide, act relu(.)^2 or GELU (gelu="erf" | "tanh")
    qk_norm: each head's q and k divided by sqrt(mean over dh + norm_eps)
        (no weight), before RoPE
    zero_init_proj: init_weights zeroes wo and w2 (c_proj)
    logit_softcap s > 0: logits = s tanh(logits / s)
Parameter names are model.py's state_dict names: tok_embeddings.weight,
layers.<i>.attention.{wq,wk,wv,wo}.weight,
layers.<i>.feed_forward.{w1,w2,w3}.weight, layers.<i>.attention_norm.weight,
layers.<i>.ffn_norm.weight, norm.weight, and output.weight when not tied.

Also: safetensors weights with the config in __metadata__ (tiny_gpt's
keys: arch=llama, ..., rope=interleaved|halves, tied=true|false,
bias=false) and the loss (mean cross-entropy over targets != -1). The
training recipe (nanoGPT's AdamW grouping, clipping, one-batch gradients
and steps) is torch_common.py's, shared with torch_gpt.py.
"""

import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io as st  # noqa: E402
import torch_common as tc  # noqa: E402

INT_KEYS = ("n_layer", "n_head", "n_kv_head", "n_embd", "hidden_dim", "block_size", "vocab_size")
ROPES = ("interleaved", "halves")


def make_config(n_layer, n_head, n_kv_head, n_embd, hidden_dim, block_size, vocab_size, tied=True,
                rope="interleaved", rope_theta=10000.0, norm_eps=1e-5, dropout=0.0, mlp="swiglu", gelu="erf",
                qk_norm=False, zero_init_proj=False, logit_softcap=0.0):
    return dict(n_layer=int(n_layer), n_head=int(n_head), n_kv_head=int(n_kv_head), n_embd=int(n_embd),
                hidden_dim=int(hidden_dim), block_size=int(block_size), vocab_size=int(vocab_size),
                tied=bool(tied), rope=str(rope), rope_theta=float(rope_theta), norm_eps=float(norm_eps),
                dropout=float(dropout), mlp=str(mlp), gelu=str(gelu), qk_norm=bool(qk_norm),
                zero_init_proj=bool(zero_init_proj), logit_softcap=float(logit_softcap))


def check_config(cfg):
    for k in INT_KEYS:
        if cfg[k] < 1:
            raise ValueError("config %s must be >= 1, got %r" % (k, cfg[k]))
    if cfg["n_embd"] % cfg["n_head"] or (cfg["n_embd"] // cfg["n_head"]) % 2:
        raise ValueError("n_embd %d must be n_head %d times an even head size" % (cfg["n_embd"], cfg["n_head"]))
    if cfg["n_head"] % cfg["n_kv_head"]:
        raise ValueError("n_kv_head %d must divide n_head %d" % (cfg["n_kv_head"], cfg["n_head"]))
    if cfg["rope"] not in ROPES:
        raise ValueError("rope must be one of %s, got %r" % (ROPES, cfg["rope"]))
    if not cfg["rope_theta"] > 1 or not cfg["norm_eps"] > 0:
        raise ValueError("rope_theta must be > 1 and norm_eps > 0")
    if cfg.get("mlp", "swiglu") not in ("swiglu", "gelu", "relu2") or cfg.get("gelu", "erf") not in ("erf", "tanh"):
        raise ValueError("mlp must be swiglu, gelu or relu2 and gelu erf or tanh, got %r, %r"
                         % (cfg.get("mlp"), cfg.get("gelu")))


class RMSNorm(nn.Module):
    def __init__(self, c, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(c))

    def forward(self, x):
        ms = (x * x).mean(dim=-1, keepdim=True)
        return x * torch.rsqrt(ms + self.eps) * self.weight


def rope_angles(head_dim, t, theta, dtype):
    """cos, sin of p * theta^(-2i/dh) for p < t, i < dh/2: each (t, dh/2),
    computed in dtype (float32 as llama2.c: float frequencies and angles)."""
    wdt = torch.float32 if dtype == torch.float32 else torch.float64
    two_i = torch.arange(0, head_dim, 2, dtype=wdt)
    inv = 1.0 / (torch.tensor(theta, dtype=wdt) ** (two_i / head_dim))   # (dh/2)
    ang = torch.arange(t, dtype=wdt)[:, None] * inv[None, :]             # (t, dh/2)
    return torch.cos(ang).to(dtype), torch.sin(ang).to(dtype)


def rope_interleaved(x, cos, sin):
    """x (B,T,nh,dh); pairs (2i, 2i+1) of each head rotated; cos/sin (T, dh/2)."""
    b, t, nh, dh = x.shape
    pairs = x.reshape(b, t, nh, dh // 2, 2)
    re, im = pairs[..., 0], pairs[..., 1]                       # (B,T,nh,dh/2)
    c = cos.view(1, t, 1, dh // 2)
    s = sin.view(1, t, 1, dh // 2)
    out = torch.stack((re * c - im * s, re * s + im * c), dim=-1)
    return out.reshape(b, t, nh, dh)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope_halves(x, cos, sin):
    """Hugging Face's pairing: x cos + rotate_half(x) sin, cos/sin (T, dh/2)
    repeated to (T, dh)."""
    t = x.shape[1]
    c = torch.cat((cos, cos), dim=-1).view(1, t, 1, -1)
    s = torch.cat((sin, sin), dim=-1).view(1, t, 1, -1)
    return x * c + rotate_half(x) * s


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        c, self.nh, self.nkv = cfg["n_embd"], cfg["n_head"], cfg["n_kv_head"]
        self.dh = c // self.nh
        self.rope = rope_interleaved if cfg["rope"] == "interleaved" else rope_halves
        self.wq = nn.Linear(c, self.nh * self.dh, bias=False)
        self.wk = nn.Linear(c, self.nkv * self.dh, bias=False)
        self.wv = nn.Linear(c, self.nkv * self.dh, bias=False)
        self.wo = nn.Linear(self.nh * self.dh, c, bias=False)
        self.attn_dropout = nn.Dropout(cfg["dropout"])
        self.resid_dropout = nn.Dropout(cfg["dropout"])
        self.qk_eps = cfg["norm_eps"] if cfg.get("qk_norm") else 0.0
        t = cfg["block_size"]
        self.register_buffer("causal", torch.ones(t, t, dtype=torch.bool).tril(), persistent=False)

    def qk(self, x):
        """QK norm: each head's dh values to RMS 1 (no weight), before RoPE."""
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.qk_eps) if self.qk_eps else x

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.rope(self.qk(self.wq(x).view(b, t, self.nh, self.dh)), cos, sin)
        k = self.rope(self.qk(self.wk(x).view(b, t, self.nkv, self.dh)), cos, sin)
        v = self.wv(x).view(b, t, self.nkv, self.dh)
        g = self.nh // self.nkv
        if g > 1:   # query head h reads kv head h // g
            k = k.repeat_interleave(g, dim=2)
            v = v.repeat_interleave(g, dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)   # (B,H,T,dh)
        s = (q @ k.transpose(-2, -1)) / math.sqrt(self.dh)                   # (B,H,T,T)
        s = s.masked_fill(~self.causal[:t, :t], float("-inf"))
        a = self.attn_dropout(F.softmax(s, dim=-1))
        y = (a @ v).transpose(1, 2).reshape(b, t, self.nh * self.dh)
        return self.resid_dropout(self.wo(y))


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        c, hid = cfg["n_embd"], cfg["hidden_dim"]
        self.kind = cfg.get("mlp", "swiglu")
        self.dropout = nn.Dropout(cfg["dropout"])
        if self.kind != "swiglu":   # c_fc, c_proj: ReLU squared or GELU
            self.c_fc = nn.Linear(c, hid, bias=False)
            self.c_proj = nn.Linear(hid, c, bias=False)
            self.gelu = nn.GELU(approximate="tanh" if cfg.get("gelu") == "tanh" else "none")
            return
        self.w1 = nn.Linear(c, hid, bias=False)
        self.w2 = nn.Linear(hid, c, bias=False)
        self.w3 = nn.Linear(c, hid, bias=False)

    def forward(self, x):
        if self.kind == "relu2":
            return self.dropout(self.c_proj(F.relu(self.c_fc(x)).square()))
        if self.kind == "gelu":
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))
        return self.dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attention = Attention(cfg)
        self.feed_forward = FeedForward(cfg)
        self.attention_norm = RMSNorm(cfg["n_embd"], cfg["norm_eps"])
        self.ffn_norm = RMSNorm(cfg["n_embd"], cfg["norm_eps"])

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        check_config(cfg)
        self.cfg = dict(cfg)
        c = cfg["n_embd"]
        self.tok_embeddings = nn.Embedding(cfg["vocab_size"], c)
        self.dropout = nn.Dropout(cfg["dropout"])
        self.layers = nn.ModuleList([Block(cfg) for _ in range(cfg["n_layer"])])
        self.norm = RMSNorm(c, cfg["norm_eps"])
        # untied: a parameter of its own, registered last (tapegrad's order);
        # tied: the head is tok_embeddings.weight itself
        self.output = None if cfg["tied"] else nn.Linear(c, cfg["vocab_size"], bias=False)

    def head_weight(self):
        return self.tok_embeddings.weight if self.output is None else self.output.weight

    def init_weights(self, generator=None):
        """model.py's init: normal(0, 0.02) for the embedding and every
        linear, 0.02/sqrt(2 n_layer) for w3 and wo, norm weights 1."""
        scaled = 0.02 / math.sqrt(2 * self.cfg["n_layer"])
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                elif name.endswith("w3.weight") or name.endswith("wo.weight") or name.endswith("c_proj.weight"):
                    p.normal_(0.0, scaled, generator=generator)
                else:
                    p.normal_(0.0, 0.02, generator=generator)
                if self.cfg.get("zero_init_proj") and name.endswith(("wo.weight", "w2.weight", "c_proj.weight")):
                    p.zero_()
        return self

    def forward(self, idx, targets=None):
        b, t = idx.shape
        if t > self.cfg["block_size"]:
            raise ValueError("sequence length %d exceeds block_size %d" % (t, self.cfg["block_size"]))
        x = self.dropout(self.tok_embeddings(idx))
        cos, sin = rope_angles(self.cfg["n_embd"] // self.cfg["n_head"], t, self.cfg["rope_theta"], x.dtype)
        for blk in self.layers:
            x = blk(x, cos, sin)
        logits = F.linear(self.norm(x), self.head_weight())   # (B,T,V)
        s = self.cfg.get("logit_softcap", 0.0)
        if s > 0:
            logits = s * torch.tanh(logits / s)
        loss = None if targets is None else F.cross_entropy(
            logits.reshape(-1, logits.size(-1)), targets.reshape(-1).long(), ignore_index=-1)
        return logits, loss


def param_names(model):
    """Parameter names in state_dict order (output.weight only when untied)."""
    return [n for n, _ in model.named_parameters()]


def num_params(cfg):
    """tg_llama_num_params' closed form."""
    c, v, hid = cfg["n_embd"], cfg["vocab_size"], cfg["hidden_dim"]
    ckv = cfg["n_kv_head"] * (c // cfg["n_head"])
    mats = 3 if cfg.get("mlp", "swiglu") == "swiglu" else 2
    return v * c * (1 if cfg["tied"] else 2) + c + cfg["n_layer"] * c * (2 * c + 2 * ckv + mats * hid + 2)


# ---- safetensors -----------------------------------------------------------

def config_to_meta(cfg):
    meta = {k: str(int(cfg[k])) for k in INT_KEYS}
    meta.update(arch="llama", rope_theta=repr(float(cfg["rope_theta"])), norm_eps=repr(float(cfg["norm_eps"])),
                tied="true" if cfg["tied"] else "false", rope=cfg["rope"], dropout=repr(float(cfg["dropout"])),
                bias="false")
    if cfg.get("mlp", "swiglu") != "swiglu":
        meta["mlp"] = cfg["mlp"]
        if cfg["mlp"] == "gelu":
            meta["gelu"] = cfg.get("gelu", "erf")
    for k in ("qk_norm", "zero_init_proj"):
        if cfg.get(k):
            meta[k] = "true"
    if cfg.get("logit_softcap", 0.0) > 0:
        meta["logit_softcap"] = repr(float(cfg["logit_softcap"]))
    return meta


def config_from_meta(meta, path="<file>"):
    if meta.get("arch") != "llama":
        raise ValueError("%s: __metadata__ arch is %r, not 'llama'" % (path, meta.get("arch")))
    cfg = {}
    for k in INT_KEYS:
        try:
            cfg[k] = int(meta[k])
        except KeyError:
            raise ValueError("%s: __metadata__ lacks %r" % (path, k))
        except ValueError:
            raise ValueError("%s: __metadata__ %s=%r is not an integer" % (path, k, meta[k]))
    for k in ("rope_theta", "norm_eps"):
        if k not in meta:
            raise ValueError("%s: __metadata__ lacks %r" % (path, k))
        cfg[k] = float(meta[k])
    if meta.get("tied") not in ("true", "false"):
        raise ValueError("%s: __metadata__ tied must be \"true\" or \"false\", got %r" % (path, meta.get("tied")))
    cfg["tied"] = meta["tied"] == "true"
    cfg["rope"] = meta.get("rope", "interleaved")
    cfg["dropout"] = float(meta.get("dropout", "0"))
    if meta.get("bias", "false") != "false":
        raise ValueError("%s: a Llama has no biases (bias=%r)" % (path, meta["bias"]))
    cfg["mlp"] = meta.get("mlp", "swiglu")
    cfg["gelu"] = meta.get("gelu", "erf")
    cfg["qk_norm"] = meta.get("qk_norm", "false") == "true"
    cfg["zero_init_proj"] = meta.get("zero_init_proj", "false") == "true"
    cfg["logit_softcap"] = float(meta.get("logit_softcap", "0"))
    check_config(cfg)
    return cfg


def state_to_numpy(model, dtype=np.float64, with_head=False):
    """{name: array}; with_head also writes output.weight for a tied model."""
    out = {n: p.detach().cpu().numpy().astype(dtype) for n, p in model.named_parameters()}
    if with_head and model.cfg["tied"]:
        out["output.weight"] = out["tok_embeddings.weight"]
    return out


def save_model(model, path, dtype="F64", with_head=False, extra_meta=None):
    npdt = {"F32": np.float32, "F64": np.float64}[dtype]
    meta = config_to_meta(model.cfg)
    meta.update(extra_meta or {})
    st.write(path, state_to_numpy(model, npdt, with_head), meta)


def load_weights(model, tensors, path="<file>"):
    """Copies model.py-named arrays into model. Every parameter must be
    present with its shape; a tied model accepts an output.weight only if
    it equals tok_embeddings.weight."""
    tied = ("output.weight", "tok_embeddings.weight") if model.cfg["tied"] else None
    return tc.load_weights(model, tensors, path, tied=tied)


def load_model(path, dtype=torch.float64, dropout=None):
    tensors, meta = st.read(path)
    cfg = config_from_meta(meta, path)
    if dropout is not None:
        cfg["dropout"] = float(dropout)
    return load_weights(Llama(cfg).to(dtype), tensors, path)
