/* The tokenizer object: its pieces, built into the two tables encoding
 * and loading use, and what a caller may ask of it.
 *
 * pairs holds (a, b) -> c for every ordinary piece c and every split of
 * its bytes into two ordinary pieces a and b: encoding merges a and b
 * exactly when their concatenation is a piece, the rule of tiktoken,
 * SentencePiece's BPE and llama2.c. Each piece is split at every byte, so
 * building costs the sum of the piece lengths in lookups (GPT-2: about
 * 350 000, a few milliseconds).
 *
 * Those lookups must not hash the prefix and the suffix afresh at each
 * split: that is the square of the piece's length, and a crafted file
 * with one 1 MiB piece would never finish loading. The split
 * lookups use a table of their own keyed by a polynomial hash modulo
 * 2^61 - 1, whose values for every prefix and suffix of a piece come from
 * one pass over it; bytes are compared only where the hash and the length
 * match a piece. So building reads each piece's bytes a constant number
 * of times, plus the bytes of the pieces it actually splits into (and of
 * any rare hash collision): time proportional to the file.
 * t->build_work counts those bytes (test_text checks it). */
#include "text_internal.h"

#include <stdio.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"

/* ---- the pairs, in time proportional to the pieces' bytes ---------------- */

#define P61 ((uint64_t)0x1FFFFFFFFFFFFFFF) /* 2^61 - 1, a prime */
#define BASE ((uint64_t)0x16A09E667F3BCC9) /* < P61; sqrt(2)'s bits */

__extension__ typedef unsigned __int128 u128;

static uint64_t mulmod(uint64_t a, uint64_t b)
{
    u128 x = (u128)a * b;
    uint64_t r = (uint64_t)(x & P61) + (uint64_t)(x >> 61);
    return r >= P61 ? r - P61 : r;
}

static uint64_t addmod(uint64_t a, uint64_t b)
{
    uint64_t r = a + b;
    return r >= P61 ? r - P61 : r;
}

/* the ordinary pieces by (polynomial hash, length): slot = id + 1, 0 empty */
typedef struct split_table {
    uint64_t *hash;
    uint32_t *len;
    int32_t *slot;
    size_t mask;
} split_table;

static size_t split_at(uint64_t h, uint32_t len, size_t mask)
{
    uint64_t x = (h ^ (uint64_t)len << 40) * 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 20) & mask;
}

/* The id of the ordinary piece p[0..len) whose hash is h, or -1. */
static int32_t split_find(const unsigned char *bytes, const int64_t *off, const split_table *s, const unsigned char *p,
                          uint32_t len, uint64_t h, uint64_t *work)
{
    for (size_t i = split_at(h, len, s->mask);; i = (i + 1) & s->mask) {
        if (!s->slot[i]) return -1;
        if (s->hash[i] != h || s->len[i] != len) continue;
        const int32_t id = s->slot[i] - 1;
        *work += len;
        if (!memcmp(bytes + off[id], p, len)) return id;
    }
}

