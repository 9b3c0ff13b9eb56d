/* A training run on the job's processes (dist.h: tg_dist_run_backend):
 * train/run.h's tg_run_backend over this layer's collectives and
 * gradient buckets.
 *
 * Three ways a run stops when something is wrong, by where it happens:
 *   - before training, every process goes through the same stages and
 *     then agrees (agree): if any failed, every one returns the first
 *     failing rank's message, so that rank 0 prints it once;
 *   - same: every process's run (settings, data, vocabulary, weights,
 *     checkpoint) must be rank 0's; a difference is one message naming
 *     the rank and the field;
 *   - during training a process that fails on its own (a NaN, a file, out
 *     of memory) cannot wait for the others, which are inside a
 *     collective: the program ends the job (abort: MPI_Abort). */
#include "dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../train/train.h"

struct tg_run_sync {
    tg_dist_grads *g;
    tg_params *p;
};

static int agree(void *ctx, bool failed, char *msg, size_t len, bool *all)
{
    (void)ctx;
    int64_t n = failed;
    tg_dist_allreduce_i64(&n, 1, TG_DIST_SUM);
    if (all) *all = n == tg_dist_size();
    if (!n) return -1;
    return tg_dist_first_failure(failed, msg, len);
}

/* rank 0's pairs, "name\0value\0...", against this process's: the first
 * that differs into msg ("" when none does) */
static void first_difference(const char *const *kv, int n, const char *zero, size_t zlen, char *msg, size_t len)
{
    const char *z = zero, *zend = zero + zlen;
    msg[0] = 0;
    for (int i = 0; i < n; i++) {
        const char *key = kv[2 * i], *val = kv[2 * i + 1];
        if (z >= zend || strcmp(z, key)) {
            snprintf(msg, len, "its run has %s where rank 0's has %s (a different program?)", key,
                     z < zend ? z : "nothing");
            return;
        }
        z += strlen(z) + 1;
        const char *zv = z < zend ? z : "";
        z += strlen(zv) + 1;
        if (strcmp(zv, val)) {
            snprintf(msg, len,
                     "%s is %s here but %s on rank 0; every process must train the same run on the same data "
                     "and checkpoint",
                     key, val, zv);
            return;
        }
    }
}

static int same(void *ctx, const char *const *kv, int n, char *msg, size_t len)
{
    (void)ctx;
    if (tg_dist_size() == 1) return 0;
    size_t bytes = 0;
    for (int i = 0; i < 2 * n; i++) bytes += strlen(kv[i]) + 1;
    int64_t zlen = (int64_t)bytes;
    tg_dist_bcast(&zlen, sizeof zlen, 0);
    char *mine = malloc(bytes + 1), *zero = malloc((size_t)zlen + 1), here[TG_ERROR_SIZE];
    if (!mine || !zero) tg_dist_abort(1, "out of memory comparing the run with rank 0's");
    size_t at = 0;
    for (int i = 0; i < 2 * n; i++) {
        const size_t l = strlen(kv[i]) + 1;
        memcpy(mine + at, kv[i], l);
        at += l;
    }
    if (tg_dist_rank() == 0) memcpy(zero, mine, bytes);
    tg_dist_bcast(zero, (size_t)zlen, 0);
    zero[zlen] = 0;
    first_difference(kv, n, zero, (size_t)zlen, here, sizeof here);
    free(mine);
    free(zero);
    const int who = tg_dist_first_failure(*here != 0, here, sizeof here);
    if (who < 0) return 0;
    snprintf(msg, len, "rank %d: %s", who, here);
    return -1;
}

static void sum(void *ctx, double *x, int n) { (void)ctx, tg_dist_allreduce_f64(x, n, TG_DIST_SUM); }
static void max(void *ctx, int64_t *x, int n) { (void)ctx, tg_dist_allreduce_i64(x, n, TG_DIST_MAX); }
static void bcast(void *ctx, void *buf, size_t bytes, int root) { (void)ctx, tg_dist_bcast(buf, bytes, root); }
static void stop(void *ctx, const char *msg) { (void)ctx, tg_dist_abort(1, msg); }

static tg_run_sync *sync_new(void *ctx, tg_params *p, size_t bucket_bytes, bool shard, tg_error *err)
{
    (void)ctx;
    tg_run_sync *s = malloc(sizeof *s);
    if (!s) return tg_error_set(err, "run: out of memory"), NULL;
    const tg_dist_grads_config c = {.bucket_bytes = bucket_bytes, .shard = shard};
    s->p = p;
    if (!(s->g = tg_dist_grads_new(p, &c, err))) {
        free(s);
        return NULL;
    }
    return s;
}

