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
 * there; f64 in double. */
#include "ops.h"

#include <math.h>
#include <string.h>

#include "../core/op.h"
#include "../core/parallel.h"

/* cos and sin of every (position, pair): cs[(t * half + i) * 2 + 0/1] */
static void angles(tg_dtype dt, int T, int half, int pos0, double theta, double *cs)
{
    for (int t = 0; t < T; t++)
        for (int i = 0; i < half; i++) {
            double c, s;
            if (dt == TG_F32) {
                const float freq = 1.0f / powf((float)theta, (float)(2 * i) / (float)(2 * half));
                const float a = (float)(pos0 + t) * freq;
                c = cosf(a), s = sinf(a);
            } else {
                const double a = (pos0 + t) * (1.0 / pow(theta, 2.0 * i / (2 * half)));
                c = cos(a), s = sin(a);
            }
            cs[((size_t)t * half + i) * 2] = c;
            cs[((size_t)t * half + i) * 2 + 1] = s;
        }
}

typedef struct rope_job {
    tg_dtype dt;
    int T, D, hd, n_rot, halves;
    int sign;            /* +1 forward, -1 backward (the opposite angle) */
    const double *cs;    /* (T, hd/2, 2) */
    const void *in;      /* x (forward) or dy (backward) */
    void *out;           /* y, or dx */
    bool add;            /* backward into an existing gradient: += */
} rope_job;

#define ROPE_GRAIN 16384   /* elements per thread, at least */

/* Rows [lo, hi) (row r is position r % T). One function for both dtypes:
 * the arithmetic is done in the dtype (a float's product with a double
 * converted to float first), as llama2.c does in float. */
static void rope_part(void *ctx, int64_t lo, int64_t hi)
{
    const rope_job *j = ctx;
    const int half = j->hd / 2, step = j->halves ? half : 1, stride = j->halves ? 1 : 2;
    for (int64_t r = lo; r < hi; r++) {
        const double *cs = j->cs + (size_t)(r % j->T) * half * 2;
        const size_t o = (size_t)r * j->D;
        for (int h = 0; h < j->n_rot; h++)
            for (int i = 0; i < half; i++) {
                const size_t k0 = o + (size_t)h * j->hd + (size_t)i * stride, k1 = k0 + step;
                if (j->dt == TG_F32) {
                    const float *x = j->in;
                    float *y = j->out;
                    const float c = (float)cs[2 * i], s = (float)(j->sign * cs[2 * i + 1]);
                    const float y0 = x[k0] * c - x[k1] * s, y1 = x[k0] * s + x[k1] * c;
                    y[k0] = j->add ? y[k0] + y0 : y0;
                    y[k1] = j->add ? y[k1] + y1 : y1;
                } else {
                    const double *x = j->in;
                    double *y = j->out;
                    const double c = cs[2 * i], s = j->sign * cs[2 * i + 1];
                    const double y0 = x[k0] * c - x[k1] * s, y1 = x[k0] * s + x[k1] * c;
                    y[k0] = j->add ? y[k0] + y0 : y0;
                    y[k1] = j->add ? y[k1] + y1 : y1;
                }
            }
        /* the heads past n_rot pass through */
        const size_t es = tg_dtype_size(j->dt), done = (size_t)j->n_rot * j->hd;
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
    rope_job j = {.dt = x->dtype, .T = nd->iarg[0], .D = x->shape[x->ndim - 1], .hd = nd->iarg[1],
                  .n_rot = nd->iarg[2], .halves = nd->iarg[3], .sign = -1, .cs = nd->saved, .in = y->grad,
                  .out = dx, .add = !store};
    tg_parallel_for(x->numel / j.D, 1 + ROPE_GRAIN / j.D, rope_part, &j);
}

tg_tensor *tg_rope(tg_graph *g, tg_tensor *x, int head_dim, int n_rot, int pos0, double theta, int flags)
{
    tg_tensor *in[1] = {x};
    if (!tg_op_begin(g, "rope", 1, in) || !tg_op_check_float(g, "rope", "x", x)) return NULL;
    char sx[64];
    tg_shape_str(x, sx, sizeof sx);
    const char *dt = tg_dtype_name(x->dtype);
    if (x->ndim < 2) return tg_fail(g, "rope: x must be (..., T, D), got %s %s", dt, sx);
    const int T = x->shape[x->ndim - 2], D = x->shape[x->ndim - 1];
    if (head_dim < 2 || head_dim % 2 || D % head_dim)
        return tg_fail(g, "rope: head_dim %d must be even and divide the last axis of x %s %s", head_dim, dt, sx);
    if (n_rot < 1 || n_rot > D / head_dim)
        return tg_fail(g, "rope: n_rot %d must be in [1, %d] (the heads of x %s %s)", n_rot, D / head_dim, dt, sx);
    if (pos0 < 0 || pos0 > INT32_MAX - T)
        return tg_fail(g, "rope: pos0 %d must be >= 0 (and pos0 + T fit an int) for x %s %s", pos0, dt, sx);
    if (!(theta > 1) || !isfinite(theta)) return tg_fail(g, "rope: theta must be finite and > 1, got %g", theta);
    if (flags != TG_ROPE_INTERLEAVED && flags != TG_ROPE_HALVES)
        return tg_fail(g, "rope: unknown flags %d (TG_ROPE_INTERLEAVED or TG_ROPE_HALVES)", flags);
    tg_tensor *y = tg_op_output(g, x->dtype, x->ndim, x->shape);
    double *cs = y ? tg_arena_alloc(g, (size_t)T * head_dim * sizeof(double)) : NULL;   /* (T, hd/2, 2) */
    if (!cs) return NULL;
    angles(x->dtype, T, head_dim / 2, pos0, theta, cs);
    rope_job j = {.dt = x->dtype, .T = T, .D = D, .hd = head_dim, .n_rot = n_rot, .halves = flags == TG_ROPE_HALVES,
                  .sign = 1, .cs = cs, .in = x->data, .out = y->data};
    tg_parallel_for(x->numel / D, 1 + ROPE_GRAIN / D, rope_part, &j);
    tg_node *nd = tg_op_record(g, "rope", rope_backward, y, 1, in);
    if (nd) {
        nd->saved = cs;
        nd->iarg[0] = T, nd->iarg[1] = head_dim, nd->iarg[2] = n_rot, nd->iarg[3] = j.halves;
    }
    return tg_graph_error(g) ? NULL : y;
}
