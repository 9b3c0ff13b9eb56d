/* The f32 row kernels of the fused attention (ops/attention_f32.c:
 * block_online and block_grad) written with AVX2 intrinsics. The online
 * step: the same steps, lane for
 * lane, as the portable version there, which GCC vectorises only
 * partly (it keeps the eight running maxima and sums in memory and
 * reloads its constants every group: 20% of an attention forward and
 * backward in config M).
 *
 * Per row of an (nq,nk) tile of scaled scores, keys visible while
 * c <= lim0 + r:
 *   pass 1: hidden scores become -inf, row maximum in 8 lanes, and a flag
 *           for a NaN or +inf score at a visible key;
 *   pass 2: P = exp(s - m) (0 for -inf), row sum in 8 lanes.
 * Lane k holds the columns c = k (mod 8), the tail included, and the
 * lanes are added in order 0..7: the sums round as the portable code's.
 * exp is tg_fexp's, lane for lane (clamp to [-87, 0], 2^k times a
 * degree-7 Taylor polynomial in Estrin's order): the scalar tail
 * columns call tg_fexp itself. */
#include "attention_tiles_internal.h"

#include <math.h>
#include <stdint.h>

#include "fastmath_internal.h"

#ifdef TG_AVX2_KERNELS
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static inline __m256 v_exp(__m256 x)
{
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f)); /* NaN gives -87, as tg_fexp */
    x = _mm256_min_ps(x, _mm256_setzero_ps());
    const __m256 shifter = _mm256_set1_ps(12582912.0f);
    const __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), shifter);
    const __m256i k = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(0x4B400000));
    const __m256 kf = _mm256_sub_ps(t, shifter);
    __m256 r = _mm256_fnmadd_ps(kf, _mm256_set1_ps(0.693145751953125f), x);
    r = _mm256_fnmadd_ps(kf, _mm256_set1_ps(1.42860682030941723212e-6f), r);
    /* the degree-7 Taylor polynomial in Estrin's order, as
     * tg_fexp_unclamped */
    const __m256 r2 = _mm256_mul_ps(r, r), r4 = _mm256_mul_ps(r2, r2);
    const __m256 p01 = _mm256_add_ps(_mm256_set1_ps(1.0f), r);
    const __m256 p23 = _mm256_fmadd_ps(r, _mm256_set1_ps(1.0f / 6), _mm256_set1_ps(0.5f));
    const __m256 p45 = _mm256_fmadd_ps(r, _mm256_set1_ps(1.0f / 120), _mm256_set1_ps(1.0f / 24));
    const __m256 p67 = _mm256_fmadd_ps(r, _mm256_set1_ps(1.0f / 5040), _mm256_set1_ps(1.0f / 720));
    const __m256 p = _mm256_fmadd_ps(r4, _mm256_fmadd_ps(r2, p67, p45), _mm256_fmadd_ps(r2, p23, p01));
    const __m256i sb = _mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(sb));
}

