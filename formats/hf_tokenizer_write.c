/* tokenizer.json and tokenizer_config.json written for a tapegrad
 * vocabulary (hf_tokenizer_internal.h says what each form becomes). */
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
#include "hf_tokenizer_json_internal.h"
#include "hf_tokenizer_parts_internal.h"

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
    const int32_t n = tg_tok_vocab_size(t) - 1; /* <|endoftext|> is n */
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
                snprintf(why, why_len,
                         "piece %d is no merge of two earlier pieces, so the tokenizer is not a BPE one "
                         "tokenizer.json can say",
                         (int)id);
            ok = false; /* -2: out of memory, said below */
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
        for (int k = 0; k < 3; k++) { /* GPT-2's: the byte-level steps, its regex, no prefix space added */
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
            if (!tg_hf_tok_valid_utf8(p, len)) {
                snprintf(why, why_len, "the special id %d is not UTF-8 text", (int)id);
                ok = false;
                break;
            }
            cJSON_AddItemToArray(added, tg_hf_tok_added_token(id, names[id]));
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
    if (ok && !(pairs = tg_hf_tok_all_pairs(t, &np))) ok = false;
    ok = ok && tg_hf_tok_add_merges(merges, pairs, np, names);
    tg_free(pairs);
    stbds_shfree(seen);
    if (!ok) {
        if (!why[0]) snprintf(why, why_len, "out of memory");
        cJSON_Delete(vocab);
        cJSON_Delete(added);
        cJSON_Delete(merges);
        return NULL;
    }
    cJSON *split = tg_hf_tok_typed("Split"), *pat = cJSON_AddObjectToObject(split, "pattern");
    cJSON_AddStringToObject(pat, "Regex", BPE_WORDS);
    cJSON_AddStringToObject(split, "behavior", "Isolated");
    cJSON_AddFalseToObject(split, "invert");
    const bool bos = llama && t->bos >= 0;
    cJSON *dec = llama
        ? tg_hf_tok_sequence("decoders", tg_hf_tok_byte_level(true), tg_hf_tok_strip_prefix_space(), NULL, NULL)
        : tg_hf_tok_byte_level(true);
    return tg_hf_tok_tokenizer_file(added, llama ? tg_hf_tok_prepend(" ") : NULL,
                                    tg_hf_tok_sequence("pretokenizers", split, tg_hf_tok_byte_level(false), NULL, NULL),
                                    bos ? tg_hf_tok_bos_template(names[t->bos], t->bos) : NULL, dec, vocab, merges,
                                    NULL, false);
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
        if (!tg_hf_tok_valid_utf8(p, len)) {
            snprintf(why, why_len,
                     "id %d is not UTF-8 text (a byte piece spelled as its byte 0x%02X, or part of a "
                     "character), which tokenizer.json cannot hold",
                     (int)id, p[0]);
            ok = false;
        } else if (ty != TG_PIECE_NORMAL && ty != TG_PIECE_BYTE && tg_utf8_char(p, len, &sub) == (int)len) {
            snprintf(why, why_len,
                     "the %s id %d '%s' is one character, which the tokenizers library would take "
                     "from the text",
                     ty == TG_PIECE_UNUSED ? "unused" : "special", (int)id, tg_shown(names[id], shown));
            ok = false;
        } else if (stbds_shgeti(seen, names[id]) >= 0) {
            snprintf(why, why_len, "ids %d and %d are both spelled '%s'", (int)stbds_shget(seen, names[id]), (int)id,
                     tg_shown(names[id], shown));
            ok = false;
        }
        if (!ok) break;
        stbds_shput(seen, names[id], id);
        ok = cJSON_AddNumberToObject(vocab, names[id], id) != NULL;
        if (ty == TG_PIECE_CONTROL || ty == TG_PIECE_UNKNOWN)
            cJSON_AddItemToArray(added, tg_hf_tok_added_token(id, names[id]));
    }
    if (ok && !(pairs = tg_hf_tok_all_pairs(t, &np))) ok = false;
    for (int32_t i = 0; ok && i + 1 < (int32_t)np; i++)
        if (pairs[i].rank == pairs[i + 1].rank && pairs[i].c != pairs[i + 1].c) {
            snprintf(why, why_len,
                     "ids %d and %d score the same, where tapegrad merges the leftmost and the tokenizers "
                     "library the first listed",
                     (int)pairs[i].c, (int)pairs[i + 1].c);
            ok = false;
        }
    ok = ok && tg_hf_tok_add_merges(merges, pairs, np, names);
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
    cJSON *norm = pre && u
        ? tg_hf_tok_sequence("normalizers", tg_hf_tok_prepend(U2581), tg_hf_tok_replace(" ", U2581), NULL, NULL)
        : pre ? tg_hf_tok_prepend(" ")
        : u   ? tg_hf_tok_replace(" ", U2581)
              : NULL;
    cJSON *dec =
        tg_hf_tok_sequence("decoders", u ? tg_hf_tok_replace(U2581, " ") : NULL, tg_hf_tok_typed("ByteFallback"),
                           tg_hf_tok_typed("Fuse"), pre ? tg_hf_tok_strip_prefix_space() : NULL);
    return tg_hf_tok_tokenizer_file(added, norm, NULL, bos ? tg_hf_tok_bos_template(names[t->bos], t->bos) : NULL, dec,
                                    vocab, merges, t->unk >= 0 ? names[t->unk] : NULL, true);
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
    } else if (v->kind == TG_VOCAB_LLAMA2C) { /* <unk> <s> </s> and the bytes; ' ' then the text, after BOS */
        cJSON *vocab = cJSON_CreateObject(), *added = cJSON_CreateArray();
        static const char *const sp[3] = {"<unk>", "<s>", "</s>"};
        for (int k = 0; k < 3; k++) {
            cJSON_AddNumberToObject(vocab, sp[k], k);
            cJSON_AddItemToArray(added, tg_hf_tok_added_token(k, sp[k]));
        }
        for (int b = 0; b < 256; b++) {
            char s[8];
            snprintf(s, sizeof s, "<0x%02X>", b);
            cJSON_AddNumberToObject(vocab, s, 3 + b);
        }
        *tok =
            tg_hf_tok_tokenizer_file(added, tg_hf_tok_prepend(" "), NULL, tg_hf_tok_bos_template("<s>", TG_VOCAB_BOS),
                                     tg_hf_tok_sequence("decoders", tg_hf_tok_typed("ByteFallback"),
                                                        tg_hf_tok_typed("Fuse"), tg_hf_tok_strip_prefix_space(), NULL),
                                     vocab, NULL, "<unk>", true);
        *bos = TG_VOCAB_BOS, *eos = 2;
        bos_s = "<s>", eos_s = "</s>", unk_s = "<unk>";
    } else { /* TG_VOCAB_BYTES: the bytes present, each its GPT-2 stand-in */
        uint32_t cp_of[256];
        tg_gpt2_byte_chars(cp_of);
        cJSON *vocab = cJSON_CreateObject();
        for (int i = 0; i < v->size; i++) {
            char s[4];
            tg_gpt2_byte_string(&v->chars[i], 1, cp_of, s);
            cJSON_AddNumberToObject(vocab, s, i);
        }
        *tok = tg_hf_tok_tokenizer_file(NULL, NULL, tg_hf_tok_byte_level(false), NULL, tg_hf_tok_byte_level(true),
                                        vocab, NULL, NULL, false);
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
