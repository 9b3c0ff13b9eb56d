#!/usr/bin/python3
"""Decoding speed: tiny_gpt sample against llama2.c's run.c, one table.

    /usr/bin/python3 bench/bench_decode.py --build build [--run-c PATH]
        [--vocab 512,32000] [--threads 1,2] [--rounds 5] [--tokens 256]
        [--work DIR] [--json PATH] [--baseline BUILD2]

What a llama2.c user compares: greedy decoding (temperature 0) of a
Llama of llama2.c's stories15M shape (6 layers, 6 heads, 288 wide,
hidden 768, seq_len 256) with a BPE vocabulary of each --vocab size,
`tiny_gpt sample --temperature 0 --threads T` against run.c on the same
model exported with `tiny_gpt export --format llama2c`. Python 3's
standard library only.

1. The model, per vocabulary, made once in --work (default
   BUILD/bench_decode) and reused: a text of made-up words (seeded, so
   BPE can reach 32000 ids), `tiny_gpt tokenizer train`, one training
   step at lr 1e-6 (the weights are the initialisation: speed does not
   depend on them, and greedy text from them still has to match), and
   `tiny_gpt export --format llama2c`.
2. Rounds. In each, per thread count: tiny_gpt and run.c take turns (the
   order alternating by round), each generating --tokens tokens from the
   empty prompt (BOS), which stays within seq_len = block_size, where the
   two programs agree token for token; then the bandwidth probe
   (build/bench/bw_probe) reads a buffer of the model's weight bytes and
   one of 256 MB at the same thread count, in the same seconds.
   run.c is built by the caller as its README's `make runfast` says,
   with -march=native as a user would add (gcc -Ofast -march=native -o
   run run.c -lm): it has no threads, so it is one thread on every row.
   Without --run-c its column is skipped with a message.
3. Figures per side (median over rounds, and the best):
   - steady tokens/s: tokens after the first, over the time after the
     first (run.c's "achieved tok/s"; tiny_gpt's --stats "then N tokens
     at R tokens/s");
   - end to end: tokens over the process's wall time (start, loading and
     all: what `time` shows); tiny_gpt's loading and first token are
     printed apart.
   - the bandwidth share: steady tokens/s x weight bytes per token (every
     weight read once: the layers, the final norm and the V x C head; one
     embedding row) over the probe's best GB/s at the model's size (the
     caches may hold it) and at 256 MB (memory).
   With --baseline, a second build's tiny_gpt (say, before a change)
   takes its turns too, in the same seconds, with its own columns.
4. The greedy texts must be the same: tiny_gpt's stdout, kept to the
   bytes run.c prints (printable ASCII and whitespace), against run.c's.

Prints markdown tables on stdout (progress on stderr) and writes every
run to --json (default WORK/results.json).
"""

import argparse
import json
import os
import random
import re
import statistics
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SHAPE = ["--arch", "llama", "--n-layer", "6", "--n-head", "6", "--n-embd", "288", "--block-size", "256"]
PROBE_DRAM_MB = 256


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def run(cmd, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    return p, time.perf_counter() - t0


def check(p, what):
    if p.returncode != 0:
        sys.exit("bench_decode: %s failed (%d): %s" % (what, p.returncode, p.stderr.decode(errors="replace")[-800:]))


def made_up_text(path, seed=1):
    """Lines of 12 made-up words, 80000 distinct words three times each."""
    r = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(r.choice(letters) for _ in range(r.randint(3, 9))) for _ in range(80000)]
    with open(path, "w") as f:
        for _ in range(3):
            r.shuffle(words)
            for i in range(0, len(words), 12):
                f.write(" ".join(words[i:i + 12]) + ".\n")


