#!/usr/bin/python3
"""tapegrad against PyTorch, side by side: one command, one table.

    /usr/bin/python3 bench/bench.py --build build [--configs S,M,L,N]
        [--threads 1,2] [--rounds 5] [--steps N] [--warmup W] [--chunk K] [--json PATH]
    /usr/bin/python3 bench/bench.py --ops [OP,OP,...] [--repeats 20] [same flags]
    /usr/bin/python3 bench/bench.py --flat [STEPS] [--rss-every K] [--configs C] [--threads T]

Without --ops or --flat, the training-step benchmark (below). --ops times
single ops instead (bench_ops against torch_ops.py: forward and
forward+backward per op, one table per config and thread count; see
run_ops); --flat measures resident memory over a long run of the first
config at the first thread count (see run_flat). bench/README.md
describes all three.

1. Builds bench_step and bench_sgemm in the CMake build folder --build
   (configuring it first if it has no CMakeCache.txt).
2. sgemm: bench_sgemm at each thread count, on 1024^3 and the linear-layer
   shapes of the chosen configs, each repeated for 0.5 s. The peak at a
   thread count is the highest median-call GFLOP/s over those shapes.
3. Per config: bench_step --write-init writes the initial weights once;
   then, per thread count and round, bench_step (tapegrad) and
   bench/torch_ref.py (PyTorch) train from those weights on the same
   batches. PyTorch runs twice per round, with the environment's
   OMP_WAIT_POLICY and with OMP_WAIT_POLICY=PASSIVE, and the variant with
   the lower median is kept (a variant more than 1.5x slower than the
   other in round 1 is not run again; a PyTorch chunk longer than
   max(60 s, 10x tapegrad's first chunk) stops its variant). Each side is
   pinned to the thread count: OPENBLAS_NUM_THREADS=T and
   OMP_NUM_THREADS=T for both, openblas_set_num_threads(T) in bench_step,
   torch.set_num_threads(T) in torch_ref.py. The processes of a round
   start together and run their warm-up steps (excluded); then they take
   turns (--chunk timed steps each, tapegrad, PyTorch default, PyTorch
   PASSIVE, then 0.3 s of OpenBLAS 1024^3 products for the sgemm
   throughput, and back), one computing at a time while the others wait
   on stdin, 0.2 s apart, until each side has run --steps. The machine's
   speed drifts by up to 30% over seconds; turns of a second or less put
   both sides (and the sgemm probe) in the same seconds, where whole runs
   one after the other (the first version of this harness) did not.
4. Prints markdown tables (stdout; progress goes to stderr) and writes
   every raw run to --json (default BUILD/bench_results.json).

Statistics: "median" is the median over every timed step of every round
(every chunk) of one side; the bracket is [lowest, highest] of the per-round medians.
ratio = tapegrad median / PyTorch median. tokens/s = B*T / median.

FLOP per step (nanoGPT's estimate_mfu): tokens * (6 N + 12 L C T), with
N the parameter count without the position embedding (wte counts: it is
the tied LM head; a Llama has no position embedding: N is every
parameter), L layers, C = n_embd = H * dh, T the block size,
tokens = B * T. The attention term counts the full T x T (as nanoGPT),
not the causal half. GFLOP/s = FLOP per step / median; the % divides it
by the machine's sgemm throughput at the same thread count, timed in the
same seconds: OpenBLAS 1024^3 products (bench_sgemm --turn-time) take a
turn of 0.3 s beside the two sides' chunks, and the median call over
all rounds counts. (The sgemm table printed last is timed before the
steps, on 1024^3 and each config's linear-layer shapes, for reference.)

Loss agreement: both sides start from identical f32 weights and see
identical batches; the tables give the largest |loss_tapegrad -
loss_torch| over all steps (warm-up included) and at the last step,
over every pair of runs with the same thread count.
"""

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "bench")

