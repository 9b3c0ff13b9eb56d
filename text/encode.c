/* Encoding: text -> words -> ids.
 *
 * Words. TG_TOK_BPE: a word starts at every space, and a maximal run of
 * newlines is a word; so a word is "\n"+, or an optional space followed by
 * bytes that are neither space nor newline. TG_TOK_TIKTOKEN: the words are
 * the successive leftmost matches of the tokenizer's regex (PCRE2, UTF and
 * UCP: \p{L}, \p{N}, \s are Unicode's), searched from where the last one
 * ended, as tiktoken's find_iter; input that is not valid UTF-8 is first
 * rewritten with U+FFFD for each maximal ill-formed subpart (text/utf8.c).
 *
 * One word: text/merge.c. tiktoken first takes a word that is itself a
 * piece as that one token.
 *
 * Speed. Each thread keeps a cache word -> ids for words up to 32 bytes:
 * in English text most words repeat, and the cache turns them into one
 * hash lookup. A large text is cut into one part per thread at positions
 * where a word is sure to start (BPE: a word start; tiktoken: a space
 * between an ASCII non-space character and an ASCII letter, where no
 * regex match can span and the match at the space cannot depend on what
 * came before; other patterns than GPT-2's are not cut), so the ids
 * equal a single thread's. */
#include "text_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/parallel.h"
#include "text_internal.h"

#define CACHE_WORD 32 /* words cached up to this many bytes */
#define CACHE_MAX (1 << 20) /* entries per thread */
#define PART_MIN (1 << 20) /* bytes per thread at least */

/* ---- words of TG_TOK_BPE ------------------------------------------------- */

size_t tg_bpe_word_end(const unsigned char *s, size_t len, size_t pos)
{
    size_t j = pos + 1;
    if (s[pos] == '\n') {
        while (j < len && s[j] == '\n') j++;
        return j;
    }
    while (j < len && s[j] != ' ' && s[j] != '\n') j++;
    return j;
}

size_t tg_bpe_word_start(const unsigned char *s, size_t len, size_t pos)
{
    for (size_t p = pos; p < len; p++) {
        if (p == 0 || s[p] == ' ') return p;
        if ((s[p] == '\n') != (s[p - 1] == '\n')) return p;
    }
    return len;
}

/* ---- one part's encoder --------------------------------------------------- */

typedef struct encoder {
    const tg_tokenizer *t;
    int32_t *ids; /* output */
    size_t n, cap;
    struct cache_slot {
        uint64_t hash;
        uint32_t at, used;
    } * slots; /* the word cache */
    size_t scap_slots, ncached;
    int32_t *pool; /* its entries: len << 8 | count, the word's bytes (padded), the ids */
    size_t plen, pcap;
    int32_t *sym; /* the word being merged */
    size_t symcap;
    tg_merge_scratch ms;
    unsigned char *clean; /* tiktoken: the part rewritten as valid UTF-8 */
    bool oom;
    char err[256];
} encoder;

