/* GPT-2's byte-level BPE as its files spell it (formats/gpt2_internal.h):
 * the printable stand-ins for bytes, a vocabulary and merges read as
 * tiktoken ranks, and the merge each piece of a tiktoken tokenizer is
 * made by (which the Hugging Face and GGUF writers list, and the GGUF
 * reader checks). */
#include "gpt2_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/stb_ds_internal.h"
#include "../text/text_internal.h"

typedef struct str_ix {
    char *key;
    int value;
} str_ix; /* stb_ds string map */

/* GPT-2's printable stand-ins for bytes: bytes '!'..'~', 0xA1..0xAC and
 * 0xAE..0xFF stand for themselves, the other 68 for U+0100.. in order. */
void tg_gpt2_byte_chars(uint32_t cp_of[256])
{
    int n = 0;
    for (int b = 0; b < 256; b++) {
        const bool self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        cp_of[b] = self ? (uint32_t)b : (uint32_t)(256 + n++);
    }
}

/* GPT-2's stand-ins, both ways: cp_of[byte], byte_of[code point] (-1). */
void tg_gpt2_byte_tables(uint32_t cp_of[256], int16_t byte_of[324])
{
    tg_gpt2_byte_chars(cp_of);
    for (int i = 0; i < 324; i++) byte_of[i] = -1;
    for (int b = 0; b < 256; b++) byte_of[cp_of[b]] = (int16_t)b;
}

/* The bytes a vocabulary string stands for (UTF-8 of stand-ins), into out
 * (room for strlen(s) bytes): their count, or -1 for a character that
 * stands for no byte. */
int64_t tg_gpt2_unbyte(const char *s, const int16_t byte_of[324], unsigned char *out)
{
    int64_t n = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t c;
        if (p[0] < 0x80) c = *p++;
        else if ((p[0] & 0xE0) == 0xC0 && (p[1] & 0xC0) == 0x80)
            c = (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F), p += 2;
        else return -1;
        if (c >= 324 || byte_of[c] < 0) return -1;
        out[n++] = (unsigned char)byte_of[c];
    }
    return n;
}

/* The tokenizer of a vocabulary (string -> id) and its merges ("a b"
 * strings or [a, b] pairs), when they are GPT-2's kind: ids 0..n-1 for
 * pieces and n for <|endoftext|>, every single byte a piece, each merge
 * joining two pieces into one whose id is larger than every earlier
 * merge's, and every longer piece made by one. Then merging the pair of
 * lowest merge number (the tokenizers library's rule) and merging the pair
 * whose piece has the lowest id (tiktoken's, tapegrad's) are the same. */
