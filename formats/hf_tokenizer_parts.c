/* tokenizer.json's parts around its model (hf_tokenizer_parts_internal.h). */
#define _POSIX_C_SOURCE 200809L
#include "hf_tokenizer_parts_internal.h"

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

const char *tg_hf_tok_type_of(const cJSON *o)
{
    const cJSON *t = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "type") : NULL;
    return cJSON_IsString(t) ? t->valuestring : "";
}

bool tg_hf_tok_str_is(const cJSON *o, const char *key, const char *want)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) && !strcmp(v->valuestring, want);
}

int tg_hf_tok_text_rule(const cJSON *norm, const cJSON *pre, hf_text_rule *r, tg_error *err)
{
    memset(r, 0, sizeof *r);
    const cJSON *one[2] = {NULL, NULL};
    int n = 0;
    if (norm && !cJSON_IsNull(norm)) {
        if (!strcmp(tg_hf_tok_type_of(norm), "Sequence")) {
            const cJSON *list = cJSON_GetObjectItemCaseSensitive(norm, "normalizers");
            const int k = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
            if (k < 0 || k > 2)
                return tg_error_set(err,
                                    "hf: tokenizer.json: the normalizer Sequence is not Prepend and/or "
                                    "Replace(' ', '\u2581'), the normalizers tapegrad's tokenizers have");
            for (const cJSON *e = list->child; e; e = e->next) one[n++] = e;
        } else {
            one[n++] = norm;
        }
    }
    for (int k = 0; k < n; k++) {
        const char *ty = tg_hf_tok_type_of(one[k]);
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(one[k], "prepend");
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(one[k], "pattern");
        const cJSON *s = cJSON_IsObject(pat) ? cJSON_GetObjectItemCaseSensitive(pat, "String") : NULL;
        if (!strcmp(ty, "Prepend") && !r->prepend && !r->u2581 && cJSON_IsString(p) &&
            (!strcmp(p->valuestring, " ") || !strcmp(p->valuestring, U2581))) {
            r->prepend = p->valuestring[0] == ' ' ? ' ' : 'u';
        } else if (!strcmp(ty, "Replace") && !r->u2581 && cJSON_IsString(s) && !strcmp(s->valuestring, " ") &&
                   tg_hf_tok_str_is(one[k], "content", U2581)) {
            r->u2581 = true;
        } else {
            char shown[TG_SHOWN_SIZE];
            return tg_error_set(err,
                                "hf: tokenizer.json: the normalizer '%s' is not one tapegrad's tokenizers "
                                "have (Prepend(' ' or '\u2581'), then Replace(' ', '\u2581'))",
                                tg_shown(ty, shown));
        }
    }
    if ((r->prepend == 'u') != (r->u2581 && r->prepend))
        return tg_error_set(err, "hf: tokenizer.json: the normalizer prepends '%s' but %s spaces with '\u2581'",
                            r->prepend == 'u' ? "\u2581" : " ", r->u2581 ? "replaces" : "does not replace");
    if (pre && !cJSON_IsNull(pre) && !strcmp(tg_hf_tok_type_of(pre), "Metaspace")) {
        const cJSON *split = cJSON_GetObjectItemCaseSensitive(pre, "split");
        const cJSON *scheme = cJSON_GetObjectItemCaseSensitive(pre, "prepend_scheme");
        const cJSON *legacy = cJSON_GetObjectItemCaseSensitive(pre, "add_prefix_space");
        if (n || !tg_hf_tok_str_is(pre, "replacement", U2581) || cJSON_IsTrue(split) || !split)
            return tg_error_set(err,
                                "hf: tokenizer.json: the Metaspace pre-tokenizer is not '\u2581' with "
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
int tg_hf_tok_template_bos(const cJSON *post, str_ix *vocab, int32_t *bos, tg_error *err)
{
    *bos = -1;
    if (!post || cJSON_IsNull(post) || !strcmp(tg_hf_tok_type_of(post), "ByteLevel")) return 0;
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(post, "single");
    const int n = cJSON_IsArray(single) ? cJSON_GetArraySize(single) : 0;
    const cJSON *first = n ? single->child : NULL, *last = n ? cJSON_GetArrayItem(single, n - 1) : NULL;
    const cJSON *sp = first ? cJSON_GetObjectItemCaseSensitive(first, "SpecialToken") : NULL;
    const cJSON *seq = last ? cJSON_GetObjectItemCaseSensitive(last, "Sequence") : NULL;
    const cJSON *sid = sp ? cJSON_GetObjectItemCaseSensitive(sp, "id") : NULL;
    if (strcmp(tg_hf_tok_type_of(post), "TemplateProcessing") || !seq || !(n == 1 || (n == 2 && cJSON_IsString(sid))))
        return tg_error_set(err,
                            "hf: tokenizer.json: the post-processor '%s' adds tokens tapegrad does not add "
                            "(it takes a template of a BOS, or nothing, before the text)",
                            tg_hf_tok_type_of(post));
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
int tg_hf_tok_read_vocab(const cJSON *model, int32_t max, str_ix **map, const char ***names, int32_t *n, tg_error *err)
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
            return tg_error_set(err, "hf: tokenizer.json: '%s' is in the vocabulary twice", tg_shown(e->string, shown));
        (*names)[id] = e->string;
        stbds_shput(*map, e->string, (int)id);
    }
    return 0;
}

/* The added tokens: each must be a vocabulary entry and special (matched
 * in the text before the model, as tapegrad never does for an ordinary
 * piece). special[id] set for each. */
int tg_hf_tok_read_added(const cJSON *added, str_ix *map, uint8_t *special, tg_error *err)
{
    char shown[TG_SHOWN_SIZE];
    for (const cJSON *a = cJSON_IsArray(added) ? added->child : NULL; a; a = a->next) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(a, "content"),
                    *id = cJSON_GetObjectItemCaseSensitive(a, "id");
        const ptrdiff_t i = cJSON_IsString(c) ? stbds_shgeti(map, c->valuestring) : -1;
        if (i < 0 || !cJSON_IsNumber(id) || id->valuedouble != map[i].value)
            return tg_error_set(err,
                                "hf: tokenizer.json: the added token '%s' is not the vocabulary's entry of "
                                "its id",
                                cJSON_IsString(c) ? tg_shown(c->valuestring, shown) : "?");
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "special")))
            return tg_error_set(err,
                                "hf: tokenizer.json: the added token '%s' is not special: the tokenizers "
                                "library matches it in the text before the model, which tapegrad does not do",
                                tg_shown(c->valuestring, shown));
        special[map[i].value] = 1;
    }
    return 0;
}

