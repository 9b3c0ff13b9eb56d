#!/usr/bin/python3
"""PyTorch side of the training-step benchmark (bench/bench.py); the twin
of bench/bench_step.c.

    torch_ref.py --init W.safetensors --batch-size B [--steps 20]
                 [--warmup 3] [--threads 1] [--seed 1337] [--lr 1e-3]
                 [--rss-every K] [--chunk K]

The model (config from the file's __metadata__) is bench/torch_gpt.py's GPT,
or bench/torch_llama.py's Llama when the metadata says arch=llama, in
float32, loaded from the weights bench_step --write-init wrote, no
dropout. A step: forward, loss, backward, clip_grad_norm_ 1.0, AdamW as
torch_common.configure_adamw (lr constant, betas 0.9/0.99, eps 1e-8, weight
decay 0.1 on 2-D tensors, per-tensor loop), zero_grad(set_to_none=True).

Batches: the same PCG32 stream as bench_step (core/rng.c ported below),
seeded (seed, stream 7): per row, T+1 tokens, the first below(V), each
next (previous + 1 + below(4)) mod V; idx the first T, targets the last
T. Drawn before timing.

Prints the same JSON object as bench_step ("impl": "torch"), plus
"omp_wait_policy" (the environment's OMP_WAIT_POLICY or null) and
"rss_after_import_kb" (ru_maxrss once torch is imported, before the
model exists).

--rss-every K: as bench_step, after the first step, every K-th step and
the last (numbered from 1, warm-up included, outside the timed region)
records the resident set (/proc/self/statm) and ru_maxrss into
"rss_every" and "rss_samples": {"step", "rss_kb", "peak_rss_kb"} (no
"alloc_calls": PyTorch's allocations are not counted).

--chunk K: as bench_step, before the first timed step and every K-th after
it, prints "wait" and blocks until a line arrives on stdin (bench.py's
interleaving).
"""

import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_common as tc  # noqa: E402
import torch_gpt as tg  # noqa: E402
import torch_llama as tl  # noqa: E402

M64 = (1 << 64) - 1
PCG_MULT = 6364136223846793005
DATA_STREAM = 7


class PCG32:
    """core/rng.c: PCG32, XSH-RR output on a 64-bit LCG."""

    def __init__(self, seed, stream):
        self.state = 0
        self.inc = ((stream << 1) | 1) & M64
        self._step()
        self.state = (self.state + seed) & M64
        self._step()

    def _step(self):
        old = self.state
        self.state = (old * PCG_MULT + self.inc) & M64
        xorshifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & 0xFFFFFFFF

    def below(self, n):
        threshold = ((1 << 32) - n) % n   # (uint32_t)(-n) % n
        while True:
            x = self._step()
            if x >= threshold:
                return x % n


def make_batches(seed, steps, batch, block, vocab):
    """(steps, B, T+1) int64 tokens, in bench_step's order."""
    r = PCG32(seed, DATA_STREAM)
    toks = np.empty((steps, batch, block + 1), dtype=np.int64)
    for s in range(steps):
        for b in range(batch):
            row = toks[s, b]
            prev = r.below(vocab)
            row[0] = prev
            for t in range(1, block + 1):
                prev = (prev + 1 + r.below(4)) % vocab
                row[t] = prev
    return toks


def file_arch(path):
    """The "arch" of a safetensors file's __metadata__ ("gpt" when absent),
    from its header alone."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        if n > 100 << 20:
            sys.exit("torch_ref: %s: a header of %d bytes is not a safetensors file" % (path, n))
        header = json.loads(f.read(n).decode("utf-8"))
    return (header.get("__metadata__") or {}).get("arch", "gpt")


def current_rss_kb():
    """Resident set in kB from /proc/self/statm (second field, pages); -1 if unreadable."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError, IndexError):
        return -1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--init", required=True, help="weights written by bench_step --write-init")
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--rss-every", type=int, default=0, help="record memory every K steps (0: off)")
    ap.add_argument("--chunk", type=int, default=0,
                    help="print 'wait' and read a line from stdin before every K-th timed step (0: off)")
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 0 or args.batch_size < 1 or args.threads < 1 or args.rss_every < 0 \
            or args.chunk < 0:
        sys.exit("torch_ref: --steps, --batch-size, --threads must be >= 1, --warmup, --rss-every and --chunk >= 0")

    torch.set_num_threads(args.threads)
    rss_import = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    arch = file_arch(args.init)
    if arch not in ("gpt", "llama"):
        sys.exit("torch_ref: %s: arch %r is not gpt or llama" % (args.init, arch))
    model = (tl if arch == "llama" else tg).load_model(args.init, torch.float32, dropout=0.0)
    cfg = model.cfg
    B, T, V = args.batch_size, cfg["block_size"], cfg["vocab_size"]
    n_total = args.warmup + args.steps
    toks = torch.from_numpy(make_batches(args.seed, n_total, B, T, V))
    opt = tc.configure_adamw(model, args.lr, 0.1, 0.99)
    model.train()

    ms, losses = [], []
    rss = {"step": [], "rss_kb": [], "peak_rss_kb": []}
    for s in range(n_total):
        if args.chunk and s >= args.warmup and (s - args.warmup) % args.chunk == 0:   # bench.py's turn
            print("wait", flush=True)
            if not sys.stdin.readline():
                sys.exit("torch_ref: --chunk: stdin closed before step %d" % s)
        t0 = time.perf_counter()
        x, y = toks[s, :, :T], toks[s, :, 1:]
        _, loss = model(x, y)
        loss.backward()
        tc.clip_grads(model, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        lv = loss.item()
        ms.append((time.perf_counter() - t0) * 1e3)
        losses.append(lv)
        if args.rss_every and (s == 0 or (s + 1) % args.rss_every == 0 or s == n_total - 1):
            rss["step"].append(s + 1)
            rss["rss_kb"].append(current_rss_kb())
            rss["peak_rss_kb"].append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)

    timed = ms[args.warmup:]
    keys = ("n_layer", "n_head", "n_kv_head", "n_embd", "hidden_dim", "block_size", "vocab_size", "tied") \
        if arch == "llama" else ("n_layer", "n_head", "n_embd", "block_size", "vocab_size")
    config = dict({"arch": arch}, **{k: cfg[k] for k in keys}, batch_size=B)
    out = {
        "impl": "torch",
        "config": config,
        "threads": torch.get_num_threads(), "warmup": args.warmup, "steps": args.steps,
        "n_params": sum(p.numel() for p in model.parameters()),
        "ms": [round(v, 4) for v in timed],
        "median_ms": float(np.median(timed)), "min_ms": min(timed),
        "tokens_per_s": B * T / (float(np.median(timed)) / 1e3),
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "rss_after_import_kb": rss_import,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "losses": losses, "loss": losses[-1],
    }
    if args.rss_every:
        out.update(rss_every=args.rss_every, rss_samples=rss)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