tg_tokenizer *tg_gpt2_tokenizer(const cJSON *vocab, const cJSON *merges, const char *what, tg_error *err)
{
    uint32_t cp_of[256];
    int16_t byte_of[324];
    tg_gpt2_byte_tables(cp_of, byte_of);
    const int n_all = cJSON_GetArraySize(vocab);
    tg_tokenizer *t = NULL;
    if (n_all < 257 || n_all > (1 << 24)) {
        tg_error_set(err, "%s: %d vocabulary entries; GPT-2's kind has 256 bytes, merges and <|endoftext|>", what,
                     n_all);
        return NULL;
    }
    const int32_t n = n_all - 1; /* pieces; <|endoftext|> is id n */
    int64_t *off = tg_calloc((size_t)n + 1, sizeof *off), *start = tg_malloc(((size_t)n + 1) * sizeof *start);
    int32_t *len = tg_malloc((size_t)n * sizeof *len);
    size_t total = 0;
    for (const cJSON *e = vocab->child; e; e = e->next) total += strlen(e->string);
    unsigned char *raw = tg_malloc(total + 1), *bytes = tg_malloc(total + 1);
    int32_t *made = NULL;
    str_ix *id_of = NULL; /* vocabulary string -> id, for the merges (cJSON's lookup is a linear scan) */
    stbds_sh_new_strdup(id_of);
    if (!off || !start || !len || !raw || !bytes) goto oom;
    for (int32_t i = 0; i < n; i++) len[i] = -1;
    bool eot = false;
    size_t at = 0;
    char shown[TG_SHOWN_SIZE];
    for (const cJSON *e = vocab->child; e; e = e->next) {
        const double d = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (!(d >= 0 && d <= n && d == floor(d))) {
            tg_error_set(err, "%s: '%s' has id %s, not one of 0..%d", what, tg_shown(e->string, shown),
                         cJSON_IsNumber(e) ? "out of range" : "that is not a number", (int)n);
            goto fail;
        }
        const int32_t id = (int32_t)d;
        if (id == n) {
            if (strcmp(e->string, "<|endoftext|>")) {
                tg_error_set(err,
                             "%s: the last id %d is '%s', not <|endoftext|> (GPT-2's tokenizer is "
                             "the one taken)",
                             what, (int)n, tg_shown(e->string, shown));
                goto fail;
            }
            eot = true;
            continue;
        }
        if (len[id] >= 0) {
            tg_error_set(err, "%s: id %d is given twice", what, (int)id);
            goto fail;
        }
        const int64_t k = tg_gpt2_unbyte(e->string, byte_of, raw + at);
        if (k <= 0) {
            tg_error_set(err, "%s: '%s' (id %d) is not GPT-2's byte-level form of some bytes", what,
                         tg_shown(e->string, shown), (int)id);
            goto fail;
        }
        start[id] = (int64_t)at;
        len[id] = (int32_t)k;
        stbds_shput(id_of, e->string, (int)id);
        at += (size_t)k;
    }
    if (!eot) {
        tg_error_set(err, "%s: no <|endoftext|> with id %d", what, (int)n);
        goto fail;
    }
    int64_t o = 0;
    for (int32_t i = 0; i < n; i++) { /* each id once among n entries: none is missing */
        off[i] = o;
        memcpy(bytes + o, raw + start[i], (size_t)len[i]);
        o += len[i];
    }
    off[n] = o;
    if (!(t = tg_tok_tiktoken_new(n, bytes, off, what, err))) goto fail;
    /* the merges: each makes a longer piece than any earlier one's id, each longer piece made once */
    if (!cJSON_IsArray(merges)) {
        tg_error_set(err, "%s: the merges are not a list", what);
        goto fail;
    }
    if (!(made = tg_calloc((size_t)n, sizeof *made))) goto oom;
    int32_t last = -1, k = 0;
    for (const cJSON *m = merges->child; m; m = m->next, k++) {
        const char *a = NULL, *b = NULL;
        char pair[2048];
        if (cJSON_IsString(m)) {
            const char *sp = strchr(m->valuestring, ' ');
            if (sp && strlen(m->valuestring) < sizeof pair) {
                memcpy(pair, m->valuestring, strlen(m->valuestring) + 1);
                pair[sp - m->valuestring] = 0;
                a = pair, b = pair + (sp - m->valuestring) + 1;
            }
        } else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) &&
                   cJSON_IsString(m->child->next)) {
            a = m->child->valuestring, b = m->child->next->valuestring;
        }
        const ptrdiff_t ia = a ? stbds_shgeti(id_of, a) : -1, ib = b ? stbds_shgeti(id_of, b) : -1;
        const int32_t ida = ia >= 0 ? id_of[ia].value : -1, idb = ib >= 0 ? id_of[ib].value : -1;
        int32_t r = -1;
        if (ida >= 0 && ida < n && idb >= 0 && idb < n)
            r = tg_pairmap_get(&t->pairs, (uint64_t)ida << 32 | (uint32_t)idb);
        if (r < 0) {
            tg_error_set(err, "%s: merge %d does not join two pieces into a third", what, (int)k);
            goto fail;
        }
        if (r <= last || made[r]) {
            tg_error_set(err,
                         "%s: merge %d makes id %d, not above merge %d's %d: the merges are not in "
                         "the order of their pieces' ids, as GPT-2's are (tapegrad merges by id)",
                         what, (int)k, (int)r, (int)k - 1, (int)last);
            goto fail;
        }
        made[r] = 1;
        last = r;
    }
    for (int32_t i = 0; i < n; i++)
        if (off[i + 1] - off[i] > 1 && !made[i]) {
            tg_error_set(err, "%s: piece %d is made by no merge", what, (int)i);
            goto fail;
        }
    goto done;
oom:
    tg_error_set(err, "%s: out of memory", what);
fail:
    tg_tok_free(t);
    t = NULL;
done:
    tg_free(off);
    tg_free(start);
    tg_free(len);
    tg_free(raw);
    tg_free(bytes);
    tg_free(made);
    stbds_shfree(id_of);
    return t;
}

/* GPT-2's byte-level string of some bytes (UTF-8 of the stand-ins). */
void tg_gpt2_byte_string(const unsigned char *p, size_t n, const uint32_t cp_of[256], char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const uint32_t c = cp_of[p[i]];
        if (c < 0x80) out[o++] = (char)c;
        else out[o++] = (char)(0xC0 | c >> 6), out[o++] = (char)(0x80 | (c & 0x3F));
    }
    out[o] = 0;
}

