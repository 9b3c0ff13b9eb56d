#!/usr/bin/python3
"""nanoGPT's small character-level CPU recipe, trained in PyTorch (float32),
as the reference that tapegrad's tiny_gpt training is compared with.

Data: the bytes of --data; the vocabulary is the sorted set of bytes
present; the first 90% is train, the last 10% val. A batch is batch-size
random windows of block-size + 1 bytes (offsets from torch.randint on a
generator seeded with --seed; evaluation draws from a second generator,
seed + 1, so evaluating does not change the training batches).

Schedule (nanoGPT's get_lr): lr * (it + 1) / (warmup + 1) for it < warmup,
then cosine from lr to min-lr, reached at it == steps. AdamW with nanoGPT's
grouping (dim >= 2 decays), betas (0.9, beta2), eps 1e-8, gradient clipping
by global norm. Init as nanoGPT (normal 0.02, residual projections
0.02/sqrt(2 n_layer), zero biases), or --init W.safetensors.

Every --eval-interval steps and at the end: mean loss over --eval-iters
batches of each split. Last lines:
    val loss X          (mean over eval-iters val batches, after the last step)
    step time median M ms, min N ms  (per optimisation step; robust to load)
    train S seconds     (the optimisation steps alone)
    wall S seconds      (the whole run: steps and evaluations, not data loading)
With --full-val, after those, the val split's own loss (every byte after
the first predicted once, in consecutive windows of block-size, the last
one shorter), as tiny_gpt's --full-val computes it:
    full val loss X
"""

import argparse
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_common as tc  # noqa: E402
import torch_gpt as tg  # noqa: E402


def parse_bool(s):
    v = s.strip().lower()
    if v in ("true", "1", "yes", "on"):
        return True
    if v in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError("expected true or false, got %r" % s)


def get_lr(it, lr, min_lr, warmup, decay_steps):
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay_steps:
        return min_lr
    ratio = (it - warmup) / max(1, decay_steps - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


def load_text(path):
    with open(path, "rb") as f:
        raw = f.read()
    vocab = sorted(set(raw))
    lut = torch.full((256,), -1, dtype=torch.long)
    lut[torch.tensor(vocab, dtype=torch.long)] = torch.arange(len(vocab))
    data = lut[torch.frombuffer(bytearray(raw), dtype=torch.uint8).long()]
    n = int(0.9 * len(data))
    return data[:n], data[n:], vocab


def get_batch(data, block_size, batch_size, gen):
    if len(data) <= block_size:
        raise ValueError("split of %d tokens is too short for block_size %d" % (len(data), block_size))
    ix = torch.randint(len(data) - block_size, (batch_size,), generator=gen)
    x = torch.stack([data[i:i + block_size] for i in ix.tolist()])
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix.tolist()])
    return x, y


@torch.no_grad()
def estimate_loss(model, data, args, gen):
    model.eval()
    total = 0.0
    for _ in range(args.eval_iters):
        x, y = get_batch(data, args.block_size, args.batch_size, gen)
        _, loss = model(x, y)
        total += loss.item()
    model.train()
    return total / args.eval_iters


