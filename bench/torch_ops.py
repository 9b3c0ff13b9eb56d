#!/usr/bin/python3
"""PyTorch side of the op benchmark (bench/bench.py --ops); the twin of
bench/bench_ops.c, with the same ops, shapes, inputs and JSON.

    torch_ops.py [--config S|M|L|N] [--threads 1] [--repeats 20]
                 [--warmup 3] [--ops name,name,...] [--list]

The ops (OPS below; the names, shapes and input order match bench_ops.c):
    linear_attn / linear_fc / linear_proj   F.linear(x, W), no bias
    matmul_qk / matmul_av                   torch.matmul on 4-D tensors
    softmax        s.masked_fill(~causal, -inf) then F.softmax(dim=-1)
    layernorm      F.layer_norm(x, (C,), w, None, 1e-5)
    gelu           F.gelu(x) (exact, erf)
    gelu_tanh      F.gelu(x, approximate="tanh") (GPT-2's), the same x
    relu2          F.relu(x).square() (modded-nanogpt's MLP), (B,T,4C)
    softcap        15 * torch.tanh(x / 15), x spread 30, (B,T,4C)
    cross_entropy  F.cross_entropy(logits, int64 targets), mean
    attention      bench/torch_gpt.py's CausalSelfAttention (nanoGPT's,
                   without flash attention): c_attn, split, view/transpose
                   heads, q @ k^T * 1/sqrt(dh), masked_fill, softmax, @ v,
                   transpose back, c_proj; no bias, no dropout
    rmsnorm        bench/torch_llama.py's RMSNorm: x rsqrt(mean(x^2) + 1e-5) w
    swiglu         F.silu(a) * b, (B,T,hidden), hidden llama2.c's width for C
    rope           torch_llama.py's rope_angles (float32, inside the timed
                   forward, as tapegrad computes its angles per call) and
                   rope_interleaved on x viewed (B,T,H,dh)

One repeat: forward with every float input requiring grad (the autograd
graph recorded, as in training) -> t_fwd; y.backward(dy) (loss.backward()
for cross_entropy) -> t_fwdbwd. Between repeats, untimed: the inputs'
.grad set to None (as zero_grad(set_to_none=True)) and the output
dropped. Inputs and dy are bench_ops.c's hash pattern, so "check" (sums
of squares of the output and of each input's gradient after the last
repeat) should agree with tapegrad's to float32 rounding.

Prints one JSON line per op, as bench_ops ("impl": "torch"), plus
"omp_wait_policy" (the environment's OMP_WAIT_POLICY or null).
"""

import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_gpt as tg  # noqa: E402
import torch_llama as tl  # noqa: E402

VOCAB = 65
# name: (n_layer, n_head, n_embd, block_size, batch), as bench_ops.c and bench.py
CONFIGS = {
    "S": (2, 4, 64, 64, 16),
    "M": (4, 4, 128, 128, 16),
    "L": (6, 8, 256, 256, 8),
    "N": (4, 4, 128, 64, 12),
}
GOLDEN = 0x9E3779B9
M32 = 0xFFFFFFFF


def lowbias32(x):
    """bench_ops.c's integer hash, on a uint32 array."""
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def pattern(shape, k, scale):
    """Element i of input k: scale (2u - 1), u = (lowbias32(i + (k+1) GOLDEN) >> 8) / 2^24."""
    n = int(np.prod(shape))
    i = (np.arange(n, dtype=np.uint64) + (k + 1) * GOLDEN) & M32
    with np.errstate(over="ignore"):
        h = lowbias32(i.astype(np.uint32))
    u = (h >> np.uint32(8)).astype(np.float64) / 16777216.0
    return torch.from_numpy((scale * (2.0 * u - 1.0)).astype(np.float32).reshape(shape))


def leaf(shape, k, scale):
    return pattern(shape, k, scale).requires_grad_(True)


# Each setup returns (inputs in bench_ops.c's order, forward(), shape
# string, flop_fwd, flop_bwd).

def linear(what, cin, cout):
    def setup(B, H, C, T):
        x, w = leaf((B, T, cin), 0, 1.0), leaf((cout, cin), 1, 0.02)
        f = 2.0 * B * T * cin * cout
        return [x, w], lambda: F.linear(x, w), "%s: x (%d,%d,%d) @ W^T (%d,%d)" % (what, B, T, cin, cout, cin), f, 2 * f
    return setup


