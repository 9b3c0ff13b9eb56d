/* The tokenizer files of a Hugging Face model directory (tokenizer.json,
 * or GPT-2's vocab.json + merges.txt) to and from tapegrad's tokenizers.
 *
 * tokenizer.json is the tokenizers library's pipeline: added tokens
 * (matched in the text first), a normalizer, a pre-tokenizer (cuts the
 * text into words), the model (here always BPE: each word's characters,
 * or with byte_fallback the "<0xXX>" pieces of a character not in the
 * vocabulary, then merging the listed pair that comes first in the merges
 * list, again and again), a post-processor (BOS), a decoder. Each of
 * tapegrad's tokenizers is one such pipeline:
 *
 *   GPT-2's tiktoken ranks   ByteLevel with GPT-2's regex (transformers' GPT-2 file)
 *   tapegrad's BPE           Split at tapegrad's word starts, then ByteLevel
 *                            without a regex (bytes as GPT-2's stand-ins); a
 *                            Llama's: Prepend(' ') and a BOS template
 *   TG_TOK_SPM               no pre-tokenizer, Prepend / Replace(' ', U+2581)
 *                            as its options say, byte_fallback (as transformers
 *                            writes a Llama's); a Llama's with a BOS template
 *   llama2.c's bytes         byte_fallback over <unk> <s> </s> and "<0xXX>",
 *                            Prepend(' '), BOS
 *   a byte vocabulary        ByteLevel without a regex, no merges
 *
 * The merges. tapegrad merges the adjacent pair whose concatenation is the
 * piece of best rank (BPE and tiktoken: the lowest id; TG_TOK_SPM: the
 * highest score), over every way a piece splits into two pieces; the
 * library merges the listed pair that comes first. So the merges written
 * are every split of every piece into two pieces, in the order of their
 * piece's rank, and a file is read only when its merges are that (every
 * split listed, each piece's merges together, in rank order); scores
 * tokenizer.json does not hold come back as -k, k the place of a piece's
 * first merge. The one choice left is the order of one piece's own
 * splits, which matters only when two of them are candidates at once
 * (docs/formats.md). */
#define _POSIX_C_SOURCE 200809L
#include "hf_tokenizer_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/stb_ds_internal.h"
#include "../text/text_internal.h"
#include "gpt2_internal.h"
#include "hf_files_internal.h"

typedef struct str_ix { char *key; int value; } str_ix;   /* stb_ds string map */

/* ---- reading tokenizer.json: the parts around the model -------------------------- */

/* A merge's two strings ("a b", or ["a", "b"]), into *a and *b; buf holds
 * a copy of a string merge. false when m is neither. */
static bool merge_parts(const cJSON *m, char *buf, size_t cap, const char **a, const char **b)
{
    *a = *b = NULL;
    if (cJSON_IsString(m)) {
        const char *sp = strchr(m->valuestring, ' ');
        const size_t n = strlen(m->valuestring);
        if (!sp || n >= cap) return false;
        memcpy(buf, m->valuestring, n + 1);
        buf[sp - m->valuestring] = 0;
        *a = buf, *b = buf + (sp - m->valuestring) + 1;
        return true;
    }
    if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) && cJSON_IsString(m->child->next)) {
        *a = m->child->valuestring, *b = m->child->next->valuestring;
        return true;
    }
    return false;
}

static const char *type_of(const cJSON *o)
{
    const cJSON *t = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "type") : NULL;
    return cJSON_IsString(t) ? t->valuestring : "";
}

static bool str_is(const cJSON *o, const char *key, const char *want)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && !strcmp(v->valuestring, want);
}

#define U2581 "\xe2\x96\x81"

/* What the normalizer and a Metaspace pre-tokenizer do before the model:
 * prepend 0 nothing, ' ' or U+2581 (before a text that is not empty);
 * spaces as U+2581 or not. The forms taken: null, Prepend(p),
 * Replace(" ", U+2581), a Sequence of Prepend then Replace (transformers'
 * Llama), and the pre-tokenizer Metaspace without splitting. */
typedef struct hf_text_rule {
    char prepend;      /* 0, ' ', or 'u' for U+2581 */
    bool u2581;        /* spaces become U+2581 */
    bool metaspace;    /* Metaspace's prepend (not before a text that starts with a space) */
} hf_text_rule;

static int text_rule(const cJSON *norm, const cJSON *pre, hf_text_rule *r, tg_error *err)
{
    memset(r, 0, sizeof *r);
    const cJSON *one[2] = {NULL, NULL};
    int n = 0;
    if (norm && !cJSON_IsNull(norm)) {
        if (!strcmp(type_of(norm), "Sequence")) {
            const cJSON *list = cJSON_GetObjectItemCaseSensitive(norm, "normalizers");
            const int k = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
            if (k < 0 || k > 2)
                return tg_error_set(err, "hf: tokenizer.json: the normalizer Sequence is not Prepend and/or "
                                         "Replace(' ', '\u2581'), the normalizers tapegrad's tokenizers have");
            for (const cJSON *e = list->child; e; e = e->next) one[n++] = e;
        } else {
            one[n++] = norm;
        }
    }
    for (int k = 0; k < n; k++) {
        const char *ty = type_of(one[k]);
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(one[k], "prepend");
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(one[k], "pattern");
        const cJSON *s = cJSON_IsObject(pat) ? cJSON_GetObjectItemCaseSensitive(pat, "String") : NULL;
        if (!strcmp(ty, "Prepend") && !r->prepend && !r->u2581 && cJSON_IsString(p) &&
            (!strcmp(p->valuestring, " ") || !strcmp(p->valuestring, U2581))) {
            r->prepend = p->valuestring[0] == ' ' ? ' ' : 'u';
        } else if (!strcmp(ty, "Replace") && !r->u2581 && cJSON_IsString(s) && !strcmp(s->valuestring, " ") &&
                   str_is(one[k], "content", U2581)) {
            r->u2581 = true;
        } else {
            char shown[TG_SHOWN_SIZE];
            return tg_error_set(err, "hf: tokenizer.json: the normalizer '%s' is not one tapegrad's tokenizers "
                                "have (Prepend(' ' or '\u2581'), then Replace(' ', '\u2581'))", tg_shown(ty, shown));
        }
    }
    if ((r->prepend == 'u') != (r->u2581 && r->prepend))
        return tg_error_set(err, "hf: tokenizer.json: the normalizer prepends '%s' but %s spaces with '\u2581'",
                            r->prepend == 'u' ? "\u2581" : " ", r->u2581 ? "replaces" : "does not replace");
    if (pre && !cJSON_IsNull(pre) && !strcmp(type_of(pre), "Metaspace")) {
        const cJSON *split = cJSON_GetObjectItemCaseSensitive(pre, "split");
        const cJSON *scheme = cJSON_GetObjectItemCaseSensitive(pre, "prepend_scheme");
        const cJSON *legacy = cJSON_GetObjectItemCaseSensitive(pre, "add_prefix_space");
        if (n || !str_is(pre, "replacement", U2581) || cJSON_IsTrue(split) || !split)
            return tg_error_set(err, "hf: tokenizer.json: the Metaspace pre-tokenizer is not '\u2581' with "
                                "split false after no normalizer (splitting the text at spaces, tapegrad's pieces with "
                                     "scores never do)");
        r->u2581 = true;
        if (cJSON_IsString(scheme) ? strcmp(scheme->valuestring, "never") != 0 : cJSON_IsTrue(legacy)) {
            r->prepend = 'u';
            r->metaspace = true;
        }
    }
    return 0;
}

/* The BOS the post-processor puts before a text: -1 for none (no
 * post-processor, GPT-2's ByteLevel one, or a template of the text alone),
 * or its id; a template adding anything else is refused. */
