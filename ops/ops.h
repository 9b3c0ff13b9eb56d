/* tapegrad ops: every op runs eagerly on a graph, records itself on the
 * graph's tape when an input requires grad, and has a backward.
 *
 * Conventions for every op here:
 * - Float ops take f32 or f64 tensors; all float inputs of one op share a
 *   dtype. The output has the inputs' dtype.
 * - Bad input (shapes that do not fit, wrong dtype, a NULL input, ids out
 *   of range, a tensor made before the last tg_graph_reset of its graph)
 *   returns NULL and records one message on the graph naming the op and
 *   the shapes, e.g. "matmul: inner dimensions differ: a f32 (2,3) x b f32
 *   (4,5)". Given NULL, every op returns NULL.
 * - Axes may be negative (-1 is the last).
 * - Outputs are new contiguous tensors, except tg_reshape, which is a
 *   view sharing its input's data. */
#ifndef TG_OPS_H
#define TG_OPS_H

#include "../core/export.h"
#include "../core/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- matmul (ops/matmul.c) ------------------------------------------ */

/* a (..., M, K) @ b (..., K, N) -> (..., M, N); leading dimensions
 * broadcast (NumPy), e.g. (B,H,T,dh) @ (B,H,dh,T) or (B,T,C) @ (C,D).
 * A 1-D a is a row (1,K) and a 1-D b a column (K,1); the added
 * dimension is removed from the result, as in NumPy. Errors: a scalar
 * operand, inner dimensions that differ, batch dimensions that do not
 * broadcast, dtypes that differ. Backward: da += dy b^T, db += a^T dy. */
TG_API tg_tensor *tg_matmul(tg_graph *g, tg_tensor *a, tg_tensor *b);

/* ---- linear (ops/linear.c) ------------------------------------------- */

/* y = x @ w^T + b, as PyTorch F.linear: x (..., in), w (out, in) (the
 * nn.Linear layout), b (out) or NULL -> y (..., out). One gemm with a
 * transpose flag; backward dx += dy w, dw += dy^T x, db += column sums of
 * dy, with no copies. Errors: w not 2-D, x's last dimension not w's in,
 * b not (out), dtypes that differ. */
TG_API tg_tensor *tg_linear(tg_graph *g, tg_tensor *x, tg_tensor *w, tg_tensor *b);

/* ---- elementwise (ops/binary.c, ops/unary.c) -------------------------- */

/* a + b elementwise with NumPy broadcasting between a and b, e.g.
 * (B,T,C) + (C) -> (B,T,C); the output has the broadcast shape. Errors:
 * shapes that do not broadcast, dtypes that differ. Backward sums the
 * gradient over the broadcast axes. */
TG_API tg_tensor *tg_add(tg_graph *g, tg_tensor *a, tg_tensor *b);
/* a - b elementwise, broadcasting as tg_add. */
TG_API tg_tensor *tg_sub(tg_graph *g, tg_tensor *a, tg_tensor *b);
/* a * b elementwise, broadcasting as tg_add. */
TG_API tg_tensor *tg_mul(tg_graph *g, tg_tensor *a, tg_tensor *b);
/* a / b elementwise, broadcasting as tg_add. A zero in b is an error (it
 * names the element), not inf. */
TG_API tg_tensor *tg_div(tg_graph *g, tg_tensor *a, tg_tensor *b);

/* Elementwise functions of one float tensor: the output has x's shape
 * and dtype; a non-float x is an error. s must be finite (error). */
TG_API tg_tensor *tg_scale(tg_graph *g, tg_tensor *x, double s); /* s * x */
/* -x */
TG_API tg_tensor *tg_neg(tg_graph *g, tg_tensor *x);
/* e^x */
TG_API tg_tensor *tg_exp(tg_graph *g, tg_tensor *x);
/* Natural log. x <= 0 is an error naming the element (log would give
 * -inf or NaN). */
TG_API tg_tensor *tg_log(tg_graph *g, tg_tensor *x);
/* tanh(x); backward dx += dy (1 - y^2). */
TG_API tg_tensor *tg_tanh(tg_graph *g, tg_tensor *x);
/* Square root. x < 0 is an error; at x = 0 the gradient is taken as 0,
 * not inf. */