AVX2 int64_t tg_attn_block_online_avx2(float *restrict s, int nq, int nk, int lim0, float *restrict m,
                                       float *restrict l, float *restrict alpha)
{
    const int full = nk & ~7;
    const __m256 ninf = _mm256_set1_ps(-INFINITY), pinf = _mm256_set1_ps(INFINITY);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    int64_t at; /* a bad score's flat index */
    for (int r = 0; r < nq; r++) {
        float *restrict sr = s + (int64_t)r * nk;
        const int lim = lim0 + r;
        /* pass 1 */
        __m256 vmx = ninf, vbad = _mm256_setzero_ps();
        const __m256i vlim = _mm256_set1_epi32(lim);
        for (int c0 = 0; c0 < full; c0 += 8) {
            const __m256 x = _mm256_loadu_ps(sr + c0);
            const __m256i idx = _mm256_add_epi32(lane, _mm256_set1_epi32(c0));
            const __m256 vis = _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, vlim)); /* set where hidden */
            const __m256 bad = _mm256_or_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q), _mm256_cmp_ps(x, pinf, _CMP_EQ_OQ));
            vbad = _mm256_or_ps(vbad, _mm256_andnot_ps(vis, bad));
            const __m256 w = _mm256_blendv_ps(x, ninf, vis);
            _mm256_storeu_ps(sr + c0, w);
            vmx = _mm256_blendv_ps(vmx, w, _mm256_cmp_ps(w, vmx, _CMP_GT_OQ));
        }
        float mx[8];
        _mm256_storeu_ps(mx, vmx);
        int bad = _mm256_movemask_ps(vbad) != 0;
        for (int c = full; c < nk; c++) {
            const int k = c - full, vis = c <= lim;
            const float x = sr[c];
            bad |= vis & ((x != x) | (x == INFINITY));
            const float w = vis ? x : -INFINITY;
            sr[c] = w;
            if (w > mx[k]) mx[k] = w;
        }
        float mn = m[r];
        for (int k = 0; k < 8; k++) mn = mx[k] > mn ? mx[k] : mn;
        if (bad && tg_attn_find_bad(sr, r, nk, lim, &at)) return at;
        if (mn == -INFINITY) { /* nothing visible yet */
            tg_attn_row_empty(sr, nk, &alpha[r]);
            continue;
        }
        /* pass 2 */
        const float a = m[r] == -INFINITY ? 0 : tg_fexp(m[r] - mn);
        const __m256 vmn = _mm256_set1_ps(mn);
        __m256 vsum = _mm256_setzero_ps();
        for (int c0 = 0; c0 < full; c0 += 8) {
            const __m256 w = _mm256_loadu_ps(sr + c0);
            const __m256 e = _mm256_and_ps(v_exp(_mm256_sub_ps(w, vmn)), _mm256_cmp_ps(w, ninf, _CMP_NEQ_UQ));
            _mm256_storeu_ps(sr + c0, e);
            vsum = _mm256_add_ps(vsum, e);
        }
        float sum[8];
        _mm256_storeu_ps(sum, vsum);
        for (int c = full; c < nk; c++) {
            const float w = sr[c], e = w != -INFINITY ? tg_fexp(w - mn) : 0;
            sr[c] = e;
            sum[c - full] += e;
        }
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
AVX2 void tg_attn_block_grad_avx2(float *restrict s, float *restrict dp, int nq, int nk, int lim0,
                                  const float *restrict L, const float *restrict D)
{
    const int full = nk & ~7;
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int r = 0; r < nq; r++) {
        float *restrict sr = s + (int64_t)r * nk;
        const int lim = lim0 + r;
        const __m256i vlim = _mm256_set1_epi32(lim);
        const __m256 vL = _mm256_set1_ps(L[r]);
        float *restrict dr = dp ? dp + (int64_t)r * nk : NULL;
        const __m256 vD = _mm256_set1_ps(dp ? D[r] : 0);
        for (int c0 = 0; c0 < full; c0 += 8) {
            const __m256 x = _mm256_loadu_ps(sr + c0);
            const __m256i idx = _mm256_add_epi32(lane, _mm256_set1_epi32(c0));
            const __m256 hid = _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, vlim));
            const __m256 keep = _mm256_andnot_ps(hid, _mm256_cmp_ps(x, ninf, _CMP_NEQ_UQ));
            const __m256 e = _mm256_and_ps(v_exp(_mm256_sub_ps(x, vL)), keep);
            _mm256_storeu_ps(sr + c0, e);
            if (dr) {
                const __m256 g = _mm256_mul_ps(e, _mm256_sub_ps(_mm256_loadu_ps(dr + c0), vD));
                _mm256_storeu_ps(dr + c0, _mm256_andnot_ps(hid, g));
            }
        }
        for (int c = full; c < nk; c++) {
            const float x = sr[c];
            sr[c] = c <= lim && x != -INFINITY ? tg_fexp(x - L[r]) : 0;
            if (dr) dr[c] = c <= lim ? sr[c] * (dr[c] - D[r]) : 0;
        }
    }
}
#endif