static int template_bos(const cJSON *post, str_ix *vocab, int32_t *bos, tg_error *err)
{
    *bos = -1;
    if (!post || cJSON_IsNull(post) || !strcmp(type_of(post), "ByteLevel")) return 0;
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(post, "single");
    const int n = cJSON_IsArray(single) ? cJSON_GetArraySize(single) : 0;
    const cJSON *first = n ? single->child : NULL, *last = n ? cJSON_GetArrayItem(single, n - 1) : NULL;
    const cJSON *sp = first ? cJSON_GetObjectItemCaseSensitive(first, "SpecialToken") : NULL;
    const cJSON *seq = last ? cJSON_GetObjectItemCaseSensitive(last, "Sequence") : NULL;
    const cJSON *sid = sp ? cJSON_GetObjectItemCaseSensitive(sp, "id") : NULL;
    if (strcmp(type_of(post), "TemplateProcessing") || !seq || !(n == 1 || (n == 2 && cJSON_IsString(sid))))
        return tg_error_set(err, "hf: tokenizer.json: the post-processor '%s' adds tokens tapegrad does not add "
                                 "(it takes a template of a BOS, or nothing, before the text)", type_of(post));
    if (n == 1) return 0;
    const ptrdiff_t i = stbds_shgeti(vocab, sid->valuestring);
    if (i < 0) {
        char shown[TG_SHOWN_SIZE];
        return tg_error_set(err, "hf: tokenizer.json: the post-processor's '%s' is not in the vocabulary",
                            tg_shown(sid->valuestring, shown));
    }
    *bos = vocab[i].value;
    return 0;
}

/* The model's vocabulary: string -> id, ids 0..n-1 each once; into *map
 * and names[id] (pointers into the JSON). */
static int read_vocab(const cJSON *model, int32_t max, str_ix **map, const char ***names, int32_t *n, tg_error *err)
{
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!cJSON_IsObject(vocab)) return tg_error_set(err, "hf: tokenizer.json: model.vocab is not an object");
    const int k = cJSON_GetArraySize(vocab);
    if (k < 1 || k > max)
        return tg_error_set(err, "hf: tokenizer.json: %d vocabulary entries (this kind takes 1 to %d)", k, (int)max);
    *n = k;
    *names = tg_calloc((size_t)k, sizeof **names);
    if (!*names) return tg_error_set(err, "hf: out of memory");
    stbds_sh_new_strdup(*map);
    char shown[TG_SHOWN_SIZE];
    for (const cJSON *e = vocab->child; e; e = e->next) {
        const double d = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (!(d >= 0 && d < k && d == floor(d)))
            return tg_error_set(err, "hf: tokenizer.json: '%s' has an id that is not one of 0..%d",
                                tg_shown(e->string, shown), k - 1);
        const int32_t id = (int32_t)d;
        if ((*names)[id]) return tg_error_set(err, "hf: tokenizer.json: id %d is given twice", (int)id);
        if (stbds_shgeti(*map, e->string) >= 0)
            return tg_error_set(err, "hf: tokenizer.json: '%s' is in the vocabulary twice",
                                tg_shown(e->string, shown));
        (*names)[id] = e->string;
        stbds_shput(*map, e->string, (int)id);
    }
    return 0;
}

/* The added tokens: each must be a vocabulary entry and special (matched
 * in the text before the model, as tapegrad never does for an ordinary
 * piece). special[id] set for each. */
static int read_added(const cJSON *added, str_ix *map, uint8_t *special, tg_error *err)
{
    char shown[TG_SHOWN_SIZE];
    for (const cJSON *a = cJSON_IsArray(added) ? added->child : NULL; a; a = a->next) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(a, "content"), *id = cJSON_GetObjectItemCaseSensitive(a, "id");
        const ptrdiff_t i = cJSON_IsString(c) ? stbds_shgeti(map, c->valuestring) : -1;
        if (i < 0 || !cJSON_IsNumber(id) || id->valuedouble != map[i].value)
            return tg_error_set(err, "hf: tokenizer.json: the added token '%s' is not the vocabulary's entry of "
                                     "its id", cJSON_IsString(c) ? tg_shown(c->valuestring, shown) : "?");
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "special")))
            return tg_error_set(err, "hf: tokenizer.json: the added token '%s' is not special: the tokenizers "
                                     "library matches it in the text before the model, which tapegrad does not do",
                                tg_shown(c->valuestring, shown));
        special[map[i].value] = 1;
    }
    return 0;
}

static int32_t vocab_id(str_ix *map, const char *s)
{
    const ptrdiff_t i = stbds_shgeti(map, s);
    return i < 0 ? -1 : map[i].value;
}

/* Each merge's pieces (a, b) and what it makes, c = a b: into mc[3 k]. */
static int read_merges(const cJSON *model, str_ix *map, int32_t **mc, int32_t *m, tg_error *err)
{
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (merges && !cJSON_IsArray(merges)) return tg_error_set(err, "hf: tokenizer.json: model.merges is not a list");
    const int k = merges ? cJSON_GetArraySize(merges) : 0;
    if (k > (1 << 24)) return tg_error_set(err, "hf: tokenizer.json: %d merges, more than 2^24", k);
    *m = k;
    if (!(*mc = tg_malloc(((size_t)k * 3 + 1) * sizeof **mc))) return tg_error_set(err, "hf: out of memory");
    int32_t i = 0;
    for (const cJSON *e = merges ? merges->child : NULL; e; e = e->next, i++) {
        char buf[1024], ab[2048];
        const char *a, *b;
        const bool ok = merge_parts(e, buf, sizeof buf, &a, &b) && strlen(a) + strlen(b) < sizeof ab;
        if (ok) {
            const size_t la = strlen(a);
            memcpy(ab, a, la);
            memcpy(ab + la, b, strlen(b) + 1);
        }
        const int32_t x = ok ? vocab_id(map, a) : -1, y = ok ? vocab_id(map, b) : -1, z = ok ? vocab_id(map, ab) : -1;
        if (x < 0 || y < 0 || z < 0)
            return tg_error_set(err, "hf: tokenizer.json: merge %d does not join two vocabulary entries into a "
                                     "third", (int)i);
        (*mc)[3 * i] = x, (*mc)[3 * i + 1] = y, (*mc)[3 * i + 2] = z;
    }
    return 0;
}

/* The tapegrad rule (merge the pair whose piece ranks first, over every
 * split of each piece) is the tokenizers library's (merge the listed pair
 * that comes first) when the merges listed are every split of the pieces
 * they make into two text pieces, and each piece's merges are together
 * in the list, in the order of rank(piece). t's pairs are those splits. */
static int same_merges(const tg_tokenizer *t, const int32_t *mc, int32_t m, const char *const *names, bool by_id,
                       tg_error *err)
{
    char s1[TG_SHOWN_SIZE], s2[TG_SHOWN_SIZE], s3[TG_SHOWN_SIZE];
    int32_t last = -1;
    uint8_t *done = tg_calloc((size_t)t->n, 1);
    tg_pairmap listed = {0};   /* (a, b) -> its place in the list */
    if (!done) return tg_error_set(err, "hf: out of memory");
    int rc = 0;
    for (int32_t k = 0; k < m && !rc; k++) {
        const int32_t a = mc[3 * k], b = mc[3 * k + 1], c = mc[3 * k + 2];
        const uint64_t key = (uint64_t)a << 32 | (uint32_t)b;
        const int32_t twice = tg_pairmap_get(&listed, key);
        if (tg_pairmap_get(&t->pairs, key) != c)
            rc = tg_error_set(err, "hf: tokenizer.json: merge %d ('%s' '%s') joins pieces tapegrad does not "
                                   "merge (a special, a byte piece, or a piece no merge makes)", (int)k,
                              tg_shown(names[a], s1), tg_shown(names[b], s2));
        else if (twice >= 0)
            rc = tg_error_set(err, "hf: tokenizer.json: merge %d repeats merge %d", (int)k, (int)twice);
        else if (c != last && done[c])
            rc = tg_error_set(err, "hf: tokenizer.json: the merges making '%s' are not together in the list "
                                   "(merge %d): tapegrad ranks a piece, not each pair", tg_shown(names[c], s1), (int)k);
        else if (by_id && c < last)
            rc = tg_error_set(err, "hf: tokenizer.json: merge %d makes id %d after a merge made id %d: tapegrad's "
                                   "BPE merges the piece of lowest id first", (int)k, (int)c, (int)last);
        else if (tg_pairmap_put(&listed, key, k))
            rc = tg_error_set(err, "hf: out of memory");
        done[c] = 1;
        last = c;
    }
    /* each listed merge is one of t's pairs, once: the count tells whether a split is left out */
    for (size_t i = 0; !rc && (size_t)m != t->pairs.n && i < t->pairs.cap; i++) {
        if (t->pairs.keys[i] == UINT64_MAX || tg_pairmap_get(&listed, t->pairs.keys[i]) >= 0) continue;
        const int32_t a = (int32_t)(t->pairs.keys[i] >> 32), b = (int32_t)(t->pairs.keys[i] & 0xffffffffu);
        rc = tg_error_set(err,
                          "hf: tokenizer.json: no merge joins '%s' and '%s', which make '%s': tapegrad "
                          "merges every split of a piece into two pieces",
                          tg_shown(names[a], s1), tg_shown(names[b], s2), tg_shown(names[t->pairs.vals[i]], s3));
    }
    tg_pairmap_free(&listed);
    tg_free(done);
    return rc;
}

