#!/usr/bin/python3
"""What Muon's Newton-Schulz iteration does to a real gradient's singular
values (docs/muon.md).

    muon_singular_values.py CKPT

CKPT: a tiny_gpt GPT checkpoint on a byte vocabulary (e.g. OUT/best.safetensors
of `tiny_gpt train` on the built-in corpus). Takes the loss's gradient on
8 windows of an English text, float64, and for three of the blocks'
matrices prints the gradient's singular values, then those of X after
each of the five iterations (X = G / ||G||_F to start; a, b, c =
3.4445, -4.7750, 2.0315), and how far X's singular vectors moved from
G's (the largest off-diagonal entry of U^T X V, G = U S V^T).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import torch  # noqa: E402
import safetensors_io as st  # noqa: E402
import torch_gpt as tg  # noqa: E402

A, B, C = 3.4445, -4.7750, 2.0315
TEXT = ("the cat sat on the mat. the dog ran to the park and the bird sang in the tree.\n"
        "a man took his hat and his coat and went out into the cold. she said that it was late.\n") * 3
MATRICES = ("transformer.h.0.attn.c_proj.weight", "transformer.h.0.mlp.c_fc.weight",
            "transformer.h.1.attn.c_attn.weight")


def newton_schulz(g, steps=5):
    """X after 0..steps iterations, each in g's orientation."""
    x = g / (np.linalg.norm(g) + 1e-7)
    tr = x.shape[0] > x.shape[1]
    if tr:
        x = x.T
    out = [x]
    for _ in range(steps):
        a = x @ x.T
        x = A * x + (B * a + C * a @ a) @ x
        out.append(x)
    return [o.T if tr else o for o in out]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    torch.set_num_threads(1)
    t, m = st.read(sys.argv[1])
    cfg = tg.make_config(int(m["n_layer"]), int(m["n_head"]), int(m["n_embd"]), int(m["block_size"]),
                         int(m["vocab_size"]), bias=m.get("bias") == "true")
    model = tg.GPT(cfg).to(torch.float64)
    tg.load_weights(model, {k: v.astype(np.float64) for k, v in t.items()})
    index = {int(c): i for i, c in enumerate(m["vocab"].split(","))}
    ids = np.array([index[ord(ch)] for ch in TEXT])
    T = cfg["block_size"]
    rows = [ids[i:i + T + 1] for i in range(0, len(ids) - T - 1, T)][:8]
    x = torch.from_numpy(np.stack([r[:-1] for r in rows]))
    y = torch.from_numpy(np.stack([r[1:] for r in rows]))
    _, loss = model(x, y)
    loss.backward()
    print("loss %.4f on %d windows of %d tokens" % (loss.item(), x.shape[0], x.shape[1]))
    params = dict(model.named_parameters())
    for name in MATRICES:
        g = params[name].grad.numpy()
        s = np.linalg.svd(g, compute_uv=False)
        print("%s %s: gradient's singular values max %.3g, median %.3g, min %.3g; the top 5 hold %.0f%% of "
              "||G||_F^2" % (name, g.shape, s[0], np.median(s), s[-1], 100 * (s[:5] ** 2).sum() / (s ** 2).sum()))
        xs = newton_schulz(g)
        for k, xk in enumerate(xs):
            sx = np.linalg.svd(xk, compute_uv=False)
            print("  after %d: max %.3f, median %.3f, in [0.6, 1.25]: %3.0f%%"
                  % (k, sx[0], np.median(sx), 100 * np.mean((sx > 0.6) & (sx < 1.25))))
        u, _, vt = np.linalg.svd(g, full_matrices=False)
        d = u.T @ xs[-1] @ vt.T
        print("  singular vectors kept: largest off-diagonal |U^T X V| %.1e" % np.abs(d - np.diag(np.diag(d))).max())


if __name__ == "__main__":
    main()