def make_model(tg, work, vocab):
    d = os.path.join(work, "v%d" % vocab)
    ckpt, mbin, tbin = (os.path.join(d, n) for n in ("best.safetensors", "model.bin", "tok.bin"))
    if all(os.path.exists(p) for p in (ckpt, mbin, tbin)):
        return ckpt, mbin, tbin
    os.makedirs(d, exist_ok=True)
    text = os.path.join(work, "text.txt")
    if not os.path.exists(text):
        made_up_text(text)
    tok = os.path.join(d, "tok.safetensors")
    log("making the %d-id model in %s" % (vocab, d))
    p, _ = run([tg, "tokenizer", "train", "--data", text, "--vocab-size", str(vocab), "--out", tok])
    check(p, "tokenizer train")
    p, _ = run([tg, "train"] + SHAPE + ["--tokenizer", tok, "--data", text, "--steps", "1", "--batch-size", "1",
                                        "--eval-interval", "1", "--eval-iters", "1", "--warmup", "0", "--lr", "1e-6",
                                        "--threads", "2", "--out", d, "--force"])
    check(p, "tiny_gpt train")
    p, _ = run([tg, "export", "--ckpt", ckpt, "--format", "llama2c", "--out", mbin, "--tokenizer", tbin])
    check(p, "tiny_gpt export")
    return ckpt, mbin, tbin


def weight_bytes(mbin):
    """f32 bytes a decoded token reads, from run.c's header: every layer
    matrix and norm, the final norm, the (V,C) head, one embedding row."""
    with open(mbin, "rb") as f:
        C, F, L, H, Hkv, V, S = struct.unpack("7i", f.read(28))
    V, kv = abs(V), C * Hkv // H
    per_layer = 2 * C + C * C + 2 * C * kv + C * C + 3 * C * F
    return 4 * (L * per_layer + C + V * C + C), dict(dim=C, hidden=F, layers=L, heads=H, kv_heads=Hkv, vocab=V,
                                                      seq_len=S)


def printable(b):
    return bytes(c for c in b if c in b"\t\n\x0b\x0c\r" or 32 <= c < 127)


TG_STATS = re.compile(rb"tokens (?:made )?in ([0-9.]+) s: [0-9.]+ tokens/s \(loading ([0-9.]+) s, first token ([0-9.]+) s, "
                      rb"then ([0-9]+) tokens at ([0-9.]+) tokens/s\)")


def run_tiny_gpt(tg, ckpt, tokens, threads):
    p, wall = run([tg, "sample", "--ckpt", ckpt, "--temperature", "0", "--tokens", str(tokens), "--threads",
                   str(threads), "--stats"])
    check(p, "tiny_gpt sample")
    m = TG_STATS.search(p.stderr)
    if not m:
        sys.exit("bench_decode: no --stats line from tiny_gpt sample: %s" % p.stderr.decode(errors="replace"))
    return dict(wall=wall, gen=float(m.group(1)), loading=float(m.group(2)), first=float(m.group(3)),
                steady=float(m.group(5)), made=int(m.group(4)) + 1, text=printable(p.stdout))


def run_runc(runc, mbin, tbin, tokens):
    p, wall = run([runc, mbin, "-z", tbin, "-t", "0", "-n", str(tokens)])
    check(p, "run.c")
    m = re.search(rb"achieved tok/s: ([0-9.]+)", p.stderr)
    return dict(wall=wall, steady=float(m.group(1)) if m else 0.0, text=p.stdout)