/* A Llama-style tokenizer.json (a BPE model with byte_fallback, spaces as
 * U+2581 or ' ', no pre-tokenizer splitting) as TG_TOK_SPM: pieces "<0xXX>"
 * are byte pieces, special added tokens control pieces (the unk_token
 * unknown), the rest normal; piece c made by merges scores -k, k the
 * place of its first merge, and the pieces no merge makes score below
 * merge_floor (never made, as in the library). llama2.c's byte vocabulary
 * (<unk>, <s>, </s>, the 256 bytes, no merges, ' ' then the text, BOS)
 * comes back as TG_VOCAB_LLAMA2C. */
static int spm_from_json(const cJSON *j, const cJSON *model, bool llama, int32_t bos_id, int32_t eos_id,
                         tg_vocab *v, char *notice, size_t notice_len, tg_error *err)
{
    str_ix *map = NULL;
    const char **names = NULL;
    int32_t n = 0, m = 0, *mc = NULL, bos = -1;
    uint8_t *special = NULL, *types = NULL;
    float *scores = NULL;
    int64_t *off = NULL;
    unsigned char *pieces = NULL;
    tg_tokenizer *t = NULL;
    hf_text_rule r;
    int rc = -1;
    char shown[TG_SHOWN_SIZE];
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(j, "pre_tokenizer");
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    if (pre && !cJSON_IsNull(pre) && strcmp(type_of(pre), "Metaspace")) {
        tg_error_set(err, "hf: tokenizer.json: the pre-tokenizer '%s' splits the text, which tapegrad's pieces "
                          "with scores never do", tg_shown(type_of(pre), shown));
        goto out;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "ignore_merges"))) {
        tg_error_set(err, "hf: tokenizer.json: model.ignore_merges is true (a whole text that is a piece is one "
                          "token), which tapegrad's pieces with scores do not do");
        goto out;
    }
    if (text_rule(cJSON_GetObjectItemCaseSensitive(j, "normalizer"), pre, &r, err) ||
        read_vocab(model, 1 << 24, &map, &names, &n, err) ||
        template_bos(cJSON_GetObjectItemCaseSensitive(j, "post_processor"), map, &bos, err) ||
        read_merges(model, map, &mc, &m, err))
        goto out;
    if (llama != (bos >= 0)) {
        tg_error_set(err, "hf: tokenizer.json: %s", llama ? "the post-processor adds no BOS, with which tapegrad's "
                          "Llama starts every text" : "the post-processor adds a BOS, which tapegrad's GPT does not");
        goto out;
    }
    /* llama2.c's byte vocabulary */
    bool bytes_only = n == 259 && m == 0 && r.prepend == ' ' && !r.u2581 && bos == 1 && !strcmp(names[0], "<unk>") &&
                      !strcmp(names[1], "<s>") && !strcmp(names[2], "</s>");
    for (int b = 0; bytes_only && b < 256; b++) {
        char want[8];
        snprintf(want, sizeof want, "<0x%02X>", b);
        bytes_only = !strcmp(names[3 + b], want);
    }
    if (bytes_only) {
        tg_vocab_llama2c(v);
        rc = 0;
        goto out;
    }
    special = tg_calloc((size_t)n, 1), types = tg_malloc((size_t)n), scores = tg_malloc((size_t)n * sizeof *scores);
    off = tg_malloc(((size_t)n + 1) * sizeof *off);
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) total += strlen(names[i]);
    pieces = tg_malloc(total + 1);
    if (!special || !types || !scores || !off || !pieces) goto oom;
    if (read_added(cJSON_GetObjectItemCaseSensitive(j, "added_tokens"), map, special, err)) goto out;
    /* scores: a piece's first merge's place */
    for (int32_t i = 0; i < n; i++) scores[i] = NAN;
    for (int32_t k = 0; k < m; k++)
        if (isnan(scores[mc[3 * k + 2]])) scores[mc[3 * k + 2]] = -(float)k;
    const double floor_ = -(double)m - 0.5;
    off[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        const size_t len = strlen(names[i]);
        const bool byte = !special[i] && len == 6 && !memcmp(names[i], "<0x", 3) && isxdigit((unsigned char)names[i][3]) &&
                          isxdigit((unsigned char)names[i][4]) && names[i][5] == '>';
        types[i] = special[i] ? (cJSON_IsString(unk) && !strcmp(unk->valuestring, names[i]) ? TG_PIECE_UNKNOWN
                                                                                          : TG_PIECE_CONTROL)
                 : byte ? TG_PIECE_BYTE : TG_PIECE_NORMAL;
        if (types[i] != TG_PIECE_NORMAL || isnan(scores[i])) scores[i] = types[i] == TG_PIECE_NORMAL ? (float)(floor_ - 0.5) : 0;
        memcpy(pieces + off[i], names[i], len);
        off[i + 1] = off[i] + (int64_t)len;
    }
    int32_t eos = eos_id >= 0 && eos_id < n && types[eos_id] == TG_PIECE_CONTROL ? eos_id : -1;
    if (eos < 0 && vocab_id(map, "</s>") >= 0 && types[vocab_id(map, "</s>")] == TG_PIECE_CONTROL) eos = vocab_id(map, "</s>");
    if (bos < 0 && bos_id >= 0 && bos_id < n && types[bos_id] == TG_PIECE_CONTROL) bos = bos_id;
    if (bos >= 0 && types[bos] != TG_PIECE_CONTROL) {
        tg_error_set(err, "hf: tokenizer.json: the BOS '%s' is not a special added token",
                     tg_shown(names[bos], shown));
        goto out;
    }
    const tg_spm_options o = {r.u2581, r.prepend != 0, floor_};
    tg_error e2 = {0};
    if (!(t = tg_tok_new_spm(&(tg_spm_pieces){n, pieces, off, scores, types, bos, eos}, &o, &e2))) {
        tg_error_set(err, "hf: tokenizer.json: %s", e2.msg);
        goto out;
    }
    /* a one-character piece the library finds in the text that tapegrad does not (a special, an unused one) */
    for (int32_t i = 0; i < n; i++) {
        int sub;
        const size_t len = strlen(names[i]);
        if (types[i] != TG_PIECE_NORMAL && types[i] != TG_PIECE_BYTE && len &&
            tg_utf8_char((const unsigned char *)names[i], len, &sub) == (int)len) {
            tg_error_set(err, "hf: tokenizer.json: the special '%s' is one character, which the library would "
                              "take from the text and tapegrad would not", tg_shown(names[i], shown));
            goto out;
        }
    }
    if (same_merges(t, mc, m, names, false, err)) goto out;
    if (r.metaspace && notice && notice_len)
        snprintf(notice, notice_len, "tokenizer.json's Metaspace pre-tokenizer puts no '\u2581' before a text that "
                 "begins with a space, tapegrad's dummy prefix does: the ids of such a text differ in their first "
                 "token");
    rc = tg_vocab_tokenizer(v, t, false, 0, err);
    t = NULL;
    goto out;
