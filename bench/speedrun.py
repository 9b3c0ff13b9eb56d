#!/usr/bin/python3
"""The speedrun: the best model in the time nanoGPT's CPU recipe takes.

First nanoGPT's character-level CPU recipe runs in PyTorch
(bench/train_torch.py: 4 layers, 4 heads, 128 wide, block 64, batch 12,
AdamW, 2000 steps, evaluations of 20 batches as nanoGPT's README runs it
on a CPU, on --threads cores). Its wall time, up to its "wall" line, is
the budget: then tapegrad runs its speedrun config with --time-budget
equal to it,

    tiny_gpt train --config CONFIG --data DATA --time-budget SECONDS

one run after the other on the same quiet machine. Both hold out the
text's last 10% as val and report val loss in bits per byte (PyTorch's
tokens are bytes: nats / ln 2; tapegrad's own figure: nats per token /
ln 2 / bytes per token of the val split). The figure compared is the
val split's own loss, every token once in consecutive windows
(train_torch.py --full-val after its run, outside the budget; the
config's full_val for tapegrad's evaluations); PyTorch's last estimate
(20 batches of random windows, as its recipe evaluates) is shown
beside it. Each evaluation line is
timestamped as it arrives, so the plot (OUT/speedrun.svg) shows val bits
per byte against wall-clock seconds for both runs.

--ablate then runs the config with one change at a time, each on the same
budget: the recipe again with another seed (how far apart two runs of
one recipe land), each of its choices undone, each option it leaves off
added; and prints the table of what each is worth. --jobs 2 runs those
two at a time, each pinned to a core of its own.
--mpi N runs tapegrad's config under `mpirun -np N` (one thread per
process) as one more row.

    /usr/bin/python3 bench/speedrun.py --data ../shared/data/tinyshakespeare.txt
    /usr/bin/python3 bench/speedrun.py --data F --budget 140 --skip-torch --ablate --jobs 2
"""
import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LN2 = math.log(2)
EVAL_TG = re.compile(r"step (\d+): train loss ([0-9.]+), val loss ([0-9.]+) \(([0-9.]+) bits per byte\)")
RAN_OUT = re.compile(r"ran out at step (\d+) of (\d+)")
EVAL_TORCH = re.compile(r"step (\d+): train loss ([0-9.]+), val loss ([0-9.]+)")
FULL_TORCH = re.compile(r"^full val loss ([0-9.]+)$")
WALL_TORCH = re.compile(r"^wall [0-9.]+ seconds$")


def log(msg):
    sys.stdout.flush()   # the tables' lines first: both streams may go to one file
    print(msg, file=sys.stderr, flush=True)


def timed_lines(cmd, env=None, logpath=None):
    """Runs cmd, returning [(seconds since start, line)] of its stdout and
    stderr merged, and its exit code."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, bufsize=1)
    lines = []
    with open(logpath or os.devnull, "w") as f:
        for raw in p.stdout:
            for line in raw.replace("\r", "\n").split("\n"):
                if line.strip():
                    lines.append((time.perf_counter() - t0, line))
                    f.write("%.2f %s\n" % (lines[-1][0], line))
    rc = p.wait()
    return lines, rc, time.perf_counter() - t0


def read_config(path):
    """name = value lines of a tiny_gpt --config file, in order."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                k, v = (s.strip() for s in line.split("=", 1))
                out.append((k.replace("-", "_"), v.strip("\"'")))
    return out


def write_config(path, items):
    with open(path, "w") as f:
        for k, v in items:
            f.write("%s = %s\n" % (k, v))


def run_torch(a, out):
    cmd = [sys.executable, os.path.join(ROOT, "bench", "train_torch.py"), "--data", a.data, "--threads",
           str(a.threads), "--steps", str(a.torch_steps), "--eval-iters", "20", "--full-val"]
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
    log("speedrun: " + " ".join(cmd))
    lines, rc, _ = timed_lines(cmd, env, os.path.join(out, "torch.log"))
    if rc:
        sys.exit("speedrun: PyTorch run failed (exit %d):\n%s" % (rc, "\n".join(l for _, l in lines[-20:])))
    points = [(t, float(m.group(3)) / LN2) for t, l in lines for m in [EVAL_TORCH.search(l)] if m]
    full = [float(m.group(1)) / LN2 for _, l in lines for m in [FULL_TORCH.search(l)] if m]
    ended = [t for t, l in lines if WALL_TORCH.search(l)]   # the whole val is computed after: not in the budget
    if not points or not full or not ended:
        sys.exit("speedrun: the PyTorch run printed no %s" % ("evaluation" if not points else "full val loss"
                                                             if not full else "wall line"))
    return {"name": "PyTorch, nanoGPT CPU recipe (%d steps)" % a.torch_steps, "wall": ended[0], "points": points,
            "val_bpb": full[0], "estimate_bpb": points[-1][1], "steps": a.torch_steps}


def run_tapegrad(a, out, name, items, budget, procs=1, core=None):
    d = os.path.join(out, re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_"))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    conf = os.path.join(d, "run.conf")
    write_config(conf, items)
    cmd = [os.path.join(a.build, "tiny_gpt"), "train", "--config", conf, "--data", a.data, "--time-budget",
           "%g" % budget, "--out", os.path.join(d, "out"), "--threads", str(a.threads if procs == 1 else 1)]
    if procs > 1:
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []   # Open MPI refuses root otherwise
        cmd = ["mpirun", "--oversubscribe", "--bind-to", "none"] + root + ["-np", str(procs)] + cmd
    if core is not None:
        cmd = ["taskset", "-c", str(core)] + cmd
    log("speedrun: %s: %s" % (name, " ".join(cmd)))
    lines, rc, wall = timed_lines(cmd, dict(os.environ, OPENBLAS_NUM_THREADS="1"), os.path.join(d, "train.log"))
    if rc:
        sys.exit("speedrun: %s failed (exit %d):\n%s" % (name, rc, "\n".join(l for _, l in lines[-20:])))
    points = [(t, float(m.group(4))) for t, l in lines for m in [EVAL_TG.search(l)]   # --ema: the averages' lines
              if m and "of the raw weights" not in l]
    steps = int(EVAL_TG.search([l for _, l in lines if EVAL_TG.search(l)][-1]).group(1)) if points else 0
    if not points:
        sys.exit("speedrun: %s printed no evaluation" % name)
    out = [m for _, l in lines for m in [RAN_OUT.search(l)] if m]
    if out:   # stopped at its deadline: its last evaluation is an earlier step's
        name += " (ran out at step %s of %s: the figure is step %d's)" % (out[0].group(1), out[0].group(2), steps)
    return {"name": name, "wall": wall, "points": points, "val_bpb": points[-1][1], "steps": steps,
            "estimate_bpb": None if dict(items).get("full_val") in ("true", "1") else points[-1][1]}


def svg_plot(path, runs, budget):
    """val bits per byte against seconds, one polyline per run."""
    W, H, L, R, T, B = 720, 440, 70, 20, 20, 60
    pts = [p for r in runs for p in r["points"]]
    def nice(span, most):   # a round step that cuts span into at most `most` parts
        return next(d * 10 ** e for e in range(-2, 5) for d in (1, 2, 2.5, 5) if span / (d * 10 ** e) <= most)
    lo = min(v for _, v in pts)
    top = min(max(v for _, v in pts), lo + 4)   # the first evaluation (an untrained model) may sit above it
    dy = nice(top - lo, 8)
    y0 = math.floor(lo / dy) * dy
    n_y = math.ceil((top - y0) / dy - 1e-9)
    y1 = y0 + n_y * dy
    end = max(max(t for t, _ in pts), budget)
    dx = nice(end, 6)
    n_x = math.ceil(end / dx)
    x1 = n_x * dx
    sx = lambda t: L + (W - L - R) * t / x1  # noqa: E731
    sy = lambda v: T + (H - T - B) * (1 - (min(v, y1) - y0) / (y1 - y0))  # noqa: E731
    colors = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"]
    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">'
         % (W, H), '<rect width="100%" height="100%" fill="white"/>']
    for i in range(n_y + 1):
        v = y0 + dy * i
        s.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">'
                 '%.2f</text>' % (L, W - R, sy(v), sy(v), L - 6, sy(v) + 4, v))
    for i in range(n_x + 1):
        t = dx * i
        s.append('<text x="%.1f" y="%d" text-anchor="middle">%.0f</text>' % (sx(t), H - B + 18, t))
    s.append('<text x="%d" y="%d" text-anchor="middle">wall-clock seconds</text>' % ((L + W - R) // 2, H - 20))
    s.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">val bits per byte</text>'
             % ((T + H - B) // 2, (T + H - B) // 2))
    s.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#888" stroke-dasharray="4 3"/>'
             % (sx(budget), sx(budget), T, H - B))
    for i, r in enumerate(runs):
        c = colors[i % len(colors)]
        s.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                 % (c, " ".join("%.1f,%.1f" % (sx(t), sy(v)) for t, v in r["points"])))
        s.append('<text x="%d" y="%d" fill="%s">%s: %.3f</text>' % (L + 250, T + 16 + 16 * i, c, r["name"],
                                                                   r["val_bpb"]))
    s.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(s) + "\n")


