/* Gradient check by central differences against a random projection of
 * the output (see gradcheck.h for the contract). */
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "graph_fields_internal.h"
#include "rng.h"

/* Runs f on a reset graph with a fixed stream; L = sum(r * out), or NaN. */
static tg_tensor *run(tg_graph *g, tg_gradcheck_fn f, void *ctx, tg_tensor **inputs, uint64_t seed)
{
    tg_graph_reset(g);
    tg_graph_seed(g, seed);
    return f(g, inputs, ctx);
}

static double project(const tg_tensor *out, const double *r)
{
    double s = 0;
    for (int64_t i = 0; i < out->numel; i++) s += r[i] * tg_tensor_get(out, i);
    return s;
}

bool tg_gradcheck(tg_gradcheck_fn f, void *ctx, int n_inputs, tg_tensor **inputs, const tg_gradcheck_opts *opts,
                  tg_gradcheck_result *res)
{
    if (!res) return false; /* nowhere to say why: nothing is run */
    tg_gradcheck_opts o = opts ? *opts : (tg_gradcheck_opts){0};
    if (!(o.eps > 0 && isfinite(o.eps))) o.eps = 1e-6;
    if (!(o.atol > 0 && isfinite(o.atol))) o.atol = 1e-5;
    if (!(o.rtol > 0 && isfinite(o.rtol))) o.rtol = 1e-3;
    if (!o.seed) o.seed = 1;
    memset(res, 0, sizeof *res);
    res->input = -1;
    res->index = -1;
    if (!f) {
        snprintf(res->message, sizeof res->message, "gradcheck: f is NULL");
        return false;
    }
    if (n_inputs < 0 || (n_inputs > 0 && !inputs)) {
        snprintf(res->message, sizeof res->message, "gradcheck: %d inputs%s", n_inputs,
                 n_inputs < 0 ? ": the count is negative" : ", but the inputs array is NULL");
        return false;
    }

    int n_checked = 0;
    for (int k = 0; k < n_inputs; k++) {
        tg_tensor *x = inputs[k];
        if (!x) {
            snprintf(res->message, sizeof res->message, "gradcheck: input %d is NULL", k);
            return false;
        }
        if (tg_tensor_stale(x)) {
            snprintf(res->message, sizeof res->message,
                     "gradcheck: input %d was made before the last tg_graph_reset of its graph", k);
            return false;
        }
        if (!x->requires_grad) continue;
        if (x->dtype != TG_F64 || !x->is_leaf || !x->grad) {
            snprintf(res->message, sizeof res->message,
                     "gradcheck: input %d must be an f64 leaf with a gradient buffer (got %s%s)", k,
                     tg_dtype_name(x->dtype), x->is_leaf ? "" : ", made by an op");
            return false;
        }
        n_checked++;
    }
    if (!n_checked) {
        snprintf(res->message, sizeof res->message, "gradcheck: no input requires grad");
        return false;
    }

    tg_graph *g = tg_graph_new();
    if (!g) {
        snprintf(res->message, sizeof res->message, "gradcheck: out of memory");
        return false;
    }
    double *r = NULL, *analytic = NULL;
    bool ok = false;

    tg_tensor *out = run(g, f, ctx, inputs, o.seed);
    if (!out) {
        snprintf(res->message, sizeof res->message, "gradcheck: f failed: %s",
                 tg_graph_error(g) ? tg_graph_error(g) : "it returned NULL");
        goto done;
    }
    if (out->dtype != TG_F64) {
        snprintf(res->message, sizeof res->message, "gradcheck: f returned %s, need f64", tg_dtype_name(out->dtype));
        goto done;
    }
    for (int64_t i = 0; i < out->numel; i++)
        if (!isfinite(((double *)out->data)[i])) {
            snprintf(res->message, sizeof res->message, "gradcheck: output element %lld is %g", (long long)i,
                     ((double *)out->data)[i]);
            goto done;
        }

    /* the random projection r, and the analytic gradient of sum(r * out) */
    int64_t n_out = out->numel;
    r = tg_malloc((size_t)n_out * sizeof *r);
    if (!r) {
        snprintf(res->message, sizeof res->message, "gradcheck: out of memory");
        goto done;
    }
    tg_rng rng;
    tg_rng_seed(&rng, o.seed, 0x9c);
    for (int64_t i = 0; i < n_out; i++) r[i] = tg_rng_normal(&rng);
    for (int k = 0; k < n_inputs; k++)
        if (inputs[k]->requires_grad) memset(inputs[k]->grad, 0, (size_t)inputs[k]->numel * sizeof(double));
    if (tg_graph_backward_seeded(g, out, r) != 0) {
        snprintf(res->message, sizeof res->message, "gradcheck: backward failed: %s", tg_graph_error(g));
        goto done;
    }

    for (int k = 0; k < n_inputs; k++) {
        tg_tensor *x = inputs[k];
        if (!x->requires_grad) continue;
        /* leaves own their gradient buffers, so it survives the resets below */
        analytic = x->grad;
        double *xv = x->data;
        for (int64_t i = 0; i < x->numel; i++) {
            double keep = xv[i], l[2]; /* L(x + eps), L(x - eps) */
            for (int side = 0; side < 2; side++) {
                xv[i] = side ? keep - o.eps : keep + o.eps;
                tg_tensor *out_side = run(g, f, ctx, inputs, o.seed);
                l[side] = out_side ? project(out_side, r) : NAN; /* before x is restored: out may be a view of it */
                xv[i] = keep;
                if (!out_side) { /* before the next run resets the graph and its error */
                    snprintf(res->message, sizeof res->message,
                             "gradcheck: f failed at input %d element %lld %s eps: %s", k, (long long)i,
                             side ? "-" : "+", tg_graph_error(g) ? tg_graph_error(g) : "it returned NULL");
                    goto done;
                }
            }
            double a = analytic[i], n = (l[0] - l[1]) / (2 * o.eps);
            double err = fabs(a - n), ratio = err / (o.atol + o.rtol * fabs(n));
            res->checked++;
            bool bad = !isfinite(a) || !isfinite(n) || !(err <= o.atol + o.rtol * fabs(n));
            if (err > res->max_abs_err || !isfinite(err)) res->max_abs_err = err;
            if (bad || ratio > res->worst_ratio || res->index < 0) {
                res->worst_ratio = isfinite(ratio) ? ratio : INFINITY;
                res->input = k;
                res->index = i;
                res->analytic = a;
                res->numeric = n;
            }
            if (bad) {
                snprintf(res->message, sizeof res->message,
                         "gradcheck: input %d element %lld: analytic %.10g vs numeric %.10g "
                         "(|diff| %.3g > atol %.1g + rtol %.1g * |numeric|)",
                         k, (long long)i, a, n, err, o.atol, o.rtol);
                goto done;
            }
        }
    }
    ok = true;
    snprintf(res->message, sizeof res->message,
             "gradcheck: ok, %lld elements, max |diff| %.3g, worst at input %d element %lld "
             "(analytic %.10g, numeric %.10g)",
             (long long)res->checked, res->max_abs_err, res->input, (long long)res->index, res->analytic, res->numeric);
done:
    tg_free(r);
    tg_graph_free(g);
    res->ok = ok;
    return ok;
}
