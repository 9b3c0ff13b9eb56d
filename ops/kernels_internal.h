/* tapegrad ops (internal): the row kernels of softmax, layernorm,
 * cross-entropy and GELU (and the AVX-512 rows of RMSNorm and RoPE), in pairs: the f64 reference, a plain function
 * beside the op's maths in its file (ops/softmax.c, ...), and the tuned
 * f32 kernel in the op's companion file (ops/softmax_f32.c, ...). Each
 * pair does the same sums; the f32 one with vector lanes and the
 * call-free exp and erf of fastmath_internal.h, compiled also for
 * x86-64-v3 (TG_VEC_CLONES). The op files call them from their threaded
 * parts; tests/test_kernels_f32.c runs every kernel against its
 * reference on the same inputs.
 *
 * GCC exports a target_clones function from the shared library whatever
 * its visibility (its ifunc and resolver stay global and default), so the
 * cloned kernels are static in their files and the _f32 functions
 * declared here, plain and hidden like every internal function, call
 * them. */
#ifndef TG_KERNELS_INTERNAL_H
#define TG_KERNELS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/tensor.h"

/* ---- softmax (ops/softmax.c, ops/softmax_f32.c) ----------------------- */

enum { SCORES_OK, BAD_SCORE, BLOCKED_ROW }; /* a forward's result */

/* Row r of x, padded shape dim, as its index (d0, d1, d2) over dim[0..2]:
 * where its mask row is. Carried from row to row by tg_row_next (no
 * division per row). */
typedef struct tg_row_index {
    int64_t d0, d1, d2;
} tg_row_index;

static inline tg_row_index tg_row_at(const int dim[TG_MAX_DIMS], int64_t r)
{
    return (tg_row_index){r / ((int64_t)dim[2] * dim[1]), r / dim[2] % dim[1], r % dim[2]};
}

static inline void tg_row_next(tg_row_index *i, const int dim[TG_MAX_DIMS])
{
    if (++i->d2 == dim[2]) {
        i->d2 = 0;
        if (++i->d1 == dim[1]) i->d1 = 0, i->d0++;
    }
}

/* The mask row of row i (its keys ms[3] apart), or NULL without a mask. */
static inline const uint8_t *tg_mask_row(const uint8_t *m, const int64_t ms[TG_MAX_DIMS], tg_row_index i)
{
    return m ? m + i.d0 * ms[0] + i.d1 * ms[1] + i.d2 * ms[2] : NULL;
}

/* Rows [lo, hi) of x, padded shape dim (row length dim[3]), mask m with
 * strides ms (NULL: none): y = softmax or, with log_out, log_softmax of
 * each row; a fully blocked row gives zeros with zero_rows. Returns
 * SCORES_OK, or BAD_SCORE / BLOCKED_ROW with the first bad element / row
 * in *where. f32: rowmask is dim[3] zeroed bytes of scratch. */
int tg_softmax_forward_f64(const double *x, double *y, const int dim[TG_MAX_DIMS], const uint8_t *m,
                           const int64_t ms[TG_MAX_DIMS], bool log_out, bool zero_rows, int64_t lo, int64_t hi,
                           int64_t *where);
int tg_softmax_forward_f32(const float *x, float *y, const int dim[TG_MAX_DIMS], const uint8_t *m,
                           const int64_t ms[TG_MAX_DIMS], bool log_out, bool zero_rows, uint8_t *rowmask, int64_t lo,
                           int64_t hi, int64_t *where);
/* `rows` rows of n from the output p and its gradient dp: dx = the input's
 * gradient, stored when store (a new gradient), else added. */
void tg_softmax_backward_f64(const double *p, const double *dp, double *dx, int64_t rows, int n, bool store);
void tg_softmax_backward_f32(const float *p, const float *dp, float *dx, int64_t rows, int n, bool store);
/* The same for log_softmax, from its output y. */
void tg_log_softmax_backward_f64(const double *y, const double *dy, double *dx, int64_t rows, int n, bool store);
void tg_log_softmax_backward_f32(const float *y, const float *dy, float *dx, int64_t rows, int n, bool store);

/* ---- layernorm (ops/layernorm.c, ops/layernorm_f32.c) ----------------- */

/* Rows [0, rows) of x (rows, C): y, and each row's mean and rstd when mean
 * is not NULL. */
void tg_layernorm_forward_f64(int64_t rows, int C, const double *x, const double *w, const double *b, double eps,
                              double *y, double *mean, double *rstd);
void tg_layernorm_forward_f32(int64_t rows, int C, const float *x, const float *w, const float *b, double eps, float *y,
                              double *mean, double *rstd);
