/* The f32 row kernels of the fused attention (ops/attention_f32.c:
 * block_online and block_grad) written with AVX-512 intrinsics, 16 lanes:
 * ops/attention_avx2.c's two steps, with mask registers where that file
 * has blends, a scalar tail and an index compare for the causal limit.
 *
 * Per row of an (nq,nk) tile of scaled scores, keys visible while
 * c <= lim0 + r, that is the first nv = clamp(lim0 + r + 1, 0, nk)
 * columns:
 *   pass 1: row maximum over the nv visible scores in 16 lanes, and a
 *           flag for a NaN or +inf among them (one fpclass per group);
 *   pass 2: P = exp(s - m) at visible keys (0 for -inf), 0 at hidden
 *           ones (no exp computed for a group that is all hidden), and
 *           the row sum.
 * A group of 16 columns that runs past nv or nk is read and written
 * through a mask (nothing past the row is touched). The hidden scores are
 * not first rewritten to -inf as the AVX2 version does: pass 2 writes
 * their 0 directly, which is what that -inf became there.
 *
 * Same bits as the AVX2 version. The maximum is exact in any order. The
 * row sum is kept in 8 lanes in the AVX2 order, lane k holding the
 * columns c = k (mod 8) added in increasing c, then the lanes added in
 * order 0..7: each 16-wide group adds its low 8 columns, then its high
 * 8, into one 8-lane accumulator (the sums of hidden columns there added
 * +0, which changes nothing). exp is tg_fexp's, lane for lane as
 * v_exp of ops/attention_avx2.c (clamp to [-87, 0], 2^k times the
 * degree-7 Taylor polynomial in Estrin's order, the same multiply-adds);
 * the AVX2 version's scalar tail columns call tg_fexp compiled with the
 * same multiply-adds. tests/test_attention_kernels.c checks the bits
 * against the AVX2 functions wherever both run. */
#include "attention_tiles_internal.h"

#include <math.h>
#include <stdint.h>

#include "fastmath_internal.h"

#ifdef TG_AVX2_KERNELS
#include <immintrin.h>

#include "avx512_internal.h"

/* tg_fexp in 16 lanes */
AVX512 static inline __m512 v_exp16(__m512 x)
{
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f)); /* NaN gives -87, as tg_fexp */
    x = _mm512_min_ps(x, _mm512_setzero_ps());
    const __m512 shifter = _mm512_set1_ps(12582912.0f); /* 1.5 * 2^23: adding it rounds to an integer */
    const __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), shifter);
    const __m512i k = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(0x4B400000));
    const __m512 kf = _mm512_sub_ps(t, shifter);
    __m512 r = _mm512_fnmadd_ps(kf, _mm512_set1_ps(0.693145751953125f), x); /* ln 2 in two parts */
    r = _mm512_fnmadd_ps(kf, _mm512_set1_ps(1.42860682030941723212e-6f), r);
    const __m512 r2 = _mm512_mul_ps(r, r), r4 = _mm512_mul_ps(r2, r2);
    const __m512 p01 = _mm512_add_ps(_mm512_set1_ps(1.0f), r);
    const __m512 p23 = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 6), _mm512_set1_ps(0.5f));
    const __m512 p45 = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 120), _mm512_set1_ps(1.0f / 24));
    const __m512 p67 = _mm512_fmadd_ps(r, _mm512_set1_ps(1.0f / 5040), _mm512_set1_ps(1.0f / 720));
    const __m512 p = _mm512_fmadd_ps(r4, _mm512_fmadd_ps(r2, p67, p45), _mm512_fmadd_ps(r2, p23, p01));
    const __m512i sb = _mm512_slli_epi32(_mm512_add_epi32(k, _mm512_set1_epi32(127)), 23); /* 2^k */
    return _mm512_mul_ps(p, _mm512_castsi512_ps(sb));
}

/* The lanes of a group of 16 columns from c0 that lie below n. */
static inline __mmask16 below(int n, int c0)
{
    const int left = n - c0;
    return left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
}

/* Visible columns of a row with limit lim: [0, nv). */
static inline int visible(int lim, int nk) { return lim < 0 ? 0 : lim >= nk ? nk : lim + 1; }

