/* The f32 RMSNorm rows of ops/rmsnorm.c (rmsnorm_kernels.inc) with
 * AVX-512 intrinsics, for the avx512 kernel path: the same arithmetic in
 * the same order, so the same bits as the plain code on every path.
 *
 * The plain code sums each row in double, one dependent add per element
 * (at C = 288 the adds' latency, not their throughput, set the time: 4%
 * of a Llama training step). Here 8 rows are summed side by side, row k
 * in lane k of one vector of doubles (8 x 8 blocks transposed in
 * registers: a gather per column was slower than the plain code): each
 * lane is still the row's chain of adds in j order. The
 * per-element passes (y, dx, dw) run 8 or 16 columns at a time in double.
 *
 * The same bits: in f32 every product of two floats is exact in double
 * (24 + 24 bits), so x^2 summed by a fused multiply-add rounds as the
 * plain code's square then add. Where a rounded product meets an add or
 * a subtraction (dy w x + sum, dy w - x c, dy x rstd + dw), the two are
 * kept apart with the explicit-rounding intrinsics (_round_pd), which
 * the compiler cannot contract into one multiply-add under the library's
 * -ffp-contract=fast; the plain code is compiled without FMA on the
 * generic path and keeps them apart there. test_ops_rmsnorm compares the
 * two bit for bit. */
#include "kernels_internal.h"

#include <math.h>
#include <stdint.h>

#include "../core/isa_internal.h"

#ifdef TG_AVX2_KERNELS
#include <immintrin.h>

#include "avx512_internal.h"

#define CUR (_MM_FROUND_CUR_DIRECTION)

enum { ROWS = 8 };

AVX512 static inline __m256 load8(const float *p, int n)
{
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskz_loadu_ps((__mmask8)((1u << n) - 1), p);
}
AVX512 static inline __m512d load8d(const double *p, int n)
{
    return n >= 8 ? _mm512_loadu_pd(p) : _mm512_maskz_loadu_pd((__mmask8)(n <= 0 ? 0 : (1u << n) - 1), p);
}
AVX512 static inline void store8d(double *p, int n, __m512d v)
{
    if (n >= 8) _mm512_storeu_pd(p, v);
    else if (n > 0) _mm512_mask_storeu_pd(p, (__mmask8)((1u << n) - 1), v);
}

/* the low and high 8 floats of v as doubles */
AVX512 static inline __m512d lo_pd(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
AVX512 static inline __m512d hi_pd(__m512 v)
{
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}
/* two vectors of doubles rounded to one of 16 floats */
AVX512 static inline __m512 to_ps(__m512d lo, __m512d hi)
{
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo))),
                                               _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
}

/* t[c] lane k = row k of the 8 x 8 block x (x[k] = row k): the transpose */
AVX512 static inline void transpose8(const __m256 x[8], __m256 t[8])
{
    __m256 a[8], b[8];
    for (int k = 0; k < 8; k += 2)
        a[k] = _mm256_unpacklo_ps(x[k], x[k + 1]), a[k + 1] = _mm256_unpackhi_ps(x[k], x[k + 1]);
    for (int k = 0; k < 8; k += 4) {
        b[k] = _mm256_shuffle_ps(a[k], a[k + 2], 0x44), b[k + 1] = _mm256_shuffle_ps(a[k], a[k + 2], 0xEE);
        b[k + 2] = _mm256_shuffle_ps(a[k + 1], a[k + 3], 0x44), b[k + 3] = _mm256_shuffle_ps(a[k + 1], a[k + 3], 0xEE);
    }
    for (int c = 0; c < 4; c++)
        t[c] = _mm256_permute2f128_ps(b[c], b[c + 4], 0x20), t[c + 4] = _mm256_permute2f128_ps(b[c], b[c + 4], 0x31);
}

/* columns [j, j + 8) of n <= 8 rows of C at x, transposed: col[c] lane k
 * = x[k C + j + c] as a double; rows past n and columns past C are 0 */
AVX512 static inline void columns(const float *x, int64_t C, int n, int j, __m512d col[8])
{
    __m256 r[8], t[8];
    for (int k = 0; k < 8; k++) r[k] = k < n ? load8(x + k * C + j, (int)C - j) : _mm256_setzero_ps();
    transpose8(r, t);
    for (int c = 0; c < 8; c++) col[c] = _mm512_cvtps_pd(t[c]);
}

AVX512 static void forward(int64_t rows, int C, const float *x, const float *w, double eps, float *y, double *rstd)
{
    double ss[ROWS];
    for (int64_t r0 = 0; r0 < rows; r0 += ROWS) {
        const int n = rows - r0 < ROWS ? (int)(rows - r0) : ROWS;
        const float *xg = x + r0 * C;
        __m512d acc = _mm512_setzero_pd();
        for (int j = 0; j < C; j += 8) { /* (columns past C add +0: the same sums) */
            __m512d v[8];
            columns(xg, C, n, j, v);
            for (int c = 0; c < 8; c++) acc = _mm512_fmadd_pd(v[c], v[c], acc); /* v^2 exact: square, then add */
        }
        _mm512_storeu_pd(ss, acc);
        for (int k = 0; k < n; k++) {
            const int64_t r = r0 + k;
            const float *xr = x + r * C;
            float *yr = y + r * C;
            const double s = 1.0 / sqrt(ss[k] / C + eps);
            const __m512d vs = _mm512_set1_pd(s);
            for (int j = 0; j < C; j += 16) {
                const __m512 xv = load16(xr + j, C - j);
                __m512d a = _mm512_mul_pd(lo_pd(xv), vs), b = _mm512_mul_pd(hi_pd(xv), vs);
                if (w) {
                    const __m512 wv = load16(w + j, C - j);
                    a = _mm512_mul_pd(a, lo_pd(wv)), b = _mm512_mul_pd(b, hi_pd(wv));
                }
                store16(yr + j, C - j, to_ps(a, b));
            }
            if (rstd) rstd[r] = s;
        }
    }
}

