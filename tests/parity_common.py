"""What tests/parity_torch.py (the GPT) and tests/parity_llama.py (the
Llama) share: the check recorder, random batches, running tiny_gpt and
comparing what it prints and writes with the PyTorch reference, the
self-test checks that do not depend on the model (numpy AdamW, gradcheck,
central differences) and the command line. The models, their random
weights and their naive numpy losses stay in the two scripts.

Importing this module exits 77 (CTest's skip) when numpy or torch cannot
be imported, or 1 when the environment has CI=true (CI installs them:
a skip there would hide a missing check), naming the command that
installs them, scripts/reference-tools.sh; and it puts bench/ on
sys.path (safetensors_io, torch_common and the two PyTorch references
live there).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except Exception as e:  # noqa: BLE001 - any import failure means skip (CI: fail)
    CI = os.environ.get("CI") == "true"
    print("%s: torch/numpy not importable by %s (%s: %s); scripts/reference-tools.sh installs them "
          "(Debian's python3-torch python3-numpy): %s"
          % (os.path.basename(sys.argv[0]), sys.executable, type(e).__name__, e,
             "FAILED, not skipped, since CI=true" if CI else "skipped"), flush=True)
    sys.exit(1 if CI else 77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import safetensors_io as st  # noqa: E402

EXTRA_ARGS = []  # appended to every binary run (--attn); set by main()

TOL_F64 = 1e-10
TOL_F32 = 2e-5
STEPS = 3


class Checks:
    """Counts passed and failed checks; prints one line per check."""

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

    def summary(self):
        """Prints `N passed, M failed`; returns the exit status."""
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 0 if self.failed == 0 else 1


# ---- inputs ------------------------------------------------------------------

def random_batch(cfg, b, t, rng, ignore, row_ignored=None):
    """idx and targets (b, t) below the vocabulary size; a fraction ignore
    of the targets (and all of row row_ignored) set to -1, but never all."""
    v = cfg["vocab_size"]
    idx = rng.integers(0, v, size=(b, t))
    targets = rng.integers(0, v, size=(b, t))
    targets[rng.random((b, t)) < ignore] = -1
    if row_ignored is not None:
        targets[row_ignored, :] = -1
    if (targets >= 0).sum() == 0:
        targets[0, 0] = 0
    return idx, targets


def write_batch(path, idx, targets, idt):
    """The batch as a safetensors file of int dtype idt (I32 or I64)."""
    npidt = {"I32": np.int32, "I64": np.int64}[idt]
    st.write(path, {"idx": idx.astype(npidt), "targets": targets.astype(npidt)})
    return path


def weights_in(w, dtype):
    """The arrays of w converted to dtype (F32 or F64), names unchanged."""
    npdt = {"F32": np.float32, "F64": np.float64}[dtype]
    return {n: a.astype(npdt) for n, a in w.items()}


def rounded_to_f32(w):
    """float64 arrays holding w's values rounded to float32."""
    return {n: a.astype(np.float32).astype(np.float64) for n, a in w.items()}


# ---- running the binary and comparing ---------------------------------------

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


def compare_tensors(label, got, ref, want_dtype, tol, relative_to_one, checks, tied=None,
                    zero_ref_floor=False):
    """Per parameter: max|got - ref| <= tol (1 + max|ref|) (relative_to_one)
    or tol max|ref|; checks names (exactly ref's), shapes and dtypes too.
    One line.
    tied: (head, embedding) for a model whose head is its embedding: got
    may also hold head, and then it must equal embedding.
    zero_ref_floor: relative to max|ref|, a tensor whose reference is
    exactly zero everywhere is measured against the largest max|ref| of
    the other tensors instead (without it its bound is 0)."""
    problems = []
    floor = max((float(np.max(np.abs(r))) for r in ref.values() if r.size), default=0.0)
    extra = sorted(set(got) - set(ref) - ({tied[0]} if tied else set()))
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
        if relative_to_one:
            bound = tol * (1.0 + mag)
        elif zero_ref_floor and mag == 0:
            bound = tol * floor
        else:
            bound = tol * mag
        if not np.isfinite(err) or err > bound:
            problems.append("%s max abs err %.3e > %.3e" % (n, err, bound))
        ratio = err / bound if bound > 0 else (0.0 if err == 0 else float("inf"))
        if not np.isfinite(err):
            ratio = float("inf")
        if ratio > worst[0]:
            worst = (ratio, n, err)
    if tied and tied[0] in got and tied[1] in got:
        if not np.array_equal(got[tied[0]], got[tied[1]]):
            problems.append("%s differs from %s" % tied)
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


