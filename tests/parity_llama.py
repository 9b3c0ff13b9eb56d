#!/usr/bin/python3
"""Parity of examples/tiny_gpt's Llama against the PyTorch reference
(bench/torch_llama.py, llama2.c's model.py semantics).

    parity_llama.py BINARY [--quick] [--keep DIR] [--attn fused|composed]
    parity_llama.py --self-test      (the torch side alone: naive numpy
                                      loss, gradcheck, AdamW, the two RoPE
                                      pairings, GQA, round trips)

For each config (odd widths, MHA, GQA and MQA, both RoPE pairings, tied
and untied heads, a hidden width that is not a multiple of 8, a
vocabulary just over 259, targets with -1 and a whole row of them, B=1
and B>1, T=1, T < block_size and T == block_size, a non-default
rope_theta and norm_eps) it writes random weights (arch=llama metadata)
and a random batch as safetensors, then runs
    BINARY eval --init W --batch B --dump-grads G --dtype f64   (and f32)
    BINARY step --init W --batch B --steps 3 --lr .. --weight-decay ..
                --beta2 .. --grad-clip .. --out W2 --dtype f64
and compares with torch computing in float64:
    eval f64: |loss - ref| <= 1e-10 |ref|; per parameter
              max|grad - ref| <= 1e-10 (1 + max|ref|)
    eval f32: |loss - ref| <= 2e-5 |ref|;   per parameter
              max|grad - ref| <= 2e-5 max|ref| (ref computed in f64 from
              the weights rounded to f32, so only the arithmetic counts;
              a reference that is exactly 0, as wq's and wk's at T = 1,
              is measured against the model's largest max|ref|)
    step f64: per parameter max|w - ref| <= 1e-10 (1 + max|ref|), and the
              written file's metadata is the config it was given
The tensors written must be exactly the model's parameters (a tied model
has no output.weight among them). --attn is passed on to every eval/step
run (the binary's default, fused attention, when absent). One line per
check with the measured error, then `N passed, M failed`.
Exit 0 if all pass, 1 if any fails, 77 if torch is not importable.
"""

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except Exception as e:  # noqa: BLE001 - any import failure means skip
    print("skipped: torch/numpy not importable (%s: %s)" % (type(e).__name__, e))
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import safetensors_io as st  # noqa: E402
import torch_common as tc  # noqa: E402
import torch_llama as tl  # noqa: E402

EXTRA_ARGS = []  # appended to every binary run (--attn)

TOL_F64 = 1e-10
TOL_F32 = 2e-5
STEPS = 3