# name: (n_layer, n_head, n_embd, block_size, batch, default steps,
#        default warm-up, default chunk[, Llama settings])
# Warm-up: the first steps of either side pay one-time costs (tapegrad's
# arena settles into one block after the first step and its pages are
# touched in the second; PyTorch's caching allocator fills): three steps
# are left out on every config. Chunk: timed steps per turn (interleave),
# about 0.3 to 1.5 s of either side.
# Without Llama settings a config is the GPT (bench_step's default, vocab
# VOCAB); with them, bench_step --arch llama against torch_llama.py:
# LL is llama2.c's smallest TinyStories shape (dim 288, 6 layers, 6 heads,
# SwiGLU width 768, seq 256) on tiny_gpt's byte vocabulary of 259 ids, LG
# the same with grouped-query attention (2 kv heads). RoPE interleaved,
# theta 10000, RMSNorm eps 1e-5, tied head (bench_step's Llama defaults).
LLAMA_MHA = {"arch": "llama", "n_kv_head": 6, "hidden_dim": 768, "vocab": 259}
LLAMA_GQA = dict(LLAMA_MHA, n_kv_head=2)
CONFIGS = {
    "S": (2, 4, 64, 64, 16, 60, 3, 15),
    "M": (4, 4, 128, 128, 16, 8, 3, 2),
    "L": (6, 8, 256, 256, 8, 5, 3, 1),
    "N": (4, 4, 128, 64, 12, 40, 3, 10),
    "LL": (6, 6, 288, 256, 8, 5, 3, 1, LLAMA_MHA),
    "LG": (6, 6, 288, 256, 8, 5, 3, 1, LLAMA_GQA),
}
VOCAB = 65
SEED = 1337
FLAT_STEPS = 100   # --flat without a count: quick; 1000 for a real measurement


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def build(build_dir, targets=("bench_step", "bench_sgemm")):
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        log("configuring %s" % build_dir)
        subprocess.run(["cmake", "-S", ROOT, "-B", build_dir], check=True, stdout=subprocess.DEVNULL)
    log("building %s in %s" % (" and ".join(targets), build_dir))
    subprocess.run(["cmake", "--build", build_dir, "-j2", "--target"] + list(targets),
                   check=True, stdout=subprocess.DEVNULL)
    exe = {n: os.path.join(build_dir, "bench", n) for n in targets}
    for n, p in exe.items():
        if not os.access(p, os.X_OK):
            sys.exit("bench.py: %s was not built at %s" % (n, p))
    return exe


def env_for(threads, wait_policy=None):
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    env["OMP_NUM_THREADS"] = str(threads)
    if wait_policy:
        env["OMP_WAIT_POLICY"] = wait_policy
    return env


def run_json(cmd, env, timeout=None):
    """The JSON line a benchmark prints; None if it ran past timeout seconds."""
    lines = run_json_lines(cmd, env, timeout)
    return None if lines is None else lines[-1]


def run_json_lines(cmd, env, timeout=None):
    """Every JSON line a benchmark prints; None if it ran past timeout seconds."""
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if p.returncode != 0:
        sys.exit("bench.py: %s failed (exit %d):\n%s" % (" ".join(cmd), p.returncode, p.stderr))
    try:
        lines = [json.loads(line) for line in p.stdout.strip().splitlines()]
        if not lines:
            raise ValueError("no output")
        return lines
    except ValueError:
        sys.exit("bench.py: %s printed no JSON:\n%s\n%s" % (" ".join(cmd), p.stdout, p.stderr))


def llama_of(cfg):
    """A config's Llama settings, or None for a GPT."""
    return cfg[8] if len(cfg) > 8 else None


def size_flags(name):
    """bench_step's flags for a config's model."""
    cfg = CONFIGS[name]
    nl, nh, c, blk = cfg[:4]
    ll = llama_of(cfg)
    flags = ["--n-layer", str(nl), "--n-head", str(nh), "--n-embd", str(c), "--block-size", str(blk),
             "--vocab", str(ll["vocab"] if ll else VOCAB)]
    if ll:
        flags += ["--arch", "llama", "--n-kv-head", str(ll["n_kv_head"]), "--hidden-dim", str(ll["hidden_dim"])]
    return flags


def flop_per_step(cfg, n_params):
    nl, nh, c, t, b = cfg[:5]
    n = n_params if llama_of(cfg) else n_params - t * c   # the GPT without wpe (block_size, C)
    return b * t * (6 * n + 12 * nl * c * t)


def fma_peak(exe):
    """One core's FMA peak from bench/fma_peak: (GFLOP/s of its best path, which path)."""
    out = subprocess.run([exe, "--time", "0.5"], capture_output=True, text=True, check=True).stdout
    best = (0.0, "none")
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] in ("avx2", "avx512") and f[1] == "peak":
            try:
                best = max(best, (float(f[2]), f[0]))
            except ValueError:
                pass   # "absent" on a CPU without the path
    return best


def kernel_path(build_dir):
    """The kernel path tapegrad's programs take here (tiny_gpt --version)."""
    try:
        out = subprocess.run([os.path.join(build_dir, "tiny_gpt"), "--version"], capture_output=True,
                             text=True).stdout
        return next((l.split(":", 1)[1].strip() for l in out.splitlines() if l.startswith("kernel path")), "?")
    except OSError:
        return "? (no build/tiny_gpt)"


