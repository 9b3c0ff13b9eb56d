#!/usr/bin/env python3
"""What ggml's GELU table costs a GPT's mean nll: a float64 NumPy forward
of a tapegrad GPT checkpoint (safetensors, nanoGPT's names) on given ids,
once with GELU's exact tanh form and once as llama.cpp's CPU backend
computes it (ggml_vec_gelu_f32 with GGML_GELU_FP16: the input rounded to
half, looked up in a table of halves of the tanh form; 0 below -10, x
above 10). Prints both nlls and their relative difference
(docs/formats.md, "GGUF": the figures of the GPT's tolerance).

    python3 scripts/gelu_table_cost.py CKPT.safetensors IDS.txt
IDS.txt: the ids (whitespace-separated), at most the block size + 1.
"""
import json, struct, sys
import numpy as np
def load(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n]); meta = h.pop('__metadata__')
    out = {}
    for k, v in h.items():
        if v['dtype'] != 'F32': continue
        s, e = v['data_offsets']; out[k] = np.frombuffer(b[8 + n + s:8 + n + e], np.float32).reshape(v['shape']).astype(np.float64)
    return out, meta
def gelu_tanh(x): return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * x * (1 + 0.044715 * x * x)))
def gelu_table(x):
    y = gelu_tanh(x.astype(np.float16).astype(np.float32).astype(np.float64)).astype(np.float32).astype(np.float16).astype(np.float64)
    return np.where(x <= -10, 0, np.where(x >= 10, x, y))
def ln(x, w, b):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * w + (b if b is not None else 0)
def nll(W, meta, ids, gelu):
    L, H = int(meta['n_layer']), int(meta['n_head']); T = len(ids) - 1
    x = W['transformer.wte.weight'][ids[:-1]] + W['transformer.wpe.weight'][:T]; C = x.shape[1]; hd = C // H
    g = lambda k: W.get(k)
    for l in range(L):
        p = f'transformer.h.{l}.'
        a = ln(x, W[p + 'ln_1.weight'], g(p + 'ln_1.bias'))
        qkv = a @ W[p + 'attn.c_attn.weight'].T + (g(p + 'attn.c_attn.bias') if g(p + 'attn.c_attn.bias') is not None else 0)
        q, k, v = [qkv[:, i * C:(i + 1) * C].reshape(T, H, hd).transpose(1, 0, 2) for i in range(3)]
        s = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + np.triu(np.full((T, T), -np.inf), 1)
        s = np.exp(s - s.max(-1, keepdims=True)); s /= s.sum(-1, keepdims=True)
        y = (s @ v).transpose(1, 0, 2).reshape(T, C)
        x = x + y @ W[p + 'attn.c_proj.weight'].T + (g(p + 'attn.c_proj.bias') if g(p + 'attn.c_proj.bias') is not None else 0)
        a = ln(x, W[p + 'ln_2.weight'], g(p + 'ln_2.bias'))
        h = a @ W[p + 'mlp.c_fc.weight'].T + (g(p + 'mlp.c_fc.bias') if g(p + 'mlp.c_fc.bias') is not None else 0)
        x = x + gelu(h) @ W[p + 'mlp.c_proj.weight'].T + (g(p + 'mlp.c_proj.bias') if g(p + 'mlp.c_proj.bias') is not None else 0)
    x = ln(x, W['transformer.ln_f.weight'], g('transformer.ln_f.bias'))
    lg = x @ W['transformer.wte.weight'].T; lg -= lg.max(-1, keepdims=True)
    lp = lg - np.log(np.exp(lg).sum(-1, keepdims=True))
    return -lp[np.arange(T), ids[1:]].mean()
W, meta = load(sys.argv[1]); ids = np.array([int(t) for t in open(sys.argv[2]).read().split()])
a, b = nll(W, meta, ids, gelu_tanh), nll(W, meta, ids, gelu_table)
print(f'{sys.argv[1]}: exact tanh {a:.7f}, f16 table {b:.7f}, relative {abs(b - a) / a:.2e}')
