/* Byte-level BPE training.
 *
 * 1. Words (bpe_words.c). The text is cut into words as the encoder cuts
 *    it (each space starts a word, a run of newlines is one; encode.c),
 *    by default each again into runs of one class (letters, digits, the
 *    rest), longer ones into TG_BPE_MAX_WORD-byte chunks, and the distinct words
 *    are counted: one hash table per thread over its part of the text
 *    (cut at word starts), then added together in part order. Counts are
 *    sums, so they do not depend on the cut, and nothing below depends on
 *    the order of the words: the vocabulary is the same on any number of
 *    threads.
 * 2. Pairs. Each word is a sequence of ids, first 3 + byte. For every
 *    adjacent pair (a, b): count(a, b) = sum over words w of count(w) times
 *    the occurrences of (a, b) in w, and a list of the words it occurs in.
 * 3. Merge, until the vocabulary is full: take the pair with the largest
 *    count (ties: smaller a, then smaller b); stop if that count is below
 *    min_count. Give it the next id c (or, if the bytes of a b are already
 *    a piece, that piece's id: then nothing is added), and rewrite every
 *    word on its list left to right, replacing each non-overlapping "a b"
 *    by c. Around each replacement at (x a b y) the counts change by
 *    count(w) times: (x,a) -1, (x,c) +1, (b,y) -1, (c,y) +1 (when the left
 *    neighbour is itself a fresh c, its (c,a) +1 is undone here, so
 *    "a b a b" gives (c,c) +1); afterwards (a, b) occurs nowhere.
 *    The counts sit in a max-heap with lazy updates: a pair whose count
 *    went up is pushed again; a popped entry whose count is no longer the
 *    pair's is dropped (or pushed again with the smaller count). A merge
 *    costs the length of the words that hold the pair, not a recount.
 *
 * UTF-8. A merge never puts part of a multi-byte character together
 * with anything outside it: a piece of two or more bytes is either whole
 * characters (ASCII bytes and complete lead + continuation sequences) or
 * the leading bytes of one character, grown a byte at a time (lead, lead
 * + 1 continuation, ...). Pairs that would break this are never counted.
 * So a character's bytes merge only with each other until it is complete,
 * and only whole characters merge across a character boundary, as they do
 * in SentencePiece, whose pieces are made of characters; it is also what
 * makes llama2.c's encoder, which looks each character up whole before it
 * merges, give the same ids (docs/tokenizers.md). A character here is
 * its structure: a lead byte 0xC0-0xF7 announcing 2, 3 or 4 bytes and
 * that many continuation bytes 0x80-0xBF; the bytes of invalid UTF-8
 * (a stray continuation, 0xF8-0xFF, a lead cut short) stay single.
 *
 * Ids: 0 <unk>, 1 <s>, 2 </s>, 3 + b for byte b, 259 + k for merge k. */
#include "text_internal.h"

#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/parallel.h"

#define N_SPECIAL 3
#define FIRST_MERGE (N_SPECIAL + 256)

/* ---- 2, 3. pairs and merges ------------------------------------------------ */

typedef struct pairinfo {
    int32_t a, b;
    int64_t count;
    int32_t *w; /* words it occurs in (may hold stale ones) */
    int32_t wn, wcap;
    int32_t touched; /* the merge that last changed it */
} pairinfo;

typedef struct entry {
    int64_t count;
    int32_t a, b;
} entry;

typedef struct trainer {
    int32_t *sym; /* every word's ids */
    int64_t *wstart;
    int32_t *wlen, *wstamp;
    int64_t *wcount;
    int32_t nw;
    pairinfo *p;
    int32_t np, pcap;
    tg_pairmap index; /* (a << 32 | b) -> pair */
    entry *heap;
    size_t hn, hcap;
    int32_t *touched;
    int32_t ntouched, tcap;
    unsigned char *bytes; /* the pieces so far, end to end */
    int64_t *off;
    size_t nbytes, bcap;
    int32_t npieces, ocap;
    tg_strmap pieces;
    int32_t *merges;
    int32_t nmerges;
    int8_t *shape; /* per piece: SHAPE_WHOLE, the bytes a character still needs, or SHAPE_* */
    bool oom;
} trainer;

/* A piece's shape under the UTF-8 rule (above): whole characters (0), the
 * first bytes of one character still needing 1..3 continuation bytes, a
 * lone continuation byte, or a byte that merges with nothing. */
enum { SHAPE_WHOLE = 0, SHAPE_CONT = -1, SHAPE_NEVER = -2 };

