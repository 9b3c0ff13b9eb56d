/* Byte-level BPE training, step 1 (bpe_train.c): the distinct words of
 * a text and their counts. The text is cut into words as the encoder
 * cuts it (encode.c); with classes, each word again into runs of one
 * class (a leading space joins the first), so " lord," counts as " lord"
 * and ","; words longer than TG_BPE_MAX_WORD bytes into chunks of that
 * many. One hash table per thread over its part of the text (cut at word
 * starts), then added together in part order. Counts are sums, so they
 * do not depend on the cut. */
#include "text_internal.h"

#include "../core/alloc.h"
#include "../core/parallel.h"

#define PART_MIN (256 * 1024)

typedef struct count_job {
    const unsigned char *s;
    const size_t *cut;
    bool classes;
    tg_strmap *maps;
    int *oom;
} count_job;

/* 0 a letter (ASCII letters, the apostrophe, any byte >= 0x80: a word in
 * another script stays whole), 1 a digit, 2 anything else */
static int byte_class(unsigned char c)
{
    if (c >= 0x80 || c == '\'' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) return 0;
    return c >= '0' && c <= '9' ? 1 : 2;
}

/* The end of the run of one class that starts at a, inside the word [a, q) */
static size_t class_run_end(const unsigned char *s, size_t a, size_t q)
{
    size_t k = a + (s[a] == ' ');
    if (s[a] == '\n' || k >= q) return q;
    const int c = byte_class(s[k]);
    while (++k < q && byte_class(s[k]) == c) {}
    return k;
}

/* Counts the word [a, q) in m, as TG_BPE_MAX_WORD-byte chunks when longer:
 * 0, or -1 when out of memory. */
static int count_word(tg_strmap *m, const unsigned char *s, size_t a, size_t q)
{
    for (; a < q; a += TG_BPE_MAX_WORD) {
        uint32_t len = (uint32_t)(q - a < TG_BPE_MAX_WORD ? q - a : TG_BPE_MAX_WORD);
        uint64_t h = tg_hash_bytes(s + a, len);
        int64_t e = tg_strmap_find(m, s + a, len, h);
        if (e >= 0) m->ents[e].val++;
        else if (tg_strmap_add(m, s + a, len, h, 1) < 0) return -1;
    }
    return 0;
}

static void count_parts(void *ctx, int64_t lo, int64_t hi)
{
    count_job *j = ctx;
    for (int64_t k = lo; k < hi; k++) {
        size_t end = j->cut[k + 1];
        /* w: the end of the encoder's word holding p, found once per word
         * (its class runs are cut inside it) */
        for (size_t p = j->cut[k], w = p, q; p < end && !j->oom[k]; p = q) {
            if (p == w) w = tg_bpe_word_end(j->s, end, p);
            q = j->classes ? class_run_end(j->s, p, w) : w;
            if (count_word(&j->maps[k], j->s, p, q)) j->oom[k] = 1;
        }
    }
}

int tg_bpe_count_words(const unsigned char *s, size_t len, bool classes, tg_strmap *words)
{
    int parts = tg_num_threads();
    if ((size_t)parts > len / PART_MIN) parts = (int)(len / PART_MIN);
    if (parts < 1) parts = 1;
    size_t cut[TG_MAX_THREADS + 1];
    int k = 0;
    cut[0] = 0;
    for (int p = 1; p < parts; p++) {
        size_t c = tg_bpe_word_start(s, len, len / (size_t)parts * (size_t)p);
        if (c > cut[k] && c < len) cut[++k] = c;
    }
    cut[++k] = len;
    parts = k;
    tg_strmap *maps = tg_calloc((size_t)parts, sizeof *maps);
    int *oom = tg_calloc((size_t)parts, sizeof *oom), rc = -1;
    if (!maps || !oom) goto done;
    count_job job = {s, cut, classes, maps, oom};
    if (parts == 1) count_parts(&job, 0, 1);
    else tg_parallel_for(parts, 1, count_parts, &job);
    for (int p = 0; p < parts; p++)
        if (oom[p]) goto done;
    for (int p = 1; p < parts; p++) {
        tg_strmap *m = &maps[p];
        for (size_t e = 0; e < m->n; e++) {
            const struct tg_strent *x = &m->ents[e];
            int64_t f = tg_strmap_find(&maps[0], m->pool + x->off, x->len, x->hash);
            if (f >= 0) maps[0].ents[f].val += x->val;
            else if (tg_strmap_add(&maps[0], m->pool + x->off, x->len, x->hash, x->val) < 0) goto done;
        }
    }
    *words = maps[0];
    maps[0] = (tg_strmap){0};
    rc = 0;
done:
    if (maps)
        for (int p = 0; p < parts; p++) tg_strmap_free(&maps[p]);
    tg_free(maps);
    tg_free(oom);
    return rc;
}
