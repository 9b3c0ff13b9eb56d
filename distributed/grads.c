/* Data-parallel training over MPI (dist.h): the gradient buckets that are
 * summed across ranks while backward still runs, ZeRO stage 1's shards.
 *
 * The buckets. Parameters are taken from the last registered to the
 * first and a bucket is closed once it holds bucket_bytes: bucket 0 ends
 * at the end of the flat buffer. tg_dist_grads_begin finds, for each
 * parameter, the first tape node that has it among its inputs (its
 * gradient's last writer in the reverse walk), and for each bucket the
 * smallest such index over its parameters (a parameter no node reads
 * counts as the tape's length: its gradient is complete from the start).
 * The hook, called after node i, starts every next bucket whose index is
 * >= i, in bucket order. */
#include "dist.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/op.h"
#include "../optim/optim.h"
#include "dist_internal.h"

#ifdef TG_HAVE_MPI
#include <mpi.h>
#endif

/* ---- gradients ---------------------------------------------------------- */

typedef struct bucket {
    int64_t offset, numel;
    int p0, np; /* parameters p0 .. p0 + np - 1 */
    int ready; /* start once the walk is at or before this node */
    int *counts; /* shard: elements of the bucket each rank receives */
    int64_t recv_at; /* shard: where this rank's part goes, from its shard's start */
    double launched, done;
    bool in_backward;
} bucket;

struct tg_dist_grads {
    tg_params *p;
    tg_dtype dt;
    size_t es;
    int64_t numel;
    bool shard; /* reduce-scatter (only with several ranks) */
    int64_t lo, hi; /* this rank's range */
    void *shard_grad; /* shard: hi - lo elements; else NULL (tg_params_grad is used) */
    int *counts, *displs; /* shard: every rank's shard, for the all-gather */
    int64_t *start; /* parameter i's first flat element, in registration order */
    int *first; /* per parameter: earliest reading node (begin) */
    bucket *b;
    int nb;
    tg_graph *g; /* between begin and end */
    int next; /* the next bucket to start */
    int oldest; /* the oldest bucket not known to be finished */
    double t0; /* begin's time */
#ifdef TG_HAVE_MPI
    MPI_Request *req;
    MPI_Datatype type;
#endif
    tg_dist_stats stats;
};

void tg_dist_grads_free(tg_dist_grads *d)
{
    if (!d) return;
    for (int i = 0; d->b && i < d->nb; i++) tg_free(d->b[i].counts);
    tg_free(d->b);
    tg_free(d->start);
    tg_free(d->first);
    tg_free(d->counts);
    tg_free(d->displs);
    tg_free(d->shard_grad);
#ifdef TG_HAVE_MPI
    tg_free(d->req);
#endif
    tg_free(d);
}

/* Fills d->b from the parameter layout: from the last parameter back,
 * closing a bucket once it holds `bytes`. Returns -1 on out of memory. */
static int make_buckets(tg_dist_grads *d, size_t bytes)
{
    const int n = tg_params_count(d->p);
    d->b = tg_calloc((size_t)n, sizeof *d->b); /* at most one bucket per parameter */
    if (!d->b) return -1;
    for (int i = n - 1; i >= 0;) {
        bucket *b = &d->b[d->nb++];
        int j = i;
        size_t held = 0;
        while (j >= 0 && held < bytes) held += (size_t)tg_params_at(d->p, j--)->numel * d->es;
        b->p0 = j + 1;
        b->np = i - j;
        b->offset = d->start[b->p0];
        b->numel = d->start[i] + tg_params_at(d->p, i)->numel - b->offset;
        i = j;
    }
    return 0;
}

