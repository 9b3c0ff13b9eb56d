/* A GGUF file's tokenizer (tg_gguf_read_vocab, formats/gguf_internal.h)
 * as a checkpoint's vocabulary: llama.cpp's "llama" model (pieces with
 * scores: text/'s TG_TOK_SPM with spaces spelled U+2581), a GPT's "gpt2"
 * (GPT-2's byte-level BPE: TG_TOK_TIKTOKEN) or a text's bytes, or none. */
#include "gguf_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/err_internal.h"
#include "gpt2_internal.h"

/* 1 when each merge (k-th: the k-th piece of two bytes or more, in id
 * order; tg_gpt2_tokenizer checked that) is the split tiktoken's rule
 * makes of its piece with the lower ids, as GPT-2's merges are: then
 * llama.cpp's merges and tapegrad's ranks encode alike. 0 with a message
 * naming the merge otherwise (llama.cpp only merges the listed pairs,
 * tiktoken any pair that is a piece: " " + "hat" where the file lists
 * " h" + "at"). */
static bool merges_are_tiktokens(const tg_tokenizer *t, const cJSON *merges, tg_error *err)
{
    uint32_t cp_of[256];
    tg_gpt2_byte_chars(cp_of);
    const size_t maxp = tg_tok_max_piece_len(t);
    char *want = malloc(4 * maxp + 2), *b = malloc(2 * maxp + 1);
    int32_t *parts = malloc((maxp + 1) * sizeof *parts);
    const cJSON *m = merges->child;
    bool ok = want && b && parts;
    if (!ok) tg_error_set(err, "out of memory");
    for (int32_t r = 0, k = 0; ok && r < tg_tok_vocab_size(t) - 1; r++) {
        size_t l, lx, ly;
        int32_t x, y;
        if (!tg_tok_piece(t, r, &l) || l < 2) continue;
        const int split = tg_gpt2_tiktoken_split(t, r, parts, &x, &y);
        if (split) {
            ok = false;
            if (split == -2) tg_error_set(err, "out of memory");
            else tg_error_set(err, "key 'tokenizer.ggml.merges': piece %d is no merge of two lower pieces", (int)r);
            break;
        }
        const unsigned char *px = tg_tok_piece(t, x, &lx), *py = tg_tok_piece(t, y, &ly);
        tg_gpt2_byte_string(px, lx, cp_of, want);
        tg_gpt2_byte_string(py, ly, cp_of, b);
        strcat(strcat(want, " "), b);
        if (!m || !cJSON_IsString(m) || strcmp(m->valuestring, want)) {
            char s1[TG_SHOWN_SIZE], s2[TG_SHOWN_SIZE];
            tg_error_set(err,
                         "key 'tokenizer.ggml.merges': merge %d is '%s' where tiktoken's rule splits its "
                         "piece %d as '%s': llama.cpp and tapegrad would encode differently",
                         (int)k, tg_shown(m && cJSON_IsString(m) ? m->valuestring : "", s1), (int)r,
                         tg_shown(want, s2));
            ok = false;
        }
        m = m ? m->next : NULL;
        k++;
    }
    free(want), free(b), free(parts);
    return ok;
}

/* llama.cpp's "gpt2" tokenizer (GPT-2's byte-level BPE: tokens and
 * merges, pre-tokenizer gpt-2, no BOS) as tiktoken ranks (TG_TOK_TIKTOKEN),
 * when it is GPT-2's kind (tg_gpt2_tokenizer's conditions). */
