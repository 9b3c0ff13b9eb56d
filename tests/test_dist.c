/* dist: processes, small collectives, gradient buckets that overlap
 * backward, and ZeRO stage 1, checked on however many ranks run it.
 *
 * CTest runs it alone (one process: the fallback, where every collective
 * is a copy or nothing) and under mpirun with 2 and 3 ranks
 * (tests/mpi_run.sh; 3 ranks split the models' parameter counts with
 * remainders). Every rank checks its own results and the run fails when
 * any rank found a failure.
 *
 * A plain driver rather than Check: a Check assertion leaves its test at
 * once, and a rank that skipped the rest of a test would then meet the
 * others in the wrong collective. Here a failed check is counted and the
 * test goes on, so every rank makes the same calls.
 *
 * The reference for a reduction is computed another way: each rank's
 * gradients from a plain backward (no hook), summed with one blocking
 * allreduce of the whole buffer. The buckets must give the same sums
 * (to the rounding of a different order of addition, 1e-13), launched
 * while backward ran; a bucket started before its gradients were complete
 * would miss the earliest readers' contributions (the tied embedding's
 * lookup, the first layer's) and fail by far more. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tapegrad.h"
#include "distributed/dist.h"

static int rank, size, fails, checks;

static void expect(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void expect(bool ok, const char *fmt, ...)
{
    checks++;
    if (ok) return;
    fails++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rank %d: FAIL: ", rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* ---- processes and small collectives ------------------------------------ */

static void processes(void)
{
    expect(rank >= 0 && rank < size, "rank %d of %d", rank, size);
    expect(tg_dist_local_size() >= 1 && tg_dist_local_rank() < tg_dist_local_size() && tg_dist_local_size() <= size,
           "local rank %d of %d", tg_dist_local_rank(), tg_dist_local_size());
    const char *env = getenv("OMPI_COMM_WORLD_SIZE");
    if (env) expect(atoi(env) == size, "size %d, launcher said %s", size, env);
    expect(tg_dist_mpi_running() == (env != NULL && tg_dist_built_with_mpi()), "mpi running %d", tg_dist_mpi_running());
    tg_dist_barrier();
}

static void small_collectives(void)
{
    const double R = size, r = rank;
    double s[3] = {r + 1, -r, 0.5 * r}, mn[3], mx[3];
    memcpy(mn, s, sizeof s);
    memcpy(mx, s, sizeof s);
    expect(tg_dist_allreduce_f64(s, 3, TG_DIST_SUM) == 0, "allreduce sum");
    expect(s[0] == R * (R + 1) / 2 && s[1] == -R * (R - 1) / 2 && s[2] == R * (R - 1) / 4, "sum %g %g %g", s[0], s[1],
           s[2]);
    tg_dist_allreduce_f64(mn, 3, TG_DIST_MIN);
    tg_dist_allreduce_f64(mx, 3, TG_DIST_MAX);
    expect(mn[0] == 1 && mn[1] == -(R - 1) && mx[0] == R && mx[1] == 0, "min/max %g %g %g %g", mn[0], mn[1], mx[0],
           mx[1]);
    int64_t big[2] = {((int64_t)1 << 40) + rank, -rank};
    tg_dist_allreduce_i64(big, 2, TG_DIST_SUM);
    expect(big[0] == size * ((int64_t)1 << 40) + (int64_t)size * (size - 1) / 2, "i64 sum %lld", (long long)big[0]);
    int64_t m = 100 + rank;
    tg_dist_allreduce_i64(&m, 1, TG_DIST_MAX);
    expect(m == 100 + size - 1, "i64 max %lld", (long long)m);

    char buf[32];
    snprintf(buf, sizeof buf, "%s %d", rank == size - 1 ? "from the last" : "untouched", rank);
    char want[32];
    snprintf(want, sizeof want, "from the last %d", size - 1);
    expect(tg_dist_bcast(buf, sizeof buf, size - 1) == 0 && !strcmp(buf, want), "bcast got '%s'", buf);

    char msg[64] = "";
    expect(tg_dist_first_failure(false, msg, sizeof msg) == -1, "first_failure with none failed");
    snprintf(msg, sizeof msg, "rank %d failed", rank);
    int who = tg_dist_first_failure(rank >= size / 2, msg, sizeof msg); /* the upper half fails */
    snprintf(want, sizeof want, "rank %d failed", size / 2);
    expect(who == size / 2 && !strcmp(msg, want), "first_failure: %d '%s'", who, msg);
    char tiny[5];
    snprintf(tiny, sizeof tiny, "%s", "abcd");
    who = tg_dist_first_failure(rank == 0, tiny, 3); /* cut to msglen - 1 */
    expect(who == 0 && !strcmp(tiny, "ab"), "first_failure truncated: '%s'", tiny);
}