int tg_tok_build_pairs(tg_tokenizer *t, const unsigned char *bytes, const int64_t *off, size_t max_len,
                       const uint8_t *part, const uint8_t *target)
{
    size_t cap = 64;
    while (cap < 2 * (size_t)t->n) cap *= 2;
    split_table s = {tg_malloc(cap * sizeof *s.hash), tg_malloc(cap * sizeof *s.len), tg_calloc(cap, sizeof *s.slot),
                     cap - 1};
    uint64_t *pre = tg_malloc((max_len + 1) * sizeof *pre), *pw = tg_malloc((max_len + 1) * sizeof *pw);
    int rc = -1;
    if (!s.hash || !s.len || !s.slot || !pre || !pw) goto done;
    uint64_t work = 0;
    pw[0] = 1;
    for (size_t k = 1; k <= max_len; k++) pw[k] = mulmod(pw[k - 1], BASE);
    for (int32_t i = 0; i < t->n; i++) {
        if (part ? !part[i] : t->special[i]) continue;
        const unsigned char *p = bytes + off[i];
        const size_t len = (size_t)(off[i + 1] - off[i]);
        uint64_t h = 0;
        for (size_t k = 0; k < len; k++) h = addmod(mulmod(h, BASE), (uint64_t)p[k] + 1);
        work += len;
        size_t at = split_at(h, (uint32_t)len, s.mask);
        while (s.slot[at]) at = (at + 1) & s.mask;
        s.hash[at] = h;
        s.len[at] = (uint32_t)len;
        s.slot[at] = i + 1;
    }
    for (int32_t i = 0; i < t->n; i++) {
        const size_t len = (size_t)(off[i + 1] - off[i]);
        if ((target ? !target[i] : t->special[i]) || len < 2) continue;
        const unsigned char *p = bytes + off[i];
        pre[0] = 0; /* pre[k]: the hash of p[0..k) */
        for (size_t k = 0; k < len; k++) pre[k + 1] = addmod(mulmod(pre[k], BASE), (uint64_t)p[k] + 1);
        work += len;
        for (size_t k = 1; k < len; k++) {
            int32_t l = split_find(bytes, off, &s, p, (uint32_t)k, pre[k], &work);
            if (l < 0) continue;
            /* the suffix p[k..len): pre[len] - pre[k] * BASE^(len - k) */
            uint64_t hs = addmod(pre[len], P61 - mulmod(pre[k], pw[len - k]));
            int32_t r = split_find(bytes, off, &s, p + k, (uint32_t)(len - k), hs, &work);
            if (r < 0) continue;
            if (tg_pairmap_put(&t->pairs, (uint64_t)l << 32 | (uint64_t)r, i)) goto done;
        }
    }
    t->build_work = work;
    rc = 0;
done:
    tg_free(s.hash);
    tg_free(s.len);
    tg_free(s.slot);
    tg_free(pre);
    tg_free(pw);
    return rc;
}

int tg_tok_check_offsets(int32_t n, const int64_t *off, const char *what, tg_error *err)
{
    if (n < 1 || n > (1 << 30) || !off)
        return tg_error_set(err, "%s: %d ids: a vocabulary has 1 to 2^30", what, (int)n);
    if (off[0] != 0) return tg_error_set(err, "%s: the first piece does not start at offset 0", what);
    for (int32_t i = 0; i < n; i++)
        if (off[i + 1] < off[i] || off[i + 1] - off[i] > (1 << 30))
            return tg_error_set(err, "%s: id %d: offsets %lld..%lld are not a piece", what, (int)i, (long long)off[i],
                                (long long)off[i + 1]);
    return 0;
}

tg_tokenizer *tg_tok_build(int kind, int32_t n, const unsigned char *bytes, const int64_t *off, const uint8_t *special,
                           const char *what, tg_error *err)
{
    if (!bytes || !special) n = 0; /* refused below as no vocabulary */
    if (tg_tok_check_offsets(n, off, what, err)) return NULL;
    tg_tokenizer *t = tg_calloc(1, sizeof *t);
    if (!t) goto oom;
    t->kind = kind;
    t->n = n;
    t->bos = t->eos = t->unk = -1;
    size_t nb = (size_t)off[n];
    t->bytes = tg_malloc(nb);
    t->off = tg_malloc(((size_t)n + 1) * sizeof *t->off);
    t->special = tg_malloc((size_t)n);
    if (!t->bytes || !t->off || !t->special) goto oom;
    if (nb) memcpy(t->bytes, bytes, nb);
    memcpy(t->off, off, ((size_t)n + 1) * sizeof *off);
    for (int32_t i = 0; i < n; i++) t->special[i] = special[i] ? 1 : 0;
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;

    for (int32_t i = 0; i < n; i++) {
        size_t len = (size_t)(off[i + 1] - off[i]);
        if (len > t->max_piece) t->max_piece = len;
        if (t->special[i]) continue;
        const unsigned char *p = t->bytes + off[i];
        if (!len) {
            tg_error_set(err, "%s: id %d is an empty piece", what, (int)i);
            goto fail;
        }
        uint64_t h = tg_hash_bytes(p, len);
        int64_t e = tg_strmap_find(&t->pieces, p, (uint32_t)len, h);
        if (e >= 0) {
            tg_error_set(err, "%s: id %d repeats the piece of id %d", what, (int)i, (int)t->pieces.ents[e].val);
            goto fail;
        }
        if (tg_strmap_add(&t->pieces, p, (uint32_t)len, h, i) < 0) goto oom;
        if (len == 1) t->byte_id[p[0]] = i;
    }
    for (int b = 0; b < 256; b++)
        if (t->byte_id[b] < 0) {
            tg_error_set(err, "%s: no piece is the single byte 0x%02x, so some texts could not be encoded", what, b);
            goto fail;
        }
    if (tg_tok_build_pairs(t, t->bytes, t->off, t->max_piece, NULL, NULL)) goto oom;
    return t;
oom:
    tg_error_set(err, "%s: out of memory", what);
fail:
    tg_tok_free(t);
    return NULL;
}