def ablations(items):
    """(name, config): the recipe again (the spread of one run), then each of
    its changes undone, then each option it leaves off added, one at a
    time; a change the config does not make has no undo row."""
    cfg = dict(items)
    rows = [("the recipe again, --seed 2", list(dict(cfg, seed="2").items()))]

    def change(name, **changes):
        c = dict(cfg)
        for k, v in changes.items():
            if v is None:
                c.pop(k, None)
            else:
                c[k] = v
        if c != cfg:
            rows.append((name, list(c.items())))

    on = lambda k: cfg.get(k) in ("true", "1")  # noqa: E731
    llama = cfg.get("arch") == "llama"
    change("bytes instead of the BPE tokenizer", tokenizer=None)
    if llama:
        change("GPT instead of the Llama", arch="gpt", n_kv_head=None, hidden_dim=None, multiple_of=None,
               rope_theta=None, rope=None, norm_eps=None, tied=None)
    depth = int(cfg.get("n_layer", 4))   # tiny_gpt's default
    change("%d layers instead of %d" % (depth + 1, depth), n_layer=str(depth + 1))
    if depth > 1:
        change("%d layers instead of %d" % (depth - 1, depth), n_layer=str(depth - 1))
    change("AdamW instead of Muon", optimizer="adamw", muon_lr=None, muon_momentum=None)
    if cfg.get("optimizer") == "muon" and "muon_lr" in cfg:
        change("--muon-lr 0.02 (the default) instead of %s" % cfg["muon_lr"], muon_lr=None)
    change("AdamW instead of Muon, --lr doubled", optimizer="adamw", muon_lr=None, muon_momentum=None,
           lr="%g" % (2 * float(cfg.get("lr", 1e-3))), min_lr="%g" % (2 * float(cfg.get("min_lr", 1e-4))))
    for flag in ("qk_norm", "zero_init_proj", "untie_head"):
        change(("without --" if on(flag) else "with --") + flag.replace("_", "-"), **{flag: None if on(flag) else "true"})
    if "logit_softcap" in cfg:
        change("without --logit-softcap", logit_softcap=None)
    else:
        change("with --logit-softcap 15", logit_softcap="15")
    own = "swiglu" if llama else "gelu"
    if cfg.get("mlp", own) != own:
        change("the family's own MLP instead of --mlp " + cfg["mlp"], mlp=None)
    else:
        change("with --mlp relu2", mlp="relu2")
    if cfg.get("schedule") == "wsd":
        change("cosine instead of warmup-stable-decay", schedule="cosine", decay_frac=None)
    else:
        change("with --schedule wsd", schedule="wsd")
    if float(cfg.get("dropout", 0)) > 0:
        change("no dropout", dropout="0")
    else:
        change("with --dropout 0.1", dropout="0.1")
    wd = float(cfg.get("weight_decay", 0.1))   # tiny_gpt's default
    if wd != 0.1:
        change("weight decay 0.1 (the default) instead of %g" % wd, weight_decay="0.1")
    if wd > 0 and 2 * wd != 0.1:   # doubled, unless that is no change or the row above
        change("weight decay %g instead of %g" % (2 * wd, wd), weight_decay="%g" % (2 * wd))
    if cfg.get("sampling") == "epochs":
        change("random windows (nanoGPT's sampling) instead of epochs", sampling=None)
    else:
        change("with --sampling epochs", sampling="epochs")
    if float(cfg.get("ema", 0)) > 0:
        change("without --ema (the weights evaluated, not their average)", ema=None)
    else:
        change("with --ema 0.995", ema="0.995")
    m = re.fullmatch(r"bpe:(\d+)", cfg.get("tokenizer", ""))
    if m:
        v = int(m.group(1))
        change("bpe:%d instead of bpe:%d" % (v // 2, v), tokenizer="bpe:%d" % (v // 2))
        change("bpe:%d instead of bpe:%d" % (2 * v, v), tokenizer="bpe:%d" % (2 * v))
        change("pieces that join words and punctuation (bpe:%d:spaces, tapegrad 0.2's)" % v,
               tokenizer="bpe:%d:spaces" % v)
    return rows


def run_rows(a, rows, budget):
    """The ablation's runs, a.jobs at a time (at most one per core this
    process may use), each pinned to a core of its own (runs side by side
    share the memory bus: the recipe's row shows what that costs); yields
    the results in the rows' order as they are done."""
    if a.jobs <= 1:
        yield from (run_tapegrad(a, a.out, name, cfg, budget) for name, cfg in rows)
        return
    free = sorted(os.sched_getaffinity(0))[:a.jobs]

    def one(row):
        core = free.pop()
        try:
            return run_tapegrad(a, a.out, row[0], row[1], budget, core=core)
        finally:
            free.append(core)

    with ThreadPoolExecutor(len(free)) as ex:
        yield from ex.map(one, rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the text (tinyshakespeare)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "speedrun.conf"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--torch-steps", type=int, default=2000)
    ap.add_argument("--budget", type=float, help="seconds (default: the PyTorch run's wall time)")
    ap.add_argument("--skip-torch", action="store_true", help="only tapegrad (needs --budget)")
    ap.add_argument("--ablate", action="store_true", help="also each change of the recipe undone, one at a time")
    ap.add_argument("--jobs", type=int, default=1, help="ablation runs at a time, each pinned to its own core")
    ap.add_argument("--mpi", type=int, default=0, help="also the config under mpirun -np N")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "speedrun"))
    a = ap.parse_args()
    if a.skip_torch and not a.budget:
        sys.exit("speedrun: --skip-torch needs --budget")
    os.makedirs(a.out, exist_ok=True)
    items = read_config(a.config)
    runs = []
    if not a.skip_torch:
        runs.append(run_torch(a, a.out))
    budget = a.budget or runs[0]["wall"]
    runs.append(run_tapegrad(a, a.out, "tapegrad, %s" % os.path.basename(a.config), items, budget))
    if a.mpi > 1:
        runs.append(run_tapegrad(a, a.out, "tapegrad, mpirun -np %d" % a.mpi, items, budget, a.mpi))
    svg_plot(os.path.join(a.out, "speedrun.svg"), runs, budget)
    print("\nbudget %.1f s, %d thread(s), %s\n" % (budget, a.threads, os.path.basename(a.data)))
    print("| run | steps | wall s | val bits per byte | the run's last estimate (random windows) |")
    print("| --- | --- | --- | --- | --- |")
    for r in runs:
        est = "-" if r["estimate_bpb"] is None else "%.4f" % r["estimate_bpb"]
        print("| %s | %d | %.1f | %.4f | %s |" % (r["name"], r["steps"], r["wall"], r["val_bpb"], est))
    print("\nplot: %s" % os.path.join(a.out, "speedrun.svg"))
    if a.ablate:
        base = runs[1 if not a.skip_torch else 0]
        print("\n| change | steps | wall s | val bits per byte | against the recipe |")
        print("| --- | --- | --- | --- | --- |")
        print("| (the recipe) | %d | %.1f | %.4f | |" % (base["steps"], base["wall"], base["val_bpb"]))
        rows = ablations(items)
        for (name, _), r in zip(rows, run_rows(a, rows, budget)):
            sys.stdout.write("| %s | %d | %.1f | %.4f | %+.4f |\n" % (name, r["steps"], r["wall"], r["val_bpb"],
                                                                    r["val_bpb"] - base["val_bpb"]))
            sys.stdout.flush()   # one write per row: another thread's log line cannot split it

if __name__ == "__main__":
    main()