static void shard_ranges(void)
{
    for (int64_t n = 0; n < 50; n += 7)
        for (int R = 1; R <= 5; R++) {
            int64_t at = 0;
            bool ok = true;
            for (int r = 0; r < R; r++) {
                int64_t lo = -1, hi = -1;
                tg_dist_shard_range(n, r, R, &lo, &hi);
                ok &= lo == at && (hi - lo == n / R || hi - lo == n / R + 1) && (hi - lo == n / R + 1) == (r < n % R);
                at = hi;
            }
            expect(ok && at == n, "shards of %lld in %d", (long long)n, R);
        }
}

/* ---- models ------------------------------------------------------------- */

typedef struct net {
    tg_model m;
    bool llama;
    tg_params *p;
} net;

static net make_net(bool llama, tg_dtype dt)
{
    net n = {0};
    tg_error err = {0};
    const tg_model_config c = llama
        ? (tg_model_config){.arch = "llama",
                            .n_layer = 2,
                            .n_head = 4,
                            .n_kv_head = 2,
                            .n_embd = 16,
                            .hidden_dim = 40,
                            .block_size = 8,
                            .vocab_size = 13,
                            .rope_theta = 10000,
                            .norm_eps = 1e-5,
                            .tied = false}
        : (tg_model_config){
              .arch = "gpt", .n_layer = 2, .n_head = 2, .n_embd = 16, .block_size = 8, .vocab_size = 11, .bias = true};
    n.llama = llama;
    n.p = tg_model_init(&n.m, &c, dt, 7, &err) ? NULL : n.m.params;
    if (!n.p) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        tg_dist_abort(1, NULL);
    }
    return n;
}

static void free_net(net *n) { tg_model_release(&n->m); }

/* Forward of micro-batch k of this rank (its own ids) on g: the loss. */
static tg_tensor *forward(tg_graph *g, net *n, int k)
{
    const int B = 2, T = 8, V = n->llama ? 13 : 11;
    tg_tensor *idx = tg_tensor_new(g, TG_I32, 2, (int[]){B, T}), *tgt = tg_tensor_new(g, TG_I32, 2, (int[]){B, T});
    for (int i = 0; i < B * T; i++) {
        ((int32_t *)idx->data)[i] = (int32_t)((7 * i + 3 * rank + 5 * k + 1) % V);
        ((int32_t *)tgt->data)[i] = (int32_t)((5 * i + rank + 2 * k) % V);
    }
    return tg_model_loss(g, &n->m, idx, tgt);
}

static double at(const tg_params *p, const void *buf, int64_t i)
{
    return tg_params_dtype(p) == TG_F32 ? (double)((const float *)buf)[i] : ((const double *)buf)[i];
}

/* An FNV-1a checksum of bytes, as a double that allreduce can compare. */
static double checksum(const void *buf, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++) h = (h ^ ((const uint8_t *)buf)[i]) * 0x100000001b3u;
    return (double)(h >> 12);
}

/* True when x is the same on every rank. */
static bool same_everywhere(double x)
{
    double lo = x, hi = x;
    tg_dist_allreduce_f64(&lo, 1, TG_DIST_MIN);
    tg_dist_allreduce_f64(&hi, 1, TG_DIST_MAX);
    return lo == hi;
}

/* The reference: each rank's gradients of `micro` micro-batches by plain
 * backward, summed over ranks by one allreduce of a copy. Returns a
 * malloc'd buffer of numel elements (f64); the store's gradients are left
 * zeroed. */
static double *reference_sum(tg_graph *g, net *n, int micro)
{
    const int64_t N = tg_params_numel(n->p);
    tg_params_zero_grad(n->p);
    for (int k = 0; k < micro; k++) {
        tg_tensor *loss = forward(g, n, k);
        if (tg_graph_backward(g, loss)) fprintf(stderr, "rank %d: %s\n", rank, tg_graph_error(g));
        tg_graph_reset(g);
    }
    double *ref = malloc((size_t)N * sizeof *ref);
    for (int64_t i = 0; i < N; i++) ref[i] = at(n->p, tg_params_grad(n->p), i);
    tg_dist_allreduce_f64(ref, (int)N, TG_DIST_SUM);
    tg_params_zero_grad(n->p);
    return ref;
}

/* The same gradients through d: micro - 1 micro-batches that only
 * accumulate, then the last one's backward between begin and end. */
static void bucketed(tg_graph *g, net *n, tg_dist_grads *d, int micro)
{
    for (int k = 0; k < micro; k++) {
        tg_tensor *loss = forward(g, n, k);
        bool last = k == micro - 1;
        if (last) expect(tg_dist_grads_begin(d, g) == 0, "begin");
        if (tg_graph_backward(g, loss)) fprintf(stderr, "rank %d: %s\n", rank, tg_graph_error(g));
        if (last) expect(tg_dist_grads_end(d) == 0, "end");
        tg_graph_reset(g);
    }
}

