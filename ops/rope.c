/* Rotary position embedding (RoPE): each head's vector is cut into pairs,
 * and the pair with index i of the token at position p is rotated by the
 * angle p * theta^(-2i / d) (d = head_dim, i = 0 .. d/2 - 1):
 *
 *   (y0, y1) = (x0 cos a - x1 sin a,  x0 sin a + x1 cos a),   a = p theta^(-2i/d)
 *
 * Two conventions pair the coordinates differently (the same rotation
 * otherwise, but weights trained with one do not work with the other):
 *   TG_ROPE_INTERLEAVED  (x0, x1) = (x[2i], x[2i+1])       Meta's Llama, llama2.c
 *   TG_ROPE_HALVES       (x0, x1) = (x[i], x[i + d/2])     Hugging Face's Llama
 *
 * Backward is the rotation by the opposite angle (a rotation's inverse is
 * its transpose):
 *
 *   (dx0, dx1) = (dy0 cos a + dy1 sin a,  -dy0 sin a + dy1 cos a)
 *
 * x is (..., T, D) with D a multiple of d: row t is the token at position
 * p = pos0 + t, its first n_rot heads are rotated and the rest of the row
 * is copied (so the v part of a fused q|k|v projection passes through).
 * The angles are computed once per call (T x d/2 of them). f32 computes
 * them as llama2.c's run.c does, in float (1 / powf(theta, 2i / d), times
 * p, then cosf and sinf), so an exported model sees the same rotations
 * there; f64 in double. On the avx512 path f32 rows run
 * ops/rope_avx512.c, the same float arithmetic with the same bits. */
#include "ops.h"

#include <math.h>
#include <string.h>

#include "../core/op.h"
#include "../core/parallel.h"
#include "kernels_internal.h"

/* cos and sin of every (position, pair), in the dtype: for position t,
 * half cosines then half sines, cs[t * 2 half + i] and cs[t * 2 half +
 * half + i] (f32: floats, f64: doubles) */
static void angles(tg_dtype dt, int T, int half, int pos0, double theta, void *cs)
{
    for (int t = 0; t < T; t++)
        for (int i = 0; i < half; i++) {
            const size_t o = (size_t)t * 2 * half + i;
            if (dt == TG_F32) {
                const float freq = 1.0f / powf((float)theta, (float)(2 * i) / (float)(2 * half));
                const float a = (float)(pos0 + t) * freq;
                ((float *)cs)[o] = cosf(a), ((float *)cs)[o + half] = sinf(a);
            } else {
                const double a = (pos0 + t) * (1.0 / pow(theta, 2.0 * i / (2 * half)));
                ((double *)cs)[o] = cos(a), ((double *)cs)[o + half] = sin(a);
            }
        }
}

typedef struct rope_job {
    tg_dtype dt;
    int T, D, hd, n_rot, halves;
    int sign; /* +1 forward, -1 backward (the opposite angle) */
    const void *cs; /* (T, 2, hd/2) in the dtype: angles() */
    const void *in; /* x (forward) or dy (backward) */
    void *out; /* y, or dx */
    bool add; /* backward into an existing gradient: += */
} rope_job;

#define ROPE_GRAIN 16384 /* elements per thread, at least */

/* One row's n_rot heads (hd wide, pairs step apart within a pair and
 * stride apart from pair to pair), each pair (x0, x1) turned by cos c and
 * sin sign * s; the arithmetic in the dtype, as llama2.c does in float
 * (f32: float products, rounded, then the sum) */
#define ROPE_ROW(T_)                                                                                                   \
    static void rope_row_##T_(const T_ *restrict x, T_ *restrict y, const T_ *cs, int half, int hd, int n_rot,         \
                              int step, int stride, int sign, bool add)                                                \
    {                                                                                                                  \
        for (int h = 0; h < n_rot; h++)                                                                                \
            for (int i = 0; i < half; i++) {                                                                           \
                const int k0 = h * hd + i * stride, k1 = k0 + step;                                                    \
                const T_ c = cs[i], s = sign > 0 ? cs[half + i] : -cs[half + i];                                       \
                const T_ y0 = x[k0] * c - x[k1] * s, y1 = x[k0] * s + x[k1] * c;                                       \
                y[k0] = add ? y[k0] + y0 : y0;                                                                         \
                y[k1] = add ? y[k1] + y1 : y1;                                                                         \
            }                                                                                                          \
    }
ROPE_ROW(float)
ROPE_ROW(double)