oom:
    tg_error_set(err, "hf: out of memory");
out:
    tg_tok_free(t);
    stbds_shfree(map);
    tg_free(names);
    tg_free(mc);
    tg_free(special);
    tg_free(types);
    tg_free(scores);
    tg_free(off);
    tg_free(pieces);
    return rc;
}

/* The Split that cuts tapegrad's BPE words (a run of newlines; an optional
 * space and what follows up to a space or newline; a space alone). */
#define BPE_WORDS "\n+| ?[^ \n]+| "

/* tapegrad's BPE as export writes it: Split(BPE_WORDS) then ByteLevel
 * without its regex; specials the added tokens, the other pieces in
 * GPT-2's stand-ins; for a Llama Prepend(' ') and a BOS template. The
 * merges must be every split of each piece, in the order of the pieces'
 * ids; a piece's first merge is the one the tokenizer learned (ids after
 * the specials and the single bytes). */
static int bpe_from_json(const cJSON *j, const cJSON *model, bool llama, tg_vocab *v, tg_error *err)
{
    str_ix *map = NULL;
    const char **names = NULL;
    int32_t n = 0, m = 0, *mc = NULL, bos = -1;
    uint8_t *special = NULL;
    int64_t *off = NULL;
    unsigned char *bytes = NULL;
    tg_tokenizer *t = NULL;
    hf_text_rule r;
    int rc = -1;
    uint32_t cp_of[256];
    int16_t byte_of[324];
    tg_gpt2_byte_tables(cp_of, byte_of);
    if (text_rule(cJSON_GetObjectItemCaseSensitive(j, "normalizer"), NULL, &r, err) ||
        read_vocab(model, 1 << 24, &map, &names, &n, err) ||
        template_bos(cJSON_GetObjectItemCaseSensitive(j, "post_processor"), map, &bos, err) ||
        read_merges(model, map, &mc, &m, err))
        goto out;
    if (r.u2581 || (r.prepend == ' ') != llama || (bos >= 0) != llama) {
        tg_error_set(err, "hf: tokenizer.json: tapegrad's BPE encodes %s, and this tokenizer.json %s",
                     llama ? "a Llama's text as BOS, ' ' + text" : "a GPT's text as it is",
                     r.u2581     ? "replaces spaces"
                         : llama ? "does not prepend ' ' or add a BOS"
                                 : "prepends or adds a BOS");
        goto out;
    }
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) total += strlen(names[i]);
    special = tg_calloc((size_t)n, 1), off = tg_malloc(((size_t)n + 1) * sizeof *off), bytes = tg_malloc(total + 1);
    if (!special || !off || !bytes) goto oom;
    if (read_added(cJSON_GetObjectItemCaseSensitive(j, "added_tokens"), map, special, err)) goto out;
    off[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        int64_t k = (int64_t)strlen(names[i]);
        if (special[i]) memcpy(bytes + off[i], names[i], (size_t)k);
        else if ((k = tg_gpt2_unbyte(names[i], byte_of, bytes + off[i])) <= 0) {
            char shown[TG_SHOWN_SIZE];
            tg_error_set(err, "hf: tokenizer.json: '%s' (id %d) is not GPT-2's byte-level form of some bytes",
                         tg_shown(names[i], shown), (int)i);
            goto out;
        }
        off[i + 1] = off[i] + k;
    }
    tg_error e2 = {0};
    if (!(t = tg_tok_build(TG_TOK_BPE, n, bytes, off, special, "tokenizer.json", &e2))) {
        tg_error_set(err, "hf: %s", e2.msg);
        goto out;
    }
    t->bos = bos >= 0 ? bos : vocab_id(map, "<s>");
    t->eos = vocab_id(map, "</s>");
    t->unk = vocab_id(map, "<unk>");
    const int32_t sp[3] = {t->bos, t->eos, t->unk};
    for (int k = 0; k < 3; k++)
        if (sp[k] >= 0 && !special[sp[k]]) {
            tg_error_set(err, "hf: tokenizer.json: '%s' is not a special added token", names[sp[k]]);
            goto out;
        }
    if (same_merges(t, mc, m, names, true, err)) goto out;
    /* the learned merges: the pieces after the last special or single byte, each by its first merge */
    int32_t first = n;
    while (first > 0 && !special[first - 1] && off[first] - off[first - 1] > 1) first--;
    if (!(t->merges = tg_malloc(((size_t)(n - first) + 1) * 2 * sizeof *t->merges))) goto oom;
    t->n_merges = n - first;
    for (int32_t c = first, k = 0; c < n; c++) {
        while (k < m && mc[3 * k + 2] != c) k++;
        if (k == m || mc[3 * k] >= c || mc[3 * k + 1] >= c) {
            tg_error_set(err, "hf: tokenizer.json: the first merge of id %d is not of two earlier ids, as "
                              "tapegrad's BPE learns them", (int)c);
            goto out;
        }
        t->merges[2 * (c - first)] = mc[3 * k], t->merges[2 * (c - first) + 1] = mc[3 * k + 1];
    }
    rc = tg_vocab_tokenizer(v, t, false, 0, err);
    t = NULL;
    goto out;
oom:
    tg_error_set(err, "hf: out of memory");
out:
    tg_tok_free(t);
    stbds_shfree(map);
    tg_free(names);
    tg_free(mc);
    tg_free(special);
    tg_free(off);
    tg_free(bytes);
    return rc;
}

/* A byte vocabulary as export writes it: ByteLevel without its regex, the
 * bytes' stand-ins as ids 0..n-1 in byte order, no merges, nothing else. */
static int bytes_from_json(const cJSON *j, const cJSON *model, tg_vocab *v, tg_error *err)
{
    str_ix *map = NULL;
    const char **names = NULL;
    int32_t n = 0;
    uint32_t cp_of[256];
    int16_t byte_of[324];
    tg_gpt2_byte_tables(cp_of, byte_of);
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(j, "normalizer");
    const cJSON *post = cJSON_GetObjectItemCaseSensitive(j, "post_processor");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(j, "added_tokens");
    int rc = read_vocab(model, 256, &map, &names, &n, err);
    if (!rc && ((merges && cJSON_GetArraySize(merges)) || (norm && !cJSON_IsNull(norm)) ||
                (post && !cJSON_IsNull(post) && strcmp(type_of(post), "ByteLevel")) || cJSON_GetArraySize(added)))
        rc = tg_error_set(err, "hf: tokenizer.json: a ByteLevel tokenizer without GPT-2's regex is read as a byte "
                               "vocabulary, which has no merges, normalizer, template or added tokens");
    char chars[256];
    for (int32_t i = 0; !rc && i < n; i++) {
        unsigned char b[8];
        char shown[TG_SHOWN_SIZE];
        if (strlen(names[i]) > 2 || tg_gpt2_unbyte(names[i], byte_of, b) != 1 || (i && (unsigned char)chars[i - 1] >= b[0]))
            rc = tg_error_set(err, "hf: tokenizer.json: '%s' (id %d) is not the next byte of a byte vocabulary "
                                   "(each id one byte, in byte order)", tg_shown(names[i], shown), (int)i);
        else chars[i] = (char)b[0];
    }
    if (!rc) tg_vocab_bytes(v, chars, (size_t)n);
    stbds_shfree(map);
    tg_free(names);
    return rc;
}

