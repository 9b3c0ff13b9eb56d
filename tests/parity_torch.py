#!/usr/bin/python3
"""Parity of examples/tiny_gpt against the PyTorch reference (bench/torch_gpt.py).

    parity_torch.py BINARY [--quick] [--keep DIR] [--attn fused|composed]
    parity_torch.py --self-test      (the torch side alone: naive numpy
                                      loss, gradcheck, AdamW, round trips)

For each config (odd sizes, one head, bias on/off, targets with -1, B=1 and
B>1, T < block_size and T == block_size) it writes random weights and a
random batch as safetensors, then runs
    BINARY eval --init W --batch B --dump-grads G --dtype f64   (and f32)
    BINARY step --init W --batch B --steps 3 --lr .. --weight-decay ..
                --beta2 .. --grad-clip .. --out W2 --dtype f64
and compares with torch computing in float64:
    eval f64: |loss - ref| <= 1e-10 |ref|; per parameter
              max|grad - ref| <= 1e-10 (1 + max|ref|)
    eval f32: |loss - ref| <= 2e-5 |ref|;   per parameter
              max|grad - ref| <= 2e-5 max|ref| (ref computed in f64 from
              the weights rounded to f32, so only the arithmetic counts)
    step f64: per parameter max|w - ref| <= 1e-10 (1 + max|ref|)
--attn is passed on to every eval/step run (the binary's default, fused
attention, when absent). One line per check with the measured error, then
`N passed, M failed`.
Exit 0 if all pass, 1 if any fails, 77 if torch is not importable (1 when
the environment has CI=true; scripts/reference-tools.sh installs torch).
"""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parity_common as pc  # noqa: E402  (exits 77 without torch/numpy, 1 under CI; bench/ on sys.path)
import numpy as np  # noqa: E402
import torch  # noqa: E402
import safetensors_io as st  # noqa: E402
import torch_common as tc  # noqa: E402
import torch_gpt as tg  # noqa: E402

TIED = ("lm_head.weight", "transformer.wte.weight")   # the head is the embedding


def tied(cfg):
    """TIED, or None for a model with its own lm_head (--untie-head)."""
    return None if cfg.get("untie_head") else TIED

