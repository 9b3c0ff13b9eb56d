/* PCG32 (O'Neill, "PCG: A Family of Simple Fast Space-Efficient
 * Statistically Good Algorithms", 2014), XSH-RR output on a 64-bit LCG.
 * Integer arithmetic only, so the stream is the same on every machine. */
#include "rng.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "err_internal.h"
#include "graph_fields_internal.h"

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
    if (!r || n == 0) return 0; /* [0, 0) is empty: 0, and the stream does not move */
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
    uint64_t hi = step(r) >> 5, lo = step(r) >> 6; /* 27 + 26 = 53 bits */
    return (double)(hi * 67108864u + lo) * (1.0 / 9007199254740992.0);
}

double tg_rng_normal(tg_rng *r)
{
    if (!r) return NAN;
    if (r->has_spare) {
        r->has_spare = false;
        return r->spare;
    }
    double u1 = 1.0 - tg_rng_uniform(r); /* (0, 1]: log is finite */
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

/* ---- the state as text ---------------------------------------------------- */

int tg_rng_to_string(const tg_rng *r, char *buf, size_t size)
{
    if (!r || !buf) return -1;
    uint64_t bits;
    memcpy(&bits, &r->spare, sizeof bits);
    return snprintf(buf, size, "%016" PRIx64 ":%016" PRIx64 ":%d:%016" PRIx64, r->state, r->inc, r->has_spare ? 1 : 0,
                    bits);
}

/* 16 lowercase hex digits, as tg_rng_to_string writes them. */
static bool hex16(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        const char c = s[i];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

int tg_rng_from_string(tg_rng *r, const char *s, tg_error *err)
{
    uint64_t st, inc, bits;
    if (!r || !s) return tg_error_set(err, "rng_from_string: %s is NULL", r ? "the text" : "the stream");
    if (strlen(s) != TG_RNG_STRING_LEN || !hex16(s, &st) || s[16] != ':' || !hex16(s + 17, &inc) || s[33] != ':' ||
        (s[34] != '0' && s[34] != '1') || s[35] != ':' || !hex16(s + 36, &bits)) {
        char shown[TG_SHOWN_SIZE];
        return tg_error_set(err,
                            "rng_from_string: '%s' is not a random-stream state (%d characters: "
                            "state:increment:0|1:spare in lowercase hex)",
                            tg_shown(s, shown), TG_RNG_STRING_LEN);
    }
    double spare;
    memcpy(&spare, &bits, sizeof spare);
    if (!(inc & 1))
        return tg_error_set(err, "rng_from_string: the increment %016" PRIx64 " is even (PCG32's is odd)", inc);
    if (!isfinite(spare)) return tg_error_set(err, "rng_from_string: the spare normal is not finite");
    *r = (tg_rng){.state = st, .inc = inc, .spare = spare, .has_spare = s[34] == '1'};
    return 0;
}
