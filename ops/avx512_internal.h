/* What the AVX-512 kernels share (the ops/ files ending _avx512.c): the
 * target attribute of their functions, and float vectors loaded and
 * stored n lanes at a time. Masked loads and stores of lines that are
 * not in the cache were slow on Zen 5: with every access masked,
 * RMSNorm's and RoPE's rows took longer than the plain code inside a
 * training step (though not on data in the cache), so whole vectors go
 * unmasked and only a row's last, partial vector is masked. */
#ifndef TG_AVX512_INTERNAL_H
#define TG_AVX512_INTERNAL_H

#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))

/* lanes [0, n) of a 16-lane mask */
static inline __mmask16 lanes16(int n) { return (__mmask16)(n >= 16 ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1); }

/* n floats at p (lanes past n zero), or stored to p */
AVX512 static inline __m512 load16(const float *p, int n)
{
    return n >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(lanes16(n), p);
}
AVX512 static inline void store16(float *p, int n, __m512 v)
{
    if (n >= 16) _mm512_storeu_ps(p, v);
    else _mm512_mask_storeu_ps(p, lanes16(n), v);
}

#endif
