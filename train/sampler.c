/* The sampler (train/sampler.h): the next id from a row of logits, with
 * temperature, top-k and top-p, from a seeded stream.
 *
 * The row is read once into doubles (exact for f32). Top-k's cut-off is
 * the k-th largest logit, found by selection in O(V) on average; the
 * probabilities are exp(l / temperature - max / temperature), unnormalised
 * (the draw scales the uniform by their sum instead). Top-p needs the
 * probabilities in order, but only of the ids that can be in the nucleus:
 * an id whose probability is below (1 - top_p) / (n - 1) of the total (n
 * ids with p > 0) is never in it, since all such ids together hold less
 * than 1 - top_p, so the rest already reach top_p (llama2.c's run.c makes
 * the same cut); only the ids above it are sorted. */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/rng.h"

typedef struct candidate {
    double p;
    int32_t id;
} candidate;

struct tg_sampler {
    tg_sampler_options o;
    int V;
    tg_rng rng;
    double *row; /* V: the logits, then the probabilities in place */
    candidate *cands; /* V: top-p's ids in order */
};

tg_sampler *tg_sampler_new(const tg_sampler_options *o, int vocab_size, tg_error *err)
{
    static const tg_sampler_options greedy = {0};
    if (!o) o = &greedy;
    if (vocab_size < 1) {
        tg_error_set(err, "sampler_new: vocab_size must be >= 1, got %d", vocab_size);
        return NULL;
    }
    if (!(o->temperature >= 0 && isfinite(o->temperature)) || o->top_k < 0 || !(o->top_p >= 0 && o->top_p <= 1)) {
        tg_error_set(err,
                     "sampler_new: temperature must be finite and >= 0, top_k >= 0 and top_p in [0, 1]; got "
                     "temperature %g, top_k %d, top_p %g",
                     o->temperature, o->top_k, o->top_p);
        return NULL;
    }
    tg_sampler *s = tg_calloc(1, sizeof *s);
    if (s) {
        s->row = tg_malloc((size_t)vocab_size * sizeof *s->row);
        s->cands = tg_malloc((size_t)vocab_size * sizeof *s->cands);
    }
    if (!s || !s->row || !s->cands) {
        tg_sampler_free(s);
        tg_error_set(err, "sampler_new: out of memory for %d ids", vocab_size);
        return NULL;
    }
    s->o = *o;
    s->V = vocab_size;
    tg_rng_seed(&s->rng, o->seed, 5);
    return s;
}

void tg_sampler_free(tg_sampler *s)
{
    if (!s) return;
    tg_free(s->row);
    tg_free(s->cands);
    tg_free(s);
}

/* Row `row` of logits (V per row) as doubles into out. */
static void logits_row(const tg_tensor *logits, int64_t row, int V, double *out)
{
    if (logits->dtype == TG_F32) {
        const float *l = (const float *)logits->data + row * V;
        for (int j = 0; j < V; j++) out[j] = l[j];
    } else {
        memcpy(out, (const double *)logits->data + row * V, (size_t)V * sizeof *out);
    }
}

/* The k-th largest of x[0..n) (1 <= k <= n, duplicates counted), x
 * reordered: Hoare's selection, O(n) on average. */
static double kth_largest(double *x, int n, int k)
{
    int lo = 0, hi = n - 1;
    const int at = k - 1; /* its index in descending order */
    while (lo < hi) {
        const double a = x[lo], b = x[lo + (hi - lo) / 2], c = x[hi]; /* the median of three as the pivot */
        const double pivot = a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
        int i = lo, j = hi;
        while (i <= j) { /* descending: [lo, j] >= pivot >= [i, hi] */
            while (x[i] > pivot) i++;
            while (x[j] < pivot) j--;
            if (i <= j) {
                const double t = x[i];
                x[i++] = x[j];
                x[j--] = t;
            }
        }
        if (at <= j) hi = j;
        else if (at >= i) lo = i;
        else break; /* between j and i: x[at] is the pivot */
    }
    return x[at];
}

