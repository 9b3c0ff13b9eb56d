/* The pieces of the tokenizer.json files tapegrad writes
 * (hf_tokenizer_json_internal.h). */
#define _POSIX_C_SOURCE 200809L
#include "hf_tokenizer_json_internal.h"

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

/* ---- writing tokenizer.json for tapegrad's other tokenizers ---------------------- */

cJSON *tg_hf_tok_added_token(int32_t id, const char *content)
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

cJSON *tg_hf_tok_typed(const char *type)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", type);
    return o;
}

cJSON *tg_hf_tok_prepend(const char *s)
{
    cJSON *o = tg_hf_tok_typed("Prepend");
    cJSON_AddStringToObject(o, "prepend", s);
    return o;
}

cJSON *tg_hf_tok_replace(const char *from, const char *to)
{
    cJSON *o = tg_hf_tok_typed("Replace"), *p = cJSON_AddObjectToObject(o, "pattern");
    cJSON_AddStringToObject(p, "String", from);
    cJSON_AddStringToObject(o, "content", to);
    return o;
}

/* The decoder step that drops the one space a Prepend normalizer put
 * before the text (transformers' Llama decoders end with it). */
cJSON *tg_hf_tok_strip_prefix_space(void)
{
    cJSON *o = tg_hf_tok_typed("Strip");
    cJSON_AddStringToObject(o, "content", " ");
    cJSON_AddNumberToObject(o, "start", 1);
    cJSON_AddNumberToObject(o, "stop", 0);
    return o;
}

cJSON *tg_hf_tok_sequence(const char *key, cJSON *a, cJSON *b, cJSON *c, cJSON *d)
{
    cJSON *o = tg_hf_tok_typed("Sequence"), *l = cJSON_AddArrayToObject(o, key);
    cJSON *all[4] = {a, b, c, d};
    for (int k = 0; k < 4; k++)
        if (all[k]) cJSON_AddItemToArray(l, all[k]);
    return o;
}

/* transformers' template for a BOS before the text (and before each of a pair). */
cJSON *tg_hf_tok_bos_template(const char *bos, int32_t id)
{
    cJSON *o = tg_hf_tok_typed("TemplateProcessing");
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

cJSON *tg_hf_tok_byte_level(bool regex)
{
    cJSON *o = tg_hf_tok_typed("ByteLevel");
    cJSON_AddFalseToObject(o, "add_prefix_space");
    cJSON_AddFalseToObject(o, "trim_offsets");
    cJSON_AddBoolToObject(o, "use_regex", regex);
    return o;
}

/* The whole file around a BPE model of vocab and merges. */
cJSON *tg_hf_tok_tokenizer_file(cJSON *added, cJSON *norm, cJSON *pre, cJSON *post, cJSON *dec, cJSON *vocab,
                                cJSON *merges, const char *unk, bool byte_fallback)
{
    cJSON *j = cJSON_CreateObject(), *model = tg_hf_tok_typed("BPE");
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

static int by_rank(const void *x, const void *y)
{
    const hf_pair *p = x, *q = y;
    if (p->rank != q->rank) return p->rank < q->rank ? -1 : 1;
    if (p->c != q->c) return p->c < q->c ? -1 : 1;
    if (p->learned != q->learned) return p->learned ? -1 : 1;
    return (p->left > q->left) - (p->left < q->left);
}

hf_pair *tg_hf_tok_all_pairs(const tg_tokenizer *t, size_t *count)
{
    hf_pair *p = tg_malloc((t->pairs.n + 1) * sizeof *p);
    if (!p) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < t->pairs.cap; i++) {
        if (t->pairs.keys[i] == UINT64_MAX) continue;
        hf_pair q = {0};
        q.a = (int32_t)(t->pairs.keys[i] >> 32), q.b = (int32_t)(t->pairs.keys[i] & 0xffffffffu),
        q.c = t->pairs.vals[i];
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
bool tg_hf_tok_add_merges(cJSON *list, const hf_pair *pairs, size_t n, char *const *names)
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

bool tg_hf_tok_valid_utf8(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        int sub;
        const int k = tg_utf8_char(p + i, n - i, &sub);
        if (!k || (k == 1 && !p[i])) return false;
        i += (size_t)k;
    }
    return true;
}