static void sync_free(tg_run_sync *s)
{
    if (s) tg_dist_grads_free(s->g);
    free(s);
}

static void sync_range(const tg_run_sync *s, int64_t *lo, int64_t *hi) { tg_dist_grads_shard(s->g, lo, hi); }
static void *sync_grad(tg_run_sync *s) { return tg_dist_grads_shard_grad(s->g); }
static int sync_begin(tg_run_sync *s, tg_graph *g) { return tg_dist_grads_begin(s->g, g); }
static int sync_end(tg_run_sync *s) { return tg_dist_grads_end(s->g); }
static double sync_clip(tg_run_sync *s, double max_norm) { return tg_dist_grads_clip(s->g, max_norm); }
static int sync_gather_params(tg_run_sync *s) { return tg_dist_grads_gather_params(s->g); }
static int sync_gather_shard(const tg_run_sync *s, const void *part, void *full)
{
    return tg_dist_grads_gather_shard(s->g, part, full);
}

/* Under a shard the reduce-scatter left each process the summed
 * gradients of its shard only: every Muon matrix's whole summed gradient
 * into tg_params_grad on every process, each shard's part sent by the
 * process that holds it (in store order, the same collectives on every
 * process). */
static void sync_muon_grads(tg_run_sync *s, const tg_muon *m)
{
    tg_params *p = s->p;
    const size_t es = tg_dtype_size(tg_params_dtype(p));
    const int64_t n = tg_params_numel(p);
    const int R = tg_dist_size();
    int64_t lo, hi;
    tg_dist_grads_shard(s->g, &lo, &hi);
    char *grad = tg_params_grad(p), *base = tg_params_data(p);
    memcpy(grad + (size_t)lo * es, tg_dist_grads_shard_grad(s->g), (size_t)(hi - lo) * es);
    for (int i = 0; i < tg_params_count(p); i++) {
        const tg_tensor *w = tg_params_at(p, i);
        if (!tg_muon_updates(m, w)) continue;
        const int64_t a = ((char *)w->data - base) / (int64_t)es, b = a + w->numel;
        for (int r = 0; r < R; r++) {
            int64_t rl, rh;
            tg_dist_shard_range(n, r, R, &rl, &rh);
            const int64_t x = a > rl ? a : rl, y = b < rh ? b : rh;
            if (x < y) tg_dist_bcast(grad + (size_t)x * es, (size_t)(y - x) * es, r);
        }
    }
}

/* Each Muon matrix's weights (momentum false) or momentum (true: for a
 * checkpoint) from the process that updated it, to every process. */
static void sync_muon_share(tg_run_sync *s, tg_muon *m, bool momentum)
{
    tg_params *p = s->p;
    const size_t es = tg_dtype_size(tg_params_dtype(p));
    char *mom = tg_muon_momentum(m);
    int64_t at = 0; /* the matrix's offset in the momentum */
    for (int i = 0; i < tg_params_count(p); i++) {
        tg_tensor *w = tg_params_at(p, i);
        if (!tg_muon_updates(m, w)) continue;
        const int owner = tg_muon_owner(m, w, tg_dist_size());
        tg_dist_bcast(momentum ? mom + (size_t)at * es : (char *)w->data, (size_t)w->numel * es, owner);
        at += w->numel;
    }
}

/* Every process must hold the same weights (the same steps from the same
 * sums): a checksum of them compared. */
static bool sync_params_agree(tg_run_sync *s)
{
    if (tg_dist_size() == 1) return true;
    tg_params *p = s->p;
    const uint8_t *d = tg_params_data(p);
    const size_t n = (size_t)tg_params_numel(p) * tg_dtype_size(tg_params_dtype(p));
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ d[i]) * 0x100000001b3u;
    double lo = (double)(h >> 11), hi = lo; /* 53 bits: exact in a double */
    tg_dist_allreduce_f64(&lo, 1, TG_DIST_MIN);
    tg_dist_allreduce_f64(&hi, 1, TG_DIST_MAX);
    return lo == hi;
}

static double sync_probe(tg_run_sync *s, int reps) { return tg_dist_grads_probe(s->g, reps); }

static void sync_stats(const tg_run_sync *s, tg_run_sync_stats *out)
{
    tg_dist_stats st;
    tg_dist_grads_stats(s->g, &st);
    *out = (tg_run_sync_stats){.buckets = tg_dist_grads_bucket_count(s->g),
                               .bytes = st.bytes,
                               .steps = st.steps,
                               .backward_s = st.backward_s,
                               .wait_s = st.wait_s};
}

const tg_run_backend *tg_dist_run_backend(void)
{
    static tg_run_backend b = {.agree = agree,
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
    b.rank = tg_dist_rank();
    b.size = tg_dist_size();
    return &b;
}