def sgemm_shapes(names):
    shapes = ["1024x1024x1024"]
    for name in names:
        nl, nh, c, t, b = CONFIGS[name][:5]
        bt = b * t
        ll = llama_of(CONFIGS[name])
        if ll:   # wq and wo, wk and wv, w1 and w3, w2, the head
            ckv, hid = ll["n_kv_head"] * (c // nh), ll["hidden_dim"]
            linears = ((c, c), (ckv, c), (hid, c), (c, hid), (ll["vocab"], c))
        else:    # c_attn, c_fc, mlp c_proj, lm head
            linears = ((3 * c, c), (4 * c, c), (c, 4 * c), (VOCAB, c))
        for n, k in linears:
            s = "%dx%dx%d:nt" % (bt, n, k)
            if s not in shapes:
                shapes.append(s)
    return shapes


def summarize(runs):
    steps = [v for r in runs for v in r["ms"]]
    meds = [r["median_ms"] for r in runs]
    return {"median": statistics.median(steps), "lo": min(meds), "hi": max(meds),
            "rss_kb": max(r["peak_rss_kb"] for r in runs)}


def loss_diffs(tg_runs, th_runs):
    worst_all = worst_last = 0.0
    for a in tg_runs:
        for b in th_runs:
            d = [abs(x - y) for x, y in zip(a["losses"], b["losses"])]
            worst_all = max(worst_all, max(d))
            worst_last = max(worst_last, d[-1])
    return worst_all, worst_last


def drop_slow_settings(name, t, runs, live, dropped, score):
    """After round 1: keeps only the PyTorch settings (in live) whose
    score(first result) is within 1.5x of the best one's; records why the
    others went in dropped."""
    if len(live) < 2:
        return
    scores = {v: score(runs["torch"][str(v)][0]) for v in live}
    best = min(scores.values())
    for v in list(live):
        if scores[v] > 1.5 * best:
            live.remove(v)
            dropped[str(v)] = "%.1fx slower than the best setting in round 1" % (scores[v] / best)
            log("%s t%d: torch %s dropped (%s)" % (name, t, v or "default", dropped[str(v)]))


def alternate(name, t, rounds, variants, tg_run, th_run, score):
    """Runs tapegrad and each PyTorch setting (variant) `rounds` times,
    alternating which side goes first. tg_run() and th_run(variant,
    timeout) return (result, log text); th_run's result is None when it
    timed out. A PyTorch setting that times out (a run longer than
    max(60 s, 10x tapegrad's first run)), or whose round-1 score is more
    than 1.5x the best setting's, is not run again. Returns (runs,
    dropped): runs = {"tapegrad": [results], "torch": {str(variant):
    [results]}} without empty settings; dropped = {str(variant): why}."""
    runs = {"tapegrad": [], "torch": {str(v): [] for v in variants}}
    live, dropped, tg_wall = list(variants), {}, None
    for r in range(rounds):
        order = ["tg"] + ["th%d" % i for i in range(len(variants))]
        if r % 2:
            order.reverse()
        for who in order:
            if who == "tg":
                t0 = time.time()
                res, text = tg_run()
                tg_wall = tg_wall or time.time() - t0
                runs["tapegrad"].append(res)
                log("%s t%d round %d tapegrad: %s" % (name, t, r + 1, text))
                continue
            v = variants[int(who[2:])]
            if v not in live:
                continue
            # a PyTorch setting whose threads fight (minutes per step) is cut short
            limit = max(60.0, 10 * tg_wall)
            res, text = th_run(v, limit)
            label = "torch%s" % (" PASSIVE" if v else "")
            if res is None:
                live.remove(v)
                dropped[str(v)] = "timed out after %.0f s in round %d" % (limit, r + 1)
                log("%s t%d round %d %s: %s, dropped" % (name, t, r + 1, label, dropped[str(v)]))
                continue
            runs["torch"][str(v)].append(res)
            log("%s t%d round %d %s: %s" % (name, t, r + 1, label, text))
        if r == 0:
            drop_slow_settings(name, t, runs, live, dropped, score)
    runs["torch"] = {v: rs for v, rs in runs["torch"].items() if rs}
    if not runs["torch"]:
        sys.exit("bench.py: every PyTorch run of %s at %d threads timed out" % (name, t))
    return runs, dropped


def start_chunked(cmd, env, err):
    """A benchmark process that waits on stdin between chunks (--chunk)."""
    return subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                            bufsize=1)


def next_line(p, cmd, err, limit=None):
    """The next line a chunked process prints ("wait" or its JSON); None if
    none came within limit seconds. select() looks at the pipe, not at
    what readline() has buffered: sound because a process prints exactly
    one line per turn it is given, so nothing waits in the buffer."""
    if limit is not None and not select.select([p.stdout], [], [], limit)[0]:
        return None
    line = p.stdout.readline()
    if not line:
        p.wait()
        err.seek(0)
        sys.exit("bench.py: %s failed (exit %s):\n%s" % (" ".join(cmd), p.returncode, err.read()))
    return line.strip()