tg_dist_grads *tg_dist_grads_new(tg_params *p, const tg_dist_grads_config *c, tg_error *err)
{
    tg_dist_grads_config cfg = c ? *c : (tg_dist_grads_config){0};
    if (!cfg.bucket_bytes) cfg.bucket_bytes = TG_DIST_BUCKET_BYTES;
    if (!p || tg_params_count(p) == 0) {
        tg_error_set(err, "dist_grads_new: %s", p ? "the store has no parameters" : "params is NULL");
        return NULL;
    }
    tg_dist_grads *d = tg_calloc(1, sizeof *d);
    if (!d) goto oom;
    const int n = tg_params_count(p);
    d->p = p;
    d->dt = tg_params_dtype(p);
    d->es = tg_dtype_size(d->dt);
    d->numel = tg_params_numel(p);
    d->shard = cfg.shard && tg_dist_multi();
    d->lo = 0;
    d->hi = d->numel;
    d->start = tg_calloc((size_t)n, sizeof *d->start);
    d->first = tg_calloc((size_t)n, sizeof *d->first);
    if (!d->start || !d->first) goto oom;
    const char *base = tg_params_data(p);
    for (int i = 0; i < n; i++) d->start[i] = ((const char *)tg_params_at(p, i)->data - base) / (int64_t)d->es;
    if (make_buckets(d, cfg.bucket_bytes)) goto oom;
    for (int i = 0; i < d->nb; i++)
        if (d->b[i].numel > INT_MAX) {
            tg_error_set(err,
                         "dist_grads_new: a bucket of %lld elements (parameter '%s') is more than MPI can "
                         "count (%d)",
                         (long long)d->b[i].numel, tg_params_at(p, d->b[i].p0)->name, INT_MAX);
            tg_dist_grads_free(d);
            return NULL;
        }
    if (d->shard) {
        const int R = tg_dist_size();
        tg_dist_shard_range(d->numel, tg_dist_rank(), R, &d->lo, &d->hi);
        d->counts = tg_calloc((size_t)R, sizeof *d->counts);
        d->displs = tg_calloc((size_t)R, sizeof *d->displs);
        d->shard_grad = tg_calloc_big((size_t)(d->hi > d->lo ? d->hi - d->lo : 1), d->es);
        if (!d->counts || !d->displs || !d->shard_grad) goto oom;
        for (int r = 0; r < R; r++) {
            int64_t a, z;
            tg_dist_shard_range(d->numel, r, R, &a, &z);
            if (z > INT_MAX) {
                tg_error_set(err,
                             "dist_grads_new: shards past element %d (of %lld) are more than MPI can "
                             "count",
                             INT_MAX, (long long)d->numel);
                tg_dist_grads_free(d);
                return NULL;
            }
            d->counts[r] = (int)(z - a);
            d->displs[r] = (int)a;
        }
        /* a bucket's reduce-scatter: rank r receives its part of the bucket */
        for (int i = 0; i < d->nb; i++) {
            bucket *b = &d->b[i];
            if (!(b->counts = tg_calloc((size_t)R, sizeof *b->counts))) goto oom;
            for (int r = 0; r < R; r++) {
                int64_t a = d->displs[r] > b->offset ? d->displs[r] : b->offset;
                int64_t z = d->displs[r] + d->counts[r] < b->offset + b->numel ? d->displs[r] + d->counts[r]
                                                                               : b->offset + b->numel;
                b->counts[r] = z > a ? (int)(z - a) : 0;
            }
            /* where this rank's part goes in its shard (0 when it has none of the bucket) */
            b->recv_at = b->counts[tg_dist_rank()] ? (b->offset > d->lo ? b->offset : d->lo) - d->lo : 0;
        }
    }
#ifdef TG_HAVE_MPI
    d->type = d->dt == TG_F32 ? MPI_FLOAT : MPI_DOUBLE;
    if (!(d->req = tg_calloc((size_t)d->nb, sizeof *d->req))) goto oom;
    for (int i = 0; i < d->nb; i++) d->req[i] = MPI_REQUEST_NULL;
#endif
    d->stats.bytes = (int64_t)((size_t)d->numel * d->es);
    return d;
oom:
    tg_error_set(err, "dist_grads_new: out of memory");
    tg_dist_grads_free(d);
    return NULL;
}