C = tl.make_config
# name, config, B, T, options
#   wdt: dtype of the weights file for the f64 runs; idt: batch int dtype;
#   ignore: fraction of targets set to -1 (row_ignored: one whole row -1);
#   scale: std of the random weight matrices; head: a tied model's file
#   also holds output.weight (= tok_embeddings.weight);
#   step: (lr, weight_decay, beta2, grad_clip)
# make_config(n_layer, n_head, n_kv_head, n_embd, hidden_dim, block_size, vocab_size, tied, rope, ...)
CONFIGS = [
    ("d28_h7_kv7_tied_head_Tfull", C(2, 7, 7, 28, 37, 9, 263, tied=True), 2, 9,
     dict(wdt="F64", idt="I64", ignore=0.3, scale=0.05, head=True,
          step=(1e-2, 0.1, 0.99, 0.0))),
    ("d28_h7_mqa_untied_B1_Tshort", C(2, 7, 1, 28, 75, 11, 261, tied=False), 1, 7,
     dict(wdt="F32", idt="I32", ignore=0.2, scale=0.05, head=False,
          step=(1e-2, 0.1, 0.95, 1e-3))),
    ("d32_h8_kv4_tied_rowignored", C(3, 8, 4, 32, 86, 8, 263, tied=True), 3, 8,
     dict(wdt="F64", idt="I64", ignore=0.25, row_ignored=1, scale=0.05, head=False,
          step=(3e-3, 0.0, 0.999, 0.5))),
    ("d32_h8_kv2_halves_untied_sharp", C(2, 8, 2, 32, 75, 12, 261, tied=False, rope="halves"), 2, 10,
     dict(wdt="F64", idt="I64", ignore=0.1, scale=0.3, head=False,
          step=(5e-3, 0.1, 0.99, 0.1))),
    # rope_theta and norm_eps other than llama2.c's: they must come from the metadata
    ("d16_h2_mqa_theta500_eps1e-3", C(2, 2, 1, 16, 21, 13, 263, tied=True, rope_theta=500.0, norm_eps=1e-3),
     2, 13, dict(wdt="F64", idt="I64", ignore=0.0, scale=0.2, head=False,
                 step=(1e-2, 0.1, 0.99, 10.0))),   # clip on but above the norm
    ("d28_h7_kv7_T1", C(1, 7, 7, 28, 37, 4, 263, tied=True), 4, 1,
     dict(wdt="F64", idt="I32", ignore=0.0, scale=0.1, head=False,
          step=(1e-2, 0.1, 0.99, 1.0))),
    # wide enough to cross tapegrad's f32 kernel blocks (hidden 259 columns:
    # two 128-column blocks and an edge; B T = 210 or 140 rows: 96-row blocks
    # and an edge) and the attention's 24-row query blocks (T = 70: two
    # whole, one partial); the MHA one takes the fused attention op
    ("wide96_h6_kv6_tied_T70", C(2, 6, 6, 96, 259, 70, 263, tied=True), 3, 70,
     dict(wdt="F32", idt="I64", ignore=0.1, scale=0.05, head=True,
          step=(3e-3, 0.1, 0.99, 1.0))),
    ("wide96_h8_kv2_halves_untied_T70", C(2, 8, 2, 96, 259, 70, 263, tied=False, rope="halves"), 2, 70,
     dict(wdt="F64", idt="I64", ignore=0.1, scale=0.05, head=False,
          step=(3e-3, 0.1, 0.99, 1.0))),
]
QUICK = ("d28_h7_kv7_tied_head_Tfull", "d28_h7_mqa_untied_B1_Tshort", "d32_h8_kv2_halves_untied_sharp",
         "wide96_h6_kv6_tied_T70")


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def record(self, ok, label, detail):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print("%s %s: %s" % ("PASS" if ok else "FAIL", label, detail), flush=True)
        return ok


def random_weights(cfg, rng, scale):
    """model.py-named numpy float64 weights: matrices and the embedding
    normal(0, scale), RMSNorm weights 1 + normal(0, 0.1)."""
    out = {}
    for n, p in tl.Llama(cfg).named_parameters():
        shape = tuple(p.shape)
        if n.endswith("norm.weight"):
            out[n] = 1.0 + 0.1 * rng.standard_normal(shape)
        else:
            out[n] = scale * rng.standard_normal(shape)
    return out


def random_batch(cfg, b, t, rng, ignore, row_ignored=None):
    v = cfg["vocab_size"]
    idx = rng.integers(0, v, size=(b, t))
    targets = rng.integers(0, v, size=(b, t))
    targets[rng.random((b, t)) < ignore] = -1
    if row_ignored is not None:
        targets[row_ignored, :] = -1
    if (targets >= 0).sum() == 0:
        targets[0, 0] = 0
    return idx, targets


def write_weights(path, w, cfg, dtype, head):
    npdt = {"F32": np.float32, "F64": np.float64}[dtype]
    tensors = {n: a.astype(npdt) for n, a in w.items()}
    if head:
        tensors["output.weight"] = tensors["tok_embeddings.weight"]
    st.write(path, tensors, tl.config_to_meta(cfg))


def make_model(cfg, w):
    return tl.load_weights(tl.Llama(cfg).to(torch.float64), w)


