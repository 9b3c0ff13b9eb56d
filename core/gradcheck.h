/* tapegrad core: numerical gradient checks, for the library's ops and for
 * a user's own ops and models.
 *
 * For a function f mapping input tensors to an output tensor, gradcheck
 * draws a fixed random tensor r shaped like the output and compares the
 * analytic gradient of L = sum(r * f(inputs)) (one backward seeded with r)
 * with central differences  (L(x + eps) - L(x - eps)) / (2 eps)  for every
 * element of every input that requires grad. The random projection r
 * means a normalising op such as softmax cannot pass vacuously (with r = 1
 * its true gradient would be zero).
 *
 * An element passes iff |a - n| <= atol + rtol * |n|. A NaN or infinite
 * value anywhere fails. Checked inputs must be f64 leaves that require
 * grad (tg_tensor_set_requires_grad, or parameters of an f64 store);
 * others (ids, masks, constants) are passed through unchanged. After the
 * call, each checked input's grad holds the analytic gradient. */
#ifndef TG_GRADCHECK_H
#define TG_GRADCHECK_H

#include "export.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Builds the output from the inputs on graph g. Called many times, each
 * on a freshly reset g with the same random seed, so dropout repeats. */
typedef tg_tensor *(*tg_gradcheck_fn)(tg_graph *g, tg_tensor **inputs, void *ctx);

typedef struct tg_gradcheck_opts {
    double eps; /* default 1e-6 */
    double atol; /* default 1e-5 */
    double rtol; /* default 1e-3 */
    uint64_t seed; /* seeds r and the graph's stream; default 1 */
} tg_gradcheck_opts;

typedef struct tg_gradcheck_result {
    bool ok;
    int64_t checked; /* elements compared */
    /* The failing element (first failure), or on success the element with
     * the largest |a - n| / (atol + rtol |n|). */
    int input;
    int64_t index; /* flat index into that input */
    double analytic, numeric;
    double max_abs_err; /* largest |a - n| seen */
    double worst_ratio; /* largest |a - n| / (atol + rtol |n|); < 1 passes */
    char message[512]; /* a sentence naming input, element and values */
} tg_gradcheck_result;

/* Checks every element of every input that requires grad. opts may be
 * NULL (defaults); zero, negative or non-finite fields take defaults too.
 * Returns res->ok; res is always filled (with a NULL res nothing is run
 * and the result is false). Besides a gradient mismatch, it fails with a
 * message when f is NULL, n_inputs is negative, inputs is NULL with
 * n_inputs > 0, an input is NULL, an input that requires grad is not an
 * f64 leaf with a gradient buffer, no input requires grad, f returns NULL
 * (the message is f's graph error), a non-f64 or non-finite output, or
 * backward fails. */
TG_API bool tg_gradcheck(tg_gradcheck_fn f, void *ctx, int n_inputs, tg_tensor **inputs, const tg_gradcheck_opts *opts,
                         tg_gradcheck_result *res);

#ifdef __cplusplus
}
#endif

#endif