/* tokenizer.json: which kind it is, by its model and pre-tokenizer. */
static int tokenizer_json(const char *dir, bool llama, int32_t bos_id, int32_t eos_id, tg_vocab *v, char *notice,
                          size_t notice_len, tg_error *err)
{
    cJSON *j = tg_hf_read_json(dir, "tokenizer.json", false, err);
    if (!j) return -1;
    int rc = -1;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(j, "pre_tokenizer");
    const cJSON *regex = cJSON_GetObjectItemCaseSensitive(pre, "use_regex");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(pre, "pretokenizers");
    const cJSON *split = cJSON_GetArrayItem(list, 0), *bl = cJSON_GetArrayItem(list, 1);
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(split, "pattern");
    char shown[TG_SHOWN_SIZE];
    if (strcmp(type_of(model), "BPE")) {
        tg_error_set(err, "hf: tokenizer.json: the model '%s' is not BPE, the one tapegrad's tokenizers are "
                          "(WordPiece, Unigram and WordLevel are not read)", tg_shown(type_of(model), shown));
    } else if (!cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(model, "dropout")) &&
               cJSON_GetObjectItemCaseSensitive(model, "dropout")) {
        tg_error_set(err, "hf: tokenizer.json: model.dropout is set: the ids would be random");
    } else if ((cJSON_IsString(cJSON_GetObjectItemCaseSensitive(model, "continuing_subword_prefix")) &&
                *cJSON_GetObjectItemCaseSensitive(model, "continuing_subword_prefix")->valuestring) ||
               (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(model, "end_of_word_suffix")) &&
                *cJSON_GetObjectItemCaseSensitive(model, "end_of_word_suffix")->valuestring)) {
        tg_error_set(err, "hf: tokenizer.json: model.continuing_subword_prefix or end_of_word_suffix is set, "
                          "which tapegrad's tokenizers have not");
    } else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "byte_fallback"))) {
        rc = spm_from_json(j, model, llama, bos_id, eos_id, v, notice, notice_len, err);
    } else if (!strcmp(type_of(pre), "ByteLevel") && !cJSON_IsFalse(regex)) {
        const cJSON *norm = cJSON_GetObjectItemCaseSensitive(j, "normalizer");
        const cJSON *added = cJSON_GetObjectItemCaseSensitive(j, "added_tokens");
        tg_tokenizer *t = NULL;
        if (llama)
            tg_error_set(err, "hf: tokenizer.json: GPT-2's tokenizer has no BOS, with which tapegrad's Llama "
                              "starts every text");
        else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pre, "add_prefix_space")))
            tg_error_set(err, "hf: tokenizer.json: pre_tokenizer is not GPT-2's (ByteLevel, add_prefix_space "
                              "false, use_regex true)");
        else if (norm && !cJSON_IsNull(norm))
            tg_error_set(err, "hf: tokenizer.json: it has a normalizer, which GPT-2's tokenizer has not");
        else {
            bool ok = true;
            for (const cJSON *a = added ? added->child : NULL; a && ok; a = a->next)
                ok = str_is(a, "content", "<|endoftext|>");
            if (!ok)
                tg_error_set(err, "hf: tokenizer.json: an added token other than <|endoftext|>, which tapegrad's "
                                  "GPT-2 tokenizer has not");
            else if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(model, "vocab")))
                tg_error_set(err, "hf: tokenizer.json: model.vocab is not an object");
            else
                t = tg_gpt2_tokenizer(cJSON_GetObjectItemCaseSensitive(model, "vocab"),
                                      cJSON_GetObjectItemCaseSensitive(model, "merges"), "hf: tokenizer.json", err);
        }
        if (t) rc = tg_vocab_tokenizer(v, t, false, 0, err);
    } else if (!strcmp(type_of(pre), "ByteLevel")) {
        rc = bytes_from_json(j, model, v, err);
    } else if (!strcmp(type_of(pre), "Sequence") && cJSON_GetArraySize(list) == 2 && !strcmp(type_of(split), "Split") &&
               str_is(pat, "Regex", BPE_WORDS) && str_is(split, "behavior", "Isolated") &&
               !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(split, "invert")) && !strcmp(type_of(bl), "ByteLevel") &&
               cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(bl, "use_regex")) &&
               !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(bl, "add_prefix_space"))) {
        rc = bpe_from_json(j, model, llama, v, err);
    } else {
        tg_error_set(err, "hf: tokenizer.json: the pre-tokenizer '%s' is none of tapegrad's (GPT-2's ByteLevel "
                     "with its regex; ByteLevel alone for bytes; Split of tapegrad's BPE words then ByteLevel; none or "
                          "Metaspace with byte_fallback for pieces with scores)", tg_shown(type_of(pre), shown));
    }
    cJSON_Delete(j);
    return rc;
}

/* vocab.json and merges.txt ("#version" first line, then "a b" lines). */
static tg_tokenizer *tokenizer_pair(const char *dir, tg_error *err)
{
    cJSON *vocab = tg_hf_read_json(dir, "vocab.json", false, err), *merges = NULL;
    size_t len = 0;
    char *text = vocab ? tg_hf_read_small(dir, "merges.txt", &len, err) : NULL;
    tg_tokenizer *t = NULL;
    if (!text) goto out;
    if (!(merges = cJSON_CreateArray())) goto oom;
    for (char *line = text, *end = text + len; line < end;) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        char *stop = nl ? nl : end;
        if (stop > line && stop[-1] == '\r') stop[-1] = 0;
        *stop = 0;
        if (*line && strncmp(line, "#version", 8)) {
            cJSON *s = cJSON_CreateString(line);
            if (!s) goto oom;
            cJSON_AddItemToArray(merges, s);
        }
        line = stop + 1;
    }
    t = tg_gpt2_tokenizer(vocab, merges, "hf: vocab.json + merges.txt", err);
    goto out;
oom:
    tg_error_set(err, "hf: out of memory");
out:
    cJSON_Delete(vocab);
    cJSON_Delete(merges);
    tg_free(text);
    return t;
}


int tg_hf_tokenizer_read(const char *dir, bool llama, int32_t bos_id, int32_t eos_id, tg_vocab *v, int *found,
                         char *notice, size_t notice_len, tg_error *err)
{
    memset(v, 0, sizeof *v);
    *found = 0;
    const int tj = tg_hf_stat(dir, "tokenizer.json", err);
    if (tj) {
        *found = 1;
        return tj < 0 ? -1 : tokenizer_json(dir, llama, bos_id, eos_id, v, notice, notice_len, err);
    }
    const int vj = tg_hf_stat(dir, "vocab.json", err), mt = vj < 0 ? 0 : tg_hf_stat(dir, "merges.txt", err);
    if (vj < 0 || mt < 0) return -1;
    if (!vj || !mt) return 0;
    *found = 1;
    if (llama)
        return tg_error_set(err, "hf: vocab.json and merges.txt are GPT-2's tokenizer, which has no BOS, with "
                                 "which tapegrad's Llama starts every text");
    tg_tokenizer *t = tokenizer_pair(dir, err);
    return t ? tg_vocab_tokenizer(v, t, false, 0, err) : -1;
}

/* ---- writing tokenizer.json: GPT-2's ----------------------------------------------- */

/* tokenizer.json for GPT-2's tokenizer (a tiktoken one): NULL with the
 * reason in why when the tokenizer is another kind. */