def setup_matmul_qk(B, H, C, T):
    dh = C // H
    q, kt = leaf((B, H, T, dh), 0, 1.0), leaf((B, H, dh, T), 1, 1.0)
    f = 2.0 * B * H * T * dh * T
    return [q, kt], lambda: torch.matmul(q, kt), "(%d,%d,%d,%d) @ (%d,%d,%d,%d)" % (B, H, T, dh, B, H, dh, T), f, 2 * f


def setup_matmul_av(B, H, C, T):
    dh = C // H
    a, v = leaf((B, H, T, T), 0, 0.1), leaf((B, H, T, dh), 1, 1.0)
    f = 2.0 * B * H * T * T * dh
    return [a, v], lambda: torch.matmul(a, v), "(%d,%d,%d,%d) @ (%d,%d,%d,%d)" % (B, H, T, T, B, H, T, dh), f, 2 * f


def setup_softmax(B, H, C, T):
    s = leaf((B, H, T, T), 0, 3.0)
    keep = torch.ones(T, T, dtype=torch.bool).tril()   # (T,T), True = may attend
    return ([s], lambda: F.softmax(s.masked_fill(~keep, float("-inf")), dim=-1),
            "(%d,%d,%d,%d), causal" % (B, H, T, T), 0, 0)


def setup_layernorm(B, H, C, T):
    x, w = leaf((B, T, C), 0, 1.0), leaf((C,), 1, 1.0)
    return [x, w], lambda: F.layer_norm(x, (C,), w, None, 1e-5), "(%d,%d,%d), weight, no bias" % (B, T, C), 0, 0


def setup_gelu(B, H, C, T):
    x = leaf((B, T, 4 * C), 0, 3.0)
    return [x], lambda: F.gelu(x), "(%d,%d,%d), erf" % (B, T, 4 * C), 0, 0


def setup_gelu_tanh(B, H, C, T):
    x = leaf((B, T, 4 * C), 0, 3.0)
    return [x], lambda: F.gelu(x, approximate="tanh"), "(%d,%d,%d), tanh" % (B, T, 4 * C), 0, 0


def setup_relu2(B, H, C, T):
    x = leaf((B, T, 4 * C), 0, 3.0)
    return [x], lambda: F.relu(x).square(), "(%d,%d,%d)" % (B, T, 4 * C), 0, 0


def setup_softcap(B, H, C, T):
    x = leaf((B, T, 4 * C), 0, 30.0)
    return [x], lambda: 15.0 * torch.tanh(x / 15.0), "(%d,%d,%d), s 15" % (B, T, 4 * C), 0, 0


def setup_cross_entropy(B, H, C, T):
    n = B * T
    logits = leaf((n, VOCAB), 0, 2.0)
    i = ((np.arange(n, dtype=np.uint64) + 50 * GOLDEN) & M32).astype(np.uint32)
    with np.errstate(over="ignore"):
        targets = torch.from_numpy((lowbias32(i) % VOCAB).astype(np.int64))
    return [logits], lambda: F.cross_entropy(logits, targets), "(%d,%d), mean" % (n, VOCAB), 0, 0