static int8_t byte_shape(unsigned char c)
{
    if (c < 0x80) return SHAPE_WHOLE;
    if (c < 0xC0) return SHAPE_CONT;
    if (c < 0xE0) return 1;
    if (c < 0xF0) return 2;
    if (c < 0xF8) return 3;
    return SHAPE_NEVER;
}

/* The shape of a merged with b, or SHAPE_NEVER when the rule forbids it:
 * whole + whole, or a character's first bytes + its next continuation. */
static int8_t merged_shape(const trainer *T, int32_t a, int32_t b)
{
    const int8_t x = T->shape[a], y = T->shape[b];
    if (x == SHAPE_WHOLE && y == SHAPE_WHOLE) return SHAPE_WHOLE;
    if (x > 0 && y == SHAPE_CONT) return (int8_t)(x - 1);
    return SHAPE_NEVER;
}

static bool better(const entry *x, const entry *y)
{
    if (x->count != y->count) return x->count > y->count;
    if (x->a != y->a) return x->a < y->a;
    return x->b < y->b;
}

static void push(trainer *T, entry e)
{
    if (T->hn == T->hcap) {
        size_t cap = T->hcap ? 2 * T->hcap : 1024;
        entry *h = tg_realloc(T->heap, cap * sizeof *h);
        if (!h) {
            T->oom = true;
            return;
        }
        T->heap = h;
        T->hcap = cap;
    }
    size_t i = T->hn++;
    while (i && better(&e, &T->heap[(i - 1) / 2])) {
        T->heap[i] = T->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    T->heap[i] = e;
}

static entry pop(trainer *T)
{
    entry top = T->heap[0], e = T->heap[--T->hn];
    size_t i = 0, n = T->hn;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && better(&T->heap[c + 1], &T->heap[c])) c++;
        if (!better(&T->heap[c], &e)) break;
        T->heap[i] = T->heap[c];
        i = c;
    }
    if (n) T->heap[i] = e;
    return top;
}

/* The index of pair (a, b), made (count 0) if new; -1 when out of memory. */
static int32_t pair_of(trainer *T, int32_t a, int32_t b)
{
    uint64_t key = (uint64_t)a << 32 | (uint64_t)b;
    int32_t i = tg_pairmap_get(&T->index, key);
    if (i >= 0) return i;
    if (T->np == T->pcap) {
        int32_t cap = T->pcap ? 2 * T->pcap : 4096;
        pairinfo *p = tg_realloc(T->p, (size_t)cap * sizeof *p);
        if (!p) return -1;
        T->p = p;
        T->pcap = cap;
    }
    i = T->np;
    if (tg_pairmap_put(&T->index, key, i)) return -1;
    T->p[T->np++] = (pairinfo){.a = a, .b = b, .touched = -1};
    return i;
}

/* count(a, b) += d, noting word w when the pair gains it, and the pair as
 * touched by merge m. */
static void add(trainer *T, int32_t a, int32_t b, int64_t d, int32_t w, int32_t m)
{
    if (merged_shape(T, a, b) == SHAPE_NEVER) return; /* never counted, never merged */
    int32_t i = pair_of(T, a, b);
    if (i < 0) {
        T->oom = true;
        return;
    }
    pairinfo *p = &T->p[i];
    p->count += d;
    if (d > 0 && (p->wn == 0 || p->w[p->wn - 1] != w)) {
        if (p->wn == p->wcap) {
            int32_t cap = p->wcap ? 2 * p->wcap : 4;
            int32_t *l = tg_realloc(p->w, (size_t)cap * sizeof *l);
            if (!l) {
                T->oom = true;
                return;
            }
            p->w = l;
            p->wcap = cap;
        }
        p->w[p->wn++] = w;
    }
    if (p->touched != m) {
        p->touched = m;
        if (T->ntouched == T->tcap) {
            int32_t cap = T->tcap ? 2 * T->tcap : 1024;
            int32_t *l = tg_realloc(T->touched, (size_t)cap * sizeof *l);
            if (!l) {
                T->oom = true;
                return;
            }
            T->touched = l;
            T->tcap = cap;
        }
        T->touched[T->ntouched++] = i;
    }
}

/* Appends a piece (special or not) of the given shape; its id, or -1 when
 * out of memory. */
