#!/usr/bin/python3
"""Parity of tapegrad's Muon (optim/muon.c) against a PyTorch Muon written here
from the definition (issue 23; optim/optim.h), on tiny_gpt's GPT.

    parity_muon.py BINARY [--quick] [--keep DIR]
    parity_muon.py --self-test      (the torch Muon alone, against numpy)

For each config (odd sizes: tall, wide and square matrices, biases on/off,
targets with -1, gradient clipping on/off) it writes random weights and a
random batch as safetensors, then runs
    BINARY step --init W --batch B --steps 4 --optimizer muon --muon-lr ..
                --muon-momentum .. --lr .. --weight-decay .. --beta2 ..
                --grad-clip .. --out W2 --dtype f64
and compares with torch in float64: the global gradient clip over all
gradients, then Muon on the blocks' 2-D weights (their weight decay the
same --weight-decay) and AdamW (nanoGPT's groups) on everything else
(embeddings, LayerNorms, biases). Every weight within 1e-10 (1 + max|ref|).
The same run with --optimizer adamw must differ from the Muon reference
(the check can fail). One line per check, then `N passed, M failed`.
Exit 0 if all pass, 1 if any fails, 77 if torch is not importable (1 when
the environment has CI=true).
"""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parity_common as pc  # noqa: E402  (exits 77 without torch/numpy, 1 under CI)
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch_common as tc  # noqa: E402
import torch_gpt as tg  # noqa: E402
import parity_torch as pt  # noqa: E402  (random weights, the weights file, the tied names)

STEPS = 4
NS = (3.4445, -4.7750, 2.0315)

# name, config, B, T, options: step = (muon_lr, momentum, lr, weight_decay, beta2, grad_clip)
CONFIGS = [
    # C 5: c_attn (15,5) tall, attn c_proj (5,5) square, c_fc (20,5) tall, mlp c_proj (5,20) wide
    ("c5_bias_clip", tg.make_config(2, 1, 5, 7, 11, bias=True), 2, 7,
     dict(wdt="F64", idt="I64", ignore=0.3, scale=0.1, head=False,
          step=(0.02, 0.95, 1e-2, 0.1, 0.99, 0.5))),
    ("c9_h3_nobias_B1", tg.make_config(1, 3, 9, 9, 13, bias=False), 1, 8,
     dict(wdt="F64", idt="I32", ignore=0.2, scale=0.05, head=True,
          step=(0.05, 0.9, 5e-3, 0.0, 0.95, 0.0))),
    ("c7_bias_noclip_wd", tg.make_config(2, 7, 7, 5, 10, bias=True), 3, 5,
     dict(wdt="F64", idt="I64", ignore=0.25, scale=0.1, head=False,
          step=(0.03, 0.8, 3e-3, 0.3, 0.999, 100.0))),
]
QUICK = ("c5_bias_clip", "c9_h3_nobias_B1")


def muon_takes(name, p):
    """tg_muon_takes: 2-D, and a dot-separated part of the name all digits."""
    return p.dim() == 2 and any(part.isdigit() for part in name.split(".")[1:])


class TorchMuon:
    """Muon from the definition, one matrix at a time:
        buf = m buf + (1 - m) G;  U = (1 - m) G + m buf
        X = U / (||U||_F + 1e-7), X^T when rows > cols
        5 x: A = X X^T; B = b A + c A A; X = a X + B X
        W = W (1 - lr wd) - lr sqrt(max(1, rows / cols)) X"""

    def __init__(self, params, lr, momentum, weight_decay):
        self.params = list(params)
        self.lr, self.m, self.wd = lr, momentum, weight_decay
        self.bufs = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self):
        a, b, c = NS
        m = self.m
        for p, buf in zip(self.params, self.bufs):
            g = p.grad
            buf.copy_(m * buf + (1 - m) * g)
            u = (1 - m) * g + m * buf
            x = u / (torch.linalg.norm(u) + 1e-7)
            rows, cols = p.shape
            if rows > cols:
                x = x.T
            for _ in range(5):
                A = x @ x.T
                B = b * A + c * (A @ A)
                x = a * x + B @ x
            if rows > cols:
                x = x.T
            p.mul_(1 - self.lr * self.wd)
            p.sub_(self.lr * max(1.0, rows / cols) ** 0.5 * x)


def torch_ref_step(cfg, w, idx, targets, step, steps=STEPS):
    muon_lr, mom, lr, wd, beta2, clip = step
    model = tg.GPT(cfg).to(torch.float64)
    tg.load_weights(model, w)
    named = [(n, p) for n, p in model.named_parameters()]
    mu = [p for n, p in named if muon_takes(n, p)]
    rest = [p for n, p in named if not muon_takes(n, p)]
    groups = [{"params": [p for p in rest if p.dim() >= 2], "weight_decay": wd},
              {"params": [p for p in rest if p.dim() < 2], "weight_decay": 0.0}]
    adamw = torch.optim.AdamW(groups, lr=lr, betas=(0.9, beta2), eps=1e-8, foreach=False)
    muon = TorchMuon(mu, muon_lr, mom, wd)
    model.train()
    ti, tt = torch.from_numpy(idx), torch.from_numpy(targets)
    for _ in range(steps):
        model.zero_grad(set_to_none=True)
        _, loss = model(ti, tt)
        loss.backward()
        tc.clip_grads(model, clip)
        muon.step()
        adamw.step()
    return tg.state_to_numpy(model, np.float64), len(mu)


