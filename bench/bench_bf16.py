#!/usr/bin/env python3
"""The bf16 products of tapegrad beside PyTorch's, in the same minutes
(bench/README.md, "bf16 products").

    python3 bench/bench_bf16.py [--build build] [--rounds 5] [--repeats 3]
                                [--shapes MxNxK[:tn|:nt|:tt],...] [--json FILE]

Rounds alternate the two sides (tapegrad first in even rounds, PyTorch
first in odd ones), each side one thread:
  tapegrad  build/bench/bench_bf16 --rounds 1 --json: tg_gemm_bf16 and
            tg_gemm_f32, with the vdpbf16ps and f32 FMA peaks measured in
            its own run (bench/bf16_peak.c)
  PyTorch   torch.matmul on bf16 tensors, the same under
            torch.autocast("cpu", dtype=torch.bfloat16) on the f32 operands
            (the rounding to bf16 counted, as tapegrad's is; its output is
            bf16 where tapegrad's is f32), and on f32 tensors; with
            build/bench/bf16_peak run just before and after for the peaks
            of its round.
Each product: one untimed call, then --repeats calls, the best counting, in
the process's CPU time (time another process had the core does not count;
OMP, MKL and OpenBLAS held to one thread). Shares are of the peak measured
in the same round. The table gives the medians over the rounds, and the
1-minute load average's range.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[var] = "1"
import torch  # noqa: E402 (after the thread counts are set)

DEFAULT_SHAPES = ("1024x1024x1024,1024x2304x768:nt,1024x768x768:nt,1024x3072x768:nt,1024x768x3072:nt,"
                  "1024x50304x768:nt,1024x768x2304,1024x768x768,1024x768x3072,1024x3072x768,1024x768x50304,"
                  "2304x768x1024:tn,768x768x1024:tn,3072x768x1024:tn,768x3072x1024:tn,50304x768x1024:tn")


def parse_shape(s):
    dims, _, ops = s.partition(":")
    m, n, k = (int(x) for x in dims.split("x"))
    ops = ops or "nn"
    if len(ops) != 2 or any(c not in "nt" for c in ops):
        raise ValueError(f"{s!r} is not MxNxK[:tn|:nt|:tt]")
    return m, n, k, ops[0] == "t", ops[1] == "t"


def shape_name(s):
    return s if ":" in s else s + ":nn"


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def peaks(build):
    """(f32 FMA peak, vdpbf16ps peak) in GFLOP/s from bf16_peak"""
    out = subprocess.run([os.path.join(build, "bench", "bf16_peak"), "--time", "0.6"], check=True,
                         capture_output=True, text=True).stdout
    f32 = bf16 = 0.0
    for line in out.splitlines():
        if line.startswith("avx512 f32 FMA peak ") and "absent" not in line:
            f32 = float(line.split()[4])
        if line.startswith("avx512 bf16 dot peak ") and "absent" not in line:
            bf16 = float(line.split()[4])
    return f32, bf16


def best_seconds(fn, repeats):
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def torch_round(shapes, repeats, build):
    """one PyTorch round: {shape: {impl: GFLOP/s}}, the peaks and the load"""
    torch.set_num_threads(1)
    ld = load()
    p_before = peaks(build)
    results = {}
    for s in shapes:
        m, n, k, ta, tb = parse_shape(s)
        g = torch.Generator().manual_seed(1)
        a = torch.rand((k, m) if ta else (m, k), generator=g) * 2 - 1
        b = torch.rand((n, k) if tb else (k, n), generator=g) * 2 - 1
        a16, b16 = a.bfloat16(), b.bfloat16()
        oa, ob = (a.t() if ta else a), (b.t() if tb else b)
        oa16, ob16 = (a16.t() if ta else a16), (b16.t() if tb else b16)

        def autocast():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                torch.matmul(oa, ob)

        flop = 2.0 * m * n * k
        results[shape_name(s)] = {
            "torch_bf16": flop / best_seconds(lambda: torch.matmul(oa16, ob16), repeats) / 1e9,
            "torch_autocast": flop / best_seconds(autocast, repeats) / 1e9,
            "torch_f32": flop / best_seconds(lambda: torch.matmul(oa, ob), repeats) / 1e9,
        }
    p_after = peaks(build)
    return results, max(p_before[0], p_after[0]), max(p_before[1], p_after[1]), ld


def tapegrad_round(shapes, repeats, build):
    out = subprocess.run([os.path.join(build, "bench", "bench_bf16"), "--rounds", "1", "--repeats", str(repeats),
                          "--shapes", ",".join(shapes), "--json"], check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    results = {x["shape"]: {"tg_bf16": x["bf16"], "tg_f32": x["f32"]} for x in r["results"]}
    return results, r["peak_f32"], r["peak_bf16"], r["load"], r["bf16_kernel"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--json", help="write every round's figures to this file")
    args = ap.parse_args()
    shapes = args.shapes.split(",")
    for s in shapes:
        parse_shape(s)
    rounds = []
    kernel = "?"
    for r in range(args.rounds):
        sides = ["tapegrad", "torch"] if r % 2 == 0 else ["torch", "tapegrad"]
        rec = {"round": r}
        for side in sides:
            if side == "tapegrad":
                res, pf, pb, ld, kernel = tapegrad_round(shapes, args.repeats, args.build)
            else:
                res, pf, pb, ld = torch_round(shapes, args.repeats, args.build)
            rec[side] = {"results": res, "peak_f32": pf, "peak_bf16": pb, "load": ld}
        rounds.append(rec)
        print(f"round {r + 1}/{args.rounds}: load {rec['tapegrad']['load']:.2f} / {rec['torch']['load']:.2f}, "
              f"peaks bf16 {rec['tapegrad']['peak_bf16']:.1f} / {rec['torch']['peak_bf16']:.1f}, "
              f"f32 {rec['tapegrad']['peak_f32']:.1f} / {rec['torch']['peak_f32']:.1f} GFLOP/s", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rounds, f, indent=1)

    cols = [("tapegrad", "tg_bf16", "peak_bf16", "tapegrad bf16"), ("torch", "torch_bf16", "peak_bf16", "PyTorch bf16"),
            ("torch", "torch_autocast", "peak_bf16", "PyTorch autocast"),
            ("tapegrad", "tg_f32", "peak_f32", "tapegrad f32"), ("torch", "torch_f32", "peak_f32", "PyTorch f32")]
    med = lambda xs: statistics.median(xs)  # noqa: E731
    both = [rec[s] for rec in rounds for s in ("tapegrad", "torch")]
    loads = [x["load"] for x in both]
    print(f"1 thread, {len(rounds)} rounds (best of {args.repeats} calls each), tapegrad's bf16 on {kernel}, "
          f"PyTorch {torch.__version__}; median peaks: bf16 {med([x['peak_bf16'] for x in both]):.1f}, "
          f"f32 {med([x['peak_f32'] for x in both]):.1f} GFLOP/s; load {min(loads):.2f}-{max(loads):.2f}\n")
    print("| shape MxNxK:op(A)op(B) | " + " | ".join(c[3] for c in cols) + " | tapegrad bf16 / PyTorch bf16 |")
    print("| --- " * (len(cols) + 2) + "|")
    for s in shapes:
        name = shape_name(s)
        cells, g = [], {}
        for side, key, peak, _ in cols:
            vals = [rec[side]["results"][name][key] for rec in rounds]
            shares = [100 * rec[side]["results"][name][key] / rec[side][peak] for rec in rounds if rec[side][peak] > 0]
            g[key] = med(vals)
            cells.append(f"{g[key]:.1f} ({med(shares):.0f}%)" if shares else f"{g[key]:.1f}")
        ratio = med([rec["tapegrad"]["results"][name]["tg_bf16"] / rec["torch"]["results"][name]["torch_bf16"]
                     for rec in rounds])
        print(f"| {name} | " + " | ".join(cells) + f" | {ratio:.2f} |")


if __name__ == "__main__":
    main()
