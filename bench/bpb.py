#!/usr/bin/env python3
"""Bits per byte of the byte vocabulary against BPE, on one wall-clock budget.

The GPT of nanoGPT's CPU recipe (tiny_gpt train's defaults: 4 layers, 4
heads, 128 wide, block 64, batch 12) trains on a text with the byte
vocabulary and with tapegrad's BPE at each --vocab sizes. Every run gets
the same training time: a short calibration run measures its ms/step, and
the real run takes budget / ms-per-step steps (its cosine schedule ends
there). The val loss at the end is printed in nats per token and in bits
per byte of the text (tiny_gpt's own figure: nats / ln 2 / bytes per
token of the val split), which puts the vocabularies on one scale.

    /usr/bin/python3 bench/bpb.py --data ../shared/data/tinyshakespeare.txt --budget 120
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def train(a, out, extra, steps, log):
    cmd = [os.path.join(a.build, "tiny_gpt"), "train", "--data", a.data, "--out", out, "--force",
           "--threads", str(a.threads), "--steps", str(steps), "--warmup", str(min(100, steps // 10)),
           "--eval-interval", str(steps), "--eval-iters", str(a.eval_iters), "--log-interval", "10"] + extra
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=f, text=True)
    text = open(log).read()
    if r.returncode:
        sys.exit(f"bpb: {' '.join(cmd)} failed:\n{text[-2000:]}")
    return text


def ms_per_step(text):
    ms = [float(m) for m in re.findall(r"([0-9.]+) ms/step", text)]
    if not ms:
        sys.exit("bpb: no ms/step in tiny_gpt's output")
    ms = sorted(ms[len(ms) // 4:])   # past the first progress lines
    return ms[len(ms) // 2]


def final(text):
    m = re.findall(r"step (\d+): train loss ([0-9.]+), val loss ([0-9.]+) \(([0-9.]+) bits per byte\)", text)
    if not m:
        sys.exit("bpb: no evaluation line in tiny_gpt's output")
    step, train_loss, val, bpb = m[-1]
    return int(step), float(train_loss), float(val), float(bpb)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--data", required=True)
    ap.add_argument("--vocab", default="512,1024,4096", help="BPE vocabulary sizes (the byte vocabulary always runs)")
    ap.add_argument("--budget", type=float, default=120, help="seconds of training per run")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eval-iters", type=int, default=100)
    ap.add_argument("--calibrate", type=int, default=60, help="steps of the calibration run")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench_bpb_")
    runs = [("bytes", [])]
    for v in a.vocab.split(","):
        tok = os.path.join(work, f"tok{v}.safetensors")
        r = subprocess.run([os.path.join(a.build, "tiny_gpt"), "tokenizer", "train", "--data", a.data, "--vocab-size",
                            v, "--out", tok], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"bpb: tokenizer train --vocab-size {v} failed: {r.stderr}")
        runs.append((f"BPE {v}", ["--tokenizer", tok]))
    rows = []
    for name, extra in runs:
        d = os.path.join(work, name.replace(" ", ""))
        ms = ms_per_step(train(a, d, extra, a.calibrate, d + ".cal.log"))
        steps = max(20, int(a.budget * 1000 / ms))
        text = train(a, d, extra, steps, d + ".log")
        step, tr, val, bpb = final(text)
        bpt = val / bpb / 0.6931471805599453
        rows.append((name, ms, steps, tr, val, bpt, bpb))
        print(f"{name}: {ms:.1f} ms/step, {steps} steps, val {val:.4f} nats/token, {bpb:.4f} bits per byte",
              file=sys.stderr)
    print(f"\n{a.budget:g} s of training each, {a.threads} thread(s), {os.path.basename(a.data)}\n")
    print("| vocabulary | ms/step | steps | train loss (nats/token) | val loss (nats/token) | val bytes/token | val bits per byte |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, ms, steps, tr, val, bpt, bpb in rows:
        print(f"| {name} | {ms:.1f} | {steps} | {tr:.4f} | {val:.4f} | {bpt:.3f} | {bpb:.4f} |")


if __name__ == "__main__":
    main()