/* tiktoken's patterns are written for Rust's regex crates, where \s is
 * Unicode's White_Space property. PCRE2's \s in UCP mode also matches
 * U+180E (MONGOLIAN VOWEL SEPARATOR, a format character since Unicode
 * 6.3), so " \u180E" split differently from tiktoken. Every \s and \S
 * outside an escape is compiled as \p{White_Space} and \P{White_Space}. */
static char *rust_spaces(const char *p)
{
    size_t n = strlen(p), k = 0;
    char *q = tg_malloc(8 * n + 1); /* "\s" (2 bytes) becomes 15 */
    if (!q) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\\' && (p[i + 1] == 's' || p[i + 1] == 'S')) {
            memcpy(q + k, p[i + 1] == 's' ? "\\p{White_Space}" : "\\P{White_Space}", 15);
            k += 15;
            i++;
        } else if (p[i] == '\\' && p[i + 1]) {
            q[k++] = p[i++];
            q[k++] = p[i];
        } else {
            q[k++] = p[i];
        }
    }
    q[k] = 0;
    return q;
}

/* s[0..n) for a message, in out (cap bytes): printable ASCII as it is
 * (" as \"), \n and \t, any other byte as \xNN; "..." when it is cut. */
static const char *escaped(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        char e[8];
        if (c == '"') snprintf(e, sizeof e, "\\\"");
        else if (c == '\n' || c == '\t') snprintf(e, sizeof e, "\\%c", c == '\n' ? 'n' : 't');
        else if (c >= 0x20 && c < 0x7f) snprintf(e, sizeof e, "%c", c);
        else snprintf(e, sizeof e, "\\x%02x", c);
        if (o + strlen(e) + 4 > cap) {
            snprintf(out + o, cap - o, "...");
            return out;
        }
        memcpy(out + o, e, strlen(e) + 1);
        o += strlen(e);
    }
    out[o] = 0;
    return out;
}

/* What a pattern other than GPT-2's would do wrong on a few texts, for
 * its refusal: encoding (text/encode.c) takes each match from where the
 * last one ended, so a text that no match starts at, or an empty match,
 * is text left out of every word. Writes "" to out when re covers them. */
static void uncovered(const pcre2_code *re, char *out, size_t cap)
{
    static const char *const TEXTS[] = {"a", "Hello, world!", "It's 42.\n\n\tend ",
                                        "na\xc3\xafve \xe2\x82\xac \xf0\x9f\x98\x80"};
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    char a[64], b[64];
    out[0] = 0;
    for (size_t k = 0; md && !out[0] && k < sizeof TEXTS / sizeof *TEXTS; k++) {
        const char *s = TEXTS[k];
        const size_t len = strlen(s);
        for (size_t at = 0; at < len;) {
            const int rc = pcre2_match(re, (PCRE2_SPTR)s, len, at, 0, md, NULL);
            if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
                PCRE2_UCHAR msg[160];
                pcre2_get_error_message(rc, msg, sizeof msg);
                snprintf(out, cap, "it fails on the text \"%s\": %s", escaped(s, len, a, sizeof a), (char *)msg);
                break;
            }
            const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            const size_t from = rc < 0 ? len : ov[0];
            if (from > at && from - at == len) {
                snprintf(out, cap, "it leaves all of the text \"%s\" out of every word, and encoding would drop it",
                         escaped(s, len, a, sizeof a));
                break;
            }
            if (from > at) {
                snprintf(out, cap, "it leaves \"%s\" of the text \"%s\" out of every word, and encoding would drop it",
                         escaped(s + at, from - at, a, sizeof a), escaped(s, len, b, sizeof b));
                break;
            }
            if (ov[1] == from) {
                snprintf(out, cap,
                         "it matches the empty string at byte %zu of the text \"%s\", and encoding would "
                         "drop the character there",
                         from, escaped(s, len, a, sizeof a));
                break;
            }
            at = ov[1];
        }
    }
    pcre2_match_data_free(md);
}

