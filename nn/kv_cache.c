/* The KV cache of self-attention (nn.h, tg_kv_cache): per layer, the keys
 * and values of the positions seen so far, (batch, max_len, C) with the
 * heads side by side in C, as the projections make them (keys already
 * turned by RoPE when the layer has it: nn/attention.c stores them after
 * tg_rope).
 *
 * The context shift (tg_kv_cache_shift) lets a RoPE model decode past
 * max_len without running its window again: positions [n_keep, n_keep + d)
 * are dropped, the later ones move back by d, and their keys are turned
 * back by d, since rotations compose,
 *
 *   R(p - d) = R(-d) R(p),   R(a) the rotation of each pair by a freq_i,
 *
 * so a kept key becomes the key the layer would have made for its token
 * at the new position. A value carries no position: it only moves. This
 * holds for the first layer exactly (its keys depend on the token alone);
 * a deeper layer's keys were computed from a context that still had the
 * dropped tokens, and stay as they were (what llama.cpp's context shift
 * does too: it keeps them, and re-rotates only).
 *
 * The angle each pair turns by is not d freq_i computed afresh but the
 * difference of the two angles tg_rope gives the pair at the new and the
 * old position, computed as ops/rope.c computes them (f32: a float
 * frequency times a float position, rounded to float; f64 in double), and
 * the turn is made in double: the key ends where a fresh rotation at the
 * new position puts it, to the rounding of the dtype, however far the
 * positions are (a float angle near 256 is only good to 1.5e-5). */
#include "nn.h"

#include <math.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"

int tg_kv_cache_init(tg_kv_cache *c, tg_dtype dt, int batch, int n_head, int head_dim, int max_len, tg_error *err)
{
    if (!c) return tg_error_set(err, "kv_cache_init: cache is NULL");
    memset(c, 0, sizeof *c);
    if (!tg_dtype_is_float(dt))
        return tg_error_set(err, "kv_cache_init: dtype must be f32 or f64, got %s", tg_dtype_name(dt));
    if (batch < 1 || n_head < 1 || head_dim < 1 || max_len < 1)
        return tg_error_set(err,
                            "kv_cache_init: sizes must be >= 1, got batch %d, n_head %d, head_dim %d, "
                            "max_len %d",
                            batch, n_head, head_dim, max_len);
    /* each buffer is (batch, max_len, C): the cached prefix becomes a tensor
     * of that shape, so the same limit as a tensor's (2^40 elements), and C
     * must be an int */
    const int64_t C = (int64_t)n_head * head_dim, limit = TG_MAX_NUMEL;
    if (C > INT32_MAX)
        return tg_error_set(err, "kv_cache_init: n_head %d x head_dim %d is over 2^31 - 1", n_head, head_dim);
    if (C > limit / batch || C * batch > limit / max_len)
        return tg_error_set(err,
                            "kv_cache_init: batch %d x max_len %d x n_head %d x head_dim %d = %.4g "
                            "elements per buffer, over 2^40",
                            batch, max_len, n_head, head_dim, (double)batch * max_len * (double)C);
    const size_t bytes = (size_t)(C * batch * max_len) * tg_dtype_size(dt);
    c->k = tg_calloc(1, bytes);
    c->v = tg_calloc(1, bytes);
    if (!c->k || !c->v) {
        tg_free(c->k);
        tg_free(c->v);
        memset(c, 0, sizeof *c);
        return tg_error_set(err, "kv_cache_init: out of memory for 2 x %zu bytes", bytes);
    }
    c->batch = batch;
    c->n_head = n_head;
    c->head_dim = head_dim;
    c->max_len = max_len;
    c->dtype = dt;
    return 0;
}

void tg_kv_cache_clear(tg_kv_cache *c)
{
    if (c) c->len = 0;
}

void tg_kv_cache_release(tg_kv_cache *c)
{
    if (!c) return;
    tg_free(c->k);
    tg_free(c->v);
    memset(c, 0, sizeof *c);
}

