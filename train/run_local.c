/* A run on this process alone (train/run.h): every collective a copy or
 * nothing, the gradients the store's own. */
#include "train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

struct tg_run_sync {
    tg_params *p;
};

static int agree(void *ctx, bool failed, char *msg, size_t len, bool *all)
{
    (void)ctx, (void)msg, (void)len;
    if (all) *all = failed;
    return failed ? 0 : -1;
}

static int same(void *ctx, const char *const *kv, int n, char *msg, size_t len)
{
    (void)ctx, (void)kv, (void)n, (void)msg, (void)len;
    return 0;
}

static void sum(void *ctx, double *x, int n) { (void)ctx, (void)x, (void)n; }
static void max(void *ctx, int64_t *x, int n) { (void)ctx, (void)x, (void)n; }
static void bcast(void *ctx, void *buf, size_t bytes, int root) { (void)ctx, (void)buf, (void)bytes, (void)root; }

static void stop(void *ctx, const char *msg)
{
    (void)ctx;
    if (msg) fprintf(stderr, "%s\n", msg);
    exit(1);
}

static tg_run_sync *sync_new(void *ctx, tg_params *p, size_t bucket_bytes, bool shard, tg_error *err)
{
    (void)ctx, (void)bucket_bytes, (void)shard; /* one process: nothing to sum or to shard */
    tg_run_sync *s = p ? malloc(sizeof *s) : NULL;
    if (!s) return tg_error_set(err, "run: %s", p ? "out of memory" : "no parameters"), NULL;
    s->p = p;
    return s;
}

static void sync_free(tg_run_sync *s) { free(s); }

static void sync_range(const tg_run_sync *s, int64_t *lo, int64_t *hi)
{
    if (lo) *lo = 0;
    if (hi) *hi = tg_params_numel(s->p);
}

static void *sync_grad(tg_run_sync *s) { return tg_params_grad(s->p); }
static int sync_begin(tg_run_sync *s, tg_graph *g) { return (void)s, (void)g, 0; }
static int sync_end(tg_run_sync *s) { return (void)s, 0; }
static double sync_clip(tg_run_sync *s, double max_norm) { return tg_clip_grad_norm(s->p, max_norm); }
static int sync_gather_params(tg_run_sync *s) { return (void)s, 0; }

static int sync_gather_shard(const tg_run_sync *s, const void *part, void *full)
{
    if (full && full != part) memcpy(full, part, (size_t)tg_params_numel(s->p) * tg_dtype_size(tg_params_dtype(s->p)));
    return 0;
}

static void sync_muon_grads(tg_run_sync *s, const tg_muon *m) { (void)s, (void)m; }
static void sync_muon_share(tg_run_sync *s, tg_muon *m, bool momentum) { (void)s, (void)m, (void)momentum; }
static bool sync_params_agree(tg_run_sync *s) { return (void)s, true; }
static double sync_probe(tg_run_sync *s, int reps) { return (void)s, (void)reps, 0; }

static void sync_stats(const tg_run_sync *s, tg_run_sync_stats *out)
{
    *out = (tg_run_sync_stats){.buckets = 1,
                               .bytes = tg_params_numel(s->p) * (int64_t)tg_dtype_size(tg_params_dtype(s->p))};
}

static const tg_run_backend LOCAL = {.rank = 0,
                                     .size = 1,
                                     .agree = agree,
                                     .same = same,
                                     .sum = sum,
                                     .max = max,
                                     .bcast = bcast,
                                     .abort = stop,
                                     .sync_new = sync_new,
                                     .sync_free = sync_free,
                                     .sync_range = sync_range,
                                     .sync_grad = sync_grad,
                                     .sync_begin = sync_begin,
                                     .sync_end = sync_end,
                                     .sync_clip = sync_clip,
                                     .sync_gather_params = sync_gather_params,
                                     .sync_gather_shard = sync_gather_shard,
                                     .sync_muon_grads = sync_muon_grads,
                                     .sync_muon_share = sync_muon_share,
                                     .sync_params_agree = sync_params_agree,
                                     .sync_probe = sync_probe,
                                     .sync_stats = sync_stats};

const tg_run_backend *tg_run_local_backend(void) { return &LOCAL; }
