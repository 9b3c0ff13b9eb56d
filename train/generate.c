/* Prompts, generation and scoring (train/generate.h).
 *
 * Generation keeps the context the model sees in a window of at most
 * block_size ids, win[0..wlen), of which the first `fed` are in the KV
 * cache at positions 0..fed-1. Each step runs win[fed..wlen) (the whole
 * prompt at first, then the one id made last) and picks from the last
 * row of the logits. When an id no longer fits (wlen = block_size + 1):
 *
 *   shift (a family with cache_shift: RoPE)
 *     win  [ keep | d dropped | rest      | new ]
 *          [ keep | rest      | new ]            cache: keep + rest, new to run
 *     d = (fed - n_keep) / 2, llama.cpp's n_discard (its completion tool's
 *     and server's: half of what is past n_keep), at least 1;
 *   recompute (learned positions, or no cache)
 *     win  [ keep | ...... | last block_size - n_keep ]   run from position 0
 *
 * The ids' bytes follow llama2.c's run.c for its vocabulary (BOS ends a
 * text; the dummy " " after BOS is not shown) and the tokenizer's
 * streaming decoder for a tokenizer's ids. */
#include "generate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"

/* ---- prompts ------------------------------------------------------------- */

/* TG_VOCAB_IDS: the text's numbers, each below V, into ids (room for
 * len / 2 + 1); their count, or -1 with a message. */
static int64_t parse_ids(const char *text, size_t len, int V, int32_t *ids, tg_error *err)
{
    char *copy = tg_malloc(len + 1); /* NUL-terminated, for strtol */
    if (!copy) return tg_error_set(err, "prompt_ids: out of memory");
    if (len) memcpy(copy, text, len);
    copy[len] = 0;
    int64_t n = 0;
    for (char *p = copy, *end; n >= 0; p = end) {
        while (*p == ' ' || *p == '\n' || *p == '\t') p++;
        if (!*p) break;
        long id = strtol(p, &end, 10);
        if (end == p || id < 0 || id >= V || (*end && !strchr(" \n\t", *end)))
            n = tg_error_set(err,
                             "this model has token ids and no tokenizer: the prompt is ids below %d separated by "
                             "spaces, and \"%.20s\" is not one",
                             V, p);
        else ids[n++] = (int32_t)id;
    }
    tg_free(copy);
    return n;
}

/* A tokenizer's ids of the text (after llama2.c's dummy " " when the
 * vocabulary wants it) into *ids (tg_malloc'd, or NULL for none). */
static int64_t encode_text(const tg_vocab *v, const char *text, size_t len, int32_t **ids, tg_error *err)
{
    *ids = NULL;
    if (!len) return 0;
    const int pre = tg_vocab_space_before_text(v);
    char *t = tg_malloc(len + 1);
    if (!t) return tg_error_set(err, "prompt_ids: out of memory");
    t[0] = ' ';
    memcpy(t + 1, text, len);
    const int64_t n = tg_tok_encode(v->tok, t + !pre, len + pre, ids, err);
    tg_free(t);
    return n;
}

int64_t tg_prompt_ids(const tg_vocab *v, int vocab_size, const char *text, size_t len, int32_t **ids, tg_error *err)
{
    if (ids) *ids = NULL;
    if (!v || !ids || (!text && len))
        return tg_error_set(err, "prompt_ids: %s is NULL", !v ? "the vocabulary" : !ids ? "ids" : "the text");
    if (vocab_size < 1) return tg_error_set(err, "prompt_ids: vocab_size must be >= 1, got %d", vocab_size);
    if (v->kind == TG_VOCAB_TOKENIZER && !v->tok)
        return tg_error_set(err, "prompt_ids: the vocabulary has no tokenizer");
    const bool tokenized = v->kind == TG_VOCAB_TOKENIZER || v->kind == TG_VOCAB_IDS;
    const bool llama = v->kind == TG_VOCAB_LLAMA2C || (v->kind == TG_VOCAB_TOKENIZER && v->docs);
    const size_t head = llama ? (len && !tokenized ? 2 : 1) : 0; /* BOS, and the dummy " " of the bytes */
    int32_t *body = NULL;
    int64_t n = (int64_t)len; /* the ids after the head */
    if (v->kind == TG_VOCAB_TOKENIZER && (n = encode_text(v, text, len, &body, err)) < 0) return -1;
    if (v->kind == TG_VOCAB_IDS && !(body = tg_malloc((len / 2 + 1) * sizeof *body)))
        return tg_error_set(err, "prompt_ids: out of memory");
    if (v->kind == TG_VOCAB_IDS && (n = parse_ids(text, len, vocab_size, body, err)) < 0) {
        tg_free(body);
        return -1;
    }
    int32_t *all = tg_malloc((head + (size_t)n + 1) * sizeof *all);
    if (!all) {
        tg_free(body);
        return tg_error_set(err, "prompt_ids: out of memory");
    }
    if (llama) {
        all[0] = v->kind == TG_VOCAB_TOKENIZER ? tg_tok_bos(v->tok) : TG_VOCAB_BOS;
        if (len && !tokenized) all[1] = v->ids[' '];
    }
    size_t bad = 0;
    if (tokenized) {
        if (n) memcpy(all + head, body, (size_t)n * sizeof *all);
    } else if (tg_vocab_encode(v, text, len, all + head, &bad) != 0) {
        tg_error_set(err, "the text's character '%c' (byte %d, offset %zu) is not in the vocabulary",
                     text[bad] >= 32 && text[bad] < 127 ? text[bad] : '?', (uint8_t)text[bad], bad);
        tg_free(body);
        tg_free(all);
        return -1;
    }
    tg_free(body);
    *ids = all;
    return (int64_t)head + n;
}

/* ---- the bytes of generated ids ------------------------------------------ */

typedef struct decoder {
    const tg_vocab *v;
    tg_tok_stream st; /* TG_VOCAB_TOKENIZER */
    char *buf; /* cap bytes: what one id shows */
    size_t cap;
} decoder;

static int decoder_init(decoder *d, const tg_vocab *v, tg_error *err)
{
    d->v = v;
    d->cap = v && v->kind == TG_VOCAB_TOKENIZER ? tg_tok_max_piece_len(v->tok) + 3 : 16;
    if (!(d->buf = tg_malloc(d->cap))) return tg_error_set(err, "generate: out of memory");
    if (v && v->kind == TG_VOCAB_TOKENIZER) tg_tok_stream_init(&d->st, v->tok);
    return 0;
}

/* True when id is v's BOS (llama2.c's, or a tokenizer's). */
static bool is_bos(const tg_vocab *v, int32_t id)
{
    if (!v) return false;
    if (v->kind == TG_VOCAB_LLAMA2C) return id == TG_VOCAB_BOS;
    return v->kind == TG_VOCAB_TOKENIZER && id >= 0 && id == tg_tok_bos(v->tok);
}

/* What id (made after prev) shows, into t. */
static void decode(decoder *d, int32_t prev, int32_t id, tg_generated *t)
{
    const tg_vocab *v = d->v;
    *t = (tg_generated){.id = id, .bytes = d->buf};
    if (!v) return;
    if (v->kind == TG_VOCAB_IDS) {
        t->len = (size_t)snprintf(d->buf, d->cap, " %d", (int)id);
    } else if (v->kind == TG_VOCAB_TOKENIZER) {
        if (id == tg_tok_bos(v->tok) || id == tg_tok_eos(v->tok)) {
            t->ends = true;
            return;
        }
        /* -1: an id past the tokenizer's (padding), nothing shown */
        const int64_t n = tg_tok_stream_push(&d->st, id, d->buf, d->cap);
        const int skip = n > 0 && v->docs && prev == tg_tok_bos(v->tok) && d->buf[0] == ' ';
        if (n > 0) t->bytes = d->buf + skip, t->len = (size_t)(n - skip);
    } else {
        if (v->kind == TG_VOCAB_LLAMA2C && id == TG_VOCAB_BOS) { /* run.c's end of a sequence */
            t->ends = true;
            return;
        }
        const int len = tg_vocab_decode(v, id, d->buf);
        const int skip = v->kind == TG_VOCAB_LLAMA2C && prev == TG_VOCAB_BOS && len && d->buf[0] == ' ';
        t->bytes = d->buf + skip, t->len = (size_t)(len - skip);
    }
}

/* ---- generation ------------------------------------------------------------ */

/* The resources of one call. */
typedef struct gen {
    tg_model *m;
    const tg_generate_options *o;
    tg_graph *g;
    tg_sampler *greedy; /* when o has no sampler */
    int32_t *win; /* block_size + 1 ids */
    int wlen, fed, n_keep;
    decoder d;
} gen;

/* Room for the id at win[block_size]: the cache shifted, or the window cut
 * to run again from position 0. 0, or -1 with a message. */
static int make_room(gen *s, bool cached, bool shifts, tg_error *err)
{
    const int bs = s->m->config.block_size, keep = s->n_keep;
    if (shifts) {
        const int d = (s->fed - keep) / 2 > 1 ? (s->fed - keep) / 2 : 1;
        if (tg_model_cache_shift(s->m, keep, d, err)) return -1;
        memmove(s->win + keep, s->win + keep + d, (size_t)(s->wlen - keep - d) * sizeof *s->win);
        s->wlen -= d;
        s->fed -= d;
        return 0;
    }
    memmove(s->win + keep, s->win + s->wlen - (bs - keep), (size_t)(bs - keep) * sizeof *s->win);
    s->wlen = bs;
    s->fed = 0;
    if (cached) tg_model_cache_clear(s->m);
    return 0;
}

/* The steps, once everything is in place: the count made, or -1. */
static int64_t run(gen *s, int64_t max_tokens, tg_error *err)
{
    tg_model *m = s->m;
    const tg_generate_options *o = s->o;
    const bool cached = m->family->cache_enable != NULL, shifts = cached && m->family->cache_shift;
    tg_sampler *sampler = o->sampler ? o->sampler : s->greedy;
    int64_t made = 0;
    while (made < max_tokens) {
        if (s->wlen > m->config.block_size && make_room(s, cached, shifts, err)) return -1;
        if (!cached) s->fed = 0; /* no cache: the whole window every time */
        const int T = s->wlen - s->fed;
        tg_tensor *idx = tg_tensor_from(s->g, TG_I32, 2, (int[]){1, T}, s->win + s->fed); /* (1,T) */
        tg_tensor *logits = tg_model_forward(s->g, m, idx, NULL); /* (1,T,V) */
        if (!logits)
            return tg_error_set(err, "%s",
                                tg_graph_error(s->g) ? tg_graph_error(s->g)
                                                     : "generate: the "
                                                       "forward failed");
        const int32_t next = tg_sampler_pick(sampler, logits, T - 1, err);
        tg_graph_reset(s->g);
        if (next < 0) return -1;
        s->fed = s->wlen;
        tg_generated t;
        decode(&s->d, s->win[s->wlen - 1], next, &t);
        made++;
        const bool more = o->on_token ? o->on_token(o->ctx, &t) : true;
        if (t.ends || !more) break;
        s->win[s->wlen++] = next;
    }
    const tg_vocab *v = o->vocab;
    if (v && v->kind == TG_VOCAB_TOKENIZER && o->on_token) { /* what the decoder still holds */
        const int64_t n = tg_tok_stream_flush(&s->d.st, s->d.buf, s->d.cap);
        if (n > 0) o->on_token(o->ctx, &(tg_generated){.id = -1, .bytes = s->d.buf, .len = (size_t)n});
    }
    return made;
}

int64_t tg_generate(tg_model *m, const int32_t *prompt, int64_t n_prompt, int64_t max_tokens,
                    const tg_generate_options *o, tg_error *err)
{
    static const tg_generate_options none = {0};
    if (!o) o = &none;
    if (!m || !m->family) return tg_error_set(err, "generate: the model is NULL or empty");
    if (!prompt || n_prompt < 1)
        return tg_error_set(err, "generate: the prompt is empty: it needs at least one id (a Llama's: its BOS)");
    if (max_tokens < 0) return tg_error_set(err, "generate: max_tokens must be >= 0, got %lld", (long long)max_tokens);
    const int bs = m->config.block_size, V = m->config.vocab_size;
    for (int64_t i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= V)
            return tg_error_set(err, "generate: the prompt's id %d (at %lld) is outside the model's [0, %d)",
                                (int)prompt[i], (long long)i, V);
    if (o->vocab && o->vocab->kind == TG_VOCAB_TOKENIZER && !o->vocab->tok)
        return tg_error_set(err, "generate: the vocabulary has no tokenizer");
    if (o->n_keep < 0 || o->n_keep >= bs)
        return tg_error_set(err, "generate: n_keep must be in [0, block_size %d), got %d", bs, o->n_keep);
    if (!max_tokens) return 0;

    gen s = {.m = m, .o = o, .n_keep = o->n_keep};
    if (!s.n_keep && bs > 1 && is_bos(o->vocab, prompt[0])) s.n_keep = 1;
    int64_t made = -1;
    s.win = tg_malloc(((size_t)bs + 1) * sizeof *s.win);
    s.g = tg_graph_new();
    if (!s.win || !s.g) {
        tg_error_set(err, "generate: out of memory");
        goto done;
    }
    if (decoder_init(&s.d, o->vocab, err) || (!o->sampler && !(s.greedy = tg_sampler_new(NULL, V, err)))) goto done;
    if (m->family->cache_enable && tg_model_cache_enable(m, 1, err)) goto done;
    tg_graph_set_grad_enabled(s.g, false);
    tg_graph_set_training(s.g, false);
    /* the prompt's window: all of it, or its first n_keep ids and its last */
    const int64_t tail = n_prompt <= bs ? n_prompt : bs - s.n_keep, head = n_prompt <= bs ? 0 : s.n_keep;
    memcpy(s.win, prompt, (size_t)head * sizeof *s.win);
    memcpy(s.win + head, prompt + n_prompt - tail, (size_t)tail * sizeof *s.win);
    s.wlen = (int)(head + tail);
    made = run(&s, max_tokens, err);
done:
    tg_free(s.d.buf);
    tg_free(s.win);
    tg_sampler_free(s.greedy);
    tg_graph_free(s.g);
    return made;
}

/* ---- scoring ---------------------------------------------------------------- */

double tg_text_nll(tg_model *m, const int32_t *ids, int64_t n, int64_t max_windows, int64_t *predictions, tg_error *err)
{
    if (predictions) *predictions = 0;
    if (!m || !m->family || !ids) {
        tg_error_set(err, "text_nll: %s", ids ? "the model is NULL or empty" : "ids is NULL");
        return NAN;
    }
    if (n < 2 || max_windows < 0) {
        tg_error_set(err,
                     "text_nll: %lld ids and max_windows %lld: at least 2 ids are needed for one prediction, and "
                     "max_windows >= 0",
                     (long long)n, (long long)max_windows);
        return NAN;
    }
    tg_graph *g = tg_graph_new();
    if (!g) {
        tg_error_set(err, "text_nll: out of memory");
        return NAN;
    }
    tg_graph_set_grad_enabled(g, false);
    tg_graph_set_training(g, false);
    const int T = m->config.block_size;
    double sum = 0, last = NAN;
    int64_t preds = 0, windows = 0;
    for (int64_t at = 0; at + 1 < n && (!max_windows || windows < max_windows); at += T, windows++) {
        const int N = (int)(n - 1 - at < T ? n - 1 - at : T);
        tg_model_cache_clear(m);
        tg_tensor *idx = tg_tensor_from(g, TG_I32, 2, (int[]){1, N}, ids + at); /* (1,N) */
        tg_tensor *tgt = tg_tensor_from(g, TG_I32, 2, (int[]){1, N}, ids + at + 1); /* (1,N) */
        tg_tensor *loss = idx && tgt ? tg_model_loss(g, m, idx, tgt) : NULL;
        if (!loss) {
            tg_error_set(err, "%s", tg_graph_error(g) ? tg_graph_error(g) : "text_nll: the forward failed");
            tg_graph_free(g);
            return NAN;
        }
        last = tg_tensor_item(loss);
        sum += last * N;
        preds += N;
        tg_graph_reset(g);
    }
    tg_graph_free(g);
    if (predictions) *predictions = preds;
    return windows == 1 ? last : sum / (double)preds; /* one window: its loss as it is */
}