def torch_ref_eval(cfg, w, idx, targets):
    return tc.eval_grads(make_model(cfg, w), torch.from_numpy(idx), torch.from_numpy(targets))


def torch_ref_step(cfg, w, idx, targets, lr, wd, beta2, clip):
    model = make_model(cfg, w)
    tc.run_steps(model, torch.from_numpy(idx), torch.from_numpy(targets), STEPS, lr, wd, beta2, clip)
    return tl.state_to_numpy(model, np.float64)


def run_binary(binary, args, label, checks):
    """Runs BINARY args; returns stdout, or None after recording a failure."""
    try:
        r = subprocess.run([binary] + args + EXTRA_ARGS, capture_output=True, text=True, timeout=300)
    except OSError as e:
        checks.record(False, label, "could not run %s: %s" % (binary, e))
        return None
    except subprocess.TimeoutExpired:
        checks.record(False, label, "timed out after 300 s")
        return None
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-5:]
        checks.record(False, label, "exit status %d: %s" % (r.returncode, " | ".join(tail)))
        return None
    return r.stdout


def parse_loss(out):
    for line in out.splitlines():
        m = re.match(r"^\s*loss\s+(\S+)\s*$", line)
        if m:
            try:
                return float(m.group(1))
            except ValueError:
                return None
    return None


def read_output(path, label, checks):
    """(tensors, metadata) of a file the binary wrote, or None after
    recording a failure."""
    if not os.path.exists(path):
        checks.record(False, label, "binary did not write %s" % path)
        return None
    try:
        return st.read(path)
    except (ValueError, OSError) as e:
        checks.record(False, label, "cannot read %s: %s" % (path, e))
        return None


def compare_tensors(label, got, ref, want_dtype, tol, relative_to_one, checks):
    """Per parameter: max|got - ref| <= tol (1 + max|ref|) (relative_to_one)
    or tol max|ref|; checks names (exactly ref's), shapes and dtypes too.
    One line. Relative to max|ref|, a tensor whose reference is exactly
    zero everywhere (wq and wk at T = 1: a softmax over one key is 1
    whatever the score) takes the largest max|ref| of the other tensors:
    in f32 such a gradient is the rounding noise of a difference of terms
    of the model's gradient scale (the fused attention's backward forms
    dS = P (dP - rowsum(dO O)), which is not exactly 0 there)."""
    problems = []
    floor = max((float(np.max(np.abs(r))) for r in ref.values() if r.size), default=0.0)
    extra = sorted(set(got) - set(ref))
    if extra:
        problems.append("unexpected tensors " + ", ".join(extra))
    worst = (-1.0, "", 0.0)  # ratio err/bound, name, err
    for n, r in ref.items():
        if n not in got:
            problems.append("missing " + n)
            continue
        g = got[n]
        if tuple(g.shape) != tuple(r.shape):
            problems.append("%s shape %s, expected %s" % (n, g.shape, r.shape))
            continue
        if st.dtype_name(g) != want_dtype:
            problems.append("%s dtype %s, expected %s" % (n, st.dtype_name(g), want_dtype))
        err = float(np.max(np.abs(g.astype(np.float64) - r))) if r.size else 0.0
        mag = float(np.max(np.abs(r))) if r.size else 0.0
        bound = tol * (1.0 + mag) if relative_to_one else tol * (mag if mag > 0 else floor)
        if not np.isfinite(err) or err > bound:
            problems.append("%s max abs err %.3e > %.3e" % (n, err, bound))
        ratio = err / bound if bound > 0 else (0.0 if err == 0 else float("inf"))
        if not np.isfinite(err):
            ratio = float("inf")
        if ratio > worst[0]:
            worst = (ratio, n, err)
    detail = "%d tensors, worst %s max abs err %.3e (%.3g of its bound)" % (
        len(ref), worst[1] or "-", worst[2], worst[0])
    if problems:
        detail += "; " + "; ".join(problems[:8])
        if len(problems) > 8:
            detail += "; ... %d more" % (len(problems) - 8)
    return checks.record(not problems, label, detail)