# name, config, B, T, options
#   wdt: dtype of the weights file for the f64 runs; idt: batch int dtype;
#   ignore: fraction of targets set to -1 (row_ignored: one whole row -1);
#   scale: std of the random weight matrices; head: also write lm_head.weight;
#   step: (lr, weight_decay, beta2, grad_clip)
# Note on the step checks: the key part of attn.c_attn.bias has an exactly
# zero gradient in exact arithmetic (softmax ignores a per-row constant), so
# both sides hold rounding noise there and Adam turns it into an update of
# about lr * noise / eps. A different but correct summation order moves
# those weights by ~1e-11 with lr 5e-3 and gradients of norm ~5; the step
# settings keep lr * |grad| small enough that this stays well inside 1e-10.
CONFIGS = [
    ("odd6_bias_Tfull", tg.make_config(2, 2, 6, 7, 11, bias=True), 2, 7,
     dict(wdt="F64", idt="I64", ignore=0.3, scale=0.02, head=False,
          step=(1e-2, 0.1, 0.99, 0.0))),
    ("odd10_h5_nobias_B1", tg.make_config(1, 5, 10, 9, 11, bias=False), 1, 7,
     dict(wdt="F64", idt="I32", ignore=0.2, scale=0.02, head=True,
          step=(1e-2, 0.1, 0.95, 1e-3))),
    ("onehead_bias_Tshort", tg.make_config(2, 1, 8, 8, 13, bias=True), 3, 5,
     dict(wdt="F32", idt="I32", ignore=0.0, scale=0.02, head=False,
          step=(3e-3, 0.0, 0.999, 0.5))),
    ("odd10_h2_nobias_rowignored", tg.make_config(3, 2, 10, 7, 11, bias=False), 3, 7,
     dict(wdt="F64", idt="I64", ignore=0.25, row_ignored=1, scale=0.02, head=False,
          step=(1e-2, 0.1, 0.99, 1e-2))),
    ("sharp_h4_bias", tg.make_config(2, 4, 16, 12, 29, bias=True), 2, 12,
     dict(wdt="F64", idt="I64", ignore=0.1, scale=0.4, head=True,
          step=(5e-3, 0.1, 0.99, 0.1))),
    ("tanh_gelu_h3_bias", tg.make_config(2, 3, 9, 6, 13, bias=True, gelu="tanh"), 2, 6,
     dict(wdt="F64", idt="I64", ignore=0.2, scale=0.3, head=False,
          step=(5e-3, 0.1, 0.99, 0.0))),  # GPT-2's GELU (--gelu tanh), at weights where it differs from erf
    ("odd6_h2_bias_T1", tg.make_config(1, 2, 6, 4, 11, bias=True), 4, 1,
     dict(wdt="F64", idt="I64", ignore=0.0, scale=0.1, head=False,
          step=(1e-2, 0.1, 0.99, 10.0))),  # clip on but above the norm
    # wide enough to cross the f32 gemm kernel's blocks (3C = 300 columns:
    # three 128-column blocks; 210 rows: 96-row blocks and a 6-row edge)
    # and the attention's 24-row query blocks (T = 70: two whole, one partial)
    ("wide100_h5_bias_T70", tg.make_config(2, 5, 100, 70, 67, bias=True), 3, 70,
     dict(wdt="F32", idt="I64", ignore=0.1, scale=0.05, head=True,
          step=(3e-3, 0.1, 0.99, 1.0))),
    # the speedrun options (issue 23): ReLU squared, QK norm and a logit cap in
    # its bend (|logits| about the cap: an ignored cap fails); SwiGLU, an
    # untied head and zero output projections (their gradients are the only
    # ones of the block's path that are not zero at first)
    ("relu2_qknorm_softcap_h3", tg.make_config(2, 3, 12, 7, 13, bias=True, mlp="relu2", qk_norm=True,
                                               logit_softcap=1.5), 2, 7,
     dict(wdt="F64", idt="I64", ignore=0.2, scale=0.5, head=False,
          step=(5e-3, 0.1, 0.99, 0.0))),
    ("swiglu_untied_zeroproj_h2", tg.make_config(2, 2, 8, 6, 11, bias=False, mlp="swiglu", untie_head=True,
                                                 zero_init_proj=True), 3, 6,
     dict(wdt="F64", idt="I32", ignore=0.1, scale=0.3, head=True,
          step=(5e-3, 0.1, 0.99, 1.0))),
]
QUICK = ("odd6_bias_Tfull", "odd10_h5_nobias_B1", "onehead_bias_Tshort", "wide100_h5_bias_T70", "tanh_gelu_h3_bias",
         "relu2_qknorm_softcap_h3", "swiglu_untied_zeroproj_h2")


def random_weights(cfg, rng, scale):
    """nanoGPT-named numpy float64 weights: matrices/embeddings normal(0,
    scale), biases normal(0, 0.1) (so they matter), LayerNorm weights
    1 + normal(0, 0.1)."""
    model = tg.GPT(cfg)
    out = {}
    for n, p in model.named_parameters():
        shape = tuple(p.shape)
        if ".ln_" in n or n.startswith("transformer.ln_f"):
            if n.endswith(".weight"):
                out[n] = 1.0 + 0.1 * rng.standard_normal(shape)
            else:
                out[n] = 0.1 * rng.standard_normal(shape)
        elif n.endswith(".bias"):
            out[n] = 0.1 * rng.standard_normal(shape)
        else:
            out[n] = scale * rng.standard_normal(shape)
        if cfg.get("zero_init_proj") and (n.endswith("c_proj.weight") or n.endswith("mlp.w2.weight")):
            out[n] = np.zeros(shape)
    return out