static int grow32(int32_t **p, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    int32_t *q = tg_realloc(*p, c * sizeof *q);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int scratch(encoder *e, size_t n)
{
    return grow32(&e->sym, &e->symcap, n) || tg_merge_reserve(&e->ms, n) ? -1 : 0;
}

/* The word cache: open addressing on the word's hash (at most half
 * full); a slot points at the word's entry in one int32 pool, where its
 * length, bytes and ids sit together, so a hit reads two places. */
static const int32_t *cache_find(const encoder *e, const unsigned char *w, size_t len, uint64_t h)
{
    if (!e->scap_slots) return NULL;
    size_t mask = e->scap_slots - 1;
    for (size_t i = (size_t)h & mask; e->slots[i].used; i = (i + 1) & mask) {
        if (e->slots[i].hash != h) continue;
        const int32_t *p = e->pool + e->slots[i].at;
        if ((size_t)(p[0] >> 8) == len && !memcmp(p + 1, w, len)) return p;
    }
    return NULL;
}

/* Adds w -> sym[0..m) (w is not in the cache); -1 when out of memory. */
static int cache_add(encoder *e, const unsigned char *w, size_t len, uint64_t h, size_t m)
{
    if (2 * (e->ncached + 1) > e->scap_slots) {
        size_t cap = e->scap_slots ? 2 * e->scap_slots : 4096;
        struct cache_slot *sl = tg_calloc(cap, sizeof *sl);
        if (!sl) return -1;
        for (size_t j = 0; j < e->scap_slots; j++) {
            if (!e->slots[j].used) continue;
            size_t i = (size_t)e->slots[j].hash & (cap - 1);
            while (sl[i].used) i = (i + 1) & (cap - 1);
            sl[i] = e->slots[j];
        }
        tg_free(e->slots);
        e->slots = sl;
        e->scap_slots = cap;
    }
    size_t words = 1 + (len + 3) / 4 + m;
    if (grow32(&e->pool, &e->pcap, e->plen + words)) return -1;
    int32_t *p = e->pool + e->plen;
    p[0] = (int32_t)(len << 8 | m);
    p[(len + 3) / 4] = 0; /* the padding of the last word of bytes */
    memcpy(p + 1, w, len);
    memcpy(p + 1 + (len + 3) / 4, e->sym, m * sizeof *p);
    size_t i = (size_t)h & (e->scap_slots - 1);
    while (e->slots[i].used) i = (i + 1) & (e->scap_slots - 1);
    e->slots[i] = (struct cache_slot){h, (uint32_t)e->plen, 1};
    e->plen += words;
    e->ncached++;
    return 0;
}

/* Appends the ids of one word. */
static void encode_word(encoder *e, const unsigned char *w, size_t len)
{
    const tg_tokenizer *t = e->t;
    if (e->oom || !len) return;
    if (len > INT32_MAX) {
        snprintf(e->err, sizeof e->err, "a word of %zu bytes (more than 2^31 - 1)", len);
        e->oom = true;
        return;
    }
    uint64_t h = 0;
    if (len <= CACHE_WORD) {
        h = tg_hash_bytes(w, len);
        const int32_t *hit = cache_find(e, w, len, h);
        if (hit) {
            size_t cnt = (size_t)(hit[0] & 0xff);
            if (grow32(&e->ids, &e->cap, e->n + cnt)) goto oom;
            memcpy(e->ids + e->n, hit + 1 + (len + 3) / 4, cnt * sizeof *e->ids);
            e->n += cnt;
            return;
        }
    }
    if (scratch(e, len) || grow32(&e->ids, &e->cap, e->n + len)) goto oom;
    size_t m = 0;
    if (t->whole_word_first) {
        int64_t p = tg_strmap_find(&t->pieces, w, (uint32_t)len, h && len <= CACHE_WORD ? h : tg_hash_bytes(w, len));
        if (p >= 0) {
            e->sym[0] = (int32_t)t->pieces.ents[p].val;
            m = 1;
        }
    }
    if (!m) {
        for (size_t i = 0; i < len; i++) e->sym[i] = t->byte_id[w[i]];
        m = tg_bpe_merge(t, e->sym, len, &e->ms);
    }
    memcpy(e->ids + e->n, e->sym, m * sizeof *e->ids);
    e->n += m;
    if (len <= CACHE_WORD && e->ncached < CACHE_MAX && cache_add(e, w, len, h, m)) goto oom;
    return;
oom:
    e->oom = true;
}

/* ---- a part of the text ----------------------------------------------------- */

static void encode_bpe(encoder *e, const unsigned char *s, size_t len)
{
    for (size_t p = 0; p < len && !e->oom;) {
        size_t q = tg_bpe_word_end(s, len, p);
        encode_word(e, s + p, q - p);
        p = q;
    }
}

/* s[0..len) as valid UTF-8: s itself, or e->clean with U+FFFD for each
 * maximal ill-formed subpart; NULL when out of memory. */
static const unsigned char *valid_utf8(encoder *e, const unsigned char *s, size_t len, size_t *out_len)
{
    size_t i = 0;
    int sub;
    while (i < len) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        int k = tg_utf8_char(s + i, len - i, &sub);
        if (!k) break;
        i += (size_t)k;
    }
    *out_len = len;
    if (i == len) return s;
    /* at most 3 bytes per input byte (a lone byte becomes EF BF BD) */
    if (len > SIZE_MAX / 3 || !(e->clean = tg_malloc(3 * len))) return NULL;
    memcpy(e->clean, s, i);
    size_t o = i;
    while (i < len) {
        int k = tg_utf8_char(s + i, len - i, &sub);
        if (k) {
            memcpy(e->clean + o, s + i, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
        } else {
            memcpy(e->clean + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += (size_t)sub;
        }
    }
    *out_len = o;
    return e->clean;
}

static void encode_regex(encoder *e, const unsigned char *raw, size_t raw_len)
{
    size_t len;
    const unsigned char *s = valid_utf8(e, raw, raw_len, &len);
    if (!s) {
        e->oom = true;
        return;
    }
    pcre2_code *re = e->t->re;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    pcre2_jit_stack *js = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, NULL);
    if (!md || !mc || !js) {
        e->oom = true;
        goto done;
    }
    pcre2_jit_stack_assign(mc, NULL, js);
    for (size_t at = 0; at < len && !e->oom;) {
        int rc = pcre2_match(re, s, len, at, PCRE2_NO_UTF_CHECK, md, mc);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            snprintf(e->err, sizeof e->err, "the pattern failed at byte %zu: %s", at, (char *)msg);
            break;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t a = ov[0], b = ov[1];
        if (b == a) { /* an empty match: go on after the next character */
            int sub, k = b < len ? tg_utf8_char(s + b, len - b, &sub) : 1;
            at = b + (size_t)(k ? k : sub);
            continue;
        }
        encode_word(e, s + a, b - a);
        at = b;
    }
done:
    pcre2_jit_stack_free(js);
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
}

static void encoder_free(encoder *e)
{
    tg_free(e->ids);
    tg_free(e->slots);
    tg_free(e->pool);
    tg_free(e->sym);
    tg_merge_scratch_free(&e->ms);
    tg_free(e->clean);
}

/* ---- the whole text, split across threads ---------------------------------- */

typedef struct job {
    const tg_tokenizer *t;
    const unsigned char *s;
    size_t *cut; /* part k is [cut[k], cut[k + 1]) */
    encoder *enc;
} job;

static void run_parts(void *ctx, int64_t lo, int64_t hi)
{
    job *j = ctx;
    for (int64_t k = lo; k < hi; k++) {
        encoder *e = &j->enc[k];
        const unsigned char *s = j->s + j->cut[k];
        size_t len = j->cut[k + 1] - j->cut[k];
        if (j->t->kind == TG_TOK_TIKTOKEN) encode_regex(e, s, len);
        else encode_bpe(e, s, len);
        tg_free(e->clean);
        e->clean = NULL;
    }
}

/* A position >= pos where a tiktoken word surely starts (see the top). */
static size_t regex_cut(const unsigned char *s, size_t len, size_t pos)
{
    for (size_t p = pos < 1 ? 1 : pos; p + 1 < len; p++)
        if (s[p] == ' ' && s[p - 1] > 0x20 && s[p - 1] < 0x7f && ((s[p + 1] | 0x20) >= 'a' && (s[p + 1] | 0x20) <= 'z'))
            return p;
    return len;
}

int64_t tg_tok_encode(const tg_tokenizer *t, const void *text, size_t len, int32_t **ids, tg_error *err)
{
    if (ids) *ids = NULL;
    if (!t || !ids || (!text && len)) {
        tg_error_set(err, "tokenizer encode: NULL argument");
        return -1;
    }
    if (t->kind == TG_TOK_TIKTOKEN && !t->re) {
        tg_error_set(err, "tokenizer encode: the tiktoken tokenizer has no compiled pattern");
        return -1;
    }
    const unsigned char *s = text;
    if (t->kind == TG_TOK_SPM) return tg_spm_encode(t, s, len, ids, err); /* no words: text/spm.c */
    int parts = tg_num_threads();
    if ((size_t)parts > len / PART_MIN) parts = (int)(len / PART_MIN);
    /* regex_cut's reasoning holds for GPT-2's pattern; another one runs whole */
    if (t->kind == TG_TOK_TIKTOKEN && strcmp(t->pattern, TG_GPT2_PATTERN)) parts = 1;
    if (parts < 1) parts = 1;
    size_t cut[TG_MAX_THREADS + 1];
    int k = 0;
    cut[0] = 0;
    for (int p = 1; p < parts; p++) {
        size_t want = len / (size_t)parts * (size_t)p, c;
        if (want <= cut[k]) continue;
        c = t->kind == TG_TOK_TIKTOKEN ? regex_cut(s, len, want) : tg_bpe_word_start(s, len, want);
        if (c > cut[k] && c < len) cut[++k] = c;
    }
    cut[++k] = len;
    parts = k;
    encoder *enc = tg_calloc((size_t)parts, sizeof *enc);
    if (!enc) {
        tg_error_set(err, "tokenizer encode: out of memory");
        return -1;
    }
    for (int p = 0; p < parts; p++) enc[p].t = t;
    job j = {t, s, cut, enc};
    if (parts == 1) run_parts(&j, 0, 1);
    else tg_parallel_for(parts, 1, run_parts, &j);

    int64_t total = 0, rc = 0;
    for (int p = 0; p < parts; p++) {
        if (!rc && (enc[p].err[0] || enc[p].oom)) {
            tg_error_set(err, "tokenizer encode: %s", enc[p].err[0] ? enc[p].err : "out of memory");
            rc = -1;
        }
        total += (int64_t)enc[p].n;
    }
    int32_t *out = NULL;
    if (!rc && parts == 1) { /* hand over the part's array */
        out = enc[0].ids ? enc[0].ids : tg_malloc(sizeof *out);
        enc[0].ids = NULL;
    } else if (!rc) {
        out = tg_malloc((size_t)total * sizeof *out);
        for (int64_t p = 0, at = 0; out && p < parts; at += (int64_t)enc[p].n, p++)
            if (enc[p].n) memcpy(out + at, enc[p].ids, enc[p].n * sizeof *out);
    }
    if (!rc && !out) {
        tg_error_set(err, "tokenizer encode: out of memory");
        rc = -1;
    }
    for (int p = 0; p < parts; p++) encoder_free(&enc[p]);
    tg_free(enc);
    if (rc) {
        tg_free(out);
        return -1;
    }
    *ids = out;
    return total;
}

double tg_tok_bytes_per_token(const tg_tokenizer *t, const void *text, size_t len)
{
    int32_t *ids;
    int64_t n = tg_tok_encode(t, text, len, &ids, NULL);
    tg_free(ids);
    return n > 0 ? (double)len / (double)n : NAN;
}
