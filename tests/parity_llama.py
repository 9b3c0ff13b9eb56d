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
Exit 0 if all pass, 1 if any fails, 77 if torch is not importable (1 when
the environment has CI=true; scripts/reference-tools.sh installs torch).
"""

import math
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
import torch_llama as tl  # noqa: E402

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
    # the speedrun options (issue 23): ReLU squared with QK norm (before RoPE,
    # GQA) and a logit cap in its bend (an ignored option fails); a tanh GELU
    # MLP, untied, zero output projections
    ("d24_h4_kv2_relu2_qknorm_softcap", C(2, 4, 2, 24, 45, 9, 263, tied=True, mlp="relu2", qk_norm=True,
                                         logit_softcap=2.0, norm_eps=1e-4), 2, 9,
     dict(wdt="F64", idt="I64", ignore=0.2, scale=0.3, head=False,
          step=(5e-3, 0.1, 0.99, 0.0))),
    ("d16_h2_gelu_tanh_untied_zeroproj", C(2, 2, 2, 16, 33, 7, 261, tied=False, mlp="gelu", gelu="tanh",
                                          zero_init_proj=True, qk_norm=True, rope="halves"), 3, 7,
     dict(wdt="F64", idt="I32", ignore=0.1, scale=0.3, head=False,
          step=(5e-3, 0.1, 0.99, 1.0))),
]
QUICK = ("d28_h7_kv7_tied_head_Tfull", "d28_h7_mqa_untied_B1_Tshort", "d32_h8_kv2_halves_untied_sharp",
         "wide96_h6_kv6_tied_T70", "d24_h4_kv2_relu2_qknorm_softcap", "d16_h2_gelu_tanh_untied_zeroproj")


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
        if cfg.get("zero_init_proj") and n.endswith(("wo.weight", "w2.weight", "c_proj.weight")):
            out[n] = np.zeros(shape)
    return out


def write_weights(path, w, cfg, dtype, head):
    tensors = pc.weights_in(w, dtype)
    if head:
        tensors["output.weight"] = tensors["tok_embeddings.weight"]
    st.write(path, tensors, tl.config_to_meta(cfg))


def make_model(cfg, w):
    return tl.load_weights(tl.Llama(cfg).to(torch.float64), w)


def torch_ref_eval(cfg, w, idx, targets):
    return tc.eval_grads(make_model(cfg, w), torch.from_numpy(idx), torch.from_numpy(targets))


def torch_ref_step(cfg, w, idx, targets, lr, wd, beta2, clip):
    model = make_model(cfg, w)
    tc.run_steps(model, torch.from_numpy(idx), torch.from_numpy(targets), pc.STEPS, lr, wd, beta2, clip)
    return tl.state_to_numpy(model, np.float64)


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
    idx, targets = pc.random_batch(cfg, b, t, rng, opt["ignore"], opt.get("row_ignored"))
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    bpath = pc.write_batch(os.path.join(d, "batch.safetensors"), idx, targets, opt["idt"])

    # --- eval f64 (weights file F64 or F32; the reference uses what the file holds)
    w64 = pc.rounded_to_f32(w) if opt["wdt"] == "F32" else w
    wpath = os.path.join(d, "w_%s.safetensors" % opt["wdt"].lower())
    write_weights(wpath, w64, cfg, opt["wdt"], opt["head"])
    label = "%s eval f64 (W %s%s, batch %s, B=%d T=%d)" % (
        name, opt["wdt"], " with output.weight" if opt["head"] else "", opt["idt"], b, t)
    pc.check_eval(binary, label, "f64", wpath, bpath, os.path.join(d, "grads_f64.safetensors"),
                  torch_ref_eval(cfg, w64, idx, targets), checks)

    # --- eval f32: weights rounded to f32, reference in f64 on those.
    # A gradient whose reference is exactly zero (wq's and wk's at T = 1: a
    # softmax over one key is 1 whatever the score) is measured against the
    # model's largest max|ref| (zero_ref_floor): in f32 it is the rounding
    # noise of a difference of terms of the model's gradient scale (the
    # fused attention's backward forms dS = P (dP - rowsum(dO O)), which is
    # not exactly 0 there).
    w32 = pc.rounded_to_f32(w)
    w32path = os.path.join(d, "w_f32.safetensors")
    write_weights(w32path, w32, cfg, "F32", opt["head"])
    pc.check_eval(binary, "%s eval f32" % name, "f32", w32path, bpath, os.path.join(d, "grads_f32.safetensors"),
                  torch_ref_eval(cfg, w32, idx, targets), checks, zero_ref_floor=True)

    # --- step f64, and the written file's metadata is the config
    lr, wd, beta2, clip = opt["step"]
    label = "%s step f64 x%d (lr %g wd %g beta2 %g clip %g)" % (name, pc.STEPS, lr, wd, beta2, clip)
    meta = pc.check_step(binary, label, wpath, bpath, os.path.join(d, "w_after.safetensors"), opt["step"],
                         torch_ref_step(cfg, w64, idx, targets, lr, wd, beta2, clip), checks)
    if meta is not None:
        check_meta(label + " metadata", meta, cfg, checks)


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


def np_qk(cfg, x, n_heads, dh):
    """QK norm when cfg has it: each head's dh values of each row (T, n_heads dh)
    over sqrt(their mean square + norm_eps), one at a time."""
    if not cfg.get("qk_norm"):
        return x
    out = np.array(x)
    for i in range(x.shape[0]):
        for h in range(n_heads):
            seg = x[i, h * dh:(h + 1) * dh]
            out[i, h * dh:(h + 1) * dh] = seg / math.sqrt(sum(e * e for e in seg) / dh + cfg["norm_eps"])
    return out


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
            q = np_rope(np_qk(cfg, xn @ w[pre + "attention.wq.weight"].T, nh, dh), nh, dh, cfg["rope_theta"], halves)
            k = np_rope(np_qk(cfg, xn @ w[pre + "attention.wk.weight"].T, nkv, dh), nkv, dh, cfg["rope_theta"],
                        halves)
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
            kind = cfg.get("mlp", "swiglu")
            if kind == "swiglu":
                gate = np_silu(hn @ w[pre + "feed_forward.w1.weight"].T) * (hn @ w[pre + "feed_forward.w3.weight"].T)
                x = x + gate @ w[pre + "feed_forward.w2.weight"].T
            else:
                u = hn @ w[pre + "feed_forward.c_fc.weight"].T
                if kind == "relu2":
                    u = np.maximum(u, 0) ** 2
                elif cfg.get("gelu") == "tanh":
                    u = np.vectorize(lambda v: 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) *
                                                                        (v + 0.044715 * v ** 3))))(u)
                else:
                    u = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(u)
                x = x + u @ w[pre + "feed_forward.c_proj.weight"].T
        logits = np_rmsnorm(x, w["norm.weight"], eps) @ head.T
        if cfg.get("logit_softcap", 0) > 0:
            logits = cfg["logit_softcap"] * np.tanh(logits / cfg["logit_softcap"])
        for i in range(t):
            if targets[bi, i] == -1:
                continue
            z = logits[i]
            m = z.max()
            total += m + math.log(np.exp(z - m).sum()) - z[targets[bi, i]]
            count += 1
    return total / count


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


def self_test(checks):
    tmp = tempfile.mkdtemp(prefix="parity_llama_selftest_")
    try:
        # model vs naive numpy loss; save/load round trip; the config's closed-form size
        for i, (name, cfg, b, t, opt) in enumerate(CONFIGS):
            rng = np.random.default_rng(1000 + i)
            w = random_weights(cfg, rng, opt["scale"])
            idx, targets = pc.random_batch(cfg, b, t, rng, opt["ignore"], opt.get("row_ignored"))
            loss, _ = torch_ref_eval(cfg, w, idx, targets)
            pc.check_loss_vs_numpy(name, loss, np_loss(cfg, w, idx, targets), checks)
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
            idx, targets = pc.random_batch(cfg, 2, 9, rng, 0.1)
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
        idx, targets = pc.random_batch(cfg, 2, 8, rng, 0.1)
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
            idx, targets = pc.random_batch(cfg, 2, 5, rng, 0.3)
            model = make_model(cfg, w)
            label = "selftest torch.autograd.gradcheck of the loss (%d parameters, kv heads %d, %s, %s)" % (
                len(tl.param_names(model)), cfg["n_kv_head"], cfg["rope"], "tied" if cfg["tied"] else "untied")
            pc.check_gradcheck(label, model, idx, targets, checks)

        # the model's own gradients vs central differences on the numpy loss
        cfg = C(2, 4, 2, 16, 11, 6, 9, tied=False, rope_theta=100.0)
        rng = np.random.default_rng(8)
        w = random_weights(cfg, rng, 0.3)
        idx, targets = pc.random_batch(cfg, 2, 6, rng, 0.2)
        _, grads = torch_ref_eval(cfg, w, idx, targets)
        pc.check_central_differences(np_loss, cfg, w, idx, targets, grads,
                                     ("tok_embeddings.weight", "layers.1.attention.wk.weight",
                                      "layers.0.attention.wq.weight", "layers.0.feed_forward.w3.weight",
                                      "layers.0.attention_norm.weight", "norm.weight", "output.weight"),
                                     rng, checks)

        # optimizer: configure_adamw + clipping vs plain numpy AdamW
        pc.check_adamw(cfg, w, idx, targets, torch_ref_eval, torch_ref_step, checks)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(pc.main(__doc__, CONFIGS, QUICK, run_config, self_test,
                     self_test_help="check the torch side only (naive numpy, gradcheck, RoPE pairings, GQA, round trips)",
                     seed_base=2000, tmp_prefix="parity_llama_"))
