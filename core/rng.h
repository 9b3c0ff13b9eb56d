/* tapegrad core: a seeded random stream that gives the same numbers on
 * every machine: PCG32 (XSH-RR, 64-bit state) for integers and uniforms,
 * Box-Muller for normals. */
#ifndef TG_RNG_H
#define TG_RNG_H

#include "export.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_rng {
    uint64_t state, inc;
    double spare;        /* second normal of the last Box-Muller pair */
    bool has_spare;
} tg_rng;

/* Starts r at `seed` on stream `stream`: different streams are independent
 * sequences; the same (seed, stream) gives the same numbers everywhere.
 * Every function here does nothing, or returns 0 (integers) or NaN
 * (doubles), for a NULL r. */
TG_API void tg_rng_seed(tg_rng *r, uint64_t seed, uint64_t stream);
/* The next 32 random bits. */
TG_API uint32_t tg_rng_u32(tg_rng *r);
/* Uniform in [0, n), without modulo bias (by rejection). n = 0 (an empty
 * range) returns 0 without drawing. */
TG_API uint32_t tg_rng_below(tg_rng *r, uint32_t n);
/* Built from two draws. */
TG_API double tg_rng_uniform(tg_rng *r);               /* [0, 1), 53 random bits */
/* Box-Muller: each pair of uniforms gives two normals (the second is kept). */
TG_API double tg_rng_normal(tg_rng *r);                /* mean 0, std 1 */

/* Fills every element of a float tensor, in flat order: uniform in
 * [lo, hi). A non-float or NULL tensor is left unchanged. */
TG_API void tg_rng_fill_uniform(tg_rng *r, tg_tensor *t, double lo, double hi);
/* Same with normal(mean, std) values (rounded to f32 for an f32 tensor). */
TG_API void tg_rng_fill_normal(tg_rng *r, tg_tensor *t, double mean, double std);

#ifdef __cplusplus
}
#endif

#endif
