/* The C API keeps its promise for every public function: given NULL, an
 * out-of-range value or a size that overflows, it neither crashes nor
 * reads or writes out of bounds (CI runs this under AddressSanitizer and
 * UndefinedBehaviorSanitizer), and it returns what its header documents,
 * with a message where the function has a way to give one.
 *
 * One table, CASES: each row names the call and its bad input, the
 * documented result and a substring of the expected message, and points
 * at a one-line function that makes the call. A new public function joins
 * by adding a row (and its function): tests/check_api_rows.sh (CTest
 * api_rows) fails for a TG_API function of the public headers that has
 * no row here, unless NO_ROW below lists it with the reason. */
#include "tg_test.h"

#include <limits.h>

#include "distributed/dist.h"

/* What every case may use: a live graph, a small store and optimizers on
 * it, a writer, an err buffer for the call, and the result as text. */
typedef struct fx {
    tg_graph *g;
    tg_params *p; /* f32, one parameter "w" (2,3) */
    tg_tensor *x; /* f32 (2,3) on g, requires grad */
    tg_tensor *ids; /* i32 (2,3) on g, zeros */
    tg_st_writer *w;
    tg_sgd *sgd;
    tg_adamw *adamw;
    tg_error err; /* the message the call left (err, or copied from where it keeps one) */
    char got[160]; /* what the call returned, as text */
} fx;

static void fx_open(fx *f)
{
    memset(f, 0, sizeof *f);
    f->g = tg_graph_new();
    f->p = tg_params_new(TG_F32, NULL);
    tg_params_add(f->p, "w", TT_SHAPE(2, 3), NULL);
    f->x = tg_tensor_new(f->g, TG_F32, TT_SHAPE(2, 3));
    tg_tensor_set_requires_grad(f->g, f->x, true);
    f->ids = tg_tensor_new(f->g, TG_I32, TT_SHAPE(2, 3));
    f->w = tg_st_writer_new();
    f->sgd = tg_sgd_new(f->p, 0.9, 0, NULL);
    f->adamw = tg_adamw_new(f->p, NULL, NULL);
    if (!f->g || !f->p || !f->x || !f->ids || !f->w || !f->sgd || !f->adamw) abort();
    snprintf(f->got, sizeof f->got, "returns"); /* what a void function gives */
}

static void fx_close(fx *f)
{
    tg_adamw_free(f->adamw);
    tg_sgd_free(f->sgd);
    tg_st_writer_free(f->w);
    tg_params_free(f->p);
    tg_graph_free(f->g);
}

/* the result as text */
static void ptr(fx *f, const void *p) { snprintf(f->got, sizeof f->got, "%s", p ? "non-NULL" : "NULL"); }
static void num(fx *f, double v) { snprintf(f->got, sizeof f->got, "%.17g", v); }
static void flag(fx *f, bool b) { snprintf(f->got, sizeof f->got, "%s", b ? "true" : "false"); }
static void text(fx *f, const char *s) { snprintf(f->got, sizeof f->got, "%s", s ? s : "(NULL)"); }
/* a message kept somewhere other than err */
static void note(fx *f, const char *m) { snprintf(f->err.msg, sizeof f->err.msg, "%s", m ? m : ""); }
/* the tg_error of a call that takes one: fresh() empties it for the call, and
 * the row copies its message with note(f, te.msg) */
static tg_error te;
static tg_error *fresh(void) { return memset(&te, 0, sizeof te); }

static const int S23[2] = {2, 3};
static char buf[128]; /* for the string functions */
static tg_rng rng;
static tg_gradcheck_result res;

static tg_tensor *gc_sum(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return tg_sum_all(g, in[0]);
}
static void no_backward(tg_graph *g, tg_node *n)
{
    (void)g;
    (void)n;
}

/* tg_parallel_for's parts, each written by the thread that runs it */
typedef struct parts {
    int64_t lo[TG_MAX_THREADS], hi[TG_MAX_THREADS];
    int inner[TG_MAX_THREADS];
} parts;
static void record_part(void *ctx, int64_t lo, int64_t hi)
{
    parts *p = ctx;
    p->lo[tg_parallel_part()] = lo;
    p->hi[tg_parallel_part()] = hi;
}
static void set_threads_inside(void *ctx, int64_t lo, int64_t hi)
{
    (void)lo, (void)hi;
    ((parts *)ctx)->inner[tg_parallel_part()] = tg_set_num_threads(3);
}

/* [0, INT64_MAX) over 2 threads: the first and last parts' bounds as
 * text (part_start once formed n * k, which overflows) */
static void parallel_huge(fx *f)
{
    parts p;
    memset(&p, 0, sizeof p);
    tg_set_num_threads(2);
    tg_parallel_for(INT64_MAX, 1, record_part, &p);
    int n = tg_num_threads();
    tg_set_num_threads(1);
    snprintf(f->got, sizeof f->got, "%d threads: [%lld, %lld) ... [%lld, %lld)", n, (long long)p.lo[0],
             (long long)p.hi[0], (long long)p.lo[TG_PARALLEL_MAX_PARTS - 1],
             (long long)p.hi[TG_PARALLEL_MAX_PARTS - 1]);
}

/* tg_set_num_threads(3) from inside both parts of a 2-thread loop */
static void parallel_set_inside(fx *f)
{
    parts p;
    memset(&p, 0, sizeof p);
    tg_set_num_threads(2);
    tg_parallel_for(2, 1, set_threads_inside, &p);
    int n = tg_num_threads();
    tg_set_num_threads(1);
    snprintf(f->got, sizeof f->got, "inside %d %d, after %d", p.inner[0], p.inner[1], n);
}

/* the kv cache overflow of the issue: refused, and nothing allocated */
static void kv_overflow(fx *f, int batch, int n_head, int head_dim, int max_len)
{
    tg_kv_cache c;
    uint64_t before = tg_alloc_calls();
    int rc = tg_kv_cache_init(&c, TG_F32, batch, n_head, head_dim, max_len, &f->err);
    snprintf(f->got, sizeof f->got, "%d, %llu allocations, k %s", rc, (unsigned long long)(tg_alloc_calls() - before),
             c.k ? "set" : "NULL");
}

/* A tensor f32 (3) of g made before a reset of g (its memory now holds
 * the fixture's x and ids, made again). */
static tg_tensor *stale(fx *f)
{
    tg_tensor *t = tg_tensor_new(f->g, TG_F32, TT_SHAPE(3));
    tg_graph_reset(f->g);
    f->x = tg_tensor_new(f->g, TG_F32, TT_SHAPE(2, 3));
    tg_tensor_set_requires_grad(f->g, f->x, true);
    f->ids = tg_tensor_new(f->g, TG_I32, TT_SHAPE(2, 3));
    if (!t || !f->x || !f->ids) abort();
    return t;
}

/* The fixture's writer saved to tt_dir/never.safetensors: the message of
 * its first failed add, which the save reports */
static void saved_note(fx *f) { tg_st_writer_save(f->w, tt_path("never.safetensors"), &f->err); }

/* The fixture's writer, after the adds, saved to tt_dir/name; its path */
static const char *st_saved(fx *f, const char *name)
{
    const char *path = tt_path(name);
    if (tg_st_writer_save(f->w, path, NULL)) abort();
    return path;
}

/* A safetensors file of metadata k = v and one tensor, loaded */
static tg_st_file *st_kv(fx *f)
{
    static const float d[1] = {0};
    if (tg_st_writer_add_meta(f->w, "k", "v") || tg_st_writer_add(f->w, "t", "F32", 1, (int64_t[]){1}, d)) abort();
    tg_st_file *st = tg_st_load(st_saved(f, "kv.safetensors"), NULL);
    if (!st) abort();
    return st;
}

/* a small Llama's config (2 heads sharing 1 kv head of size 4) for the cases that need one */
static tg_model_config llama_cfg(void)
{
    return (tg_model_config){.arch = "llama",
                             .n_layer = 1,
                             .n_head = 2,
                             .n_kv_head = 1,
                             .n_embd = 8,
                             .hidden_dim = 16,
                             .block_size = 4,
                             .vocab_size = 5,
                             .rope_theta = 10000,
                             .norm_eps = 1e-5,
                             .tied = true};
}

/* A TG_TOK_BPE tokenizer of 260 ids (3 specials, 256 bytes, the merge
 * "ab"), made by the first case that needs it and freed by main. */
static tg_tokenizer *tok_ab;
static const tg_tokenizer *tok(void)
{
    if (!tok_ab) tok_ab = tg_bpe_train("ab ab ab ab", 11, &(tg_bpe_options){.vocab_size = 260}, NULL);
    if (!tok_ab || tg_tok_vocab_size(tok_ab) != 260) abort();
    return tok_ab;
}

/* tt_dir/name holding n bytes of data; its path */
static const char *file_of(const char *name, const void *data, size_t n)
{
    const char *path = tt_path(name);
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(data, 1, n, fp) != n || fclose(fp)) abort();
    return path;
}

/* ---- the calls ----------------------------------------------------------- */

/* core/tensor.h */
static void c_dtype_size(fx *f) { num(f, (double)tg_dtype_size((tg_dtype)9)); }
static void c_dtype_is_float(fx *f) { flag(f, tg_dtype_is_float((tg_dtype)9)); }
static void c_dtype_name(fx *f) { text(f, tg_dtype_name((tg_dtype)9)); }
static void c_shape_str_null(fx *f) { text(f, tg_shape_str(NULL, buf, sizeof buf)); }
static void c_shape_str_nobuf(fx *f) { ptr(f, tg_shape_str(f->x, NULL, 16)); }
static void c_index_str_k_big(fx *f) { text(f, tg_index_str(f->x, 3, 0, buf, sizeof buf)); }
static void c_index_str_k_neg(fx *f) { text(f, tg_index_str(f->x, -1, 0, buf, sizeof buf)); }
static void c_index_str_flat(fx *f) { text(f, tg_index_str(f->x, 2, 6, buf, sizeof buf)); }
static void c_index_str_null(fx *f) { text(f, tg_index_str(NULL, 0, 0, buf, sizeof buf)); }
static void c_index_str_nobuf(fx *f) { ptr(f, tg_index_str(f->x, 1, 0, NULL, 8)); }
static void c_get_null(fx *f) { num(f, tg_tensor_get(NULL, 0)); }
static void c_get_past(fx *f) { num(f, tg_tensor_get(f->x, 6)); }
static void c_get_neg(fx *f) { num(f, tg_tensor_get(f->x, -1)); }
static void c_set_null(fx *f) { num(f, tg_tensor_set(NULL, 0, 1)); }
static void c_set_past(fx *f) { num(f, tg_tensor_set(f->x, 6, 1)); }
static void c_set_stale(fx *f) { num(f, tg_tensor_set(stale(f), 0, 1)); }
static void c_item_null(fx *f) { num(f, tg_tensor_item(NULL)); }
static void c_item_many(fx *f) { num(f, tg_tensor_item(f->x)); }
static void c_same_shape_nulls(fx *f) { flag(f, tg_tensor_same_shape(NULL, NULL)); }
static void c_same_shape_one(fx *f) { flag(f, tg_tensor_same_shape(f->x, NULL)); }

/* core/graph.h */
static void c_reset(fx *f)
{
    (void)f;
    tg_graph_reset(NULL);
}
static void c_error(fx *f) { ptr(f, tg_graph_error(NULL)); }
static void c_clear_error(fx *f)
{
    (void)f;
    tg_graph_clear_error(NULL);
}
static void c_set_grad(fx *f) { flag(f, tg_graph_set_grad_enabled(NULL, true)); }
static void c_grad_enabled(fx *f) { flag(f, tg_graph_grad_enabled(NULL)); }
static void c_set_training(fx *f)
{
    (void)f;
    tg_graph_set_training(NULL, false);
}
static void c_training(fx *f) { flag(f, tg_graph_training(NULL)); }
static void c_seed(fx *f)
{
    (void)f;
    tg_graph_seed(NULL, 1);
}
static void c_rng(fx *f) { ptr(f, tg_graph_rng(NULL)); }
static void c_tensor_new_nog(fx *f) { ptr(f, tg_tensor_new(NULL, TG_F32, 2, S23)); }
static void c_tensor_new_dtype(fx *f) { ptr(f, tg_tensor_new(f->g, (tg_dtype)9, 2, S23)); }
static void c_tensor_new_noshape(fx *f) { ptr(f, tg_tensor_new(f->g, TG_F32, 2, NULL)); }
static void c_tensor_new_ndim(fx *f) { ptr(f, tg_tensor_new(f->g, TG_F32, 5, (int[]){1, 1, 1, 1, 1})); }
static void c_tensor_new_huge(fx *f) { ptr(f, tg_tensor_new(f->g, TG_F32, 3, (int[]){1 << 20, 1 << 20, 1 << 20})); }
static void c_tensor_new_wide(fx *f) { ptr(f, tg_tensor_new(f->g, TG_F32, 3, (int[]){1 << 20, 1 << 20, INT_MAX})); }
static void c_tensor_new_zero(fx *f) { ptr(f, tg_tensor_new(f->g, TG_F32, 1, (int[]){0})); }
static void c_tensor_from_nodata(fx *f) { ptr(f, tg_tensor_from(f->g, TG_F32, 2, S23, NULL)); }
static void c_scalar_i32(fx *f) { ptr(f, tg_scalar(f->g, TG_I32, 1)); }
static void c_scalar_nog(fx *f) { ptr(f, tg_scalar(NULL, TG_F32, 1)); }
static void c_rg_nog(fx *f) { num(f, tg_tensor_set_requires_grad(NULL, f->x, true)); }
static void c_rg_null(fx *f) { num(f, tg_tensor_set_requires_grad(f->g, NULL, true)); }
static void c_rg_i32(fx *f) { num(f, tg_tensor_set_requires_grad(f->g, f->ids, true)); }
static void c_rg_nograph(fx *f)
{
    float d[2] = {0};
    tg_tensor t = {.dtype = TG_F32, .ndim = 1, .shape = {2, 1, 1, 1}, .numel = 2, .data = d, .is_leaf = true};
    num(f, tg_tensor_set_requires_grad(f->g, &t, true));
}
static void c_backward_nog(fx *f) { num(f, tg_graph_backward(NULL, f->x)); }
static void c_backward_null(fx *f) { num(f, tg_graph_backward(f->g, NULL)); }
static void c_backward_many(fx *f) { num(f, tg_graph_backward(f->g, tg_exp(f->g, f->x))); }
static void c_backward_noseed(fx *f) { num(f, tg_graph_backward_seeded(f->g, tg_exp(f->g, f->x), NULL)); }
static void c_tape_len(fx *f) { num(f, tg_graph_tape_len(NULL)); }
static void c_arena_capacity(fx *f) { num(f, (double)tg_graph_arena_capacity(NULL)); }
static void c_arena_used(fx *f) { num(f, (double)tg_graph_arena_used(NULL)); }
static void c_backward_stale(fx *f) { num(f, tg_graph_backward(f->g, stale(f))); }
static void c_rg_stale(fx *f) { num(f, tg_tensor_set_requires_grad(f->g, stale(f), true)); }
static void c_get_stale(fx *f) { num(f, tg_tensor_get(stale(f), 0)); }
static void c_graph_free(fx *f)
{
    (void)f;
    tg_graph_free(NULL);
}
static float wrap_data[6];
static void c_wrap_nodata(fx *f) { ptr(f, tg_tensor_wrap(f->g, TG_F32, 2, S23, NULL)); }
static void c_wrap_dtype(fx *f) { ptr(f, tg_tensor_wrap(f->g, (tg_dtype)9, 2, S23, wrap_data)); }
static void c_wrap_ndim(fx *f) { ptr(f, tg_tensor_wrap(f->g, TG_F32, 5, (int[]){1, 1, 1, 1, 1}, wrap_data)); }
static void c_wrap_huge(fx *f) { ptr(f, tg_tensor_wrap(f->g, TG_F32, 2, (int[]){INT_MAX, INT_MAX}, wrap_data)); }
static void c_wrap_nog(fx *f) { ptr(f, tg_tensor_wrap(NULL, TG_F32, 2, S23, wrap_data)); }

/* core/op.h */
static void c_fail_nog(fx *f) { ptr(f, tg_fail(NULL, "my_op: %s", "bad")); }
static void c_begin_nog(fx *f) { flag(f, tg_op_begin(NULL, "my_op", 1, &f->x)); }
static void c_begin_noin(fx *f) { flag(f, tg_op_begin(f->g, "my_op", 2, NULL)); }
static void c_begin_null(fx *f) { flag(f, tg_op_begin(f->g, "my_op", 2, (tg_tensor *[]){f->x, NULL})); }
static void c_check_float(fx *f) { flag(f, tg_op_check_float(f->g, "my_op", "x", NULL)); }
static void c_check_dtype(fx *f) { flag(f, tg_op_check_same_dtype(f->g, "my_op", f->x, NULL)); }
static void c_op_output(fx *f) { ptr(f, tg_op_output(NULL, TG_F32, 2, S23)); }
static void c_arena_alloc_nog(fx *f) { ptr(f, tg_arena_alloc(NULL, 64)); }
static void c_arena_zalloc_nog(fx *f) { ptr(f, tg_arena_zalloc(NULL, 64)); }
static void c_arena_alloc_huge(fx *f) { ptr(f, tg_arena_alloc(f->g, SIZE_MAX)); }
static void c_record_nog(fx *f) { ptr(f, tg_op_record(NULL, "my_op", no_backward, f->x, 1, &f->x)); }
static void c_record_noout(fx *f) { ptr(f, tg_op_record(f->g, "my_op", no_backward, NULL, 1, &f->x)); }
static void c_record_nobw(fx *f)
{
    tg_tensor *y = tg_op_output(f->g, TG_F32, 2, S23);
    ptr(f, tg_op_record(f->g, "my_op", NULL, y, 1, &f->x));
}
static void c_begin_stale(fx *f) { flag(f, tg_op_begin(f->g, "my_op", 1, (tg_tensor *[]){stale(f)})); }
static void c_live_stale(fx *f) { flag(f, tg_op_check_live(f->g, "my_op", 2, (tg_tensor *[]){NULL, stale(f)})); }
static void c_live_nog(fx *f) { flag(f, tg_op_check_live(NULL, "my_op", 1, &f->x)); }
static void c_view_null(fx *f) { ptr(f, tg_op_view(f->g, NULL)); }
static void c_needs_grad(fx *f) { flag(f, tg_needs_grad(f->g, NULL)); }
static void c_grad(fx *f) { ptr(f, tg_grad(f->g, NULL)); }
static void c_grad_store_null(fx *f)
{
    bool s;
    ptr(f, tg_grad_store(f->g, NULL, &s));
}
static void c_grad_store_nostore(fx *f) { ptr(f, tg_grad_store(f->g, f->x, NULL)); }
static void c_broadcast(fx *f)
{
    tg_bcast bc;
    flag(f, tg_broadcast(NULL, f->x, &bc));
}
static void c_broadcast_nobc(fx *f) { flag(f, tg_broadcast(f->x, f->x, NULL)); }
static void c_broadcast_to_ndim(fx *f)
{
    int64_t s[4];
    flag(f, tg_broadcast_to(f->x, 5, (int[]){1, 1, 1, 2, 3}, s));
}
static void c_broadcast_to_noshape(fx *f)
{
    int64_t s[4];
    flag(f, tg_broadcast_to(f->x, 2, NULL, s));
}
static void c_broadcast_to_null(fx *f)
{
    int64_t s[4];
    flag(f, tg_broadcast_to(NULL, 2, S23, s));
}

/* core/params.h */
static void c_params_new_dtype(fx *f) { ptr(f, tg_params_new((tg_dtype)9, &f->err)); }
static void c_params_new_noerr(fx *f) { ptr(f, tg_params_new(TG_I32, NULL)); }
static void c_params_add_nop(fx *f) { ptr(f, tg_params_add(NULL, "w", 2, S23, &f->err)); }
static void c_params_add_noname(fx *f) { ptr(f, tg_params_add(f->p, NULL, 2, S23, &f->err)); }
static void c_params_add_noshape(fx *f) { ptr(f, tg_params_add(f->p, "v", 2, NULL, &f->err)); }
static void c_params_add_huge(fx *f) { ptr(f, tg_params_add(f->p, "v", 2, (int[]){1 << 30, 1 << 30}, &f->err)); }
static void c_params_add_noerr(fx *f) { ptr(f, tg_params_add(f->p, "w", 2, S23, NULL)); }
static void c_params_get_nop(fx *f) { ptr(f, tg_params_get(NULL, "w")); }
static void c_params_get_noname(fx *f) { ptr(f, tg_params_get(f->p, NULL)); }
static void c_params_count(fx *f) { num(f, tg_params_count(NULL)); }
static void c_params_at_nop(fx *f) { ptr(f, tg_params_at(NULL, 0)); }
static void c_params_at_neg(fx *f) { ptr(f, tg_params_at(f->p, -1)); }
static void c_params_at_past(fx *f) { ptr(f, tg_params_at(f->p, 1)); }
static void c_params_dtype(fx *f) { num(f, (int)tg_params_dtype(NULL)); }
static void c_params_numel(fx *f) { num(f, (double)tg_params_numel(NULL)); }
static void c_params_data(fx *f) { ptr(f, tg_params_data(NULL)); }
static void c_params_grad(fx *f) { ptr(f, tg_params_grad(NULL)); }
static void c_params_zero_grad(fx *f)
{
    (void)f;
    tg_params_zero_grad(NULL);
}
static void c_params_free(fx *f)
{
    (void)f;
    tg_params_free(NULL);
}

/* core/rng.h */
static void c_rng_seed(fx *f)
{
    (void)f;
    tg_rng_seed(NULL, 1, 2);
}
static void c_rng_u32(fx *f) { num(f, tg_rng_u32(NULL)); }
static void c_rng_below_zero(fx *f)
{
    tg_rng_seed(&rng, 1, 2);
    num(f, tg_rng_below(&rng, 0));
}
static void c_rng_below_nor(fx *f) { num(f, tg_rng_below(NULL, 5)); }
static void c_rng_uniform(fx *f) { num(f, tg_rng_uniform(NULL)); }
static void c_rng_normal(fx *f) { num(f, tg_rng_normal(NULL)); }
static void c_rng_fill_uniform(fx *f)
{
    tg_rng_fill_uniform(NULL, f->x, 0, 1);
    num(f, tg_tensor_get(f->x, 0));
}
static void c_rng_fill_stale(fx *f)
{
    tg_tensor *t = stale(f), *u = tg_tensor_new(f->g, TG_F32, TT_SHAPE(3)); /* u: where t's data was */
    tg_rng_seed(&rng, 1, 2);
    tg_rng_fill_uniform(&rng, t, 1, 2);
    if (u->data == t->data) num(f, tg_tensor_get(u, 0));
    else text(f, "(the arena did not put u where t was: make this case reach t's memory again)");
}
static void c_rng_fill_normal(fx *f)
{
    (void)f;
    tg_rng_fill_normal(&rng, NULL, 0, 1);
}
static void c_rng_to_string_nor(fx *f) { num(f, tg_rng_to_string(NULL, buf, sizeof buf)); }
static void c_error_set_null(fx *f) { num(f, tg_error_set(NULL, "x %d", 1)); }
static void c_error_set_nofmt(fx *f)
{
    tg_error e = {"kept"};
    num(f, tg_error_set(&e, NULL));
    note(f, e.msg);
}
static void c_error_set_long(fx *f)
{
    static tg_error e;
    static char big[2 * TG_ERROR_SIZE];
    memset(big, 'a', sizeof big - 1);
    tg_error_set(&e, "%s", big);
    num(f, (double)strlen(e.msg));
}
static void c_error_prefix_null(fx *f) { num(f, tg_error_prefix(NULL, "p")); }
static void c_error_prefix(fx *f)
{
    tg_error e = {0};
    tg_error_set(&e, "bad %s", "key");
    num(f, tg_error_prefix(&e, "file.bin"));
    note(f, e.msg);
}
static void c_error_failed_null(fx *f) { flag(f, tg_error_failed(NULL)); }
static void c_rng_to_string_short(fx *f)
{
    char small[8];
    tg_rng_seed(&rng, 1, 2);
    num(f, tg_rng_to_string(&rng, small, sizeof small) * 100 + (int)strlen(small)); /* the length it needs, cut */
}
static void c_rng_from_string_nos(fx *f) { num(f, tg_rng_from_string(&rng, NULL, &f->err)); }
static void c_rng_from_string_bad(fx *f) { num(f, tg_rng_from_string(&rng, "12:34", &f->err)); }

/* core/gradcheck.h */
static void c_gc_nores(fx *f) { flag(f, tg_gradcheck(gc_sum, NULL, 1, &f->x, NULL, NULL)); }
static void c_gc_nof(fx *f)
{
    flag(f, tg_gradcheck(NULL, NULL, 1, &f->x, NULL, &res));
    note(f, res.message);
}
static void c_gc_noin(fx *f)
{
    flag(f, tg_gradcheck(gc_sum, NULL, 1, NULL, NULL, &res));
    note(f, res.message);
}
static void c_gc_negn(fx *f)
{
    flag(f, tg_gradcheck(gc_sum, NULL, -1, &f->x, NULL, &res));
    note(f, res.message);
}
static void c_gc_stale(fx *f)
{
    flag(f, tg_gradcheck(gc_sum, NULL, 1, (tg_tensor *[]){stale(f)}, NULL, &res));
    note(f, res.message);
}
static void c_gc_nullin(fx *f)
{
    flag(f, tg_gradcheck(gc_sum, NULL, 1, (tg_tensor *[]){NULL}, NULL, &res));
    note(f, res.message);
}

/* core/alloc.h, core/parallel.h */
static void c_malloc_big(fx *f) { ptr(f, tg_malloc_big(NULL)); }
static void c_malloc_huge(fx *f) { ptr(f, tg_malloc(SIZE_MAX)); }
static void c_calloc_overflow(fx *f) { ptr(f, tg_calloc(SIZE_MAX / 2, 3)); }
static void c_calloc_big_overflow(fx *f) { ptr(f, tg_calloc_big(SIZE_MAX / 2, 3)); }
static void c_realloc_huge(fx *f) { ptr(f, tg_realloc(NULL, SIZE_MAX - 1)); }
static void c_free(fx *f)
{
    (void)f;
    tg_free(NULL);
}
static void c_parallel_nofn(fx *f)
{
    (void)f;
    tg_parallel_for(10, 1, NULL, NULL);
}
static void c_parallel_huge(fx *f) { parallel_huge(f); }
static void c_parallel_set_inside(fx *f) { parallel_set_inside(f); }
static void c_parallel_part(fx *f) { num(f, tg_parallel_part()); }
static void c_parallel_parts_none(fx *f) { num(f, tg_parallel_parts(-5, 1)); }
static void c_parallel_parts_grain(fx *f) { num(f, tg_parallel_parts(100, 0)); }
static void c_parallel_parts_huge(fx *f) { num(f, tg_parallel_parts(INT64_MAX, INT64_MAX)); }

/* core/cpu.h */
static void c_isa_name_bad(fx *f) { text(f, tg_isa_name((tg_isa)7)); }
static void c_isa_set_bad(fx *f) { flag(f, tg_isa_set_max((tg_isa)-1) == tg_isa_active()); }
/* the suite runs with TG_ISA unset or a path (a bad one: tests/tiny_gpt_isa.sh) */
static void c_isa_check_env_noerr(fx *f) { num(f, tg_isa_check_env(NULL)); }

/* core/safetensors.h */
static void c_st_load_nopath(fx *f) { ptr(f, tg_st_load(NULL, &f->err)); }
static void c_st_load_noerr(fx *f) { ptr(f, tg_st_load("/nonexistent/x.safetensors", NULL)); }
static void c_st_free(fx *f)
{
    (void)f;
    tg_st_free(NULL);
}
static void c_st_count(fx *f) { num(f, tg_st_count(NULL)); }
static void c_st_at(fx *f) { ptr(f, tg_st_at(NULL, 0)); }
static void c_st_find(fx *f) { ptr(f, tg_st_find(NULL, "w")); }
static void c_st_meta(fx *f) { ptr(f, tg_st_meta(NULL, "k")); }
static void c_st_copy_noe(fx *f) { num(f, tg_st_copy_to(NULL, f->x, &f->err)); }
static void c_st_copy_nodst(fx *f)
{
    float d[6] = {0};
    tg_st_tensor e = {.name = "t", .dtype = "F32", .ndim = 2, .shape = {2, 3}, .numel = 6, .data = d, .nbytes = 24};
    num(f, tg_st_copy_to(&e, NULL, &f->err));
}
static void c_st_copy_nodtype(fx *f)
{
    tg_st_tensor e = {.name = "t", .ndim = 2, .shape = {2, 3}, .numel = 6};
    num(f, tg_st_copy_to(&e, f->x, &f->err));
}
static void c_st_copy_short(fx *f)
{
    float d[1] = {0};
    tg_st_tensor e = {.name = "t", .dtype = "F32", .ndim = 2, .shape = {2, 3}, .numel = 6, .data = d, .nbytes = 4};
    num(f, tg_st_copy_to(&e, f->x, &f->err));
}
static void c_st_copy_stale(fx *f)
{
    float d[3] = {1, 2, 3};
    tg_st_tensor e = {.name = "t", .dtype = "F32", .ndim = 1, .shape = {3}, .numel = 3, .data = d, .nbytes = 12};
    num(f, tg_st_copy_to(&e, stale(f), &f->err));
}
static void c_st_add_tensor_stale(fx *f)
{
    num(f, tg_st_writer_add_tensor(f->w, "s", stale(f)));
    saved_note(f);
}
static void c_st_add_now(fx *f) { num(f, tg_st_writer_add(NULL, "a", "F32", 0, NULL, buf)); }
static void c_st_add_noshape(fx *f)
{
    num(f, tg_st_writer_add(f->w, "a", "F32", 1, NULL, buf));
    saved_note(f);
}
static void c_st_add_nodtype(fx *f)
{
    num(f, tg_st_writer_add(f->w, "a", NULL, 0, NULL, buf));
    saved_note(f);
}
static void c_st_add_tensor_null(fx *f)
{
    num(f, tg_st_writer_add_tensor(f->w, "a", NULL));
    saved_note(f);
}
static void c_st_add_tensor_now(fx *f) { num(f, tg_st_writer_add_tensor(NULL, "a", f->x)); }
static void c_st_meta_nokey(fx *f)
{
    num(f, tg_st_writer_add_meta(f->w, NULL, "v"));
    saved_note(f);
}
static void c_st_writer_free(fx *f)
{
    (void)f;
    tg_st_writer_free(NULL);
}
static void c_st_save_now(fx *f) { num(f, tg_st_writer_save(NULL, "x.safetensors", &f->err)); }
static void c_st_save_nopath(fx *f) { num(f, tg_st_writer_save(f->w, NULL, &f->err)); }
static void c_st_save_params_nop(fx *f) { num(f, tg_st_save_params(NULL, "x", NULL, 0, &f->err)); }
static void c_st_save_params_nometa(fx *f) { num(f, tg_st_save_params(f->p, "x", NULL, 2, &f->err)); }
static void c_st_save_params_nopath(fx *f) { num(f, tg_st_save_params(f->p, NULL, NULL, 0, &f->err)); }
static void c_st_load_params_nop(fx *f) { num(f, tg_st_load_params(NULL, NULL, &f->err)); }
/* tg_st_meta_at(st, i, &value): the key and the value as text */
static void meta_at(fx *f, const tg_st_file *st, int i)
{
    const char *v = "unset";
    const char *k = tg_st_meta_at(st, i, &v);
    snprintf(f->got, sizeof f->got, "%s, value %s", k ? k : "NULL", v ? v : "NULL");
}
static void c_st_meta_count(fx *f) { num(f, tg_st_meta_count(NULL)); }
static void c_st_meta_int_nof(fx *f)
{
    int64_t v = 5;
    num(f, tg_st_meta_int(NULL, "k", 0, 9, &v, &f->err) * 10 + v);
}
static void c_st_meta_int_text(fx *f)
{
    tg_st_file *st = st_kv(f); /* k = "v" */
    int64_t v = 5;
    num(f, tg_st_meta_int(st, "k", 0, 9, &v, &f->err) * 10 + v);
    tg_st_free(st);
}
static void c_st_meta_int_noout(fx *f)
{
    tg_st_file *st = st_kv(f);
    num(f, tg_st_meta_int(st, "k", 0, 9, NULL, &f->err));
    tg_st_free(st);
}
static void c_st_meta_double_text(fx *f)
{
    tg_st_file *st = st_kv(f);
    double v = 5;
    num(f, tg_st_meta_double(st, "k", 0, 9, &v, &f->err) * 10 + v);
    tg_st_free(st);
}
static void c_st_meta_bool_text(fx *f)
{
    tg_st_file *st = st_kv(f);
    bool v = true;
    num(f, tg_st_meta_bool(st, "k", &v, &f->err) * 10 + v);
    tg_st_free(st);
}
static void c_st_meta_at_nof(fx *f) { meta_at(f, NULL, 0); }
static void c_st_meta_at_past(fx *f)
{
    tg_st_file *st = st_kv(f);
    meta_at(f, st, 1);
    tg_st_free(st);
}
static void c_st_meta_at_neg(fx *f)
{
    tg_st_file *st = st_kv(f);
    meta_at(f, st, -1);
    tg_st_free(st);
}
static void c_st_meta_at_novalue(fx *f)
{
    tg_st_file *st = st_kv(f);
    text(f, tg_st_meta_at(st, 0, NULL));
    tg_st_free(st);
}

