#!/usr/bin/python3
"""A GPT's training step with the tanh GELU against the same GPT with the
erf GELU, taking turns (bench/README.md, "The tanh GELU").

    /usr/bin/python3 bench/gelu_step.py [--bench-step build/bench/bench_step ...]
        [--rounds 5] [--steps 12] [--warmup 3] [--chunk 1] [--threads 1]
        -- BENCH_STEP MODEL FLAGS...

Per round, one bench_step process per build (each --bench-step, several:
builds compared in the same seconds) and form (`--gelu erf`, `--gelu
tanh`), all with the model flags (e.g. --n-layer 6 --n-head 8 --n-embd
256 --block-size 256 --batch-size 8 --bias), start together and run their
warm-up steps (not timed); then they take turns as bench.py's interleave
does: --chunk timed steps each, one process computing while the others
block on stdin, 0.2 s apart, in one order and then the reverse, until
each has run --steps. The per-step times are bench_step's own (the step
alone, each timed). Prints, per build and form, the median over every
timed step of every round, the range of the rounds' medians, tanh / erf
(of those medians, and the median over rounds of each round's own
ratio), the final losses, and the load average before and after.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from bench import env_for, next_line, start_chunked


def one_round(cmds, threads, r, chunk, steps):
    """Every side's bench_step JSON after one round of turns."""
    done = {}
    with tempfile.TemporaryFile("w+") as err:
        procs = {who: start_chunked(c, env_for(threads), err) for who, c in cmds.items()}
        for who, p in procs.items():
            if next_line(p, cmds[who], err) != "wait":
                sys.exit("gelu_step.py: %s did not wait for its first chunk" % " ".join(cmds[who]))
        order = list(procs)
        for c in range((steps + chunk - 1) // chunk):
            for who in (order if (r + c) % 2 == 0 else order[::-1]):
                time.sleep(0.2)
                procs[who].stdin.write("\n")
                procs[who].stdin.flush()
                line = next_line(procs[who], cmds[who], err)
                if line != "wait":
                    done[who] = json.loads(line)
        for who, p in procs.items():
            p.stdin.close()
            if p.wait() != 0:
                err.seek(0)
                sys.exit("gelu_step.py: %s failed (exit %d):\n%s" % (" ".join(cmds[who]), p.returncode, err.read()))
    return done


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--bench-step", action="append", help="a bench_step build (repeatable; default "
                    "build/bench/bench_step)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    ap.add_argument("--steps", type=int, default=12, help="timed steps per process (default 12)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    ap.add_argument("--chunk", type=int, default=1, help="timed steps per turn (default 1)")
    ap.add_argument("--threads", type=int, default=1, help="threads per process (default 1)")
    ap.add_argument("flags", nargs=argparse.REMAINDER, help="-- then bench_step's model flags")
    a = ap.parse_args()
    flags = a.flags[1:] if a.flags[:1] == ["--"] else a.flags
    if "--gelu" in flags or min(a.rounds, a.steps, a.chunk, a.threads) < 1 or a.warmup < 0:
        sys.exit("gelu_step.py: --rounds, --steps, --chunk, --threads >= 1, --warmup >= 0, no --gelu in the flags")
    exes = a.bench_step or ["build/bench/bench_step"]
    sides = [(e, g) for e in exes for g in ("erf", "tanh")]
    cmds = {(e, g): [e] + flags + ["--gelu", g, "--steps", str(a.steps), "--warmup", str(a.warmup), "--threads",
                                   str(a.threads), "--chunk", str(a.chunk)] for e, g in sides}
    steps, medians, losses = {s: [] for s in sides}, {s: [] for s in sides}, {s: [] for s in sides}
    load0, t0 = os.getloadavg(), time.time()
    for r in range(a.rounds):
        for who, res in one_round(cmds, a.threads, r, a.chunk, a.steps).items():
            steps[who] += res["ms"]
            medians[who].append(res["median_ms"])
            losses[who].append(res["loss"])
            print("round %d %s --gelu %s: median %.1f ms" % (r + 1, who[0], who[1], res["median_ms"]), file=sys.stderr)
    print("bench_step %s, %d threads, %d rounds of %d timed steps (after %d warm-up) in turns of %d\n"
          % (" ".join(flags), a.threads, a.rounds, a.steps, a.warmup, a.chunk))
    print("| build | GELU | median ms/step | rounds' medians | tanh / erf | per round | last loss |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for e, g in sides:
        m, ratio, paired = statistics.median(steps[(e, g)]), "", ""
        if g == "tanh":
            ratio = "%.3f" % (m / statistics.median(steps[(e, "erf")]))
            paired = "%.3f" % statistics.median(t / f for t, f in zip(medians[(e, g)], medians[(e, "erf")]))
        print("| %s | %s | %.1f | %.1f-%.1f | %s | %s | %.4f |" % (e, g, m, min(medians[(e, g)]),
                                                                    max(medians[(e, g)]), ratio, paired,
                                                                    losses[(e, g)][-1]))
    print("\nwall %.0f s; load average (1 min) %.2f before, %.2f after (%d CPUs)"
          % (time.time() - t0, load0[0], os.getloadavg()[0], os.cpu_count()))


if __name__ == "__main__":
    main()