static cJSON *gpt2_tokenizer_json(const tg_tokenizer *t, char *why, size_t why_len)
{
    if (tg_tok_kind_of(t) != TG_TOK_TIKTOKEN) {
        snprintf(why, why_len, "tapegrad's BPE tokenizer is not written as a tokenizer.json yet: only GPT-2's is");
        return NULL;
    }
    uint32_t cp_of[256];
    tg_gpt2_byte_chars(cp_of);
    const int32_t n = tg_tok_vocab_size(t) - 1;   /* <|endoftext|> is n */
    cJSON *j = cJSON_CreateObject(), *model = cJSON_CreateObject(), *vocab = cJSON_CreateObject();
    cJSON *merges = cJSON_CreateArray(), *added = cJSON_CreateArray(), *eot = cJSON_CreateObject();
    char *a = tg_malloc(2 * t->max_piece + 1), *b = tg_malloc(2 * t->max_piece + 1);
    char *ab = tg_malloc(4 * t->max_piece + 2);
    int32_t *parts = tg_malloc((t->max_piece + 1) * sizeof *parts);
    bool ok = j && model && vocab && merges && added && eot && a && b && ab && parts;
    for (int32_t id = 0; ok && id < n; id++) {
        tg_gpt2_byte_string(t->bytes + t->off[id], (size_t)(t->off[id + 1] - t->off[id]), cp_of, a);
        ok = cJSON_AddNumberToObject(vocab, a, id) != NULL;
    }
    ok = ok && cJSON_AddNumberToObject(vocab, "<|endoftext|>", n);
    for (int32_t id = 0; ok && id < n; id++) {
        if (t->off[id + 1] - t->off[id] < 2) continue;
        int32_t x, y;
        const int split = tg_gpt2_tiktoken_split(t, id, parts, &x, &y);
        if (split) {
            if (split == -1)
                snprintf(why, why_len, "piece %d is no merge of two earlier pieces, so the tokenizer is not a BPE one "
                         "tokenizer.json can say", (int)id);
            ok = false;   /* -2: out of memory, said below */
            break;
        }
        tg_gpt2_byte_string(t->bytes + t->off[x], (size_t)(t->off[x + 1] - t->off[x]), cp_of, a);
        tg_gpt2_byte_string(t->bytes + t->off[y], (size_t)(t->off[y + 1] - t->off[y]), cp_of, b);
        snprintf(ab, 4 * t->max_piece + 2, "%s %s", a, b);
        cJSON *s = cJSON_CreateString(ab);
        ok = s != NULL;
        if (s) cJSON_AddItemToArray(merges, s);
    }
    tg_free(a);
    tg_free(b);
    tg_free(ab);
    tg_free(parts);
    if (ok) {
        cJSON_AddNumberToObject(eot, "id", n);
        cJSON_AddStringToObject(eot, "content", "<|endoftext|>");
        cJSON_AddFalseToObject(eot, "single_word");
        cJSON_AddFalseToObject(eot, "lstrip");
        cJSON_AddFalseToObject(eot, "rstrip");
        cJSON_AddTrueToObject(eot, "normalized");
        cJSON_AddTrueToObject(eot, "special");
        cJSON_AddItemToArray(added, eot);
        eot = NULL;
        cJSON_AddStringToObject(j, "version", "1.0");
        cJSON_AddNullToObject(j, "truncation");
        cJSON_AddNullToObject(j, "padding");
        cJSON_AddItemToObject(j, "added_tokens", added);
        added = NULL;
        cJSON_AddNullToObject(j, "normalizer");
        static const char *const parts_of[3] = {"pre_tokenizer", "post_processor", "decoder"};
        for (int k = 0; k < 3; k++) {   /* GPT-2's: the byte-level steps, its regex, no prefix space added */
            cJSON *p = cJSON_AddObjectToObject(j, parts_of[k]);
            cJSON_AddStringToObject(p, "type", "ByteLevel");
            cJSON_AddBoolToObject(p, "add_prefix_space", false);
            cJSON_AddBoolToObject(p, "trim_offsets", k != 1);
            cJSON_AddTrueToObject(p, "use_regex");
        }
        cJSON_AddStringToObject(model, "type", "BPE");
        cJSON_AddNullToObject(model, "dropout");
        cJSON_AddNullToObject(model, "unk_token");
        cJSON_AddStringToObject(model, "continuing_subword_prefix", "");
        cJSON_AddStringToObject(model, "end_of_word_suffix", "");
        cJSON_AddFalseToObject(model, "fuse_unk");
        cJSON_AddFalseToObject(model, "byte_fallback");
        cJSON_AddItemToObject(model, "vocab", vocab);
        cJSON_AddItemToObject(model, "merges", merges);
        vocab = merges = NULL;
        cJSON_AddItemToObject(j, "model", model);
        model = NULL;
    } else if (!why[0]) {
        snprintf(why, why_len, "out of memory");
    }
    cJSON_Delete(model);
    cJSON_Delete(vocab);
    cJSON_Delete(merges);
    cJSON_Delete(added);
    cJSON_Delete(eot);
    if (!ok) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}


/* ---- writing tokenizer.json for tapegrad's other tokenizers ---------------------- */

static cJSON *added_token(int32_t id, const char *content)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "id", id);
    cJSON_AddStringToObject(a, "content", content);
    cJSON_AddFalseToObject(a, "single_word");
    cJSON_AddFalseToObject(a, "lstrip");
    cJSON_AddFalseToObject(a, "rstrip");
    cJSON_AddFalseToObject(a, "normalized");
    cJSON_AddTrueToObject(a, "special");
    return a;
}

static cJSON *typed(const char *type)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", type);
    return o;
}

static cJSON *prepend(const char *s)
{
    cJSON *o = typed("Prepend");
    cJSON_AddStringToObject(o, "prepend", s);
    return o;
}

static cJSON *replace(const char *from, const char *to)
{
    cJSON *o = typed("Replace"), *p = cJSON_AddObjectToObject(o, "pattern");
    cJSON_AddStringToObject(p, "String", from);
    cJSON_AddStringToObject(o, "content", to);
    return o;
}

/* The decoder step that drops the one space a Prepend normalizer put
 * before the text (transformers' Llama decoders end with it). */
static cJSON *strip_prefix_space(void)
{
    cJSON *o = typed("Strip");
    cJSON_AddStringToObject(o, "content", " ");
    cJSON_AddNumberToObject(o, "start", 1);
    cJSON_AddNumberToObject(o, "stop", 0);
    return o;
}

static cJSON *sequence(const char *key, cJSON *a, cJSON *b, cJSON *c, cJSON *d)
{
    cJSON *o = typed("Sequence"), *l = cJSON_AddArrayToObject(o, key);
    cJSON *all[4] = {a, b, c, d};
    for (int k = 0; k < 4; k++)
        if (all[k]) cJSON_AddItemToArray(l, all[k]);
    return o;
}

/* transformers' template for a BOS before the text (and before each of a pair). */
static cJSON *bos_template(const char *bos, int32_t id)
{
    cJSON *o = typed("TemplateProcessing");
    for (int pair = 0; pair < 2; pair++) {
        cJSON *l = cJSON_AddArrayToObject(o, pair ? "pair" : "single");
        for (int s = 0; s <= pair; s++) {
            cJSON *x = cJSON_CreateObject(), *st = cJSON_AddObjectToObject(x, "SpecialToken");
            cJSON_AddStringToObject(st, "id", bos);
            cJSON_AddNumberToObject(st, "type_id", s);
            cJSON_AddItemToArray(l, x);
            cJSON *y = cJSON_CreateObject(), *sq = cJSON_AddObjectToObject(y, "Sequence");
            cJSON_AddStringToObject(sq, "id", s ? "B" : "A");
            cJSON_AddNumberToObject(sq, "type_id", s);
            cJSON_AddItemToArray(l, y);
        }
    }
    cJSON *sp = cJSON_AddObjectToObject(o, "special_tokens"), *e = cJSON_AddObjectToObject(sp, bos);
    cJSON_AddStringToObject(e, "id", bos);
    cJSON_AddItemToObject(e, "ids", cJSON_CreateIntArray(&id, 1));
    cJSON *toks = cJSON_AddArrayToObject(e, "tokens");
    cJSON_AddItemToArray(toks, cJSON_CreateString(bos));
    return o;
}

static cJSON *byte_level(bool regex)
{
    cJSON *o = typed("ByteLevel");
    cJSON_AddFalseToObject(o, "add_prefix_space");
    cJSON_AddFalseToObject(o, "trim_offsets");
    cJSON_AddBoolToObject(o, "use_regex", regex);
    return o;
}