def check_eval(binary, label, dtype, wpath, bpath, gpath, ref, checks, **compare):
    """BINARY eval --init wpath --batch bpath --dump-grads gpath --dtype
    dtype, against ref = (loss, grads) computed in float64:
        f64: |loss - ref| <= 1e-10 |ref|, grads within 1e-10 (1 + max|ref|)
        f32: |loss - ref| <= 2e-5 |ref|, grads within 2e-5 max|ref|.
    compare: passed on to compare_tensors (tied, zero_ref_floor)."""
    ref_loss, ref_grads = ref
    tol = TOL_F64 if dtype == "f64" else TOL_F32
    out = run_binary(binary, ["eval", "--init", wpath, "--batch", bpath, "--dump-grads", gpath,
                              "--dtype", dtype], label, checks)
    if out is None:
        return
    check_loss(label + " loss", parse_loss(out), ref_loss, tol, checks, out)
    got = read_output(gpath, label + " grads", checks)
    if got is not None:
        compare_tensors(label + " grads", got[0], ref_grads, dtype.upper(), tol, dtype == "f64",
                        checks, **compare)


def check_step(binary, label, wpath, bpath, opath, step, ref_w, checks, **compare):
    """BINARY step --init wpath --batch bpath --steps STEPS with step =
    (lr, weight_decay, beta2, grad_clip), --out opath, --dtype f64; every
    weight within 1e-10 (1 + max|ref|) of ref_w. Returns the written
    file's metadata, or None when there is no file to read."""
    lr, wd, beta2, clip = step
    out = run_binary(binary, ["step", "--init", wpath, "--batch", bpath, "--steps", str(STEPS),
                              "--lr", repr(lr), "--weight-decay", repr(wd), "--beta2", repr(beta2),
                              "--grad-clip", repr(clip), "--out", opath, "--dtype", "f64"],
                     label, checks)
    if out is None:
        return None
    got = read_output(opath, label + " weights", checks)
    if got is None:
        return None
    compare_tensors(label + " weights", got[0], ref_w, "F64", TOL_F64, True, checks, **compare)
    return got[1]


# ---- --self-test: checks of the torch side that do not depend on the model --

def check_loss_vs_numpy(name, loss, ref, checks):
    """The torch loss within 1e-12 (relative) of the naive numpy one."""
    err = abs(loss - ref) / abs(ref)
    return checks.record(err <= 1e-12, "selftest %s torch loss vs naive numpy" % name,
                         "loss %.17g numpy %.17g rel err %.3e" % (loss, ref, err))


def check_gradcheck(label, model, idx, targets, checks, tied=None):
    """torch.autograd.gradcheck of model's loss as a function of all its
    parameters, float64. tied: (head, embedding) when the model also reads
    its embedding under the name head."""
    names = [n for n, _ in model.named_parameters()]
    ti, tt = torch.from_numpy(idx), torch.from_numpy(targets)
    call = torch.func.functional_call if hasattr(torch, "func") else torch.nn.utils.stateless.functional_call

    def f(*ps):
        sd = dict(zip(names, ps))
        if tied:
            sd[tied[0]] = sd[tied[1]]
        return call(model, sd, (ti, tt))[1]

    inputs = tuple(p.detach().clone().requires_grad_(True) for p in model.parameters())
    ok = torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-7, rtol=1e-5, raise_exception=False)
    return checks.record(bool(ok), label, "eps 1e-6 atol 1e-7 rtol 1e-5")