/* elements [lo, hi) of buf (hi - lo elements of p's dtype) against
 * ref[lo, hi) within tol times the largest |ref| */
static void expect_close(const char *what, const tg_params *p, const void *buf, const double *ref, int64_t lo,
                         int64_t hi, double tol)
{
    double scale = 0, worst = 0;
    int64_t where = -1;
    for (int64_t i = lo; i < hi; i++) scale = fmax(scale, fabs(ref[i]));
    for (int64_t i = lo; i < hi; i++) {
        double e = fabs(at(p, buf, i - lo) - ref[i]);
        if (e > worst) worst = e, where = i;
    }
    expect(worst <= tol * fmax(scale, 1e-300), "%s: element %lld differs by %.3g (scale %.3g, tol %.1g)", what,
           (long long)where, worst, scale, tol);
}

static void buckets(bool llama, tg_dtype dt)
{
    const char *name = llama ? "llama" : "gpt";
    const double tol = dt == TG_F64 ? 1e-13 : 1e-6;
    net n = make_net(llama, dt);
    tg_graph *g = tg_graph_new();
    const int64_t N = tg_params_numel(n.p);
    tg_error err = {0};
    for (int micro = 1; micro <= 2; micro++) {
        double *ref = reference_sum(g, &n, micro);
        tg_dist_grads *d = tg_dist_grads_new(n.p, &(tg_dist_grads_config){.bucket_bytes = 1500}, &err);
        expect(d != NULL, "%s: %s", name, err.msg);
        if (!d) return;
        /* buckets: whole parameters, back to back from the end of the buffer */
        const int nb = tg_dist_grads_bucket_count(d);
        int64_t end = N;
        int pend = tg_params_count(n.p);
        bool layout = nb > 3;
        for (int i = 0; i < nb; i++) {
            tg_dist_bucket b;
            tg_dist_grads_bucket(d, i, &b);
            layout &= b.offset + b.numel == end && b.first_param + b.n_params == pend && b.n_params >= 1;
            end = b.offset;
            pend = b.first_param;
        }
        expect(layout && end == 0 && pend == 0, "%s: %d buckets do not tile the buffer from its end", name, nb);

        bucketed(g, &n, d, micro);
        expect_close(name, n.p, tg_params_grad(n.p), ref, 0, N, tol);
        expect(same_everywhere(checksum(tg_params_grad(n.p), (size_t)N * tg_dtype_size(dt))),
               "%s: the summed gradients differ between ranks", name);
        tg_dist_stats s;
        tg_dist_grads_stats(d, &s);
        expect(s.steps == 1 && s.bytes == N * (int64_t)tg_dtype_size(dt), "%s: stats %lld steps", name,
               (long long)s.steps);
        if (size > 1) {
            /* every bucket but the one holding the embeddings (read by the
             * first nodes) started while backward ran, in order */
            expect(s.last_in_backward >= nb - 1, "%s: %d of %d buckets started during backward", name,
                   s.last_in_backward, nb);
            bool ordered = true;
            double prev = -1;
            for (int i = 0; i < nb; i++) {
                tg_dist_bucket b;
                tg_dist_grads_bucket(d, i, &b);
                ordered &= b.launched >= prev && b.done >= b.launched && b.ready_node >= 0;
                prev = b.launched;
            }
            expect(ordered, "%s: buckets started out of order", name);
            expect(tg_dist_grads_probe(d, 2) > 0, "%s: probe", name);
        } else {
            expect(tg_dist_grads_probe(d, 2) == 0, "%s: probe on one process", name);
        }
        tg_dist_grads_free(d);
        free(ref);
    }
    tg_graph_free(g);
    free_net(&n);
}

/* ZeRO stage 1: reduce-scatter, shard AdamW, all-gather, clipping and
 * gathering the moments, against one AdamW over the whole reference. */