/* core/atomic_file.h */
static tg_atomic_file af;
static void c_atomic_begin_nof(fx *f) { num(f, tg_atomic_begin(NULL, "x", &f->err)); }
static void c_atomic_begin_nopath(fx *f)
{
    num(f, tg_atomic_begin(&af, NULL, &f->err));
    tg_atomic_abort(&af);
}
static void c_atomic_write_nof(fx *f) { num(f, tg_atomic_write(NULL, buf, 1, &f->err)); }
static void c_atomic_write_closed(fx *f)
{
    memset(&af, 0, sizeof af);
    num(f, tg_atomic_write(&af, buf, 1, &f->err));
}
static void c_atomic_finish_nof(fx *f) { num(f, tg_atomic_finish(NULL, &f->err)); }
static void c_atomic_commit_nof(fx *f) { num(f, tg_atomic_commit(NULL, &f->err)); }
static void c_atomic_commit_closed(fx *f)
{
    memset(&af, 0, sizeof af);
    num(f, tg_atomic_commit(&af, &f->err));
}
static void c_atomic_commit_noerr(fx *f)
{
    memset(&af, 0, sizeof af);
    num(f, tg_atomic_commit(&af, NULL));
}
static void c_atomic_abort(fx *f)
{
    (void)f;
    tg_atomic_abort(NULL);
}
static void c_write_atomic_nopath(fx *f) { num(f, tg_atomic_write_file(NULL, buf, 1, &f->err)); }
static void c_write_atomic_nodata(fx *f) { num(f, tg_atomic_write_file("x", NULL, 3, &f->err)); }

/* ops/ops.h: NULL graph, NULL inputs, values out of range */
static void c_matmul_nog(fx *f) { ptr(f, tg_matmul(NULL, f->x, f->x)); }
static void c_matmul_null(fx *f) { ptr(f, tg_matmul(f->g, f->x, NULL)); }
static void c_linear_now(fx *f) { ptr(f, tg_linear(f->g, f->x, NULL, NULL)); }
static void c_add_null(fx *f) { ptr(f, tg_add(f->g, NULL, f->x)); }
static void c_sub_null(fx *f) { ptr(f, tg_sub(f->g, f->x, NULL)); }
static void c_mul_nog(fx *f) { ptr(f, tg_mul(NULL, f->x, f->x)); }
static void c_div_null(fx *f) { ptr(f, tg_div(f->g, NULL, NULL)); }
static void c_scale_nan(fx *f) { ptr(f, tg_scale(f->g, f->x, NAN)); }
static void c_neg_null(fx *f) { ptr(f, tg_neg(f->g, NULL)); }
static void c_exp_i32(fx *f) { ptr(f, tg_exp(f->g, f->ids)); }
static void c_log_nog(fx *f) { ptr(f, tg_log(NULL, f->x)); }
static void c_tanh_null(fx *f) { ptr(f, tg_tanh(f->g, NULL)); }
static void c_sqrt_null(fx *f) { ptr(f, tg_sqrt(f->g, NULL)); }
static void c_relu_null(fx *f) { ptr(f, tg_relu(f->g, NULL)); }
static void c_gelu_mode(fx *f) { ptr(f, tg_gelu(f->g, f->x, (tg_gelu_mode)7)); }
static void c_relu2_null(fx *f) { ptr(f, tg_relu2(f->g, NULL)); }
static void c_softcap_zero(fx *f) { ptr(f, tg_softcap(f->g, f->x, 0)); }
static void c_sum_axis(fx *f) { ptr(f, tg_sum(f->g, f->x, 5, false)); }
static void c_mean_axis(fx *f) { ptr(f, tg_mean(f->g, f->x, INT_MIN, true)); }
static void c_sum_all_null(fx *f) { ptr(f, tg_sum_all(f->g, NULL)); }
static void c_mean_all_nog(fx *f) { ptr(f, tg_mean_all(NULL, f->x)); }
static void c_reshape_noshape(fx *f) { ptr(f, tg_reshape(f->g, f->x, 2, NULL)); }
static void c_reshape_huge(fx *f) { ptr(f, tg_reshape(f->g, f->x, 2, (int[]){INT_MAX, INT_MAX})); }
static void c_transpose_axis(fx *f) { ptr(f, tg_transpose(f->g, f->x, 0, 2)); }
static void c_permute_noperm(fx *f) { ptr(f, tg_permute(f->g, f->x, NULL)); }
static void c_slice_empty(fx *f) { ptr(f, tg_slice(f->g, f->x, 1, 2, 2)); }
static void c_split_nosizes(fx *f)
{
    tg_tensor *o[2];
    num(f, tg_split(f->g, f->x, 1, 2, NULL, o));
}
static void c_split_noout(fx *f) { num(f, tg_split(f->g, f->x, 1, 2, (int[]){1, 2}, NULL)); }
static void c_split_overflow(fx *f)
{
    tg_tensor *o[3];
    num(f, tg_split(f->g, f->x, 1, 3, (int[]){INT_MAX, INT_MAX, 5}, o));
}
static void c_concat_noxs(fx *f) { ptr(f, tg_concat(f->g, 2, NULL, 0)); }
static void c_concat_null(fx *f) { ptr(f, tg_concat(f->g, 2, (tg_tensor *[]){f->x, NULL}, 0)); }
static void c_softmax_null(fx *f) { ptr(f, tg_softmax(f->g, NULL, NULL)); }
static void c_softmax_flags(fx *f) { ptr(f, tg_softmax_ex(f->g, f->x, NULL, 8)); }
static void c_log_softmax_mask(fx *f) { ptr(f, tg_log_softmax(f->g, f->x, f->ids)); }
static void c_attention_heads(fx *f)
{
    tg_tensor *q = tg_tensor_new(f->g, TG_F32, 3, (int[]){1, 2, 4});
    ptr(f, tg_attention(f->g, q, q, q, 0, 0, 0));
}
static void c_attention_qpos(fx *f)
{
    tg_tensor *q = tg_tensor_new(f->g, TG_F32, 3, (int[]){1, 2, 4});
    ptr(f, tg_attention(f->g, q, q, q, 1, TG_ATTN_CAUSAL, INT_MIN));
}
static void c_attention_qkv_null(fx *f) { ptr(f, tg_attention_qkv(f->g, NULL, 1, 0, 0)); }
static void c_cross_entropy_null(fx *f) { ptr(f, tg_cross_entropy(f->g, NULL, f->ids)); }
static void c_layernorm_null(fx *f) { ptr(f, tg_layernorm(f->g, NULL, NULL, NULL, 1e-5)); }
static void c_layernorm_eps(fx *f) { ptr(f, tg_layernorm(f->g, f->x, NULL, NULL, NAN)); }
static void c_embedding_null(fx *f) { ptr(f, tg_embedding(f->g, f->x, NULL)); }
static void c_layernorm_stale_w(fx *f)
{
    tg_tensor *w = stale(f);
    ptr(f, tg_layernorm(f->g, f->x, w, NULL, 1e-5));
}
static void c_dropout_p(fx *f) { ptr(f, tg_dropout(f->g, f->x, 2)); }
static tg_tensor *q124(fx *f) /* f32 (1,2,4): B 1, T 2, C 4 */
{
    tg_tensor *q = tg_tensor_new(f->g, TG_F32, TT_SHAPE(1, 2, 4));
    if (!q) abort();
    return q;
}
static tg_tensor *qkv(fx *f, int C3) /* f32 (1,2,C3) */
{
    tg_tensor *t = tg_tensor_new(f->g, TG_F32, TT_SHAPE(1, 2, C3));
    if (!t) abort();
    return t;
}
static void c_qkv_kv_heads(fx *f) { ptr(f, tg_attention_qkv(f->g, qkv(f, 12), 2, 3, 0)); }
static void c_qkv_kv_neg(fx *f) { ptr(f, tg_attention_qkv(f->g, qkv(f, 12), 2, -1, 0)); }
static void c_qkv_width(fx *f) { ptr(f, tg_attention_qkv(f->g, qkv(f, 10), 2, 1, 0)); }
static void c_qkv_heads_max(fx *f) { ptr(f, tg_attention_qkv(f->g, qkv(f, 12), INT_MAX, 0, 0)); }
static void c_qkv_flags(fx *f) { ptr(f, tg_attention_qkv(f->g, qkv(f, 12), 2, 2, 4)); }
static void c_qkv_2d(fx *f) { ptr(f, tg_attention_qkv(f->g, f->x, 1, 0, 0)); }
static void c_rmsnorm_null(fx *f) { ptr(f, tg_rmsnorm(f->g, NULL, NULL, 1e-5)); }
static void c_rmsnorm_eps(fx *f) { ptr(f, tg_rmsnorm(f->g, f->x, NULL, 0)); }
static void c_rmsnorm_eps_inf(fx *f) { ptr(f, tg_rmsnorm(f->g, f->x, NULL, INFINITY)); }
static void c_rmsnorm_w_shape(fx *f) { ptr(f, tg_rmsnorm(f->g, f->x, tg_tensor_new(f->g, TG_F32, TT_SHAPE(2)), 1e-5)); }
static void c_rmsnorm_w_dtype(fx *f) { ptr(f, tg_rmsnorm(f->g, f->x, tg_tensor_new(f->g, TG_F64, TT_SHAPE(3)), 1e-5)); }
static void c_rmsnorm_scalar(fx *f) { ptr(f, tg_rmsnorm(f->g, tg_scalar(f->g, TG_F32, 1), NULL, 1e-5)); }
static void c_rmsnorm_i32(fx *f) { ptr(f, tg_rmsnorm(f->g, f->ids, NULL, 1e-5)); }
static void c_rmsnorm_stale_w(fx *f)
{
    tg_tensor *w = stale(f);
    ptr(f, tg_rmsnorm(f->g, f->x, w, 1e-5));
}
static void c_silu_null(fx *f) { ptr(f, tg_silu(f->g, NULL)); }
static void c_silu_i32(fx *f) { ptr(f, tg_silu(f->g, f->ids)); }
static void c_silu_nog(fx *f) { ptr(f, tg_silu(NULL, f->x)); }
static void c_swiglu_null(fx *f) { ptr(f, tg_swiglu(f->g, f->x, NULL)); }
static void c_swiglu_shape(fx *f) { ptr(f, tg_swiglu(f->g, f->x, tg_tensor_new(f->g, TG_F32, TT_SHAPE(3, 2)))); }
static void c_swiglu_dtype(fx *f) { ptr(f, tg_swiglu(f->g, f->x, tg_tensor_new(f->g, TG_F64, TT_SHAPE(2, 3)))); }
static void c_rope_null(fx *f) { ptr(f, tg_rope(f->g, NULL, 2, 1, 0, 10000, 0)); }
static void c_rope_i32(fx *f) { ptr(f, tg_rope(f->g, f->ids, 3, 1, 0, 10000, 0)); }
static void c_rope_1d(fx *f) { ptr(f, tg_rope(f->g, tg_tensor_new(f->g, TG_F32, TT_SHAPE(4)), 2, 1, 0, 10000, 0)); }
static void c_rope_odd(fx *f) { ptr(f, tg_rope(f->g, q124(f), 3, 1, 0, 10000, 0)); }
static void c_rope_hd_zero(fx *f) { ptr(f, tg_rope(f->g, q124(f), 0, 1, 0, 10000, 0)); }
static void c_rope_hd_wide(fx *f) { ptr(f, tg_rope(f->g, q124(f), 6, 1, 0, 10000, 0)); }
static void c_rope_nrot_big(fx *f) { ptr(f, tg_rope(f->g, q124(f), 2, 3, 0, 10000, 0)); }
static void c_rope_nrot_zero(fx *f) { ptr(f, tg_rope(f->g, q124(f), 2, 0, 0, 10000, 0)); }
static void c_rope_pos_neg(fx *f) { ptr(f, tg_rope(f->g, q124(f), 2, 1, -1, 10000, 0)); }
static void c_rope_pos_max(fx *f) { ptr(f, tg_rope(f->g, q124(f), 2, 1, INT_MAX, 10000, 0)); }
static void c_rope_theta(fx *f) { ptr(f, tg_rope(f->g, q124(f), 2, 1, 0, 1, 0)); }
static void c_rope_theta_nan(fx *f) { ptr(f, tg_rope(f->g, q124(f), 2, 1, 0, NAN, 0)); }
static void c_rope_flags(fx *f) { ptr(f, tg_rope(f->g, q124(f), 2, 1, 0, 10000, 2)); }

/* nn/nn.h */
static tg_linear_mod lin;
static tg_layernorm_mod ln;
static tg_mlp_mod mlp;
static tg_mha_mod mha;
static void c_linear_init_nol(fx *f) { num(f, tg_linear_init(NULL, f->p, "l", 2, 3, false, &f->err)); }
static void c_linear_init_nop(fx *f) { num(f, tg_linear_init(&lin, NULL, "l", 2, 3, false, &f->err)); }
static void c_linear_init_noname(fx *f) { num(f, tg_linear_init(&lin, f->p, NULL, 2, 3, false, &f->err)); }
static void c_linear_init_noerr(fx *f) { num(f, tg_linear_init(&lin, f->p, "l", 0, 3, false, NULL)); }
static void c_linear_forward(fx *f) { ptr(f, tg_linear_forward(f->g, NULL, f->x)); }
static void c_layernorm_init(fx *f) { num(f, tg_layernorm_init(&ln, NULL, "ln", 3, true, &f->err)); }
static void c_layernorm_forward(fx *f) { ptr(f, tg_layernorm_forward(f->g, NULL, f->x)); }
static void c_mlp_init_big(fx *f) { num(f, tg_mlp_init(&mlp, f->p, "mlp", 1 << 29, 4, NULL, &f->err)); }
static void c_mlp_init_nom(fx *f) { num(f, tg_mlp_init(NULL, f->p, "mlp", 4, 16, NULL, &f->err)); }
static void c_mlp_forward(fx *f) { ptr(f, tg_mlp_forward(f->g, NULL, f->x)); }
static void c_kv_overflow(fx *f) { kv_overflow(f, 4, 1, 1 << 30, 1 << 30); }
static void c_kv_wide(fx *f) { kv_overflow(f, 1, 1 << 16, 1 << 16, 1); }
static void c_kv_zero(fx *f) { kv_overflow(f, 0, 1, 1, 1); }
static void c_kv_null(fx *f) { num(f, tg_kv_cache_init(NULL, TG_F32, 1, 1, 1, 1, &f->err)); }
static void c_kv_clear(fx *f)
{
    (void)f;
    tg_kv_cache_clear(NULL);
}
static void c_kv_free(fx *f)
{
    (void)f;
    tg_kv_cache_release(NULL);
}
static void c_kv_shift_null(fx *f)
{
    num(f, tg_kv_cache_shift(NULL, 0, 1, 0, 0, fresh()));
    note(f, te.msg);
}
/* a cache of 2 positions asked to drop 2 after the first: refused, unchanged */
static void kv_shift(fx *f, int keep, int discard, double theta, int flags)
{
    tg_kv_cache c;
    if (tg_kv_cache_init(&c, TG_F32, 1, 2, 2, 4, NULL)) abort();
    c.len = 2;
    const int rc = tg_kv_cache_shift(&c, keep, discard, theta, flags, fresh());
    note(f, te.msg);
    snprintf(f->got, sizeof f->got, "%d, len %d", rc, c.len);
    tg_kv_cache_release(&c);
}
static void c_kv_shift_far(fx *f) { kv_shift(f, 1, 2, 10000, TG_ROPE_INTERLEAVED); }
static void c_kv_shift_theta(fx *f) { kv_shift(f, 0, 1, 0.5, TG_ROPE_INTERLEAVED); }
static void c_kv_shift_flags(fx *f) { kv_shift(f, 0, 1, 10000, 7); }
static void c_mha_init(fx *f)
{
    num(f, tg_mha_init(&mha, f->p, NULL, &(tg_mha_config){.n_embd = 4, .n_head = 2, .bias = true}, &f->err));
}
static void c_mha_stale_mask(fx *f)
{
    if (tg_mha_init(&mha, f->p, "attn", &(tg_mha_config){.n_embd = 4, .n_head = 2}, NULL)) abort();
    tg_tensor *kp = stale(f);
    ptr(f, tg_mha_forward(f->g, &mha, f->x, NULL, &(tg_attn_args){.key_padding = kp}));
}
static void c_mha_cache_len(fx *f)
{
    tg_kv_cache c;
    if (tg_mha_init(&mha, f->p, "attn", &(tg_mha_config){.n_embd = 4, .n_head = 2}, NULL) ||
        tg_kv_cache_init(&c, TG_F32, 1, 2, 2, 4, NULL))
        abort();
    c.len = -3; /* a field the caller is not to write */
    tg_tensor *x = tg_tensor_new(f->g, TG_F32, 3, (int[]){1, 2, 4});
    ptr(f, tg_mha_forward(f->g, &mha, x, NULL, &(tg_attn_args){.causal = true, .cache = &c}));
    tg_kv_cache_release(&c);
}
static void c_mha_forward(fx *f) { ptr(f, tg_mha_forward(f->g, NULL, f->x, NULL, NULL)); }
static tg_rmsnorm_mod rms;
static void c_linear_init_normal_nol(fx *f)
{
    (void)f;
    tg_linear_init_normal(NULL, &rng, 0.02);
}
static void c_linear_init_uniform_nol(fx *f)
{
    (void)f;
    tg_linear_init_uniform(NULL, &rng);
}
static void c_linear_init_uniform_nor(fx *f)
{
    if (tg_linear_init(&lin, f->p, "l", 2, 3, false, NULL)) abort();
    tg_linear_init_uniform(&lin, NULL);
    num(f, tg_tensor_get(lin.weight, 0));
}
static void c_linear_init_normal_nor(fx *f)
{
    if (tg_linear_init(&lin, f->p, "l", 2, 3, false, NULL)) abort();
    tg_linear_init_normal(&lin, NULL, 0.02);
    num(f, tg_tensor_get(lin.weight, 0));
}
static void c_rmsnorm_init_nol(fx *f) { num(f, tg_rmsnorm_init(NULL, f->p, "n", 3, 1e-5, &f->err)); }
static void c_rmsnorm_init_nop(fx *f) { num(f, tg_rmsnorm_init(&rms, NULL, "n", 3, 1e-5, &f->err)); }
static void c_rmsnorm_init_noname(fx *f) { num(f, tg_rmsnorm_init(&rms, f->p, NULL, 3, 1e-5, &f->err)); }
static void c_rmsnorm_init_c(fx *f) { num(f, tg_rmsnorm_init(&rms, f->p, "n", 0, 1e-5, &f->err)); }
static void c_rmsnorm_init_eps(fx *f) { num(f, tg_rmsnorm_init(&rms, f->p, "n", 3, 0, &f->err)); }
static void c_rmsnorm_init_eps_big(fx *f) { num(f, tg_rmsnorm_init(&rms, f->p, "n", 3, 2, &f->err)); }
static void c_rmsnorm_init_dup(fx *f)
{
    if (tg_rmsnorm_init(&rms, f->p, "n", 3, 1e-5, NULL)) abort();
    num(f, tg_rmsnorm_init(&rms, f->p, "n", 3, 1e-5, &f->err));
}
static void c_rmsnorm_forward(fx *f) { ptr(f, tg_rmsnorm_forward(f->g, NULL, f->x)); }
/* a module name of n <= 300 bytes */
static const char *long_name(size_t n)
{
    static char s[301];
    memset(s, 'n', n);
    s[n] = '\0';
    return s;
}
static void c_linear_init_long(fx *f) { num(f, tg_linear_init(&lin, f->p, long_name(249), 2, 3, true, &f->err)); }
static void c_linear_init_300(fx *f) { num(f, tg_linear_init(&lin, f->p, long_name(300), 2, 3, false, &f->err)); }
static void c_linear_init_max(fx *f)
{
    char full[320];
    int rc = tg_linear_init(&lin, f->p, long_name(248), 2, 3, true, &f->err);
    snprintf(full, sizeof full, "%s.weight", long_name(248));
    snprintf(f->got, sizeof f->got, "%d, %s", rc, tg_params_get(f->p, full) ? "<name>.weight" : "no weight");
}
static void c_layernorm_init_long(fx *f) { num(f, tg_layernorm_init(&ln, f->p, long_name(249), 3, true, &f->err)); }
static void c_rmsnorm_init_long(fx *f) { num(f, tg_rmsnorm_init(&rms, f->p, long_name(249), 3, 1e-5, &f->err)); }
static void c_mlp_init_long(fx *f)
{
    num(f, tg_mlp_init(&mlp, f->p, long_name(251), 4, 16, &(tg_mlp_options){.bias = true}, &f->err));
}
static void c_mha_init_long(fx *f)
{
    num(f,
        tg_mha_init(&mha, f->p, long_name(300),
                    &(tg_mha_config){.n_embd = 4, .n_head = 2, .layout = TG_MHA_SEPARATE, .bias = true}, &f->err));
}
static void c_mha_init_over(fx *f)
{
    num(f,
        tg_mha_init(&mha, f->p, long_name(242),
                    &(tg_mha_config){.n_embd = 4, .n_head = 2, .layout = TG_MHA_SEPARATE, .bias = true}, &f->err));
}
static void c_mha_init_max(fx *f)
{
    char full[320];
    int rc = tg_mha_init(&mha, f->p, long_name(241),
                         &(tg_mha_config){.n_embd = 4, .n_head = 2, .layout = TG_MHA_SEPARATE, .bias = true}, &f->err);
    snprintf(full, sizeof full, "%s.c_proj.weight", long_name(241));
    snprintf(f->got, sizeof f->got, "%d, %s", rc, tg_params_get(f->p, full) ? "<name>.c_proj.weight" : "no c_proj");
}
static void c_mlp_init_kind(fx *f)
{
    num(f, tg_mlp_init(&mlp, f->p, "mlp", 4, 16, &(tg_mlp_options){.kind = (tg_mlp_kind)7}, &f->err));
}
static void c_ffn_kind_name_bad(fx *f) { text(f, tg_ffn_kind_name((tg_ffn_kind)4)); }
static void c_mlp_init_dropout(fx *f)
{
    num(f, tg_mlp_init(&mlp, f->p, "mlp", 4, 16, &(tg_mlp_options){.kind = TG_MLP_SWIGLU, .dropout = 1}, &f->err));
}
static void c_mlp_init_normal_nom(fx *f)
{
    (void)f;
    tg_mlp_init_normal(NULL, &rng, 0.02, 0.02, 0.02);
}
static void c_mlp_init_normal_nor(fx *f)
{
    if (tg_mlp_init(&mlp, f->p, "mlp", 2, 4, &(tg_mlp_options){.kind = TG_MLP_SWIGLU}, NULL)) abort();
    tg_mlp_init_normal(&mlp, NULL, 0.02, 0.02, 0.02);
    num(f, tg_tensor_get(mlp.gate.weight, 0));
}
/* tg_mha_init of "attn" with config c */
static void mha_config(fx *f, tg_mha_config c) { num(f, tg_mha_init(&mha, f->p, "attn", &c, &f->err)); }
static void c_mha_cfg_null(fx *f) { num(f, tg_mha_init(&mha, f->p, "attn", NULL, &f->err)); }
static void c_mha_cfg_kv(fx *f) { mha_config(f, (tg_mha_config){.n_embd = 4, .n_head = 2, .n_kv_head = 3}); }
static void c_mha_cfg_kv_neg(fx *f) { mha_config(f, (tg_mha_config){.n_embd = 4, .n_head = 2, .n_kv_head = -1}); }
static void c_mha_cfg_wide(fx *f) { mha_config(f, (tg_mha_config){.n_embd = 1 << 29, .n_head = 2}); }
static void c_mha_cfg_rope_odd(fx *f) { mha_config(f, (tg_mha_config){.n_embd = 6, .n_head = 2, .rope_theta = 10000}); }
static void c_mha_cfg_theta(fx *f) { mha_config(f, (tg_mha_config){.n_embd = 4, .n_head = 2, .rope_theta = 1}); }
static void c_mha_cfg_rope_flags(fx *f)
{
    mha_config(f, (tg_mha_config){.n_embd = 4, .n_head = 2, .rope_theta = 10000, .rope_flags = 5});
}
static void c_mha_cfg_layout(fx *f)
{
    mha_config(f, (tg_mha_config){.n_embd = 4, .n_head = 2, .layout = (tg_mha_layout)9});
}
static void c_mha_cfg_dropout(fx *f) { mha_config(f, (tg_mha_config){.n_embd = 4, .n_head = 2, .dropout = NAN}); }
static void c_mha_init_normal(fx *f)
{
    (void)f;
    tg_mha_init_normal(NULL, &rng, 0.02, 0.02);
}
static void c_mha_uses_fused(fx *f) { flag(f, tg_mha_uses_fused(f->g, NULL, NULL)); }
static void c_llama_hidden_zero(fx *f) { num(f, tg_llama_hidden_dim(0, 32)); }
static void c_llama_hidden_mult(fx *f) { num(f, tg_llama_hidden_dim(288, 0)); }
static void c_llama_hidden_max(fx *f) { num(f, tg_llama_hidden_dim(INT_MAX, INT_MAX)); }
static void c_model_register_null(fx *f) { num(f, tg_model_register(NULL, &f->err)); }
static void c_model_register_noname(fx *f)
{
    tg_model_family fam = *tg_model_family_find("gpt");
    fam.arch = NULL;
    num(f, tg_model_register(&fam, &f->err));
}
static void c_model_family_find(fx *f) { ptr(f, tg_model_family_find(NULL)); }
static void c_model_family_names(fx *f) { text(f, tg_model_family_names()); }
static void c_model_new_nom(fx *f)
{
    num(f, tg_model_init(NULL, &(tg_model_config){.arch = "gpt"}, TG_F32, 1, &f->err));
}
static void c_model_new_noarch(fx *f)
{
    tg_model m;
    num(f, tg_model_init(&m, &(tg_model_config){0}, TG_F32, 1, &f->err));
}
static void c_model_new_bad(fx *f)
{
    tg_model m;
    const tg_model_config c = {.arch = "gpt", .n_layer = 1, .n_head = 3, .n_embd = 8, .block_size = 4, .vocab_size = 5};
    num(f, tg_model_init(&m, &c, TG_F32, 1, &f->err));
}
static void c_model_free(fx *f)
{
    (void)f;
    tg_model_release(NULL);
}
static void c_model_num_params(fx *f) { num(f, (double)tg_model_num_params(NULL)); }
static void c_model_forward(fx *f) { ptr(f, tg_model_forward(f->g, NULL, f->ids, NULL)); }
static void c_model_forward_empty(fx *f) { ptr(f, tg_model_forward(f->g, &(tg_model){0}, f->ids, NULL)); }
static void c_model_loss(fx *f) { ptr(f, tg_model_loss(f->g, NULL, f->ids, f->ids)); }
static void c_model_set_composed(fx *f) { num(f, tg_model_set_composed(NULL, true)); }
static void c_model_cache_enable(fx *f) { num(f, tg_model_cache_enable(NULL, 1, &f->err)); }
static void c_model_cache_clear(fx *f)
{
    (void)f;
    tg_model_cache_clear(NULL);
}
static void c_model_cache_len(fx *f) { num(f, tg_model_cache_len(NULL)); }
static void c_model_cache_shift(fx *f)
{
    num(f, tg_model_cache_shift(NULL, 0, 1, fresh()));
    note(f, te.msg);
}
/* a built-in model of family arch, V 5, block 4 (freed by the caller) */
static tg_model small_model(const char *arch)
{
    const tg_model_config c = {.arch = arch,
                               .n_layer = 1,
                               .n_head = 2,
                               .n_kv_head = 1,
                               .n_embd = 8,
                               .hidden_dim = 16,
                               .block_size = 4,
                               .vocab_size = 5,
                               .rope_theta = 10000,
                               .norm_eps = 1e-5,
                               .tied = true};
    tg_model m;
    if (tg_model_init(&m, &c, TG_F32, 1, NULL)) abort();
    return m;
}
static void c_model_cache_shift_gpt(fx *f)
{
    tg_model m = small_model("gpt");
    if (tg_model_cache_enable(&m, 1, NULL)) abort();
    num(f, tg_model_cache_shift(&m, 0, 1, fresh()));
    note(f, te.msg);
    tg_model_release(&m);
}
static void c_model_cache_shift_off(fx *f)
{
    tg_model m = small_model("llama");
    num(f, tg_model_cache_shift(&m, 0, 1, fresh()));
    note(f, te.msg);
    tg_model_release(&m);
}
static void c_model_config_write(fx *f) { num(f, tg_model_config_write(NULL, f->w)); }
static void c_model_config_write_now(fx *f) { num(f, tg_model_config_write(&(tg_model_config){.arch = "gpt"}, NULL)); }
static void c_model_config_read(fx *f)
{
    tg_model_config c;
    num(f, tg_model_config_read(NULL, &c, &f->err));
}
static void c_model_config_read_nokeys(fx *f)
{
    tg_st_file *st = st_kv(f); /* no arch: a GPT, without its keys */
    tg_model_config c;
    num(f, tg_model_config_read(st, &c, &f->err));
    tg_st_free(st);
}
/* tg_model_init(c, dt) of the built-in families: its result (the model released) */
static void model_init(fx *f, tg_model_config c, tg_dtype dt)
{
    tg_model m;
    num(f, tg_model_init(&m, &c, dt, 1, &f->err));
    tg_model_release(&m);
}
static const tg_model_config GPT_SMALL = {
    .arch = "gpt", .n_layer = 1, .n_head = 1, .n_embd = 4, .block_size = 4, .vocab_size = 5};
static void c_model_gpt_huge(fx *f)
{
    tg_model_config c = GPT_SMALL;
    c.n_embd = 1 << 12, c.vocab_size = 1 << 30;
    model_init(f, c, TG_F32);
}
static void c_model_gpt_cache_huge(fx *f)
{
    tg_model_config c = GPT_SMALL;
    c.block_size = 1024;
    tg_model m;
    if (tg_model_init(&m, &c, TG_F32, 1, NULL)) abort();
    num(f, tg_model_cache_enable(&m, INT_MAX, &f->err));
    tg_model_release(&m);
}
static void c_model_gpt_params_heads(fx *f)
{
    tg_model_config c = GPT_SMALL;
    c.n_head = 3;
    num(f, (double)tg_model_num_params(&c));
}
static void c_model_gpt_params_huge(fx *f)
{
    tg_model_config c = GPT_SMALL;
    c.n_layer = c.n_embd = INT_MAX;
    num(f, (double)tg_model_num_params(&c));
}
static void c_model_gpt_params_wide(fx *f)
{
    tg_model_config c = GPT_SMALL;
    c.n_embd = 1 << 27; /* an MLP of 4 C past 2^28 */
    num(f, (double)tg_model_num_params(&c));
}
static void c_model_llama_kv(fx *f)
{
    tg_model_config c = llama_cfg();
    c.n_kv_head = 3;
    model_init(f, c, TG_F32);
}
static void c_model_llama_kv_zero(fx *f)
{
    tg_model_config c = llama_cfg();
    c.n_kv_head = 0;
    model_init(f, c, TG_F32);
}
static void c_model_llama_odd(fx *f)
{
    tg_model_config c = llama_cfg();
    c.n_embd = 6;
    model_init(f, c, TG_F32);
}
static void c_model_llama_theta(fx *f)
{
    tg_model_config c = llama_cfg();
    c.rope_theta = 1;
    model_init(f, c, TG_F32);
}
static void c_model_llama_eps(fx *f)
{
    tg_model_config c = llama_cfg();
    c.norm_eps = 0;
    model_init(f, c, TG_F32);
}
static void c_model_llama_dropout(fx *f)
{
    tg_model_config c = llama_cfg();
    c.dropout = 1;
    model_init(f, c, TG_F32);
}
static void c_model_llama_dtype(fx *f) { model_init(f, llama_cfg(), TG_I32); }
static void c_model_llama_vocab(fx *f)
{
    tg_model_config c = llama_cfg();
    c.vocab_size = 1 << 30;
    c.n_embd = 1 << 12;
    model_init(f, c, TG_F32);
}
static void c_model_llama_hidden(fx *f)
{
    tg_model_config c = llama_cfg();
    c.hidden_dim = 1 << 29;
    model_init(f, c, TG_F32);
}
static void c_model_llama_params_hidden(fx *f)
{
    tg_model_config c = llama_cfg();
    c.hidden_dim = 1 << 29; /* the MLP refuses it: tg_model_init reserves nothing for it */
    num(f, (double)tg_model_num_params(&c));
}
static void c_model_llama_params_kv(fx *f)
{
    tg_model_config c = llama_cfg();
    c.n_kv_head = 3;
    num(f, (double)tg_model_num_params(&c));
}
static void c_model_llama_params_huge(fx *f)
{
    tg_model_config c = llama_cfg();
    c.n_layer = c.hidden_dim = INT_MAX;
    c.n_embd = 1 << 30;
    c.n_head = 1 << 29;
    num(f, (double)tg_model_num_params(&c));
}
/* tg_model_forward on the small Llama */
static void llama_forward(fx *f, tg_tensor *idx)
{
    tg_model m = small_model("llama");
    ptr(f, tg_model_forward(f->g, &m, idx, NULL));
    tg_model_release(&m);
}
static void c_model_llama_forward_id(fx *f)
{
    ((int32_t *)f->ids->data)[4] = 7;
    llama_forward(f, f->ids);
}
static void c_model_llama_forward_long(fx *f) { llama_forward(f, tg_tensor_new(f->g, TG_I32, TT_SHAPE(1, 5))); }
static void c_model_llama_forward_f32(fx *f) { llama_forward(f, f->x); }
static void c_model_llama_forward_slots(fx *f)
{
    tg_model m = small_model("llama");
    tg_tensor *w[1] = {f->x};
    ((int32_t *)f->ids->data)[0] = -1;
    tg_tensor *y = tg_model_forward(f->g, &m, f->ids, w);
    snprintf(f->got, sizeof f->got, "%s, slot %s", y ? "non-NULL" : "NULL", w[0] ? "set" : "NULL");
    tg_model_release(&m);
}
static void c_model_llama_loss_targets(fx *f)
{
    tg_model m = small_model("llama");
    ptr(f, tg_model_loss(f->g, &m, f->ids, f->x));
    tg_model_release(&m);
}
static void c_model_llama_cache_batch(fx *f)
{
    tg_model m = small_model("llama");
    num(f, tg_model_cache_enable(&m, 0, &f->err));
    tg_model_release(&m);
}
static void c_model_llama_cache_huge(fx *f)
{
    tg_model_config c = llama_cfg();
    c.block_size = 1 << 20; /* no position embedding: costs nothing until the cache */
    tg_model m;
    if (tg_model_init(&m, &c, TG_F32, 1, NULL)) abort();
    num(f, tg_model_cache_enable(&m, INT_MAX, &f->err));
    tg_model_release(&m);
}

/* optim/optim.h */
static void c_sgd_new_nop(fx *f) { ptr(f, tg_sgd_new(NULL, 0, 0, &f->err)); }
static void c_sgd_new_noerr(fx *f) { ptr(f, tg_sgd_new(f->p, -1, 0, NULL)); }
static void c_sgd_step_nulls(fx *f) { num(f, tg_sgd_step(NULL, 0.1, &f->err)); }
static void c_sgd_step_nan(fx *f)
{
    ((float *)tg_params_grad(f->p))[0] = 1; /* a step with lr NaN would make w[0] NaN */
    const int rc = tg_sgd_step(f->sgd, NAN, &f->err);
    snprintf(f->got, sizeof f->got, "%d, w[0] %g", rc, ((float *)tg_params_data(f->p))[0]);
}
static void c_sgd_free(fx *f)
{
    (void)f;
    tg_sgd_free(NULL);
}
static void c_adamw_new_nop(fx *f) { ptr(f, tg_adamw_new(NULL, NULL, &f->err)); }
static void c_adamw_decay_noo(fx *f) { num(f, tg_adamw_set_decay(NULL, f->x, true, &f->err)); }
static void c_adamw_decay_nop(fx *f) { num(f, tg_adamw_set_decay(f->adamw, NULL, true, &f->err)); }
static void c_adamw_decays(fx *f) { flag(f, tg_adamw_decays(NULL, f->x)); }
static void c_adamw_step_noo(fx *f) { num(f, tg_adamw_step(NULL, 0.1, &f->err)); }
static void c_adamw_step_inf(fx *f)
{
    const int rc = tg_adamw_step(f->adamw, INFINITY, &f->err);
    snprintf(f->got, sizeof f->got, "%d, steps %lld", rc, (long long)tg_adamw_steps(f->adamw));
}
static void c_adamw_steps(fx *f) { num(f, (double)tg_adamw_steps(NULL)); }
static void c_adamw_set_steps_noo(fx *f) { num(f, tg_adamw_set_steps(NULL, 3, &f->err)); }
static void c_adamw_set_steps_neg(fx *f)
{
    const int rc = tg_adamw_set_steps(f->adamw, -1, &f->err);
    snprintf(f->got, sizeof f->got, "%d, steps %lld", rc, (long long)tg_adamw_steps(f->adamw));
}
static void c_adamw_m(fx *f) { ptr(f, tg_adamw_m(NULL)); }
static void c_adamw_v(fx *f) { ptr(f, tg_adamw_v(NULL)); }
static void c_adamw_free(fx *f)
{
    (void)f;
    tg_adamw_free(NULL);
}
static void c_clip(fx *f) { num(f, tg_clip_grad_norm(NULL, 1)); }
static void c_hook_nog(fx *f)
{
    (void)f;
    tg_graph_set_backward_hook(NULL, NULL, NULL);
}
static void c_node_nog(fx *f) { ptr(f, tg_graph_node(NULL, 0)); }
static void c_node_past(fx *f) { ptr(f, tg_graph_node(f->g, tg_graph_tape_len(f->g))); }
static void c_node_neg(fx *f) { ptr(f, tg_graph_node(f->g, -1)); }
static void c_adamw_shard_range(fx *f) { ptr(f, tg_adamw_new_shard(f->p, NULL, 2, 7, &f->err)); }
static void c_adamw_shard_nop(fx *f) { ptr(f, tg_adamw_new_shard(NULL, NULL, 0, 0, &f->err)); }
static void c_adamw_shard_noo(fx *f)
{
    int64_t lo = 5, hi = 5;
    tg_adamw_shard(NULL, &lo, &hi);
    num(f, (double)(lo + hi));
}
static void c_adamw_step_grad_null(fx *f)
{
    const int rc = tg_adamw_step_grad(f->adamw, 0.1, NULL, &f->err);
    snprintf(f->got, sizeof f->got, "%d, steps %lld", rc, (long long)tg_adamw_steps(f->adamw));
}
static void c_adamw_state_write_noo(fx *f) { num(f, tg_adamw_state_write(NULL, f->w, "opt", NULL, NULL)); }
static void c_adamw_state_write_now(fx *f) { num(f, tg_adamw_state_write(f->adamw, NULL, "opt", NULL, NULL)); }
static void c_adamw_state_write_long(fx *f)
{
    char prefix[TG_ADAMW_PREFIX_MAX + 2];
    memset(prefix, 'p', sizeof prefix - 1);
    prefix[sizeof prefix - 1] = 0;
    num(f, tg_adamw_state_write(f->adamw, f->w, prefix, NULL, NULL));
}
static void c_adamw_state_read_nof(fx *f) { num(f, tg_adamw_state_read(f->adamw, NULL, "opt", &f->err)); }
static void c_adamw_state_read_missing(fx *f)
{
    tg_st_file *st = st_kv(f);
    num(f, tg_adamw_state_read(f->adamw, st, "opt", &f->err));
    tg_st_free(st);
}
static void c_adamw_set_update_nop(fx *f) { num(f, tg_adamw_set_update(f->adamw, NULL, false, &f->err)); }
static void c_adamw_updates(fx *f) { flag(f, tg_adamw_updates(NULL, f->x)); }
static void c_muon_takes(fx *f) { flag(f, tg_muon_takes(tg_params_at(f->p, 0))); } /* "w": no numbered block */
static void c_muon_new_nop(fx *f) { ptr(f, tg_muon_new(NULL, NULL, &f->err)); }
static void c_muon_new_select_1d(fx *f)
{
    tg_params *p = tg_params_new(TG_F32, NULL);
    tg_params_add(p, "b", TT_SHAPE(3), NULL);
    ptr(f, tg_muon_new_select(p, NULL, (const bool[]){true}, &f->err));
    tg_params_free(p);
}
static void c_muon_updates(fx *f) { flag(f, tg_muon_updates(NULL, f->x)); }
static void c_muon_exclude(fx *f) { num(f, tg_muon_exclude(NULL, f->adamw, &f->err)); }
static void c_muon_exclude_other(fx *f)
{
    tg_params *p = tg_params_new(TG_F32, NULL);
    tg_params_add(p, "blocks.0.w", TT_SHAPE(2, 2), NULL);
    tg_muon *o = tg_muon_new(p, NULL, NULL);
    const int rc = tg_muon_exclude(o, f->adamw, &f->err);
    snprintf(f->got, sizeof f->got, "%d, w %s", rc,
             tg_adamw_updates(f->adamw, tg_params_at(f->p, 0)) ? "updated" : "left");
    tg_muon_free(o);
    tg_params_free(p);
}
static void c_muon_step_noo(fx *f) { num(f, tg_muon_step(NULL, 0.02, &f->err)); }
static void c_muon_step_nan(fx *f)
{
    tg_muon *o = tg_muon_new(f->p, NULL, NULL);
    const int rc = tg_muon_step(o, NAN, &f->err);
    snprintf(f->got, sizeof f->got, "%d, steps %lld", rc, (long long)tg_muon_steps(o));
    tg_muon_free(o);
}
static void c_muon_step_part_bad(fx *f)
{
    tg_muon *o = tg_muon_new(f->p, NULL, NULL);
    num(f, tg_muon_step_part(o, 0.02, 1, 1, &f->err));
    tg_muon_free(o);
}
static void c_muon_owner(fx *f) { num(f, tg_muon_owner(NULL, f->x, 2)); }
static void c_muon_steps(fx *f) { num(f, (double)tg_muon_steps(NULL)); }
static void c_muon_set_steps_noo(fx *f) { num(f, tg_muon_set_steps(NULL, 3, &f->err)); }
static void c_muon_set_steps_neg(fx *f)
{
    tg_muon *o = tg_muon_new(f->p, NULL, NULL);
    const int rc = tg_muon_set_steps(o, -1, &f->err);
    snprintf(f->got, sizeof f->got, "%d, steps %lld", rc, (long long)tg_muon_steps(o));
    tg_muon_free(o);
}
static void c_muon_momentum(fx *f) { ptr(f, tg_muon_momentum(NULL)); }
static void c_muon_numel(fx *f) { num(f, (double)tg_muon_numel(NULL)); }
static void c_muon_free(fx *f)
{
    (void)f;
    tg_muon_free(NULL);
}
static void c_muon_state_write_noo(fx *f) { num(f, tg_muon_state_write(NULL, f->w, "opt")); }
static void c_muon_state_read_missing(fx *f)
{
    tg_muon *o = tg_muon_new(f->p, NULL, NULL);
    tg_st_file *st = st_kv(f);
    num(f, tg_muon_state_read(o, st, "opt", &f->err));
    tg_st_free(st);
    tg_muon_free(o);
}
static void c_ema_new_nop(fx *f) { ptr(f, tg_ema_new(NULL, 0.9, &f->err)); }
static void c_ema_new_bad(fx *f) { ptr(f, tg_ema_new(f->p, 1, &f->err)); }
static void c_ema_update(fx *f) { num(f, tg_ema_update(NULL, &f->err)); }
static void c_ema_swap(fx *f) { num(f, tg_ema_swap(NULL, &f->err)); }
static void c_ema_reset(fx *f) { num(f, tg_ema_reset(NULL, &f->err)); }
static void c_ema_update_noerr(fx *f) { num(f, tg_ema_update(NULL, NULL)); }
static void c_ema_decay(fx *f) { num(f, tg_ema_decay(NULL)); }
static void c_ema_values(fx *f) { ptr(f, tg_ema_values(NULL)); }
static void c_ema_numel(fx *f) { num(f, (double)tg_ema_numel(NULL)); }
static void c_ema_free(fx *f)
{
    (void)f;
    tg_ema_free(NULL);
}
static void c_ema_state_write_noe(fx *f) { num(f, tg_ema_state_write(NULL, f->w, "ema")); }
static void c_ema_state_read_missing(fx *f)
{
    tg_ema *e = tg_ema_new(f->p, 0.9, NULL);
    tg_st_file *st = st_kv(f);
    num(f, tg_ema_state_read(e, st, "ema", &f->err));
    tg_st_free(st);
    tg_ema_free(e);
}
static void c_adamw_step_grad_noo(fx *f) { num(f, tg_adamw_step_grad(NULL, 0.1, NULL, NULL)); }
static void c_clip_part_null(fx *f) { num(f, tg_clip_grad_norm_part(NULL, TG_F32, 6, 1, NULL, NULL)); }
static void c_clip_part_neg(fx *f) { num(f, tg_clip_grad_norm_part(tg_params_grad(f->p), TG_F32, -1, 1, NULL, NULL)); }
static void c_clip_part_i32(fx *f) { num(f, tg_clip_grad_norm_part(tg_params_grad(f->p), TG_I32, 6, 1, NULL, NULL)); }
/* train/train.h */
static tg_vocab vocab_fx;
static void c_vocab_bytes(fx *f)
{
    (void)f;
    tg_vocab_bytes(NULL, "ab", 2);
}
static void c_vocab_bytes_notext(fx *f)
{
    tg_vocab_bytes(&vocab_fx, NULL, 5);
    num(f, vocab_fx.size);
}
static void c_vocab_llama2c(fx *f)
{
    (void)f;
    tg_vocab_llama2c(NULL);
}
static void c_vocab_ids(fx *f)
{
    (void)f;
    tg_vocab_ids(NULL, 5);
}
static void c_vocab_tokenizer(fx *f) { num(f, tg_vocab_tokenizer(&vocab_fx, NULL, false, 0, &f->err)); }
static void c_vocab_free(fx *f)
{
    (void)f;
    tg_vocab_release(NULL);
}
static void c_vocab_to_string(fx *f) { num(f, tg_vocab_to_string(NULL, buf, sizeof buf)); }
static void c_vocab_to_string_nobuf(fx *f)
{
    tg_vocab_llama2c(&vocab_fx);
    num(f, tg_vocab_to_string(&vocab_fx, NULL, 8));
}
static void c_vocab_from_string(fx *f) { num(f, tg_vocab_from_string(&vocab_fx, NULL, &f->err)); }
static void c_vocab_from_string_bad(fx *f) { num(f, tg_vocab_from_string(&vocab_fx, "ids:x", &f->err)); }
static void c_vocab_write(fx *f) { num(f, tg_vocab_write(NULL, f->w)); }
static void c_vocab_read(fx *f) { num(f, tg_vocab_read(&vocab_fx, NULL, &f->err)); }
static void c_vocab_read_none(fx *f)
{
    tg_st_file *st = st_kv(f);
    num(f, tg_vocab_read(&vocab_fx, st, &f->err));
    tg_st_free(st);
}
static void c_vocab_encode(fx *f) { num(f, tg_vocab_encode(NULL, "a", 1, (int32_t[1]){0}, NULL)); }
static void c_vocab_encode_noout(fx *f)
{
    tg_vocab_llama2c(&vocab_fx);
    num(f, tg_vocab_encode(&vocab_fx, "a", 1, NULL, NULL));
}
static void c_vocab_decode(fx *f) { num(f, tg_vocab_decode(NULL, 3, buf)); }
static void c_tok_same(fx *f) { flag(f, tg_tok_same(NULL, NULL)); }
static void c_dataset_text(fx *f) { num(f, tg_dataset_from_text(NULL, &vocab_fx, "a", 1, 1, &f->err)); }
static void c_dataset_text_block(fx *f)
{
    tg_dataset d;
    tg_vocab_llama2c(&vocab_fx);
    num(f, tg_dataset_from_text(&d, &vocab_fx, "abc", 3, 0, &f->err));
}
static void c_dataset_files(fx *f)
{
    tg_dataset d;
    tg_vocab_ids(&vocab_fx, 10);
    num(f, tg_dataset_from_token_files(&d, &vocab_fx, NULL, NULL, 4, NULL, &f->err));
}
static void c_dataset_files_missing(fx *f)
{
    tg_dataset d;
    tg_vocab_ids(&vocab_fx, 10);
    num(f, tg_dataset_from_token_files(&d, &vocab_fx, tt_path("none.bin"), NULL, 4, NULL, &f->err));
}
static void c_text_train_bytes(fx *f) { num(f, (double)tg_text_train_bytes(NULL, 10)); }
static void c_dataset_bpt(fx *f)
{
    (void)f;
    tg_dataset_bytes_per_token(NULL, &vocab_fx);
}
static void c_dataset_rows(fx *f)
{
    int32_t x[4] = {7, 7, 7, 7}, y[4];
    tg_dataset_rows(NULL, false, &(tg_rows){x, y, 1, 0, 1, 4}, &rng);
    num(f, x[0]);
}
static void c_dataset_rows_short(fx *f)
{
    int32_t tokens[3] = {1, 2, 3}, x[4] = {7, 7, 7, 7}, y[4];
    const tg_dataset d = {tokens, 3, 3, {1, 1}}; /* 3 tokens: no window of 5 */
    tg_dataset_rows(&d, false, &(tg_rows){x, y, 1, 0, 1, 4}, &rng);
    num(f, x[0]);
}
static void c_dataset_epoch_rows(fx *f)
{
    int32_t tokens[20] = {0}, x[4] = {7, 7, 7, 7}, y[4];
    const tg_dataset d = {tokens, 20, 10, {1, 1}};
    tg_dataset_epoch_rows(&d, false, &(tg_rows){x, y, 1, 0, 1, 4}, 1, -1); /* at -1: no place in the sequence */
    num(f, x[0]);
}
static void c_dataset_epoch_windows(fx *f)
{
    int32_t tokens[3] = {1, 2, 3};
    const tg_dataset d = {tokens, 3, 3, {1, 1}}; /* 3 tokens: no window of 5 */
    num(f, (double)tg_dataset_epoch_windows(&d, false, 4));
}
static void c_dataset_free(fx *f)
{
    (void)f;
    tg_dataset_release(NULL);
}
static void c_eval_loss(fx *f) { num(f, tg_eval_loss(f->g, NULL, NULL, false, NULL, &f->err)); }
static void c_eval_loss_spec(fx *f)
{
    int32_t tokens[20] = {0};
    const tg_dataset d = {tokens, 20, 10, {1, 1}};
    const tg_eval_spec s = {.batch = 1, .accum = 1, .T = 4, .iters = 1, .rank = 2, .ranks = 2};
    num(f, tg_eval_loss(f->g, &(tg_model){0}, &d, false, &s, &f->err));
}
static void c_file_read(fx *f)
{
    size_t len = 7;
    ptr(f, tg_file_read(NULL, &len, &f->err));
}
static void c_file_read_missing(fx *f)
{
    size_t len = 7;
    ptr(f, tg_file_read(tt_path("none.txt"), &len, &f->err));
}
static void c_vocab_space(fx *f) { flag(f, tg_vocab_space_before_text(NULL)); }
static void c_vocab_check_size(fx *f) { num(f, tg_vocab_check_size(NULL, 3, "its", &f->err)); }
static void c_ckpt_load_vocab(fx *f)
{
    tg_vocab v;
    num(f, tg_checkpoint_load_vocab(NULL, &(tg_model){0}, &v, &f->err));
}
static void c_llama2c_export(fx *f) { num(f, tg_llama2c_export(NULL, tt_path("m.bin"), NULL, &f->err)); }
static void c_llama2c_tokenizer_write(fx *f) { num(f, tg_llama2c_tokenizer_write(NULL, tt_path("t.bin"), &f->err)); }
static void c_gguf_export(fx *f) { num(f, tg_gguf_export(NULL, tt_path("m.gguf"), TG_GGUF_F32, &f->err)); }
static void c_gguf_export_nopath(fx *f) { num(f, tg_gguf_export(NULL, NULL, TG_GGUF_F32, &f->err)); }
static void c_gguf_export_type(fx *f) { num(f, tg_gguf_export(NULL, tt_path("m.gguf"), (tg_gguf_type)3, &f->err)); }
static void c_gguf_import(fx *f)
{
    num(f, tg_gguf_import(tt_path("none.gguf"), tt_path("c.safetensors"), TG_F32, &f->err));
}
static void c_llama2c_import(fx *f)
{
    num(f, tg_llama2c_import(tt_path("none.bin"), NULL, tt_path("c.safetensors"), &f->err));
}
static void c_metrics_open(fx *f) { ptr(f, tg_metrics_open(NULL, NULL, 0, -1, NULL, 0, &f->err)); }
static void c_metrics_open_format(fx *f)
{
    const tg_metrics_column c = {"loss", "%n"};
    ptr(f, tg_metrics_open(tt_path("m.csv"), &c, 1, -1, NULL, 0, &f->err));
}
static void c_metrics_write(fx *f) { num(f, tg_metrics_write(NULL, 1, NULL)); }
static void c_metrics_close(fx *f) { num(f, tg_metrics_close(NULL)); }
static void c_train_state_init(fx *f)
{
    (void)f;
    tg_train_state_init(NULL, 1);
}
static void c_ckpt_save_nom(fx *f)
{
    num(f, tg_checkpoint_save(tt_path("c.safetensors"), &(tg_checkpoint){}, &f->err));
}
static void c_ckpt_save_nometa(fx *f)
{
    num(f,
        tg_checkpoint_save(tt_path("c.safetensors"),
                           &(tg_checkpoint){.model = &(tg_model){.family = tg_model_family_find("gpt")}, .n_meta = 2},
                           &f->err));
}
static void c_ckpt_load_model(fx *f)
{
    tg_model m;
    num(f, tg_checkpoint_load_model(NULL, TG_F32, -1, &m, &f->err));
}
static void c_ckpt_load_model_nokeys(fx *f)
{
    tg_st_file *st = st_kv(f);
    tg_model m;
    num(f, tg_checkpoint_load_model(st, TG_F32, -1, &m, &f->err));
    tg_st_free(st);
}
static void c_ckpt_load_train(fx *f)
{
    tg_train_state ts;
    num(f, tg_checkpoint_load_train(NULL, f->adamw, NULL, NULL, &ts, 10, &f->err));
}
static void c_ckpt_load_train_weights(fx *f)
{
    tg_st_file *st = st_kv(f);
    tg_train_state ts;
    num(f, tg_checkpoint_load_train(st, f->adamw, NULL, NULL, &ts, 10, &f->err));
    tg_st_free(st);
}
static void c_dist_init_null(fx *f) { num(f, tg_dist_init(NULL, NULL, NULL)); } /* no launcher here */
static void c_dist_allreduce_null(fx *f) { num(f, tg_dist_allreduce_f64(NULL, 2, TG_DIST_SUM)); }
static void c_dist_allreduce_op(fx *f)
{
    double x = 1;
    num(f, tg_dist_allreduce_f64(&x, 1, (tg_dist_op)7));
}
static void c_dist_allreduce_i64_neg(fx *f)
{
    int64_t x = 1;
    num(f, tg_dist_allreduce_i64(&x, -1, TG_DIST_MAX));
}
static void c_dist_bcast_root(fx *f)
{
    char b[4] = "abc";
    num(f, tg_dist_bcast(b, 4, tg_dist_size()));
}
static void c_dist_bcast_null(fx *f) { num(f, tg_dist_bcast(NULL, 4, 0)); }
static void c_dist_first_failure(fx *f)
{
    snprintf(f->err.msg, sizeof f->err.msg, "%s", "the message");
    num(f, tg_dist_first_failure(true, f->err.msg, 4)); /* one process: rank 0 failed; msg cut to 3 bytes */
    if (strcmp(f->err.msg, "the")) snprintf(f->got, sizeof f->got, "a message of %zu bytes", strlen(f->err.msg));
}
static void c_dist_shard_range(fx *f)
{
    int64_t lo = 9, hi = 9;
    tg_dist_shard_range(10, 2, 2, &lo, &hi);
    num(f, (double)(lo + hi));
}
static void c_dist_grads_nop(fx *f) { ptr(f, tg_dist_grads_new(NULL, NULL, &f->err)); }
static void c_dist_grads_empty(fx *f)
{
    tg_params *p = tg_params_new(TG_F32, NULL);
    ptr(f, tg_dist_grads_new(p, NULL, &f->err));
    tg_params_free(p);
}
static void c_dist_grads_free(fx *f)
{
    (void)f;
    tg_dist_grads_free(NULL);
}
static void c_dist_begin_null(fx *f) { num(f, tg_dist_grads_begin(NULL, f->g)); }
static void c_dist_begin_nog(fx *f)
{
    tg_dist_grads *d = tg_dist_grads_new(f->p, NULL, NULL);
    num(f, tg_dist_grads_begin(d, NULL));
    tg_dist_grads_free(d);
}
static void c_dist_begin_twice(fx *f)
{
    tg_dist_grads *d = tg_dist_grads_new(f->p, NULL, NULL);
    tg_dist_grads_begin(d, f->g);
    num(f, tg_dist_grads_begin(d, f->g));
    tg_dist_grads_end(d);
    tg_dist_grads_free(d);
}
static void c_dist_end_unbegun(fx *f)
{
    tg_dist_grads *d = tg_dist_grads_new(f->p, NULL, NULL);
    num(f, tg_dist_grads_end(d));
    tg_dist_grads_free(d);
}
static void c_dist_end_null(fx *f) { num(f, tg_dist_grads_end(NULL)); }
static void c_dist_shard_null(fx *f)
{
    int64_t lo = 3, hi = 3;
    tg_dist_grads_shard(NULL, &lo, &hi);
    num(f, (double)(lo + hi));
}
static void c_dist_shard_grad_null(fx *f) { ptr(f, tg_dist_grads_shard_grad(NULL)); }
static void c_dist_clip_null(fx *f) { num(f, tg_dist_grads_clip(NULL, 1)); }
static void c_dist_gather_params_null(fx *f) { num(f, tg_dist_grads_gather_params(NULL)); }
static void c_dist_gather_shard_null(fx *f)
{
    tg_dist_grads *d = tg_dist_grads_new(f->p, NULL, NULL);
    num(f, tg_dist_grads_gather_shard(d, tg_params_grad(f->p), NULL)); /* rank 0 needs full */
    tg_dist_grads_free(d);
}
static void c_dist_probe_null(fx *f) { num(f, tg_dist_grads_probe(NULL, 1)); }
static void c_dist_bucket_count_null(fx *f) { num(f, tg_dist_grads_bucket_count(NULL)); }
static void c_dist_bucket_past(fx *f)
{
    tg_dist_grads *d = tg_dist_grads_new(f->p, NULL, NULL);
    tg_dist_bucket b;
    num(f, tg_dist_grads_bucket(d, tg_dist_grads_bucket_count(d), &b));
    tg_dist_grads_free(d);
}
static void c_dist_stats_null(fx *f)
{
    tg_dist_stats s;
    memset(&s, 0xff, sizeof s);
    tg_dist_grads_stats(NULL, &s);
    num(f, (double)s.steps + s.wait_s);
}
static void c_lr_warmup_max(fx *f) { num(f, tg_lr_cosine(INT64_MAX - 1, INT64_MAX, INT64_MAX, 2.0, 0)); }
static void c_lr_at_null(fx *f) { num(f, tg_lr_at(NULL, 3)); }
static void c_budget_nan(fx *f)
{
    const tg_budget_costs c = {.spent = 1, .step = NAN, .eval = 1};
    num(f, (double)tg_budget_steps(10, 0.1, &c, 5, 100));
}
static void c_budget_none_fit(fx *f)
{
    const tg_budget_costs c = {.spent = 9, .step = 1, .eval = 1};
    num(f, (double)tg_budget_steps(10, 0, &c, 5, 100));
}
static void c_snapshot_null(fx *f) { ptr(f, tg_train_snapshot_take(NULL, NULL, NULL, NULL, &f->err)); }
static void c_snapshot_restore_null(fx *f) { num(f, tg_train_snapshot_restore(NULL, NULL, NULL, NULL, NULL)); }
static void c_snapshot_free_null(fx *f) { (void)f, tg_train_snapshot_free(NULL); }

/* text/text.h: tok() is the tokenizer of 260 ids, files are made in tt_dir */
static const tg_bpe_options opts259 = {.vocab_size = 259};
static void c_bpe_notext(fx *f) { ptr(f, tg_bpe_train(NULL, 5, &opts259, &f->err)); }
static void c_bpe_empty(fx *f) { ptr(f, tg_bpe_train("ab", 0, &opts259, &f->err)); }
static void c_bpe_noopts(fx *f) { ptr(f, tg_bpe_train("ab", 2, NULL, &f->err)); }
static void c_bpe_vocab_small(fx *f) { ptr(f, tg_bpe_train("ab", 2, &(tg_bpe_options){.vocab_size = 258}, &f->err)); }
static void c_bpe_vocab_big(fx *f)
{
    ptr(f, tg_bpe_train("ab", 2, &(tg_bpe_options){.vocab_size = (1 << 24) + 1}, &f->err));
}
static void c_bpe_words(fx *f)
{
    ptr(f, tg_bpe_train("ab", 2, &(tg_bpe_options){.vocab_size = 259, .words = (tg_bpe_words)2}, &f->err));
}
static void c_bpe_noerr(fx *f) { ptr(f, tg_bpe_train(NULL, 5, &opts259, NULL)); }

/* A tiktoken file of the 256 single bytes (ranks 0..255) followed by extra */
static const char *tiktoken_file(const char *name, const char *extra)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static char s[256 * 12 + 64];
    size_t n = 0;
    for (int b = 0; b < 256; b++)
        n += (size_t)snprintf(s + n, sizeof s - n, "%c%c== %d\n", b64[b >> 2], b64[(b & 3) << 4], b);
    n += (size_t)snprintf(s + n, sizeof s - n, "%s", extra);
    return file_of(name, s, n);
}
/* tg_tok_load_tiktoken of a file holding text */
static void tiktoken(fx *f, const char *text)
{
    tg_tokenizer *t = tg_tok_load_tiktoken(file_of("bad.tiktoken", text, strlen(text)), &f->err);
    ptr(f, t);
    tg_tok_free(t);
}
static void c_tiktoken_nopath(fx *f) { ptr(f, tg_tok_load_tiktoken(NULL, &f->err)); }
static void c_tiktoken_missing(fx *f) { ptr(f, tg_tok_load_tiktoken(tt_path("missing.tiktoken"), &f->err)); }
static void c_tiktoken_noerr(fx *f) { ptr(f, tg_tok_load_tiktoken(tt_path("missing.tiktoken"), NULL)); }
static void c_tiktoken_dir(fx *f) { ptr(f, tg_tok_load_tiktoken(tt_dir, &f->err)); }
/* train/generate.h */
static void c_sampler_new_opts(fx *f)
{
    ptr(f, tg_sampler_new(&(tg_sampler_options){.top_k = -1}, 5, fresh()));
    note(f, te.msg);
}
static void c_sampler_new_v0(fx *f)
{
    ptr(f, tg_sampler_new(NULL, 0, fresh()));
    note(f, te.msg);
}
static void c_sampler_free(fx *f)
{
    (void)f;
    tg_sampler_free(NULL);
}
static void c_sampler_pick_null(fx *f)
{
    num(f, tg_sampler_pick(NULL, f->x, 0, fresh()));
    note(f, te.msg);
}
/* a sampler of 3 ids on logits (2,3) */
static void sampler_pick(fx *f, const tg_tensor *l, int64_t row)
{
    tg_sampler *s = tg_sampler_new(NULL, 3, NULL);
    if (!s) abort();
    num(f, tg_sampler_pick(s, l, row, fresh()));
    note(f, te.msg);
    tg_sampler_free(s);
}
static void c_sampler_pick_i32(fx *f) { sampler_pick(f, f->ids, 0); }
static void c_sampler_pick_row(fx *f) { sampler_pick(f, f->x, 2); }
static void c_prompt_ids_null(fx *f)
{
    int32_t *ids;
    num(f, (double)tg_prompt_ids(NULL, 5, "a", 1, &ids, fresh()));
    note(f, te.msg);
}
static void c_prompt_ids_byte(fx *f)
{
    tg_vocab v;
    int32_t *ids = (int32_t *)1;
    tg_vocab_bytes(&v, "ab", 2);
    num(f, (double)tg_prompt_ids(&v, 2, "abc", 3, &ids, fresh()));
    note(f, te.msg);
    if (ids) snprintf(f->got, sizeof f->got, "ids not NULL");
}
static void c_prompt_ids_notok(fx *f)
{
    tg_vocab v = {.kind = TG_VOCAB_TOKENIZER, .size = 5};
    int32_t *ids;
    num(f, (double)tg_prompt_ids(&v, 5, "a", 1, &ids, fresh()));
    note(f, te.msg);
}
static void c_generate_null(fx *f)
{
    num(f, (double)tg_generate(NULL, (int32_t[]){0}, 1, 1, NULL, fresh()));
    note(f, te.msg);
}
static void c_generate_noprompt(fx *f)
{
    tg_model m = small_model("llama");
    num(f, (double)tg_generate(&m, NULL, 0, 1, NULL, fresh()));
    note(f, te.msg);
    tg_model_release(&m);
}
static void c_text_nll_null(fx *f)
{
    num(f, tg_text_nll(NULL, (int32_t[]){0, 1}, 2, 0, NULL, fresh()));
    note(f, te.msg);
}
static void c_text_nll_short(fx *f)
{
    tg_model m = small_model("gpt");
    int64_t preds = 7;
    num(f, tg_text_nll(&m, (int32_t[]){0}, 1, 0, &preds, fresh()));
    note(f, te.msg);
    if (preds) snprintf(f->got, sizeof f->got, "predictions %lld", (long long)preds);
    tg_model_release(&m);
}
/* train/run.h, train/run_settings.h, train/corpus.h */
static void c_run_settings(fx *f) { ptr(f, tg_run_settings(NULL)); }
static void c_run_setting_find(fx *f) { ptr(f, tg_run_setting_find(NULL)); }
static void c_run_setting_parse(fx *f) { num(f, tg_run_setting_parse(NULL, "1", NULL, buf, fresh())), note(f, te.msg); }
static void c_run_setting_parse_range(fx *f)
{
    int v = 3;
    num(f, tg_run_setting_parse(tg_run_setting_find("n-layer"), "300", "--n-layer", &v, fresh())), note(f, te.msg);
    if (v != 3) snprintf(f->got, sizeof f->got, "changed to %d", v);
}
static void c_run_setting_format(fx *f) { num(f, tg_run_setting_format(NULL, buf, buf, sizeof buf)); }
static void c_run_setting_format_small(fx *f)
{
    const double x = 0.125;
    num(f, tg_run_setting_format(tg_run_setting_find("lr"), &x, buf, 3));
}
static void c_run_config_init(fx *f) { (void)f, tg_run_config_init(NULL); }
static void c_run_config_release(fx *f) { (void)f, tg_run_config_release(NULL); }
static void c_run_config_set(fx *f) { num(f, tg_run_config_set(NULL, "lr", "1", NULL, fresh())), note(f, te.msg); }
static void c_run_config_set_unknown(fx *f)
{
    tg_run_config c;
    tg_run_config_init(&c);
    num(f, tg_run_config_set(&c, "\x1b[lr", "1", NULL, fresh())), note(f, te.msg);
}
static void c_run_config_get(fx *f) { num(f, tg_run_config_get(NULL, "lr", buf, sizeof buf)); }
static void c_run_config_read(fx *f)
{
    tg_run_config c;
    num(f, tg_run_config_read(&c, NULL, fresh())), note(f, te.msg);
}
static void c_config_file_read_null(fx *f) { num(f, tg_config_file_read(NULL, "x", fresh())), note(f, te.msg); }
static void c_config_file_read_missing(fx *f)
{
    tg_config_file cf = {.n = 3};
    num(f, tg_config_file_read(&cf, tt_path("no.conf"), fresh())), note(f, te.msg);
    if (cf.n || cf.text || cf.lines) snprintf(f->got, sizeof f->got, "f not emptied");
}
static void c_config_file_release(fx *f) { (void)f, tg_config_file_release(NULL); }
static void c_run_config_load(fx *f)
{
    tg_run_config c;
    num(f, tg_run_config_load(&c, "/nonexistent", fresh())), note(f, te.msg);
}
static void c_run_new(fx *f) { ptr(f, tg_run_new(NULL, NULL, NULL, fresh())), note(f, te.msg); }
static void c_run_resume(fx *f) { ptr(f, tg_run_resume(tt_path("norun"), NULL, NULL, fresh())), note(f, te.msg); }
static void c_run_free(fx *f) { (void)f, tg_run_free(NULL); }
static void c_run_lr(fx *f) { num(f, tg_run_lr(NULL)); }
static void c_run_step(fx *f) { num(f, tg_run_step(NULL, 1e-3, NULL, fresh())), note(f, te.msg); }
static void c_run_eval_due(fx *f) { flag(f, tg_run_eval_due(NULL)); }
static void c_run_eval_spec(fx *f) { num(f, tg_run_eval_spec(NULL, 5, 1).batch); }
static void c_ckpt_weights(fx *f) { ptr(f, tg_checkpoint_weights(NULL)); }
static void c_ckpt_has_averages(fx *f) { flag(f, tg_checkpoint_has_averages(NULL)); }
static void c_ckpt_load_averages(fx *f) { num(f, tg_checkpoint_load_averages(NULL, &(tg_model){0}, &f->err)); }
static void c_run_evaluate(fx *f) { num(f, tg_run_evaluate(NULL, NULL, fresh())), note(f, te.msg); }
static void c_run_loss_format(fx *f) { num(f, tg_run_loss_format(NULL, buf, sizeof buf)); }
static void c_run_loss_format_small(fx *f) { num(f, tg_run_loss_format(&(tg_run_loss){.step = 1}, buf, 8)); }
static void c_run_save(fx *f) { num(f, tg_run_save(NULL, fresh())), note(f, te.msg); }
static void c_run_needs_plan(fx *f) { flag(f, tg_run_needs_plan(NULL)); }
static void c_run_plan_steps(fx *f) { num(f, tg_run_plan_steps(NULL, NULL, fresh())), note(f, te.msg); }
static void c_run_should_stop(fx *f) { num(f, tg_run_should_stop(NULL, NULL)); }
static void c_run_eta(fx *f) { num(f, tg_run_eta(NULL, &(tg_eta_plan){0})); }
static void c_run_describe(fx *f) { num(f, tg_run_describe(NULL, &(tg_run_info){0})); }
static void c_run_failed_alone(fx *f) { flag(f, tg_run_failed_alone(NULL)); }
static void c_run_checkpoint(fx *f)
{
    ptr(f, tg_run_checkpoint(NULL, buf, sizeof buf, NULL, fresh())), note(f, te.msg);
}
static void c_run_text_load(fx *f)
{
    tg_run_config c;
    tg_run_config_init(&c);
    c.data = "/nonexistent.txt";
    tg_run_text t;
    num(f, tg_run_text_load(&t, &c, NULL, true, NULL, fresh())), note(f, te.msg);
    if (t.text) snprintf(f->got, sizeof f->got, "a text");
}
static void c_run_text_release(fx *f) { (void)f, tg_run_text_release(NULL); }
static void c_run_tokens_load(fx *f)
{
    num(f, tg_run_tokens_load(NULL, NULL, NULL, NULL, true, NULL, fresh())), note(f, te.msg);
}
static void c_eta_evals_left(fx *f) { num(f, (double)tg_eta_evals_left(NULL, 3)); }
static void c_eta_seconds(fx *f) { num(f, tg_eta_seconds(NULL, 3)); }
static void c_eta_format(fx *f) { num(f, tg_eta_format(NULL, 3, buf, sizeof buf)); }
static void c_corpus_init(fx *f) { num(f, tg_corpus_init(NULL, 1, 100, fresh())), note(f, te.msg); }
static void c_corpus_release(fx *f) { (void)f, tg_corpus_release(NULL); }
static void c_corpus_floor(fx *f) { num(f, tg_corpus_floor(NULL)); }
/* pictures/pictures.h */
static void rgb_text(fx *f, tg_rgb c) { snprintf(f->got, sizeof f->got, "%d,%d,%d", c.r, c.g, c.b); }
static tg_image white2x2(void)
{
    tg_image im;
    if (tg_image_init(&im, 2, 2, (tg_rgb){255, 255, 255}, NULL)) abort();
    return im;
}
static void c_image_init_null(fx *f)
{
    num(f, tg_image_init(NULL, 2, 2, (tg_rgb){0, 0, 0}, fresh()));
    note(f, te.msg);
}
static void c_image_init_zero(fx *f)
{
    tg_image im = {.w = 7};
    num(f, tg_image_init(&im, 0, 5, (tg_rgb){0, 0, 0}, fresh()));
    note(f, te.msg);
    if (im.w || im.px) snprintf(f->got, sizeof f->got, "im not zeroed");
}
static void c_image_init_huge(fx *f)
{
    tg_image im;
    num(f, tg_image_init(&im, 65536, 65536, (tg_rgb){0, 0, 0}, fresh()));
    note(f, te.msg);
}
static void c_image_release(fx *f)
{
    (void)f;
    tg_image_release(NULL);
}
static void c_image_get_null(fx *f) { rgb_text(f, tg_image_get(NULL, 0, 0)); }
static void c_image_get_out(fx *f)
{
    tg_image im = white2x2();
    rgb_text(f, tg_image_get(&im, 2, 0));
    tg_image_release(&im);
}
static void c_image_clip(fx *f)
{
    (void)f;
    tg_image_clip(NULL, 0, 0, 1, 1);
}
static void c_image_fill_null(fx *f)
{
    (void)f;
    tg_image_fill_rect(NULL, 0, 0, 1, 1, (tg_rgb){0, 0, 0});
}
static void c_image_fill_clip(fx *f)
{
    tg_image im = white2x2();
    tg_image_clip(&im, 1, 1, 9, 9);
    tg_image_fill_rect(&im, INT_MIN, INT_MIN, INT_MAX, INT_MAX, (tg_rgb){1, 2, 3});
    snprintf(f->got, sizeof f->got, "%d,%d", tg_image_get(&im, 0, 0).r, tg_image_get(&im, 1, 1).r);
    tg_image_release(&im);
}
static void c_image_line_null(fx *f)
{
    (void)f;
    tg_image_line(NULL, (tg_xy){0, 0}, (tg_xy){1, 1}, 1, (tg_rgb){0, 0, 0});
}
static void c_image_line_far(fx *f)
{
    tg_image im = white2x2();
    tg_image_line(&im, (tg_xy){1e300, NAN}, (tg_xy){-1e300, 0}, INT_MAX, (tg_rgb){0, 0, 0});
    tg_image_line(&im, (tg_xy){3e9, 0}, (tg_xy){3e9, 1}, 1, (tg_rgb){0, 0, 0});
    rgb_text(f, tg_image_get(&im, 0, 0));
    tg_image_release(&im);
}
static void c_image_text_null(fx *f)
{
    (void)f;
    tg_image_text(NULL, 0, 0, 1, "a", (tg_rgb){0, 0, 0});
}
static void c_image_text_far(fx *f)
{
    tg_image im = white2x2();
    tg_image_text(&im, INT_MAX - 1, INT_MIN, INT_MAX, "abc", (tg_rgb){0, 0, 0});
    tg_image_text(&im, 0, 0, 1, NULL, (tg_rgb){0, 0, 0});
    rgb_text(f, tg_image_get(&im, 0, 0));
    tg_image_release(&im);
}
static void c_image_text_width_null(fx *f) { num(f, tg_image_text_width(NULL, 1)); }
static void c_image_text_width_scale(fx *f) { num(f, tg_image_text_width("ab", 0)); }
static void c_image_text_width_huge(fx *f) { num(f, tg_image_text_width("ab", INT_MAX)); }
static void c_image_label_char(fx *f)
{
    (void)f;
    tg_image_label_char(NULL, 0, 0, 1, 'a', (tg_rgb){0, 0, 0});
}
static void c_image_png_null(fx *f)
{
    uint8_t *png = (uint8_t *)1;
    size_t len = 1;
    num(f, tg_image_png(NULL, &png, &len, fresh()));
    note(f, te.msg);
    if (png || len) snprintf(f->got, sizeof f->got, "png or len not cleared");
}
static void c_image_png_empty(fx *f)
{
    uint8_t *png;
    size_t len;
    num(f, tg_image_png(&(tg_image){0}, &png, &len, fresh()));
    note(f, te.msg);
}
static void c_image_write_png_nopath(fx *f)
{
    tg_image im = white2x2();
    num(f, tg_image_write_png(&im, NULL, fresh()));
    note(f, te.msg);
    tg_image_release(&im);
}
static void c_image_write_png_nodir(fx *f)
{
    tg_image im = white2x2();
    num(f, tg_image_write_png(&im, "/nonexistent/x.png", fresh()));
    note(f, te.msg);
    tg_image_release(&im);
}
static void c_heatmap_level_nan(fx *f) { num(f, tg_heatmap_level(NAN)); }
static void c_heatmap_level_inf(fx *f) { num(f, tg_heatmap_level(INFINITY)); }
static void c_heatmap_level_colour_neg(fx *f) { rgb_text(f, tg_heatmap_level_colour(-5)); }
static void c_heatmap_level_colour_big(fx *f) { rgb_text(f, tg_heatmap_level_colour(999)); }
static void c_heatmap_colour_nan(fx *f) { rgb_text(f, tg_heatmap_colour(NAN)); }
static void c_heatmap_label_glyphs_null(fx *f) { num(f, tg_heatmap_label_glyphs((tg_heatmap_label){NULL, 5, false})); }
static void c_heatmap_label_glyphs_neg(fx *f) { num(f, tg_heatmap_label_glyphs((tg_heatmap_label){"abc", -1, false})); }
static void c_heatmap_cell_px_zero(fx *f) { num(f, tg_heatmap_cell_px(0, 0)); }
static void c_heatmap_cell_px_huge(fx *f) { num(f, tg_heatmap_cell_px(INT_MAX, 1)); }
static void c_heatmap_layout_zero(fx *f) { num(f, tg_heatmap_layout_of(0, 5, 1, 1).w); }
static void c_heatmap_layout_huge(fx *f) { num(f, tg_heatmap_layout_of(TG_HEATMAP_MAX_T + 1, 1, 1, 1).w); }
static void heatmap_png_of(fx *f, const tg_heatmap *m)
{
    uint8_t *png = (uint8_t *)1;
    size_t len = 1;
    num(f, tg_heatmap_png(m, &png, &len, fresh()));
    note(f, te.msg);
    if (png || len) snprintf(f->got, sizeof f->got, "png or len not cleared");
}
static const double W4[4] = {1, 0, 0.5, 0.5};
static void c_heatmap_png_null(fx *f) { heatmap_png_of(f, NULL); }
static void c_heatmap_png_size(fx *f)
{
    heatmap_png_of(f, &(tg_heatmap){.w = W4, .Tq = 0, .Tk = 2, .qtext = "", .ktext = "ab"});
}
static void c_heatmap_png_nolabels(fx *f)
{
    heatmap_png_of(f, &(tg_heatmap){.w = W4, .Tq = 2, .Tk = 2, .qtext = "ab"});
}
static void c_heatmap_png_now(fx *f)
{
    heatmap_png_of(f, &(tg_heatmap){.Tq = 2, .Tk = 2, .qtext = "ab", .ktext = "ab"});
}
static void c_attn_maps_init_null(fx *f)
{
    num(f, tg_attn_maps_init(NULL, NULL, NULL, 1, fresh()));
    note(f, te.msg);
}
static void c_attn_maps_init_nomodel(fx *f)
{
    tg_attn_maps a;
    num(f, tg_attn_maps_init(&a, NULL, (int32_t[]){0}, 1, fresh()));
    note(f, te.msg);
}
static void c_attn_maps_init_t(fx *f)
{
    tg_model m = small_model("gpt");
    tg_attn_maps a = {.T = 3};
    num(f, tg_attn_maps_init(&a, &m, (int32_t[]){0, 1, 2, 3, 4}, 5, fresh()));
    note(f, te.msg);
    if (a.T || a.w) snprintf(f->got, sizeof f->got, "a not zeroed");
    tg_model_release(&m);
}
static void c_attn_maps_init_id(fx *f)
{
    tg_model m = small_model("llama");
    tg_attn_maps a;
    num(f, tg_attn_maps_init(&a, &m, (int32_t[]){0, 9}, 2, fresh()));
    note(f, te.msg);
    tg_model_release(&m);
}
static void c_attn_maps_release(fx *f)
{
    (void)f;
    tg_attn_maps_release(NULL);
}
static void c_attn_labels_null(fx *f)
{
    ptr(f, tg_attn_labels(NULL, (int32_t[]){0}, 1, "a", 1, fresh()));
    note(f, te.msg);
}
static void c_attn_labels_none(fx *f)
{
    tg_vocab v;
    tg_vocab_bytes(&v, "ab", 2);
    ptr(f, tg_attn_labels(&v, (int32_t[]){0}, 0, "a", 1, fresh()));
    note(f, te.msg);
}
static void c_attn_labels_id(fx *f)
{
    tg_vocab v;
    tg_vocab_bytes(&v, "ab", 2);
    ptr(f, tg_attn_labels(&v, (int32_t[]){0, 2}, 2, "ab", 2, fresh()));
    note(f, te.msg);
}
static const tg_heatmap_label LAB2[2] = {{"a", 1, false}, {"b", 1, false}};
static double W8[8] = {1, 0, 0.5, 0.5, 1, 0, 0.25, 0.75};
static uint8_t CAUSAL2[4] = {0, 1, 0, 0};
static const tg_attn_maps MAPS2 = {.n_layer = 1, .n_head = 2, .T = 2, .w = W8, .blocked = CAUSAL2};
static void c_attn_heatmap_null(fx *f) { ptr(f, tg_attn_heatmap(NULL, 0, 0, LAB2).w); }
static void c_attn_heatmap_layer(fx *f) { ptr(f, tg_attn_heatmap(&MAPS2, 1, 0, LAB2).w); }
static void c_attn_png_name_null(fx *f) { ptr(f, tg_attn_png_name(0, 0, NULL, 8)); }
static void c_attn_png_name_short(fx *f) { text(f, tg_attn_png_name(1, 2, buf, 4)); }
static void c_attn_page_code_nan(fx *f) { num(f, tg_attn_page_code(NAN)); }
static void c_attn_page_code_inf(fx *f) { num(f, tg_attn_page_code(INFINITY)); }
static void c_attn_page_html_null(fx *f)
{
    size_t len = 1;
    ptr(f, tg_attn_page_html(NULL, LAB2, "character", &len, fresh()));
    note(f, te.msg);
    if (len) snprintf(f->got, sizeof f->got, "len not cleared");
}
static void c_attn_page_html_empty(fx *f)
{
    size_t len;
    ptr(f, tg_attn_page_html(&(tg_attn_maps){.n_layer = 1, .n_head = 1, .w = W8}, LAB2, "token", &len, fresh()));
    note(f, te.msg);
}
static void c_attn_page_html_huge(fx *f)
{
    size_t len;
    const tg_attn_maps a = {.n_layer = 1, .n_head = 1, .T = 65536, .w = W8}; /* refused before w is read */
    ptr(f, tg_attn_page_html(&a, LAB2, "token", &len, fresh()));
    note(f, te.msg);
}
static void c_attn_write_nodir(fx *f)
{
    num(f, tg_attn_write(&MAPS2, LAB2, "token", NULL, fresh()));
    note(f, te.msg);
}
static void c_attn_write_nomaps(fx *f)
{
    num(f, tg_attn_write(NULL, LAB2, "token", tt_path("."), fresh()));
    note(f, te.msg);
}
static void c_lossplot_png_null(fx *f)
{
    num(f, tg_lossplot_png(NULL, NULL, NULL, NULL, fresh()));
    note(f, te.msg);
}
static void c_lossplot_png_noarrays(fx *f)
{
    uint8_t *png;
    size_t len;
    num(f, tg_lossplot_png(NULL, &(tg_loss_curve){NULL, NULL, 3}, &png, &len, fresh()));
    note(f, te.msg);
}
static void c_lossplot_write_null(fx *f)
{
    num(f, tg_lossplot_write(NULL, tt_path("l.png"), NULL, fresh()));
    note(f, te.msg);
}
static void c_lossplot_write_nofile(fx *f)
{
    num(f, tg_lossplot_write("/nonexistent.csv", tt_path("l.png"), NULL, fresh()));
    note(f, te.msg);
}
/* formats/formats.h: the Hugging Face layout */
static void c_hf_import_nodir(fx *f) { num(f, tg_hf_import(NULL, tt_path("o.safetensors"), NULL, NULL, 0, &f->err)); }
static void c_hf_import_noconfig(fx *f)
{
    num(f, tg_hf_import("/nonexistent", tt_path("o.safetensors"), NULL, NULL, 0, &f->err));
}
static void c_hf_import_noerr(fx *f) { num(f, tg_hf_import(NULL, NULL, NULL, NULL, 0, NULL)); }
static void c_hf_export_nockpt(fx *f) { num(f, tg_hf_export(NULL, tt_path("hf"), NULL, 0, &f->err)); }
static void c_tiktoken_empty(fx *f) { tiktoken(f, "\n\n"); }
static void c_tiktoken_norank(fx *f) { tiktoken(f, "YQ==\n"); }
static void c_tiktoken_base64(fx *f) { tiktoken(f, "YQ== 0\nY*== 1\n"); }
static void c_tiktoken_rank(fx *f) { tiktoken(f, "YQ== 0x\n"); }
static void c_tiktoken_rank_twice(fx *f) { tiktoken(f, "YQ== 0\nYg== 0\n"); }
static void c_tiktoken_gap(fx *f) { tiktoken(f, "YQ== 0\nYg== 2\n"); }
static void c_tiktoken_byte(fx *f) { tiktoken(f, "YQ== 0\n"); }
static void c_tiktoken_piece_twice(fx *f)
{
    tg_tokenizer *t = tg_tok_load_tiktoken(tiktoken_file("twice.tiktoken", "YQ== 256\n"), &f->err);
    ptr(f, t);
    tg_tok_free(t);
}
static void c_tok_load_nopath(fx *f) { ptr(f, tg_tok_load(NULL, &f->err)); }
static void c_tok_load_missing(fx *f) { ptr(f, tg_tok_load(tt_path("missing.tok"), &f->err)); }
static void c_tok_load_noerr(fx *f) { ptr(f, tg_tok_load(tt_path("missing.tok"), NULL)); }
static void c_tok_load_notok(fx *f)
{
    tg_st_writer_add_meta(f->w, "k", "v");
    ptr(f, tg_tok_load(st_saved(f, "notok.safetensors"), &f->err));
}
static void c_tok_load_cut(fx *f)
{
    static const unsigned char head[] = {64, 0, 0, 0, 0, 0, 0, 0, '{', '"'}; /* a 64-byte header, cut short */
    ptr(f, tg_tok_load(file_of("cut.safetensors", head, sizeof head), &f->err));
}
/* tg_tok_from_st of a file with metadata tokenizer = kind, tokenizer.version = version */
static void from_st(fx *f, const char *kind, const char *version)
{
    tg_st_writer_add_meta(f->w, "tokenizer", kind);
    tg_st_writer_add_meta(f->w, "tokenizer.version", version);
    tg_st_writer_add(f->w, "tokenizer.pieces", "F32", 1, (int64_t[]){1}, wrap_data);
    tg_st_file *st = tg_st_load(st_saved(f, "tok.safetensors"), NULL);
    ptr(f, tg_tok_from_st(st, &f->err));
    tg_st_free(st);
}
static void c_tok_from_st_nof(fx *f) { ptr(f, tg_tok_from_st(NULL, &f->err)); }
static void c_tok_from_st_noerr(fx *f) { ptr(f, tg_tok_from_st(NULL, NULL)); }
static void c_tok_from_st_none(fx *f)
{
    tg_st_file *st = st_kv(f);
    ptr(f, tg_tok_from_st(st, &f->err));
    tg_st_free(st);
}
static void c_tok_from_st_kind(fx *f) { from_st(f, "wordpiece", "1"); }
static void c_tok_from_st_version(fx *f) { from_st(f, "bpe", "2"); }
static void c_tok_from_st_pieces(fx *f) { from_st(f, "bpe", "1"); }
static void c_tok_st_add_not(fx *f)
{
    num(f, tg_tok_st_add(NULL, f->w));
    saved_note(f);
}
static void c_tok_st_add_now(fx *f) { num(f, tg_tok_st_add(tok(), NULL)); }
static void c_tok_st_add_twice(fx *f)
{
    if (tg_tok_st_add(tok(), f->w)) abort();
    num(f, tg_tok_st_add(tok(), f->w));
    saved_note(f);
}
static void c_tok_save_not(fx *f) { num(f, tg_tok_save(NULL, tt_path("t.safetensors"), &f->err)); }
static void c_tok_save_nopath(fx *f) { num(f, tg_tok_save(tok(), NULL, &f->err)); }
static void c_tok_save_nodir(fx *f) { num(f, tg_tok_save(tok(), "/nonexistent/t.safetensors", &f->err)); }
static void c_tok_save_noerr(fx *f) { num(f, tg_tok_save(NULL, tt_path("t.safetensors"), NULL)); }
static void c_tok_free(fx *f)
{
    (void)f;
    tg_tok_free(NULL);
}
static void c_tok_kind_of(fx *f) { flag(f, tg_tok_kind_of(NULL) == TG_TOK_NONE); }
static void c_tok_vocab_size(fx *f) { num(f, tg_tok_vocab_size(NULL)); }
static void c_tok_bos(fx *f) { num(f, tg_tok_bos(NULL)); }
static void c_tok_eos(fx *f) { num(f, tg_tok_eos(NULL)); }
static void c_tok_special_id_nos(fx *f) { num(f, tg_tok_special_id(tok(), NULL)); }
static void c_tok_special_id_unknown(fx *f) { num(f, tg_tok_special_id(tok(), "<|endoftext|>")); }
static void c_tok_special_id_not(fx *f) { num(f, tg_tok_special_id(NULL, "<s>")); }
static void c_tok_is_special_neg(fx *f) { flag(f, tg_tok_is_special(tok(), -1)); }
static void c_tok_is_special_past(fx *f) { flag(f, tg_tok_is_special(tok(), 260)); }
static void c_tok_is_special_not(fx *f) { flag(f, tg_tok_is_special(NULL, 0)); }
/* tg_tok_piece(t, id, &len): NULL or not, and len */
static void piece(fx *f, const tg_tokenizer *t, int32_t id)
{
    size_t len = 99;
    const unsigned char *p = tg_tok_piece(t, id, &len);
    snprintf(f->got, sizeof f->got, "%s, len %zu", p ? "non-NULL" : "NULL", len);
}
static void c_tok_piece_past(fx *f) { piece(f, tok(), 260); }
/* TG_TOK_SPM: tg_tok_new_spm and llama2.c's tokenizer.bin */
static const unsigned char spm_pieces[] = "ab";
static const int64_t spm_off[] = {0, 1, 2};
static const float spm_scores[] = {0, 0};
static const uint8_t spm_types[] = {TG_PIECE_NORMAL, TG_PIECE_NORMAL};
static void c_spm_new_null(fx *f)
{
    ptr(f, tg_tok_new_spm(&(tg_spm_pieces){2, NULL, spm_off, spm_scores, spm_types, -1, -1}, &TG_SPM_LLAMA2C, &f->err));
}
static void c_spm_new_noopts(fx *f)
{
    ptr(f, tg_tok_new_spm(&(tg_spm_pieces){2, spm_pieces, spm_off, spm_scores, spm_types, -1, -1}, NULL, &f->err));
}
static void c_spm_new_zero(fx *f)
{
    ptr(f,
        tg_tok_new_spm(&(tg_spm_pieces){0, spm_pieces, spm_off, spm_scores, spm_types, -1, -1}, &TG_SPM_LLAMA2C,
                       &f->err));
}
static void c_spm_new_huge(fx *f)
{
    ptr(f,
        tg_tok_new_spm(&(tg_spm_pieces){INT32_MAX, spm_pieces, spm_off, spm_scores, spm_types, -1, -1}, &TG_SPM_LLAMA2C,
                       &f->err));
}
static void c_spm_new_nobytes(fx *f)
{
    ptr(f,
        tg_tok_new_spm(&(tg_spm_pieces){2, spm_pieces, spm_off, spm_scores, spm_types, -1, -1}, &TG_SPM_LLAMA2C,
                       &f->err));
}
static void c_spm_new_noerr(fx *f)
{
    ptr(f,
        tg_tok_new_spm(&(tg_spm_pieces){2, spm_pieces, spm_off, spm_scores, spm_types, -1, -1}, &TG_SPM_LLAMA2C, NULL));
}
static void c_l2c_nopath(fx *f) { ptr(f, tg_tok_load_llama2c(NULL, 0, &f->err)); }
static void c_l2c_missing(fx *f) { ptr(f, tg_tok_load_llama2c(tt_path("missing.bin"), 0, &f->err)); }
static void c_l2c_negvocab(fx *f) { ptr(f, tg_tok_load_llama2c(tt_path("missing.bin"), -1, &f->err)); }
static void c_l2c_empty(fx *f) { ptr(f, tg_tok_load_llama2c(file_of("empty.bin", "", 0), 0, &f->err)); }
static void c_l2c_huge_len(fx *f)
{
    static const unsigned char b[] = {6, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 'x'};
    ptr(f, tg_tok_load_llama2c(file_of("huge.bin", b, sizeof b), 0, &f->err));
}
static void c_l2c_noerr(fx *f) { ptr(f, tg_tok_load_llama2c(NULL, 0, NULL)); }
static void c_tok_score_not(fx *f) { num(f, tg_tok_score(NULL, 0)); }
static void c_tok_score_past(fx *f) { num(f, tg_tok_score(tok(), 260)); }
static void c_tok_score_bpe(fx *f) { num(f, tg_tok_score(tok(), 100)); }
static void c_tok_piece_type_not(fx *f) { flag(f, tg_tok_piece_type(NULL, 0) == TG_PIECE_NONE); }
static void c_tok_piece_type_neg(fx *f) { flag(f, tg_tok_piece_type(tok(), -1) == TG_PIECE_NONE); }
static void c_tok_spelled_not(fx *f)
{
    size_t l = 9;
    ptr(f, tg_tok_spelled(NULL, 0, &l));
    if (l) text(f, "len not 0");
}
static void c_tok_spelled_past(fx *f)
{
    size_t l = 9;
    ptr(f, tg_tok_spelled(tok(), 260, &l));
    if (l) text(f, "len not 0");
}
static void c_tok_adds_prefix_not(fx *f) { flag(f, tg_tok_adds_prefix(NULL)); }
static void c_tok_adds_prefix_bpe(fx *f) { flag(f, tg_tok_adds_prefix(tok())); }
static void c_tok_spm_options_not(fx *f)
{
    tg_spm_options o;
    num(f, tg_tok_spm_options_of(NULL, &o));
}
static void c_tok_spm_options_bpe(fx *f)
{
    tg_spm_options o;
    num(f, tg_tok_spm_options_of(tok(), &o));
}
static void c_tok_spm_options_noout(fx *f) { num(f, tg_tok_spm_options_of(tok(), NULL)); }

static void c_tok_piece_neg(fx *f) { piece(f, tok(), INT32_MIN); }
static void c_tok_piece_not(fx *f) { piece(f, NULL, 0); }
static void c_tok_piece_nolen(fx *f) { ptr(f, tg_tok_piece(tok(), 260, NULL)); }
static void c_tok_max_piece_len(fx *f) { num(f, (double)tg_tok_max_piece_len(NULL)); }
static void c_tok_n_merges(fx *f) { num(f, tg_tok_n_merges(NULL)); }
static void c_tok_merge_past(fx *f)
{
    int32_t l, r;
    num(f, tg_tok_merge(tok(), 1, &l, &r));
}
static void c_tok_merge_neg(fx *f) { num(f, tg_tok_merge(tok(), -1, NULL, NULL)); }
static void c_tok_merge_not(fx *f) { num(f, tg_tok_merge(NULL, 0, NULL, NULL)); }
static void c_tok_merge_tiktoken(fx *f)
{
    tg_tokenizer *t = tg_tok_load_tiktoken(tiktoken_file("bytes.tiktoken", ""), NULL);
    if (!t) abort();
    num(f, tg_tok_merge(t, 0, NULL, NULL));
    tg_tok_free(t);
}
/* tg_tok_encode(t, text, len, &ids, err or NULL): the count, and whether
 * ids (non-NULL before the call) was set; the ids freed */
static void encode(fx *f, const tg_tokenizer *t, const char *text, size_t len, bool with_err)
{
    static int32_t before[1];
    int32_t *ids = before;
    int64_t n = tg_tok_encode(t, text, len, &ids, with_err ? &f->err : NULL);
    snprintf(f->got, sizeof f->got, "%lld, ids %s", (long long)n, !ids ? "NULL" : ids == before ? "unchanged" : "set");
    if (ids != before) tg_free(ids);
}
static void c_tok_encode_not(fx *f) { encode(f, NULL, "ab", 2, true); }
static void c_tok_encode_notext(fx *f) { encode(f, tok(), NULL, 2, true); }
static void c_tok_encode_noids(fx *f) { num(f, (double)tg_tok_encode(tok(), "ab", 2, NULL, &f->err)); }
static void c_tok_encode_empty(fx *f) { encode(f, tok(), NULL, 0, true); }
static void c_tok_encode_noerr(fx *f) { encode(f, NULL, "ab", 2, false); }
static void c_tok_bpt_empty(fx *f) { num(f, tg_tok_bytes_per_token(tok(), "", 0)); }
static void c_tok_bpt_not(fx *f) { num(f, tg_tok_bytes_per_token(NULL, "ab", 2)); }
/* tg_tok_decode(t, ids, n, out, cap, err) */
static void decode(fx *f, const tg_tokenizer *t, const int32_t *ids, size_t n, void *out, size_t cap)
{
    num(f, (double)tg_tok_decode(t, ids, n, out, cap, &f->err));
}
static void c_tok_decode_past(fx *f) { decode(f, tok(), (int32_t[]){3 + 'a', 260}, 2, buf, sizeof buf); }
static void c_tok_decode_neg(fx *f) { decode(f, tok(), (int32_t[]){-1}, 1, buf, sizeof buf); }
static void c_tok_decode_not(fx *f) { decode(f, NULL, (int32_t[]){3}, 1, buf, sizeof buf); }
static void c_tok_decode_noids(fx *f) { decode(f, tok(), NULL, 2, buf, sizeof buf); }
static void c_tok_decode_noout(fx *f) { decode(f, tok(), (int32_t[]){3}, 1, NULL, 8); }
static void c_tok_decode_measure(fx *f) { decode(f, tok(), (int32_t[]){259, 3 + 'c'}, 2, NULL, 0); }
static void c_tok_decode_noerr(fx *f)
{
    num(f, (double)tg_tok_decode(tok(), (int32_t[]){260}, 1, buf, sizeof buf, NULL));
}
/* A stream on tok() holding the lead byte 0xC3 of a 2-byte character, then push(id, cap) */
static tg_tok_stream ts;
static unsigned char sbuf[16]; /* tok()'s longest piece, "<unk>", is 5 bytes: 8 needed */
static void stream_push(fx *f, int32_t id, size_t cap)
{
    tg_tok_stream_init(&ts, tok());
    if (tg_tok_stream_push(&ts, 3 + 0xC3, sbuf, sizeof sbuf) != 0) abort();
    int64_t n = tg_tok_stream_push(&ts, id, sbuf, cap);
    snprintf(f->got, sizeof f->got, "%lld, %d held", (long long)n, ts.n_held);
}
static void c_stream_init(fx *f)
{
    (void)f;
    tg_tok_stream_init(NULL, tok());
}
static void c_stream_push_past(fx *f) { stream_push(f, 260, sizeof sbuf); }
static void c_stream_push_neg(fx *f) { stream_push(f, -1, sizeof sbuf); }
static void c_stream_push_cap(fx *f) { stream_push(f, 3 + 'a', 7); }
static void c_stream_push_nos(fx *f) { num(f, (double)tg_tok_stream_push(NULL, 3, sbuf, sizeof sbuf)); }
static void c_stream_push_notok(fx *f)
{
    tg_tok_stream_init(&ts, NULL);
    num(f, (double)tg_tok_stream_push(&ts, 3, sbuf, sizeof sbuf));
}
static void c_stream_push_noout(fx *f)
{
    tg_tok_stream_init(&ts, tok());
    num(f, (double)tg_tok_stream_push(&ts, 3, NULL, sizeof sbuf));
}
static void c_stream_flush_cap(fx *f)
{
    stream_push(f, 3 + 0xC3, sizeof sbuf); /* C3 C3: the first goes out, the second is held */
    int64_t n = tg_tok_stream_flush(&ts, sbuf, 2);
    snprintf(f->got, sizeof f->got, "%lld, %d held", (long long)n, ts.n_held);
}
static void c_stream_flush_nos(fx *f) { num(f, (double)tg_tok_stream_flush(NULL, sbuf, sizeof sbuf)); }

/* token files: tg_tokfile_open(path, format, vocab_size, err), NULL or not (the file closed) */
static void tokfile_open(fx *f, const char *path, tg_tokfile_format format, int64_t vocab_size)
{
    tg_tokfile *t = tg_tokfile_open(path, format, vocab_size, &f->err);
    ptr(f, t);
    tg_tokfile_free(t);
}
/* the same of tt_dir/t.bin holding n bytes, vocab_size 5 */
static void tokfile(fx *f, tg_tokfile_format format, const void *data, size_t n)
{
    tokfile_open(f, file_of("t.bin", data, n), format, 5);
}
/* the same of llm.c's 1024-byte header (magic, version, count) and n_ids uint16 ids (zeros) */
static void llmc(fx *f, uint32_t version, uint32_t count, size_t n_ids)
{
    static unsigned char b[1024 + 16];
    memset(b, 0, sizeof b);
    const uint32_t h[3] = {TG_LLMC_MAGIC, version, count};
    memcpy(b, h, sizeof h); /* little-endian, as every machine tapegrad supports */
    tokfile(f, TG_TOKFILE_AUTO, b, 1024 + 2 * n_ids);
}
static void c_tokfile_nopath(fx *f) { tokfile_open(f, NULL, TG_TOKFILE_AUTO, 5); }
static void c_tokfile_vocab(fx *f) { tokfile_open(f, file_of("t.bin", "\1\0", 2), TG_TOKFILE_AUTO, 0); }
static void c_tokfile_format(fx *f) { tokfile_open(f, file_of("t.bin", "\1\0", 2), (tg_tokfile_format)7, 5); }
static void c_tokfile_missing(fx *f) { tokfile_open(f, tt_path("missing.bin"), TG_TOKFILE_AUTO, 5); }
static void c_tokfile_noerr(fx *f) { ptr(f, tg_tokfile_open(tt_path("missing.bin"), TG_TOKFILE_AUTO, 5, NULL)); }
static void c_tokfile_dir(fx *f) { tokfile_open(f, tt_dir, TG_TOKFILE_AUTO, 5); }
static void c_tokfile_empty(fx *f) { tokfile(f, TG_TOKFILE_AUTO, "", 0); }
static void c_tokfile_odd(fx *f) { tokfile(f, TG_TOKFILE_NANOGPT, "\1\0\2", 3); }
static void c_tokfile_id(fx *f) { tokfile(f, TG_TOKFILE_AUTO, "\1\0\11\0", 4); }
static void c_tokfile_llmc_short(fx *f) { tokfile(f, TG_TOKFILE_LLMC, "\1\0\2\0", 4); }
static void c_tokfile_llmc_version(fx *f) { llmc(f, 3, 1, 1); }
static void c_tokfile_llmc_count(fx *f) { llmc(f, 1, 5, 1); }
static void c_tokfile_llmc_none(fx *f) { llmc(f, 1, 0, 0); }
static void c_tokfile_close(fx *f)
{
    (void)f;
    tg_tokfile_free(NULL);
}
static void c_tokfile_count(fx *f) { num(f, (double)tg_tokfile_count(NULL)); }
static void c_tokfile_format_of(fx *f) { flag(f, tg_tokfile_format_of(NULL) == TG_TOKFILE_AUTO); }
/* tg_tokfile_read(start, n) of a file of 3 tokens */
static void tokfile_read(fx *f, int64_t start, int64_t n, int32_t *out)
{
    tg_tokfile *t = tg_tokfile_open(file_of("t.bin", "\1\0\2\0\3\0", 6), TG_TOKFILE_NANOGPT, 5, NULL);
    if (!t) abort();
    num(f, tg_tokfile_read(t, start, n, out));
    tg_tokfile_free(t);
}
static int32_t read_ids[4];
static void c_tokfile_read_past(fx *f) { tokfile_read(f, 2, 2, read_ids); }
static void c_tokfile_read_neg(fx *f) { tokfile_read(f, -1, 1, read_ids); }
static void c_tokfile_read_huge(fx *f) { tokfile_read(f, 1, INT64_MAX, read_ids); }
static void c_tokfile_read_noout(fx *f) { tokfile_read(f, 0, 1, NULL); }
static void c_tokfile_read_nof(fx *f) { num(f, tg_tokfile_read(NULL, 0, 1, read_ids)); }
static const int32_t ids3[3] = {1, 2, 3};
/* tg_tokfile_write(path, format, ids, n, err) */
static void tokfile_write(fx *f, const char *path, tg_tokfile_format format, const int32_t *ids, int64_t n)
{
    num(f, tg_tokfile_write(path, format, ids, n, &f->err));
}
static void c_tokfile_write_nopath(fx *f) { tokfile_write(f, NULL, TG_TOKFILE_NANOGPT, ids3, 3); }
static void c_tokfile_write_noids(fx *f) { tokfile_write(f, tt_path("w.bin"), TG_TOKFILE_NANOGPT, NULL, 3); }
static void c_tokfile_write_neg(fx *f) { tokfile_write(f, tt_path("w.bin"), TG_TOKFILE_NANOGPT, ids3, -1); }
static void c_tokfile_write_format(fx *f) { tokfile_write(f, tt_path("w.bin"), TG_TOKFILE_AUTO, ids3, 3); }
static void c_tokfile_write_wide(fx *f)
{
    tokfile_write(f, tt_path("w.bin"), TG_TOKFILE_NANOGPT, (int32_t[]){1, 70000}, 2);
}
static void c_tokfile_write_negid(fx *f) { tokfile_write(f, tt_path("w.bin"), TG_TOKFILE_LLMC, (int32_t[]){-1}, 1); }
static void c_tokfile_write_nodir(fx *f) { tokfile_write(f, "/nonexistent/w.bin", TG_TOKFILE_NANOGPT, ids3, 3); }
static void c_tokfile_write_noerr(fx *f) { num(f, tg_tokfile_write(NULL, TG_TOKFILE_NANOGPT, ids3, 3, NULL)); }

/* ---- the table ----------------------------------------------------------- */

typedef struct api_case {
    const char *call; /* the function and its bad input */
    const char *want; /* the documented result, as the helpers above print it */
    const char *msg; /* a substring of the message it leaves (err, the graph's, the object's), or NULL */
    void (*run)(fx *f);
} api_case;