/* gw[0 .. min(16, left)) += (dy x) s, from dy and x as doubles (the
 * product of two floats exact, then times s, then the add) */
AVX512 static inline void add_dw(double *gw, int left, __m512d dlo, __m512d dhi, __m512d xlo, __m512d xhi, __m512d vs)
{
    const __m512d t0 = _mm512_mul_pd(_mm512_mul_pd(dlo, xlo), vs), t1 = _mm512_mul_pd(_mm512_mul_pd(dhi, xhi), vs);
    store8d(gw, left, _mm512_add_round_pd(load8d(gw, left), t0, CUR));
    if (left > 8) store8d(gw + 8, left - 8, _mm512_add_round_pd(load8d(gw + 8, left - 8), t1, CUR));
}

AVX512 static void backward(int64_t rows, int C, const float *x, const float *w, const float *dy, const double *rstd,
                            float *gx, bool store, double *gw)
{
    double gs[ROWS];
    for (int64_t r0 = 0; r0 < rows; r0 += ROWS) {
        const int n = rows - r0 < ROWS ? (int)(rows - r0) : ROWS;
        if (gx) {
            /* sum_j (dy w) x per row, in j order (columns past C add 0) */
            const float *xg = x + r0 * C, *dg = dy + r0 * C;
            __m512d acc = _mm512_setzero_pd();
            for (int j = 0; j < C; j += 8) {
                __m512d d[8], v[8];
                columns(dg, C, n, j, d);
                columns(xg, C, n, j, v);
                for (int c = 0; c < 8; c++) {
                    __m512d t = d[c];
                    if (w) t = _mm512_mul_pd(t, _mm512_set1_pd(j + c < C ? (double)w[j + c] : 0.0));
                    acc = _mm512_add_round_pd(acc, _mm512_mul_pd(t, v[c]), CUR);
                }
            }
            _mm512_storeu_pd(gs, acc);
            for (int k = 0; k < n; k++) {
                const int64_t r = r0 + k;
                const float *xr = x + r * C, *dyr = dy + r * C;
                float *gxr = gx + r * C;
                const double s = rstd[r], c = gs[k] * s * s / C;
                const __m512d vs = _mm512_set1_pd(s), vc = _mm512_set1_pd(c);
                for (int j = 0; j < C; j += 16) {
                    const int left = C - j;
                    const __m512 dv = load16(dyr + j, left), xv = load16(xr + j, left);
                    const __m512d dlo = lo_pd(dv), dhi = hi_pd(dv), xlo = lo_pd(xv), xhi = hi_pd(xv);
                    __m512d ga = dlo, gb = dhi;
                    if (w) {
                        const __m512 wv = load16(w + j, left);
                        ga = _mm512_mul_pd(ga, lo_pd(wv)), gb = _mm512_mul_pd(gb, hi_pd(wv));
                    }
                    /* s (dy w - x c) */
                    ga = _mm512_mul_pd(vs, _mm512_sub_round_pd(ga, _mm512_mul_pd(xlo, vc), CUR));
                    gb = _mm512_mul_pd(vs, _mm512_sub_round_pd(gb, _mm512_mul_pd(xhi, vc), CUR));
                    __m512 v = to_ps(ga, gb);
                    if (!store) v = _mm512_add_ps(load16(gxr + j, left), v);
                    store16(gxr + j, left, v);
                    if (gw) /* this row's dy x rstd, added to dw while it is loaded (row after row) */
                        add_dw(gw + j, left, dlo, dhi, xlo, xhi, vs);
                }
            }
        } else if (gw)
            for (int k = 0; k < n; k++) { /* gw += dy x rstd, row after row */
                const int64_t r = r0 + k;
                const float *xr = x + r * C, *dyr = dy + r * C;
                const __m512d vs = _mm512_set1_pd(rstd[r]);
                for (int j = 0; j < C; j += 16) {
                    const __m512 dv = load16(dyr + j, C - j), xv = load16(xr + j, C - j);
                    add_dw(gw + j, C - j, lo_pd(dv), hi_pd(dv), lo_pd(xv), hi_pd(xv), vs);
                }
            }
    }
}

bool tg_rmsnorm_forward_avx512(int64_t rows, int C, const float *x, const float *w, double eps, float *y, double *rstd)
{
    if (!tg_cpu_avx512()) return false;
    forward(rows, C, x, w, eps, y, rstd);
    return true;
}

bool tg_rmsnorm_backward_avx512(int64_t rows, int C, const float *x, const float *w, const float *dy,
                                const double *rstd, float *gx, bool store, double *gw)
{
    if (!tg_cpu_avx512()) return false;
    backward(rows, C, x, w, dy, rstd, gx, store, gw);
    return true;
}

#else

bool tg_rmsnorm_forward_avx512(int64_t rows, int C, const float *x, const float *w, double eps, float *y, double *rstd)
{
    (void)rows, (void)C, (void)x, (void)w, (void)eps, (void)y, (void)rstd;
    return false;
}

bool tg_rmsnorm_backward_avx512(int64_t rows, int C, const float *x, const float *w, const float *dy,
                                const double *rstd, float *gx, bool store, double *gw)
{
    (void)rows, (void)C, (void)x, (void)w, (void)dy, (void)rstd, (void)gx, (void)store, (void)gw;
    return false;
}

#endif