static void zero1(bool llama, tg_dtype dt)
{
    const char *name = llama ? "llama zero-1" : "gpt zero-1";
    const double tol = dt == TG_F64 ? 1e-13 : 1e-6;
    const size_t es = tg_dtype_size(dt);
    net n = make_net(llama, dt), whole = make_net(llama, dt);
    tg_graph *g = tg_graph_new();
    const int64_t N = tg_params_numel(n.p);
    if (rank == 0 && size > 1)
        printf("%s: %lld parameters in %d shards of %lld or %lld\n", name, (long long)N, size, (long long)(N / size),
               (long long)(N / size + (N % size != 0)));
    tg_error err = {0};
    tg_dist_grads *d = tg_dist_grads_new(n.p, &(tg_dist_grads_config){.bucket_bytes = 2000, .shard = true}, &err);
    expect(d != NULL, "%s: %s", name, err.msg);
    if (!d) return;
    int64_t lo, hi;
    tg_dist_grads_shard(d, &lo, &hi);
    int64_t want_lo, want_hi;
    tg_dist_shard_range(N, rank, size, &want_lo, &want_hi);
    expect(lo == want_lo && hi == want_hi, "%s: shard [%lld, %lld)", name, (long long)lo, (long long)hi);
    tg_adamw_config ac = {0.9, 0.95, 1e-8, 0.1};
    tg_adamw *os = tg_adamw_new_shard(n.p, &ac, lo, hi, &err);
    tg_adamw *ow = tg_adamw_new(whole.p, &ac, &err);
    for (int step = 0; step < 3; step++) {
        double *ref = reference_sum(g, &n, 2);
        bucketed(g, &n, d, 2);
        void *sg = tg_dist_grads_shard_grad(d);
        expect_close(name, n.p, sg, ref, lo, hi, tol);
        /* the same input on both sides: the reference, in the store's dtype */
        for (int64_t i = 0; i < N; i++) {
            if (dt == TG_F32) ((float *)tg_params_grad(whole.p))[i] = (float)ref[i];
            else ((double *)tg_params_grad(whole.p))[i] = ref[i];
        }
        memcpy(sg, (char *)tg_params_grad(whole.p) + (size_t)lo * es, (size_t)(hi - lo) * es);
        /* clipping by the global norm: every rank's sum of squares of its shard */
        double nw = tg_clip_grad_norm(whole.p, 0.05), ns = tg_dist_grads_clip(d, 0.05);
        expect(nw > 0.05 && fabs(ns - nw) <= (dt == TG_F64 ? 1e-13 : 1e-6) * nw,
               "%s: global norm %.17g, one process's %.17g", name, ns, nw);
        expect(same_everywhere(ns), "%s: the norm differs between ranks", name);
        for (int64_t i = lo; i < hi; i++) ref[i] = at(whole.p, tg_params_grad(whole.p), i);
        expect_close("zero-1 clipped shard", n.p, sg, ref, lo, hi, dt == TG_F64 ? 1e-14 : 1e-6);
        /* the update from identical gradients must be one AdamW's, bit for bit */
        memcpy(sg, (char *)tg_params_grad(whole.p) + (size_t)lo * es, (size_t)(hi - lo) * es);
        tg_adamw_step_grad(os, 1e-2, sg, NULL);
        tg_adamw_step(ow, 1e-2, NULL);
        expect(tg_dist_grads_gather_params(d) == 0, "gather params");
        expect(memcmp(tg_params_data(n.p), tg_params_data(whole.p), (size_t)N * es) == 0,
               "%s: step %d: the gathered weights differ from one AdamW's", name, step);
        tg_params_zero_grad(whole.p);
        free(ref);
    }
    /* the moments gathered on rank 0 are the whole AdamW's */
    void *m = rank == 0 ? malloc((size_t)N * es) : NULL, *v = rank == 0 ? malloc((size_t)N * es) : NULL;
    expect(tg_dist_grads_gather_shard(d, tg_adamw_m(os), m) == 0 &&
               tg_dist_grads_gather_shard(d, tg_adamw_v(os), v) == 0,
           "gather shard");
    if (rank == 0)
        expect(!memcmp(m, tg_adamw_m(ow), (size_t)N * es) && !memcmp(v, tg_adamw_v(ow), (size_t)N * es),
               "%s: the gathered moments differ from one AdamW's", name);
    free(m);
    free(v);
    tg_adamw_free(os);
    tg_adamw_free(ow);
    tg_dist_grads_free(d);
    tg_graph_free(g);
    free_net(&n);
    free_net(&whole);
}

int main(int argc, char **argv)
{
    tg_error err = {0};
    if (tg_dist_init(&argc, &argv, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    rank = tg_dist_rank();
    size = tg_dist_size();
    processes();
    small_collectives();
    shard_ranges();
    for (int llama = 0; llama <= 1; llama++) {
        buckets(llama, TG_F64);
        buckets(llama, TG_F32);
        zero1(llama, TG_F64);
        zero1(llama, TG_F32);
    }
    int64_t bad = fails;
    tg_dist_allreduce_i64(&bad, 1, TG_DIST_SUM);
    if (rank == 0)
        printf("test_dist: %d ranks%s, %d checks per rank, %lld failed\n", size,
               tg_dist_built_with_mpi() ? "" : " (built without MPI)", checks, (long long)bad);
    tg_dist_finalize();
    return bad ? 1 : 0;
}