/* ---- the context shift ------------------------------------------------- */

/* The angle of pair i (of half) at position p, as ops/rope.c's angles()
 * computes it for the dtype. */
static double rope_angle(tg_dtype dt, int p, int i, int half, double theta)
{
    if (dt == TG_F32) {
        const float freq = 1.0f / powf((float)theta, (float)(2 * i) / (float)(2 * half));
        return (double)((float)p * freq);
    }
    return p * (1.0 / pow(theta, 2.0 * i / (2 * half)));
}

/* Turns the pairs of every head of one cached key row (n_head heads of hd)
 * by the angle that takes position from to position to. */
static void turn_row(void *row, tg_dtype dt, int n_head, int hd, bool halves, int from, int to, double theta)
{
    const int half = hd / 2, step = halves ? half : 1, stride = halves ? 1 : 2;
    for (int i = 0; i < half; i++) {
        const double a = rope_angle(dt, to, i, half, theta) - rope_angle(dt, from, i, half, theta);
        const double c = cos(a), s = sin(a);
        for (int h = 0; h < n_head; h++) {
            const int k0 = h * hd + i * stride, k1 = k0 + step;
            if (dt == TG_F32) {
                float *x = row;
                const double x0 = x[k0], x1 = x[k1];
                x[k0] = (float)(x0 * c - x1 * s), x[k1] = (float)(x0 * s + x1 * c);
            } else {
                double *x = row;
                const double x0 = x[k0], x1 = x[k1];
                x[k0] = x0 * c - x1 * s, x[k1] = x0 * s + x1 * c;
            }
        }
    }
}

int tg_kv_cache_shift(tg_kv_cache *c, int n_keep, int n_discard, double rope_theta, int rope_flags, tg_error *err)
{
    if (!c || !c->k || !c->v)
        return tg_error_set(err, "kv_cache_shift: the cache is %s", c ? "not initialised" : "NULL");
    if (n_keep < 0 || n_discard < 1 || n_keep > c->len - n_discard)
        return tg_error_set(err,
                            "kv_cache_shift: n_keep %d and n_discard %d must be >= 0 and >= 1, together at most "
                            "the %d cached positions",
                            n_keep, n_discard, c->len);
    if (!(rope_theta == 0 || (rope_theta > 1 && isfinite(rope_theta))))
        return tg_error_set(err, "kv_cache_shift: rope_theta must be 0 (no RoPE) or finite and > 1, got %g",
                            rope_theta);
    if (rope_theta && (c->head_dim % 2 || (rope_flags != TG_ROPE_INTERLEAVED && rope_flags != TG_ROPE_HALVES)))
        return tg_error_set(err,
                            "kv_cache_shift: RoPE needs an even head size (got %d) and TG_ROPE_INTERLEAVED or "
                            "TG_ROPE_HALVES (got %d)",
                            c->head_dim, rope_flags);
    const int C = c->n_head * c->head_dim, moved = c->len - n_keep - n_discard;
    const size_t es = tg_dtype_size(c->dtype), row = (size_t)C * es;
    for (int b = 0; b < c->batch; b++) {
        char *k = (char *)c->k + (size_t)b * c->max_len * row, *v = (char *)c->v + (size_t)b * c->max_len * row;
        memmove(k + n_keep * row, k + (size_t)(n_keep + n_discard) * row, (size_t)moved * row);
        memmove(v + n_keep * row, v + (size_t)(n_keep + n_discard) * row, (size_t)moved * row);
        for (int j = 0; rope_theta && j < moved; j++)
            turn_row(k + (size_t)(n_keep + j) * row, c->dtype, c->n_head, c->head_dim, rope_flags == TG_ROPE_HALVES,
                     n_keep + n_discard + j, n_keep + j, rope_theta);
    }
    c->len -= n_discard;
    return 0;
}