def check_loss(label, loss, ref, tol, checks, out):
    if loss is None:
        first = out.strip().splitlines()[:3]
        return checks.record(False, label, "no `loss <value>` line in the output (%s)"
                             % (" | ".join(first) or "empty output"))
    err = abs(loss - ref) / abs(ref)
    ok = bool(np.isfinite(loss)) and err <= tol
    return checks.record(ok, label, "loss %.17g ref %.17g rel err %.3e (tol %.0e)"
                         % (loss, ref, err, tol))


def check_meta(label, meta, cfg, checks):
    """The config read back from a file the binary wrote is cfg."""
    try:
        back = tl.config_from_meta(meta, "output")
    except ValueError as e:
        return checks.record(False, label, str(e))
    diff = sorted(k for k in cfg if back.get(k) != cfg[k])
    return checks.record(not diff, label, "config read back equal" if not diff else
                         "differs in " + ", ".join("%s %r (want %r)" % (k, back.get(k), cfg[k]) for k in diff))


def run_config(binary, tmp, name, cfg, b, t, opt, seed, checks):
    rng = np.random.default_rng(seed)
    w = random_weights(cfg, rng, opt["scale"])
    idx, targets = random_batch(cfg, b, t, rng, opt["ignore"], opt.get("row_ignored"))
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    bpath = os.path.join(d, "batch.safetensors")
    npidt = {"I32": np.int32, "I64": np.int64}[opt["idt"]]
    st.write(bpath, {"idx": idx.astype(npidt), "targets": targets.astype(npidt)})

    # --- eval f64 (weights file F64 or F32; the reference uses what the file holds)
    w64 = {n: a.astype(np.float32).astype(np.float64) if opt["wdt"] == "F32" else a
           for n, a in w.items()}
    wpath = os.path.join(d, "w_%s.safetensors" % opt["wdt"].lower())
    write_weights(wpath, w64, cfg, opt["wdt"], opt["head"])
    ref_loss, ref_grads = torch_ref_eval(cfg, w64, idx, targets)
    gpath = os.path.join(d, "grads_f64.safetensors")
    label = "%s eval f64 (W %s%s, batch %s, B=%d T=%d)" % (
        name, opt["wdt"], " with output.weight" if opt["head"] else "", opt["idt"], b, t)
    out = run_binary(binary, ["eval", "--init", wpath, "--batch", bpath, "--dump-grads", gpath,
                              "--dtype", "f64"], label, checks)
    if out is not None:
        check_loss(label + " loss", parse_loss(out), ref_loss, TOL_F64, checks, out)
        got = read_output(gpath, label + " grads", checks)
        if got is not None:
            compare_tensors(label + " grads", got[0], ref_grads, "F64", TOL_F64, True, checks)

    # --- eval f32: weights rounded to f32, reference in f64 on those
    w32 = {n: a.astype(np.float32).astype(np.float64) for n, a in w.items()}
    w32path = os.path.join(d, "w_f32.safetensors")
    write_weights(w32path, w32, cfg, "F32", opt["head"])
    ref_loss32, ref_grads32 = torch_ref_eval(cfg, w32, idx, targets)
    gpath32 = os.path.join(d, "grads_f32.safetensors")
    label = "%s eval f32" % name
    out = run_binary(binary, ["eval", "--init", w32path, "--batch", bpath, "--dump-grads", gpath32,
                              "--dtype", "f32"], label, checks)
    if out is not None:
        check_loss(label + " loss", parse_loss(out), ref_loss32, TOL_F32, checks, out)
        got = read_output(gpath32, label + " grads", checks)
        if got is not None:
            compare_tensors(label + " grads", got[0], ref_grads32, "F32", TOL_F32, False, checks)

    # --- step f64
    lr, wd, beta2, clip = opt["step"]
    ref_w = torch_ref_step(cfg, w64, idx, targets, lr, wd, beta2, clip)
    opath = os.path.join(d, "w_after.safetensors")
    label = "%s step f64 x%d (lr %g wd %g beta2 %g clip %g)" % (name, STEPS, lr, wd, beta2, clip)
    out = run_binary(binary, ["step", "--init", wpath, "--batch", bpath, "--steps", str(STEPS),
                              "--lr", repr(lr), "--weight-decay", repr(wd), "--beta2", repr(beta2),
                              "--grad-clip", repr(clip), "--out", opath, "--dtype", "f64"],
                     label, checks)
    if out is not None:
        got = read_output(opath, label + " weights", checks)
        if got is not None:
            compare_tensors(label + " weights", got[0], ref_w, "F64", TOL_F64, True, checks)
            check_meta(label + " metadata", got[1], cfg, checks)