/* The whole file around a BPE model of vocab and merges. */
static cJSON *tokenizer_file(cJSON *added, cJSON *norm, cJSON *pre, cJSON *post, cJSON *dec, cJSON *vocab,
                             cJSON *merges, const char *unk, bool byte_fallback)
{
    cJSON *j = cJSON_CreateObject(), *model = typed("BPE");
    cJSON_AddStringToObject(j, "version", "1.0");
    cJSON_AddNullToObject(j, "truncation");
    cJSON_AddNullToObject(j, "padding");
    cJSON_AddItemToObject(j, "added_tokens", added ? added : cJSON_CreateArray());
    cJSON_AddItemToObject(j, "normalizer", norm ? norm : cJSON_CreateNull());
    cJSON_AddItemToObject(j, "pre_tokenizer", pre ? pre : cJSON_CreateNull());
    cJSON_AddItemToObject(j, "post_processor", post ? post : cJSON_CreateNull());
    cJSON_AddItemToObject(j, "decoder", dec ? dec : cJSON_CreateNull());
    cJSON_AddNullToObject(model, "dropout");
    if (unk) cJSON_AddStringToObject(model, "unk_token", unk);
    else cJSON_AddNullToObject(model, "unk_token");
    cJSON_AddNullToObject(model, "continuing_subword_prefix");
    cJSON_AddNullToObject(model, "end_of_word_suffix");
    cJSON_AddFalseToObject(model, "fuse_unk");
    cJSON_AddBoolToObject(model, "byte_fallback", byte_fallback);
    cJSON_AddFalseToObject(model, "ignore_merges");
    cJSON_AddItemToObject(model, "vocab", vocab);
    cJSON_AddItemToObject(model, "merges", merges ? merges : cJSON_CreateArray());
    cJSON_AddItemToObject(j, "model", model);
    return j;
}

/* Every pair (a, b) -> c of t, in the order the tokenizers library must
 * merge them: by c's rank (tapegrad's rule), then the merge t learned for
 * c first (TG_TOK_BPE), then by the left piece's length. */
typedef struct hf_pair { int32_t rank, learned, a, b, c; int64_t left; } hf_pair;

static int by_rank(const void *x, const void *y)
{
    const hf_pair *p = x, *q = y;
    if (p->rank != q->rank) return p->rank < q->rank ? -1 : 1;
    if (p->c != q->c) return p->c < q->c ? -1 : 1;
    if (p->learned != q->learned) return p->learned ? -1 : 1;
    return (p->left > q->left) - (p->left < q->left);
}

static hf_pair *all_pairs(const tg_tokenizer *t, size_t *count)
{
    hf_pair *p = tg_malloc((t->pairs.n + 1) * sizeof *p);
    if (!p) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < t->pairs.cap; i++) {
        if (t->pairs.keys[i] == UINT64_MAX) continue;
        hf_pair q = {0};
        q.a = (int32_t)(t->pairs.keys[i] >> 32), q.b = (int32_t)(t->pairs.keys[i] & 0xffffffffu), q.c = t->pairs.vals[i];
        q.rank = t->rank ? t->rank[q.c] : q.c;
        const int32_t k = q.c - (t->n - t->n_merges);
        q.learned = t->merges && k >= 0 && t->merges[2 * k] == q.a && t->merges[2 * k + 1] == q.b;
        q.left = t->soff ? t->soff[q.a + 1] - t->soff[q.a] : t->off[q.a + 1] - t->off[q.a];
        p[n++] = q;
    }
    qsort(p, n, sizeof *p, by_rank);
    *count = n;
    return p;
}

/* a b as a merge: "a b", or ["a", "b"] (arrays: the library takes one
 * form for the whole list, and a piece holding a space needs the pair). */
static cJSON *merge_item(const char *a, const char *b, bool arrays)
{
    if (arrays) {
        const char *ab[2] = {a, b};
        return cJSON_CreateStringArray(ab, 2);
    }
    const size_t n = strlen(a) + strlen(b) + 2;
    char *s = tg_malloc(n);
    if (!s) return NULL;
    snprintf(s, n, "%s %s", a, b);
    cJSON *r = cJSON_CreateString(s);
    tg_free(s);
    return r;
}

/* The merges of pairs[0..n) into list: as pairs when any piece holds a space. */
static bool add_merges(cJSON *list, const hf_pair *pairs, size_t n, char *const *names)
{
    bool arrays = false;
    for (size_t i = 0; i < n && !arrays; i++) arrays = strchr(names[pairs[i].a], ' ') || strchr(names[pairs[i].b], ' ');
    for (size_t i = 0; i < n; i++) {
        cJSON *m = merge_item(names[pairs[i].a], names[pairs[i].b], arrays);
        if (!m) return false;
        cJSON_AddItemToArray(list, m);
    }
    return true;
}

static bool valid_utf8(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        int sub;
        const int k = tg_utf8_char(p + i, n - i, &sub);
        if (!k || (k == 1 && !p[i])) return false;
        i += (size_t)k;
    }
    return true;
}

/* tapegrad's BPE: words split as it splits them, then GPT-2's byte
 * stand-ins; for a Llama ' ' before the text and BOS (run.c's rule), and
 * a decoder that drops that space again, as transformers' Llama decodes. */
static cJSON *bpe_json(const tg_tokenizer *t, bool llama, char **names, char *why, size_t why_len)
{
    uint32_t cp_of[256];
    tg_gpt2_byte_chars(cp_of);
    str_ix *seen = NULL;
    stbds_sh_new_strdup(seen);
    cJSON *vocab = cJSON_CreateObject(), *added = cJSON_CreateArray(), *merges = cJSON_CreateArray();
    size_t np = 0;
    hf_pair *pairs = NULL;
    bool ok = vocab && added && merges;
    char shown[TG_SHOWN_SIZE];
    for (int32_t id = 0; ok && id < t->n; id++) {
        const unsigned char *p = t->bytes + t->off[id];
        const size_t len = (size_t)(t->off[id + 1] - t->off[id]);
        if (!(names[id] = tg_malloc(2 * len + 1))) {
            ok = false;
            break;
        }
        if (t->special[id]) {
            memcpy(names[id], p, len);
            names[id][len] = 0;
            if (!valid_utf8(p, len)) {
                snprintf(why, why_len, "the special id %d is not UTF-8 text", (int)id);
                ok = false;
                break;
            }
            cJSON_AddItemToArray(added, added_token(id, names[id]));
        } else {
            tg_gpt2_byte_string(p, len, cp_of, names[id]);
        }
        if (stbds_shgeti(seen, names[id]) >= 0) {
            snprintf(why, why_len, "the special '%s' is also a piece's byte-level form", tg_shown(names[id], shown));
            ok = false;
            break;
        }
        stbds_shput(seen, names[id], id);
        ok = cJSON_AddNumberToObject(vocab, names[id], id) != NULL;
    }
    if (ok && !(pairs = all_pairs(t, &np))) ok = false;
    ok = ok && add_merges(merges, pairs, np, names);
    tg_free(pairs);
    stbds_shfree(seen);
    if (!ok) {
        if (!why[0]) snprintf(why, why_len, "out of memory");
        cJSON_Delete(vocab);
        cJSON_Delete(added);
        cJSON_Delete(merges);
        return NULL;
    }
    cJSON *split = typed("Split"), *pat = cJSON_AddObjectToObject(split, "pattern");
    cJSON_AddStringToObject(pat, "Regex", BPE_WORDS);
    cJSON_AddStringToObject(split, "behavior", "Isolated");
    cJSON_AddFalseToObject(split, "invert");
    const bool bos = llama && t->bos >= 0;
    cJSON *dec = llama ? sequence("decoders", byte_level(true), strip_prefix_space(), NULL, NULL) : byte_level(true);
    return tokenizer_file(added, llama ? prepend(" ") : NULL, sequence("pretokenizers", split, byte_level(false), NULL, NULL),
                          bos ? bos_template(names[t->bos], t->bos) : NULL, dec, vocab, merges, NULL, false);
}

/* Pieces with scores, as transformers writes a Llama's: the pieces as
 * spelled, byte pieces "<0xXX>" for byte_fallback, the merges every split
 * of each piece ranked by its score. */