/* Starts bucket i's sum across ranks. */
static void launch(tg_dist_grads *d, int i, bool in_backward)
{
    bucket *b = &d->b[i];
    b->launched = tg_dist_now() - d->t0;
    b->in_backward = in_backward;
#ifdef TG_HAVE_MPI
    char *g = (char *)tg_params_grad(d->p) + (size_t)b->offset * d->es;
    if (d->shard)
        MPI_Ireduce_scatter(g, (char *)d->shard_grad + (size_t)b->recv_at * d->es, b->counts, d->type, MPI_SUM,
                            MPI_COMM_WORLD, &d->req[i]);
    else MPI_Iallreduce(MPI_IN_PLACE, g, (int)b->numel, d->type, MPI_SUM, MPI_COMM_WORLD, &d->req[i]);
#endif
}

/* Moves the pending reductions along (Open MPI's progress happens in MPI
 * calls) and notes the ones that finished, oldest first. */
static void poll(tg_dist_grads *d)
{
#ifdef TG_HAVE_MPI
    while (d->oldest < d->next) {
        int flag = 0;
        MPI_Test(&d->req[d->oldest], &flag, MPI_STATUS_IGNORE);
        if (!flag) return;
        d->b[d->oldest++].done = tg_dist_now() - d->t0;
    }
#else
    (void)d;
#endif
}

static void hook(void *ctx, tg_graph *g, int node)
{
    (void)g;
    tg_dist_grads *d = ctx;
    while (d->next < d->nb && node <= d->b[d->next].ready) launch(d, d->next++, true);
    if (d->oldest < d->next) poll(d);
}

/* The parameter of d whose values t is, or -1. */
static int param_of(const tg_dist_grads *d, const tg_tensor *t)
{
    if (!t || t->graph || !t->requires_grad) return -1; /* parameters belong to no graph */
    const char *base = tg_params_data(d->p), *at = t->data;
    if (at < base || at >= base + (size_t)d->numel * d->es) return -1;
    int64_t e = (at - base) / (int64_t)d->es;
    int lo = 0, hi = tg_params_count(d->p) - 1; /* the last start <= e */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (d->start[mid] <= e) lo = mid;
        else hi = mid - 1;
    }
    return tg_params_at(d->p, lo) == t ? lo : -1;
}

int tg_dist_grads_begin(tg_dist_grads *d, tg_graph *g)
{
    if (!d || !g || d->g) return -1;
    d->g = g;
    d->t0 = tg_dist_now();
    d->next = d->oldest = 0;
    if (!tg_dist_multi()) return 0; /* nothing to send: no scan, no hook */
    for (int i = 0; i < d->nb; i++) d->b[i].launched = d->b[i].done = NAN, d->b[i].in_backward = false;
    const int len = tg_graph_tape_len(g), n = tg_params_count(d->p);
    for (int k = 0; k < n; k++) d->first[k] = len; /* unread: complete from the start */
    for (int i = len - 1; i >= 0; i--) {
        const tg_node *nd = tg_graph_node(g, i);
        for (int k = 0; k < nd->n_in; k++) {
            int pi = param_of(d, nd->in[k]);
            if (pi >= 0) d->first[pi] = i;
        }
    }
    for (int i = 0; i < d->nb; i++) {
        bucket *b = &d->b[i];
        b->ready = len;
        for (int k = b->p0; k < b->p0 + b->np; k++)
            if (d->first[k] < b->ready) b->ready = d->first[k];
    }
    tg_graph_set_backward_hook(g, hook, d);
    return 0;
}