/* most likely first; a tie: the lower id first */
static int by_p(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The ids of p (V, unnormalised, summing to sum) with p >= floor, in
 * order, into c; their count, their sum in that order in *kept. */
static int candidates(const double *p, int V, double floor, candidate *c, double *kept)
{
    int n = 0;
    for (int j = 0; j < V; j++)
        if (p[j] > 0 && p[j] >= floor) c[n++] = (candidate){p[j], j};
    qsort(c, (size_t)n, sizeof *c, by_p);
    *kept = 0;
    for (int i = 0; i < n; i++) *kept += c[i].p;
    return n;
}

/* Nucleus: keeps the shortest most likely prefix reaching top_p of sum,
 * zeroes the rest of p; returns the new sum (in id order). */
static double nucleus(tg_sampler *s, double *p, double sum)
{
    const int V = s->V;
    int nonzero = 0;
    for (int j = 0; j < V; j++) nonzero += p[j] > 0;
    const double target = s->o.top_p * sum;
    double kept;
    int n = candidates(p, V, nonzero > 1 ? (1 - s->o.top_p) * sum / (nonzero - 1) : 0, s->cands, &kept);
    if (kept < target) n = candidates(p, V, 0, s->cands, &kept); /* rounding, or every id below the floor */
    double cum = 0;
    int m = n;
    for (int i = 0; i < n; i++) {
        cum += s->cands[i].p;
        if (cum >= target) {
            m = i + 1;
            break;
        }
    }
    memset(p, 0, (size_t)V * sizeof *p); /* all but the first m go to 0 */
    for (int i = 0; i < m; i++) p[s->cands[i].id] = s->cands[i].p;
    double total = 0;
    for (int j = 0; j < V; j++) total += p[j];
    return total;
}

int32_t tg_sampler_pick(tg_sampler *s, const tg_tensor *logits, int64_t row, tg_error *err)
{
    if (!s || !logits) return tg_error_set(err, "sampler_pick: %s is NULL", s ? "the logits" : "the sampler");
    const int V = s->V;
    if (!tg_dtype_is_float(logits->dtype) || logits->ndim < 1 || logits->shape[logits->ndim - 1] != V || !logits->data)
        return tg_error_set(err,
                            "sampler_pick: the logits must be f32 or f64 with a last dimension of %d ids, got %s "
                            "with %d",
                            V, tg_dtype_name(logits->dtype), logits->ndim ? logits->shape[logits->ndim - 1] : 0);
    if (row < 0 || row >= logits->numel / V)
        return tg_error_set(err, "sampler_pick: row %lld is outside the logits' %lld rows", (long long)row,
                            (long long)(logits->numel / V));
    double *l = s->row; /* the row, then the probabilities in place */
    logits_row(logits, row, V, l);
    int best = 0;
    for (int j = 0; j < V; j++) {
        if (isnan(l[j]) || l[j] == INFINITY)
            return tg_error_set(err, "sampler_pick: logit %d of row %lld is %g", j, (long long)row, l[j]);
        if (l[j] > l[best]) best = j;
    }
    if (l[best] == -INFINITY) return tg_error_set(err, "sampler_pick: every logit of row %lld is -inf", (long long)row);
    const double temperature = s->o.temperature;
    if (temperature <= 0) return best;
    const int top_k = s->o.top_k;
    const double top = l[best], mx = top / temperature;
    double cut = -INFINITY; /* the k-th largest logit is the cut-off */
    if (top_k > 0 && top_k < V) {
        cut = kth_largest(l, V, top_k);
        logits_row(logits, row, V, l); /* back in order */
    }
    double sum = 0;
    for (int j = 0; j < V; j++) {
        l[j] = l[j] < cut ? 0 : exp(l[j] / temperature - mx);
        sum += l[j];
    }
    if (s->o.top_p > 0 && s->o.top_p < 1) sum = nucleus(s, l, sum);
    double u = tg_rng_uniform(&s->rng) * sum;
    for (int j = 0; j < V; j++) {
        if (u < l[j]) return j;
        u -= l[j];
    }
    return best;
}