AVX512 int64_t tg_attn_block_online_avx512(float *restrict s, int nq, int nk, int lim0, float *restrict m,
                                           float *restrict l, float *restrict alpha)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    int64_t at; /* a bad score's flat index */
    for (int r = 0; r < nq; r++) {
        float *restrict sr = s + (int64_t)r * nk;
        const int lim = lim0 + r, nv = visible(lim, nk);
        /* pass 1: the maximum of the visible scores; NaN or +inf among them */
        __m512 vmx = ninf;
        __mmask16 bad = 0;
        for (int c0 = 0; c0 < nv; c0 += 16) {
            const __mmask16 vis = below(nv, c0);
            const __m512 x = _mm512_maskz_loadu_ps(vis, sr + c0);
            bad |= _mm512_mask_fpclass_ps_mask(vis, x, 0x89); /* QNaN, +inf, SNaN */
            vmx = _mm512_mask_max_ps(vmx, vis, x, vmx); /* x > vmx ? x : vmx, as the AVX2 blend */
        }
        const float rmx = _mm512_reduce_max_ps(vmx);
        const float mn = rmx > m[r] ? rmx : m[r];
        if (bad && tg_attn_find_bad(sr, r, nk, lim, &at)) return at;
        if (mn == -INFINITY) { /* nothing visible yet */
            tg_attn_row_empty(sr, nk, &alpha[r]);
            continue;
        }
        /* pass 2 */
        const float a = m[r] == -INFINITY ? 0 : tg_fexp(m[r] - mn);
        const __m512 vmn = _mm512_set1_ps(mn);
        __m256 vsum = _mm256_setzero_ps();
        for (int c0 = 0; c0 < nk; c0 += 16) {
            const __mmask16 in = below(nk, c0);
            if (c0 >= nv) { /* all hidden */
                _mm512_mask_storeu_ps(sr + c0, in, _mm512_setzero_ps());
                continue;
            }
            const __mmask16 vis = below(nv, c0);
            const __m512 w = _mm512_maskz_loadu_ps(vis, sr + c0);
            const __mmask16 keep = _mm512_mask_cmp_ps_mask(vis, w, ninf, _CMP_NEQ_UQ);
            const __m512 e = _mm512_maskz_mov_ps(keep, v_exp16(_mm512_sub_ps(w, vmn)));
            _mm512_mask_storeu_ps(sr + c0, in, e);
            vsum = _mm256_add_ps(vsum, _mm512_castps512_ps256(e)); /* columns c0 .. c0+7 */
            vsum = _mm256_add_ps(vsum, _mm512_extractf32x8_ps(e, 1)); /* then c0+8 .. c0+15 */
        }
        float sum[8];
        _mm256_storeu_ps(sum, vsum);
        float st = 0;
        for (int k = 0; k < 8; k++) st += sum[k];
        l[r] = a * l[r] + st;
        m[r] = mn;
        alpha[r] = a;
    }
    return -1;
}

/* block_grad: P = exp(s - L) where visible and not -inf (else 0), then,
 * when dp is given, dS = P (dP - D) where visible (else 0); same exp. */
AVX512 void tg_attn_block_grad_avx512(float *restrict s, float *restrict dp, int nq, int nk, int lim0,
                                      const float *restrict L, const float *restrict D)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY), zero = _mm512_setzero_ps();
    for (int r = 0; r < nq; r++) {
        float *restrict sr = s + (int64_t)r * nk;
        float *restrict dr = dp ? dp + (int64_t)r * nk : NULL;
        const int nv = visible(lim0 + r, nk);
        const __m512 vL = _mm512_set1_ps(L[r]), vD = _mm512_set1_ps(dp ? D[r] : 0);
        for (int c0 = 0; c0 < nk; c0 += 16) {
            const __mmask16 in = below(nk, c0);
            if (c0 >= nv) { /* all hidden */
                _mm512_mask_storeu_ps(sr + c0, in, zero);
                if (dr) _mm512_mask_storeu_ps(dr + c0, in, zero);
                continue;
            }
            const __mmask16 vis = below(nv, c0);
            const __m512 x = _mm512_maskz_loadu_ps(vis, sr + c0);
            const __mmask16 keep = _mm512_mask_cmp_ps_mask(vis, x, ninf, _CMP_NEQ_UQ);
            const __m512 e = _mm512_maskz_mov_ps(keep, v_exp16(_mm512_sub_ps(x, vL)));
            _mm512_mask_storeu_ps(sr + c0, in, e);
            if (dr) {
                const __m512 g = _mm512_sub_ps(_mm512_maskz_loadu_ps(vis, dr + c0), vD);
                _mm512_mask_storeu_ps(dr + c0, in, _mm512_maskz_mul_ps(vis, e, g));
            }
        }
    }
}
#endif