int tg_dist_grads_end(tg_dist_grads *d)
{
    if (!d || !d->g) return -1;
    double t_end = tg_dist_now();
    tg_graph_set_backward_hook(d->g, NULL, NULL);
    int in_bwd = d->next;
    if (tg_dist_multi()) {
        while (d->next < d->nb) launch(d, d->next++, false);
#ifdef TG_HAVE_MPI
        while (d->oldest < d->nb) {
            MPI_Wait(&d->req[d->oldest], MPI_STATUS_IGNORE);
            d->b[d->oldest++].done = tg_dist_now() - d->t0;
        }
#endif
    }
    double t_done = tg_dist_now();
    d->stats.steps++;
    d->stats.last_backward_s = t_end - d->t0;
    d->stats.last_wait_s = t_done - t_end;
    d->stats.backward_s += d->stats.last_backward_s;
    d->stats.wait_s += d->stats.last_wait_s;
    d->stats.last_in_backward = in_bwd;
    d->g = NULL;
    return 0;
}

void tg_dist_grads_shard(const tg_dist_grads *d, int64_t *lo, int64_t *hi)
{
    if (lo) *lo = d ? d->lo : 0;
    if (hi) *hi = d ? d->hi : 0;
}

void *tg_dist_grads_shard_grad(tg_dist_grads *d)
{
    if (!d) return NULL;
    return d->shard ? d->shard_grad : tg_params_grad(d->p);
}

/* tg_clip_grad_norm_part's combination across ranks */
static void reduce_all(void *ctx, double *x, bool max)
{
    (void)ctx;
    tg_dist_allreduce_f64(x, 1, max ? TG_DIST_MAX : TG_DIST_SUM);
}

double tg_dist_grads_clip(tg_dist_grads *d, double max_norm)
{
    if (!d) return NAN;
    if (!d->shard) return tg_clip_grad_norm(d->p, max_norm);
    return tg_clip_grad_norm_part(d->shard_grad, d->dt, d->hi - d->lo, max_norm, reduce_all, NULL);
}

int tg_dist_grads_gather_params(tg_dist_grads *d)
{
    if (!d) return -1;
#ifdef TG_HAVE_MPI
    if (d->shard)
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, tg_params_data(d->p), d->counts, d->displs, d->type,
                       MPI_COMM_WORLD);
#endif
    return 0;
}

int tg_dist_grads_gather_shard(const tg_dist_grads *d, const void *part, void *full)
{
    if (!d || !part || (!full && tg_dist_rank() == 0)) return -1;
    if (!d->shard) {
        if (full && full != part) memcpy(full, part, (size_t)d->numel * d->es);
        return 0;
    }
#ifdef TG_HAVE_MPI
    MPI_Gatherv(part, (int)(d->hi - d->lo), d->type, full, d->counts, d->displs, d->type, 0, MPI_COMM_WORLD);
#endif
    return 0;
}

double tg_dist_grads_probe(tg_dist_grads *d, int reps)
{
    if (!d) return NAN;
    if (!tg_dist_multi()) return 0;
    if (reps < 1) reps = 1;
    tg_dist_barrier();
    double t = tg_dist_now();
    for (int k = 0; k < reps; k++) {
        d->t0 = tg_dist_now();
        d->next = d->oldest = 0;
        while (d->next < d->nb) launch(d, d->next++, false);
#ifdef TG_HAVE_MPI
        MPI_Waitall(d->nb, d->req, MPI_STATUSES_IGNORE);
#endif
    }
    d->next = d->oldest = 0;
    return (tg_dist_now() - t) / reps;
}

int tg_dist_grads_bucket_count(const tg_dist_grads *d) { return d ? d->nb : 0; }

int tg_dist_grads_bucket(const tg_dist_grads *d, int i, tg_dist_bucket *out)
{
    if (!d || !out || i < 0 || i >= d->nb) return -1;
    const bucket *b = &d->b[i];
    *out = (tg_dist_bucket){b->offset, b->numel, b->p0, b->np, b->ready, b->launched, b->done, b->in_backward};
    return 0;
}

void tg_dist_grads_stats(const tg_dist_grads *d, tg_dist_stats *s)
{
    if (!s) return;
    if (!d) {
        memset(s, 0, sizeof *s);
        return;
    }
    *s = d->stats;
}
