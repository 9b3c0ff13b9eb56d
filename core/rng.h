/* tapegrad core: a seeded random stream that gives the same numbers on
 * every machine: PCG32 (XSH-RR, 64-bit state) for integers and uniforms,
 * Box-Muller for normals. */
#ifndef TG_RNG_H
#define TG_RNG_H

#include "error.h"
#include "export.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_rng {
    uint64_t state, inc;
    double spare; /* second normal of the last Box-Muller pair */
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
TG_API double tg_rng_uniform(tg_rng *r); /* [0, 1), 53 random bits */
/* Box-Muller: each pair of uniforms gives two normals (the second is kept). */
TG_API double tg_rng_normal(tg_rng *r); /* mean 0, std 1 */

/* Fills every element of a float tensor, in flat order: uniform in
 * [lo, hi). A non-float or NULL tensor is left unchanged. */
TG_API void tg_rng_fill_uniform(tg_rng *r, tg_tensor *t, double lo, double hi);
/* Same with normal(mean, std) values (rounded to f32 for an f32 tensor). */
TG_API void tg_rng_fill_normal(tg_rng *r, tg_tensor *t, double mean, double std);

#define TG_RNG_STRING_LEN 52 /* the length of tg_rng_to_string's text */
/* The whole state of a stream as text, for a checkpoint's metadata, so a
 * resumed run draws exactly the numbers the uninterrupted one would:
 * "SSSSSSSSSSSSSSSS:IIIIIIIIIIIIIIII:H:XXXXXXXXXXXXXXXX" (state,
 * increment, whether a spare normal waits, the spare's bits; lowercase
 * hex), TG_RNG_STRING_LEN characters. buf gets at most size bytes,
 * NUL-terminated; returns the length the whole text needs (as snprintf),
 * or -1 for a NULL r or buf. */
TG_API int tg_rng_to_string(const tg_rng *r, char *buf, size_t size);
/* Sets r from tg_rng_to_string's text, exactly that form: an odd
 * increment, a finite spare. 0, or -1 with a message in err (r is then
 * unchanged). */
TG_API int tg_rng_from_string(tg_rng *r, const char *s, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif
