/* train/generate.h and the context shift under it (nn/kv_cache.c):
 *
 * - The shift of a 1-layer Llama's cache gives, to rounding, the keys and
 *   values a fresh forward of the kept tokens at their new positions
 *   makes, and the next token's logits that forward gives (f64 to 1e-12,
 *   f32 to 1e-5; interleaved and halves RoPE; grouped-query heads); and
 *   its greedy text past the window is the text of fresh forwards of the
 *   window the documented rule keeps.
 * - A 3-layer Llama generates past its window, shifting by the rule
 *   (n_keep, then half of the rest), keeping its BOS by default, and
 *   allocating nothing per token; a GPT recomputes its last block_size
 *   ids (nanoGPT's generate) and a family without a cache its window.
 * - The sampler follows its documented rule (greedy, temperature, top-k,
 *   top-p), and refuses bad options and logits.
 * - Prompts, the bytes of generated ids (run.c's BOS and space rules, a
 *   tokenizer's UTF-8 held across ids), and the nll of a text. */
#include "tg_test.h"

/* ---- models ------------------------------------------------------------------ */

/* Every weight normal(0, 0.5), norm weights 1 + normal(0, 0.1): logits far
 * from uniform, so a wrong key shows. */
static void fill(tg_model *m, uint64_t seed)
{
    tg_rng r;
    tg_rng_seed(&r, seed, 3);
    for (int i = 0; i < tg_params_count(m->params); i++) {
        tg_tensor *t = tg_params_at(m->params, i);
        tg_rng_fill_normal(&r, t, t->ndim == 1 ? 1 : 0, t->ndim == 1 ? 0.1 : 0.5);
    }
}

static tg_model llama(tg_dtype dt, int n_layer, bool halves, int n_kv_head, int block, int vocab)
{
    const tg_model_config c = {.arch = "llama",
                               .n_layer = n_layer,
                               .n_head = 4,
                               .n_kv_head = n_kv_head,
                               .n_embd = 32,
                               .hidden_dim = 40,
                               .block_size = block,
                               .vocab_size = vocab,
                               .rope_theta = 10000,
                               .norm_eps = 1e-5,
                               .rope_halves = halves,
                               .tied = true};
    tg_model m;
    tg_error err = {0};
    ck_assert_msg(tg_model_init(&m, &c, dt, TG_NO_INIT, &err) == 0, "%s", err.msg);
    fill(&m, 7);
    return m;
}

static tg_model gpt(int block, int vocab)
{
    const tg_model_config c = {
        .arch = "gpt", .n_layer = 2, .n_head = 2, .n_embd = 16, .block_size = block, .vocab_size = vocab};
    tg_model m;
    tg_error err = {0};
    ck_assert_msg(tg_model_init(&m, &c, TG_F64, TG_NO_INIT, &err) == 0, "%s", err.msg);
    fill(&m, 8);
    return m;
}

static tg_graph *eval_graph(void)
{
    tg_graph *g = tg_graph_new();
    ck_assert_ptr_nonnull(g);
    tg_graph_set_grad_enabled(g, false);
    tg_graph_set_training(g, false);
    return g;
}

/* The logits (1,T,V) of ids[0..T) through m (its cache if enabled). */
static tg_tensor *forward(tg_graph *g, tg_model *m, const int32_t *ids, int T)
{
    tg_tensor *l = tg_model_forward(g, m, tg_tensor_from(g, TG_I32, 2, (int[]){1, T}, ids), NULL);
    ck_assert_msg(l != NULL, "%s", tg_graph_error(g));
    return l;
}

/* The first largest logit of the last row. */
static int32_t argmax_last(const tg_tensor *l)
{
    const int V = l->shape[2];
    const int64_t o = (int64_t)(l->shape[1] - 1) * V;
    int best = 0;
    for (int j = 1; j < V; j++)
        if (tg_tensor_get(l, o + j) > tg_tensor_get(l, o + best)) best = j;
    return best;
}

/* The largest |a - b| / (1 + |b|) over n values of dtype dt. */
static double rel_diff(tg_dtype dt, const void *a, const void *b, int64_t n)
{
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        const double x = dt == TG_F32 ? ((const float *)a)[i] : ((const double *)a)[i];
        const double y = dt == TG_F32 ? ((const float *)b)[i] : ((const double *)b)[i];
        worst = fmax(worst, fabs(x - y) / (1 + fabs(y)));
    }
    return worst;
}

/* What tg_generate's callback saw. */
typedef struct seen {
    tg_model *m;
    int32_t ids[512];
    int lens[512]; /* the cache length when each id came */
    int n;
    char bytes[1024];
    size_t nb;
    int stop_after; /* > 0: return false at that many ids */
    bool ended;
    int flushes; /* calls with id -1 */
} seen;

static bool record(void *ctx, const tg_generated *t)
{
    seen *s = ctx;
    ck_assert_uint_le(s->nb + t->len, sizeof s->bytes);
    memcpy(s->bytes + s->nb, t->bytes, t->len);
    s->nb += t->len;
    if (t->id < 0) {
        s->flushes++;
        return true;
    }
    ck_assert_int_lt(s->n, 512);
    s->lens[s->n] = s->m ? tg_model_cache_len(s->m) : 0;
    s->ids[s->n++] = t->id;
    s->ended = t->ends;
    return !(s->stop_after && s->n == s->stop_after);
}

static int64_t generate(tg_model *m, const int32_t *prompt, int n, int64_t tokens, tg_generate_options o, seen *s)
{
    tg_error e = {0};
    o.on_token = record;
    o.ctx = s;
    s->m = m;
    const int64_t made = tg_generate(m, prompt, n, tokens, &o, &e);
    ck_assert_msg(made >= 0, "%s", e.msg);
    ck_assert_int_eq(made, s->n);
    return made;
}

/* ---- (a) the shift against a fresh forward ---------------------------------- */

START_TEST(shift_equals_fresh_forward)
{
    const tg_dtype dt = _i & 1 ? TG_F32 : TG_F64;
    const bool halves = _i & 2;
    const int kv = _i & 4 ? 2 : 4; /* grouped-query heads, or as many as the queries */
    const double tol = dt == TG_F64 ? 1e-12 : 1e-5;
    const int bs = 16, keep = 1, d = (bs - keep) / 2, V = 23, kept_n = bs - d;
    tg_model a = llama(dt, 1, halves, kv, bs, V), b = llama(dt, 1, halves, kv, bs, V);
    tg_error err = {0};
    ck_assert_msg(!tg_model_cache_enable(&a, 1, &err) && !tg_model_cache_enable(&b, 1, &err), "%s", err.msg);
    int32_t ids[17], kept[16];
    tg_rng r;
    tg_rng_seed(&r, 11, 0);
    for (int i = 0; i < 17; i++) ids[i] = (int32_t)tg_rng_below(&r, V);
    tg_graph *g = eval_graph();
    forward(g, &a, ids, bs);
    tg_graph_reset(g);
    const tg_kv_cache *ca = &((tg_llama *)a.impl)->cache[0], *cb = &((tg_llama *)b.impl)->cache[0];
    const int C = ca->n_head * ca->head_dim;
    const size_t es = tg_dtype_size(dt);
    char *moved = malloc((size_t)(bs - keep - d) * C * es); /* the kept keys as they were */
    memcpy(moved, (char *)ca->k + (size_t)(keep + d) * C * es, (size_t)(bs - keep - d) * C * es);

    tg_error e = {0};
    ck_assert_msg(tg_model_cache_shift(&a, keep, d, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(tg_model_cache_len(&a), kept_n);
    /* the kept tokens, fresh, at their new positions */
    kept[0] = ids[0];
    memcpy(kept + keep, ids + keep + d, (size_t)(bs - keep - d) * sizeof *ids);
    forward(g, &b, kept, kept_n);
    tg_graph_reset(g);
    const double dk = rel_diff(dt, ca->k, cb->k, (int64_t)kept_n * C),
                 dv = rel_diff(dt, ca->v, cb->v, (int64_t)kept_n * C);
    ck_assert_msg(dk <= tol && dv <= tol, "keys off by %.3g, values by %.3g (tolerance %g)", dk, dv, tol);
    /* the re-rotation is what makes them equal: moved only, they are far */
    const double raw = rel_diff(dt, moved, (char *)cb->k + (size_t)keep * C * es, (int64_t)(bs - keep - d) * C);
    ck_assert_msg(raw > 0.05, "keys moved without their rotation are only %.3g off", raw);
    /* the next token's logits */
    tg_tensor *la = forward(g, &a, ids + 16, 1), *lb = forward(g, &b, ids + 16, 1);
    const double dl = rel_diff(dt, la->data, lb->data, V);
    ck_assert_msg(dl <= tol, "next logits off by %.3g", dl);
    tg_graph_free(g);
    free(moved);
    tg_model_release(&a);
    tg_model_release(&b);
}
END_TEST

/* Greedy decoding of a 1-layer Llama past its window, against fresh
 * forwards (no cache) of the window the rule keeps: n_keep ids, then the
 * newest, d = (block_size - n_keep) / 2 dropped after n_keep each time the
 * window is full. */
START_TEST(shifted_generation_equals_fresh_windows)
{
    const int bs = 12, keep = 2, N = 40, V = 23;
    tg_model m = llama(TG_F64, 1, _i, 2, bs, V), ref = llama(TG_F64, 1, _i, 2, bs, V);
    const int32_t prompt[3] = {4, 9, 1};
    seen s = {0};
    ck_assert_int_eq(generate(&m, prompt, 3, N, (tg_generate_options){.n_keep = keep}, &s), N);
    int32_t win[64];
    int w = 3;
    memcpy(win, prompt, sizeof prompt);
    tg_graph *g = eval_graph();
    for (int k = 0; k < N; k++) {
        if (w > bs) {
            const int d = (bs - keep) / 2;
            memmove(win + keep, win + keep + d, (size_t)(w - keep - d) * sizeof *win);
            w -= d;
        }
        const int32_t next = argmax_last(forward(g, &ref, win, w));
        tg_graph_reset(g);
        ck_assert_msg(next == s.ids[k], "id %d: %d, fresh forwards give %d", k, s.ids[k], next);
        win[w++] = next;
    }
    tg_graph_free(g);
    tg_model_release(&m);
    tg_model_release(&ref);
}
END_TEST

/* ---- (b) generating past the window ----------------------------------------- */

/* The cache lengths s saw: P, P + 1, ..., bs, then bs - d + 1, ..., bs
 * again, d = (bs - keep) / 2 per shift; the number of shifts. */
static int check_shifts(const seen *s, int P, int bs, int keep)
{
    const int d = (bs - keep) / 2 > 1 ? (bs - keep) / 2 : 1;
    int shifts = 0;
    ck_assert_int_eq(s->lens[0], P);
    for (int k = 1; k < s->n; k++) {
        const bool step = s->lens[k] == s->lens[k - 1] + 1, shift = s->lens[k - 1] == bs && s->lens[k] == bs - d + 1;
        ck_assert_msg(step || shift, "cache length %d after %d (block %d, n_keep %d)", s->lens[k], s->lens[k - 1], bs,
                      keep);
        shifts += shift;
    }
    return shifts;
}

START_TEST(llama_generates_past_its_window)
{
    const int bs = 16, N = 60;
    tg_model m = llama(TG_F32, 3, false, 2, bs, 41);
    tg_sampler *smp = tg_sampler_new(&(tg_sampler_options){.temperature = 0.9, .top_k = 20, .seed = 3}, 41, NULL);
    ck_assert_ptr_nonnull(smp);
    const int32_t prompt[3] = {7, 8, 9};
    for (int keep = 0; keep < 4; keep += 3) {
        seen s = {0};
        ck_assert_int_eq(generate(&m, prompt, 3, N, (tg_generate_options){.sampler = smp, .n_keep = keep}, &s), N);
        /* 14 ids reach the full cache (3 .. 16), then a shift every d ids */
        const int d = (bs - keep) / 2, want = (N - (bs - 3 + 1) + d - 1) / d;
        ck_assert_int_eq(check_shifts(&s, 3, bs, keep), want);
    }
    /* decoding past the window allocates nothing per token (shifts included) */
    uint64_t calls[2];
    for (int c = 0; c < 2; c++) {
        seen s = {0};
        const uint64_t a0 = tg_alloc_calls();
        tg_generate(&m, prompt, 3, c ? 120 : 30, &(tg_generate_options){.sampler = smp, .on_token = record, .ctx = &s},
                    NULL);
        calls[c] = tg_alloc_calls() - a0;
    }
    ck_assert_msg(calls[0] == calls[1], "%llu allocations for 30 ids, %llu for 120", (unsigned long long)calls[0],
                  (unsigned long long)calls[1]);
    tg_sampler_free(smp);
    tg_model_release(&m);
}
END_TEST

/* n_keep 0 keeps the vocabulary's BOS when the prompt starts with it. */
START_TEST(the_bos_is_kept_by_default)
{
    const int bs = 16, N = 40;
    tg_model m = llama(TG_F64, 3, false, 2, bs, TG_VOCAB_LLAMA2C_SIZE);
    tg_vocab v;
    tg_vocab_llama2c(&v);
    /* BOS's embedding (the tied head's row) 0: its logit 0, below the
     * largest of the others, so no text ends */
    tg_tensor *emb = tg_params_at(m.params, 0);
    memset((double *)emb->data + TG_VOCAB_BOS * 32, 0, 32 * sizeof(double));
    const int32_t prompts[2][3] = {{TG_VOCAB_BOS, 3 + ' ', 3 + 'a'}, {3 + 'a', 3 + 'b', 3 + 'c'}};
    for (int c = 0; c < 2; c++) {
        seen s = {0};
        ck_assert_int_eq(generate(&m, prompts[c], 3, N, (tg_generate_options){.vocab = &v}, &s), N);
        ck_assert(!s.ended);
        const int keep = c ? 0 : 1, d = (bs - keep) / 2;
        ck_assert_int_eq(check_shifts(&s, 3, bs, keep), (N - (bs - 3 + 1) + d - 1) / d);
    }
    tg_model_release(&m);
}
END_TEST

/* A GPT's positions are learned: past the window it reads its last
 * block_size ids from position 0 for every id, as nanoGPT's generate. */
START_TEST(gpt_recomputes_its_window)
{
    const int bs = 8, N = 30, V = 13;
    tg_model m = gpt(bs, V), ref = gpt(bs, V);
    const int32_t prompt[2] = {3, 5};
    seen s = {0};
    ck_assert_int_eq(generate(&m, prompt, 2, N, (tg_generate_options){0}, &s), N);
    int32_t ctx[64] = {3, 5};
    int n = 2;
    tg_graph *g = eval_graph();
    for (int k = 0; k < N; k++) {
        const int T = n < bs ? n : bs;
        const int32_t next = argmax_last(forward(g, &ref, ctx + n - T, T));
        tg_graph_reset(g);
        ck_assert_msg(next == s.ids[k], "id %d: %d, the uncached window gives %d", k, s.ids[k], next);
        ck_assert_int_eq(s.lens[k], T); /* the cache holds the window just run */
        ctx[n++] = next;
    }
    tg_error e = {0};
    ck_assert_int_eq(tg_model_cache_shift(&m, 0, 1, &e), -1);
    ck_assert_msg(strstr(e.msg, "family 'gpt' cannot shift its KV cache"), "%s", e.msg);
    tg_graph_free(g);
    tg_model_release(&m);
    tg_model_release(&ref);
}
END_TEST

/* ---- a family of one's own: logits = table[id], no KV cache ------------------- */

typedef struct chain {
    tg_params *p;
    tg_tensor *w; /* (V, V) */
} chain;

static int chain_widest; /* the longest input a forward saw */

static void *chain_create(const tg_model_config *c, tg_dtype dt, uint64_t seed, tg_error *err)
{
    (void)seed;
    chain *m = calloc(1, sizeof *m);
    if (!m || !(m->p = tg_params_new(dt, err)) ||
        !(m->w = tg_params_add(m->p, "table.weight", 2, (int[]){c->vocab_size, c->vocab_size}, NULL)))
        abort();
    return m;
}
static void chain_destroy(void *impl)
{
    tg_params_free(((chain *)impl)->p);
    free(impl);
}
static tg_params *chain_params(void *impl) { return ((chain *)impl)->p; }
static int64_t chain_num_params(const tg_model_config *c) { return (int64_t)c->vocab_size * c->vocab_size; }
static tg_tensor *chain_forward(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor **w)
{
    (void)w;
    if (idx && idx->shape[1] > chain_widest) chain_widest = idx->shape[1];
    return tg_embedding(g, ((chain *)impl)->w, idx);
}
static tg_tensor *chain_loss(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor *targets)
{
    return tg_cross_entropy(g, chain_forward(g, impl, idx, NULL), targets);
}
static const tg_model_family CHAIN = {.arch = "chain",
                                      .embedding = "table.weight",
                                      .create = chain_create,
                                      .destroy = chain_destroy,
                                      .params = chain_params,
                                      .num_params = chain_num_params,
                                      .forward = chain_forward,
                                      .loss = chain_loss};

/* A chain model of V ids and block bs in which id next[i] follows id i
 * (greedy), for the n pairs given. */
static tg_model chain_model(int V, int bs, const int32_t (*pairs)[2], int n)
{
    static bool registered;
    tg_error err = {0};
    if (!registered) ck_assert_msg(tg_model_register(&CHAIN, &err) == 0, "%s", err.msg);
    registered = true;
    tg_model m;
    const tg_model_config c = {.arch = "chain", .n_layer = 1, .n_embd = V, .block_size = bs, .vocab_size = V};
    ck_assert_msg(tg_model_init(&m, &c, TG_F64, 0, &err) == 0, "%s", err.msg);
    tg_tensor *w = tg_params_at(m.params, 0);
    memset(w->data, 0, (size_t)V * V * sizeof(double));
    for (int i = 0; i < n; i++) ((double *)w->data)[(int64_t)pairs[i][0] * V + pairs[i][1]] = 10;
    return m;
}

START_TEST(a_family_without_a_cache)
{
    const int V = 7, bs = 4;
    const int32_t pairs[7][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 0}};
    tg_model m = chain_model(V, bs, pairs, 7);
    seen s = {0};
    chain_widest = 0;
    ck_assert_int_eq(generate(&m, (int32_t[]){5}, 1, 12, (tg_generate_options){0}, &s), 12);
    for (int k = 0; k < 12; k++) ck_assert_int_eq(s.ids[k], (6 + k) % V);
    ck_assert_int_eq(chain_widest, bs); /* the whole window each time, never more */
    ck_assert_uint_eq(s.nb, 0); /* no vocabulary: no bytes */
    tg_model_release(&m);
}
END_TEST

/* ---- the bytes of generated ids --------------------------------------------- */

START_TEST(llama2c_bytes_and_ends)
{
    const int V = TG_VOCAB_LLAMA2C_SIZE;
    const int32_t sp = 3 + ' ', h = 3 + 'h', i = 3 + 'i', bang = 3 + '!', x = 3 + 'x';
    const int32_t pairs[6][2] = {{TG_VOCAB_BOS, sp}, {sp, h}, {h, i}, {i, bang}, {bang, TG_VOCAB_BOS}, {x, sp}};
    tg_model m = chain_model(V, 64, pairs, 6);
    tg_vocab v;
    tg_vocab_llama2c(&v);
    const int32_t bos = TG_VOCAB_BOS;
    seen s = {0};
    /* " " right after BOS is not shown; BOS ends the text, counted */
    ck_assert_int_eq(generate(&m, &bos, 1, 100, (tg_generate_options){.vocab = &v}, &s), 5);
    ck_assert(s.ended && s.ids[4] == TG_VOCAB_BOS);
    ck_assert_uint_eq(s.nb, 3);
    ck_assert(memcmp(s.bytes, "hi!", 3) == 0);
    /* after another id, the space shows */
    seen s2 = {0};
    ck_assert_int_eq(generate(&m, &x, 1, 3, (tg_generate_options){.vocab = &v}, &s2), 3);
    ck_assert(!s2.ended && s2.nb == 3 && memcmp(s2.bytes, " hi", 3) == 0);
    /* the callback stops it */
    seen s3 = {.stop_after = 2};
    ck_assert_int_eq(generate(&m, &bos, 1, 100, (tg_generate_options){.vocab = &v}, &s3), 2);
    ck_assert(s3.nb == 1 && s3.bytes[0] == 'h');
    /* ids as numbers */
    tg_vocab ids;
    tg_vocab_ids(&ids, V);
    seen s4 = {0};
    ck_assert_int_eq(generate(&m, &bos, 1, 2, (tg_generate_options){.vocab = &ids}, &s4), 2);
    ck_assert_uint_eq(s4.nb, 7);
    ck_assert(memcmp(s4.bytes, " 35 107", 7) == 0);
    tg_model_release(&m);
}
END_TEST

/* A character of two bytes made by two ids comes whole with the second;
 * one left incomplete comes in the last call, id -1. */
START_TEST(tokenizer_bytes_held_across_ids)
{
    tg_vocab v;
    tg_error err = {0};
    tg_tokenizer *tok = tg_bpe_train("ab ab ab ab", 11, &(tg_bpe_options){.vocab_size = 260}, &err);
    ck_assert_msg(tok && !tg_vocab_tokenizer(&v, tok, false, 0, &err), "%s", err.msg);
    const int32_t a = 3 + 'a', b = 3 + 'b', c3 = 3 + 0xc3, a9 = 3 + 0xa9, eos = tg_tok_eos(v.tok);
    const int32_t pairs[5][2] = {{a, c3}, {c3, a9}, {a9, b}, {b, eos}, {eos, a}};
    tg_model m = chain_model(v.size, 64, pairs, 5);
    seen s = {0};
    ck_assert_int_eq(generate(&m, &a, 1, 100, (tg_generate_options){.vocab = &v}, &s), 4);
    ck_assert(s.ended && s.ids[3] == eos && s.flushes == 0);
    ck_assert_uint_eq(s.nb, 3);
    ck_assert(memcmp(s.bytes,
                     "\xc3\xa9"
                     "b",
                     3) == 0);
    seen s2 = {0};
    ck_assert_int_eq(generate(&m, &a, 1, 1, (tg_generate_options){.vocab = &v}, &s2), 1);
    ck_assert(s2.flushes == 1 && s2.nb == 1 && (unsigned char)s2.bytes[0] == 0xc3);
    tg_model_release(&m);
    tg_vocab_release(&v);
}
END_TEST

/* ---- the sampler --------------------------------------------------------------- */

/* The documented rule, written out with a sort: the id for row l (V). */
static int32_t ref_pick(const double *l, int V, double t, int k, double top_p, tg_rng *r)
{
    int best = 0;
    for (int j = 1; j < V; j++)
        if (l[j] > l[best]) best = j;
    if (t == 0) return best;
    double sorted[256], p[256];
    memcpy(sorted, l, (size_t)V * sizeof *l);
    for (int x = 0; x < V; x++) /* descending, by insertion */
        for (int y = x; y > 0 && sorted[y] > sorted[y - 1]; y--) {
            const double tmp = sorted[y];
            sorted[y] = sorted[y - 1], sorted[y - 1] = tmp;
        }
    const double cut = k > 0 && k < V ? sorted[k - 1] : -INFINITY;
    double sum = 0;
    for (int j = 0; j < V; j++) sum += p[j] = l[j] < cut ? 0 : exp(l[j] / t - l[best] / t);
    if (top_p > 0 && top_p < 1) {
        int order[256];
        for (int j = 0; j < V; j++) order[j] = j;
        for (int x = 0; x < V; x++) /* by p descending, then id */
            for (int y = x; y > 0 && p[order[y]] > p[order[y - 1]]; y--) {
                const int tmp = order[y];
                order[y] = order[y - 1], order[y - 1] = tmp;
            }
        double cum = 0;
        int m = V;
        for (int x = 0; x < V; x++)
            if ((cum += p[order[x]]) >= top_p * sum) {
                m = x + 1;
                break;
            }
        for (int x = m; x < V; x++) p[order[x]] = 0;
        sum = 0;
        for (int j = 0; j < V; j++) sum += p[j];
    }
    double u = tg_rng_uniform(r) * sum;
    for (int j = 0; j < V; j++) {
        if (u < p[j]) return j;
        u -= p[j];
    }
    return best;
}

START_TEST(sampler_follows_its_rule)
{
    const int V = 37;
    const struct {
        double t;
        int k;
        double p;
    } opts[] = {{0, 5, 0.5}, {0.7, 0, 0}, {1.3, 5, 0},  {0.5, 1, 0},    {1, 37, 0},
                {1, 50, 0},  {1, 0, 0.9}, {2, 10, 0.6}, {0.8, 0, 0.05}, {1, 0, 1}};
    for (int o = 0; o < (int)(sizeof opts / sizeof opts[0]); o++)
        for (int dtv = 0; dtv < 2; dtv++) {
            const tg_dtype dt = dtv ? TG_F32 : TG_F64;
            tg_sampler *s = tg_sampler_new(&(tg_sampler_options){opts[o].t, opts[o].k, opts[o].p, 42}, V, NULL);
            ck_assert_ptr_nonnull(s);
            tg_rng ref;
            tg_rng_seed(&ref, 42, 5);
            tg_graph *g = tg_graph_new();
            tg_tensor *l = tg_tensor_new(g, dt, 3, (int[]){1, 50, V});
            tg_rng r;
            tg_rng_seed(&r, (uint64_t)o, 1);
            tg_rng_fill_normal(&r, l, 0, 2);
            for (int row = 0; row < 50; row++) {
                double x[64];
                for (int j = 0; j < V; j++) x[j] = tg_tensor_get(l, (int64_t)row * V + j);
                if (row == 7)
                    x[3] = x[9] = x[11] = 40, tg_tensor_set(l, row * V + 3, 40), tg_tensor_set(l, row * V + 9, 40),
                    tg_tensor_set(l, row * V + 11, 40); /* ties */
                const int32_t got = tg_sampler_pick(s, l, row, NULL),
                              want = ref_pick(x, V, opts[o].t, opts[o].k, opts[o].p, &ref);
                ck_assert_msg(got == want, "options %d (%s), row %d: %d, the rule gives %d", o, tg_dtype_name(dt), row,
                              got, want);
            }
            tg_graph_free(g);
            tg_sampler_free(s);
        }
}
END_TEST

/* Known probabilities: top-p keeps the shortest likeliest prefix reaching
 * p (a tie: the lower id), renormalised. */
START_TEST(top_p_keeps_the_nucleus)
{
    const double probs[6] = {0.05, 0.5, 0.15, 0.3, 0.0, 0.0}; /* ids 4, 5: equal and tiny */
    const struct {
        double p;
        double want[6];
    } cases[] = {
        {0.45, {0, 1, 0, 0, 0, 0}},
        {0.75, {0, 0.625, 0, 0.375, 0, 0}},
        {0.9, {0, 0.5 / 0.95, 0.15 / 0.95, 0.3 / 0.95, 0, 0}},
    };
    double logit[6];
    for (int j = 0; j < 6; j++) logit[j] = probs[j] ? log(probs[j]) : log(1e-9);
    tg_graph *g = tg_graph_new();
    tg_tensor *l = tt_from_doubles(g, TG_F64, 2, (int[]){1, 6}, logit);
    for (int c = 0; c < 3; c++) {
        const tg_sampler_options o = {.temperature = 1, .top_p = cases[c].p, .seed = 9};
        tg_sampler *s = tg_sampler_new(&o, 6, NULL);
        int count[6] = {0};
        const int n = 20000;
        for (int k = 0; k < n; k++) count[tg_sampler_pick(s, l, 0, NULL)]++;
        for (int j = 0; j < 6; j++) {
            const double f = (double)count[j] / n, sd = sqrt(cases[c].want[j] * (1 - cases[c].want[j]) / n);
            ck_assert_msg(cases[c].want[j] ? fabs(f - cases[c].want[j]) < 5 * sd + 1e-9 : count[j] == 0,
                          "top_p %g: id %d drawn %.4f of the time, the nucleus gives %.4f", cases[c].p, j, f,
                          cases[c].want[j]);
        }
        tg_sampler_free(s);
    }
    /* equal probabilities: the lower ids first */
    const double flat[4] = {0, 0, 0, 0};
    tg_tensor *f = tt_from_doubles(g, TG_F32, 2, (int[]){1, 4}, flat);
    tg_sampler *s = tg_sampler_new(&(tg_sampler_options){.temperature = 1, .top_p = 0.3, .seed = 1}, 4, NULL);
    for (int k = 0; k < 500; k++) ck_assert_int_le(tg_sampler_pick(s, f, 0, NULL), 1);
    tg_sampler_free(s);
    tg_graph_free(g);
}
END_TEST

START_TEST(sampler_refuses)
{
    tg_error e = {0};
    ck_assert_ptr_null(tg_sampler_new(&(tg_sampler_options){.temperature = -1}, 5, &e));
    ck_assert_msg(strstr(e.msg, "got temperature -1, top_k 0, top_p 0"), "%s", e.msg);
    ck_assert_ptr_null(tg_sampler_new(&(tg_sampler_options){.top_p = 1.5}, 5, NULL));
    ck_assert_ptr_null(tg_sampler_new(&(tg_sampler_options){.top_p = NAN}, 5, NULL));
    ck_assert_ptr_null(tg_sampler_new(&(tg_sampler_options){.temperature = INFINITY}, 5, NULL));
    ck_assert_ptr_null(tg_sampler_new(NULL, 0, NULL));
    tg_sampler *s = tg_sampler_new(&(tg_sampler_options){.temperature = 1}, 3, NULL);
    tg_graph *g = tg_graph_new();
    tg_tensor *l = tt_from_doubles(g, TG_F32, 2, (int[]){2, 3}, (double[]){1, NAN, 0, -INFINITY, -INFINITY, -INFINITY});
    ck_assert_int_eq(tg_sampler_pick(s, l, 0, &e), -1);
    ck_assert_msg(strstr(e.msg, "logit 1 of row 0 is nan"), "%s", e.msg);
    ck_assert_int_eq(tg_sampler_pick(s, l, 1, &e), -1);
    ck_assert_msg(strstr(e.msg, "every logit of row 1 is -inf"), "%s", e.msg);
    ck_assert_int_eq(tg_sampler_pick(s, l, 2, &e), -1);
    ck_assert_msg(strstr(e.msg, "row 2 is outside the logits' 2 rows"), "%s", e.msg);
    tg_tensor *wide = tt_from_doubles(g, TG_F64, 2, (int[]){1, 4}, (double[]){1, 2, 3, 4});
    ck_assert_int_eq(tg_sampler_pick(s, wide, 0, &e), -1);
    ck_assert_msg(strstr(e.msg, "last dimension of 3 ids, got f64 with 4"), "%s", e.msg);
    tg_graph_free(g);
    tg_sampler_free(s);
}
END_TEST

/* ---- prompts and scoring --------------------------------------------------------- */

START_TEST(prompt_ids_per_vocabulary)
{
    tg_vocab v;
    int32_t *ids;
    tg_error e = {0};
    tg_vocab_llama2c(&v);
    ck_assert_int_eq(tg_prompt_ids(&v, 259, "hi", 2, &ids, &e), 4);
    ck_assert(ids[0] == TG_VOCAB_BOS && ids[1] == 3 + ' ' && ids[2] == 3 + 'h' && ids[3] == 3 + 'i');
    tg_free(ids);
    ck_assert_int_eq(tg_prompt_ids(&v, 259, "", 0, &ids, &e), 1); /* BOS alone */
    ck_assert_int_eq(ids[0], TG_VOCAB_BOS);
    tg_free(ids);
    tg_vocab_bytes(&v, "abc", 3);
    ck_assert_int_eq(tg_prompt_ids(&v, 3, "cab", 3, &ids, &e), 3);
    ck_assert(ids[0] == 2 && ids[1] == 0 && ids[2] == 1);
    tg_free(ids);
    ck_assert_int_eq(tg_prompt_ids(&v, 3, "abQ", 3, &ids, &e), -1);
    ck_assert_ptr_null(ids);
    ck_assert_msg(strstr(e.msg, "the text's character 'Q' (byte 81, offset 2) is not in the vocabulary"), "%s", e.msg);
    tg_vocab_ids(&v, 10);
    ck_assert_int_eq(tg_prompt_ids(&v, 10, " 3 4\n9\t0 ", 9, &ids, &e), 4);
    ck_assert(ids[0] == 3 && ids[1] == 4 && ids[2] == 9 && ids[3] == 0);
    tg_free(ids);
    ck_assert_int_eq(tg_prompt_ids(&v, 10, "3 10", 4, &ids, &e), -1);
    ck_assert_msg(strstr(e.msg, "the prompt is ids below 10 separated by spaces, and \"10\" is not one"), "%s", e.msg);
    ck_assert_int_eq(tg_prompt_ids(&v, 10, "3x", 2, &ids, &e), -1);
    ck_assert_int_eq(tg_prompt_ids(&v, 10, NULL, 0, &ids, &e), 0); /* nothing: no ids, an array all the same */
    ck_assert_ptr_nonnull(ids);
    tg_free(ids);
    /* a Llama's tokenizer: BOS, then " " + the text encoded together */
    tg_error err = {0};
    tg_tokenizer *tok = tg_bpe_train("ab ab ab ab", 11, &(tg_bpe_options){.vocab_size = 260}, &err);
    ck_assert_msg(tok && !tg_vocab_tokenizer(&v, tok, true, 0, &err), "%s", err.msg);
    int32_t *want;
    const int64_t nw = tg_tok_encode(v.tok, " ab", 3, &want, &err);
    ck_assert_int_eq(tg_prompt_ids(&v, v.size, "ab", 2, &ids, &e), 1 + nw);
    ck_assert_int_eq(ids[0], tg_tok_bos(v.tok));
    ck_assert(memcmp(ids + 1, want, (size_t)nw * sizeof *ids) == 0);
    tg_free(ids);
    tg_free(want);
    tg_vocab_release(&v);
}
END_TEST

START_TEST(text_nll_in_windows)
{
    const int bs = 16, V = 23, n = 40;
    tg_model m = llama(TG_F64, 2, false, 2, bs, V);
    int32_t ids[40];
    tg_rng r;
    tg_rng_seed(&r, 5, 0);
    for (int i = 0; i < n; i++) ids[i] = (int32_t)tg_rng_below(&r, V);
    tg_graph *g = eval_graph();
    double loss[3];
    for (int k = 0; k < 3; k++) { /* windows of 16, 16 and 7 predictions */
        const int N = k < 2 ? bs : n - 1 - 2 * bs;
        tg_tensor *x = tg_tensor_from(g, TG_I32, 2, (int[]){1, N}, ids + k * bs);
        tg_tensor *y = tg_tensor_from(g, TG_I32, 2, (int[]){1, N}, ids + k * bs + 1);
        loss[k] = tg_tensor_item(tg_model_loss(g, &m, x, y));
        tg_graph_reset(g);
    }
    tg_graph_free(g);
    tg_error e = {0};
    int64_t preds;
    ck_assert_double_eq(tg_text_nll(&m, ids, n, 0, &preds, &e), (loss[0] * 16 + loss[1] * 16 + loss[2] * 7) / 39);
    ck_assert_int_eq(preds, 39);
    ck_assert_double_eq(tg_text_nll(&m, ids, n, 2, &preds, &e), (loss[0] * 16 + loss[1] * 16) / 32);
    ck_assert_int_eq(preds, 32);
    ck_assert_double_eq(tg_text_nll(&m, ids, 17, 0, &preds, &e), loss[0]); /* one window: its loss */
    ck_assert_int_eq(preds, 16);
    /* with the caches on: emptied before each window, the same to rounding */
    tg_error err = {0};
    ck_assert(tg_model_cache_enable(&m, 1, &err) == 0);
    ck_assert_double_eq_tol(tg_text_nll(&m, ids, n, 0, NULL, &e), (loss[0] * 16 + loss[1] * 16 + loss[2] * 7) / 39,
                            1e-12);
    ck_assert(isnan(tg_text_nll(&m, ids, 1, 0, &preds, &e)) && preds == 0);
    ck_assert_msg(strstr(e.msg, "at least 2 ids are needed for one prediction"), "%s", e.msg);
    ids[3] = V;
    ck_assert(isnan(tg_text_nll(&m, ids, n, 0, NULL, &e)));
    ck_assert_msg(strstr(e.msg, "23"), "%s", e.msg);
    tg_model_release(&m);
}
END_TEST

START_TEST(generate_refuses)
{
    tg_model m = llama(TG_F32, 1, false, 4, 8, 11);
    tg_error e = {0};
    const int32_t p[2] = {1, 2}, bad[2] = {1, 11};
    ck_assert_int_eq(tg_generate(&m, p, 0, 5, NULL, &e), -1);
    ck_assert_msg(strstr(e.msg, "the prompt is empty"), "%s", e.msg);
    ck_assert_int_eq(tg_generate(&m, bad, 2, 5, NULL, &e), -1);
    ck_assert_msg(strstr(e.msg, "the prompt's id 11 (at 1) is outside the model's [0, 11)"), "%s", e.msg);
    ck_assert_int_eq(tg_generate(&m, p, 2, 5, &(tg_generate_options){.n_keep = 8}, &e), -1);
    ck_assert_msg(strstr(e.msg, "n_keep must be in [0, block_size 8), got 8"), "%s", e.msg);
    ck_assert_int_eq(tg_generate(&m, p, 2, -1, NULL, &e), -1);
    const tg_vocab notok = {.kind = TG_VOCAB_TOKENIZER, .size = 11};
    ck_assert_int_eq(tg_generate(&m, p, 2, 5, &(tg_generate_options){.vocab = &notok}, &e), -1);
    ck_assert_msg(strstr(e.msg, "generate: the vocabulary has no tokenizer"), "%s", e.msg);
    ck_assert_int_eq(tg_generate(&m, p, 2, 0, NULL, &e), 0);
    tg_sampler *s = tg_sampler_new(NULL, 12, NULL); /* another vocabulary's */
    ck_assert_int_eq(tg_generate(&m, p, 2, 5, &(tg_generate_options){.sampler = s}, &e), -1);
    ck_assert_msg(strstr(e.msg, "last dimension of 12 ids, got f32 with 11"), "%s", e.msg);
    tg_sampler_free(s);
    /* a prompt longer than the window: its first n_keep ids and its last */
    int32_t longp[20];
    for (int i = 0; i < 20; i++) longp[i] = i % 11;
    seen a = {0}, b = {0};
    generate(&m, longp, 20, 3, (tg_generate_options){.n_keep = 2}, &a);
    const int32_t cut[8] = {0, 1, 3, 4, 5, 6, 7, 8}; /* 0 1, then 14..19 */
    for (int i = 0; i < 6; i++) ck_assert_int_eq(cut[2 + i], longp[14 + i] % 11);
    generate(&m, cut, 8, 3, (tg_generate_options){.n_keep = 2}, &b);
    ck_assert(memcmp(a.ids, b.ids, 3 * sizeof *a.ids) == 0);
    tg_model_release(&m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("generate");
    tt_tcase(s, "shift", 120,
             TT_TESTS(TT_LOOP(shift_equals_fresh_forward, 8), TT_LOOP(shifted_generation_equals_fresh_windows, 2),
                      llama_generates_past_its_window, the_bos_is_kept_by_default, gpt_recomputes_its_window,
                      a_family_without_a_cache));
    tt_tcase(s, "bytes", 60, TT_TESTS(llama2c_bytes_and_ends, tokenizer_bytes_held_across_ids));
    tt_tcase(s, "sampler", 60, TT_TESTS(sampler_follows_its_rule, top_p_keeps_the_nucleus, sampler_refuses));
    tt_tcase(s, "prompts and scoring", 60, TT_TESTS(prompt_ids_per_vocabulary, text_nll_in_windows, generate_refuses));
    return tt_run(s);
}