TG_API tg_tensor *tg_sqrt(tg_graph *g, tg_tensor *x);
/* max(x, 0) */
TG_API tg_tensor *tg_relu(tg_graph *g, tg_tensor *x); /* gradient 0 at x = 0 */
/* max(x, 0)^2, ReLU squared (modded-nanogpt's MLP); backward dx += dy 2
 * max(x, 0). One fused pass (no relu(x) tensor kept). */
TG_API tg_tensor *tg_relu2(tg_graph *g, tg_tensor *x);
/* s tanh(x / s): a soft cap of x to (-s, s), near the identity for |x|
 * well below s (Gemma 2's and modded-nanogpt's logit cap). Backward dx +=
 * dy (1 - (y / s)^2), from the output alone. s must be finite and > 0
 * (error otherwise). */
TG_API tg_tensor *tg_softcap(tg_graph *g, tg_tensor *x, double s);

typedef enum tg_gelu_mode {
    TG_GELU_ERF, /* x * Phi(x), exact (GPT-2 / nanoGPT nn.GELU()) */
    TG_GELU_TANH /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
} tg_gelu_mode;
/* GELU of x elementwise in the given form; an unknown mode is an error. */
TG_API tg_tensor *tg_gelu(tg_graph *g, tg_tensor *x, tg_gelu_mode mode);

/* ---- reductions (ops/reduce.c) ---------------------------------------- */

/* Sum over one axis: x's shape without that axis, or with it as 1 when
 * keepdim, e.g. (B,T,C) axis -1 -> (B,T) or (B,T,1). An axis out of range
 * is an error. Accumulates in double. */
TG_API tg_tensor *tg_sum(tg_graph *g, tg_tensor *x, int axis, bool keepdim);
/* Mean over one axis; shapes and errors as tg_sum. */
TG_API tg_tensor *tg_mean(tg_graph *g, tg_tensor *x, int axis, bool keepdim);
/* Sum over all elements, to a scalar (ndim 0). */
TG_API tg_tensor *tg_sum_all(tg_graph *g, tg_tensor *x);
/* Mean over all elements, to a scalar (ndim 0). */
TG_API tg_tensor *tg_mean_all(tg_graph *g, tg_tensor *x);

/* ---- shape (ops/shape.c) ---------------------------------------------- */

/* A view with a new shape of the same numel; one entry may be -1 (inferred).
 * Works for every dtype. Errors: a numel that differs, more than one -1,
 * an entry that is 0 or below -1, ndim outside 0..4. */
TG_API tg_tensor *tg_reshape(tg_graph *g, tg_tensor *x, int ndim, const int *shape);
/* Swaps two axes (contiguous copy), e.g. (B,T,H,dh) axes 1, 2 ->
 * (B,H,T,dh). Every dtype. An axis out of range is an error. */
TG_API tg_tensor *tg_transpose(tg_graph *g, tg_tensor *x, int axis0, int axis1);
/* Output axis i is input axis perm[i] (contiguous copy); perm has ndim
 * entries. Every dtype. A perm that is not a permutation of the axes is an
 * error. */
TG_API tg_tensor *tg_permute(tg_graph *g, tg_tensor *x, const int *perm);
/* Elements [start, end) along axis (contiguous copy): that axis gets
 * length end - start. Every dtype. Errors: axis out of range, not
 * 0 <= start < end <= length. */
TG_API tg_tensor *tg_slice(tg_graph *g, tg_tensor *x, int axis, int start, int end);
/* Cuts x along axis into n pieces of the given sizes (summing to the
 * axis's length), written to out[0..n-1]. Returns 0, or -1 with an error
 * (then out[] is all NULL). */
TG_API int tg_split(tg_graph *g, tg_tensor *x, int axis, int n, const int *sizes, tg_tensor **out);
/* Joins n tensors along axis: that axis gets the sum of their lengths.
 * The dtypes and the other dimensions must match (error otherwise). */
TG_API tg_tensor *tg_concat(tg_graph *g, int n, tg_tensor *const *xs, int axis);

/* ---- softmax (ops/softmax.c) ------------------------------------------ */

/* Softmax over the last axis. mask (TG_BOOL, may be NULL) broadcasts to
 * x; true = blocked: a blocked score becomes -inf before the softmax, so
 * it gets exactly zero weight and zero gradient. The row maximum is
 * subtracted first ([1000,1000] -> [0.5,0.5]). Errors: a row with every
 * key blocked (the message names the row), a NaN or +inf score.
 * Backward: dS = P * (dP - rowsum(P * dP)); the Jacobian is never built. */