@torch.no_grad()
def full_loss(model, data, block_size, batch_size):
    """The mean loss over every target of data once: windows of block_size
    in order, the last one shorter (run alone), batch_size at a time."""
    model.eval()
    targets = len(data) - 1
    full = targets // block_size
    total = 0.0
    for b in range(0, full, batch_size):
        rows = range(b, min(b + batch_size, full))
        x = torch.stack([data[w * block_size:(w + 1) * block_size] for w in rows])
        y = torch.stack([data[w * block_size + 1:(w + 1) * block_size + 1] for w in rows])
        _, loss = model(x, y)
        total += loss.item() * x.numel()
    rest = targets - full * block_size
    if rest:
        at = full * block_size
        _, loss = model(data[at:at + rest].unsqueeze(0), data[at + 1:at + 1 + rest].unsqueeze(0))
        total += loss.item() * rest
    model.train()
    return total / targets


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="text file (bytes are the tokens)")
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=12)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--min-lr", type=float, default=1e-4)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--beta2", type=float, default=0.99)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--bias", type=parse_bool, default=False)
    ap.add_argument("--eval-iters", type=int, default=200)
    ap.add_argument("--eval-interval", type=int, default=250)
    ap.add_argument("--log-interval", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--init", help="start from these weights (config from the file's metadata)")
    ap.add_argument("--save", help="write the final weights here (F32)")
    ap.add_argument("--full-val", action="store_true", help="at the end, the val split's own loss (not timed)")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    train, val, vocab = load_text(args.data)
    print("data %s: %d bytes, vocab %d, train %d, val %d tokens"
          % (args.data, len(train) + len(val), len(vocab), len(train), len(val)))

    if args.init:
        model = tg.load_model(args.init, torch.float32, dropout=args.dropout)
        cfg = model.cfg
        if cfg["vocab_size"] < len(vocab):
            sys.exit("error: %s has vocab_size %d, the data needs %d"
                     % (args.init, cfg["vocab_size"], len(vocab)))
        for k in ("n_layer", "n_head", "n_embd", "block_size", "bias"):
            if cfg[k] != getattr(args, k):
                print("note: %s=%r from %s (flag says %r)" % (k, cfg[k], args.init, getattr(args, k)))
        args.block_size = min(args.block_size, cfg["block_size"])
    else:
        cfg = tg.make_config(args.n_layer, args.n_head, args.n_embd, args.block_size, len(vocab),
                             bias=args.bias, dropout=args.dropout)
        model = tg.GPT(cfg).float()
        model.init_weights(torch.Generator().manual_seed(args.seed))
    n_params = sum(p.numel() for p in model.parameters())
    print("model %s: %d parameters (%.2fM), threads %d"
          % (" ".join("%s=%s" % (k, cfg[k]) for k in sorted(cfg)), n_params, n_params / 1e6,
             torch.get_num_threads()))

    opt = tc.configure_adamw(model, args.lr, args.weight_decay, args.beta2)
    gen_train = torch.Generator().manual_seed(args.seed)
    gen_eval = torch.Generator().manual_seed(args.seed + 1)

    model.train()
    t_wall = time.perf_counter()
    t_train = 0.0
    step_times = []
    for it in range(args.steps + 1):
        if it % args.eval_interval == 0 or it == args.steps:
            tl = estimate_loss(model, train, args, gen_eval)
            vl = estimate_loss(model, val, args, gen_eval)
            print("step %d: train loss %.4f, val loss %.4f (%.1f s)"
                  % (it, tl, vl, time.perf_counter() - t_wall), flush=True)
        if it == args.steps:
            break
        t0 = time.perf_counter()
        lr = get_lr(it, args.lr, args.min_lr, args.warmup, args.steps)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch(train, args.block_size, args.batch_size, gen_train)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        tc.clip_grads(model, args.grad_clip)
        opt.step()
        dt = time.perf_counter() - t0
        t_train += dt
        step_times.append(dt)
        if it % args.log_interval == 0:
            print("iter %d: loss %.4f, lr %.3e, %.1f ms" % (it, loss.item(), lr, dt * 1000), flush=True)
    wall = time.perf_counter() - t_wall

    if args.save:
        tg.save_model(model, args.save, "F32")
        print("saved %s" % args.save)
    if step_times:
        st_sorted = sorted(step_times)
        print("step time median %.1f ms, min %.1f ms" % (st_sorted[len(st_sorted) // 2] * 1000,
                                                         st_sorted[0] * 1000))
    print("val loss %.4f" % vl)
    print("train %.1f seconds" % t_train)
    print("wall %.1f seconds" % wall, flush=True)
    if args.full_val:
        print("full val loss %.4f" % full_loss(model, val, args.block_size, args.batch_size))


if __name__ == "__main__":
    main()