int tg_tok_compile_pattern(tg_tokenizer *t, const char *what, tg_error *err)
{
    int code;
    PCRE2_SIZE at;
    char *pat = rust_spaces(t->pattern);
    if (!pat) {
        tg_error_set(err, "%s: out of memory", what);
        return -1;
    }
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    tg_free(pat);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        tg_error_set(err, "%s: the pattern does not compile at offset %zu: %s", what, (size_t)at, (char *)msg);
        return -1;
    }
    /* Only GPT-2's: it puts every character in a word. Another pattern
     * could leave text out of every word, which encoding would drop
     * without a word (a pattern that matches only "a" would encode "b"
     * as no ids at all). */
    if (strcmp(t->pattern, TG_GPT2_PATTERN)) {
        char shown[160], why[320];
        uncovered(re, why, sizeof why);
        tg_error_set(err, "%s: the pattern \"%s\" is not GPT-2's, the only one tapegrad splits text with: %s", what,
                     escaped(t->pattern, strlen(t->pattern), shown, sizeof shown),
                     why[0] ? why : "another could leave text out of every word, and encoding would drop it");
        pcre2_code_free(re);
        return -1;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* without JIT, pcre2_match interprets it */
    t->re = re;
    return 0;
}

void tg_tok_free(tg_tokenizer *t)
{
    if (!t) return;
    tg_free(t->bytes);
    tg_free(t->off);
    tg_free(t->special);
    tg_free(t->merges);
    tg_free(t->pattern);
    tg_free(t->spelled);
    tg_free(t->soff);
    tg_free(t->scores);
    tg_free(t->types);
    tg_free(t->rank);
    tg_free(t->mergeable);
    tg_pairmap_free(&t->pairs);
    tg_strmap_free(&t->pieces);
    if (t->re) pcre2_code_free(t->re);
    tg_free(t);
}

/* ---- questions ----------------------------------------------------------- */

tg_tok_kind tg_tok_kind_of(const tg_tokenizer *t) { return t ? t->kind : TG_TOK_NONE; }
int32_t tg_tok_vocab_size(const tg_tokenizer *t) { return t ? t->n : 0; }
int32_t tg_tok_bos(const tg_tokenizer *t) { return t ? t->bos : -1; }
int32_t tg_tok_eos(const tg_tokenizer *t) { return t ? t->eos : -1; }
size_t tg_tok_max_piece_len(const tg_tokenizer *t) { return t ? t->max_piece : 0; }
int32_t tg_tok_n_merges(const tg_tokenizer *t) { return t ? t->n_merges : 0; }

bool tg_tok_is_special(const tg_tokenizer *t, int32_t id) { return t && id >= 0 && id < t->n && t->special[id]; }

const unsigned char *tg_tok_piece(const tg_tokenizer *t, int32_t id, size_t *len)
{
    if (len) *len = 0;
    if (!t || id < 0 || id >= t->n) return NULL;
    if (len) *len = (size_t)(t->off[id + 1] - t->off[id]);
    return t->bytes + t->off[id];
}

int32_t tg_tok_special_id(const tg_tokenizer *t, const char *s)
{
    if (!t || !s) return -1;
    size_t len = strlen(s);
    for (int32_t i = 0; i < t->n; i++)
        if (t->special[i] && (size_t)(t->off[i + 1] - t->off[i]) == len && !memcmp(t->bytes + t->off[i], s, len))
            return i;
    return -1;
}

int32_t tg_tok_merge(const tg_tokenizer *t, int32_t k, int32_t *left, int32_t *right)
{
    if (!t || !t->merges || k < 0 || k >= t->n_merges) return -1;
    if (left) *left = t->merges[2 * k];
    if (right) *right = t->merges[2 * k + 1];
    return t->n - t->n_merges + k;
}
