#!/usr/bin/python3
"""How much of a Llama checkpoint's val loss is its windows' short context.

tiny_gpt's full-split evaluation (`full_val`) scores every val token once
in consecutive windows of block_size tokens, so a token at the start of a
window is predicted from little or no context. This script scores the
same tokens in PyTorch (bench/torch_llama.py, f32) two ways and prints:

- the loss of the consecutive windows (tiny_gpt's own figure: the two
  must agree), and the mean loss at each range of positions in a window;
- a sliding window that advances half a block at a time and scores only
  its second half, so every token after the first window sees at least
  half a block of context.

The val split is built as tiny_gpt builds it for a Llama with a
tokenizer: the text's last 10% (after nanoGPT's int(0.9 n)), cut into
documents at blank lines, each as BOS + encode(" " + document).
Bits per byte: nats over the split's bytes of text, as tiny_gpt counts.

    /usr/bin/python3 bench/val_by_position.py --build build --ckpt OUT/best.safetensors --data tinyshakespeare.txt
"""
import argparse
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io as st  # noqa: E402
import torch_llama as tl  # noqa: E402


def documents(text):
    """tiny_gpt's cut at blank lines: the first newline of "\\n\\n" stays
    with its paragraph, a lone newline is no document."""
    docs, i, n = [], 0, len(text)
    while i < n:
        end = text.find(b"\n\n", i)
        end = n if end < 0 else end + 1
        if end > i and text[i:end] != b"\n":
            docs.append(text[i:end])
        i = end + 1 if end < n else end
    return docs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="the build directory holding tiny_gpt (its encoder)")
    ap.add_argument("--ckpt", required=True, help="a Llama checkpoint with a BPE tokenizer (OUT/best.safetensors)")
    ap.add_argument("--data", required=True, help="the text the checkpoint was trained on")
    args = ap.parse_args()

    try:
        tensors, meta = st.read(args.ckpt)
        with open(args.data, "rb") as f:
            text = f.read()
    except (OSError, ValueError) as e:
        sys.exit("val_by_position: %s" % e)
    if meta.get("arch") != "llama" or meta.get("vocab") != "tokenizer" or meta.get("tokenizer") != "bpe":
        sys.exit("%s: not a Llama with a BPE tokenizer (arch %r, vocab %r, tokenizer %r)"
                 % (args.ckpt, meta.get("arch"), meta.get("vocab"), meta.get("tokenizer")))
    cfg = tl.config_from_meta(meta, args.ckpt)
    model = tl.Llama(cfg).float()
    names = {n for n, _ in model.named_parameters()}
    model = tl.load_weights(model, {k: v for k, v in tensors.items() if k in names}, args.ckpt).eval()

    val = text[int(len(text) * 0.9):]
    tiny_gpt = os.path.join(args.build, "tiny_gpt")
    bos = int(meta["tokenizer.bos"])
    ids = []
    for doc in documents(val):
        out = subprocess.run([tiny_gpt, "tokenizer", "encode", "--tokenizer", args.ckpt], input=b" " + doc,
                             capture_output=True, check=True).stdout
        ids += [bos] + [int(x) for x in out.split()]
    ids = torch.tensor(ids)
    T, n = cfg["block_size"], len(ids)
    print("val split: %d bytes, %d tokens, windows of %d" % (len(val), n, T))

    torch.set_num_threads(1)
    bpb = 1 / math.log(2) / len(val)
    pos_sum, pos_n, total = np.zeros(T), np.zeros(T), 0.0
    sliding, scored = 0.0, 0
    with torch.no_grad():
        for s in range(0, n - 1, T):   # consecutive windows, every token once
            y = ids[s + 1:s + T + 1]
            loss = F.cross_entropy(model(ids[s:s + len(y)][None])[0][0], y, reduction="none").numpy()
            pos_sum[:len(loss)] += loss
            pos_n[:len(loss)] += 1
            total += loss.sum()
        half = T // 2
        for s in range(0, n - 1, half):   # half a block of context at least
            y = ids[s + 1:s + T + 1]
            loss = F.cross_entropy(model(ids[s:s + len(y)][None])[0][0], y, reduction="none").numpy()
            first = 0 if s == 0 else T - half
            sliding += loss[first:].sum()
            scored += len(loss[first:])
            if s + T >= n - 1:
                break
    assert scored == n - 1, (scored, n - 1)
    print("consecutive windows: %.4f bits per byte (%.4f nats per token)" % (total * bpb, total / (n - 1)))
    edges = [0, 1, 4, 16] + [e for e in (32, 64, 128, 256, 512, 1024) if e < T] + [T]
    for a, b in zip(edges, edges[1:]):
        print("  positions %4d-%4d: %.3f nats per token" % (a, b - 1, pos_sum[a:b].sum() / pos_n[a:b].sum()))
    print("sliding windows (>= %d tokens of context): %.4f bits per byte" % (half, sliding * bpb))


if __name__ == "__main__":
    main()
