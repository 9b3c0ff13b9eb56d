/* tapegrad core: a seeded random stream that gives the same numbers on
 * every machine: PCG32 (XSH-RR, 64-bit state) for integers and uniforms,
 * Box-Muller for normals. */
#ifndef TG_RNG_H
#define TG_RNG_H

#include "tensor.h"

typedef struct tg_rng {
    uint64_t state, inc;
    double spare;        /* second normal of the last Box-Muller pair */
    bool has_spare;
} tg_rng;

void tg_rng_seed(tg_rng *r, uint64_t seed, uint64_t stream);
uint32_t tg_rng_u32(tg_rng *r);
uint32_t tg_rng_below(tg_rng *r, uint32_t n);   /* uniform in [0, n), n >= 1 */
double tg_rng_uniform(tg_rng *r);               /* [0, 1), 53 random bits */
double tg_rng_normal(tg_rng *r);                /* mean 0, std 1 */

/* Fill a float tensor: uniform in [lo, hi), or normal(mean, std). */
void tg_rng_fill_uniform(tg_rng *r, tg_tensor *t, double lo, double hi);
void tg_rng_fill_normal(tg_rng *r, tg_tensor *t, double mean, double std);

#endif