static const api_case CASES[] = {
    /* core/tensor.h */
    {"tg_dtype_size(9)", "0", NULL, c_dtype_size},
    {"tg_dtype_name(9)", "?", NULL, c_dtype_name},
    {"tg_dtype_is_float(9)", "false", NULL, c_dtype_is_float},
    {"tg_shape_str(NULL, buf, n)", "NULL", NULL, c_shape_str_null},
    {"tg_shape_str(x, NULL, 16)", "NULL", NULL, c_shape_str_nobuf},
    {"tg_index_str(x (2,3), k = 3 > ndim)", "(index over 3 dimensions of a 2-D tensor)", NULL, c_index_str_k_big},
    {"tg_index_str(x (2,3), k = -1)", "(index over -1 dimensions of a 2-D tensor)", NULL, c_index_str_k_neg},
    {"tg_index_str(x (2,3), 2, flat 6)", "(flat index 6 outside [0, 6))", NULL, c_index_str_flat},
    {"tg_index_str(NULL, ...)", "NULL", NULL, c_index_str_null},
    {"tg_index_str(x, 1, 0, NULL, 8)", "NULL", NULL, c_index_str_nobuf},
    {"tg_tensor_get(NULL, 0)", "nan", NULL, c_get_null},
    {"tg_tensor_get(x (6 elements), 6)", "nan", NULL, c_get_past},
    {"tg_tensor_get(x, -1)", "nan", NULL, c_get_neg},
    {"tg_tensor_set(NULL, 0, 1)", "-1", NULL, c_set_null},
    {"tg_tensor_set(x (6 elements), 6, 1)", "-1", NULL, c_set_past},
    {"tg_tensor_set(a stale tensor, 0, 1)", "-1", NULL, c_set_stale},
    {"tg_tensor_item(NULL)", "nan", NULL, c_item_null},
    {"tg_tensor_item(x of 6 elements)", "nan", NULL, c_item_many},
    {"tg_tensor_same_shape(NULL, NULL)", "false", NULL, c_same_shape_nulls},
    {"tg_tensor_same_shape(x, NULL)", "false", NULL, c_same_shape_one},
    /* core/graph.h */
    {"tg_graph_reset(NULL)", "returns", NULL, c_reset},
    {"tg_graph_error(NULL)", "NULL", NULL, c_error},
    {"tg_graph_clear_error(NULL)", "returns", NULL, c_clear_error},
    {"tg_graph_set_grad_enabled(NULL, true)", "false", NULL, c_set_grad},
    {"tg_graph_grad_enabled(NULL)", "false", NULL, c_grad_enabled},
    {"tg_graph_set_training(NULL, false)", "returns", NULL, c_set_training},
    {"tg_graph_training(NULL)", "false", NULL, c_training},
    {"tg_graph_seed(NULL, 1)", "returns", NULL, c_seed},
    {"tg_graph_rng(NULL)", "NULL", NULL, c_rng},
    {"tg_tensor_new(NULL, ...)", "NULL", NULL, c_tensor_new_nog},
    {"tg_tensor_new(g, dtype 9, ...)", "NULL", "tensor: unknown dtype 9", c_tensor_new_dtype},
    {"tg_tensor_new(g, f32, 2, NULL)", "NULL", "shape is NULL", c_tensor_new_noshape},
    {"tg_tensor_new(g, f32, 5, ...)", "NULL", "ndim must be 0..4", c_tensor_new_ndim},
    {"tg_tensor_new(g, f32, (2^20,2^20,2^20))", "NULL", "too many elements (over 2^40)", c_tensor_new_huge},
    {"tg_tensor_new(g, f32, (2^20,2^20,INT_MAX))", "NULL", "too many elements (over 2^40)", c_tensor_new_wide},
    {"tg_tensor_new(g, f32, (0))", "NULL", "every dimension must be >= 1", c_tensor_new_zero},
    {"tg_tensor_from(g, ..., NULL data)", "NULL", "tensor_from: data is NULL", c_tensor_from_nodata},
    {"tg_scalar(g, i32, 1)", "NULL", "scalar: dtype must be f32 or f64, got i32", c_scalar_i32},
    {"tg_scalar(NULL, f32, 1)", "NULL", NULL, c_scalar_nog},
    {"tg_tensor_set_requires_grad(NULL, x, true)", "-1", NULL, c_rg_nog},
    {"tg_tensor_set_requires_grad(g, NULL, true)", "-1", "requires_grad: tensor is NULL", c_rg_null},
    {"tg_tensor_set_requires_grad(g, i32 ids, true)", "-1", "only f32/f64 tensors can require grad", c_rg_i32},
    {"tg_tensor_set_requires_grad(g, a tensor of no graph without grad)", "-1", "belongs to no graph", c_rg_nograph},
    {"tg_graph_backward(NULL, x)", "-1", NULL, c_backward_nog},
    {"tg_graph_backward(g, NULL)", "-1", "backward: tensor is NULL", c_backward_null},
    {"tg_graph_backward(g, exp(x) (2,3))", "-1", "loss must have one element, got (2,3)", c_backward_many},
    {"tg_graph_backward_seeded(g, t, NULL)", "-1", "backward: seed is NULL", c_backward_noseed},
    {"tg_graph_tape_len(NULL)", "0", NULL, c_tape_len},
    {"tg_graph_set_backward_hook(NULL, ...)", "returns", NULL, c_hook_nog},
    {"tg_graph_node(NULL, 0)", "NULL", NULL, c_node_nog},
    {"tg_graph_node(g, tape_len)", "NULL", NULL, c_node_past},
    {"tg_graph_node(g, -1)", "NULL", NULL, c_node_neg},
    {"tg_graph_arena_capacity(NULL)", "0", NULL, c_arena_capacity},
    {"tg_graph_arena_used(NULL)", "0", NULL, c_arena_used},
    {"tg_graph_backward(g, a tensor made before tg_graph_reset(g))", "-1",
     "backward: the tensor (f32 (3)) was made before the last tg_graph_reset of this graph", c_backward_stale},
    {"tg_tensor_set_requires_grad(g, a stale tensor, true)", "-1",
     "requires_grad: the tensor (f32 (3)) was made before the last tg_graph_reset", c_rg_stale},
    {"tg_tensor_get(a stale tensor, 0)", "nan", NULL, c_get_stale},
    {"tg_graph_free(NULL)", "returns", NULL, c_graph_free},
    {"tg_tensor_wrap(g, f32, (2,3), NULL data)", "NULL", "tensor_wrap: data is NULL", c_wrap_nodata},
    {"tg_tensor_wrap(g, dtype 9, ...)", "NULL", "tensor_wrap: unknown dtype 9", c_wrap_dtype},
    {"tg_tensor_wrap(g, f32, 5, ...)", "NULL", "tensor_wrap: bad shape (1,1,1,1) with ndim 5: ndim must be 0..4",
     c_wrap_ndim},
    {"tg_tensor_wrap(g, f32, (INT_MAX,INT_MAX), data)", "NULL",
     "bad shape (2147483647,2147483647) with ndim 2: too many elements", c_wrap_huge},
    {"tg_tensor_wrap(NULL, ...)", "NULL", NULL, c_wrap_nog},
    /* core/op.h */
    {"tg_fail(NULL, ...)", "NULL", NULL, c_fail_nog},
    {"tg_op_begin(NULL, ...)", "false", NULL, c_begin_nog},
    {"tg_op_begin(g, \"my_op\", 2, NULL)", "false", "my_op: the array of 2 inputs is NULL", c_begin_noin},
    {"tg_op_begin(g, \"my_op\", 2, {x, NULL})", "false", "my_op: input 1 is NULL", c_begin_null},
    {"tg_op_check_float(g, \"my_op\", \"x\", NULL)", "false", "my_op: x is NULL", c_check_float},
    {"tg_op_check_same_dtype(g, \"my_op\", x, NULL)", "false", "my_op: b is NULL", c_check_dtype},
    {"tg_op_output(NULL, ...)", "NULL", NULL, c_op_output},
    {"tg_arena_alloc(NULL, 64)", "NULL", NULL, c_arena_alloc_nog},
    {"tg_arena_zalloc(NULL, 64)", "NULL", NULL, c_arena_zalloc_nog},
    {"tg_arena_alloc(g, SIZE_MAX)", "NULL", "out of memory: the graph's arena could not grow", c_arena_alloc_huge},
    {"tg_op_record(NULL, ...)", "NULL", NULL, c_record_nog},
    {"tg_op_record(g, ..., out NULL, ...)", "NULL", "my_op: recording an op with a NULL output", c_record_noout},
    {"tg_op_record(g, ..., backward NULL, ...)", "NULL", "my_op: op has no backward", c_record_nobw},
    {"tg_op_begin(g, \"my_op\", 1, {a stale tensor})", "false",
     "my_op: input 0 (f32 (3)) was made before the last tg_graph_reset of this graph (in generation 0; it is at 1",
     c_begin_stale},
    {"tg_op_check_live(g, \"my_op\", 2, {NULL, a stale tensor})", "false", "my_op: input 1 (f32 (3)) was made before",
     c_live_stale},
    {"tg_op_check_live(NULL, ...)", "false", NULL, c_live_nog},
    {"tg_op_view(g, NULL)", "NULL", NULL, c_view_null},
    {"tg_needs_grad(g, NULL)", "false", NULL, c_needs_grad},
    {"tg_grad(g, NULL)", "NULL", NULL, c_grad},
    {"tg_grad_store(g, NULL, &store)", "NULL", NULL, c_grad_store_null},
    {"tg_grad_store(g, x, NULL)", "non-NULL", NULL, c_grad_store_nostore},
    {"tg_broadcast(NULL, x, &bc)", "false", NULL, c_broadcast},
    {"tg_broadcast(x, x, NULL)", "false", NULL, c_broadcast_nobc},
    {"tg_broadcast_to(x, 5, ...)", "false", NULL, c_broadcast_to_ndim},
    {"tg_broadcast_to(x, 2, NULL, stride)", "false", NULL, c_broadcast_to_noshape},
    {"tg_broadcast_to(NULL, ...)", "false", NULL, c_broadcast_to_null},
    /* core/params.h */
    {"tg_params_new(dtype 9, err)", "NULL", "params_new: dtype must be f32 or f64, got ? (9)", c_params_new_dtype},
    {"tg_params_new(i32, NULL)", "NULL", NULL, c_params_new_noerr},
    {"tg_params_add(NULL, ...)", "NULL", "params_add: the store is NULL", c_params_add_nop},
    {"tg_params_add(p, a taken name, ..., NULL)", "NULL", NULL, c_params_add_noerr},
    {"tg_params_add(p, NULL name, ...)", "NULL", "params_add: name is empty", c_params_add_noname},
    {"tg_params_add(p, \"v\", 2, NULL)", "NULL", "params_add: 'v': bad shape: shape is NULL", c_params_add_noshape},
    {"tg_params_add(p, \"v\", (2^30,2^30))", "NULL", "'v': bad shape: too many elements (over 2^40)",
     c_params_add_huge},
    {"tg_params_get(NULL, \"w\")", "NULL", NULL, c_params_get_nop},
    {"tg_params_get(p, NULL)", "NULL", NULL, c_params_get_noname},
    {"tg_params_count(NULL)", "0", NULL, c_params_count},
    {"tg_params_at(NULL, 0)", "NULL", NULL, c_params_at_nop},
    {"tg_params_at(p, -1)", "NULL", NULL, c_params_at_neg},
    {"tg_params_at(p of 1, 1)", "NULL", NULL, c_params_at_past},
    {"tg_params_dtype(NULL)", "-1", NULL, c_params_dtype},
    {"tg_params_numel(NULL)", "0", NULL, c_params_numel},
    {"tg_params_data(NULL)", "NULL", NULL, c_params_data},
    {"tg_params_grad(NULL)", "NULL", NULL, c_params_grad},
    {"tg_params_zero_grad(NULL)", "returns", NULL, c_params_zero_grad},
    {"tg_params_free(NULL)", "returns", NULL, c_params_free},
    /* core/error.h */
    {"tg_error_set(NULL, ...)", "-1", NULL, c_error_set_null},
    {"tg_error_set(e, NULL): e unchanged", "-1", "kept", c_error_set_nofmt},
    {"tg_error_set(e, a message of 2047 bytes): truncated", "1023", NULL, c_error_set_long},
    {"tg_error_prefix(NULL, p)", "-1", NULL, c_error_prefix_null},
    {"tg_error_prefix(e, \"file.bin\")", "-1", "file.bin: bad key", c_error_prefix},
    {"tg_error_failed(NULL)", "false", NULL, c_error_failed_null},
    /* core/rng.h */
    {"tg_rng_seed(NULL, 1, 2)", "returns", NULL, c_rng_seed},
    {"tg_rng_u32(NULL)", "0", NULL, c_rng_u32},
    {"tg_rng_below(r, 0)", "0", NULL, c_rng_below_zero},
    {"tg_rng_below(NULL, 5)", "0", NULL, c_rng_below_nor},
    {"tg_rng_uniform(NULL)", "nan", NULL, c_rng_uniform},
    {"tg_rng_normal(NULL)", "nan", NULL, c_rng_normal},
    {"tg_rng_fill_uniform(NULL, x, 0, 1): x unchanged", "0", NULL, c_rng_fill_uniform},
    {"tg_rng_fill_uniform(r, a stale tensor, 1, 2): the new tensor in its memory unchanged", "0", NULL,
     c_rng_fill_stale},
    {"tg_rng_fill_normal(r, NULL, 0, 1)", "returns", NULL, c_rng_fill_normal},
    {"tg_rng_to_string(NULL, buf, size)", "-1", NULL, c_rng_to_string_nor},
    {"tg_rng_to_string(r, buf of 8): 52 needed, 7 written", "5207", NULL, c_rng_to_string_short},
    {"tg_rng_from_string(r, NULL)", "-1", "rng_from_string: the text is NULL", c_rng_from_string_nos},
    {"tg_rng_from_string(r, \"12:34\")", "-1", "rng_from_string: '12:34' is not a random-stream state",
     c_rng_from_string_bad},
    /* core/gradcheck.h */
    {"tg_gradcheck(..., res NULL)", "false", NULL, c_gc_nores},
    {"tg_gradcheck(NULL f, ...)", "false", "gradcheck: f is NULL", c_gc_nof},
    {"tg_gradcheck(f, ctx, 1, NULL inputs, ...)", "false", "1 inputs, but the inputs array is NULL", c_gc_noin},
    {"tg_gradcheck(f, ctx, -1, ...)", "false", "-1 inputs: the count is negative", c_gc_negn},
    {"tg_gradcheck(f, ctx, 1, {NULL}, ...)", "false", "gradcheck: input 0 is NULL", c_gc_nullin},
    {"tg_gradcheck(f, ctx, 1, {a stale tensor}, ...)", "false",
     "gradcheck: input 0 was made before the last tg_graph_reset of its graph", c_gc_stale},
    /* core/alloc.h, core/parallel.h */
    {"tg_malloc_big(NULL)", "NULL", NULL, c_malloc_big},
    {"tg_malloc(SIZE_MAX)", "NULL", NULL, c_malloc_huge},
    {"tg_calloc(SIZE_MAX / 2, 3): the product overflows", "NULL", NULL, c_calloc_overflow},
    {"tg_calloc_big(SIZE_MAX / 2, 3): the product overflows", "NULL", NULL, c_calloc_big_overflow},
    {"tg_realloc(NULL, SIZE_MAX - 1)", "NULL", NULL, c_realloc_huge},
    {"tg_free(NULL)", "returns", NULL, c_free},
    {"tg_parallel_for(10, 1, NULL fn, NULL)", "returns", NULL, c_parallel_nofn},
    {"tg_parallel_for(INT64_MAX, 1, fn, ctx) on 2 threads",
     "2 threads: [0, 144115188075855871) ... [9079256848778919935, 9223372036854775807)", NULL, c_parallel_huge},
    {"tg_set_num_threads(3) inside a loop of 2 threads", "inside 2 2, after 2", NULL, c_parallel_set_inside},
    {"tg_parallel_part() outside a loop", "0", NULL, c_parallel_part},
    {"tg_parallel_parts(-5, 1)", "0", NULL, c_parallel_parts_none},
    {"tg_parallel_parts(100, 0): grain 1, at most 64 parts", "64", NULL, c_parallel_parts_grain},
    {"tg_parallel_parts(INT64_MAX, INT64_MAX)", "1", NULL, c_parallel_parts_huge},
    /* core/cpu.h */
    {"tg_isa_name((tg_isa)7)", "?", NULL, c_isa_name_bad},
    {"tg_isa_set_max((tg_isa)-1) leaves the path", "true", NULL, c_isa_set_bad},
    {"tg_isa_check_env(NULL)", "0", NULL, c_isa_check_env_noerr},
    /* core/safetensors.h */
    {"tg_st_load(NULL, err)", "NULL", "safetensors: (null): path is NULL", c_st_load_nopath},
    {"tg_st_load(missing, NULL)", "NULL", NULL, c_st_load_noerr},
    {"tg_st_free(NULL)", "returns", NULL, c_st_free},
    {"tg_st_count(NULL)", "0", NULL, c_st_count},
    {"tg_st_at(NULL, 0)", "NULL", NULL, c_st_at},
    {"tg_st_find(NULL, \"w\")", "NULL", NULL, c_st_find},
    {"tg_st_meta(NULL, \"k\")", "NULL", NULL, c_st_meta},
    {"tg_st_copy_to(NULL, x, err)", "-1", "safetensors: copy: tensor is NULL", c_st_copy_noe},
    {"tg_st_copy_to(e, NULL, err)", "-1", "safetensors: copy: destination is NULL", c_st_copy_nodst},
    {"tg_st_copy_to(e without dtype, x, err)", "-1", "'t': dtype, numel, nbytes and data do not agree",
     c_st_copy_nodtype},
    {"tg_st_copy_to(e F32 (2,3) of 4 bytes, x, err)", "-1", "'t': dtype, numel, nbytes and data do not agree",
     c_st_copy_short},
    {"tg_st_copy_to(e, a stale tensor, err)", "-1", "'t': the destination was made before the last tg_graph_reset",
     c_st_copy_stale},
    {"tg_st_writer_add(NULL, ...)", "-1", NULL, c_st_add_now},
    {"tg_st_writer_add(w, \"a\", F32, 1, NULL shape, ...)", "-1", "'a': ndim 1 must be 0..8 with a shape",
     c_st_add_noshape},
    {"tg_st_writer_add(w, \"a\", NULL dtype, ...)", "-1", "tensor 'a': unknown dtype \"(null)\"", c_st_add_nodtype},
    {"tg_st_writer_add_tensor(w, \"a\", NULL)", "-1", "tensor 'a': tensor is NULL", c_st_add_tensor_null},
    {"tg_st_writer_add_tensor(NULL, \"a\", x)", "-1", NULL, c_st_add_tensor_now},
    {"tg_st_writer_add_tensor(w, \"s\", a stale tensor)", "-1", "tensor 's': made before the last tg_graph_reset",
     c_st_add_tensor_stale},
    {"tg_st_writer_add_meta(w, NULL, \"v\")", "-1", "metadata key or value is NULL", c_st_meta_nokey},
    {"tg_st_writer_free(NULL)", "returns", NULL, c_st_writer_free},
    {"tg_st_writer_save(NULL, path, err)", "-1", "safetensors: save: writer is NULL", c_st_save_now},
    {"tg_st_writer_save(w, NULL, err)", "-1", "safetensors: save: path is NULL", c_st_save_nopath},
    {"tg_st_save_params(NULL, ...)", "-1", "save_params: params is NULL", c_st_save_params_nop},
    {"tg_st_save_params(p, path, NULL meta, 2, err)", "-1", "2 metadata pairs but no array", c_st_save_params_nometa},
    {"tg_st_save_params(p, NULL path, ...)", "-1", "safetensors: save: path is NULL", c_st_save_params_nopath},
    {"tg_st_load_params(NULL, NULL, err)", "-1", "load_params: params is NULL", c_st_load_params_nop},
    {"tg_st_meta_int(NULL, \"k\", ...): out unchanged", "-5", "checkpoint metadata has no 'k'", c_st_meta_int_nof},
    {"tg_st_meta_int(st, k = \"v\", ...): out unchanged", "-5",
     "checkpoint metadata 'k' = 'v' is not an integer in "
     "[0, 9]",
     c_st_meta_int_text},
    {"tg_st_meta_int(st, \"k\", 0, 9, NULL, ...)", "-1", NULL, c_st_meta_int_noout},
    {"tg_st_meta_double(st, k = \"v\", ...): out unchanged", "-5", "'k' = 'v' is not a number in [0, 9]",
     c_st_meta_double_text},
    {"tg_st_meta_bool(st, k = \"v\", ...): out unchanged", "-9", "'k' = 'v' is not true or false", c_st_meta_bool_text},
    {"tg_st_meta_count(NULL)", "0", NULL, c_st_meta_count},
    {"tg_st_meta_at(NULL, 0, &value)", "NULL, value NULL", NULL, c_st_meta_at_nof},
    {"tg_st_meta_at(f of 1 entry, 1, &value)", "NULL, value NULL", NULL, c_st_meta_at_past},
    {"tg_st_meta_at(f, -1, &value)", "NULL, value NULL", NULL, c_st_meta_at_neg},
    {"tg_st_meta_at(f, 0, NULL value)", "k", NULL, c_st_meta_at_novalue},
    /* core/atomic_file.h */
    {"tg_atomic_begin(NULL, path, err)", "-1", "atomic_begin: the file is NULL", c_atomic_begin_nof},
    {"tg_atomic_begin(f, NULL, err)", "-1", "'(null)': a NULL argument, or the file is not open",
     c_atomic_begin_nopath},
    {"tg_atomic_write(NULL, data, 1, err)", "-1", "atomic_write: the file is NULL", c_atomic_write_nof},
    {"tg_atomic_write(zeroed f, data, 1, err)", "-1", "'(null)': a NULL argument, or the file is not open",
     c_atomic_write_closed},
    {"tg_atomic_finish(NULL, err)", "-1", "atomic_finish: the file is NULL", c_atomic_finish_nof},
    {"tg_atomic_commit(NULL, err)", "-1", "atomic_commit: the file is NULL", c_atomic_commit_nof},
    {"tg_atomic_commit(zeroed f, err)", "-1", "'(null)': a NULL argument, or the file is not open",
     c_atomic_commit_closed},
    {"tg_atomic_commit(zeroed f, NULL)", "-1", NULL, c_atomic_commit_noerr},
    {"tg_atomic_abort(NULL)", "returns", NULL, c_atomic_abort},
    {"tg_atomic_write_file(NULL, data, 1, err)", "-1", "atomic_write_file: the path is NULL", c_write_atomic_nopath},
    {"tg_atomic_write_file(path, NULL, 3, err)", "-1", "atomic_write_file: the data is NULL", c_write_atomic_nodata},
    /* ops/ops.h */
    {"tg_matmul(NULL, x, x)", "NULL", NULL, c_matmul_nog},
    {"tg_matmul(g, x, NULL)", "NULL", "matmul: input 1 is NULL", c_matmul_null},
    {"tg_linear(g, x, NULL, NULL)", "NULL", "linear: input 1 is NULL", c_linear_now},
    {"tg_add(g, NULL, x)", "NULL", "add: input 0 is NULL", c_add_null},
    {"tg_sub(g, x, NULL)", "NULL", "sub: input 1 is NULL", c_sub_null},
    {"tg_mul(NULL, x, x)", "NULL", NULL, c_mul_nog},
    {"tg_div(g, NULL, NULL)", "NULL", "div: input 0 is NULL", c_div_null},
    {"tg_scale(g, x, NaN)", "NULL", "scale: factor must be finite, got nan", c_scale_nan},
    {"tg_neg(g, NULL)", "NULL", "neg: input 0 is NULL", c_neg_null},
    {"tg_exp(g, i32 ids)", "NULL", "exp: x must be f32 or f64, got i32 (2,3)", c_exp_i32},
    {"tg_log(NULL, x)", "NULL", NULL, c_log_nog},
    {"tg_tanh(g, NULL)", "NULL", "tanh: input 0 is NULL", c_tanh_null},
    {"tg_sqrt(g, NULL)", "NULL", "sqrt: input 0 is NULL", c_sqrt_null},
    {"tg_relu(g, NULL)", "NULL", "relu: input 0 is NULL", c_relu_null},
    {"tg_gelu(g, x, mode 7)", "NULL", "gelu: unknown mode 7", c_gelu_mode},
    {"tg_relu2(g, NULL)", "NULL", "relu2: input 0 is NULL", c_relu2_null},
    {"tg_softcap(g, x, 0)", "NULL", "softcap: the cap must be finite and > 0, got 0", c_softcap_zero},
    {"tg_sum(g, x (2,3), axis 5)", "NULL", "sum: axis 5 out of range", c_sum_axis},
    {"tg_mean(g, x, axis INT_MIN)", "NULL", "mean: axis -2147483648 out of range", c_mean_axis},
    {"tg_sum_all(g, NULL)", "NULL", "sum_all: input 0 is NULL", c_sum_all_null},
    {"tg_mean_all(NULL, x)", "NULL", NULL, c_mean_all_nog},
    {"tg_reshape(g, x, 2, NULL)", "NULL", "reshape: shape is NULL with ndim 2", c_reshape_noshape},
    {"tg_reshape(g, x, (INT_MAX,INT_MAX))", "NULL", "reshape: cannot reshape x f32 (2,3)", c_reshape_huge},
    {"tg_transpose(g, x (2,3), 0, 2)", "NULL", "transpose: axes (0, 2) out of range for x f32 (2,3)", c_transpose_axis},
    {"tg_permute(g, x, NULL)", "NULL", "permute: perm is NULL", c_permute_noperm},
    {"tg_slice(g, x, 1, 2, 2)", "NULL", "slice: range [2, 2) is not within axis 1 of length 3", c_slice_empty},
    {"tg_split(g, x, 1, 2, NULL sizes, out)", "-1", "split: need n >= 1 sizes, got n 2 and sizes NULL",
     c_split_nosizes},
    {"tg_split(g, x, 1, 2, sizes, NULL)", "-1", "split: out is NULL", c_split_noout},
    {"tg_split(g, x, 1, 3, {INT_MAX, INT_MAX, 5}, out)", "-1", "(they sum to 4294967299)", c_split_overflow},
    {"tg_concat(g, 2, NULL, 0)", "NULL", "concat: need n >= 1 tensors, got n 2 and xs NULL", c_concat_noxs},
    {"tg_concat(g, 2, {x, NULL}, 0)", "NULL", "concat: input 1 is NULL", c_concat_null},
    {"tg_softmax(g, NULL, NULL)", "NULL", "softmax: input 0 is NULL", c_softmax_null},
    {"tg_softmax_ex(g, x, NULL, flags 8)", "NULL", "softmax: unknown flags 0x8", c_softmax_flags},
    {"tg_log_softmax(g, x, i32 mask)", "NULL", "log_softmax: mask must be bool, got i32", c_log_softmax_mask},
    {"tg_attention(g, q, q, q, n_head 0, ...)", "NULL", "attention: C = 4 is not divisible by n_head = 0",
     c_attention_heads},
    {"tg_attention(g, q, q, q, 1, causal, q_pos INT_MIN)", "NULL", "sees no key: causal with q_pos -2147483648",
     c_attention_qpos},
    {"tg_attention_qkv(g, NULL, 1, 0, 0)", "NULL", "attention: input 0 is NULL", c_attention_qkv_null},
    {"tg_cross_entropy(g, NULL, ids)", "NULL", "cross_entropy: input 0 is NULL", c_cross_entropy_null},
    {"tg_layernorm(g, NULL, ...)", "NULL", "layernorm: input 0 is NULL", c_layernorm_null},
    {"tg_layernorm(g, x, NULL, NULL, NaN)", "NULL", "layernorm: eps must be > 0, got nan", c_layernorm_eps},
    {"tg_embedding(g, x, NULL)", "NULL", "embedding: input 1 is NULL", c_embedding_null},
    {"tg_layernorm(g, x, a stale w, NULL, eps)", "NULL", "layernorm: input 1 (f32 (3)) was made before",
     c_layernorm_stale_w},
    {"tg_dropout(g, x, 2)", "NULL", "dropout: p must be in [0, 1], got 2", c_dropout_p},
    {"tg_attention_qkv(g, qkv (1,2,12), n_head 2, n_kv_head 3, 0)", "NULL",
     "attention: n_kv_head = 3 must divide n_head = 2", c_qkv_kv_heads},
    {"tg_attention_qkv(g, qkv, 2, n_kv_head -1, 0)", "NULL", "attention: n_kv_head = -1 must divide n_head = 2",
     c_qkv_kv_neg},
    {"tg_attention_qkv(g, qkv (1,2,10), 2, 1, 0)", "NULL", "(4 heads of one size), got f32 (1,2,10)", c_qkv_width},
    {"tg_attention_qkv(g, qkv (1,2,12), n_head INT_MAX, 0, 0)", "NULL", "got f32 (1,2,12)", c_qkv_heads_max},
    {"tg_attention_qkv(g, qkv, 2, 2, flags 4)", "NULL", "attention: unknown flags 0x4", c_qkv_flags},
    {"tg_attention_qkv(g, x (2,3), 1, 0, 0)", "NULL", "attention: qkv must be 3-D", c_qkv_2d},
    {"tg_rmsnorm(g, NULL, NULL, eps)", "NULL", "rmsnorm: input 0 is NULL", c_rmsnorm_null},
    {"tg_rmsnorm(g, x, NULL, 0)", "NULL", "rmsnorm: eps must be > 0 and finite, got 0", c_rmsnorm_eps},
    {"tg_rmsnorm(g, x, NULL, inf)", "NULL", "rmsnorm: eps must be > 0 and finite, got inf", c_rmsnorm_eps_inf},
    {"tg_rmsnorm(g, x (2,3), w (2), eps)", "NULL", "rmsnorm: w must have shape (C) = (3) for x f32 (2,3), got f32 (2)",
     c_rmsnorm_w_shape},
    {"tg_rmsnorm(g, x f32, w f64 (3), eps)", "NULL", "rmsnorm: dtypes differ", c_rmsnorm_w_dtype},
    {"tg_rmsnorm(g, a scalar, NULL, eps)", "NULL", "rmsnorm: x must have at least 1 dimension", c_rmsnorm_scalar},
    {"tg_rmsnorm(g, i32 ids, NULL, eps)", "NULL", "rmsnorm: x must be f32 or f64, got i32", c_rmsnorm_i32},
    {"tg_rmsnorm(g, x, a stale w, eps)", "NULL", "rmsnorm: input 1 (f32 (3)) was made before", c_rmsnorm_stale_w},
    {"tg_silu(g, NULL)", "NULL", "silu: input 0 is NULL", c_silu_null},
    {"tg_silu(g, i32 ids)", "NULL", "silu: x must be f32 or f64, got i32", c_silu_i32},
    {"tg_silu(NULL, x)", "NULL", NULL, c_silu_nog},
    {"tg_swiglu(g, x, NULL)", "NULL", "swiglu: input 1 is NULL", c_swiglu_null},
    {"tg_swiglu(g, x (2,3), b (3,2))", "NULL", "swiglu: a and b must have the same shape, got a f32 (2,3), b f32 (3,2)",
     c_swiglu_shape},
    {"tg_swiglu(g, x f32, b f64)", "NULL", "swiglu: dtypes differ", c_swiglu_dtype},
    {"tg_rope(g, NULL, ...)", "NULL", "rope: input 0 is NULL", c_rope_null},
    {"tg_rope(g, i32 ids, ...)", "NULL", "rope: x must be f32 or f64, got i32", c_rope_i32},
    {"tg_rope(g, x (4), ...)", "NULL", "rope: x must be (..., T, D), got f32 (4)", c_rope_1d},
    {"tg_rope(g, x (1,2,4), head_dim 3, ...)", "NULL", "rope: head_dim 3 must be even and divide the last axis",
     c_rope_odd},
    {"tg_rope(g, x, head_dim 0, ...)", "NULL", "rope: head_dim 0 must be even", c_rope_hd_zero},
    {"tg_rope(g, x (1,2,4), head_dim 6, ...)", "NULL", "rope: head_dim 6 must be even and divide", c_rope_hd_wide},
    {"tg_rope(g, x (1,2,4), 2, n_rot 3, ...)", "NULL", "rope: n_rot 3 must be in [1, 2]", c_rope_nrot_big},
    {"tg_rope(g, x, 2, n_rot 0, ...)", "NULL", "rope: n_rot 0 must be in [1, 2]", c_rope_nrot_zero},
    {"tg_rope(g, x, 2, 1, pos0 -1, ...)", "NULL", "rope: pos0 -1 must be >= 0", c_rope_pos_neg},
    {"tg_rope(g, x (T 2), 2, 1, pos0 INT_MAX, ...)", "NULL",
     "rope: pos0 2147483647 must be >= 0 (and pos0 + T fit an int)", c_rope_pos_max},
    {"tg_rope(g, x, 2, 1, 0, theta 1, 0)", "NULL", "rope: theta must be finite and > 1, got 1", c_rope_theta},
    {"tg_rope(g, x, 2, 1, 0, theta NaN, 0)", "NULL", "rope: theta must be finite and > 1, got nan", c_rope_theta_nan},
    {"tg_rope(g, x, 2, 1, 0, 10000, flags 2)", "NULL", "rope: unknown flags 2", c_rope_flags},
    /* nn/nn.h */
    {"tg_linear_init(NULL, p, ...)", "-1", "linear_init: the module is NULL", c_linear_init_nol},
    {"tg_linear_init(l, NULL, ...)", "-1", "linear_init: params is NULL", c_linear_init_nop},
    {"tg_linear_init(l, p, NULL, ...)", "-1", "linear_init: name is NULL", c_linear_init_noname},
    {"tg_linear_init(l, p, \"l\", in 0, ..., NULL)", "-1", NULL, c_linear_init_noerr},
    {"tg_linear_forward(g, NULL, x)", "NULL", "linear_forward: the module is NULL", c_linear_forward},
    {"tg_layernorm_init(l, NULL, ...)", "-1", "layernorm_init: params is NULL", c_layernorm_init},
    {"tg_layernorm_forward(g, NULL, x)", "NULL", "layernorm_forward: the module is NULL", c_layernorm_forward},
    {"tg_mlp_init(m, p, \"mlp\", C 2^29, ...)", "-1",
     "mlp 'mlp': C and hidden must be in [1, 2^28], got 536870912 and 4", c_mlp_init_big},
    {"tg_mlp_init(NULL, ...)", "-1", "mlp_init: the module is NULL", c_mlp_init_nom},
    {"tg_mlp_forward(g, NULL, x)", "NULL", "mlp_forward: the module is NULL", c_mlp_forward},
    {"tg_kv_cache_init(c, f32, 4, 1, 2^30, 2^30)", "-1, 0 allocations, k NULL",
     "kv_cache_init: batch 4 x max_len "
     "1073741824 x n_head 1 x head_dim 1073741824 = 4.612e+18 elements per buffer, over 2^40",
     c_kv_overflow},
    {"tg_kv_cache_init(c, f32, 1, 2^16, 2^16, 1)", "-1, 0 allocations, k NULL",
     "kv_cache_init: n_head 65536 x head_dim 65536 is over "
     "2^31 - 1",
     c_kv_wide},
    {"tg_kv_cache_init(c, f32, batch 0, ...)", "-1, 0 allocations, k NULL", "sizes must be >= 1, got batch 0",
     c_kv_zero},
    {"tg_kv_cache_init(NULL, ...)", "-1", "kv_cache_init: cache is NULL", c_kv_null},
    {"tg_kv_cache_clear(NULL)", "returns", NULL, c_kv_clear},
    {"tg_kv_cache_release(NULL)", "returns", NULL, c_kv_free},
    {"tg_kv_cache_shift(NULL, ...)", "-1", "kv_cache_shift: the cache is NULL", c_kv_shift_null},
    {"tg_kv_cache_shift(c of 2 positions, n_keep 1, n_discard 2)", "-1, len 2",
     "n_keep 1 and n_discard 2 must be >= 0 and >= 1, together at most the 2 cached positions", c_kv_shift_far},
    {"tg_kv_cache_shift(c, ..., rope_theta 0.5)", "-1, len 2", "rope_theta must be 0 (no RoPE) or finite and > 1",
     c_kv_shift_theta},
    {"tg_kv_cache_shift(c, ..., rope_flags 7)", "-1, len 2", "TG_ROPE_HALVES (got 7)", c_kv_shift_flags},
    {"tg_mha_init(m, p, NULL, ...)", "-1", "mha_init: name is NULL", c_mha_init},
    {"tg_mha_forward(g, m, x, NULL, {.key_padding = a stale tensor})", "NULL", "mha: input 2 (f32 (3)) was made before",
     c_mha_stale_mask},
    {"tg_mha_forward(g, m, x, NULL, {.cache = a cache with len -3})", "NULL",
     "mha: KV cache length -3 is outside [0, max_len 4]", c_mha_cache_len},
    {"tg_mha_forward(g, NULL, x, NULL, NULL)", "NULL", "mha: the module is NULL", c_mha_forward},
    {"tg_linear_init_normal(NULL, r, 0.02)", "returns", NULL, c_linear_init_normal_nol},
    {"tg_linear_init_uniform(NULL, r)", "returns", NULL, c_linear_init_uniform_nol},
    {"tg_linear_init_uniform(l, NULL): draws nothing", "0", NULL, c_linear_init_uniform_nor},
    {"tg_linear_init_normal(l, NULL, 0.02): weight unchanged", "0", NULL, c_linear_init_normal_nor},
    {"tg_rmsnorm_init(NULL, ...)", "-1", "rmsnorm_init: the module is NULL", c_rmsnorm_init_nol},
    {"tg_rmsnorm_init(l, NULL, ...)", "-1", "rmsnorm_init: params is NULL", c_rmsnorm_init_nop},
    {"tg_rmsnorm_init(l, p, NULL, ...)", "-1", "rmsnorm_init: name is NULL", c_rmsnorm_init_noname},
    {"tg_rmsnorm_init(l, p, \"n\", C 0, ...)", "-1", "rmsnorm 'n': C must be >= 1, got 0", c_rmsnorm_init_c},
    {"tg_rmsnorm_init(l, p, \"n\", 3, eps 0, ...)", "-1", "rmsnorm 'n': eps must be in (0, 1], got 0",
     c_rmsnorm_init_eps},
    {"tg_rmsnorm_init(l, p, \"n\", 3, eps 2, ...)", "-1", "rmsnorm 'n': eps must be in (0, 1], got 2",
     c_rmsnorm_init_eps_big},
    {"tg_rmsnorm_init(l, p, \"n\", ...) twice", "-1", "params_add: duplicate name 'n.weight'", c_rmsnorm_init_dup},
    {"tg_rmsnorm_forward(g, NULL, x)", "NULL", "rmsnorm_forward: the module is NULL", c_rmsnorm_forward},
    {"tg_linear_init(l, p, a name of 249 bytes, ..., bias)", "-1",
     "linear_init: the name is 249 bytes, and '<name>.weight' is over TG_NN_NAME_MAX (255)", c_linear_init_long},
    {"tg_linear_init(l, p, a name of 300 bytes, ..., no bias)", "-1", "linear_init: the name is 300 bytes",
     c_linear_init_300},
    {"tg_linear_init(l, p, a name of 248 bytes, ..., bias)", "0, <name>.weight", NULL, c_linear_init_max},
    {"tg_layernorm_init(l, p, a name of 249 bytes, ...)", "-1",
     "layernorm_init: the name is 249 bytes, and '<name>.weight' is over TG_NN_NAME_MAX (255)", c_layernorm_init_long},
    {"tg_rmsnorm_init(l, p, a name of 249 bytes, ...)", "-1",
     "rmsnorm_init: the name is 249 bytes, and '<name>.weight' is over TG_NN_NAME_MAX (255)", c_rmsnorm_init_long},
    {"tg_mlp_init(m, p, a name of 251 bytes, GELU, ...)", "-1",
     "mlp_init: the name is 251 bytes, and '<name>.c_fc' is over TG_NN_NAME_MAX (255)", c_mlp_init_long},
    {"tg_mha_init(m, p, a name of 300 bytes, separate, ...)", "-1",
     "mha_init: the name is 300 bytes, and '<name>.q_proj' is over TG_NN_NAME_MAX (255)", c_mha_init_long},
    {"tg_mha_init(m, p, a name of 242 bytes, separate, ...)", "-1",
     "linear_init: the name is 249 bytes, and '<name>.weight' is over TG_NN_NAME_MAX (255)", c_mha_init_over},
    {"tg_mha_init(m, p, a name of 241 bytes, separate, bias)", "0, <name>.c_proj.weight", NULL, c_mha_init_max},
    {"tg_mlp_init(m, p, \"mlp\", kind 7, ...)", "-1", "mlp 'mlp': unknown kind 7", c_mlp_init_kind},
    {"tg_ffn_kind_name(4)", "(NULL)", NULL, c_ffn_kind_name_bad},
    {"tg_mlp_init(m, p, \"mlp\", 4, 16, &(tg_mlp_options){.kind = SWIGLU, .dropout = dropout 1}, ...)", "-1",
     "mlp 'mlp': dropout must be in [0, 1), got 1", c_mlp_init_dropout},
    {"tg_mlp_init_normal(NULL, r, ...)", "returns", NULL, c_mlp_init_normal_nom},
    {"tg_mlp_init_normal(m SwiGLU, NULL, ...): w3 unchanged", "0", NULL, c_mlp_init_normal_nor},
    {"tg_mha_init(m, p, \"attn\", NULL, ...)", "-1", "mha_init: the config is NULL", c_mha_cfg_null},
    {"tg_mha_init(C 4, n_head 2, n_kv_head 3)", "-1", "mha 'attn': n_kv_head 3 must divide n_head 2", c_mha_cfg_kv},
    {"tg_mha_init(C 4, n_head 2, n_kv_head -1)", "-1", "mha 'attn': n_kv_head -1 must divide n_head 2",
     c_mha_cfg_kv_neg},
    {"tg_mha_init(C 2^29, n_head 2)", "-1", "(n_embd <= 2^28), got 536870912 and 2", c_mha_cfg_wide},
    {"tg_mha_init(C 6, n_head 2, RoPE)", "-1", "mha 'attn': RoPE needs an even head size (got 3: n_embd 6 / n_head 2)",
     c_mha_cfg_rope_odd},
    {"tg_mha_init(rope_theta 1)", "-1", "mha 'attn': rope_theta must be 0 (no RoPE) or finite and > 1, got 1",
     c_mha_cfg_theta},
    {"tg_mha_init(RoPE, rope_flags 5)", "-1",
     "mha 'attn': unknown rope_flags 5 (TG_ROPE_INTERLEAVED or TG_ROPE_HALVES)", c_mha_cfg_rope_flags},
    {"tg_mha_init(layout 9)", "-1", "mha 'attn': unknown layout 9", c_mha_cfg_layout},
    {"tg_mha_init(dropout NaN)", "-1", "mha 'attn': dropout must be in [0, 1), got nan", c_mha_cfg_dropout},
    {"tg_mha_init_normal(NULL, r, ...)", "returns", NULL, c_mha_init_normal},
    {"tg_mha_uses_fused(g, NULL, NULL)", "false", NULL, c_mha_uses_fused},
    {"tg_llama_hidden_dim(0, 32)", "-1", NULL, c_llama_hidden_zero},
    {"tg_llama_hidden_dim(288, 0)", "-1", NULL, c_llama_hidden_mult},
    {"tg_llama_hidden_dim(INT_MAX, INT_MAX)", "-1", NULL, c_llama_hidden_max},
    {"tg_model_register(NULL, ...)", "-1", "model_register: the family is NULL", c_model_register_null},
    {"tg_model_register(a family with arch NULL, ...)", "-1", "model_register: a family's name is 1-31 bytes",
     c_model_register_noname},
    {"tg_model_family_find(NULL)", "NULL", NULL, c_model_family_find},
    {"tg_model_family_names()", "gpt, llama", NULL, c_model_family_names},
    {"tg_model_init(NULL, ...)", "-1", "model_init: the model is NULL", c_model_new_nom},
    {"tg_model_init(m, a config with arch NULL, ...)", "-1", "unknown model architecture ''", c_model_new_noarch},
    {"tg_model_init(m, a GPT of n_embd 8 and 3 heads, ...)", "-1", "gpt", c_model_new_bad},
    {"tg_model_release(NULL)", "returns", NULL, c_model_free},
    {"tg_model_num_params(NULL)", "-1", NULL, c_model_num_params},
    {"tg_model_forward(g, NULL, ...)", "NULL", NULL, c_model_forward},
    {"tg_model_forward(g, a zeroed model, ...)", "NULL", NULL, c_model_forward_empty},
    {"tg_model_loss(g, NULL, ...)", "NULL", NULL, c_model_loss},
    {"tg_model_set_composed(NULL, true)", "-1", NULL, c_model_set_composed},
    {"tg_model_cache_enable(NULL, 1, ...)", "-1", "model_cache_enable: the model is NULL or empty",
     c_model_cache_enable},
    {"tg_model_cache_clear(NULL)", "returns", NULL, c_model_cache_clear},
    {"tg_model_cache_len(NULL)", "0", NULL, c_model_cache_len},
    {"tg_model_cache_shift(NULL, ...)", "-1", "model_cache_shift: the model is NULL or empty", c_model_cache_shift},
    {"tg_model_cache_shift(a GPT, ...)", "-1", "family 'gpt' cannot shift its KV cache", c_model_cache_shift_gpt},
    {"tg_model_cache_shift(a Llama without caches, ...)", "-1", "the KV caches are not enabled",
     c_model_cache_shift_off},
    {"tg_model_config_write(NULL, w)", "-1", NULL, c_model_config_write},
    {"tg_model_config_write(c, NULL)", "-1", NULL, c_model_config_write_now},
    {"tg_model_config_read(NULL, c, ...)", "-1", "model_config_read: the file is NULL", c_model_config_read},
    {"tg_model_config_read(a file without a GPT's keys, ...)", "-1", "checkpoint metadata has no 'n_layer'",
     c_model_config_read_nokeys},
    {"tg_model_init(gpt: vocab 2^30 x n_embd 2^12)", "-1", "'transformer.wte.weight': bad shape: too many elements",
     c_model_gpt_huge},
    {"tg_model_cache_enable(gpt m (block 1024), INT_MAX, err)", "-1", "kv_cache_init: batch 2147483647 x max_len 1024",
     c_model_gpt_cache_huge},
    {"tg_model_num_params(gpt: n_embd 4, n_head 3)", "-1", NULL, c_model_gpt_params_heads},
    {"tg_model_num_params(gpt: n_layer INT_MAX, n_embd INT_MAX)", "-1", NULL, c_model_gpt_params_huge},
    {"tg_model_num_params(gpt: n_embd 2^27)", "-1", NULL, c_model_gpt_params_wide},
    {"tg_model_init(llama: n_head 2, n_kv_head 3)", "-1", "llama: n_kv_head 3 must divide n_head 2", c_model_llama_kv},
    {"tg_model_init(llama: n_kv_head 0)", "-1", "llama: every size must be >= 1: n_layer 1, n_head 2, n_kv_head 0",
     c_model_llama_kv_zero},
    {"tg_model_init(llama: n_embd 6, n_head 2)", "-1", "llama: n_embd 6 must be n_head 2 times an even head size",
     c_model_llama_odd},
    {"tg_model_init(llama: rope_theta 1)", "-1", "llama: rope_theta must be finite and > 1, got 1",
     c_model_llama_theta},
    {"tg_model_init(llama: norm_eps 0)", "-1", "llama: norm_eps must be in (0, 1], got 0", c_model_llama_eps},
    {"tg_model_init(llama: dropout 1)", "-1", "llama: dropout must be in [0, 1), got 1", c_model_llama_dropout},
    {"tg_model_init(llama, i32, ...)", "-1", "llama: dtype must be f32 or f64, got i32", c_model_llama_dtype},
    {"tg_model_init(llama: vocab 2^30 x n_embd 2^12)", "-1", "'tok_embeddings.weight': bad shape: too many elements",
     c_model_llama_vocab},
    {"tg_model_init(llama: hidden_dim 2^29)", "-1", "mlp 'layers.0.feed_forward': C and hidden must be in [1, 2^28]",
     c_model_llama_hidden},
    {"tg_model_num_params(llama: hidden_dim 2^29)", "-1", NULL, c_model_llama_params_hidden},
    {"tg_model_num_params(llama: n_head 2, n_kv_head 3)", "-1", NULL, c_model_llama_params_kv},
    {"tg_model_num_params(llama: n_layer INT_MAX, n_embd 2^30, hidden INT_MAX)", "-1", NULL, c_model_llama_params_huge},
    {"tg_model_forward(g, llama m (vocab 5), idx holding 7, NULL)", "NULL",
     "llama: idx i32 (2,3): token id 7 at flat position 4 is outside [0, 5)", c_model_llama_forward_id},
    {"tg_model_forward(g, llama m (block 4), idx (1,5), NULL)", "NULL",
     "T = 5 with 0 cached positions exceeds block_size 4", c_model_llama_forward_long},
    {"tg_model_forward(g, llama m, f32 x, NULL)", "NULL", "llama: idx must be i32 (B,T), got f32 (2,3)",
     c_model_llama_forward_f32},
    {"tg_model_forward(g, llama m, idx holding -1, w)", "NULL, slot NULL", "token id -1 at flat position 0",
     c_model_llama_forward_slots},
    {"tg_model_loss(g, llama m, idx, f32 targets)", "NULL", "llama_loss: targets must be i32 shaped like idx",
     c_model_llama_loss_targets},
    {"tg_model_cache_enable(llama m, 0, err)", "-1", "llama_cache_enable: batch must be >= 1, got 0",
     c_model_llama_cache_batch},
    {"tg_model_cache_enable(llama m (block 2^20), INT_MAX, err)", "-1",
     "kv_cache_init: batch 2147483647 x max_len 1048576", c_model_llama_cache_huge},
    /* optim/optim.h */
    {"tg_sgd_new(NULL, ...)", "NULL", "sgd_new: params is NULL", c_sgd_new_nop},
    {"tg_sgd_new(p, -1, 0, NULL)", "NULL", NULL, c_sgd_new_noerr},
    {"tg_sgd_step(NULL, 0.1, err)", "-1", "sgd_step: the optimizer is NULL", c_sgd_step_nulls},
    {"tg_sgd_step(o, NaN, err): -1, w[0] unchanged", "-1, w[0] 0", "sgd_step: lr must be finite, got nan; nothing done",
     c_sgd_step_nan},
    {"tg_sgd_free(NULL)", "returns", NULL, c_sgd_free},
    {"tg_adamw_new(NULL, ...)", "NULL", "adamw_new: params is NULL", c_adamw_new_nop},
    {"tg_adamw_set_decay(NULL, x, true, err)", "-1", "adamw_set_decay: the optimizer is NULL", c_adamw_decay_noo},
    {"tg_adamw_set_decay(o, NULL, true, err)", "-1", "is not a parameter of the optimizer's store", c_adamw_decay_nop},
    {"tg_adamw_decays(NULL, x)", "false", NULL, c_adamw_decays},
    {"tg_adamw_step(NULL, 0.1, err)", "-1", "adamw_step: the optimizer is NULL", c_adamw_step_noo},
    {"tg_adamw_step(o, inf, err): -1, steps stay 0", "-1, steps 0",
     "adamw_step: lr must be finite, got inf; nothing done", c_adamw_step_inf},
    {"tg_adamw_steps(NULL)", "0", NULL, c_adamw_steps},
    {"tg_adamw_set_steps(NULL, 3, err)", "-1", "adamw_set_steps: the optimizer is NULL", c_adamw_set_steps_noo},
    {"tg_adamw_set_steps(o, -1, err): steps stay 0", "-1, steps 0", "adamw_set_steps: step count -1 is negative",
     c_adamw_set_steps_neg},
    {"tg_adamw_m(NULL)", "NULL", NULL, c_adamw_m},
    {"tg_adamw_v(NULL)", "NULL", NULL, c_adamw_v},
    {"tg_adamw_free(NULL)", "returns", NULL, c_adamw_free},
    {"tg_clip_grad_norm(NULL, 1)", "nan", NULL, c_clip},
    {"tg_adamw_new_shard(p of 6, NULL, 2, 7)", "NULL",
     "adamw_new_shard: the shard [2, 7) is not a range of the "
     "store's 6 elements",
     c_adamw_shard_range},
    {"tg_adamw_new_shard(NULL, ...)", "NULL", "adamw_new: params is NULL", c_adamw_shard_nop},
    {"tg_adamw_shard(NULL, &lo, &hi)", "0", NULL, c_adamw_shard_noo},
    {"tg_adamw_step_grad(o, 0.1, NULL, err): -1, steps stay 0", "-1, steps 0",
     "adamw_step_grad: grad is NULL; nothing done", c_adamw_step_grad_null},
    {"tg_adamw_step_grad(NULL, 0.1, NULL, NULL)", "-1", NULL, c_adamw_step_grad_noo},
    {"tg_adamw_state_write(NULL, w, ...)", "-1", NULL, c_adamw_state_write_noo},
    {"tg_adamw_state_write(o, NULL, ...)", "-1", NULL, c_adamw_state_write_now},
    {"tg_adamw_state_write(o, w, a prefix of 201 bytes, ...)", "-1", NULL, c_adamw_state_write_long},
    {"tg_adamw_state_read(o, NULL, ...)", "-1", "adamw_state_read: the file is NULL", c_adamw_state_read_nof},
    {"tg_adamw_state_read(o, a file without it, \"opt\")", "-1", "adamw_state_read: the file has no tensor 'opt.m'",
     c_adamw_state_read_missing},
    {"tg_adamw_set_update(o, NULL, false, err)", "-1", "adamw_set_update: tensor '(unnamed)' is not a parameter",
     c_adamw_set_update_nop},
    {"tg_adamw_updates(NULL, x)", "false", NULL, c_adamw_updates},
    {"tg_muon_takes(a tensor \"w\")", "false", NULL, c_muon_takes},
    {"tg_muon_new(NULL, ...)", "NULL", "muon_new: params is NULL", c_muon_new_nop},
    {"tg_muon_new_select(p, NULL, a 1-D tensor taken, ...)", "NULL",
     "muon_new: tensor 'b' has 1 dimensions; Muon "
     "takes 2-D matrices only (leave it to AdamW)",
     c_muon_new_select_1d},
    {"tg_muon_updates(NULL, x)", "false", NULL, c_muon_updates},
    {"tg_muon_exclude(NULL, a, err)", "-1", "muon_exclude: the Muon is NULL", c_muon_exclude},
    {"tg_muon_exclude(o, an AdamW of another store, err): nothing changes", "-1, w updated",
     "muon_exclude: the AdamW is not on Muon's store", c_muon_exclude_other},
    {"tg_muon_step(NULL, 0.02, err)", "-1", "muon_step: the optimizer is NULL", c_muon_step_noo},
    {"tg_muon_step(o, NaN, err): -1, steps stay 0", "-1, steps 0",
     "muon_step: lr must be finite, got nan; nothing done", c_muon_step_nan},
    {"tg_muon_step_part(o, 0.02, 1, 1, err)", "-1",
     "muon_step_part: part 1 of 1 is not one of [0, parts); nothing done", c_muon_step_part_bad},
    {"tg_muon_owner(NULL, x, 2)", "-1", NULL, c_muon_owner},
    {"tg_muon_steps(NULL)", "0", NULL, c_muon_steps},
    {"tg_muon_set_steps(NULL, 3, err)", "-1", "muon_set_steps: the optimizer is NULL", c_muon_set_steps_noo},
    {"tg_muon_set_steps(o, -1, err): steps stay 0", "-1, steps 0", "muon_set_steps: step count -1 is negative",
     c_muon_set_steps_neg},
    {"tg_muon_momentum(NULL)", "NULL", NULL, c_muon_momentum},
    {"tg_muon_numel(NULL)", "0", NULL, c_muon_numel},
    {"tg_muon_free(NULL)", "returns", NULL, c_muon_free},
    {"tg_muon_state_write(NULL, w, \"opt\")", "-1", NULL, c_muon_state_write_noo},
    {"tg_muon_state_read(o, a file without it, \"opt\")", "-1",
     "muon_state_read: the file has no tensor "
     "'opt.momentum'",
     c_muon_state_read_missing},
    {"tg_ema_new(NULL, 0.9, ...)", "NULL", "ema_new: params is NULL", c_ema_new_nop},
    {"tg_ema_new(p, 1, ...)", "NULL", "ema_new: decay must be in [0, 1), got 1", c_ema_new_bad},
    {"tg_ema_update(NULL, err)", "-1", "ema_update: the average is NULL", c_ema_update},
    {"tg_ema_update(NULL, NULL)", "-1", NULL, c_ema_update_noerr},
    {"tg_ema_swap(NULL, err)", "-1", "ema_swap: the average is NULL", c_ema_swap},
    {"tg_ema_reset(NULL, err)", "-1", "ema_reset: the average is NULL", c_ema_reset},
    {"tg_ema_decay(NULL)", "nan", NULL, c_ema_decay},
    {"tg_ema_values(NULL)", "NULL", NULL, c_ema_values},
    {"tg_ema_numel(NULL)", "0", NULL, c_ema_numel},
    {"tg_ema_free(NULL)", "returns", NULL, c_ema_free},
    {"tg_ema_state_write(NULL, w, \"ema\")", "-1", NULL, c_ema_state_write_noe},
    {"tg_ema_state_read(e, a file without it, \"ema\")", "-1", "ema_state_read: the file has no tensor 'ema.values'",
     c_ema_state_read_missing},
    {"tg_clip_grad_norm_part(NULL, f32, 6, ...)", "nan", NULL, c_clip_part_null},
    {"tg_clip_grad_norm_part(g, f32, -1, ...)", "nan", NULL, c_clip_part_neg},
    {"tg_clip_grad_norm_part(g, i32, 6, ...)", "nan", NULL, c_clip_part_i32},
    /* train/train.h */
    {"tg_vocab_bytes(NULL, ...)", "returns", NULL, c_vocab_bytes},
    {"tg_vocab_bytes(v, NULL, 5): empty", "0", NULL, c_vocab_bytes_notext},
    {"tg_vocab_llama2c(NULL)", "returns", NULL, c_vocab_llama2c},
    {"tg_vocab_ids(NULL, 5)", "returns", NULL, c_vocab_ids},
    {"tg_vocab_tokenizer(v, NULL, ...)", "-1", "vocab_tokenizer: the tokenizer is NULL", c_vocab_tokenizer},
    {"tg_vocab_release(NULL)", "returns", NULL, c_vocab_free},
    {"tg_vocab_to_string(NULL, buf, size)", "-1", NULL, c_vocab_to_string},
    {"tg_vocab_to_string(v, NULL, 8)", "-1", NULL, c_vocab_to_string_nobuf},
    {"tg_vocab_from_string(v, NULL, ...)", "-1", "vocab_from_string: the text is NULL", c_vocab_from_string},
    {"tg_vocab_from_string(v, \"ids:x\", ...)", "-1", "vocabulary: 'ids:x' is not ids:N", c_vocab_from_string_bad},
    {"tg_vocab_write(NULL, w)", "-1", NULL, c_vocab_write},
    {"tg_vocab_read(v, NULL, ...)", "-1", "vocab_read: the file is NULL", c_vocab_read},
    {"tg_vocab_read(v, a file without 'vocab', ...)", "-1", "the file has no 'vocab' in its metadata",
     c_vocab_read_none},
    {"tg_vocab_encode(NULL, ...)", "-1", NULL, c_vocab_encode},
    {"tg_vocab_encode(v, \"a\", 1, NULL, ...)", "-1", NULL, c_vocab_encode_noout},
    {"tg_vocab_decode(NULL, 3, buf)", "0", NULL, c_vocab_decode},
    {"tg_tok_same(NULL, NULL)", "true", NULL, c_tok_same},
    {"tg_dataset_from_text(NULL, ...)", "-1", "dataset_from_text: the dataset is NULL", c_dataset_text},
    {"tg_dataset_from_text(d, v, \"abc\", 3, block 0, ...)", "-1", "block_size 0 is below 1", c_dataset_text_block},
    {"tg_dataset_from_token_files(d, v, NULL, ...)", "-1", "dataset_from_token_files: the train file is NULL",
     c_dataset_files},
    {"tg_dataset_from_token_files(d, v, a missing file, ...)", "-1", "none.bin", c_dataset_files_missing},
    {"tg_text_train_bytes(NULL, 10)", "9", NULL, c_text_train_bytes},
    {"tg_dataset_bytes_per_token(NULL, v)", "returns", NULL, c_dataset_bpt},
    {"tg_dataset_rows(NULL, ...): x unchanged", "7", NULL, c_dataset_rows},
    {"tg_dataset_rows(3 tokens, T 4): x unchanged", "7", NULL, c_dataset_rows_short},
    {"tg_dataset_epoch_rows(d, ..., at -1, ...): x unchanged", "7", NULL, c_dataset_epoch_rows},
    {"tg_dataset_epoch_windows(3 tokens, T 4)", "0", NULL, c_dataset_epoch_windows},
    {"tg_dataset_release(NULL)", "returns", NULL, c_dataset_free},
    {"tg_train_state_init(NULL, 1)", "returns", NULL, c_train_state_init},
    {"tg_metrics_open(NULL, ...)", "NULL", "metrics_open: the path is NULL", c_metrics_open},
    {"tg_metrics_open(path, a column of format %n, ...)", "NULL", "column 0 (loss, %n) is not a name",
     c_metrics_open_format},
    {"tg_metrics_write(NULL, ...)", "-1", NULL, c_metrics_write},
    {"tg_metrics_close(NULL)", "0", NULL, c_metrics_close},
    {"tg_eval_loss(g, NULL, ...)", "nan", "eval_loss: the model is NULL", c_eval_loss},
    {"tg_eval_loss(g, m, d, ..., rank 2 of 2)", "nan", "rank 2 of 2: each must be >= 1 and the rank below the ranks",
     c_eval_loss_spec},
    {"tg_file_read(NULL, ...)", "NULL", "file_read: the path is NULL", c_file_read},
    {"tg_file_read(a missing file, ...)", "NULL", "none.txt: No such file or directory", c_file_read_missing},
    {"tg_vocab_space_before_text(NULL)", "false", NULL, c_vocab_space},
    {"tg_vocab_check_size(NULL, ...)", "-1", "vocab_check_size: the vocabulary is NULL", c_vocab_check_size},
    {"tg_checkpoint_load_vocab(NULL, ...)", "-1", "checkpoint_load_vocab: the file is NULL", c_ckpt_load_vocab},
    {"tg_llama2c_export(NULL, ...)", "-1", "llama2c_export: the checkpoint is NULL", c_llama2c_export},
    {"tg_llama2c_tokenizer_write(NULL, ...)", "-1", "llama2c_tokenizer_write: the tokenizer is NULL",
     c_llama2c_tokenizer_write},
    {"tg_gguf_import(a missing file, ...)", "-1", "none.gguf: No such file or directory", c_gguf_import},
    {"tg_llama2c_import(a missing file, ...)", "-1", "none.bin: No such file or directory", c_llama2c_import},
    {"tg_gguf_export(NULL, ...)", "-1", "gguf_export: the checkpoint is NULL", c_gguf_export},
    {"tg_gguf_export(NULL, NULL, ...)", "-1", "gguf_export: the path is NULL", c_gguf_export_nopath},
    {"tg_gguf_export(NULL, path, 3, ...)", "-1", "gguf_export: type 3 is not one of", c_gguf_export_type},
    {"tg_checkpoint_save(path, NULL, ...)", "-1", "checkpoint_save: the model is NULL", c_ckpt_save_nom},
    {"tg_checkpoint_save(path, m, ..., meta NULL, 2, ...)", "-1", "checkpoint_save: meta is NULL", c_ckpt_save_nometa},
    {"tg_checkpoint_load_model(NULL, ...)", "-1", "checkpoint_load_model: the file is NULL", c_ckpt_load_model},
    {"tg_checkpoint_load_model(a file without a config, ...)", "-1", "checkpoint metadata has no 'n_layer'",
     c_ckpt_load_model_nokeys},
    {"tg_checkpoint_load_train(NULL, ...)", "-1", "checkpoint_load_train: the file is NULL", c_ckpt_load_train},
    {"tg_checkpoint_load_train(a file without state, ...)", "-1", "not a training checkpoint",
     c_ckpt_load_train_weights},
    /* distributed/dist.h (one process: no launcher started this test) */
    {"tg_dist_init(NULL, NULL, NULL) without a launcher", "0", NULL, c_dist_init_null},
    {"tg_dist_allreduce_f64(NULL, 2, sum)", "-1", NULL, c_dist_allreduce_null},
    {"tg_dist_allreduce_f64(&x, 1, op 7)", "-1", NULL, c_dist_allreduce_op},
    {"tg_dist_allreduce_i64(&x, -1, max)", "-1", NULL, c_dist_allreduce_i64_neg},
    {"tg_dist_bcast(b, 4, root = size)", "-1", NULL, c_dist_bcast_root},
    {"tg_dist_bcast(NULL, 4, 0)", "-1", NULL, c_dist_bcast_null},
    {"tg_dist_first_failure(true, msg, 4)", "0", NULL, c_dist_first_failure},
    {"tg_dist_shard_range(10, rank 2 of 2): nothing written", "18", NULL, c_dist_shard_range},
    {"tg_dist_grads_new(NULL, ...)", "NULL", "dist_grads_new: params is NULL", c_dist_grads_nop},
    {"tg_dist_grads_new(an empty store, ...)", "NULL", "dist_grads_new: the store has no parameters",
     c_dist_grads_empty},
    {"tg_dist_grads_free(NULL)", "returns", NULL, c_dist_grads_free},
    {"tg_dist_grads_begin(NULL, g)", "-1", NULL, c_dist_begin_null},
    {"tg_dist_grads_begin(d, NULL)", "-1", NULL, c_dist_begin_nog},
    {"tg_dist_grads_begin(d, g) twice", "-1", NULL, c_dist_begin_twice},
    {"tg_dist_grads_end(d) without begin", "-1", NULL, c_dist_end_unbegun},
    {"tg_dist_grads_end(NULL)", "-1", NULL, c_dist_end_null},
    {"tg_dist_grads_shard(NULL, &lo, &hi)", "0", NULL, c_dist_shard_null},
    {"tg_dist_grads_shard_grad(NULL)", "NULL", NULL, c_dist_shard_grad_null},
    {"tg_dist_grads_clip(NULL, 1)", "nan", NULL, c_dist_clip_null},
    {"tg_dist_grads_gather_params(NULL)", "-1", NULL, c_dist_gather_params_null},
    {"tg_dist_grads_gather_shard(d, part, NULL) on rank 0", "-1", NULL, c_dist_gather_shard_null},
    {"tg_dist_grads_probe(NULL, 1)", "nan", NULL, c_dist_probe_null},
    {"tg_dist_grads_bucket_count(NULL)", "0", NULL, c_dist_bucket_count_null},
    {"tg_dist_grads_bucket(d, count, &b)", "-1", NULL, c_dist_bucket_past},
    {"tg_dist_grads_stats(NULL, &s): zeros", "0", NULL, c_dist_stats_null},
    {"tg_lr_cosine(INT64_MAX - 1, warmup INT64_MAX, ..., lr 2)", "2", NULL, c_lr_warmup_max},
    {"tg_lr_at(NULL, 3)", "nan", NULL, c_lr_at_null},
    {"tg_budget_steps(10, 0.1, step NAN, ...)", "-1", NULL, c_budget_nan},
    {"tg_budget_steps(10, 0, spent 9 + step 1 + eval 1, ...): no step fits", "0", NULL, c_budget_none_fit},
    {"tg_train_snapshot_take(NULL, ...)", "NULL", "train_snapshot_take: the model is NULL", c_snapshot_null},
    {"tg_train_snapshot_restore(NULL, ...)", "-1", NULL, c_snapshot_restore_null},
    {"tg_train_snapshot_free(NULL)", "returns", NULL, c_snapshot_free_null},
    /* text/text.h */
    {"tg_bpe_train(NULL, 5, opts, err)", "NULL", "bpe train: no text", c_bpe_notext},
    {"tg_bpe_train(text, 0, opts, err)", "NULL", "bpe train: no text", c_bpe_empty},
    {"tg_bpe_train(text, 2, NULL, err)", "NULL", "bpe train: NULL options", c_bpe_noopts},
    {"tg_bpe_train(vocab_size 258)", "NULL", "bpe train: vocab_size 258 is not in [259, 2^24]", c_bpe_vocab_small},
    {"tg_bpe_train(vocab_size 2^24 + 1)", "NULL", "bpe train: vocab_size 16777217 is not in [259, 2^24]",
     c_bpe_vocab_big},
    {"tg_bpe_train(words 2)", "NULL",
     "bpe train: words 2 is neither TG_BPE_WORDS_CLASSES (0) nor TG_BPE_WORDS_SPACES (1)", c_bpe_words},
    {"tg_bpe_train(NULL, 5, opts, NULL)", "NULL", NULL, c_bpe_noerr},
    {"tg_tok_load_tiktoken(NULL, err)", "NULL", "tiktoken: NULL path", c_tiktoken_nopath},
    {"tg_tok_load_tiktoken(missing, err)", "NULL", "missing.tiktoken: No such file or directory", c_tiktoken_missing},
    {"tg_tok_load_tiktoken(missing, NULL)", "NULL", NULL, c_tiktoken_noerr},
    {"tg_tok_load_tiktoken(a directory, err)", "NULL", ": not a regular file", c_tiktoken_dir},
    {"tg_tok_load_tiktoken(empty lines)", "NULL", "bad.tiktoken: no pieces", c_tiktoken_empty},
    {"tg_tok_load_tiktoken(\"YQ==\" without a rank)", "NULL", "bad.tiktoken:1: expected \"<base64 piece> <rank>\"",
     c_tiktoken_norank},
    {"tg_tok_load_tiktoken(line 2 \"Y*== 1\")", "NULL",
     "bad.tiktoken:2: expected \"<base64 piece> <rank>\", and the "
     "piece is not base64 of at least one byte",
     c_tiktoken_base64},
    {"tg_tok_load_tiktoken(rank \"0x\")", "NULL", "bad.tiktoken:1: the rank \"0x\" is not a whole number",
     c_tiktoken_rank},
    {"tg_tok_load_tiktoken(rank 0 twice)", "NULL", "bad.tiktoken:2: rank 0 was given already on line 1",
     c_tiktoken_rank_twice},
    {"tg_tok_load_tiktoken(ranks 0 and 2)", "NULL",
     "bad.tiktoken: rank 1 is missing (2 pieces must have ranks 0..1; line 2 has rank 2)", c_tiktoken_gap},
    {"tg_tok_load_tiktoken(only \"a\")", "NULL", "no piece is the single byte 0x00", c_tiktoken_byte},
    {"tg_tok_load_tiktoken(\"a\" at ranks 97 and 256)", "NULL", "id 256 repeats the piece of id 97",
     c_tiktoken_piece_twice},
    {"tg_tok_load(NULL, err)", "NULL", "tokenizer: NULL path", c_tok_load_nopath},
    {"tg_tok_load(missing, err)", "NULL", "missing.tok: No such file or directory", c_tok_load_missing},
    {"tg_tok_load(missing, NULL)", "NULL", NULL, c_tok_load_noerr},
    {"tg_tok_load(a safetensors file without a tokenizer, err)", "NULL",
     "notok.safetensors: tokenizer: the file holds no tokenizer", c_tok_load_notok},
    {"tg_tok_load(a safetensors header cut short, err)", "NULL", "cut.safetensors", c_tok_load_cut},
    {"tg_tok_from_st(NULL, err)", "NULL", "tokenizer: NULL file", c_tok_from_st_nof},
    {"tg_tok_from_st(NULL, NULL)", "NULL", NULL, c_tok_from_st_noerr},
    {"tg_tok_from_st(f without tokenizer metadata, err)", "NULL",
     "tokenizer: the file holds no tokenizer (no 'tokenizer' metadata)", c_tok_from_st_none},
    {"tg_tok_from_st(f of kind \"wordpiece\", err)", "NULL",
     "tokenizer: unknown kind 'wordpiece' (bpe, tiktoken or spm)", c_tok_from_st_kind},
    {"tg_tok_from_st(f of version \"2\", err)", "NULL", "tokenizer: version '2' is not 1", c_tok_from_st_version},
    {"tg_tok_from_st(f with F32 tokenizer.pieces, err)", "NULL",
     "tokenizer: 'tokenizer.pieces' must be U8 with 1 dimension, not F32 with 1", c_tok_from_st_pieces},
    {"tg_tok_st_add(NULL, w)", "-1", "safetensors: writer: tokenizer: the tokenizer is NULL", c_tok_st_add_not},
    {"tg_tok_st_add(t, NULL)", "-1", NULL, c_tok_st_add_now},
    {"tg_tok_st_add(t, w) twice", "-1", "duplicate metadata key 'tokenizer'", c_tok_st_add_twice},
    {"tg_tok_save(NULL, path, err)", "-1", "tokenizer save: NULL argument", c_tok_save_not},
    {"tg_tok_save(t, NULL, err)", "-1", "tokenizer save: NULL argument", c_tok_save_nopath},
    {"tg_tok_save(t, \"/nonexistent/t.safetensors\", err)", "-1", "No such file or directory", c_tok_save_nodir},
    {"tg_tok_save(NULL, path, NULL)", "-1", NULL, c_tok_save_noerr},
    {"tg_tok_free(NULL)", "returns", NULL, c_tok_free},
    {"tg_tok_kind_of(NULL) is TG_TOK_NONE", "true", NULL, c_tok_kind_of},
    {"tg_tok_vocab_size(NULL)", "0", NULL, c_tok_vocab_size},
    {"tg_tok_bos(NULL)", "-1", NULL, c_tok_bos},
    {"tg_tok_eos(NULL)", "-1", NULL, c_tok_eos},
    {"tg_tok_special_id(t, NULL)", "-1", NULL, c_tok_special_id_nos},
    {"tg_tok_special_id(t BPE, \"<|endoftext|>\")", "-1", NULL, c_tok_special_id_unknown},
    {"tg_tok_special_id(NULL, \"<s>\")", "-1", NULL, c_tok_special_id_not},
    {"tg_tok_is_special(t, -1)", "false", NULL, c_tok_is_special_neg},
    {"tg_tok_is_special(t of 260 ids, 260)", "false", NULL, c_tok_is_special_past},
    {"tg_tok_is_special(NULL, 0)", "false", NULL, c_tok_is_special_not},
    {"tg_tok_new_spm(2, NULL pieces, ...)", "NULL", "spm tokenizer: NULL argument", c_spm_new_null},
    {"tg_tok_new_spm(..., NULL options, err)", "NULL", "spm tokenizer: NULL argument", c_spm_new_noopts},
    {"tg_tok_new_spm(0 ids, ...)", "NULL", "0 ids: a vocabulary has 1 to 2^30", c_spm_new_zero},
    {"tg_tok_new_spm(INT32_MAX ids, ...)", "NULL", "a vocabulary has 1 to 2^30", c_spm_new_huge},
    {"tg_tok_new_spm(\"a\", \"b\": no byte pieces)", "NULL", "no byte piece for 0x00", c_spm_new_nobytes},
    {"tg_tok_new_spm(..., NULL)", "NULL", NULL, c_spm_new_noerr},
    {"tg_tok_load_llama2c(NULL, 0, err)", "NULL", "llama2.c tokenizer: NULL path", c_l2c_nopath},
    {"tg_tok_load_llama2c(missing, 0, err)", "NULL", "No such file or directory", c_l2c_missing},
    {"tg_tok_load_llama2c(path, -1, err)", "NULL", "vocab_size -1 is not 0 (any) or 1..2^30", c_l2c_negvocab},
    {"tg_tok_load_llama2c(empty file)", "NULL", "0 bytes, shorter than its 4-byte header", c_l2c_empty},
    {"tg_tok_load_llama2c(a length of 2^31 - 1)", "NULL", "id 0 has length 2147483647 (past the end of the file)",
     c_l2c_huge_len},
    {"tg_tok_load_llama2c(NULL, 0, NULL)", "NULL", NULL, c_l2c_noerr},
    {"tg_tok_score(NULL, 0)", "nan", NULL, c_tok_score_not},
    {"tg_tok_score(t of 260 ids, 260)", "nan", NULL, c_tok_score_past},
    {"tg_tok_score(t BPE, 100)", "0", NULL, c_tok_score_bpe},
    {"tg_tok_piece_type(NULL, 0) is TG_PIECE_NONE", "true", NULL, c_tok_piece_type_not},
    {"tg_tok_piece_type(t, -1) is TG_PIECE_NONE", "true", NULL, c_tok_piece_type_neg},
    {"tg_tok_spelled(NULL, 0, &len)", "NULL", NULL, c_tok_spelled_not},
    {"tg_tok_spelled(t of 260 ids, 260, &len)", "NULL", NULL, c_tok_spelled_past},
    {"tg_tok_adds_prefix(NULL)", "false", NULL, c_tok_adds_prefix_not},
    {"tg_tok_adds_prefix(t BPE)", "false", NULL, c_tok_adds_prefix_bpe},
    {"tg_tok_spm_options_of(NULL, &o)", "-1", NULL, c_tok_spm_options_not},
    {"tg_tok_spm_options_of(t BPE, &o)", "-1", NULL, c_tok_spm_options_bpe},
    {"tg_tok_spm_options_of(t, NULL)", "-1", NULL, c_tok_spm_options_noout},
    {"tg_tok_piece(t of 260 ids, 260, &len)", "NULL, len 0", NULL, c_tok_piece_past},
    {"tg_tok_piece(t, INT32_MIN, &len)", "NULL, len 0", NULL, c_tok_piece_neg},
    {"tg_tok_piece(NULL, 0, &len)", "NULL, len 0", NULL, c_tok_piece_not},
    {"tg_tok_piece(t, 260, NULL len)", "NULL", NULL, c_tok_piece_nolen},
    {"tg_tok_max_piece_len(NULL)", "0", NULL, c_tok_max_piece_len},
    {"tg_tok_n_merges(NULL)", "0", NULL, c_tok_n_merges},
    {"tg_tok_merge(t of 1 merge, 1, &l, &r)", "-1", NULL, c_tok_merge_past},
    {"tg_tok_merge(t, -1, NULL, NULL)", "-1", NULL, c_tok_merge_neg},
    {"tg_tok_merge(NULL, 0, ...)", "-1", NULL, c_tok_merge_not},
    {"tg_tok_merge(a tiktoken tokenizer, 0, ...)", "-1", NULL, c_tok_merge_tiktoken},
    {"tg_tok_encode(NULL, \"ab\", 2, &ids, err)", "-1, ids NULL", "tokenizer encode: NULL argument", c_tok_encode_not},
    {"tg_tok_encode(t, NULL, 2, &ids, err)", "-1, ids NULL", "tokenizer encode: NULL argument", c_tok_encode_notext},
    {"tg_tok_encode(t, \"ab\", 2, NULL, err)", "-1", "tokenizer encode: NULL argument", c_tok_encode_noids},
    {"tg_tok_encode(t, NULL, 0, &ids, err)", "0, ids set", NULL, c_tok_encode_empty},
    {"tg_tok_encode(NULL, \"ab\", 2, &ids, NULL)", "-1, ids NULL", NULL, c_tok_encode_noerr},
    {"tg_tok_bytes_per_token(t, \"\", 0)", "nan", NULL, c_tok_bpt_empty},
    {"tg_tok_bytes_per_token(NULL, \"ab\", 2)", "nan", NULL, c_tok_bpt_not},
    {"tg_tok_decode(t of 260 ids, {'a', 260}, 2, ...)", "-1",
     "tokenizer decode: id 260 at position 1 is outside the vocabulary [0, 260)", c_tok_decode_past},
    {"tg_tok_decode(t, {-1}, 1, ...)", "-1", "tokenizer decode: id -1 at position 0 is outside", c_tok_decode_neg},
    {"tg_tok_decode(NULL, ...)", "-1", "tokenizer decode: NULL argument", c_tok_decode_not},
    {"tg_tok_decode(t, NULL ids, 2, ...)", "-1", "tokenizer decode: NULL argument", c_tok_decode_noids},
    {"tg_tok_decode(t, ids, 1, NULL out, cap 8, ...)", "-1", "tokenizer decode: NULL argument", c_tok_decode_noout},
    {"tg_tok_decode(t, {\"ab\", 'c'}, 2, NULL, 0, NULL)", "3", NULL, c_tok_decode_measure},
    {"tg_tok_decode(t, {260}, 1, out, cap, NULL)", "-1", NULL, c_tok_decode_noerr},
    {"tg_tok_stream_init(NULL, t)", "returns", NULL, c_stream_init},
    {"tg_tok_stream_push(s holding 1 byte, 260, out, cap)", "-1, 1 held", NULL, c_stream_push_past},
    {"tg_tok_stream_push(s holding 1 byte, -1, out, cap)", "-1, 1 held", NULL, c_stream_push_neg},
    {"tg_tok_stream_push(s holding 1 byte, 'a', out, cap 7 < max_piece_len 5 + 3)", "-1, 1 held", NULL,
     c_stream_push_cap},
    {"tg_tok_stream_push(NULL, ...)", "-1", NULL, c_stream_push_nos},
    {"tg_tok_stream_push(s started on NULL, ...)", "-1", NULL, c_stream_push_notok},
    {"tg_tok_stream_push(s, id, NULL out, ...)", "-1", NULL, c_stream_push_noout},
    {"tg_tok_stream_flush(s holding 1 byte, out, cap 2)", "-1, 1 held", NULL, c_stream_flush_cap},
    {"tg_tok_stream_flush(NULL, out, cap)", "-1", NULL, c_stream_flush_nos},
    {"tg_tokfile_open(NULL, ...)", "NULL", "token file: NULL path", c_tokfile_nopath},
    {"tg_tokfile_open(path, AUTO, vocab 0, err)", "NULL", "token file: vocab_size must be >= 1", c_tokfile_vocab},
    {"tg_tokfile_open(path, format 7, 5, err)", "NULL", "token file: unknown format", c_tokfile_format},
    {"tg_tokfile_open(missing, ...)", "NULL", "missing.bin: No such file or directory", c_tokfile_missing},
    {"tg_tokfile_open(missing, ..., NULL)", "NULL", NULL, c_tokfile_noerr},
    {"tg_tokfile_open(a directory, ...)", "NULL", ": not a regular file", c_tokfile_dir},
    {"tg_tokfile_open(an empty file, ...)", "NULL", "t.bin: the file is empty", c_tokfile_empty},
    {"tg_tokfile_open(3 bytes, NANOGPT, ...)", "NULL", "t.bin: 3 bytes is not a whole number of uint16 ids",
     c_tokfile_odd},
    {"tg_tokfile_open(ids 1 9, AUTO, vocab 5)", "NULL",
     "t.bin: offset 2 (token 1): id 9 is not below the vocabulary size 5", c_tokfile_id},
    {"tg_tokfile_open(4 bytes, LLMC, ...)", "NULL", "t.bin: 4 bytes, shorter than llm.c's 1024-byte header",
     c_tokfile_llmc_short},
    {"tg_tokfile_open(llm.c version 3, AUTO, ...)", "NULL", "t.bin: offset 4: llm.c version 3", c_tokfile_llmc_version},
    {"tg_tokfile_open(llm.c header of 5 tokens and 1, AUTO, ...)", "NULL",
     "t.bin: offset 8: the header says 5 tokens (1034 bytes in all) but the file has 1026 bytes: truncated",
     c_tokfile_llmc_count},
    {"tg_tokfile_open(llm.c header of 0 tokens, AUTO, ...)", "NULL",
     "t.bin: offset 8: the header says 0 tokens, and a file holds at least one", c_tokfile_llmc_none},
    {"tg_tokfile_free(NULL)", "returns", NULL, c_tokfile_close},
    {"tg_tokfile_count(NULL)", "0", NULL, c_tokfile_count},
    {"tg_tokfile_format_of(NULL) is TG_TOKFILE_AUTO", "true", NULL, c_tokfile_format_of},
    {"tg_tokfile_read(f of 3, 2, 2, out)", "-1", NULL, c_tokfile_read_past},
    {"tg_tokfile_read(f, -1, 1, out)", "-1", NULL, c_tokfile_read_neg},
    {"tg_tokfile_read(f of 3, 1, INT64_MAX, out)", "-1", NULL, c_tokfile_read_huge},
    {"tg_tokfile_read(f, 0, 1, NULL)", "-1", NULL, c_tokfile_read_noout},
    {"tg_tokfile_read(NULL, 0, 1, out)", "-1", NULL, c_tokfile_read_nof},
    {"tg_tokfile_write(NULL, ...)", "-1", "token file: NULL argument", c_tokfile_write_nopath},
    {"tg_tokfile_write(path, NANOGPT, NULL, 3, err)", "-1", "token file: NULL argument", c_tokfile_write_noids},
    {"tg_tokfile_write(path, NANOGPT, ids, -1, err)", "-1", "token file: negative count", c_tokfile_write_neg},
    {"tg_tokfile_write(path, AUTO, ...)", "-1", "token file: format must be NANOGPT or LLMC", c_tokfile_write_format},
    {"tg_tokfile_write(path, NANOGPT, {1, 70000}, ...)", "-1",
     "id 70000 at 1 does not fit in uint16 (nanoGPT's format)", c_tokfile_write_wide},
    {"tg_tokfile_write(path, LLMC, {-1}, ...)", "-1", "id -1 at 0 does not fit in an unsigned id",
     c_tokfile_write_negid},
    {"tg_tokfile_write(\"/nonexistent/w.bin\", ...)", "-1", "token file /nonexistent/w.bin: No such file or directory",
     c_tokfile_write_nodir},
    {"tg_tokfile_write(NULL, ..., NULL)", "-1", NULL, c_tokfile_write_noerr},
    /* train/generate.h */
    {"tg_sampler_new(top_k -1, 5, err)", "NULL", "top_k >= 0 and top_p in [0, 1]; got temperature 0, top_k -1",
     c_sampler_new_opts},
    {"tg_sampler_new(NULL, vocab_size 0, err)", "NULL", "sampler_new: vocab_size must be >= 1, got 0",
     c_sampler_new_v0},
    {"tg_sampler_free(NULL)", "returns", NULL, c_sampler_free},
    {"tg_sampler_pick(NULL, ...)", "-1", "sampler_pick: the sampler is NULL", c_sampler_pick_null},
    {"tg_sampler_pick(s, i32 (2,3) logits, 0)", "-1",
     "the logits must be f32 or f64 with a last dimension of 3 ids, "
     "got i32",
     c_sampler_pick_i32},
    {"tg_sampler_pick(s, f32 (2,3) logits, row 2)", "-1", "row 2 is outside the logits' 2 rows", c_sampler_pick_row},
    {"tg_prompt_ids(NULL, ...)", "-1", "prompt_ids: the vocabulary is NULL", c_prompt_ids_null},
    {"tg_prompt_ids(bytes of \"ab\", \"abc\")", "-1",
     "the text's character 'c' (byte 99, offset 2) is not in the "
     "vocabulary",
     c_prompt_ids_byte},
    {"tg_prompt_ids(a tokenizer vocabulary without its tokenizer, ...)", "-1", "the vocabulary has no tokenizer",
     c_prompt_ids_notok},
    {"tg_generate(NULL, ...)", "-1", "generate: the model is NULL or empty", c_generate_null},
    {"tg_generate(m, NULL, 0, ...)", "-1", "generate: the prompt is empty", c_generate_noprompt},
    {"tg_text_nll(NULL, ...)", "nan", "text_nll: the model is NULL or empty", c_text_nll_null},
    {"tg_text_nll(m, one id, ...)", "nan", "at least 2 ids are needed for one prediction", c_text_nll_short},
    /* train/run.h, train/run_settings.h, train/corpus.h */
    {"tg_run_settings(NULL)", "non-NULL", NULL, c_run_settings},
    {"tg_run_setting_find(NULL)", "NULL", NULL, c_run_setting_find},
    {"tg_run_setting_parse(NULL, ...)", "-1", "run_setting_parse: NULL argument", c_run_setting_parse},
    {"tg_run_setting_parse(n-layer, \"300\", ...)", "-1", "--n-layer: 300 is outside [1, 256]",
     c_run_setting_parse_range},
    {"tg_run_setting_format(NULL, ...)", "-1", NULL, c_run_setting_format},
    {"tg_run_setting_format(lr 0.125, buf of 3)", "-1", NULL, c_run_setting_format_small},
    {"tg_run_config_init(NULL)", "returns", NULL, c_run_config_init},
    {"tg_run_config_release(NULL)", "returns", NULL, c_run_config_release},
    {"tg_run_config_set(NULL, ...)", "-1", "run_config_set: NULL argument", c_run_config_set},
    {"tg_run_config_set(c, \"\\x1b[lr\", ...)", "-1", "unknown setting '\\x1b[lr'", c_run_config_set_unknown},
    {"tg_run_config_get(NULL, ...)", "-1", NULL, c_run_config_get},
    {"tg_run_config_read(c, NULL, err)", "-1", "run_config_read: NULL file", c_run_config_read},
    {"tg_run_config_load(c, \"/nonexistent\", err)", "-1", "/nonexistent", c_run_config_load},
    {"tg_config_file_read(NULL, path, err)", "-1", "config_file_read: the file is NULL", c_config_file_read_null},
    {"tg_config_file_read(f, a missing file, err)", "-1", "no.conf: No such file or directory",
     c_config_file_read_missing},
    {"tg_config_file_release(NULL)", "returns", NULL, c_config_file_release},
    {"tg_run_new(NULL, ...)", "NULL", "run_new: NULL directory", c_run_new},
    {"tg_run_resume(a directory without a run, ...)", "NULL",
     "last.safetensors does not exist: there is no run to "
     "continue",
     c_run_resume},
    {"tg_run_free(NULL)", "returns", NULL, c_run_free},
    {"tg_run_lr(NULL)", "0", NULL, c_run_lr},
    {"tg_run_step(NULL, ...)", "-1", "run_step: NULL run", c_run_step},
    {"tg_run_eval_due(NULL)", "false", NULL, c_run_eval_due},
    {"tg_run_evaluate(NULL, ...)", "-1", "run_evaluate: NULL run", c_run_evaluate},
    {"tg_run_eval_spec(NULL, ...): a zeroed spec", "0", NULL, c_run_eval_spec},
    {"tg_checkpoint_weights(NULL)", "NULL", NULL, c_ckpt_weights},
    {"tg_checkpoint_has_averages(NULL)", "false", NULL, c_ckpt_has_averages},
    {"tg_checkpoint_load_averages(NULL, ...)", "-1", "checkpoint_load_averages: the file is NULL",
     c_ckpt_load_averages},
    {"tg_run_loss_format(NULL, ...)", "-1", NULL, c_run_loss_format},
    {"tg_run_loss_format(l, buf of 8)", "-1", NULL, c_run_loss_format_small},
    {"tg_run_save(NULL, err)", "-1", "run_save: NULL run", c_run_save},
    {"tg_run_needs_plan(NULL)", "false", NULL, c_run_needs_plan},
    {"tg_run_plan_steps(NULL, ...)", "-1", "run_plan_steps: NULL run", c_run_plan_steps},
    {"tg_run_should_stop(NULL, NULL)", "0", NULL, c_run_should_stop},
    {"tg_run_eta(NULL, p)", "-1", NULL, c_run_eta},
    {"tg_run_describe(NULL, i)", "-1", NULL, c_run_describe},
    {"tg_run_failed_alone(NULL)", "false", NULL, c_run_failed_alone},
    {"tg_run_checkpoint(NULL, ...)", "NULL", "run_checkpoint: NULL argument", c_run_checkpoint},
    {"tg_run_text_load(data \"/nonexistent.txt\", ...)", "-1", "/nonexistent.txt: No such file or directory",
     c_run_text_load},
    {"tg_run_text_release(NULL)", "returns", NULL, c_run_text_release},
    {"tg_run_tokens_load(NULL, ...)", "-1", "run_tokens_load: NULL argument", c_run_tokens_load},
    {"tg_eta_evals_left(NULL, 3)", "0", NULL, c_eta_evals_left},
    {"tg_eta_seconds(NULL, 3)", "nan", NULL, c_eta_seconds},
    {"tg_eta_format(NULL, ...)", "-1", NULL, c_eta_format},
    {"tg_corpus_init(NULL, ...)", "-1", "corpus_init: NULL corpus", c_corpus_init},
    {"tg_corpus_release(NULL)", "returns", NULL, c_corpus_release},
    {"tg_corpus_floor(NULL)", "0", NULL, c_corpus_floor},
    /* pictures/pictures.h */
    {"tg_image_init(NULL, 2, 2, ...)", "-1", "image_init: the image is NULL", c_image_init_null},
    {"tg_image_init(im, 0, 5, ...)", "-1", "a 0 x 5 image: each side must be >= 1", c_image_init_zero},
    {"tg_image_init(im, 65536, 65536, ...)", "-1", "the whole at most 2^28 pixels", c_image_init_huge},
    {"tg_image_release(NULL)", "returns", NULL, c_image_release},
    {"tg_image_get(NULL, 0, 0)", "0,0,0", NULL, c_image_get_null},
    {"tg_image_get(a white 2 x 2 image, 2, 0)", "0,0,0", NULL, c_image_get_out},
    {"tg_image_clip(NULL, ...)", "returns", NULL, c_image_clip},
    {"tg_image_fill_rect(NULL, ...)", "returns", NULL, c_image_fill_null},
    {"tg_image_fill_rect(2 x 2 clipped to [1,9), INT_MIN, INT_MIN, INT_MAX, INT_MAX)", "255,1", NULL,
     c_image_fill_clip},
    {"tg_image_line(NULL, ...)", "returns", NULL, c_image_line_null},
    {"tg_image_line(im, a NaN, a coordinate of 3e9, thick INT_MAX)", "255,255,255", NULL, c_image_line_far},
    {"tg_image_text(NULL, ...)", "returns", NULL, c_image_text_null},
    {"tg_image_text(im, x INT_MAX - 1, scale INT_MAX; a NULL text)", "255,255,255", NULL, c_image_text_far},
    {"tg_image_text_width(NULL, 1)", "0", NULL, c_image_text_width_null},
    {"tg_image_text_width(\"ab\", scale 0)", "0", NULL, c_image_text_width_scale},
    {"tg_image_text_width(\"ab\", scale INT_MAX)", "2147483647", NULL, c_image_text_width_huge},
    {"tg_image_label_char(NULL, ...)", "returns", NULL, c_image_label_char},
    {"tg_image_png(NULL, &png, &len)", "-1", "image_png: a NULL argument", c_image_png_null},
    {"tg_image_png(a zeroed image, ...)", "-1", "image_png: the image has no pixels", c_image_png_empty},
    {"tg_image_write_png(im, NULL)", "-1", "image_write_png: the path is NULL", c_image_write_png_nopath},
    {"tg_image_write_png(im, \"/nonexistent/x.png\")", "-1", "'/nonexistent/x.png': cannot create a temporary file",
     c_image_write_png_nodir},
    {"tg_heatmap_level(NAN)", "0", NULL, c_heatmap_level_nan},
    {"tg_heatmap_level(INFINITY)", "255", NULL, c_heatmap_level_inf},
    {"tg_heatmap_level_colour(-5)", "8,8,48", NULL, c_heatmap_level_colour_neg},
    {"tg_heatmap_level_colour(999)", "255,244,200", NULL, c_heatmap_level_colour_big},
    {"tg_heatmap_colour(NAN)", "8,8,48", NULL, c_heatmap_colour_nan},
    {"tg_heatmap_label_glyphs({NULL, 5})", "0", NULL, c_heatmap_label_glyphs_null},
    {"tg_heatmap_label_glyphs({\"abc\", -1})", "0", NULL, c_heatmap_label_glyphs_neg},
    {"tg_heatmap_cell_px(0, 0)", "32", NULL, c_heatmap_cell_px_zero},
    {"tg_heatmap_cell_px(INT_MAX, 1)", "8", NULL, c_heatmap_cell_px_huge},
    {"tg_heatmap_layout_of(0, 5, ...).w", "0", NULL, c_heatmap_layout_zero},
    {"tg_heatmap_layout_of(TG_HEATMAP_MAX_T + 1, 1, ...).w", "0", NULL, c_heatmap_layout_huge},
    {"tg_heatmap_png(NULL, ...)", "-1", "heatmap_png: a NULL argument", c_heatmap_png_null},
    {"tg_heatmap_png(a 0 x 2 map)", "-1", "a 0 x 2 map: each side must be in [1, 4096]", c_heatmap_png_size},
    {"tg_heatmap_png(a map without the keys' labels)", "-1", "the map's columns have no labels",
     c_heatmap_png_nolabels},
    {"tg_heatmap_png(a map without weights)", "-1", "the map has no weights", c_heatmap_png_now},
    {"tg_attn_maps_init(NULL, ...)", "-1", "attn_maps_init: the maps are NULL", c_attn_maps_init_null},
    {"tg_attn_maps_init(a, NULL, ids, 1)", "-1", "attn_maps_init: a NULL argument", c_attn_maps_init_nomodel},
    {"tg_attn_maps_init(a, block_size 4, 5 ids)", "-1", "5 positions, outside [1, the model's block_size 4]",
     c_attn_maps_init_t},
    {"tg_attn_maps_init(a, a Llama of 5 ids, id 9)", "-1", "token id 9 at flat position 1 is outside [0, 5)",
     c_attn_maps_init_id},
    {"tg_attn_maps_release(NULL)", "returns", NULL, c_attn_maps_release},
    {"tg_attn_labels(NULL, ...)", "NULL", "attn_labels: a NULL argument", c_attn_labels_null},
    {"tg_attn_labels(v, ids, 0, ...)", "NULL", "attn_labels: 0 ids: at least 1", c_attn_labels_none},
    {"tg_attn_labels(bytes of \"ab\", id 2)", "NULL", "id 2 at position 1 is outside the vocabulary's 2",
     c_attn_labels_id},
    {"tg_attn_heatmap(NULL, 0, 0, labels).w", "NULL", NULL, c_attn_heatmap_null},
    {"tg_attn_heatmap(maps of 1 layer, layer 1, ...).w", "NULL", NULL, c_attn_heatmap_layer},
    {"tg_attn_png_name(0, 0, NULL, 8)", "NULL", NULL, c_attn_png_name_null},
    {"tg_attn_png_name(1, 2, buf, 4)", "att", NULL, c_attn_png_name_short},
    {"tg_attn_page_code(NAN)", "0", NULL, c_attn_page_code_nan},
    {"tg_attn_page_code(INFINITY)", "4187920", NULL, c_attn_page_code_inf},
    {"tg_attn_page_html(NULL, ...)", "NULL", "attn_page_html: a NULL argument", c_attn_page_html_null},
    {"tg_attn_page_html(maps of 0 positions, ...)", "NULL",
     "attn_page_html: no maps: 1 layers x 1 heads over 0 "
     "positions",
     c_attn_page_html_empty},
    {"tg_attn_page_html(maps of 65536 positions, ...)", "NULL", "more than 2^31 cells", c_attn_page_html_huge},
    {"tg_attn_write(maps, labels, unit, NULL)", "-1", "attn_write: the directory is NULL", c_attn_write_nodir},
    {"tg_attn_write(NULL, labels, unit, dir)", "-1", "attn_page_html: a NULL argument", c_attn_write_nomaps},
    {"tg_lossplot_png(NULL, NULL, NULL, NULL)", "-1", "lossplot_png: png or len is NULL", c_lossplot_png_null},
    {"tg_lossplot_png(NULL, a val curve of 3 points and no arrays, ...)", "-1",
     "the val curve has 3 points and a "
     "NULL step",
     c_lossplot_png_noarrays},
    {"tg_lossplot_write(NULL, png, ...)", "-1", "lossplot_write: the metrics path is NULL", c_lossplot_write_null},
    {"tg_lossplot_write(\"/nonexistent.csv\", ...)", "-1", "/nonexistent.csv: No such file or directory",
     c_lossplot_write_nofile},
    /* formats/formats.h */
    {"tg_hf_import(NULL, out, ...)", "-1", "hf_import: the directory is NULL", c_hf_import_nodir},
    {"tg_hf_import(\"/nonexistent\", out, ...)", "-1", "hf: /nonexistent/config.json: No such file or directory",
     c_hf_import_noconfig},
    {"tg_hf_import(NULL, NULL, ..., NULL)", "-1", NULL, c_hf_import_noerr},
    {"tg_hf_export(NULL, dir, ...)", "-1", "hf_export: the checkpoint is NULL", c_hf_export_nockpt},
};
enum { N_CASES = sizeof CASES / sizeof CASES[0] };

