/* PCG32 (O'Neill, "PCG: A Family of Simple Fast Space-Efficient
 * Statistically Good Algorithms", 2014), XSH-RR output on a 64-bit LCG.
 * Integer arithmetic only, so the stream is the same on every machine. */
#include "rng.h"

#include <math.h>

#include "graph_internal.h"

#define PCG_MULT 6364136223846793005ULL

static uint32_t step(tg_rng *r)
{
    uint64_t old = r->state;
    r->state = old * PCG_MULT + r->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
}

void tg_rng_seed(tg_rng *r, uint64_t seed, uint64_t stream)
{
    if (!r) return;
    r->state = 0;
    r->inc = (stream << 1u) | 1u;
    step(r);
    r->state += seed;
    step(r);
    r->has_spare = false;
    r->spare = 0;
}

uint32_t tg_rng_u32(tg_rng *r) { return r ? step(r) : 0; }

uint32_t tg_rng_below(tg_rng *r, uint32_t n)
{
    if (!r || n == 0) return 0;   /* [0, 0) is empty: 0, and the stream does not move */
    /* rejection of the short top range keeps every value equally likely */
    uint32_t threshold = (uint32_t)(-n) % n;
    for (;;) {
        uint32_t x = step(r);
        if (x >= threshold) return x % n;
    }
}

double tg_rng_uniform(tg_rng *r)
{
    if (!r) return NAN;
    uint64_t hi = step(r) >> 5, lo = step(r) >> 6;   /* 27 + 26 = 53 bits */
    return (double)(hi * 67108864u + lo) * (1.0 / 9007199254740992.0);
}

double tg_rng_normal(tg_rng *r)
{
    if (!r) return NAN;
    if (r->has_spare) { r->has_spare = false; return r->spare; }
    double u1 = 1.0 - tg_rng_uniform(r);   /* (0, 1]: log is finite */
    double u2 = tg_rng_uniform(r);
    double rad = sqrt(-2.0 * log(u1));
    double th = 6.283185307179586 * u2;
    r->spare = rad * sin(th);
    r->has_spare = true;
    return rad * cos(th);
}

static void put(tg_tensor *t, int64_t i, double v)
{
    if (t->dtype == TG_F32) ((float *)t->data)[i] = (float)v;
    else if (t->dtype == TG_F64) ((double *)t->data)[i] = v;
}

void tg_rng_fill_uniform(tg_rng *r, tg_tensor *t, double lo, double hi)
{
    if (!r || !t || !t->data || tg_tensor_stale(t)) return;
    for (int64_t i = 0; i < t->numel; i++) put(t, i, lo + (hi - lo) * tg_rng_uniform(r));
}

void tg_rng_fill_normal(tg_rng *r, tg_tensor *t, double mean, double std)
{
    if (!r || !t || !t->data || tg_tensor_stale(t)) return;
    for (int64_t i = 0; i < t->numel; i++) put(t, i, mean + std * tg_rng_normal(r));
}