def write_weights(path, w, cfg, dtype, head):
    tensors = pc.weights_in(w, dtype)
    if head and not cfg.get("untie_head"):
        tensors["lm_head.weight"] = tensors["transformer.wte.weight"]
    st.write(path, tensors, tg.config_to_meta(cfg))


def torch_ref_eval(cfg, w, idx, targets):
    model = tg.GPT(cfg).to(torch.float64)
    tg.load_weights(model, w)
    return tc.eval_grads(model, torch.from_numpy(idx), torch.from_numpy(targets))


def torch_ref_step(cfg, w, idx, targets, lr, wd, beta2, clip):
    model = tg.GPT(cfg).to(torch.float64)
    tg.load_weights(model, w)
    tc.run_steps(model, torch.from_numpy(idx), torch.from_numpy(targets), pc.STEPS, lr, wd, beta2, clip)
    return tg.state_to_numpy(model, np.float64)


def run_config(binary, tmp, name, cfg, b, t, opt, seed, checks):
    rng = np.random.default_rng(seed)
    w = random_weights(cfg, rng, opt["scale"])
    idx, targets = pc.random_batch(cfg, b, t, rng, opt["ignore"], opt.get("row_ignored"))
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    bpath = pc.write_batch(os.path.join(d, "batch.safetensors"), idx, targets, opt["idt"])

    # --- eval f64 (weights file F64 or F32; the reference uses what the file holds)
    w64 = pc.rounded_to_f32(w) if opt["wdt"] == "F32" else w
    wpath = os.path.join(d, "w_%s.safetensors" % opt["wdt"].lower())
    write_weights(wpath, w64, cfg, opt["wdt"], opt["head"])
    label = "%s eval f64 (W %s, batch %s, B=%d T=%d)" % (name, opt["wdt"], opt["idt"], b, t)
    pc.check_eval(binary, label, "f64", wpath, bpath, os.path.join(d, "grads_f64.safetensors"),
                  torch_ref_eval(cfg, w64, idx, targets), checks, tied=tied(cfg))

    # --- eval f32: weights rounded to f32, reference in f64 on those
    w32 = pc.rounded_to_f32(w)
    w32path = os.path.join(d, "w_f32.safetensors")
    write_weights(w32path, w32, cfg, "F32", opt["head"])
    pc.check_eval(binary, "%s eval f32" % name, "f32", w32path, bpath, os.path.join(d, "grads_f32.safetensors"),
                  torch_ref_eval(cfg, w32, idx, targets), checks, tied=tied(cfg))

    # --- step f64
    lr, wd, beta2, clip = opt["step"]
    label = "%s step f64 x%d (lr %g wd %g beta2 %g clip %g)" % (name, pc.STEPS, lr, wd, beta2, clip)
    pc.check_step(binary, label, wpath, bpath, os.path.join(d, "w_after.safetensors"), opt["step"],
                  torch_ref_step(cfg, w64, idx, targets, lr, wd, beta2, clip), checks, tied=tied(cfg))


# ---- --self-test: the torch side checked without the binary ---------------

def np_layernorm(x, w, b):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        mu = sum(x[i]) / len(x[i])
        var = sum((v - mu) ** 2 for v in x[i]) / len(x[i])
        out[i] = (x[i] - mu) / np.sqrt(var + 1e-5) * w + (0.0 if b is None else b)
    return out


def np_gelu(x, form="erf"):
    from math import erf, sqrt, tanh, pi
    if form == "tanh":
        return np.vectorize(lambda v: 0.5 * v * (1.0 + tanh(sqrt(2.0 / pi) * (v + 0.044715 * v ** 3))))(x)
    return np.vectorize(lambda v: 0.5 * v * (1.0 + erf(v / sqrt(2.0))))(x)


