"""PyTorch reference for tapegrad's GPT (GPT-2 / nanoGPT architecture).

Model (config dict: n_layer, n_head, n_embd, block_size, vocab_size,
bias, dropout, gelu; C = n_embd, H = n_head, dh = C / H):
    x = wte[idx] + wpe[0..T-1]                        (B,T,C), then dropout
    per block:  x = x + attn(ln_1(x));  x = x + mlp(ln_2(x))
      attn: q,k,v = split(c_attn(x))  (c_attn weight (3C,C) = [Wq;Wk;Wv])
            per head: softmax(q k^T / sqrt(dh), causal mask) v, then c_proj
      mlp:  c_proj(gelu(c_fc(x)))  with c_fc (4C,C), c_proj (C,4C); gelu the
            exact erf form (nanoGPT), or GPT-2's tanh form with gelu="tanh"
    logits = ln_f(x) @ wte^T                           (tied LM head)
LayerNorm eps 1e-5. bias=False drops every Linear bias and every
LayerNorm bias. Parameter names are nanoGPT's state_dict names.

The speedrun options (issue 23; their defaults are the model above):
    mlp="relu2": c_proj(relu(c_fc(x))^2), 4C wide (modded-nanogpt);
        mlp="swiglu": w2(silu(w1 x) * w3 x), llama2.c's width for C with
        multiple_of 32 (mlp.w1, mlp.w2, mlp.w3)
    qk_norm: each head's q and k divided by sqrt(mean over dh of q^2 + 1e-5)
        (no weight) before the scores
    zero_init_proj: init_weights zeroes attn.c_proj and mlp.c_proj (w2)
    untie_head: lm_head.weight (V,C) is its own parameter, after ln_f
    logit_softcap s > 0: logits = s tanh(logits / s)

Also: loading/saving weights as safetensors (config in __metadata__)
and the loss (mean cross-entropy over targets != -1). The training
recipe (nanoGPT's AdamW grouping, clipping, one-batch gradients and
steps) is torch_common.py's, shared with torch_llama.py.
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

CONFIG_KEYS = ("n_layer", "n_head", "n_embd", "block_size", "vocab_size")


def make_config(n_layer, n_head, n_embd, block_size, vocab_size, bias=True, dropout=0.0, gelu="erf",
                mlp="gelu", qk_norm=False, zero_init_proj=False, untie_head=False, logit_softcap=0.0):
    if gelu not in ("erf", "tanh"):
        raise ValueError("gelu must be erf or tanh, got %r" % gelu)
    if mlp not in ("gelu", "relu2", "swiglu"):
        raise ValueError("mlp must be gelu, relu2 or swiglu, got %r" % mlp)
    return dict(n_layer=int(n_layer), n_head=int(n_head), n_embd=int(n_embd),
                block_size=int(block_size), vocab_size=int(vocab_size),
                bias=bool(bias), dropout=float(dropout), gelu=gelu, mlp=mlp, qk_norm=bool(qk_norm),
                zero_init_proj=bool(zero_init_proj), untie_head=bool(untie_head),
                logit_softcap=float(logit_softcap))


def head_rms_norm(x, eps):
    """x / sqrt(mean(x^2) + eps) over the last axis (a head's dh), no weight."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def swiglu_hidden(c, multiple_of=32):
    """llama2.c's feed-forward width for width c."""
    h = int(2 * (4 * c) / 3)
    return multiple_of * ((h + multiple_of - 1) // multiple_of)


class LayerNorm(nn.Module):
    """LayerNorm over the last dim, eps 1e-5, bias optional."""

    def __init__(self, c, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        c, self.n_head = cfg["n_embd"], cfg["n_head"]
        if c % self.n_head != 0:
            raise ValueError("n_embd %d is not a multiple of n_head %d" % (c, self.n_head))
        self.c_attn = nn.Linear(c, 3 * c, bias=cfg["bias"])
        self.c_proj = nn.Linear(c, c, bias=cfg["bias"])
        self.attn_dropout = nn.Dropout(cfg["dropout"])
        self.resid_dropout = nn.Dropout(cfg["dropout"])
        self.qk_norm = cfg.get("qk_norm", False)
        t = cfg["block_size"]
        self.register_buffer("causal", torch.ones(t, t, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        h = self.n_head
        dh = c // h
        q, k, v = self.c_attn(x).split(c, dim=2)               # each (B,T,C)
        q = q.view(b, t, h, dh).transpose(1, 2)                # (B,H,T,dh)
        k = k.view(b, t, h, dh).transpose(1, 2)
        v = v.view(b, t, h, dh).transpose(1, 2)
        if self.qk_norm:
            q, k = head_rms_norm(q, 1e-5), head_rms_norm(k, 1e-5)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))  # (B,H,T,T)
        s = s.masked_fill(~self.causal[:t, :t], float("-inf"))
        a = self.attn_dropout(F.softmax(s, dim=-1))
        y = (a @ v).transpose(1, 2).contiguous().view(b, t, c)  # (B,T,C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        c = cfg["n_embd"]
        self.kind = cfg.get("mlp", "gelu")
        self.dropout = nn.Dropout(cfg["dropout"])
        if self.kind == "swiglu":
            hid = swiglu_hidden(c)
            self.w1 = nn.Linear(c, hid, bias=cfg["bias"])
            self.w2 = nn.Linear(hid, c, bias=cfg["bias"])
            self.w3 = nn.Linear(c, hid, bias=cfg["bias"])
            return
        self.c_fc = nn.Linear(c, 4 * c, bias=cfg["bias"])
        self.gelu = nn.GELU(approximate="tanh" if cfg.get("gelu") == "tanh" else "none")
        self.c_proj = nn.Linear(4 * c, c, bias=cfg["bias"])

    def forward(self, x):
        if self.kind == "swiglu":
            return self.dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)))
        h = self.c_fc(x)
        h = F.relu(h).square() if self.kind == "relu2" else self.gelu(h)
        return self.dropout(self.c_proj(h))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = LayerNorm(cfg["n_embd"], cfg["bias"])
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = LayerNorm(cfg["n_embd"], cfg["bias"])
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        for k in CONFIG_KEYS:
            if cfg[k] < 1:
                raise ValueError("config %s must be >= 1, got %r" % (k, cfg[k]))
        self.cfg = dict(cfg)
        c = cfg["n_embd"]
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(cfg["vocab_size"], c),
            wpe=nn.Embedding(cfg["block_size"], c),
            drop=nn.Dropout(cfg["dropout"]),
            h=nn.ModuleList([Block(cfg) for _ in range(cfg["n_layer"])]),
            ln_f=LayerNorm(c, cfg["bias"]),
        ))
        self.lm_head = nn.Linear(c, cfg["vocab_size"], bias=False)
        if not cfg.get("untie_head", False):
            self.lm_head.weight = self.transformer.wte.weight  # tied

    def init_weights(self, generator=None):
        """nanoGPT's init: normal(0, 0.02) for Linear weights and
        embeddings, 0.02/sqrt(2 n_layer) for the residual projections
        (attn.c_proj, mlp.c_proj), zero biases, LayerNorm weights 1."""
        std_res = 0.02 / math.sqrt(2 * self.cfg["n_layer"])
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight") or name.endswith("mlp.w2.weight"):
                    p.normal_(0.0, std_res, generator=generator)
                    if self.cfg.get("zero_init_proj"):
                        p.zero_()
                elif name.endswith(".bias"):
                    p.zero_()
                elif ".ln_" in name or name.startswith("transformer.ln_f"):
                    p.fill_(1.0)
                else:  # wte (= lm_head), wpe, c_attn, c_fc weights
                    p.normal_(0.0, 0.02, generator=generator)
        return self

    def forward(self, idx, targets=None):
        b, t = idx.shape
        if t > self.cfg["block_size"]:
            raise ValueError("sequence length %d exceeds block_size %d" % (t, self.cfg["block_size"]))
        pos = torch.arange(t, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for blk in self.transformer.h:
            x = blk(x)
        logits = self.lm_head(self.transformer.ln_f(x))  # (B,T,V)
        s = self.cfg.get("logit_softcap", 0.0)
        if s > 0:
            logits = s * torch.tanh(logits / s)
        loss = None if targets is None else gpt_loss(logits, targets)
        return logits, loss


def gpt_loss(logits, targets):
    """Mean cross-entropy over the targets that are not -1."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1).long(),
                           ignore_index=-1)


def param_names(model):
    """Parameter names in state_dict order, without the tied lm_head."""
    return [n for n, _ in model.named_parameters()]


# ---- safetensors -----------------------------------------------------------

def config_to_meta(cfg):
    meta = {k: str(int(cfg[k])) for k in CONFIG_KEYS}
    meta["bias"] = "true" if cfg["bias"] else "false"
    meta["gelu"] = cfg.get("gelu", "erf")
    if cfg.get("mlp", "gelu") != "gelu":
        meta["mlp"] = cfg["mlp"]
    for k in ("qk_norm", "zero_init_proj"):
        if cfg.get(k):
            meta[k] = "true"
    if cfg.get("untie_head"):
        meta["tied"] = "false"
    if cfg.get("logit_softcap", 0.0) > 0:
        meta["logit_softcap"] = repr(float(cfg["logit_softcap"]))
    return meta


def config_from_meta(meta, path="<file>"):
    cfg = {}
    for k in CONFIG_KEYS:
        if k not in meta:
            raise ValueError("%s: __metadata__ lacks %r" % (path, k))
        try:
            cfg[k] = int(meta[k])
        except ValueError:
            raise ValueError("%s: __metadata__ %s=%r is not an integer" % (path, k, meta[k]))
    b = meta.get("bias")
    if b not in ("true", "false"):
        raise ValueError("%s: __metadata__ bias must be \"true\" or \"false\", got %r" % (path, b))
    cfg["bias"] = b == "true"
    cfg["dropout"] = float(meta.get("dropout", "0"))
    cfg["gelu"] = meta.get("gelu", "erf")
    if cfg["gelu"] not in ("erf", "tanh"):
        raise ValueError("%s: __metadata__ gelu must be \"erf\" or \"tanh\", got %r" % (path, cfg["gelu"]))
    cfg["mlp"] = meta.get("mlp", "gelu")
    cfg["qk_norm"] = meta.get("qk_norm", "false") == "true"
    cfg["zero_init_proj"] = meta.get("zero_init_proj", "false") == "true"
    cfg["untie_head"] = meta.get("tied", "true") == "false"
    cfg["logit_softcap"] = float(meta.get("logit_softcap", "0"))
    return cfg


def state_to_numpy(model, dtype=np.float64, with_head=False):
    out = {}
    for n, p in model.named_parameters():
        out[n] = p.detach().cpu().numpy().astype(dtype)
    if with_head and not model.cfg.get("untie_head"):
        out["lm_head.weight"] = out["transformer.wte.weight"]
    return out


def save_model(model, path, dtype="F64", with_head=False):
    """Writes every parameter under its nanoGPT name (lm_head.weight only if
    with_head), config in __metadata__."""
    npdt = {"F32": np.float32, "F64": np.float64}[dtype]
    st.write(path, state_to_numpy(model, npdt, with_head), config_to_meta(model.cfg))


def load_weights(model, tensors, path="<file>"):
    """Copies nanoGPT-named arrays into model (converting dtype). Every
    parameter must be present with its shape; a lm_head.weight, if present,
    must equal transformer.wte.weight (the head is tied; an untied head is a
    parameter like any other)."""
    tied = None if model.cfg.get("untie_head") else ("lm_head.weight", "transformer.wte.weight")
    return tc.load_weights(model, tensors, path, tied=tied)


def load_model(path, dtype=torch.float64, dropout=None):
    """Model built from the file's __metadata__ config, weights loaded."""
    tensors, meta = st.read(path)
    cfg = config_from_meta(meta, path)
    if dropout is not None:
        cfg["dropout"] = float(dropout)
    model = GPT(cfg).to(dtype)
    return load_weights(model, tensors, path)


def load_batch(path):
    """idx, targets as int64 tensors from a safetensors file (I32 or I64)."""
    tensors, _ = st.read(path)
    for k in ("idx", "targets"):
        if k not in tensors:
            raise ValueError("%s: missing tensor %r" % (path, k))
    return torch.from_numpy(tensors["idx"].astype(np.int64)), \
        torch.from_numpy(tensors["targets"].astype(np.int64))


def save_batch(path, idx, targets, dtype="I64"):
    npdt = {"I32": np.int32, "I64": np.int64}[dtype]
    st.write(path, {"idx": np.asarray(idx).astype(npdt), "targets": np.asarray(targets).astype(npdt)})