START_TEST(bad_input)
{
    const api_case *c = &CASES[_i];
    fx f;
    fx_open(&f);
    c->run(&f);
    ck_assert_msg(strcmp(f.got, c->want) == 0, "%s: got %s, documented %s", c->call, f.got, c->want);
    if (c->msg) {
        const char *m = f.err.msg[0] ? f.err.msg : tg_graph_error(f.g) ? tg_graph_error(f.g) : "";
        ck_assert_msg(strstr(m, c->msg) != NULL, "%s: message '%s' lacks '%s'", c->call, m, c->msg);
    }
    fx_close(&f);
}
END_TEST

/* The public functions with no row, each with the reason. Prefer a row:
 * even "NULL is accepted and does nothing" is a promise worth keeping.
 * tests/check_api_rows.sh fails for a TG_API function of the public
 * headers that has neither a row above nor an entry here. */
typedef struct no_row {
    const char *name;
    const char *why;
} no_row;

static const no_row NO_ROW[] = {
    {"tg_graph_new", "takes no argument: NULL only means out of memory"},
    {"tg_st_writer_new", "takes no argument: NULL only means out of memory"},
    {"tg_alloc_calls", "takes no argument (the kv_cache rows read it to count allocations)"},
    {"tg_num_threads", "takes no argument (the tg_parallel_for rows read it)"},
    {"tg_isa_active", "takes no argument (a bad TG_ISA: tests/tiny_gpt_isa.sh)"},
    {"tg_isa_bf16", "takes no argument"},
    {"tg_isa_cpu", "takes no argument"},
    {"tg_version", "takes no argument"},
    {"tg_build_options", "takes no argument"},
    {"tg_dist_finalize", "takes no argument"},
    {"tg_dist_built_with_mpi", "takes no argument"},
    {"tg_dist_mpi_running", "takes no argument"},
    {"tg_dist_rank", "takes no argument"},
    {"tg_dist_size", "takes no argument"},
    {"tg_dist_local_size", "takes no argument"},
    {"tg_dist_local_rank", "takes no argument"},
    {"tg_dist_barrier", "takes no argument"},
    {"tg_dist_abort", "ends the process, so no row can return from it (tests/tiny_gpt_mpi.sh: a NaN on one rank)"},
    {"tg_run_abort", "ends the process, so no row can return from it (tests/tiny_gpt_mpi.sh: a NaN on one rank)"},
    {"tg_run_local_backend", "takes no argument (test_train_run runs on it)"},
    {"tg_dist_run_backend", "takes no argument (tests/tiny_gpt_mpi.sh and train_custom.sh run on it)"},
};
enum { N_NO_ROW = sizeof NO_ROW / sizeof NO_ROW[0] };

/* an entry of NO_ROW has a reason, and no row of CASES calls its function */
START_TEST(no_row_has_none)
{
    const no_row *e = &NO_ROW[_i];
    ck_assert_msg(e->why[0] != '\0', "%s: NO_ROW gives no reason", e->name);
    const size_t n = strlen(e->name);
    for (int i = 0; i < N_CASES; i++)
        ck_assert_msg(strncmp(CASES[i].call, e->name, n) != 0 || CASES[i].call[n] != '(',
                      "%s has a row (%s): take it out of NO_ROW", e->name, CASES[i].call);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("api");
    tt_tcase(s, "bad input", 0, TT_TESTS(TT_LOOP(bad_input, N_CASES), TT_LOOP(no_row_has_none, N_NO_ROW)));
    int rc = tt_run_in_tmpdir(s, "tg_api", true); /* the cases' files go to tt_dir */
    tg_tok_free(tok_ab);
    return rc;
}
