#!/usr/bin/python3
"""PyTorch DistributedDataParallel on the CPU, the reference bench_dist is
compared with (bench/bench_mpi.py --torch).

    torch_ddp.py --init W.safetensors --batch-size G [--procs 2] [--threads 1]
                 [--steps 20] [--warmup 3] [--seed 1337] [--lr 1e-3]
                 [--bucket-mb 25] [--port 29517]

--procs processes on localhost (torch.multiprocessing), each with
--threads threads, torch.distributed with the gloo backend, the model
(bench/torch_gpt.py's GPT in float32, from the weights bench_step
--write-init wrote, no dropout) in DistributedDataParallel with buckets of
--bucket-mb (PyTorch's default 25): its bucketed allreduce of the
gradients overlaps backward, as tapegrad's does. The global batch is
bench_step's stream (torch_ref.make_batches: the same rows bench_dist
draws), rank r training on rows [r G/P, (r+1) G/P). A step: forward,
loss (the mean over the rank's rows; DDP averages the gradients over the
ranks), backward, clip_grad_norm_ 1.0, AdamW as torch_ref.py
(torch_gpt.configure_adamw: betas 0.9/0.99, eps 1e-8, decay 0.1 on 2-D
tensors), zero_grad. Each step starts at a barrier, as bench_dist's do,
and takes the slowest rank's time.

Prints one JSON line: {"impl": "torch_ddp", "procs", "threads",
"global_batch", "median_ms", "min_ms", "ms": [...], "losses": [the mean
over ranks, every step], "tokens_per_s"}.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_common as tc  # noqa: E402
import torch_gpt as tg  # noqa: E402
from torch_ref import make_batches  # noqa: E402


def worker(rank, args, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", rank=rank, world_size=args.procs)
    model = tg.load_model(args.init, torch.float32, dropout=0.0)
    cfg = model.cfg
    G, T, V = args.batch_size, cfg["block_size"], cfg["vocab_size"]
    B = G // args.procs
    n_total = args.warmup + args.steps
    toks = torch.from_numpy(make_batches(args.seed, n_total, G, T, V))
    # the causal masks are constant bool buffers, which gloo cannot broadcast
    DDP._set_params_and_buffers_to_ignore_for_model(model, [n for n, _ in model.named_buffers()])
    ddp = DDP(model, bucket_cap_mb=args.bucket_mb, broadcast_buffers=False)
    opt = tc.configure_adamw(model, args.lr, 0.1, 0.99)
    ddp.train()
    ms, losses = [], []
    for s in range(n_total):
        rows = toks[s, rank * B:(rank + 1) * B]
        dist.barrier()
        t0 = time.perf_counter()
        _, loss = ddp(rows[:, :T], rows[:, 1:])
        loss.backward()
        tc.clip_grads(model, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        t = torch.tensor([(time.perf_counter() - t0) * 1e3, loss.item() / args.procs], dtype=torch.float64)
        worst = t[:1].clone()
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)
        mean = t[1:].clone()
        dist.all_reduce(mean, op=dist.ReduceOp.SUM)
        ms.append(float(worst))
        losses.append(float(mean))
    if rank == 0:
        timed = ms[args.warmup:]
        out.put({"impl": "torch_ddp", "procs": args.procs, "threads": torch.get_num_threads(),
                 "global_batch": G, "bucket_mb": args.bucket_mb, "ms": [round(v, 4) for v in timed],
                 "median_ms": float(np.median(timed)), "min_ms": min(timed),
                 "tokens_per_s": G * T / (float(np.median(timed)) / 1e3), "losses": losses})
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--init", required=True, help="weights written by bench_step --write-init")
    ap.add_argument("--batch-size", type=int, required=True, help="the global batch (all processes)")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--bucket-mb", type=float, default=25)
    ap.add_argument("--port", type=int, default=29517)
    args = ap.parse_args()
    if args.procs < 1 or args.batch_size % args.procs or args.steps < 1:
        sys.exit("torch_ddp: --batch-size must be a multiple of --procs, --steps >= 1")
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    mp.spawn(worker, args=(args, out), nprocs=args.procs, join=True)
    print(json.dumps(out.get()))


if __name__ == "__main__":
    main()