static cJSON *spm_json(const tg_tokenizer *t, bool llama, char **names, char *why, size_t why_len)
{
    str_ix *seen = NULL;
    stbds_sh_new_strdup(seen);
    cJSON *vocab = cJSON_CreateObject(), *added = cJSON_CreateArray(), *merges = cJSON_CreateArray();
    size_t np = 0;
    hf_pair *pairs = NULL;
    bool ok = vocab && added && merges;
    char shown[TG_SHOWN_SIZE];
    for (int32_t id = 0; ok && id < t->n; id++) {
        const unsigned char *p = t->spelled + t->soff[id];
        const size_t len = (size_t)(t->soff[id + 1] - t->soff[id]);
        const int ty = t->types[id];
        if (!(names[id] = tg_malloc(len + 1))) {
            ok = false;
            break;
        }
        memcpy(names[id], p, len);
        names[id][len] = 0;
        int sub;
        if (!valid_utf8(p, len)) {
            snprintf(why, why_len, "id %d is not UTF-8 text (a byte piece spelled as its byte 0x%02X, or part of a "
                     "character), which tokenizer.json cannot hold", (int)id, p[0]);
            ok = false;
        } else if (ty != TG_PIECE_NORMAL && ty != TG_PIECE_BYTE && tg_utf8_char(p, len, &sub) == (int)len) {
            snprintf(why, why_len, "the %s id %d '%s' is one character, which the tokenizers library would take "
                     "from the text", ty == TG_PIECE_UNUSED ? "unused" : "special", (int)id, tg_shown(names[id], shown));
            ok = false;
        } else if (stbds_shgeti(seen, names[id]) >= 0) {
            snprintf(why, why_len, "ids %d and %d are both spelled '%s'", (int)stbds_shget(seen, names[id]), (int)id,
                     tg_shown(names[id], shown));
            ok = false;
        }
        if (!ok) break;
        stbds_shput(seen, names[id], id);
        ok = cJSON_AddNumberToObject(vocab, names[id], id) != NULL;
        if (ty == TG_PIECE_CONTROL || ty == TG_PIECE_UNKNOWN) cJSON_AddItemToArray(added, added_token(id, names[id]));
    }
    if (ok && !(pairs = all_pairs(t, &np))) ok = false;
    for (int32_t i = 0; ok && i + 1 < (int32_t)np; i++)
        if (pairs[i].rank == pairs[i + 1].rank && pairs[i].c != pairs[i + 1].c) {
            snprintf(why, why_len, "ids %d and %d score the same, where tapegrad merges the leftmost and the tokenizers "
                     "library the first listed", (int)pairs[i].c, (int)pairs[i + 1].c);
            ok = false;
        }
    ok = ok && add_merges(merges, pairs, np, names);
    tg_free(pairs);
    stbds_shfree(seen);
    if (!ok) {
        if (!why[0]) snprintf(why, why_len, "out of memory");
        cJSON_Delete(vocab);
        cJSON_Delete(added);
        cJSON_Delete(merges);
        return NULL;
    }
    const bool u = t->spm.space_u2581, pre = t->spm.add_prefix, bos = llama && t->bos >= 0;
    cJSON *norm = pre && u ? sequence("normalizers", prepend(U2581), replace(" ", U2581), NULL, NULL)
                : pre      ? prepend(" ")
                : u        ? replace(" ", U2581)
                           : NULL;
    cJSON *dec = sequence("decoders", u ? replace(U2581, " ") : NULL, typed("ByteFallback"), typed("Fuse"),
                          pre ? strip_prefix_space() : NULL);
    return tokenizer_file(added, norm, NULL, bos ? bos_template(names[t->bos], t->bos) : NULL, dec, vocab, merges,
                          t->unk >= 0 ? names[t->unk] : NULL, true);
}

int tg_hf_tokenizer_write(const tg_vocab *v, bool llama, int block_size, cJSON **tok, cJSON **cfg, int32_t *bos,
                          int32_t *eos, char *why, size_t why_len)
{
    *tok = *cfg = NULL;
    *bos = *eos = -1;
    why[0] = 0;
    const tg_tokenizer *t = v->kind == TG_VOCAB_TOKENIZER ? v->tok : NULL;
    const int kind = tg_tok_kind_of(t);
    char **names = NULL;
    const char *bos_s = NULL, *eos_s = NULL, *unk_s = NULL;
    if (v->kind == TG_VOCAB_IDS) {
        snprintf(why, why_len, "the checkpoint's vocabulary is bare ids, which have no tokenizer.json");
        return -1;
    }
    if (kind == TG_TOK_TIKTOKEN) {
        if (llama) {
            snprintf(why, why_len, "GPT-2's tokenizer has no BOS, with which a Llama starts every text");
            return -1;
        }
        if (!(*tok = gpt2_tokenizer_json(t, why, why_len))) return -1;
        *cfg = cJSON_CreateObject();
        cJSON_AddStringToObject(*cfg, "tokenizer_class", "GPT2Tokenizer");
        cJSON_AddFalseToObject(*cfg, "add_prefix_space");
        cJSON_AddStringToObject(*cfg, "bos_token", "<|endoftext|>");
        cJSON_AddStringToObject(*cfg, "eos_token", "<|endoftext|>");
        cJSON_AddStringToObject(*cfg, "unk_token", "<|endoftext|>");
        cJSON_AddNumberToObject(*cfg, "model_max_length", block_size);
        *bos = *eos = tg_tok_eos(t);
        return 0;
    }
    if (t) {
        if (!(names = tg_calloc((size_t)t->n, sizeof *names))) {
            snprintf(why, why_len, "out of memory");
            return -1;
        }
        *tok = kind == TG_TOK_SPM ? spm_json(t, llama, names, why, why_len) : bpe_json(t, llama, names, why, why_len);
        if (*tok) {
            *bos = t->bos, *eos = t->eos;
            bos_s = t->bos >= 0 ? names[t->bos] : NULL;
            eos_s = t->eos >= 0 ? names[t->eos] : NULL;
            unk_s = t->unk >= 0 ? names[t->unk] : NULL;
        }
    } else if (v->kind == TG_VOCAB_LLAMA2C) {   /* <unk> <s> </s> and the bytes; ' ' then the text, after BOS */
        cJSON *vocab = cJSON_CreateObject(), *added = cJSON_CreateArray();
        static const char *const sp[3] = {"<unk>", "<s>", "</s>"};
        for (int k = 0; k < 3; k++) {
            cJSON_AddNumberToObject(vocab, sp[k], k);
            cJSON_AddItemToArray(added, added_token(k, sp[k]));
        }
        for (int b = 0; b < 256; b++) {
            char s[8];
            snprintf(s, sizeof s, "<0x%02X>", b);
            cJSON_AddNumberToObject(vocab, s, 3 + b);
        }
        *tok = tokenizer_file(added, prepend(" "), NULL, bos_template("<s>", TG_VOCAB_BOS),
                              sequence("decoders", typed("ByteFallback"), typed("Fuse"), strip_prefix_space(), NULL),
                              vocab, NULL, "<unk>", true);
        *bos = TG_VOCAB_BOS, *eos = 2;
        bos_s = "<s>", eos_s = "</s>", unk_s = "<unk>";
    } else {   /* TG_VOCAB_BYTES: the bytes present, each its GPT-2 stand-in */
        uint32_t cp_of[256];
        tg_gpt2_byte_chars(cp_of);
        cJSON *vocab = cJSON_CreateObject();
        for (int i = 0; i < v->size; i++) {
            char s[4];
            tg_gpt2_byte_string(&v->chars[i], 1, cp_of, s);
            cJSON_AddNumberToObject(vocab, s, i);
        }
        *tok = tokenizer_file(NULL, NULL, byte_level(false), NULL, byte_level(true), vocab, NULL, NULL, false);
    }
    if (*tok) {
        *cfg = cJSON_CreateObject();
        cJSON_AddStringToObject(*cfg, "tokenizer_class", "PreTrainedTokenizerFast");
        if (bos_s) cJSON_AddStringToObject(*cfg, "bos_token", bos_s);
        if (eos_s) cJSON_AddStringToObject(*cfg, "eos_token", eos_s);
        if (unk_s) cJSON_AddStringToObject(*cfg, "unk_token", unk_s);
        cJSON_AddFalseToObject(*cfg, "clean_up_tokenization_spaces");
        cJSON_AddNumberToObject(*cfg, "model_max_length", block_size);
    }
    for (int32_t i = 0; names && i < t->n; i++) tg_free(names[i]);
    tg_free(names);
    return *tok ? 0 : -1;
}
