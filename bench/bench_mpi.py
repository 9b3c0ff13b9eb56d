#!/usr/bin/python3
"""Data-parallel training over MPI, measured (docs/distributed.md).

    bench/bench_mpi.py [--build build] [--data FILE] [--rounds 3] [--quick]
                       [--only tiny,overlap,probe,torch,model]

tiny     tiny_gpt train's tokens/s for nanoGPT's CPU recipe (config N: 4
         layers, 4 heads, 128 wide, block 64, batch 12) and config M (4, 4,
         128, block 128, batch 16), the same global batch each way:
         1 process x 1 thread, 1 x 2 threads, 2 processes x 1 thread, and
         2 x 1 with --zero 1; the scaling efficiency of 2 x 1 against
         1 x 1 (tokens/s of 2 x 1 / (2 x tokens/s of 1 x 1)), and each
         process's peak RSS (/usr/bin/time) and AdamW moments. The
         setups take turns, one run each per round (this machine's speed
         drifts by up to 30% over seconds); the median over rounds of each
         run's median step (ms_per_step of metrics.csv, the first 5 steps
         left out).
overlap  bench/bench_dist on 2 processes, configs N and M: steps with the
         gradient buckets overlapping backward against one bucket after
         backward, taking turns inside one run; the time hidden per step
         and a timeline of the buckets.
probe    bench_dist --probe on 2 processes: one allreduce's time from 8
         bytes to 64 MiB, and the ring model's alpha and bandwidth.
torch    PyTorch DistributedDataParallel (gloo, 2 processes x 1 thread,
         bench/torch_ddp.py) against bench_dist on 2 processes x 1 thread:
         the same model (config N and M), initial weights (bench_step
         --write-init), global batch and batches; time per step, tapegrad
         / PyTorch (the issue's goal: at most 0.6).
model    the cost model of docs/distributed.md with its parameters
         measured here (probe; one process's step time from bench_dist on
         one process): its prediction for 2 and 3 processes against
         bench_dist's measured steps (how far off it is), then predicted
         step time and efficiency for 8 to 1024 processes on 10 and 100
         Gb/s networks for config L and GPT-2 124M.

mpirun runs with --bind-to core when the processes fit the cores, else
--oversubscribe --bind-to none, and --allow-run-as-root as root. Output:
tables on stdout, the raw numbers as JSON in --json (default
bench_mpi.json in the build directory).
"""

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORES = os.cpu_count() or 1
# name: (n_layer, n_head, n_embd, block_size, batch) as bench/bench.py's CONFIGS
CONFIGS = {"N": (4, 4, 128, 64, 12), "M": (4, 4, 128, 128, 16), "L": (6, 8, 256, 256, 8)}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def mpirun(np_):
    cmd = ["mpirun", "-np", str(np_)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += ["--bind-to", "core"] if np_ <= CORES else ["--oversubscribe", "--bind-to", "none"]
    return cmd


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode:
        sys.exit("bench_mpi: %s failed (%d):\n%s" % (" ".join(cmd[:6]), p.returncode, p.stderr[-2000:]))
    return p


def last_json(text, key):
    """The object under `key` of the last JSON line of text that has it."""
    for line in reversed(text.splitlines()):
        if line.startswith("{") and '"%s"' % key in line:
            return json.loads(line)[key]
    sys.exit("bench_mpi: no %s line in:\n%s" % (key, text[-2000:]))


# ---- tiny_gpt tokens/s ------------------------------------------------------

SETUPS = [("1 x 1", 1, 1, 0), ("1 x 2 threads", 1, 2, 0), ("2 x 1", 2, 1, 0), ("2 x 1 --zero 1", 2, 1, 1)]


def tiny_run(a, cfg, procs, threads, zero, steps):
    nl, nh, c, t, g = CONFIGS[cfg]
    out = tempfile.mkdtemp(prefix="bench_mpi_")
    flags = ["train", "--n-layer", str(nl), "--n-head", str(nh), "--n-embd", str(c), "--block-size", str(t),
             "--batch-size", str(g // procs), "--threads", str(threads), "--steps", str(steps),
             "--eval-interval", str(steps), "--eval-iters", "1", "--log-interval", str(steps), "--out", out]
    if a.data:
        flags += ["--data", a.data]
    if zero:
        flags += ["--zero", "1"]
    timer = ["/usr/bin/time", "-f", "peak_rss_kb %M"] if os.path.exists("/usr/bin/time") else []
    cmd = (mpirun(procs) if procs > 1 else []) + timer + [os.path.join(a.build, "tiny_gpt")] + flags
    p = run(cmd)
    with open(os.path.join(out, "metrics.csv")) as f:
        rows = [r.split(",") for r in f.read().splitlines()[1:]]
    shutil.rmtree(out, ignore_errors=True)
    ms = [float(r[3]) for r in rows if r[3] and int(r[0]) > 5]
    rss = [int(x) for x in re.findall(r"peak_rss_kb (\d+)", p.stderr)]
    moments = re.findall(r"AdamW's moments ([0-9.]+) MB", p.stderr)
    return {"median_ms": statistics.median(ms), "rss_kb": rss, "moments_mb": float(moments[0]) if moments else None,
            "tokens_per_s": g * t / (statistics.median(ms) / 1e3)}


def tiny(a, res):
    steps = {"N": 12 if a.quick else 60, "M": 8 if a.quick else 25}
    for cfg in ("N", "M"):
        nl, nh, c, t, g = CONFIGS[cfg]
        per = {s[0]: [] for s in SETUPS}
        for r in range(a.rounds):
            for k in range(len(SETUPS)):   # each round starts one setup later
                name, procs, threads, zero = SETUPS[(k + r) % len(SETUPS)]
                log("tiny %s %s, round %d" % (cfg, name, r + 1))
                per[name].append(tiny_run(a, cfg, procs, threads, zero, steps[cfg]))
        res["tiny"][cfg] = per
        print("\ntiny_gpt train, config %s (%d layers, %d heads, %d wide, block %d, global batch %d), %d rounds"
              % (cfg, nl, nh, c, t, g, a.rounds))
        print("| processes x threads | ms/step | tokens/s | peak RSS per process | AdamW moments per process |")
        print("| --- | --- | --- | --- | --- |")
        tps = {}
        for name, procs, _, _ in SETUPS:
            runs = per[name]
            ms = statistics.median(x["median_ms"] for x in runs)
            tps[name] = g * t / (ms / 1e3)
            rss = max((max(x["rss_kb"]) for x in runs if x["rss_kb"]), default=0)
            mom = runs[0]["moments_mb"]
            print("| %s | %.1f | %.0f | %.0f MB | %s |" % (name, ms, tps[name], rss / 1024,
                                                           "%.3g MB" % mom if mom else "(one process: all)"))
        eff = tps["2 x 1"] / (2 * tps["1 x 1"])
        print("scaling efficiency of 2 x 1 against 1 x 1: %.0f%% (goal: at least 90%%); 2 x 1 --zero 1: %.0f%%"
              % (100 * eff, 100 * tps["2 x 1 --zero 1"] / (2 * tps["1 x 1"])))
        res["tiny"][cfg + "_efficiency"] = eff


# ---- bench_dist: overlap, probe ----------------------------------------------

def dist_flags(cfg, extra=()):
    nl, nh, c, t, g = CONFIGS[cfg]
    return ["--n-layer", str(nl), "--n-head", str(nh), "--n-embd", str(c), "--block-size", str(t),
            "--batch-size", str(g)] + list(extra)


def bench_dist(a, procs, args):
    cmd = (mpirun(procs) if procs > 1 else []) + [os.path.join(a.build, "bench", "bench_dist")] + args
    return run(cmd).stdout


def overlap(a, res):
    for cfg in ("N", "M"):
        steps = "10" if a.quick else "40"
        out = bench_dist(a, 2, dist_flags(cfg, ["--steps", steps]))
        print("\n" + "\n".join(l for l in out.splitlines() if not l.startswith("{")))
        res["overlap"][cfg] = last_json(out, "bench_dist")


def probe(a, res):
    out = bench_dist(a, 2, ["--probe", "--max-mb", "16" if a.quick else "64"])
    print("\n" + "\n".join(l for l in out.splitlines() if not l.startswith("{")))
    res["probe"] = last_json(out, "bench_dist_probe")


# ---- PyTorch DDP --------------------------------------------------------------

def torch_side(a, res):
    steps = "8" if a.quick else "30"
    print("\nPyTorch DDP (gloo) against tapegrad (dist/), 2 processes x 1 thread, the same weights and batches")
    print("| config | global batch | tapegrad ms/step | PyTorch DDP ms/step | tapegrad / PyTorch |")
    print("| --- | --- | --- | --- | --- |")
    for cfg in ("N", "M"):
        nl, nh, c, t, g = CONFIGS[cfg]
        init = os.path.join(tempfile.mkdtemp(prefix="bench_mpi_"), "init.safetensors")
        run([os.path.join(a.build, "bench", "bench_step")] + dist_flags(cfg, ["--steps", "1", "--warmup", "0",
                                                                              "--write-init", init]))
        tp, pt = [], []
        for r in range(a.rounds):
            tp.append(last_json(bench_dist(a, 2, dist_flags(cfg, ["--steps", steps, "--init", init])),
                                "bench_dist")["overlap_ms"])
            p = run(["/usr/bin/python3", os.path.join(ROOT, "bench", "torch_ddp.py"), "--init", init, "--batch-size",
                     str(g), "--steps", steps, "--procs", "2", "--threads", "1"])
            pt.append(json.loads(p.stdout.strip().splitlines()[-1])["median_ms"])
        shutil.rmtree(os.path.dirname(init), ignore_errors=True)
        t_ms, p_ms = statistics.median(tp), statistics.median(pt)
        print("| %s | %d | %.1f | %.1f | %.2f |" % (cfg, g, t_ms, p_ms, t_ms / p_ms))
        res["torch"][cfg] = {"tapegrad_ms": tp, "torch_ms": pt, "ratio": t_ms / p_ms}


# ---- the cost model -----------------------------------------------------------

def comm_time(R, nbytes, k, alpha, bw):
    """Ring allreduce of nbytes in k buckets among R processes."""
    if R == 1:
        return 0.0
    return k * 2 * (R - 1) * alpha + 2 * (R - 1) / R * nbytes / bw


def step_time(R, t_compute, nbytes, alpha, bw, k, backward_share=2 / 3):
    """Predicted step: compute, plus what of the sum backward does not hide.
    Buckets fill evenly along backward: the sums may start once the first
    bucket is complete, after 1/k of backward, and the last bucket's sum
    (the embeddings', complete at the very end) can never hide."""
    c = comm_time(R, nbytes, k, alpha, bw)
    hide = backward_share * t_compute * (k - 1) / k
    exposed = max(c - hide, c / k) if R > 1 else 0.0
    return t_compute + exposed


def best_buckets(R, t_compute, nbytes, alpha, bw):
    ks = sorted({max(1, int(nbytes / (b * (1 << 20)))) for b in (0.25, 1, 4, 25, 100, 400)} | {1})
    return min(ks, key=lambda k: step_time(R, t_compute, nbytes, alpha, bw, k))


def gpt_params(nl, c, t, v):
    """tg_gpt_num_params without biases: V C + T C + n_layer (12 C^2 + 2 C) + C"""
    return v * c + t * c + nl * (12 * c * c + 2 * c) + c


def gpt_flop(nl, c, t, v, batch):
    return batch * t * (6 * gpt_params(nl, c, t, v) + 12 * nl * c * t)


def model(a, res):
    pr = res.get("probe") or last_json(bench_dist(a, 2, ["--probe", "--max-mb", "16"]), "bench_dist_probe")
    alpha, bw = pr["alpha_s"], pr["bandwidth_Bps"]
    steps = "10" if a.quick else "30"
    print("\nThe cost model against measured runs (bench_dist, config N and M, global batch as in the config)")
    print("parameters measured here: alpha %.2f us, bandwidth %.2f GB/s (loopback, 2 processes)" % (1e6 * alpha,
                                                                                               bw / 1e9))
    print("| config | processes | compute per step (1 process, G/R rows) | predicted step | measured step | "
          "off by |")
    print("| --- | --- | --- | --- | --- | --- |")
    checks = []
    for cfg in ("N", "M"):
        nl, nh, c, t, g = CONFIGS[cfg]
        for R in (2, 3):
            per = g // R * R
            one = last_json(bench_dist(a, 1, dist_flags(cfg, ["--steps", steps, "--batch-size", str(per // R)])),
                            "bench_dist")
            meas = last_json(bench_dist(a, R, dist_flags(cfg, ["--steps", steps, "--batch-size", str(per)])),
                             "bench_dist")
            slow = max(1.0, R / CORES)   # more processes than cores share them
            tc = one["overlap_ms"] / 1e3 * slow
            nbytes = 4 * meas["n_params"]
            pred = step_time(R, tc, nbytes, alpha, bw, meas["buckets"])
            off = (pred - meas["overlap_ms"] / 1e3) / (meas["overlap_ms"] / 1e3)
            print("| %s | %d | %.1f ms%s | %.1f ms | %.1f ms | %+.0f%% |"
                  % (cfg, R, 1e3 * tc, " (x%.2f: %d processes on %d cores)" % (slow, R, CORES) if slow > 1 else "",
                     1e3 * pred, meas["overlap_ms"], 100 * off))
            checks.append({"config": cfg, "R": R, "predicted_ms": 1e3 * pred, "measured_ms": meas["overlap_ms"]})
    res["model"]["checks"] = checks

    # one process's compute: config L measured (bench_dist, 1 process, all cores); GPT-2 124M from L's FLOP rate
    lq = last_json(bench_dist(a, 1, dist_flags("L", ["--steps", "3" if a.quick else "6", "--warmup", "1",
                                                     "--threads", str(CORES)])), "bench_dist")
    nl, nh, c, t, g = CONFIGS["L"]
    rate = gpt_flop(nl, c, t, 65, g) / (lq["overlap_ms"] / 1e3)
    # (gradient bytes, compute seconds of one sequence on one process)
    models = {"config L (6 layers, 256 wide, block 256)": (4 * gpt_params(nl, c, t, 65), gpt_flop(nl, c, t, 65, 1) / rate),
              "GPT-2 124M (12 layers, 768 wide, block 1024, vocab 50257)":
                  (4 * gpt_params(12, 768, 1024, 50257), gpt_flop(12, 768, 1024, 50257, 1) / rate)}
    nets = {"10 Gb/s, alpha 30 us": (30e-6, 10e9 / 8 * 0.9), "100 Gb/s, alpha 5 us": (5e-6, 100e9 / 8 * 0.9)}
    print("\nPredictions: a process is a machine like this one (%d cores, %.1f GFLOP/s as config L measured here); "
          "the network's alpha is assumed, its bandwidth 90%% of the line rate; buckets chosen by the model" %
          (CORES, rate / 1e9))
    for mname, (nbytes, t1) in models.items():
        for scaling, per in (("8 sequences per process (weak scaling)", lambda R: 8),
                             ("a global batch of 1024 sequences (strong scaling)", lambda R: 1024 / R)):
            print("\n%s, %s: %.0f MB of gradients, %.3g s of compute per sequence" % (mname, scaling, nbytes / 1e6, t1))
            print("| processes | compute | " + " | ".join("%s: step, efficiency, buckets" % n for n in nets) + " |")
            print("| --- | --- | " + " | ".join("---" for _ in nets) + " |")
            for R in (8, 16, 32, 64, 128, 256, 512, 1024):
                tc = t1 * per(R)
                cells = []
                for n, (al, bwn) in nets.items():
                    k = best_buckets(R, tc, nbytes, al, bwn)
                    st = step_time(R, tc, nbytes, al, bwn, k)
                    cells.append("%.3g s, %.1f%%, %d of %.3g MB" % (st, 100 * tc / st, k, nbytes / k / 1e6))
                print("| %d | %.3g s | %s |" % (R, tc, " | ".join(cells)))
    res["model"]["rate_flops"] = rate


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--data", default=None, help="text for tiny_gpt (default: its built-in corpus)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="few steps, to see that everything runs")
    ap.add_argument("--only", default="tiny,overlap,probe,torch,model")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    if not shutil.which("mpirun"):
        sys.exit("bench_mpi: no mpirun (Debian: openmpi-bin)")
    for exe in ("tiny_gpt", "bench/bench_dist", "bench/bench_step"):
        if not os.path.exists(os.path.join(a.build, exe)):
            sys.exit("bench_mpi: %s is not built in %s (cmake --build %s)" % (exe, a.build, a.build))
    res = {"tiny": {}, "overlap": {}, "probe": None, "torch": {}, "model": {}}
    parts = a.only.split(",")
    for name, fn in (("tiny", tiny), ("overlap", overlap), ("probe", probe), ("torch", torch_side), ("model", model)):
        if name in parts:
            fn(a, res)
    path = a.json or os.path.join(a.build, "bench_mpi.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    log("raw numbers in %s" % path)


if __name__ == "__main__":
    main()