TG_API tg_tensor *tg_softmax(tg_graph *g, tg_tensor *x, tg_tensor *mask);

typedef enum tg_softmax_flags {
    TG_SOFTMAX_DEFAULT = 0,
    /* Opt-in, for padded batches: a fully blocked row gives all zeros
     * (and zero gradient) instead of an error. */
    TG_SOFTMAX_ZERO_BLOCKED_ROWS = 1
} tg_softmax_flags;
/* tg_softmax with flags (a tg_softmax_flags value; unknown bits are an
 * error). */
TG_API tg_tensor *tg_softmax_ex(tg_graph *g, tg_tensor *x, tg_tensor *mask, int flags);

/* log(softmax(x)) over the last axis, computed stably; same shape, mask
 * rules and errors as tg_softmax (blocked entries are -inf in the output
 * and get zero gradient; a fully blocked row is always an error). */
TG_API tg_tensor *tg_log_softmax(tg_graph *g, tg_tensor *x, tg_tensor *mask);

/* ---- fused attention (ops/attention.c) -------------------------------- */

typedef enum tg_attn_flags {
    TG_ATTN_DEFAULT = 0, /* every key visible to every query */
    /* Query i sits at absolute position q_pos + i and sees key j iff
     * j <= q_pos + i (q_pos = the KV cache length: bottom-right alignment). */
    TG_ATTN_CAUSAL = 1
} tg_attn_flags;

/* softmax(Q K^T / sqrt(dh)) V for n_head heads at once, without storing
 * the (Tq,Tk) scores: blockwise with an online softmax; backward
 * recomputes the blocks. q (B,Tq,C), k and v (B,Tk,Ckv), C = n_head * dh;
 * head h is the columns [h dh, (h+1) dh), as the projections produce it
 * (no split or transpose needed). k and v may have fewer heads than q
 * (grouped-query attention): Ckv = n_kv_head * dh with n_kv_head dividing
 * n_head, and query head h reads kv head h / (n_head / n_kv_head); no
 * copy of k or v is made. Returns (B,Tq,C), heads merged the same way
 * (ready for the output projection). The same numbers as tg_softmax with
 * a causal mask composed with tg_matmul, to rounding. q_pos is read only
 * with TG_ATTN_CAUSAL. Errors: dtypes or shapes that do not fit, C %
 * n_head != 0, k's heads not dividing n_head, a query row with no visible
 * key (q_pos + i < 0), a NaN or +inf score; each message names the shapes
 * (and row, element). */
TG_API tg_tensor *tg_attention(tg_graph *g, tg_tensor *q, tg_tensor *k, tg_tensor *v, int n_head, int flags, int q_pos);

/* tg_attention(q, k, v, n_head, flags, 0) on one qkv (B,T,C + 2 Ckv)
 * holding q, k and v side by side in its last axis (as one fused
 * projection makes them), Ckv = n_kv_head * dh (n_kv_head 0: n_head, so
 * (B,T,3C)): the heads are read in place with the row stride of qkv, so
 * nothing is split (no copies forward, no concat of gradients backward).
 * Returns (B,T,C). Errors as tg_attention, and a last axis that is not
 * n_head + 2 n_kv_head heads of one size. */
TG_API tg_tensor *tg_attention_qkv(tg_graph *g, tg_tensor *qkv, int n_head, int n_kv_head, int flags);

/* ---- losses (ops/loss.c) ---------------------------------------------- */

/* Mean cross-entropy of logits (..., V) against i32 targets (...) whose
 * shape is the logits' without the last axis. Target -1 is ignored; the
 * mean is over the counted targets. A target outside [0, V) other than -1,
 * or every target ignored, is an error; so is a NaN or +inf logit, or a
 * row of only -inf, in a counted row. Returns a scalar (ndim 0).
 * Backward: dlogits = (softmax - onehot) / count, per counted row. */
TG_API tg_tensor *tg_cross_entropy(tg_graph *g, tg_tensor *logits, tg_tensor *targets);

/* ---- layernorm (ops/layernorm.c) -------------------------------------- */

