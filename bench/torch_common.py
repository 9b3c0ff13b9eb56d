"""What the PyTorch references (torch_gpt.py, torch_llama.py) share: the
training recipe, one-batch gradients, and copying named weights into a
model. Nothing here knows a model's architecture or parameter names.

nanoGPT's AdamW configuration: tensors with dim >= 2 decay, the others do
not; global-norm clipping as clip_grad_norm_.
"""

import numpy as np
import torch


def configure_adamw(model, lr, weight_decay, beta2, beta1=0.9, eps=1e-8):
    """nanoGPT's configure_optimizers: tensors with dim >= 2 decay by
    weight_decay, the others (biases, norm weights) by 0. The plain
    per-tensor loop (foreach off; fused is not used)."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    nodecay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay},
              {"params": nodecay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(beta1, beta2), eps=eps, foreach=False)


def clip_grads(model, max_norm):
    """Global-norm clipping as nanoGPT (PyTorch clip_grad_norm_). max_norm
    <= 0 means no clipping. Returns the norm before clipping."""
    if max_norm > 0:
        return float(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm))
    return None


def eval_grads(model, idx, targets):
    """Loss (float) and {name: grad ndarray} for one batch (dropout off)."""
    model.eval()
    model.zero_grad(set_to_none=True)
    _, loss = model(idx, targets)
    loss.backward()
    grads = {n: (p.grad.detach().cpu().numpy().copy() if p.grad is not None
                 else np.zeros(tuple(p.shape)))
             for n, p in model.named_parameters()}
    return float(loss.item()), grads


def run_steps(model, idx, targets, steps, lr, weight_decay, beta2, grad_clip):
    """steps AdamW steps (configure_adamw: beta1 0.9, eps 1e-8) at constant
    lr on one batch, clipping at grad_clip, the model in train mode
    (dropout as configured). Returns the losses before each step."""
    opt = configure_adamw(model, lr, weight_decay, beta2)
    model.train()
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        _, loss = model(idx, targets)
        loss.backward()
        clip_grads(model, grad_clip)
        opt.step()
        losses.append(float(loss.item()))
    return losses


def load_weights(model, tensors, path="<file>", tied=None):
    """Copies named arrays into model's parameters (converting dtype).
    Every parameter must be present with its shape, and nothing else.
    tied: (head, embedding) when the model's head is its embedding: then
    a tensor named head is accepted too, if it equals the embedding."""
    names = set(n for n, _ in model.named_parameters())
    allowed = {tied[0]} if tied else set()
    extra = sorted(set(tensors) - names - allowed)
    if extra:
        raise ValueError("%s: unexpected tensors %s" % (path, ", ".join(extra)))
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n not in tensors:
                raise ValueError("%s: missing parameter %s" % (path, n))
            a = tensors[n]
            if tuple(a.shape) != tuple(p.shape):
                raise ValueError("%s: %s has shape %s, model expects %s"
                                 % (path, n, tuple(a.shape), tuple(p.shape)))
            p.copy_(torch.from_numpy(np.asarray(a)).to(p.dtype))
    if tied and tied[0] in tensors:
        head, emb = tied
        if not np.array_equal(tensors[head], tensors[emb]):
            raise ValueError("%s: %s differs from %s (the head is tied)" % (path, head, emb))
    return model