def interleave(name, t, rounds, variants, tg_cmd, th_cmd, probe_cmd, chunk, steps):
    """Training steps, interleaved: per round, one tapegrad process, one
    PyTorch process per setting (variant) and an sgemm probe (bench_sgemm
    --turn-time) start together and run their warm-up; then they take
    turns, `chunk` timed steps each (the probe: 0.3 s of 1024^3 products),
    in the order tapegrad, settings..., probe and back, until each side
    has run `steps`. Only one process computes at a time (the others block
    on stdin); 0.2 s passes between turns so that the last one's idle
    threads stop spinning. A PyTorch chunk longer than max(60 s, 10x
    tapegrad's first chunk) stops that setting for good; a setting whose
    round-1 median is more than 1.5x the best setting's is not run again.
    Returns (runs, dropped) as alternate() does, runs with "sgemm": the
    probe's result per round."""
    runs = {"tapegrad": [], "torch": {str(v): [] for v in variants}, "sgemm": []}
    live, dropped, tg_wall = list(variants), {}, None
    with tempfile.TemporaryFile("w+") as err:
        for r in range(rounds):
            cmds = {"tg": tg_cmd + ["--chunk", str(chunk)]}
            cmds.update({v: th_cmd + ["--chunk", str(chunk)] for v in live})
            cmds["probe"] = probe_cmd
            procs = {who: start_chunked(c, env_for(t, None if who in ("tg", "probe") else who), err)
                     for who, c in cmds.items()}
            for who, p in procs.items():
                if next_line(p, cmds[who], err) != "wait":
                    sys.exit("bench.py: %s did not wait for its first chunk" % " ".join(cmds[who]))
            order, done = list(procs), {}
            for c in range((steps + chunk - 1) // chunk):
                for who in (order if (r + c) % 2 == 0 else order[::-1]):
                    if who not in procs:
                        continue
                    time.sleep(0.2)
                    limit = None if who in ("tg", "probe") else max(60.0, 10 * (tg_wall or 6.0))
                    t0 = time.time()
                    procs[who].stdin.write("\n")
                    procs[who].stdin.flush()
                    line = next_line(procs[who], cmds[who], err, limit)
                    if who == "tg":
                        tg_wall = tg_wall or time.time() - t0
                    if line is None:
                        procs.pop(who).kill()
                        live.remove(who)
                        dropped[str(who)] = "a chunk ran past %.0f s in round %d" % (limit, r + 1)
                        log("%s t%d round %d torch %s: %s, dropped" % (name, t, r + 1, who or "default",
                                                                        dropped[str(who)]))
                    elif line != "wait":
                        done[who] = json.loads(line)
            for who, p in procs.items():
                p.stdin.close()
                if who == "probe":   # its statistics come when stdin closes
                    done[who] = json.loads(next_line(p, cmds[who], err))
                if p.wait() != 0:
                    err.seek(0)
                    sys.exit("bench.py: %s failed (exit %d):\n%s" % (" ".join(cmds[who]), p.returncode, err.read()))
                res = done[who]
                if who == "probe":
                    runs["sgemm"].append(res["results"][0])
                    log("%s t%d round %d sgemm 1024^3: median %.1f GFLOP/s" % (name, t, r + 1,
                                                                             res["results"][0]["median_gflops"]))
                    continue
                label = "tapegrad" if who == "tg" else "torch%s" % (" PASSIVE" if who else "")
                log("%s t%d round %d %s: median %.1f ms, loss %.6f" % (name, t, r + 1, label, res["median_ms"],
                                                                        res["loss"]))
                if who == "tg":
                    runs["tapegrad"].append(res)
                else:
                    runs["torch"][str(who)].append(res)
            if r == 0:
                drop_slow_settings(name, t, runs, live, dropped, lambda res: res["median_ms"])
    runs["torch"] = {v: rs for v, rs in runs["torch"].items() if rs}
    if not runs["torch"]:
        sys.exit("bench.py: every PyTorch run of %s at %d threads was dropped" % (name, t))
    return runs, dropped


def report_end(results, t_start, load_start, json_path, raw):
    """The table's footer (PyTorch settings dropped, wall time, load) and
    the raw results written to json_path."""
    dropped = ["%s at %d thread(s): PyTorch %s %s" % (r["config"], r["threads"], v if v != "None" else "default", why)
               for r in results.values() for v, why in r["torch_dropped"].items()]
    if dropped:
        print("\nPyTorch settings dropped: " + "; ".join(dropped) + ".")
    print("\nwall time %.0f s; load average (1 min) %.2f at the start, %.2f at the end (%d CPUs); raw results in %s"
          % (time.time() - t_start, load_start[0], os.getloadavg()[0], os.cpu_count(), json_path))
    with open(json_path, "w") as f:
        json.dump(raw, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--build", default="build", help="CMake build folder (default: build)")
    ap.add_argument("--configs", default="S,M,L,N", help="comma-separated subset of %s (LL, LG: the Llama)"
                    % ",".join(CONFIGS))
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--rounds", type=int, default=5, help="runs per side per config and thread count")
    ap.add_argument("--steps", type=int, help="timed steps per run (default: per config, 5 to 20)")
    ap.add_argument("--warmup", type=int, help="warm-up steps per run (default: per config, 1 to 3; "
                    "--ops: warm-up repeats, default 3)")
    ap.add_argument("--chunk", type=int, help="timed steps per turn when the two sides take turns "
                    "(default: per config, 1 to 15)")
    ap.add_argument("--no-passive", action="store_true", help="skip PyTorch's OMP_WAIT_POLICY=PASSIVE runs")
    ap.add_argument("--json", help="raw results (default: BUILD/bench_results.json, "
                    "BUILD/bench_ops_results.json with --ops, BUILD/bench_flat_results.json with --flat)")
    ap.add_argument("--ops", nargs="?", const="all", metavar="OPS",
                    help="time single ops instead of training steps: all of them, or a comma-separated "
                         "list (bench_ops --list)")
    ap.add_argument("--repeats", type=int, default=20, help="--ops: timed repeats per op per run (default 20)")
    ap.add_argument("--flat", type=int, nargs="?", const=FLAT_STEPS, metavar="STEPS",
                    help="memory flatness instead: train the first of --configs for STEPS steps "
                         "(default %d; 1000 for a real measurement) at the first of --threads" % FLAT_STEPS)
    ap.add_argument("--rss-every", type=int, help="--flat: sample memory every K steps (default STEPS/50)")
    args = ap.parse_args()

    names = [s.strip().upper() for s in args.configs.split(",") if s.strip()]
    bad = [n for n in names if n not in CONFIGS]
    if bad or not names:
        sys.exit("bench.py: unknown config(s) %s; choose from %s" % (bad, ",".join(CONFIGS)))
    try:
        threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        sys.exit("bench.py: --threads must be comma-separated integers")
    if args.rounds < 1 or (args.steps is not None and args.steps < 1) or (args.chunk is not None and args.chunk < 1) or \
            (args.warmup is not None and args.warmup < 0) or min(threads) < 1:
        sys.exit("bench.py: --rounds, --steps, --chunk, --threads must be >= 1 and --warmup >= 0")
    if args.ops is not None and args.flat is not None:
        sys.exit("bench.py: --ops and --flat are separate runs; give one")
    if args.ops is not None and any(llama_of(CONFIGS[n]) for n in names):
        sys.exit("bench.py: --ops has the GPT configs only (bench_ops' shapes), not %s"
                 % ",".join(n for n in names if llama_of(CONFIGS[n])))
    if args.repeats < 1 or (args.flat is not None and args.flat < 1) or \
            (args.rss_every is not None and args.rss_every < 1):
        sys.exit("bench.py: --repeats, --flat and --rss-every must be >= 1")
    build_dir = os.path.abspath(args.build)
    mode = "ops" if args.ops is not None else "flat" if args.flat is not None else None
    exe = build(build_dir, {"ops": ("bench_ops",), "flat": ("bench_step",)}.get(mode, ("bench_step", "bench_sgemm",
                                                                                      "fma_peak")))
    json_path = args.json or os.path.join(build_dir, "bench_%sresults.json" % (mode + "_" if mode else ""))
    work = os.path.join(build_dir, "bench_work")
    os.makedirs(work, exist_ok=True)
    t_start = time.time()
    load_start = os.getloadavg()
    if mode == "ops":
        return run_ops(args, exe, names, threads, json_path, t_start, load_start)
    if mode == "flat":
        return run_flat(args, exe, names[0], threads[0], work, json_path, t_start, load_start)

    # ---- the core's FMA peak (bench/fma_peak), before the steps and after ----
    fma = [fma_peak(exe["fma_peak"])]
    log("FMA peak of one core: %.1f GFLOP/s (%s)" % fma[0])

    # ---- sgemm peak ----
    shapes = sgemm_shapes(names)
    sgemm = {}
    for t in threads:
        log("sgemm, %d thread(s): %s" % (t, " ".join(shapes)))
        sgemm[t] = run_json([exe["bench_sgemm"], "--threads", str(t), "--min-time", "0.5"] + shapes,
                            env_for(t))["results"]
    peak = {t: max(x["median_gflops"] for x in sgemm[t]) for t in threads}

    # ---- training steps ----
    variants = [None] if args.no_passive else [None, "PASSIVE"]
    results = {}
    for name in names:
        cfg = CONFIGS[name]
        b = cfg[4]
        steps = args.steps if args.steps is not None else cfg[5]
        warm = args.warmup if args.warmup is not None else cfg[6]
        chunk = args.chunk if args.chunk is not None else cfg[7]
        wpath = os.path.join(work, "init_%s.safetensors" % name)
        init = run_json([exe["bench_step"]] + size_flags(name) + ["--batch-size", str(b), "--steps", "1",
                        "--warmup", "0", "--seed", str(SEED), "--write-init", wpath], env_for(1))
        for t in threads:
            common = ["--batch-size", str(b), "--steps", str(steps), "--warmup", str(warm),
                      "--threads", str(t), "--seed", str(SEED)]
            tg_cmd = [exe["bench_step"], "--init", wpath] + common
            th_cmd = [sys.executable, os.path.join(HERE, "torch_ref.py"), "--init", wpath] + common
            probe_cmd = [exe["bench_sgemm"], "--threads", str(t), "--turn-time", "0.3"]
            runs, dropped = interleave(name, t, args.rounds, variants, tg_cmd, th_cmd, probe_cmd, chunk, steps)
            results["%s/%d" % (name, t)] = {"config": name, "threads": t, "steps": steps, "warmup": warm,
                                            "n_params": init["n_params"], "runs": runs,
                                            "torch_dropped": dropped}

    fma.append(fma_peak(exe["fma_peak"]))
    core_peak = max(f[0] for f in fma)
    log("FMA peak after the steps: %.1f GFLOP/s; the tables use %.1f per core" % (fma[1][0], core_peak))

    # ---- tables ----
    rows, agree = [], []
    for key, res in results.items():
        name, t = res["config"], res["threads"]
        cfg = CONFIGS[name]
        tg = summarize(res["runs"]["tapegrad"])
        th_all = {v: summarize(rs) for v, rs in res["runs"]["torch"].items()}
        best_v = min(th_all, key=lambda v: th_all[v]["median"])
        th = th_all[best_v]
        fl = flop_per_step(cfg, res["n_params"])
        tok = cfg[3] * cfg[4]
        g_tg, g_th = fl / (tg["median"] / 1e3) / 1e9, fl / (th["median"] / 1e3) / 1e9
        th_runs_all = [r for rs in res["runs"]["torch"].values() for r in rs]
        d_all, d_last = loss_diffs(res["runs"]["tapegrad"], th_runs_all)
        tg_losses = {tuple(r["losses"]) for r in res["runs"]["tapegrad"]}
        # the sgemm throughput in the same seconds: the probe's turns between the steps
        probe = statistics.median(x["median_gflops"] for x in res["runs"]["sgemm"])
        res.update(flop_per_step=fl, torch_best_variant=best_v, tapegrad_summary=tg, torch_summary=th_all,
                   sgemm_in_turns_gflops=probe)
        peak_t = core_peak * t
        res.update(fma_peak_gflops=peak_t)
        rows.append("| %s (%d,%d,%d,%d,%d) | %d | %.1f [%.1f-%.1f] | %.1f [%.1f-%.1f]%s | **%.2f** | %.0f / %.0f "
                    "| %.0f / %.0f | %.1f (%.0f%%) / %.1f (%.0f%%) | %.1f | %.0f%% / %.0f%% of %.0f |"
                    % (name, *cfg[:5], t, tg["median"], tg["lo"], tg["hi"], th["median"], th["lo"], th["hi"],
                       " P" if best_v == "PASSIVE" else "", tg["median"] / th["median"], tok / tg["median"] * 1e3,
                       tok / th["median"] * 1e3, tg["rss_kb"] / 1024, th["rss_kb"] / 1024,
                       g_tg, 100 * g_tg / probe, g_th, 100 * g_th / probe, probe,
                       100 * g_tg / peak_t, 100 * g_th / peak_t, peak_t))
        a = res["runs"]["tapegrad"][0]
        b = th_runs_all[0]
        agree.append("| %s | %d | %d | %.4f / %.4f | %.4f / %.4f | %.1e | %.1e | %s |"
                     % (name, t, len(a["losses"]), a["losses"][0], b["losses"][0], a["loss"], b["loss"],
                        d_all, d_last, "yes" if len(tg_losses) == 1 else "NO"))

    print("\n### Training step, tapegrad vs PyTorch %s\n" % _torch_version())
    print("ms/step: median over all timed steps of %d rounds [lowest-highest round median]; "
          "PyTorch: best of default / OMP_WAIT_POLICY=PASSIVE (P). "
          "Achieved GFLOP/s (nanoGPT formula) with %% of the sgemm throughput timed in turns between "
          "the same steps (OpenBLAS 1024^3, median call, same thread count), and of the machine's FMA peak "
          "(bench/fma_peak: one core's best of its AVX2 and AVX-512 probes, before and after the steps, "
          "times the threads; %s; tapegrad's kernel path: %s).\n"
          % (args.rounds, "; ".join("%.1f GFLOP/s (%s)" % f for f in fma), kernel_path(build_dir)))
    print("| config (L,H,C,T,B) | threads | tapegrad ms/step | PyTorch ms/step | ratio tg/pt "
          "| tokens/s tg / pt | peak RSS MB tg / pt | GFLOP/s tg / pt | sgemm GFLOP/s | FMA peak share tg / pt |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    print("\n### Loss agreement (same f32 init, same batches)\n")
    print("| config | threads | steps | first loss tg / pt | last loss tg / pt | max abs diff, all steps "
          "| abs diff, last step | tapegrad runs identical |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(agree))
    print("\n### sgemm before the steps (OpenBLAS; GFLOP/s of the median call, best call in brackets)\n")
    print("| shape MxNxK | " + " | ".join("%d thread%s" % (t, "s" if t > 1 else "") for t in threads) + " |")
    print("| --- |" + " --- |" * len(threads))
    for i, s in enumerate(shapes):
        print("| %s | " % s + " | ".join("%.1f (%.1f)" % (sgemm[t][i]["median_gflops"], sgemm[t][i]["gflops"])
                                         for t in threads) + " |")
    print("| **peak (highest median)** | " + " | ".join("**%.1f**" % peak[t] for t in threads) + " |")
    report_end(results, t_start, load_start, json_path, {"sgemm": sgemm, "peak_gflops": peak, "fma_peak": fma,
                                                         "results": results})


# ---- --ops: single ops, tapegrad (bench_ops) against PyTorch (torch_ops.py) ----

def run_ops(args, exe, names, threads, json_path, t_start, load_start):
    """Per config and thread count, --rounds runs of bench_ops and of
    torch_ops.py (each PyTorch wait-policy variant), alternating which goes
    first; per op the median over every timed repeat of every round. The
    PyTorch variant kept is the one with the lower sum over ops of the
    fwd+bwd medians (a variant 1.5x slower in round 1 is not run again)."""
    known = subprocess.run([exe["bench_ops"], "--list"], stdout=subprocess.PIPE, text=True,
                           check=True).stdout.split()
    ops = known if args.ops == "all" else [o.strip() for o in args.ops.split(",") if o.strip()]
    bad = [o for o in ops if o not in known]
    if bad or not ops:
        sys.exit("bench.py: unknown op(s) %s; choose from %s" % (bad, ",".join(known)))
    warm = args.warmup if args.warmup is not None else 3
    variants = [None] if args.no_passive else [None, "PASSIVE"]
    results = {}
    for name in names:
        for t in threads:
            common = ["--config", name, "--threads", str(t), "--repeats", str(args.repeats),
                      "--warmup", str(warm), "--ops", ",".join(ops)]
            tg_cmd = [exe["bench_ops"]] + common
            th_cmd = [sys.executable, os.path.join(HERE, "torch_ops.py")] + common
            def tg_ops():
                t0 = time.time()
                return run_json_lines(tg_cmd, env_for(t)), "%.0f s" % (time.time() - t0)

            def th_ops(v, limit):
                t0 = time.time()
                return run_json_lines(th_cmd, env_for(t, v), timeout=limit), "%.0f s" % (time.time() - t0)

            runs, dropped = alternate(name, t, args.rounds, variants, tg_ops, th_ops,
                                      lambda res: sum(x["fwdbwd_median_ms"] for x in res))
            results["%s/%d" % (name, t)] = {"config": name, "threads": t, "ops": ops, "repeats": args.repeats,
                                            "warmup": warm, "runs": runs, "torch_dropped": dropped}

    print("\n### Single ops, tapegrad vs PyTorch %s (f32)\n" % _torch_version())
    print("ms: median over all timed repeats of %d round(s) of %d repeats; fwd is the forward with "
          "the tape / autograd graph recorded, fwd+bwd adds the backward from a fixed output gradient. "
          "ratio = tapegrad / PyTorch. GFLOP/s over fwd+bwd (matrix products only). "
          "check: largest relative difference between the two sides' sums of squares of the output "
          "and of each input gradient. PyTorch: best of default / OMP_WAIT_POLICY=PASSIVE (P)."
          % (args.rounds, args.repeats))
    for key, res in results.items():
        name, t = res["config"], res["threads"]
        tg_runs = res["runs"]["tapegrad"]
        th_sum = {v: op_medians(rs) for v, rs in res["runs"]["torch"].items()}
        best_v = min(th_sum, key=lambda v: sum(m["fwdbwd"] for m in th_sum[v].values()))
        tg_med, th_med = op_medians(tg_runs), th_sum[best_v]
        res.update(torch_best_variant=best_v, tapegrad_medians=tg_med, torch_medians=th_sum)
        th_first = res["runs"]["torch"][best_v][0]
        print("\n#### %s (%d,%d,%d,%d,%d), %d thread%s%s\n"
              % (name, *CONFIGS[name][:5], t, "s" if t > 1 else "", ", PyTorch P" if best_v == "PASSIVE" else ""))
        print("| op | shape | tapegrad fwd ms | PyTorch fwd ms | ratio | tapegrad fwd+bwd ms "
              "| PyTorch fwd+bwd ms | ratio | GFLOP/s tg / pt | check |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for i, a in enumerate(tg_runs[0]):
            b = th_first[i]
            op = a["op"]
            if b["op"] != op or b["shape"] != a["shape"]:
                sys.exit("bench.py: the two sides ran different ops: %s %s / %s %s"
                         % (op, a["shape"], b["op"], b["shape"]))
            x, y = tg_med[op], th_med[op]
            fl = a["flop_fwd"] + a["flop_bwd"]
            gf = ("%.1f / %.1f" % (fl / x["fwdbwd"] / 1e6, fl / y["fwdbwd"] / 1e6)) if fl else ""
            d = check_diff(a["check"], b["check"])
            print("| %s | %s | %.3f | %.3f | %.2f | %.3f | %.3f | **%.2f** | %s | %.0e%s |"
                  % (op, a["shape"], x["fwd"], y["fwd"], x["fwd"] / y["fwd"], x["fwdbwd"], y["fwdbwd"],
                     x["fwdbwd"] / y["fwdbwd"], gf, d, " DIFFERENT" if d > 1e-3 else ""))
    report_end(results, t_start, load_start, json_path, {"results": results})


def op_medians(runs):
    """{op: {"fwd": median ms, "fwdbwd": median ms}} over every repeat of every run."""
    out = {}
    for line in runs[0]:
        op = line["op"]
        rows = [x for run in runs for x in run if x["op"] == op]
        out[op] = {"fwd": statistics.median(v for x in rows for v in x["fwd_ms"]),
                   "fwdbwd": statistics.median(v for x in rows for v in x["fwdbwd_ms"])}
    return out


def check_diff(a, b):
    """Largest relative difference between two "check" objects."""
    xs = [a["out_sq"]] + a["grad_sq"]
    ys = [b["out_sq"]] + b["grad_sq"]
    if len(xs) != len(ys):
        return float("inf")
    return max(abs(x - y) / max(abs(x), abs(y), 1e-30) for x, y in zip(xs, ys))


# ---- --flat: resident memory over a long training run ----

def run_flat(args, exe, name, t, work, json_path, t_start, load_start):
    """One config, one thread count: bench_step and torch_ref.py each train
    STEPS steps (no warm-up) from the same weights with --rss-every K; the
    table gives the resident set after step 1, at the sample nearest above
    10% of the steps and at the end, the growth between the last two, and
    the peak. PyTorch runs with OMP_WAIT_POLICY=PASSIVE when t > 1 (unless
    --no-passive): its default spins against other load."""
    b = CONFIGS[name][4]
    steps = args.flat
    every = args.rss_every or max(1, steps // 50)
    wpath = os.path.join(work, "init_%s.safetensors" % name)
    run_json([exe["bench_step"]] + size_flags(name) + ["--batch-size", str(b), "--steps", "1",
              "--warmup", "0", "--seed", str(SEED), "--write-init", wpath], env_for(1))
    common = ["--init", wpath, "--batch-size", str(b), "--steps", str(steps), "--warmup", "0",
              "--threads", str(t), "--seed", str(SEED), "--rss-every", str(every)]
    wait = "PASSIVE" if t > 1 and not args.no_passive else None
    log("%s t%d: tapegrad, %d steps" % (name, t, steps))
    tg = run_json([exe["bench_step"]] + common, env_for(t))
    log("%s t%d: torch%s, %d steps" % (name, t, " PASSIVE" if wait else "", steps))
    th = run_json([sys.executable, os.path.join(HERE, "torch_ref.py")] + common, env_for(t, wait))

    print("\n### Memory over %d training steps: %s (%d,%d,%d,%d,%d), %d thread%s\n"
          % (steps, name, *CONFIGS[name][:5], t, "s" if t > 1 else ""))
    print("Resident set (/proc/self/statm) sampled every %d steps outside the timed region; "
          "peak = getrusage ru_maxrss. Growth is from the sample at about 10%% of the steps to the last.\n" % every)
    print("| side | RSS MB after step 1 | RSS MB at step %s | RSS MB at step %d | growth MB (%%) | peak RSS MB "
          "| heap allocations after step 1 / at the end | median ms/step |" % (_ten_percent_step(tg), steps))
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, r in (("tapegrad", tg), ("PyTorch%s" % (" P" if wait else ""), th)):
        smp = r["rss_samples"]
        i10 = smp["step"].index(_ten_percent_step(r))
        first, ten, last = smp["rss_kb"][0], smp["rss_kb"][i10], smp["rss_kb"][-1]
        allocs = "%d / %d" % (smp["alloc_calls"][0], smp["alloc_calls"][-1]) if "alloc_calls" in smp else "-"
        print("| %s | %.1f | %.1f | %.1f | %+.2f (%+.2f%%) | %.1f | %s | %.1f |"
              % (label, first / 1024, ten / 1024, last / 1024, (last - ten) / 1024, 100 * (last - ten) / ten,
                 max(smp["peak_rss_kb"]) / 1024, allocs, r["median_ms"]))
    d = max(abs(x - y) for x, y in zip(tg["losses"], th["losses"]))
    print("\nlosses: tapegrad %.4f -> %.4f, PyTorch %.4f -> %.4f, largest step-by-step difference %.1e"
          % (tg["losses"][0], tg["loss"], th["losses"][0], th["loss"], d))
    print("\nwall time %.0f s; load average (1 min) %.2f at the start, %.2f at the end (%d CPUs); raw results in %s"
          % (time.time() - t_start, load_start[0], os.getloadavg()[0], os.cpu_count(), json_path))
    with open(json_path, "w") as f:
        json.dump({"config": name, "threads": t, "steps": steps, "rss_every": every, "tapegrad": tg, "torch": th},
                  f, indent=1)


def _ten_percent_step(run):
    """The first sampled step at or past 10% of the run (not step 1 unless it is the only one)."""
    steps = run["rss_samples"]["step"]
    later = [s for s in steps[1:] if s >= 0.1 * steps[-1]]
    return later[0] if later else steps[-1]


def _torch_version():
    try:
        out = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return out.stdout.strip()
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