def run_step(binary, label, wpath, bpath, opath, step, optimizer, checks):
    muon_lr, mom, lr, wd, beta2, clip = step
    out = pc.run_binary(binary, ["step", "--init", wpath, "--batch", bpath, "--steps", str(STEPS),
                                 "--optimizer", optimizer, "--muon-lr", repr(muon_lr), "--muon-momentum", repr(mom),
                                 "--lr", repr(lr), "--weight-decay", repr(wd), "--beta2", repr(beta2),
                                 "--grad-clip", repr(clip), "--out", opath, "--dtype", "f64"], label, checks)
    if out is None:
        return None
    return pc.read_output(opath, label + " weights", checks)


def run_config(binary, tmp, name, cfg, b, t, opt, seed, checks):
    rng = np.random.default_rng(seed)
    w = pt.random_weights(cfg, rng, opt["scale"])
    idx, targets = pc.random_batch(cfg, b, t, rng, opt["ignore"], opt.get("row_ignored"))
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    bpath = pc.write_batch(os.path.join(d, "batch.safetensors"), idx, targets, opt["idt"])
    wpath = os.path.join(d, "w.safetensors")
    pt.write_weights(wpath, w, cfg, opt["wdt"], opt["head"])
    ref, n_muon = torch_ref_step(cfg, w, idx, targets, opt["step"])
    label = "%s muon step f64 x%d (muon lr %g momentum %g, adamw lr %g wd %g beta2 %g clip %g; %d Muon matrices)" % (
        (name, STEPS) + tuple(opt["step"]) + (n_muon,))
    got = run_step(binary, label, wpath, bpath, os.path.join(d, "w_muon.safetensors"), opt["step"], "muon", checks)
    if got is not None:
        pc.compare_tensors(label, got[0], ref, "F64", pc.TOL_F64, True, checks, tied=pt.TIED)
    # the same weights trained by AdamW alone: far from the Muon reference
    got = run_step(binary, name + " adamw step", wpath, bpath, os.path.join(d, "w_adamw.safetensors"), opt["step"],
                   "adamw", checks)
    if got is not None:
        worst = max(float(np.max(np.abs(got[0][n] - ref[n]))) for n in ref)
        checks.record(worst > 1e-4, "%s --optimizer adamw differs from the Muon reference" % name,
                      "max abs diff %.3e (must be > 1e-4)" % worst)


# ---- --self-test: the torch Muon against numpy --------------------------------

def np_muon_matrix(w, grads, lr, m, wd):
    """Muon on one matrix over the gradients in grads, numpy, naive loops
    for the products."""
    a, b, c = NS
    w = w.copy()
    buf = np.zeros_like(w)

    def mm(x, y):
        out = np.zeros((x.shape[0], y.shape[1]))
        for i in range(x.shape[0]):
            for j in range(y.shape[1]):
                out[i, j] = sum(x[i, k] * y[k, j] for k in range(x.shape[1]))
        return out

    for g in grads:
        buf = m * buf + (1 - m) * g
        u = (1 - m) * g + m * buf
        x = u / (np.sqrt((u * u).sum()) + 1e-7)
        tr = w.shape[0] > w.shape[1]
        if tr:
            x = x.T.copy()
        for _ in range(5):
            A = mm(x, x.T)
            B = b * A + c * mm(A, A)
            x = a * x + mm(B, x)
        if tr:
            x = x.T
        w = w * (1 - lr * wd) - lr * max(1.0, w.shape[0] / w.shape[1]) ** 0.5 * x
    return w


def self_test(checks):
    rng = np.random.default_rng(7)
    for shape in ((5, 7), (9, 4), (6, 6), (1, 5)):
        w0 = rng.standard_normal(shape)
        grads = [rng.standard_normal(shape) for _ in range(3)]
        p = torch.nn.Parameter(torch.from_numpy(w0.copy()))
        opt = TorchMuon([p], 0.05, 0.9, 0.1)
        for g in grads:
            p.grad = torch.from_numpy(g.copy())
            opt.step()
        ref = np_muon_matrix(w0, grads, 0.05, 0.9, 0.1)
        err = float(np.max(np.abs(p.detach().numpy() - ref)))
        checks.record(err <= 1e-13, "selftest torch Muon %dx%d x3 vs numpy" % shape, "max abs err %.3e" % err)
    # what the iteration does: U's singular values all end near 1 (the
    # quintic swings between about 0.7 and 1.2), the singular vectors kept
    g = np.linalg.qr(rng.standard_normal((9, 4)))[0] @ np.diag([4.0, 3.0, 2.0, 1.0])
    x = torch.from_numpy(g.T / (np.linalg.norm(g) + 1e-7))
    a, b, c = NS
    for _ in range(5):
        A = x @ x.T
        x = a * x + (b * A + c * (A @ A)) @ x
    s = np.linalg.svd(x.numpy(), compute_uv=False)
    checks.record(bool(np.all(s > 0.6) and np.all(s < 1.25)), "selftest Newton-Schulz singular values",
                  "%s from %s" % (np.array2string(s, precision=3),
                                  np.array2string(np.linalg.svd(g, compute_uv=False), precision=3)))
    names = ["transformer.h.0.attn.c_attn.weight", "transformer.h.10.mlp.c_proj.weight", "transformer.wte.weight",
             "transformer.wpe.weight", "transformer.h.0.ln_1.weight", "lm_head.weight"]
    want = [True, True, False, False, False, False]
    got = [muon_takes(n, torch.zeros((2, 2) if "ln_" not in n else (2,))) for n in names]
    checks.record(got == want, "selftest the tensors Muon takes", str(list(zip(names, got))))


if __name__ == "__main__":
    tmp = None
    sys.exit(pc.main(__doc__, CONFIGS, QUICK, run_config, self_test,
                     self_test_help="check the torch Muon only (against numpy)",
                     seed_base=2300, tmp_prefix="parity_muon_"))
