/* One word's merges: ids of single-byte pieces -> the word's ids.
 *
 * The rule. Start from the word's bytes as single-byte pieces, then
 * repeatedly merge the adjacent pair (a, b) whose concatenation is the
 * piece c with the smallest rank (the id itself for BPE and tiktoken, id
 * order being rank order; TG_TOK_SPM's rank orders scores from the
 * highest, equal scores equal ranks), the leftmost
 * such pair when c occurs more than once, until no adjacent pair makes a
 * piece. Short words keep the candidate id of every pair in an array and
 * rescan it (O(n^2) in the worst case, tiny n); words longer than 64 bytes
 * use a min-heap of (c, position) over a linked list, with entries that no
 * longer match skipped when popped (O(n log n)). */
#include "text_internal.h"

#include <string.h>

#include "../core/alloc.h"

#define SHORT_WORD 64 /* longer words merge with a heap */

static int32_t pair(const tg_tokenizer *t, int32_t a, int32_t b)
{
    return tg_pairmap_get(&t->pairs, (uint64_t)a << 32 | (uint64_t)b);
}

/* The merge priority of piece c (lower merges first). */
static int32_t rank_of(const tg_tokenizer *t, int32_t c) { return t->rank ? t->rank[c] : c; }

/* Merges sym[0..n) in place by the rule above (short words); returns the
 * new count. */
static size_t merge_short(const tg_tokenizer *t, int32_t *sym, int32_t *cand, size_t n)
{
    /* cand[i]: the rank of the piece sym[i] sym[i + 1] make (NONE: none) */
    const int32_t NONE = INT32_MAX;
    for (size_t i = 0; i + 1 < n; i++) {
        int32_t c = pair(t, sym[i], sym[i + 1]);
        cand[i] = c < 0 ? NONE : rank_of(t, c);
    }
    while (n > 1) {
        size_t at = 0;
        for (size_t i = 1; i + 1 < n; i++)
            if (cand[i] < cand[at]) at = i;
        if (cand[at] == NONE) break;
        sym[at] = pair(t, sym[at], sym[at + 1]);
        memmove(sym + at + 1, sym + at + 2, (n - at - 2) * sizeof *sym);
        memmove(cand + at + 1, cand + at + 2, (n >= at + 3 ? n - at - 3 : 0) * sizeof *cand);
        n--;
        if (at > 0) {
            int32_t c = pair(t, sym[at - 1], sym[at]);
            cand[at - 1] = c < 0 ? NONE : rank_of(t, c);
        }
        if (at + 1 < n) {
            int32_t c = pair(t, sym[at], sym[at + 1]);
            cand[at] = c < 0 ? NONE : rank_of(t, c);
        }
    }
    return n;
}

/* A binary min-heap of (rank << 32 | position) keys. */
static void heap_push(uint64_t *h, size_t *n, uint64_t k)
{
    size_t i = (*n)++;
    while (i && h[(i - 1) / 2] > k) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = k;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
    uint64_t top = h[0], k = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= k) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = k;
    return top;
}

/* The same merges for a long word, on a linked list with a heap; the
 * result is compacted into sym[0..return). */
static size_t merge_long(const tg_tokenizer *t, int32_t *sym, size_t n, tg_merge_scratch *s)
{
    int32_t *next = s->next, *prev = s->prev;
    uint64_t *h = s->heap;
    size_t hn = 0;
    for (size_t i = 0; i < n; i++) {
        next[i] = i + 1 < n ? (int32_t)(i + 1) : -1;
        prev[i] = (int32_t)i - 1;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        int32_t c = pair(t, sym[i], sym[i + 1]);
        if (c >= 0) heap_push(h, &hn, (uint64_t)rank_of(t, c) << 32 | i);
    }
    while (hn) {
        uint64_t k = heap_pop(h, &hn);
        int32_t r = (int32_t)(k >> 32), i = (int32_t)(k & 0xffffffffu);
        int32_t j = next[i];
        /* stale unless the pair now at i makes a piece of this rank: then it
         * is the pair to merge, whichever push this key came from */
        int32_t c = sym[i] < 0 || j < 0 ? -1 : pair(t, sym[i], sym[j]);
        if (c < 0 || rank_of(t, c) != r) continue;
        sym[i] = c;
        sym[j] = -1;
        next[i] = next[j];
        if (next[j] >= 0) prev[next[j]] = i;
        if (prev[i] >= 0) {
            int32_t d = pair(t, sym[prev[i]], c);
            if (d >= 0) heap_push(h, &hn, (uint64_t)rank_of(t, d) << 32 | (uint32_t)prev[i]);
        }
        if (next[i] >= 0) {
            int32_t d = pair(t, c, sym[next[i]]);
            if (d >= 0) heap_push(h, &hn, (uint64_t)rank_of(t, d) << 32 | (uint32_t)i);
        }
    }
    size_t m = 0;
    for (int32_t i = 0; i >= 0; i = next[i]) sym[m++] = sym[i];
    return m;
}

size_t tg_bpe_merge(const tg_tokenizer *t, int32_t *sym, size_t n, tg_merge_scratch *s)
{
    return n <= SHORT_WORD ? merge_short(t, sym, s->cand, n) : merge_long(t, sym, n, s);
}

int tg_merge_reserve(tg_merge_scratch *s, size_t n)
{
    if (n <= s->cap) return 0;
    size_t c = s->cap ? s->cap : 256;
    while (c < n) c *= 2;
    int32_t *a = tg_realloc(s->cand, c * sizeof *a);
    if (a) s->cand = a;
    int32_t *d = tg_realloc(s->next, c * sizeof *d);
    if (d) s->next = d;
    int32_t *f = tg_realloc(s->prev, c * sizeof *f);
    if (f) s->prev = f;
    uint64_t *h = tg_realloc(s->heap, 3 * c * sizeof *h);
    if (h) s->heap = h;
    if (!a || !d || !f || !h) return -1;
    s->cap = c;
    return 0;
}

void tg_merge_scratch_free(tg_merge_scratch *s)
{
    tg_free(s->cand);
    tg_free(s->next);
    tg_free(s->prev);
    tg_free(s->heap);
    *s = (tg_merge_scratch){0};
}