static int32_t add_piece(trainer *T, const unsigned char *p, size_t len, bool ordinary, int8_t shape)
{
    if (T->nbytes + len > T->bcap) {
        size_t cap = T->bcap ? T->bcap : 4096;
        while (cap < T->nbytes + len) cap *= 2;
        unsigned char *b = tg_realloc(T->bytes, cap);
        if (!b) return -1;
        T->bytes = b;
        T->bcap = cap;
    }
    if (T->npieces + 2 > T->ocap) {
        int32_t cap = T->ocap ? 2 * T->ocap : 1024;
        int64_t *o = tg_realloc(T->off, (size_t)cap * sizeof *o);
        if (o) T->off = o;
        int8_t *sh = tg_realloc(T->shape, (size_t)cap * sizeof *sh);
        if (sh) T->shape = sh;
        if (!o || !sh) return -1;
        T->ocap = cap;
    }
    memcpy(T->bytes + T->nbytes, p, len);
    int32_t id = T->npieces++;
    T->shape[id] = shape;
    T->off[id] = (int64_t)T->nbytes;
    T->nbytes += len;
    T->off[id + 1] = (int64_t)T->nbytes;
    if (ordinary && tg_strmap_add(&T->pieces, p, (uint32_t)len, tg_hash_bytes(p, len), id) < 0) return -1;
    return id;
}

/* Merges pair i: the id it becomes, or -1 when out of memory. */
static int32_t merge(trainer *T, int32_t i, int32_t m)
{
    int32_t a = T->p[i].a, b = T->p[i].b;
    size_t la = (size_t)(T->off[a + 1] - T->off[a]), lb = (size_t)(T->off[b + 1] - T->off[b]);
    unsigned char buf[2 * TG_BPE_MAX_WORD];
    memcpy(buf, T->bytes + T->off[a], la);
    memcpy(buf + la, T->bytes + T->off[b], lb);
    int64_t e = tg_strmap_find(&T->pieces, buf, (uint32_t)(la + lb), tg_hash_bytes(buf, la + lb));
    int32_t c;
    if (e >= 0) {
        c = (int32_t)T->pieces.ents[e].val; /* a b spells a piece made by another merge */
    } else {
        if ((c = add_piece(T, buf, la + lb, true, merged_shape(T, a, b))) < 0) return -1;
        T->merges[2 * T->nmerges] = a;
        T->merges[2 * T->nmerges + 1] = b;
        T->nmerges++;
    }
    int32_t *list = T->p[i].w, n = T->p[i].wn;
    T->p[i].w = NULL;
    T->p[i].wn = T->p[i].wcap = 0;
    T->ntouched = 0;
    for (int32_t k = 0; k < n && !T->oom; k++) {
        int32_t w = list[k];
        if (T->wstamp[w] == m) continue;
        T->wstamp[w] = m;
        int32_t *s = T->sym + T->wstart[w];
        int32_t len = T->wlen[w], out = 0;
        int64_t cnt = T->wcount[w];
        for (int32_t j = 0; j < len;) {
            if (j + 1 < len && s[j] == a && s[j + 1] == b) {
                if (out > 0) {
                    add(T, s[out - 1], a, -cnt, w, m);
                    add(T, s[out - 1], c, cnt, w, m);
                }
                if (j + 2 < len) {
                    add(T, b, s[j + 2], -cnt, w, m);
                    add(T, c, s[j + 2], cnt, w, m);
                }
                s[out++] = c;
                j += 2;
            } else {
                s[out++] = s[j++];
            }
        }
        T->wlen[w] = out;
    }
    tg_free(list);
    T->p[i].count = 0;
    for (int32_t k = 0; k < T->ntouched && !T->oom; k++) {
        pairinfo *p = &T->p[T->touched[k]];
        if (p->count > 0) push(T, (entry){p->count, p->a, p->b});
    }
    return T->oom ? -1 : c;
}

static void trainer_free(trainer *T)
{
    tg_free(T->sym);
    tg_free(T->wstart);
    tg_free(T->wlen);
    tg_free(T->wstamp);
    tg_free(T->wcount);
    for (int32_t i = 0; i < T->np; i++) tg_free(T->p[i].w);
    tg_free(T->p);
    tg_pairmap_free(&T->index);
    tg_free(T->heap);
    tg_free(T->touched);
    tg_free(T->bytes);
    tg_free(T->off);
    tg_strmap_free(&T->pieces);
    tg_free(T->merges);
    tg_free(T->shape);
}