# ---- --self-test: the torch side checked without the binary ---------------

def np_rmsnorm(x, w, eps):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        ms = sum(v * v for v in x[i]) / len(x[i])
        out[i] = x[i] / math.sqrt(ms + eps) * w
    return out


def np_rope(x, n_heads, dh, theta, halves):
    """x (T, n_heads dh): every pair of every head at position t turned by
    t theta^(-2i/dh), one scalar at a time."""
    y = x.copy()
    for t in range(x.shape[0]):
        for h in range(n_heads):
            for i in range(dh // 2):
                a = t * theta ** (-2.0 * i / dh)
                j0 = h * dh + (i if halves else 2 * i)
                j1 = j0 + (dh // 2 if halves else 1)
                c, s = math.cos(a), math.sin(a)
                y[t, j0] = x[t, j0] * c - x[t, j1] * s
                y[t, j1] = x[t, j0] * s + x[t, j1] * c
    return y


def np_silu(x):
    return np.vectorize(lambda v: v / (1.0 + math.exp(-v)))(x)


def np_loss(cfg, w, idx, targets):
    """Naive float64 loss from the model.py-named weights: one sequence and
    one position at a time, explicit loops over heads, keys and RoPE pairs;
    query head h reads kv head h // (n_head / n_kv_head)."""
    c, nh, nkv = cfg["n_embd"], cfg["n_head"], cfg["n_kv_head"]
    dh, grp, eps = c // nh, nh // nkv, cfg["norm_eps"]
    halves = cfg["rope"] == "halves"
    head = w["tok_embeddings.weight"] if cfg["tied"] else w["output.weight"]
    total, count = 0.0, 0
    for bi in range(idx.shape[0]):
        t = idx.shape[1]
        x = np.stack([w["tok_embeddings.weight"][idx[bi, i]] for i in range(t)])
        for L in range(cfg["n_layer"]):
            pre = "layers.%d." % L
            xn = np_rmsnorm(x, w[pre + "attention_norm.weight"], eps)
            q = np_rope(xn @ w[pre + "attention.wq.weight"].T, nh, dh, cfg["rope_theta"], halves)
            k = np_rope(xn @ w[pre + "attention.wk.weight"].T, nkv, dh, cfg["rope_theta"], halves)
            v = xn @ w[pre + "attention.wv.weight"].T
            y = np.zeros((t, c))
            for h in range(nh):
                kh = h // grp
                qs = q[:, h * dh:(h + 1) * dh]
                ks = k[:, kh * dh:(kh + 1) * dh]
                vs = v[:, kh * dh:(kh + 1) * dh]
                for i in range(t):
                    s = np.array([np.dot(qs[i], ks[j]) / math.sqrt(dh) for j in range(i + 1)])
                    e = np.exp(s - s.max())
                    a = e / e.sum()
                    y[i, h * dh:(h + 1) * dh] = sum(a[j] * vs[j] for j in range(i + 1))
            x = x + y @ w[pre + "attention.wo.weight"].T
            hn = np_rmsnorm(x, w[pre + "ffn_norm.weight"], eps)
            gate = np_silu(hn @ w[pre + "feed_forward.w1.weight"].T) * (hn @ w[pre + "feed_forward.w3.weight"].T)
            x = x + gate @ w[pre + "feed_forward.w2.weight"].T
        logits = np_rmsnorm(x, w["norm.weight"], eps) @ head.T
        for i in range(t):
            if targets[bi, i] == -1:
                continue
            z = logits[i]
            m = z.max()
            total += m + math.log(np.exp(z - m).sum()) - z[targets[bi, i]]
            count += 1
    return total / count


def np_adamw(w, grad_fn, steps, lr, wd, beta2, clip, beta1=0.9, eps=1e-8):
    """Plain AdamW with nanoGPT's grouping and clip_grad_norm_, in numpy."""
    w = {n: a.copy() for n, a in w.items()}
    m = {n: np.zeros_like(a) for n, a in w.items()}
    v = {n: np.zeros_like(a) for n, a in w.items()}
    for t in range(1, steps + 1):
        g = grad_fn(w)
        if clip > 0:
            norm = math.sqrt(sum((a ** 2).sum() for a in g.values()))
            coef = clip / (norm + 1e-6)
            if coef < 1:
                g = {n: a * coef for n, a in g.items()}
        for n in w:
            if w[n].ndim >= 2:
                w[n] = w[n] * (1 - lr * wd)
            m[n] = beta1 * m[n] + (1 - beta1) * g[n]
            v[n] = beta2 * v[n] + (1 - beta2) * g[n] ** 2
            mhat = m[n] / (1 - beta1 ** t)
            vhat = v[n] / (1 - beta2 ** t)
            w[n] = w[n] - lr * mhat / (np.sqrt(vhat) + eps)
    return w


def halves_weights(cfg, w):
    """The weights under which the halves pairing computes what w computes
    under the interleaved one: within each head, the rows of wq and wk
    reordered (even coordinates first, then odd), so the pair (2i, 2i+1)
    lands at (i, i + dh/2). Scores q.k are unchanged by the same reordering
    of both, and v is untouched."""
    dh = cfg["n_embd"] // cfg["n_head"]
    perm = np.concatenate([np.arange(0, dh, 2), np.arange(1, dh, 2)])
    out = dict(w)
    for n, a in w.items():
        if n.endswith("attention.wq.weight") or n.endswith("attention.wk.weight"):
            heads = a.shape[0] // dh
            out[n] = a.reshape(heads, dh, -1)[:, perm, :].reshape(a.shape)
    return out


def functional_loss(model, names, ti, tt):
    call = torch.func.functional_call if hasattr(torch, "func") else torch.nn.utils.stateless.functional_call

    def f(*ps):
        return call(model, dict(zip(names, ps)), (ti, tt))[1]
    return f


def self_test(checks):
    tmp = tempfile.mkdtemp(prefix="parity_llama_selftest_")
    try:
        # model vs naive numpy loss; save/load round trip; the config's closed-form size
        for i, (name, cfg, b, t, opt) in enumerate(CONFIGS):
            rng = np.random.default_rng(1000 + i)
            w = random_weights(cfg, rng, opt["scale"])
            idx, targets = random_batch(cfg, b, t, rng, opt["ignore"], opt.get("row_ignored"))
            ref = np_loss(cfg, w, idx, targets)
            loss, _ = torch_ref_eval(cfg, w, idx, targets)
            err = abs(loss - ref) / abs(ref)
            checks.record(err <= 1e-12, "selftest %s torch loss vs naive numpy" % name,
                          "loss %.17g numpy %.17g rel err %.3e" % (loss, ref, err))
            model = make_model(cfg, w)
            path = os.path.join(tmp, name + ".safetensors")
            tl.save_model(model, path, "F64", with_head=opt["head"])
            tensors, _ = st.read(path)
            m2 = tl.load_model(path)
            same = m2.cfg == cfg and all(np.array_equal(a, w[n]) for n, a in tl.state_to_numpy(m2).items())
            n_par = sum(p.numel() for p in m2.parameters())
            checks.record(same and n_par == tl.num_params(cfg) and ("output.weight" in tensors) ==
                          (opt["head"] or not cfg["tied"]),
                          "selftest %s save/load round trip" % name,
                          "%d parameters, tensors %d, config %r" % (n_par, len(tensors), m2.cfg))

        # the halves pairing (rotate_half) against the interleaved one on reordered weights
        for nkv in (4, 1):
            cfg = C(2, 4, nkv, 24, 19, 9, 17, tied=False)
            rng = np.random.default_rng(31 + nkv)
            w = random_weights(cfg, rng, 0.3)
            idx, targets = random_batch(cfg, 2, 9, rng, 0.1)
            a, _ = torch_ref_eval(cfg, w, idx, targets)
            hcfg = dict(cfg, rope="halves")
            bl, _ = torch_ref_eval(hcfg, halves_weights(cfg, w), idx, targets)
            cl, _ = torch_ref_eval(hcfg, w, idx, targets)
            err = abs(a - bl) / abs(a)
            checks.record(err <= 1e-13 and abs(a - cl) > 1e-6 * abs(a),
                          "selftest halves pairing = interleaved on reordered wq/wk rows (n_kv_head %d)" % nkv,
                          "loss %.17g vs %.17g rel err %.3e; unreordered differs by %.3e"
                          % (a, bl, err, abs(a - cl)))

        # GQA (repeat_kv) equals MHA whose wk, wv repeat each kv head G times
        cfg = C(2, 6, 2, 24, 19, 8, 17, tied=True)
        rng = np.random.default_rng(41)
        w = random_weights(cfg, rng, 0.3)
        idx, targets = random_batch(cfg, 2, 8, rng, 0.1)
        mcfg = dict(cfg, n_kv_head=6)
        mw = dict(w)
        for n, a in w.items():
            if n.endswith("attention.wk.weight") or n.endswith("attention.wv.weight"):
                mw[n] = np.repeat(a.reshape(2, 4, -1), 3, axis=0).reshape(24, -1)
        a, ga = torch_ref_eval(cfg, w, idx, targets)
        bl, _ = torch_ref_eval(mcfg, mw, idx, targets)
        err = abs(a - bl) / abs(a)
        checks.record(err <= 1e-13, "selftest GQA (6 heads, 2 kv heads) = MHA with each kv head repeated 3 times",
                      "loss %.17g vs %.17g rel err %.3e" % (a, bl, err))

        # torch.autograd.gradcheck of the whole loss, float64
        for cfg in (C(2, 4, 2, 16, 11, 5, 7, tied=True), C(1, 4, 1, 16, 9, 5, 7, tied=False, rope="halves")):
            rng = np.random.default_rng(7)
            w = random_weights(cfg, rng, 0.3)
            idx, targets = random_batch(cfg, 2, 5, rng, 0.3)
            model = make_model(cfg, w)
            names = tl.param_names(model)
            f = functional_loss(model, names, torch.from_numpy(idx), torch.from_numpy(targets))
            inputs = tuple(p.detach().clone().requires_grad_(True) for p in model.parameters())
            ok = torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-7, rtol=1e-5, raise_exception=False)
            checks.record(bool(ok), "selftest torch.autograd.gradcheck of the loss (%d parameters, kv heads %d, %s, %s)"
                          % (len(names), cfg["n_kv_head"], cfg["rope"], "tied" if cfg["tied"] else "untied"),
                          "eps 1e-6 atol 1e-7 rtol 1e-5")

        # the model's own gradients vs central differences on the numpy loss
        cfg = C(2, 4, 2, 16, 11, 6, 9, tied=False, rope_theta=100.0)
        rng = np.random.default_rng(8)
        w = random_weights(cfg, rng, 0.3)
        idx, targets = random_batch(cfg, 2, 6, rng, 0.2)
        _, grads = torch_ref_eval(cfg, w, idx, targets)
        worst = 0.0
        for n in ("tok_embeddings.weight", "layers.1.attention.wk.weight", "layers.0.attention.wq.weight",
                  "layers.0.feed_forward.w3.weight", "layers.0.attention_norm.weight", "norm.weight",
                  "output.weight"):
            flat = w[n].reshape(-1)
            for j in rng.choice(flat.size, size=min(4, flat.size), replace=False):
                old = flat[j]
                flat[j] = old + 1e-6
                lp = np_loss(cfg, w, idx, targets)
                flat[j] = old - 1e-6
                lm = np_loss(cfg, w, idx, targets)
                flat[j] = old
                worst = max(worst, abs((lp - lm) / 2e-6 - grads[n].reshape(-1)[j]))
        checks.record(worst <= 1e-8, "selftest torch grads vs central differences of numpy loss",
                      "max abs err %.3e (tol 1e-8)" % worst)

        # optimizer: configure_adamw + clipping vs plain numpy AdamW
        for clip in (0.0, 0.05):
            def grad_fn(ww):
                return torch_ref_eval(cfg, ww, idx, targets)[1]
            ref_w = np_adamw(w, grad_fn, 3, 1e-2, 0.1, 0.99, clip)
            got = torch_ref_step(cfg, w, idx, targets, 1e-2, 0.1, 0.99, clip)
            err, ratio = 0.0, 0.0
            for n in ref_w:
                e = float(np.max(np.abs(got[n] - ref_w[n])))
                err = max(err, e)
                ratio = max(ratio, e / (TOL_F64 * (1 + float(np.max(np.abs(ref_w[n]))))))
            checks.record(ratio <= 1, "selftest AdamW x3 (clip %g) vs numpy AdamW" % clip,
                          "max abs err %.3e (%.3g of the bound)" % (err, ratio))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", nargs="?", help="path to the tiny_gpt executable")
    ap.add_argument("--self-test", action="store_true",
                    help="check the torch side only (naive numpy, gradcheck, RoPE pairings, GQA, round trips)")
    ap.add_argument("--quick", action="store_true", help="only %d configs" % len(QUICK))
    ap.add_argument("--keep", metavar="DIR", help="write the files under DIR and keep them")
    ap.add_argument("--attn", choices=("fused", "composed"),
                    help="pass --attn to every eval/step run (default: the binary's)")
    args = ap.parse_args()
    if args.attn:
        EXTRA_ARGS.extend(["--attn", args.attn])

    torch.set_num_threads(1)
    checks = Checks()
    if args.self_test:
        self_test(checks)
        print("%d passed, %d failed" % (checks.passed, checks.failed))
        return 0 if checks.failed == 0 else 1
    if not args.binary:
        ap.error("BINARY is required (or --self-test)")
    binary = args.binary
    if os.sep not in binary:
        binary = shutil.which(binary) or binary
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        checks.record(False, "binary", "%s is missing or not executable (build examples/tiny_gpt "
                      "first)" % args.binary)
        print("%d passed, %d failed" % (checks.passed, checks.failed))
        return 1

    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        tmp = args.keep
    else:
        tmp = tempfile.mkdtemp(prefix="parity_llama_")
    try:
        for i, (name, cfg, b, t, opt) in enumerate(CONFIGS):
            if args.quick and name not in QUICK:
                continue
            run_config(binary, tmp, name, cfg, b, t, opt, 2000 + i, checks)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (checks.passed, checks.failed))
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