/* ---- the merge each piece is made by ---------------------------------------- */

/* tiktoken's rule on piece r's bytes with the pieces below r: again and
 * again the adjacent pair whose piece has the lowest id (the leftmost of
 * equal ones) is merged, until no pair below r is left. Scanning the
 * parts afresh for each merge costs the square of the piece's length, and
 * a file's every piece the cube of its longest chain (a 4 MB tokenizer.json
 * of "aa", "aaa", ...: 3.6 s). Here the candidate pairs wait in a heap
 * keyed by (id, position), so each merge costs a pop and two pushes: a
 * piece of n bytes costs n log n, a file in proportion to its bytes.
 *
 * A part is known by the byte it starts at: parts[i] its id (-1 once it
 * is merged into the part on its left), the next part starts after its
 * bytes, prev[i] is where the part before it starts. A heap entry of the
 * pair (x, y) at i is still a candidate while parts i and the next are x
 * and y; older entries are skipped when they come up. */

typedef struct cand {
    int32_t id, at, x, y;
} cand;

static bool cand_less(cand p, cand q) { return p.id != q.id ? p.id < q.id : p.at < q.at; }

static void heap_push(cand *h, int64_t *n, cand c)
{
    int64_t i = (*n)++;
    for (; i > 0 && cand_less(c, h[(i - 1) / 2]); i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
    h[i] = c;
}

static cand heap_pop(cand *h, int64_t *n)
{
    const cand top = h[0], last = h[--*n];
    int64_t i = 0;
    for (int64_t k; (k = 2 * i + 1) < *n; i = k) {
        if (k + 1 < *n && cand_less(h[k + 1], h[k])) k++;
        if (!cand_less(h[k], last)) break;
        h[i] = h[k];
    }
    h[i] = last;
    return top;
}

static int64_t piece_len(const tg_tokenizer *t, int32_t id) { return t->off[id + 1] - t->off[id]; }

/* The pair of the parts starting at i and at the one after it, as a
 * candidate when it makes a piece below r. */
static void push_pair(const tg_tokenizer *t, const int32_t *parts, int64_t n, int32_t r, int64_t i, cand *h,
                      int64_t *nh)
{
    const int64_t j = i + piece_len(t, parts[i]);
    if (j >= n) return;
    const int32_t id = tg_pairmap_get(&t->pairs, (uint64_t)parts[i] << 32 | (uint32_t)parts[j]);
    if (id >= 0 && id < r) heap_push(h, nh, (cand){id, (int32_t)i, parts[i], parts[j]});
}

int tg_gpt2_tiktoken_split(const tg_tokenizer *t, int32_t r, int32_t *parts, int32_t *a, int32_t *b)
{
    const int64_t n = piece_len(t, r);
    if (n < 2) return -1;
    int32_t *prev = tg_malloc((size_t)n * sizeof *prev);
    cand *h = tg_malloc((size_t)(3 * n) * sizeof *h); /* n - 1 pairs, then two more per merge */
    if (!prev || !h) {
        tg_free(prev);
        tg_free(h);
        return -2;
    }
    int64_t nh = 0, left = n;
    for (int64_t i = 0; i < n; i++) parts[i] = t->byte_id[t->bytes[t->off[r] + i]], prev[i] = (int32_t)i - 1;
    for (int64_t i = 0; i + 1 < n; i++) push_pair(t, parts, n, r, i, h, &nh);
    while (nh) {
        const cand c = heap_pop(h, &nh);
        const int64_t i = c.at, j = i + piece_len(t, c.x);
        if (parts[i] != c.x || parts[j] != c.y) continue; /* part i (then also the next) changed since */
        parts[i] = c.id;
        parts[j] = -1;
        left--;
        const int64_t k = i + piece_len(t, c.id);
        if (k < n) prev[k] = (int32_t)i;
        push_pair(t, parts, n, r, i, h, &nh);
        if (prev[i] >= 0) push_pair(t, parts, n, r, prev[i], h, &nh);
    }
    tg_free(prev);
    tg_free(h);
    const int64_t j = piece_len(t, parts[0]);
    if (left != 2 || tg_pairmap_get(&t->pairs, (uint64_t)parts[0] << 32 | (uint32_t)parts[j]) != r) return -1;
    *a = parts[0], *b = parts[j];
    return 0;
}