tg_tokenizer *tg_bpe_train(const void *text, size_t len, const tg_bpe_options *opts, tg_error *err)
{
    if (!text || !len || !opts) {
        tg_error_set(err, "bpe train: %s", !opts ? "NULL options" : "no text");
        return NULL;
    }
    if (opts->vocab_size < FIRST_MERGE || opts->vocab_size > (1 << 24)) {
        tg_error_set(err, "bpe train: vocab_size %d is not in [%d, 2^24] (3 specials and 256 bytes come first)",
                     opts->vocab_size, FIRST_MERGE);
        return NULL;
    }
    if (opts->words != TG_BPE_WORDS_CLASSES && opts->words != TG_BPE_WORDS_SPACES) {
        tg_error_set(err, "bpe train: words %d is neither TG_BPE_WORDS_CLASSES (0) nor TG_BPE_WORDS_SPACES (1)",
                     (int)opts->words);
        return NULL;
    }
    int64_t min_count = opts->min_count > 0 ? opts->min_count : 2;
    const unsigned char *s = text;
    trainer T = {0};
    tg_tokenizer *tok = NULL;

    /* 1. words, counted */
    tg_strmap wmap = {0}, *words = &wmap;
    if (tg_bpe_count_words(s, len, opts->words == TG_BPE_WORDS_CLASSES, words)) goto oom;

    /* the pieces: specials, then bytes */
    static const char *const SPECIALS[N_SPECIAL] = {"<unk>", "<s>", "</s>"};
    for (int i = 0; i < N_SPECIAL; i++)
        if (add_piece(&T, (const unsigned char *)SPECIALS[i], strlen(SPECIALS[i]), false, SHAPE_NEVER) < 0) goto oom;
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        if (add_piece(&T, &c, 1, true, byte_shape(c)) < 0) goto oom;
    }
    int32_t max_merges = opts->vocab_size - FIRST_MERGE;
    if (!(T.merges = tg_malloc(((size_t)max_merges + 1) * 2 * sizeof *T.merges))) goto oom;

    /* 2. words as ids, and their pairs */
    if (words->n > INT32_MAX / 2) {
        tg_error_set(err, "bpe train: more than 2^30 distinct words");
        goto fail;
    }
    T.nw = (int32_t)words->n;
    size_t nsym = words->pool_len;
    T.sym = tg_malloc((nsym ? nsym : 1) * sizeof *T.sym);
    T.wstart = tg_malloc(((size_t)T.nw + 1) * sizeof *T.wstart);
    T.wlen = tg_malloc(((size_t)T.nw + 1) * sizeof *T.wlen);
    T.wstamp = tg_malloc(((size_t)T.nw + 1) * sizeof *T.wstamp);
    T.wcount = tg_malloc(((size_t)T.nw + 1) * sizeof *T.wcount);
    if (!T.sym || !T.wstart || !T.wlen || !T.wstamp || !T.wcount) goto oom;
    for (int32_t w = 0; w < T.nw; w++) {
        const struct tg_strent *x = &words->ents[w];
        T.wstart[w] = (int64_t)x->off;
        T.wlen[w] = (int32_t)x->len;
        T.wcount[w] = x->val;
        T.wstamp[w] = -1;
        const unsigned char *p = words->pool + x->off;
        for (uint32_t i = 0; i < x->len; i++) T.sym[x->off + i] = N_SPECIAL + p[i];
    }
    T.ntouched = 0;
    for (int32_t w = 0; w < T.nw && !T.oom; w++) {
        const int32_t *q = T.sym + T.wstart[w];
        for (int32_t i = 0; i + 1 < T.wlen[w]; i++) add(&T, q[i], q[i + 1], T.wcount[w], w, -2);
    }
    for (int32_t i = 0; i < T.np && !T.oom; i++) push(&T, (entry){T.p[i].count, T.p[i].a, T.p[i].b});
    if (T.oom) goto oom;

    /* 3. merges */
    for (int32_t m = 0; T.nmerges < max_merges && T.hn;) {
        entry e = pop(&T);
        int32_t i = tg_pairmap_get(&T.index, (uint64_t)e.a << 32 | (uint64_t)e.b);
        int64_t now = T.p[i].count;
        if (now != e.count) { /* stale: a smaller count is pushed again, a larger one is in the heap */
            if (now > 0 && now < e.count) push(&T, (entry){now, e.a, e.b});
            if (T.oom) goto oom;
            continue;
        }
        if (e.count < min_count) break;
        if (merge(&T, i, m++) < 0) goto oom;
    }

    uint8_t *special = tg_calloc((size_t)T.npieces, 1);
    if (!special) goto oom;
    for (int i = 0; i < N_SPECIAL; i++) special[i] = 1;
    tok = tg_tok_build(TG_TOK_BPE, T.npieces, T.bytes, T.off, special, "bpe train", err);
    tg_free(special);
    if (!tok) goto fail;
    tok->unk = 0;
    tok->bos = 1;
    tok->eos = 2;
    tok->n_merges = T.nmerges;
    tok->merges = T.merges;
    T.merges = NULL;
    goto done;
oom:
    tg_error_set(err, "bpe train: out of memory");
fail:
    tg_tok_free(tok);
    tok = NULL;
done:
    tg_strmap_free(&wmap);
    trainer_free(&T);
    return tok;
}