int32_t tg_hf_tok_vocab_id(str_ix *map, const char *s)
{
    const ptrdiff_t i = stbds_shgeti(map, s);
    return i < 0 ? -1 : map[i].value;
}

/* Each merge's pieces (a, b) and what it makes, c = a b: into mc[3 k]. */
int tg_hf_tok_read_merges(const cJSON *model, str_ix *map, int32_t **mc, int32_t *m, tg_error *err)
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
        const int32_t x = ok ? tg_hf_tok_vocab_id(map, a) : -1, y = ok ? tg_hf_tok_vocab_id(map, b) : -1,
                      z = ok ? tg_hf_tok_vocab_id(map, ab) : -1;
        if (x < 0 || y < 0 || z < 0)
            return tg_error_set(err,
                                "hf: tokenizer.json: merge %d does not join two vocabulary entries into a "
                                "third",
                                (int)i);
        (*mc)[3 * i] = x, (*mc)[3 * i + 1] = y, (*mc)[3 * i + 2] = z;
    }
    return 0;
}

/* The tapegrad rule (merge the pair whose piece ranks first, over every
 * split of each piece) is the tokenizers library's (merge the listed pair
 * that comes first) when the merges listed are every split of the pieces
 * they make into two text pieces, and each piece's merges are together
 * in the list, in the order of rank(piece). t's pairs are those splits. */
int tg_hf_tok_same_merges(const tg_tokenizer *t, const int32_t *mc, int32_t m, const char *const *names, bool by_id,
                          tg_error *err)
{
    char s1[TG_SHOWN_SIZE], s2[TG_SHOWN_SIZE], s3[TG_SHOWN_SIZE];
    int32_t last = -1;
    uint8_t *done = tg_calloc((size_t)t->n, 1);
    tg_pairmap listed = {0}; /* (a, b) -> its place in the list */
    if (!done) return tg_error_set(err, "hf: out of memory");
    int rc = 0;
    for (int32_t k = 0; k < m && !rc; k++) {
        const int32_t a = mc[3 * k], b = mc[3 * k + 1], c = mc[3 * k + 2];
        const uint64_t key = (uint64_t)a << 32 | (uint32_t)b;
        const int32_t twice = tg_pairmap_get(&listed, key);
        if (tg_pairmap_get(&t->pairs, key) != c)
            rc = tg_error_set(err,
                              "hf: tokenizer.json: merge %d ('%s' '%s') joins pieces tapegrad does not "
                              "merge (a special, a byte piece, or a piece no merge makes)",
                              (int)k, tg_shown(names[a], s1), tg_shown(names[b], s2));
        else if (twice >= 0)
            rc = tg_error_set(err, "hf: tokenizer.json: merge %d repeats merge %d", (int)k, (int)twice);
        else if (c != last && done[c])
            rc = tg_error_set(err,
                              "hf: tokenizer.json: the merges making '%s' are not together in the list "
                              "(merge %d): tapegrad ranks a piece, not each pair",
                              tg_shown(names[c], s1), (int)k);
        else if (by_id && c < last)
            rc = tg_error_set(err,
                              "hf: tokenizer.json: merge %d makes id %d after a merge made id %d: tapegrad's "
                              "BPE merges the piece of lowest id first",
                              (int)k, (int)c, (int)last);
        else if (tg_pairmap_put(&listed, key, k)) rc = tg_error_set(err, "hf: out of memory");
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