/* The backward of those rows: dx into gx (stored when store, else added;
 * NULL: none), dw and db added into gw and gb (NULL: none); f32 through
 * the zeroed f32 accumulators acc_w, acc_b, (C) each. */
void tg_layernorm_backward_f64(int64_t rows, int C, const double *x, const double *w, const double *dy,
                               const double *mean, const double *rstd, double *gx, bool store, double *gw, double *gb);
void tg_layernorm_backward_f32(int64_t rows, int C, const float *x, const float *w, const float *dy, const double *mean,
                               const double *rstd, float *gx, bool store, double *gw, double *gb, float *acc_w,
                               float *acc_b);

/* ---- RMSNorm (ops/rmsnorm.c, ops/rmsnorm_avx512.c) ------------------- */

/* The f32 rows of ops/rmsnorm.c's plain code (rms_forward_f32,
 * rms_backward_f32: the same arguments) with AVX-512 intrinsics and the
 * same bits; false, with nothing done, off the avx512 path. */
bool tg_rmsnorm_forward_avx512(int64_t rows, int C, const float *x, const float *w, double eps, float *y, double *rstd);
bool tg_rmsnorm_backward_avx512(int64_t rows, int C, const float *x, const float *w, const float *dy,
                                const double *rstd, float *gx, bool store, double *gw);

/* ---- RoPE (ops/rope.c, ops/rope_avx512.c) ---------------------------- */

/* One f32 row of ops/rope.c's plain code (rope_row_float: the first n_rot
 * heads of 2 half, pairs interleaved or in halves, cos and sign * sin
 * from cs, y stored or added to) with AVX-512 intrinsics and the same
 * bits; false, with nothing done, off the avx512 path. */
bool tg_rope_row_avx512(const float *x, float *y, const float *cs, int half, int n_rot, bool halves, int sign,
                        bool add);

/* ---- cross-entropy (ops/loss.c, ops/loss_f32.c) ----------------------- */

enum { CE_OK, CE_BAD_LOGIT, CE_DEAD_ROW }; /* a forward's result */

/* Rows [lo, hi) of logits x (rows, v) against targets t (-1: ignored):
 * lse_r = log sum_j exp(x_rj) of each counted row into lse, the sum of
 * their losses lse_r - x_r,t_r into *total. Returns CE_OK, or CE_BAD_LOGIT
 * / CE_DEAD_ROW with the first bad element / row in *where. */
int tg_cross_entropy_forward_f64(const double *x, const int32_t *t, int64_t lo, int64_t hi, int v, double *lse,
                                 double *total, int64_t *where);
int tg_cross_entropy_forward_f32(const float *x, const int32_t *t, int64_t lo, int64_t hi, int v, float *lse,
                                 double *total, int64_t *where);
/* Their gradient: dx_rj = scale (exp(x_rj - lse_r) - [j == t_r]), stored
 * when store (ignored rows as 0), else added (ignored rows left alone). */
void tg_cross_entropy_backward_f64(const double *x, const int32_t *t, int64_t lo, int64_t hi, int v, const double *lse,
                                   double scale, double *dx, bool store);
void tg_cross_entropy_backward_f32(const float *x, const int32_t *t, int64_t lo, int64_t hi, int v, const float *lse,
                                   float scale, float *dx, bool store);

/* ---- GELU (ops/unary.c, ops/gelu_f32.c) ------------------------------- */

/* y = gelu(x) = x Phi(x) (the erf form), n elements */
void tg_gelu_forward_f64(int64_t n, const double *x, double *y);
void tg_gelu_forward_f32(int64_t n, const float *x, float *y);
/* dx += dy gelu'(x), or dx = dy gelu'(x) when !acc (a new gradient) */
void tg_gelu_backward_f64(int64_t n, const double *x, const double *dy, double *dx, bool acc);
void tg_gelu_backward_f32(int64_t n, const float *x, const float *dy, float *dx, bool acc);
/* the same for the tanh form, y = x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2 */
void tg_gelu_tanh_forward_f64(int64_t n, const double *x, double *y);
void tg_gelu_tanh_forward_f32(int64_t n, const float *x, float *y);
void tg_gelu_tanh_backward_f64(int64_t n, const double *x, const double *dy, double *dx, bool acc);
void tg_gelu_tanh_backward_f32(int64_t n, const float *x, const float *dy, float *dx, bool acc);

/* ---- the logit cap (ops/unary.c, ops/softcap_f32.c) -------------------- */

/* y = s tanh(x / s), n elements, s > 0 (the backward, from y alone, is the
 * loop f32 and f64 share in ops/unary_kernels.inc) */
void tg_softcap_forward_f64(int64_t n, double s, const double *x, double *y);
void tg_softcap_forward_f32(int64_t n, float s, const float *x, float *y);

#endif