static int read_vocab_gpt2(const gguf *g, int V, tg_vocab *v, tg_error *err)
{
    char sb[TG_SHOWN_SIZE], what[64];
    str pre;
    const bool has_pre = tg_gguf_get_str(g, "tokenizer.ggml.pre", &pre);
    if (!has_pre || !tg_gguf_str_is(pre, "gpt-2"))
        return tg_error_set(err,
                            "key 'tokenizer.ggml.pre' is %s%s%s: tapegrad's GPT-2 tokenizer splits "
                            "words with GPT-2's pattern ('gpt-2')",
                            has_pre ? "'" : "absent (or not a string)", has_pre ? tg_gguf_shown(pre, sb) : "",
                            has_pre ? "'" : ""),
               -1;
    if (tg_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", false))
        return tg_error_set(err,
                            "key 'tokenizer.ggml.add_bos_token' is true: a GPT reads its text without "
                            "BOS"),
               -1;
    const kv *tok = tg_gguf_find(g, "tokenizer.ggml.tokens"), *mg = tg_gguf_find(g, "tokenizer.ggml.merges");
    if (!tok || tok->type != T_ARRAY || tok->elem != T_STRING || tok->count < 257 || tok->count > (uint64_t)V)
        return tg_error_set(err,
                            "key 'tokenizer.ggml.tokens' is not a list of 257 to %d strings (the "
                            "embedding's rows)",
                            V),
               -1;
    if (!mg || mg->type != T_ARRAY || mg->elem != T_STRING)
        return tg_error_set(err, "key 'tokenizer.ggml.merges' is not a list of strings"), -1;
    cJSON *vocab = cJSON_CreateObject(), *merges = cJSON_CreateArray();
    char *z = NULL;
    size_t zcap = 0;
    int rc = -1;
    bool ok = vocab && merges;
    /* the strings were checked by parse: each a u64 length and its bytes */
    for (int pass = 0; ok && pass < 2; pass++) {
        const kv *k = pass ? mg : tok;
        const unsigned char *p = k->val;
        for (uint64_t i = 0; ok && i < k->count; i++) {
            uint64_t l;
            memcpy(&l, p, 8);
            if (l + 1 > zcap) {
                zcap = (size_t)l + 1 > 2 * zcap ? (size_t)l + 1 : 2 * zcap;
                char *nz = realloc(z, zcap);
                if (!(ok = nz != NULL)) break;
                z = nz;
            }
            memcpy(z, p + 8, (size_t)l);
            z[l] = 0;
            p += 8 + l;
            if (strlen(z) != l) {
                tg_error_set(err, "key '%s': string %llu holds a NUL byte",
                             pass ? "tokenizer.ggml.merges" : "tokenizer.ggml.tokens", (unsigned long long)i);
                goto done;
            }
            ok = pass ? cJSON_AddItemToArray(merges, cJSON_CreateString(z))
                      : cJSON_AddNumberToObject(vocab, z, (double)i) != NULL;
        }
    }
    if (!ok) {
        tg_error_set(err, "out of memory");
        goto done;
    }
    snprintf(what, sizeof what, "key 'tokenizer.ggml.tokens' / 'merges'");
    tg_tokenizer *t = tg_gpt2_tokenizer(vocab, merges, what, err);
    if (t && merges_are_tiktokens(t, merges, err)) rc = tg_vocab_tokenizer(v, t, false, V, err);
    else tg_tok_free(t);
done:
    free(z);
    cJSON_Delete(vocab);
    cJSON_Delete(merges);
    return rc;
}

/* 1 when every token is a byte token <0xXX> or U+2581 (the space as
 * llama.cpp spells it), their bytes in increasing order: a text's bytes
 * (TG_VOCAB_BYTES) as tapegrad's export writes them for a GPT. */
static bool bytes_only(const kv *tok, const kv *ty, int32_t n)
{
    const unsigned char *p = tok->val;
    int last = -1;
    for (int32_t i = 0; i < n; i++) {
        uint64_t l;
        int32_t type, b = -1;
        memcpy(&l, p, 8);
        memcpy(&type, ty->val + 4 * (size_t)i, 4);
        const char *s = (const char *)p + 8;
        static const char hex[] = "0123456789ABCDEF";
        if (l == 3 && !memcmp(s, "\xe2\x96\x81", 3) && type == 1) b = ' ';
        else if (l == 6 && type == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' && strchr(hex, s[3]) && strchr(hex, s[4]) &&
                 s[3] && s[4])
            b = (int)((strchr(hex, s[3]) - hex) * 16 + (strchr(hex, s[4]) - hex));
        if (b <= last) return false;
        last = b;
        p += 8 + l;
    }
    return true;
}

/* The byte an "rwkv" token of l bytes at s spells, as llama.cpp unescapes
 * it (\t, \n, \r, \x and two lower-case hex digits, \ and any other
 * character for that character), or -1 when it is not one byte. */
static int rwkv_byte(const unsigned char *s, uint64_t l)
{
    static const char hex[] = "0123456789abcdef";
    if (l == 1 && s[0] != '\\') return s[0];
    if (l == 2 && s[0] == '\\' && s[1] != 'x')
        return s[1] == 't' ? '\t' : s[1] == 'n' ? '\n' : s[1] == 'r' ? '\r' : s[1];
    if (l == 4 && s[0] == '\\' && s[1] == 'x' && s[2] && s[3] && strchr(hex, s[2]) && strchr(hex, s[3]))
        return (int)((strchr(hex, s[2]) - hex) * 16 + (strchr(hex, s[3]) - hex));
    return -1;
}

/* llama.cpp's "rwkv" model for a GPT of a text's bytes (TG_VOCAB_BYTES),
 * as tapegrad's export writes one: a token per id, each one byte, in
 * increasing order, no special token, no BOS. */
static int read_vocab_rwkv(const gguf *g, int V, tg_vocab *v, tg_error *err)
{
    static const char *const SPECIALS[3] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                            "tokenizer.ggml.unknown_token_id"};
    const kv *tok = tg_gguf_find(g, "tokenizer.ggml.tokens"), *ty = tg_gguf_find(g, "tokenizer.ggml.token_type");
    if (!tok || tok->type != T_ARRAY || tok->elem != T_STRING || tok->count != (uint64_t)V || V > 256)
        return tg_error_set(err,
                            "key 'tokenizer.ggml.tokens' is not %d strings (the embedding's rows): "
                            "tapegrad reads an 'rwkv' vocabulary as a text's bytes, one token each",
                            V),
               -1;
    for (int k = 0; k < 3; k++)
        if (tg_gguf_find(g, SPECIALS[k]))
            return tg_error_set(err,
                                "key '%s': tapegrad reads an 'rwkv' vocabulary as a text's bytes, which "
                                "have no special token",
                                SPECIALS[k]),
                   -1;
    if (tg_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", false))
        return tg_error_set(err,
                            "key 'tokenizer.ggml.add_bos_token' is true: a GPT reads its text without "
                            "BOS"),
               -1;
    if (ty && (ty->type != T_ARRAY || ty->elem != T_I32 || ty->count != (uint64_t)V))
        return tg_error_set(err, "key 'tokenizer.ggml.token_type' is not %d int32 values", V), -1;
    char set[256];
    const unsigned char *p = tok->val; /* the strings were checked by parse: each a u64 length and its bytes */
    for (int i = 0, last = -1; i < V; i++) {
        uint64_t l;
        int32_t type = 1;
        memcpy(&l, p, 8);
        if (ty) memcpy(&type, ty->val + 4 * (size_t)i, 4);
        const int b = rwkv_byte(p + 8, l);
        if (b < 0 || b <= last || type != 1) {
            char t[8], sb[TG_SHOWN_SIZE];
            snprintf(t, sizeof t, "%.*s", (int)(l < 7 ? l : 7), (const char *)p + 8);
            return tg_error_set(err,
                                "key 'tokenizer.ggml.tokens': token %d ('%s'%s) is %s: tapegrad reads an "
                                "'rwkv' vocabulary as a text's bytes, a normal token each, in increasing order",
                                i, tg_shown(t, sb), l > 7 ? "..." : "",
                                b < 0           ? "not one byte"
                                    : type != 1 ? "not of type 1 (normal)"
                                                : "not after the byte before it"),
                   -1;
        }
        set[i] = (char)b;
        last = b;
        p += 8 + l;
    }
    tg_vocab_bytes(v, set, (size_t)V);
    return 0;
}

/* The file's vocabulary into v: llama.cpp's "llama" model as TG_TOK_SPM,
 * its "gpt2" (a GPT's) as GPT-2's tiktoken ranks, its "rwkv" (a GPT's) or
 * a "llama" of byte tokens alone (tapegrad's export before "rwkv") as a
 * text's bytes, "no" (or no tokenizer at all) as bare ids. A GPT's text
 * takes no BOS. */
int tg_gguf_read_vocab(const gguf *g, int V, bool gpt, tg_vocab *v, tg_error *err)
{
    char sb[TG_SHOWN_SIZE];
    str model;
    if (!tg_gguf_get_str(g, "tokenizer.ggml.model", &model) || tg_gguf_str_is(model, "none") ||
        tg_gguf_str_is(model, "no"))
        return tg_vocab_ids(v, V), 0;
    if (gpt && tg_gguf_str_is(model, "gpt2")) return read_vocab_gpt2(g, V, v, err);
    if (gpt && tg_gguf_str_is(model, "rwkv")) return read_vocab_rwkv(g, V, v, err);
    if (!tg_gguf_str_is(model, "llama"))
        return tg_error_set(err,
                            "key 'tokenizer.ggml.model' is '%s': tapegrad reads llama.cpp's 'llama' "
                            "(SentencePiece-style) vocabularies%s",
                            tg_gguf_shown(model, sb),
                            gpt ? ", and for a GPT its 'gpt2' (GPT-2's BPE with merges) and 'rwkv' (a text's bytes)"
                                : ""),
               -1;
    if (gpt && tg_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", true) &&
        tg_gguf_find(g, "tokenizer.ggml.bos_token_id"))
        return tg_error_set(err,
                            "key 'tokenizer.ggml.add_bos_token' is true (or absent, llama.cpp's 'llama' "
                            "default): a GPT reads its text without BOS"),
               -1;
    const kv *tok = tg_gguf_find(g, "tokenizer.ggml.tokens"), *sc = tg_gguf_find(g, "tokenizer.ggml.scores"),
             *ty = tg_gguf_find(g, "tokenizer.ggml.token_type");
    if (!tok || tok->type != T_ARRAY || tok->elem != T_STRING || tok->count < 1 || tok->count > (uint64_t)V)
        return tg_error_set(err,
                            "key 'tokenizer.ggml.tokens' is not a list of at most %d strings (the "
                            "embedding's rows)",
                            V),
               -1;
    const int32_t n = (int32_t)tok->count;
    if (!sc || sc->type != T_ARRAY || sc->elem != T_F32 || sc->count != (uint64_t)n)
        return tg_error_set(err, "key 'tokenizer.ggml.scores' is not %d float32 values", (int)n), -1;
    if (!ty || ty->type != T_ARRAY || ty->elem != T_I32 || ty->count != (uint64_t)n)
        return tg_error_set(err, "key 'tokenizer.ggml.token_type' is not %d int32 values", (int)n), -1;
    for (int32_t i = 0; i < n; i++) {
        int32_t t;
        memcpy(&t, ty->val + 4 * (size_t)i, 4);
        if (t < 1 || t > 6)
            return tg_error_set(err,
                                "key 'tokenizer.ggml.token_type': id %d has type %d, not one of GGUF's "
                                "(1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte)",
                                (int)i, (int)t),
                   -1;
    }
    if (gpt && n == V && bytes_only(tok, ty, n) && !tg_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", true)) {
        /* tapegrad's export of a GPT's byte vocabulary: a text's bytes again */
        char set[256];
        const unsigned char *p = tok->val;
        for (int32_t i = 0; i < n; i++) {
            uint64_t l;
            memcpy(&l, p, 8);
            set[i] = (char)(l == 3 ? ' ' : strtol((const char *)p + 8 + 3, NULL, 16));
            p += 8 + l;
        }
        tg_vocab_bytes(v, set, (size_t)n);
        return 0;
    }
    int64_t *off = malloc(((size_t)n + 1) * sizeof *off);
    float *scores = malloc((size_t)n * sizeof *scores);
    uint8_t *types = malloc((size_t)n);
    unsigned char *pieces = NULL;
    int rc = -1;
    if (!off || !scores || !types) {
        tg_error_set(err, "out of memory");
        goto done;
    }
    /* the strings were checked by parse: each is a u64 length and its bytes */
    size_t total = 0;
    const unsigned char *p = tok->val;
    for (int32_t i = 0; i < n; i++) {
        uint64_t l;
        memcpy(&l, p, 8);
        off[i] = (int64_t)total;
        total += (size_t)l;
        p += 8 + l;
    }
    off[n] = (int64_t)total;
    if (!(pieces = malloc(total ? total : 1))) {
        tg_error_set(err, "out of memory");
        goto done;
    }
    p = tok->val;
    for (int32_t i = 0; i < n; i++) {
        uint64_t l;
        memcpy(&l, p, 8);
        memcpy(pieces + off[i], p + 8, (size_t)l);
        p += 8 + l;
        int32_t t;
        memcpy(&t, ty->val + 4 * (size_t)i, 4);
        types[i] = (uint8_t)t; /* 1..6: checked above */
    }
    memcpy(scores, sc->val, (size_t)n * 4);
    int64_t bos = -1, eos = -1;
    if (tg_gguf_get_int(g, "tokenizer.ggml.bos_token_id", 0, n - 1, &bos, err) < 0 ||
        tg_gguf_get_int(g, "tokenizer.ggml.eos_token_id", 0, n - 1, &eos, err) < 0)
        goto done;
    const tg_spm_options o = {.space_u2581 = true,
                              .add_prefix = tg_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", true),
                              .merge_floor = -INFINITY};
    tg_tokenizer *t =
        tg_tok_new_spm(&(tg_spm_pieces){n, pieces, off, scores, types, (int32_t)bos, (int32_t)eos}, &o, err);
    if (!t) goto done;
    /* llama.cpp puts BOS first when add_bos_token says so (its default for "llama" is yes) */
    rc =
        tg_vocab_tokenizer(v, t, !gpt && bos >= 0 && tg_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", true), V, err);
done:
    free(off), free(scores), free(types), free(pieces);
    return rc;
}