def np_loss(cfg, w, idx, targets):
    """Naive float64 loss from the nanoGPT-named weights: one sequence and
    one position at a time, explicit loops over heads and keys."""
    c, nh = cfg["n_embd"], cfg["n_head"]
    dh = c // nh

    def lin(x, name):
        y = x @ w[name + ".weight"].T
        return y + w[name + ".bias"] if cfg["bias"] else y

    def ln(x, name):
        return np_layernorm(x, w[name + ".weight"], w.get(name + ".bias") if cfg["bias"] else None)

    total, count = 0.0, 0
    for bi in range(idx.shape[0]):
        t = idx.shape[1]
        x = np.stack([w["transformer.wte.weight"][idx[bi, i]] + w["transformer.wpe.weight"][i]
                      for i in range(t)])
        for L in range(cfg["n_layer"]):
            pre = "transformer.h.%d." % L
            qkv = lin(ln(x, pre + "ln_1"), pre + "attn.c_attn")
            y = np.zeros((t, c))
            for h in range(nh):
                q = qkv[:, h * dh:(h + 1) * dh]
                k = qkv[:, c + h * dh:c + (h + 1) * dh]
                v = qkv[:, 2 * c + h * dh:2 * c + (h + 1) * dh]
                if cfg.get("qk_norm"):
                    q = np.stack([r / np.sqrt(sum(e * e for e in r) / dh + 1e-5) for r in q])
                    k = np.stack([r / np.sqrt(sum(e * e for e in r) / dh + 1e-5) for r in k])
                for i in range(t):
                    s = np.array([np.dot(q[i], k[j]) / np.sqrt(dh) for j in range(i + 1)])
                    e = np.exp(s - s.max())
                    a = e / e.sum()
                    y[i, h * dh:(h + 1) * dh] = sum(a[j] * v[j] for j in range(i + 1))
            x = x + lin(y, pre + "attn.c_proj")
            x2 = ln(x, pre + "ln_2")
            kind = cfg.get("mlp", "gelu")
            if kind == "swiglu":
                a = lin(x2, pre + "mlp.w1")
                x = x + lin(a / (1 + np.exp(-a)) * lin(x2, pre + "mlp.w3"), pre + "mlp.w2")
            else:
                hid = lin(x2, pre + "mlp.c_fc")
                hid = np.maximum(hid, 0) ** 2 if kind == "relu2" else np_gelu(hid, cfg.get("gelu", "erf"))
                x = x + lin(hid, pre + "mlp.c_proj")
        head = w["lm_head.weight"] if cfg.get("untie_head") else w["transformer.wte.weight"]
        logits = ln(x, "transformer.ln_f") @ head.T
        if cfg.get("logit_softcap", 0) > 0:
            logits = cfg["logit_softcap"] * np.tanh(logits / cfg["logit_softcap"])
        for i in range(t):
            if targets[bi, i] == -1:
                continue
            z = logits[i]
            m = z.max()
            total += m + np.log(np.exp(z - m).sum()) - z[targets[bi, i]]
            count += 1
    return total / count