def setup_attention(B, H, C, T):
    cfg = tg.make_config(1, H, C, T, VOCAB, bias=False, dropout=0.0)
    attn = tg.CausalSelfAttention(cfg).train()
    x = leaf((B, T, C), 0, 1.0)
    with torch.no_grad():
        attn.c_attn.weight.copy_(pattern((3 * C, C), 1, 0.02))
        attn.c_proj.weight.copy_(pattern((C, C), 2, 0.02))
    f = 2.0 * B * T * C * 4 * C + 4.0 * B * H * T * T * (C // H)
    return ([x, attn.c_attn.weight, attn.c_proj.weight], lambda: attn(x),
            "x (%d,%d,%d), H %d, causal, fused c_attn" % (B, T, C, H), f, 2 * f)


def setup_rmsnorm(B, H, C, T):
    x, norm = leaf((B, T, C), 0, 1.0), tl.RMSNorm(C, 1e-5)
    with torch.no_grad():
        norm.weight.copy_(pattern((C,), 1, 1.0))
    return [x, norm.weight], lambda: norm(x), "(%d,%d,%d), weight, eps 1e-5" % (B, T, C), 0, 0


def llama_hidden_dim(c, multiple_of=32):
    """llama2.c's model.py width: int(2 (4c) / 3) rounded up to multiple_of."""
    h = int(2 * 4 * c / 3)
    return multiple_of * ((h + multiple_of - 1) // multiple_of)


def setup_swiglu(B, H, C, T):
    h = llama_hidden_dim(C)
    a, b = leaf((B, T, h), 0, 3.0), leaf((B, T, h), 1, 1.0)
    return [a, b], lambda: F.silu(a) * b, "(%d,%d,%d) twice" % (B, T, h), 0, 0


def setup_rope(B, H, C, T):
    dh = C // H
    x = leaf((B, T, C), 0, 1.0)

    def forward():
        cos, sin = tl.rope_angles(dh, T, 10000.0, torch.float32)
        return tl.rope_interleaved(x.view(B, T, H, dh), cos, sin).reshape(B, T, C)
    return [x], forward, "(%d,%d,%d), %d heads of %d, interleaved" % (B, T, C, H, dh), 0, 0


OPS = {
    "linear_attn": lambda B, H, C, T: linear("c_attn", C, 3 * C)(B, H, C, T),
    "linear_fc": lambda B, H, C, T: linear("c_fc", C, 4 * C)(B, H, C, T),
    "linear_proj": lambda B, H, C, T: linear("mlp c_proj", 4 * C, C)(B, H, C, T),
    "matmul_qk": setup_matmul_qk,
    "matmul_av": setup_matmul_av,
    "softmax": setup_softmax,
    "layernorm": setup_layernorm,
    "gelu": setup_gelu,
    "gelu_tanh": setup_gelu_tanh,
    "relu2": setup_relu2,
    "softcap": setup_softcap,
    "cross_entropy": setup_cross_entropy,
    "attention": setup_attention,
    "rmsnorm": setup_rmsnorm,
    "swiglu": setup_swiglu,
    "rope": setup_rope,
}


def sum_sq(t):
    return float((t.detach().double() ** 2).sum())


def run_op(name, cfg_name, warmup, repeats):
    _, H, C, T, B = CONFIGS[cfg_name]
    inputs, forward, shape, flop_fwd, flop_bwd = OPS[name](B, H, C, T)
    with torch.no_grad():   # the output's shape, for dy (untimed)
        shape_y = tuple(forward().shape)
    dy = pattern(shape_y, 98, 1.0) if shape_y else None
    fwd, fb = [], []
    for r in range(warmup + repeats):
        for t in inputs:
            t.grad = None
        t0 = time.perf_counter()
        y = forward()
        t1 = time.perf_counter()
        if dy is None:
            y.backward()
        else:
            y.backward(dy)
        t2 = time.perf_counter()
        if r >= warmup:
            fwd.append((t1 - t0) * 1e3)
            fb.append((t2 - t0) * 1e3)
        if r == warmup + repeats - 1:
            check = {"out_sq": sum_sq(y), "grad_sq": [sum_sq(t.grad) for t in inputs]}
        del y
    return {
        "impl": "torch", "config": cfg_name, "op": name, "shape": shape, "threads": torch.get_num_threads(),
        "warmup": warmup, "repeats": repeats,
        "fwd_ms": [round(v, 4) for v in fwd], "fwdbwd_ms": [round(v, 4) for v in fb],
        "fwd_median_ms": float(np.median(fwd)), "fwdbwd_median_ms": float(np.median(fb)),
        "flop_fwd": flop_fwd, "flop_bwd": flop_bwd, "check": check,
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="S", choices=sorted(CONFIGS))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--ops", help="comma-separated op names (default: all)")
    ap.add_argument("--list", action="store_true", help="print the op names and exit")
    args = ap.parse_args()
    if args.list:
        print("\n".join(OPS))
        return
    if args.threads < 1 or args.repeats < 1 or args.warmup < 0:
        sys.exit("torch_ops: --threads and --repeats must be >= 1, --warmup >= 0")
    names = list(OPS) if not args.ops else list(dict.fromkeys(s.strip() for s in args.ops.split(",") if s.strip()))
    bad = [n for n in names if n not in OPS]
    if bad or not names:
        sys.exit("torch_ops: unknown op(s) %s; choose from %s" % (", ".join(bad) or "(none given)", ",".join(OPS)))
    torch.set_num_threads(args.threads)
    for name in names:
        print(json.dumps(run_op(name, args.config, args.warmup, args.repeats)), flush=True)


if __name__ == "__main__":
    main()