/* Normalises over the last axis C: (x - mean) / sqrt(var + eps) * w + b,
 * var the biased variance. x (..., C) -> (..., C). w and b have shape (C)
 * and may each be NULL (no scale / no shift). eps > 0 (PyTorch's default
 * is 1e-5). Errors: a scalar x, w or b not (C) or of another dtype,
 * eps <= 0. */
TG_API tg_tensor *tg_layernorm(tg_graph *g, tg_tensor *x, tg_tensor *w, tg_tensor *b, double eps);
#define TG_LAYERNORM_EPS 1e-5

/* ---- rmsnorm (ops/rmsnorm.c) ------------------------------------------ */

/* RMS normalisation over the last axis C (Llama's): x / sqrt(mean(x^2) +
 * eps) * w. x (..., C) -> (..., C); w (C) or NULL (no scale); eps > 0
 * (llama2.c's model.py uses 1e-5). Errors: a scalar x, w not (C) or of
 * another dtype, eps <= 0 or not finite. Backward: dx = rstd (g - x rstd^2
 * mean(g x)), g = dy w; dw += sum over rows of dy x rstd. */
TG_API tg_tensor *tg_rmsnorm(tg_graph *g, tg_tensor *x, tg_tensor *w, double eps);

/* ---- SiLU and SwiGLU (ops/silu.c) ---------------------------------------- */

/* x * sigmoid(x) elementwise (PyTorch F.silu); same shape and dtype as x.
 * Backward: dx += dy s (1 + x (1 - s)), s = sigmoid(x). */
TG_API tg_tensor *tg_silu(tg_graph *g, tg_tensor *x);
/* silu(a) * b elementwise, fused (no silu(a) tensor kept): the gated
 * product of a SwiGLU feed-forward, w2(silu(w1 x) * w3 x). a and b have
 * one shape and dtype (no broadcasting; error otherwise). Backward: da +=
 * dy b silu'(a), db += dy silu(a). */
TG_API tg_tensor *tg_swiglu(tg_graph *g, tg_tensor *a, tg_tensor *b);

/* ---- rotary position embedding (ops/rope.c) ------------------------------ */

typedef enum tg_rope_flags {
    /* pairs (x[2i], x[2i+1]) within each head: Meta's Llama and llama2.c */
    TG_ROPE_INTERLEAVED = 0,
    /* pairs (x[i], x[i + d/2]): Hugging Face's Llama (rotate_half) */
    TG_ROPE_HALVES = 1
} tg_rope_flags;

/* Rotates each head of x (..., T, D), D a multiple of head_dim (even):
 * the token in row t sits at position p = pos0 + t, and its pair i turns
 * by the angle p * theta^(-2i / head_dim) (theta 10000 in Llama). Only
 * the first n_rot heads of a row are rotated (1 <= n_rot <= D / head_dim);
 * the rest of the row is copied, so one call can rotate the q and k parts
 * of a fused q|k|v projection. pos0 is the KV cache's length when
 * decoding. Backward: the rotation by the opposite angle. Errors: x with
 * fewer than 2 dimensions, head_dim odd or not dividing D, n_rot out of
 * range, pos0 < 0, theta not > 1, unknown flags. */
TG_API tg_tensor *tg_rope(tg_graph *g, tg_tensor *x, int head_dim, int n_rot, int pos0, double theta, int flags);

/* ---- embedding (ops/embedding.c) -------------------------------------- */

/* Rows of weight (V, C) gathered by i32 ids of any shape (up to 3 dims):
 * out (ids..., C). An id outside [0, V) is an error naming it; so are a
 * weight that is not 2-D and ids that are not i32. Backward scatter-adds,
 * so repeated ids accumulate. */
TG_API tg_tensor *tg_embedding(tg_graph *g, tg_tensor *weight, tg_tensor *ids);

/* ---- dropout (ops/dropout.c) ------------------------------------------ */

/* Zeroes each element with probability p (0 <= p <= 1) from the graph's
 * seeded stream and scales the rest by 1/(1-p); same shape as x. The
 * identity when p = 0, when the graph is in eval mode, or when grad mode
 * is off: then it returns x itself. p outside [0, 1] is an error. */
TG_API tg_tensor *tg_dropout(tg_graph *g, tg_tensor *x, double p);

#ifdef __cplusplus
}
#endif

#endif