def self_test(checks):
    import struct
    tmp = tempfile.mkdtemp(prefix="parity_selftest_")
    try:
        # safetensors: a file built by hand, byte by byte, read back
        hdr = b'{"__metadata__":{"k":"v"},"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},' \
              b'"b":{"dtype":"F64","shape":[1,1],"data_offsets":[8,16]}}'
        hdr += b" " * ((-len(hdr)) % 8)
        raw = struct.pack("<Q", len(hdr)) + hdr + struct.pack("<ii", 7, -3) + struct.pack("<d", 0.25)
        path = os.path.join(tmp, "hand.safetensors")
        with open(path, "wb") as f:
            f.write(raw)
        t, meta = st.read(path)
        ok = (meta == {"k": "v"} and t["a"].dtype == np.int32 and list(t["a"]) == [7, -3]
              and t["b"].shape == (1, 1) and t["b"][0, 0] == 0.25)
        checks.record(ok, "selftest safetensors read hand-built file", "meta %r a %r b %r"
                      % (meta, t["a"].tolist(), t["b"].tolist()))
        # write -> bytes layout and round trip for every dtype
        src = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
               "f64": np.array([np.pi, -1e300, 5e-324]),
               "i32": np.array([[2 ** 31 - 1], [-2 ** 31]], dtype=np.int32),
               "i64": np.array([2 ** 62, -5], dtype=np.int64)}
        path = os.path.join(tmp, "rt.safetensors")
        st.write(path, src, {"x": "1"})
        with open(path, "rb") as f:
            blob = f.read()
        (n,) = struct.unpack("<Q", blob[:8])
        back, meta = st.read(path)
        ok = (n % 8 == 0 and meta == {"x": "1"}
              and all(back[k].dtype == src[k].dtype and np.array_equal(back[k], src[k]) for k in src)
              and blob[8 + n:8 + n + 4] == struct.pack("<f", src["f32"][0, 0])
              and len(blob) == 8 + n + 24 + 24 + 8 + 16)
        checks.record(ok, "selftest safetensors round trip F32/F64/I32/I64", "header %d bytes" % n)
        bad = 0
        for corrupt in (blob[:4], blob[:8 + n] + blob[8 + n + 1:], blob + b"\0",
                        struct.pack("<Q", 10 ** 9) + blob[8:],
                        blob.replace(b'"F32"', b'"X32"')):
            with open(path, "wb") as f:
                f.write(corrupt)
            try:
                st.read(path)
            except st.SafetensorsError:
                bad += 1
        checks.record(bad == 5, "selftest safetensors rejects corrupt files", "%d of 5 rejected" % bad)

        # model vs naive numpy loss; save/load round trip; gradcheck
        for i, (name, cfg, b, t, opt) in enumerate(CONFIGS):
            rng = np.random.default_rng(1000 + i)
            w = random_weights(cfg, rng, opt["scale"])
            idx, targets = pc.random_batch(cfg, b, t, rng, opt["ignore"], opt.get("row_ignored"))
            loss, _ = torch_ref_eval(cfg, w, idx, targets)
            pc.check_loss_vs_numpy(name, loss, np_loss(cfg, w, idx, targets), checks)
            model = tg.GPT(cfg).double()
            tg.load_weights(model, w)
            path = os.path.join(tmp, name + ".safetensors")
            tg.save_model(model, path, "F64", with_head=opt["head"])
            m2 = tg.load_model(path)
            same = m2.cfg == cfg and all(np.array_equal(a, w[n]) for n, a in
                                         tg.state_to_numpy(m2).items())
            checks.record(same and (m2.lm_head.weight is m2.transformer.wte.weight) != bool(cfg.get("untie_head")),
                          "selftest %s save/load round trip" % name, "config %r" % m2.cfg)

        cfg = tg.make_config(2, 2, 4, 5, 7, bias=True)
        rng = np.random.default_rng(7)
        w = random_weights(cfg, rng, 0.3)
        idx, targets = pc.random_batch(cfg, 2, 5, rng, 0.3)
        model = tg.GPT(cfg).double()
        tg.load_weights(model, w)
        pc.check_gradcheck("selftest torch.autograd.gradcheck of the loss (all %d parameters)"
                           % len(tg.param_names(model)), model, idx, targets, checks, tied=TIED)
        # the model's own gradients vs central differences on the numpy loss
        _, grads = torch_ref_eval(cfg, w, idx, targets)
        pc.check_central_differences(np_loss, cfg, w, idx, targets, grads,
                                     ("transformer.wte.weight", "transformer.h.1.attn.c_attn.bias",
                                      "transformer.h.0.ln_1.weight", "transformer.ln_f.bias"), rng, checks)

        # optimizer: configure_adamw + clipping vs plain numpy AdamW, bound as
        # in the parity step check (see the note above CONFIGS: the key bias
        # moves by rounding noise / eps, ~1e-12 here)
        pc.check_adamw(cfg, w, idx, targets, torch_ref_eval, torch_ref_step, checks)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(pc.main(__doc__, CONFIGS, QUICK, run_config, self_test,
                     self_test_help="check the torch side only (naive numpy, gradcheck, round trips)",
                     seed_base=1000, tmp_prefix="parity_torch_"))