/* Rows [lo, hi) (row r is position r % T). */
static void rope_part(void *ctx, int64_t lo, int64_t hi)
{
    const rope_job *j = ctx;
    const int half = j->hd / 2, step = j->halves ? half : 1, stride = j->halves ? 1 : 2;
    const size_t es = tg_dtype_size(j->dt), done = (size_t)j->n_rot * j->hd;
    for (int64_t r = lo; r < hi; r++) {
        const size_t o = (size_t)r * j->D, t = (size_t)(r % j->T);
        if (j->dt == TG_F32) {
            const float *x = (const float *)j->in + o, *cs = (const float *)j->cs + t * 2 * half;
            float *y = (float *)j->out + o;
            if (!tg_rope_row_avx512(x, y, cs, half, j->n_rot, j->halves, j->sign, j->add))
                rope_row_float(x, y, cs, half, j->hd, j->n_rot, step, stride, j->sign, j->add);
        } else
            rope_row_double((const double *)j->in + o, (double *)j->out + o, (const double *)j->cs + t * 2 * half, half,
                            j->hd, j->n_rot, step, stride, j->sign, j->add);
        /* the heads past n_rot pass through */
        if (done < (size_t)j->D) {
            const char *src = (const char *)j->in + (o + done) * es;
            char *dst = (char *)j->out + (o + done) * es;
            const size_t n = (size_t)j->D - done;
            if (!j->add) memcpy(dst, src, n * es);
            else if (j->dt == TG_F32)
                for (size_t k = 0; k < n; k++) ((float *)dst)[k] += ((const float *)src)[k];
            else
                for (size_t k = 0; k < n; k++) ((double *)dst)[k] += ((const double *)src)[k];
        }
    }
}

static void rope_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *x = nd->in[0], *y = nd->out;
    bool store;
    void *dx = tg_grad_store(g, x, &store);
    if (!dx) return;
    rope_job j = {.dt = x->dtype,
                  .T = nd->iarg[0],
                  .D = x->shape[x->ndim - 1],
                  .hd = nd->iarg[1],
                  .n_rot = nd->iarg[2],
                  .halves = nd->iarg[3],
                  .sign = -1,
                  .cs = nd->saved,
                  .in = y->grad,
                  .out = dx,
                  .add = !store};
    tg_parallel_for(x->numel / j.D, 1 + ROPE_GRAIN / j.D, rope_part, &j);
}

tg_tensor *tg_rope(tg_graph *g, tg_tensor *x, int head_dim, int n_rot, int pos0, double theta, int flags)
{
    tg_tensor *in[1] = {x};
    if (!tg_op_begin(g, "rope", 1, in) || !tg_op_check_float(g, "rope", "x", x)) return NULL;
    /* x's shape is written into a message only when one is needed (decoding
     * calls this per token) */
    char sx[64];
#define X_SHAPE tg_dtype_name(x->dtype), tg_shape_str(x, sx, sizeof sx)
    if (x->ndim < 2) return tg_fail(g, "rope: x must be (..., T, D), got %s %s", X_SHAPE);
    const int T = x->shape[x->ndim - 2], D = x->shape[x->ndim - 1];
    if (head_dim < 2 || head_dim % 2 || D % head_dim)
        return tg_fail(g, "rope: head_dim %d must be even and divide the last axis of x %s %s", head_dim, X_SHAPE);
    if (n_rot < 1 || n_rot > D / head_dim)
        return tg_fail(g, "rope: n_rot %d must be in [1, %d] (the heads of x %s %s)", n_rot, D / head_dim, X_SHAPE);
    if (pos0 < 0 || pos0 > INT32_MAX - T)
        return tg_fail(g, "rope: pos0 %d must be >= 0 (and pos0 + T fit an int) for x %s %s", pos0, X_SHAPE);
#undef X_SHAPE
    if (!(theta > 1) || !isfinite(theta)) return tg_fail(g, "rope: theta must be finite and > 1, got %g", theta);
    if (flags != TG_ROPE_INTERLEAVED && flags != TG_ROPE_HALVES)
        return tg_fail(g, "rope: unknown flags %d (TG_ROPE_INTERLEAVED or TG_ROPE_HALVES)", flags);
    tg_tensor *y = tg_op_output(g, x->dtype, x->ndim, x->shape);
    void *cs = y ? tg_arena_alloc(g, (size_t)T * head_dim * tg_dtype_size(x->dtype)) : NULL; /* (T, 2, hd/2) */
    if (!cs) return NULL;
    angles(x->dtype, T, head_dim / 2, pos0, theta, cs);
    rope_job j = {.dt = x->dtype,
                  .T = T,
                  .D = D,
                  .hd = head_dim,
                  .n_rot = n_rot,
                  .halves = flags == TG_ROPE_HALVES,
                  .sign = 1,
                  .cs = cs,
                  .in = x->data,
                  .out = y->data};
    tg_parallel_for(x->numel / D, 1 + ROPE_GRAIN / D, rope_part, &j);
    tg_node *nd = tg_op_record(g, "rope", rope_backward, y, 1, in);
    if (nd) {
        nd->saved = cs;
        nd->iarg[0] = T, nd->iarg[1] = head_dim, nd->iarg[2] = n_rot, nd->iarg[3] = j.halves;
    }
    return tg_graph_error(g) ? NULL : y;
}