def check_central_differences(np_loss, cfg, w, idx, targets, grads, names, rng, checks):
    """grads (the torch model's) against central differences (step 1e-6)
    of np_loss at 4 random entries of each tensor in names; max abs error
    <= 1e-8."""
    worst = 0.0
    for n in names:
        flat = w[n].reshape(-1)
        for j in rng.choice(flat.size, size=min(4, flat.size), replace=False):
            old = flat[j]
            flat[j] = old + 1e-6
            lp = np_loss(cfg, w, idx, targets)
            flat[j] = old - 1e-6
            lm = np_loss(cfg, w, idx, targets)
            flat[j] = old
            worst = max(worst, abs((lp - lm) / 2e-6 - grads[n].reshape(-1)[j]))
    return checks.record(worst <= 1e-8, "selftest torch grads vs central differences of numpy loss",
                         "max abs err %.3e (tol 1e-8)" % worst)


def np_adamw(w, grad_fn, steps, lr, wd, beta2, clip, beta1=0.9, eps=1e-8):
    """Plain AdamW with nanoGPT's grouping and clip_grad_norm_, in numpy."""
    w = {n: a.copy() for n, a in w.items()}
    m = {n: np.zeros_like(a) for n, a in w.items()}
    v = {n: np.zeros_like(a) for n, a in w.items()}
    for t in range(1, steps + 1):
        g = grad_fn(w)
        if clip > 0:
            norm = np.sqrt(sum((a ** 2).sum() for a in g.values()))
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


def check_adamw(cfg, w, idx, targets, ref_eval, ref_step, checks):
    """ref_step (configure_adamw + clipping, 3 steps) against np_adamw on
    the gradients of ref_eval, without clipping and with clip 0.05; per
    tensor within 1e-10 (1 + max|ref|), the parity step check's bound."""
    for clip in (0.0, 0.05):
        def grad_fn(ww):
            return ref_eval(cfg, ww, idx, targets)[1]
        ref_w = np_adamw(w, grad_fn, 3, 1e-2, 0.1, 0.99, clip)
        got = ref_step(cfg, w, idx, targets, 1e-2, 0.1, 0.99, clip)
        err, ratio = 0.0, 0.0
        for n in ref_w:
            e = float(np.max(np.abs(got[n] - ref_w[n])))
            err = max(err, e)
            ratio = max(ratio, e / (TOL_F64 * (1 + float(np.max(np.abs(ref_w[n]))))))
        checks.record(ratio <= 1, "selftest AdamW x3 (clip %g) vs numpy AdamW" % clip,
                      "max abs err %.3e (%.3g of the bound)" % (err, ratio))


# ---- the command line ---------------------------------------------------------

def main(doc, configs, quick, run_config, self_test, self_test_help, seed_base, tmp_prefix):
    """A parity script's command line (its docstring, doc, tells it).
    --self-test runs self_test(checks); otherwise run_config(binary, tmp,
    name, cfg, b, t, opt, seed, checks) runs for each of configs (with
    --quick only those named in quick) with seed seed_base + its index, in
    a temporary folder named tmp_prefix... (or --keep DIR). Returns the
    exit status."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("binary", nargs="?", help="path to the tiny_gpt executable")
    ap.add_argument("--self-test", action="store_true", help=self_test_help)
    ap.add_argument("--quick", action="store_true", help="only %d configs" % len(quick))
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
        return checks.summary()
    if not args.binary:
        ap.error("BINARY is required (or --self-test)")
    binary = args.binary
    if os.sep not in binary:
        binary = shutil.which(binary) or binary
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        checks.record(False, "binary", "%s is missing or not executable (build examples/tiny_gpt "
                      "first)" % args.binary)
        return checks.summary()

    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        tmp = args.keep
    else:
        tmp = tempfile.mkdtemp(prefix=tmp_prefix)
    try:
        for i, (name, cfg, b, t, opt) in enumerate(configs):
            if args.quick and name not in quick:
                continue
            run_config(binary, tmp, name, cfg, b, t, opt, seed_base + i, checks)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return checks.summary()