def probe(bw, mb, threads):
    p, _ = run([bw, "--threads", str(threads), "--seconds", "0.3", "%.3f" % mb])
    check(p, "bw_probe")
    return json.loads(p.stdout.decode().strip().splitlines()[-1])["best_gbs"]


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the CMake build folder (tiny_gpt, bench/bw_probe)")
    ap.add_argument("--run-c", help="llama2.c's run.c built as `make runfast` (-Ofast [-march=native])")
    ap.add_argument("--vocab", default="512,32000", help="BPE vocabulary sizes, one model each")
    ap.add_argument("--threads", default="1,2", help="tiny_gpt's thread counts")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=256, help="tokens per run (at most seq_len = 256)")
    ap.add_argument("--work", help="where the models are made and kept (default BUILD/bench_decode)")
    ap.add_argument("--json", help="raw runs (default WORK/results.json)")
    ap.add_argument("--baseline", help="another build folder whose tiny_gpt takes turns too (e.g. before a change)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    tg, bw = os.path.join(build, "tiny_gpt"), os.path.join(build, "bench", "bw_probe")
    for b in (tg, bw):
        if not os.access(b, os.X_OK):
            sys.exit("bench_decode: %s is missing: cmake --build %s --target tiny_gpt bw_probe" % (b, a.build))
    base = os.path.join(os.path.abspath(a.baseline), "tiny_gpt") if a.baseline else None
    if base and not os.access(base, os.X_OK):
        sys.exit("bench_decode: --baseline has no tiny_gpt: %s" % base)
    runc = os.path.abspath(a.run_c) if a.run_c else None
    if runc and not os.access(runc, os.X_OK):
        sys.exit("bench_decode: --run-c %s is not an executable" % runc)
    if not runc:
        log("no --run-c: run.c's columns are skipped (build it: gcc -Ofast -march=native -o run run.c -lm)")
    work = os.path.abspath(a.work or os.path.join(build, "bench_decode"))
    os.makedirs(work, exist_ok=True)
    vocabs = [int(v) for v in a.vocab.split(",")]
    threads = [int(t) for t in a.threads.split(",")]
    if not 1 <= a.tokens <= 256:
        sys.exit("bench_decode: --tokens must be in [1, 256] (seq_len: past it run.c stops and tiny_gpt slides)")

    models = {}
    for v in vocabs:
        ckpt, mbin, tbin = make_model(tg, work, v)
        nbytes, cfg = weight_bytes(mbin)
        models[v] = dict(ckpt=ckpt, mbin=mbin, tbin=tbin, bytes=nbytes, cfg=cfg)

    t_begin = time.time()
    load0 = os.getloadavg()[0]
    runs = []   # dicts: vocab, threads, round, side, ...
    for r in range(a.rounds):
        for v in vocabs:
            m = models[v]
            for t in threads:
                order = ["tiny_gpt", "run.c", "baseline"]
                order = order[(r + t) % 3:] + order[:(r + t) % 3]   # each side first in turn
                for side in order:
                    if side == "tiny_gpt":
                        x = run_tiny_gpt(tg, m["ckpt"], a.tokens, t)
                    elif side == "baseline":
                        if not base:
                            continue
                        x = run_tiny_gpt(base, m["ckpt"], a.tokens, t)
                    elif runc:
                        x = run_runc(runc, m["mbin"], m["tbin"], a.tokens)
                    else:
                        continue
                    x.update(vocab=v, threads=t, round=r, side=side)
                    runs.append(x)
                runs.append(dict(vocab=v, threads=t, round=r, side="probe", model_gbs=probe(bw, m["bytes"] / 1e6, t),
                                 dram_gbs=probe(bw, PROBE_DRAM_MB, t)))
                last = [x for x in runs if x["round"] == r and x["vocab"] == v and x["threads"] == t]
                log("round %d, vocab %d, %d thread(s): %s" % (
                    r + 1, v, t, ", ".join("%s %.1f tokens/s" % (x["side"], x["steady"]) for x in last if "steady" in x)))

    def sel(v, t, side):
        return [x for x in runs if x["vocab"] == v and x["threads"] == t and x["side"] == side]

    print("## Decoding: tiny_gpt sample against llama2.c's run.c\n")
    print("%d rounds, %d tokens from BOS, greedy; model 6 layers, 6 heads, 288 wide, hidden 768, seq_len 256; "
          "load average %.2f at the start, %.2f at the end (%d CPUs); %.0f s.\n"
          % (a.rounds, a.tokens, load0, os.getloadavg()[0], os.cpu_count(), time.time() - t_begin))
    print("| vocab (weights/token) | threads | tiny_gpt tokens/s | run.c tokens/s | ratio tg/run.c | "
          "end to end tg / run.c (tokens/s) | tg loading, first token | tg / run.c of the probe's GB/s at the "
          "model's size | ... at %d MB | same text |%s" % (
              PROBE_DRAM_MB, " baseline tg tokens/s | tg / baseline |%s" % (" baseline / run.c |" if runc else "")
              if base else ""))
    print("| --- " * (10 + (2 + bool(runc) if base else 0)) + "|")
    for v in vocabs:
        m = models[v]
        for t in threads:
            tgr, rcr, pr = sel(v, t, "tiny_gpt"), sel(v, t, "run.c"), sel(v, t, "probe")
            br = sel(v, t, "baseline")
            tg_s, rc_s = [x["steady"] for x in tgr], [x["steady"] for x in rcr]
            tg_e = [x["made"] / x["wall"] for x in tgr]
            rc_e = [a.tokens / x["wall"] for x in rcr]
            mgbs, dgbs = max(x["model_gbs"] for x in pr), max(x["dram_gbs"] for x in pr)
            gb = lambda rate: rate * m["bytes"] / 1e9   # noqa: E731

            def share(rate, ref):
                return "%.0f%%" % (100 * gb(rate) / ref)
            same = "-"
            if rcr:
                ok = all(x["text"] == y["text"] for x in tgr + br for y in rcr)
                same = "yes (%d bytes)" % len(rcr[0]["text"]) if ok else "**NO**"
            rc_col = "%.1f (best %.1f)" % (med(rc_s), max(rc_s)) if rcr else "skipped (no --run-c)"
            ratio = "**%.2f**" % (med(tg_s) / med(rc_s)) if rcr else "-"
            e2e = "%.1f / %s" % (med(tg_e), "%.1f" % med(rc_e) if rcr else "-")
            if br:
                b_s = [x["steady"] for x in br]
                base_col = " | %.1f (best %.1f), loading %.3f s | **%.2f**" % (
                    med(b_s), max(b_s), med([x["loading"] for x in br]), med(tg_s) / med(b_s))
                if rcr:
                    base_col += " | %.2f" % (med(b_s) / med(rc_s))
            else:
                base_col = ""
            print("| %d (%.1f MB) | %d | %.1f (best %.1f) | %s | %s | %s | %.3f s, %.4f s | %s / %s of %.1f GB/s "
                  "| %s / %s of %.1f GB/s | %s%s |" % (
                      v, m["bytes"] / 1e6, t, med(tg_s), max(tg_s), rc_col, ratio, e2e,
                      med([x["loading"] for x in tgr]), med([x["first"] for x in tgr]),
                      share(med(tg_s), mgbs), share(med(rc_s), mgbs) if rcr else "-", mgbs,
                      share(med(tg_s), dgbs), share(med(rc_s), dgbs) if rcr else "-", dgbs, same, base_col))
    print("\nrun.c has no threads (runfast: no OpenMP): one thread on every row. Steady tokens/s: after the first "
          "token (run.c's \"achieved tok/s\"); end to end: tokens over the process's wall time.")
    out = a.json or os.path.join(work, "results.json")
    with open(out, "w") as f:
        json.dump(dict(args=vars(a), models={str(k): {kk: vv for kk, vv in m.items()} for k, m in models.items()},
                       runs=[{k: (v.decode(errors="replace") if isinstance(v, bytes) else v) for k, v in x.items()}
                             for x in runs]), f, indent=1)
    log("raw runs in %s" % out)
    if runc and any(x["text"] != y["text"] for v in vocabs for t in threads
                    for x in sel(v, t, "tiny_gpt") for y in sel(v, t, "run.c")):
        sys.exit("bench_decode: the greedy texts differ")


if __name__ == "__main__":
    main()
