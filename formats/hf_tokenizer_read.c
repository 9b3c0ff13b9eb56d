/* A Hugging Face directory's tokenizer files read into a tapegrad
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
#include "hf_files_internal.h"
#include "hf_tokenizer_parts_internal.h"

/* A Llama-style tokenizer.json (a BPE model with byte_fallback, spaces as
 * U+2581 or ' ', no pre-tokenizer splitting) as TG_TOK_SPM: pieces "<0xXX>"
 * are byte pieces, special added tokens control pieces (the unk_token
 * unknown), the rest normal; piece c made by merges scores -k, k the
 * place of its first merge, and the pieces no merge makes score below
 * merge_floor (never made, as in the library). llama2.c's byte vocabulary
 * (<unk>, <s>, </s>, the 256 bytes, no merges, ' ' then the text, BOS)
 * comes back as TG_VOCAB_LLAMA2C. */
static int spm_from_json(const cJSON *j, const cJSON *model, bool llama, int32_t bos_id, int32_t eos_id, tg_vocab *v,
                         char *notice, size_t notice_len, tg_error *err)
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
    if (pre && !cJSON_IsNull(pre) && strcmp(tg_hf_tok_type_of(pre), "Metaspace")) {
        tg_error_set(err,
                     "hf: tokenizer.json: the pre-tokenizer '%s' splits the text, which tapegrad's pieces "
                     "with scores never do",
                     tg_shown(tg_hf_tok_type_of(pre), shown));
        goto out;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "ignore_merges"))) {
        tg_error_set(err,
                     "hf: tokenizer.json: model.ignore_merges is true (a whole text that is a piece is one "
                     "token), which tapegrad's pieces with scores do not do");
        goto out;
    }
    if (tg_hf_tok_text_rule(cJSON_GetObjectItemCaseSensitive(j, "normalizer"), pre, &r, err) ||
        tg_hf_tok_read_vocab(model, 1 << 24, &map, &names, &n, err) ||
        tg_hf_tok_template_bos(cJSON_GetObjectItemCaseSensitive(j, "post_processor"), map, &bos, err) ||
        tg_hf_tok_read_merges(model, map, &mc, &m, err))
        goto out;
    if (llama != (bos >= 0)) {
        tg_error_set(err, "hf: tokenizer.json: %s",
                     llama ? "the post-processor adds no BOS, with which tapegrad's "
                             "Llama starts every text"
                           : "the post-processor adds a BOS, which tapegrad's GPT does not");
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
    if (tg_hf_tok_read_added(cJSON_GetObjectItemCaseSensitive(j, "added_tokens"), map, special, err)) goto out;
    /* scores: a piece's first merge's place */
    for (int32_t i = 0; i < n; i++) scores[i] = NAN;
    for (int32_t k = 0; k < m; k++)
        if (isnan(scores[mc[3 * k + 2]])) scores[mc[3 * k + 2]] = -(float)k;
    const double floor_ = -(double)m - 0.5;
    off[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        const size_t len = strlen(names[i]);
        const bool byte = !special[i] && len == 6 && !memcmp(names[i], "<0x", 3) &&
            isxdigit((unsigned char)names[i][3]) && isxdigit((unsigned char)names[i][4]) && names[i][5] == '>';
        types[i] = special[i]
            ? (cJSON_IsString(unk) && !strcmp(unk->valuestring, names[i]) ? TG_PIECE_UNKNOWN : TG_PIECE_CONTROL)
            : byte ? TG_PIECE_BYTE
                   : TG_PIECE_NORMAL;
        if (types[i] != TG_PIECE_NORMAL || isnan(scores[i]))
            scores[i] = types[i] == TG_PIECE_NORMAL ? (float)(floor_ - 0.5) : 0;
        memcpy(pieces + off[i], names[i], len);
        off[i + 1] = off[i] + (int64_t)len;
    }
    int32_t eos = eos_id >= 0 && eos_id < n && types[eos_id] == TG_PIECE_CONTROL ? eos_id : -1;
    if (eos < 0 && tg_hf_tok_vocab_id(map, "</s>") >= 0 && types[tg_hf_tok_vocab_id(map, "</s>")] == TG_PIECE_CONTROL)
        eos = tg_hf_tok_vocab_id(map, "</s>");
    if (bos < 0 && bos_id >= 0 && bos_id < n && types[bos_id] == TG_PIECE_CONTROL) bos = bos_id;
    if (bos >= 0 && types[bos] != TG_PIECE_CONTROL) {
        tg_error_set(err, "hf: tokenizer.json: the BOS '%s' is not a special added token", tg_shown(names[bos], shown));
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
            tg_error_set(err,
                         "hf: tokenizer.json: the special '%s' is one character, which the library would "
                         "take from the text and tapegrad would not",
                         tg_shown(names[i], shown));
            goto out;
        }
    }
    if (tg_hf_tok_same_merges(t, mc, m, names, false, err)) goto out;
    if (r.metaspace && notice && notice_len)
        snprintf(notice, notice_len,
                 "tokenizer.json's Metaspace pre-tokenizer puts no '\u2581' before a text that "
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
    if (tg_hf_tok_text_rule(cJSON_GetObjectItemCaseSensitive(j, "normalizer"), NULL, &r, err) ||
        tg_hf_tok_read_vocab(model, 1 << 24, &map, &names, &n, err) ||
        tg_hf_tok_template_bos(cJSON_GetObjectItemCaseSensitive(j, "post_processor"), map, &bos, err) ||
        tg_hf_tok_read_merges(model, map, &mc, &m, err))
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
    if (tg_hf_tok_read_added(cJSON_GetObjectItemCaseSensitive(j, "added_tokens"), map, special, err)) goto out;
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
    t->bos = bos >= 0 ? bos : tg_hf_tok_vocab_id(map, "<s>");
    t->eos = tg_hf_tok_vocab_id(map, "</s>");
    t->unk = tg_hf_tok_vocab_id(map, "<unk>");
    const int32_t sp[3] = {t->bos, t->eos, t->unk};
    for (int k = 0; k < 3; k++)
        if (sp[k] >= 0 && !special[sp[k]]) {
            tg_error_set(err, "hf: tokenizer.json: '%s' is not a special added token", names[sp[k]]);
            goto out;
        }
    if (tg_hf_tok_same_merges(t, mc, m, names, true, err)) goto out;
    /* the learned merges: the pieces after the last special or single byte, each by its first merge */
    int32_t first = n;
    while (first > 0 && !special[first - 1] && off[first] - off[first - 1] > 1) first--;
    if (!(t->merges = tg_malloc(((size_t)(n - first) + 1) * 2 * sizeof *t->merges))) goto oom;
    t->n_merges = n - first;
    for (int32_t c = first, k = 0; c < n; c++) {
        while (k < m && mc[3 * k + 2] != c) k++;
        if (k == m || mc[3 * k] >= c || mc[3 * k + 1] >= c) {
            tg_error_set(err,
                         "hf: tokenizer.json: the first merge of id %d is not of two earlier ids, as "
                         "tapegrad's BPE learns them",
                         (int)c);
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
    int rc = tg_hf_tok_read_vocab(model, 256, &map, &names, &n, err);
    if (!rc &&
        ((merges && cJSON_GetArraySize(merges)) || (norm && !cJSON_IsNull(norm)) ||
         (post && !cJSON_IsNull(post) && strcmp(tg_hf_tok_type_of(post), "ByteLevel")) || cJSON_GetArraySize(added)))
        rc = tg_error_set(err,
                          "hf: tokenizer.json: a ByteLevel tokenizer without GPT-2's regex is read as a byte "
                          "vocabulary, which has no merges, normalizer, template or added tokens");
    char chars[256];
    for (int32_t i = 0; !rc && i < n; i++) {
        unsigned char b[8];
        char shown[TG_SHOWN_SIZE];
        if (strlen(names[i]) > 2 || tg_gpt2_unbyte(names[i], byte_of, b) != 1 ||
            (i && (unsigned char)chars[i - 1] >= b[0]))
            rc = tg_error_set(err,
                              "hf: tokenizer.json: '%s' (id %d) is not the next byte of a byte vocabulary "
                              "(each id one byte, in byte order)",
                              tg_shown(names[i], shown), (int)i);
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
    if (strcmp(tg_hf_tok_type_of(model), "BPE")) {
        tg_error_set(err,
                     "hf: tokenizer.json: the model '%s' is not BPE, the one tapegrad's tokenizers are "
                     "(WordPiece, Unigram and WordLevel are not read)",
                     tg_shown(tg_hf_tok_type_of(model), shown));
    } else if (!cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(model, "dropout")) &&
               cJSON_GetObjectItemCaseSensitive(model, "dropout")) {
        tg_error_set(err, "hf: tokenizer.json: model.dropout is set: the ids would be random");
    } else if ((cJSON_IsString(cJSON_GetObjectItemCaseSensitive(model, "continuing_subword_prefix")) &&
                *cJSON_GetObjectItemCaseSensitive(model, "continuing_subword_prefix")->valuestring) ||
               (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(model, "end_of_word_suffix")) &&
                *cJSON_GetObjectItemCaseSensitive(model, "end_of_word_suffix")->valuestring)) {
        tg_error_set(err,
                     "hf: tokenizer.json: model.continuing_subword_prefix or end_of_word_suffix is set, "
                     "which tapegrad's tokenizers have not");
    } else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "byte_fallback"))) {
        rc = spm_from_json(j, model, llama, bos_id, eos_id, v, notice, notice_len, err);
    } else if (!strcmp(tg_hf_tok_type_of(pre), "ByteLevel") && !cJSON_IsFalse(regex)) {
        const cJSON *norm = cJSON_GetObjectItemCaseSensitive(j, "normalizer");
        const cJSON *added = cJSON_GetObjectItemCaseSensitive(j, "added_tokens");
        tg_tokenizer *t = NULL;
        if (llama)
            tg_error_set(err,
                         "hf: tokenizer.json: GPT-2's tokenizer has no BOS, with which tapegrad's Llama "
                         "starts every text");
        else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pre, "add_prefix_space")))
            tg_error_set(err,
                         "hf: tokenizer.json: pre_tokenizer is not GPT-2's (ByteLevel, add_prefix_space "
                         "false, use_regex true)");
        else if (norm && !cJSON_IsNull(norm))
            tg_error_set(err, "hf: tokenizer.json: it has a normalizer, which GPT-2's tokenizer has not");
        else {
            bool ok = true;
            for (const cJSON *a = added ? added->child : NULL; a && ok; a = a->next)
                ok = tg_hf_tok_str_is(a, "content", "<|endoftext|>");
            if (!ok)
                tg_error_set(err,
                             "hf: tokenizer.json: an added token other than <|endoftext|>, which tapegrad's "
                             "GPT-2 tokenizer has not");
            else if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(model, "vocab")))
                tg_error_set(err, "hf: tokenizer.json: model.vocab is not an object");
            else
                t = tg_gpt2_tokenizer(cJSON_GetObjectItemCaseSensitive(model, "vocab"),
                                      cJSON_GetObjectItemCaseSensitive(model, "merges"), "hf: tokenizer.json", err);
        }
        if (t) rc = tg_vocab_tokenizer(v, t, false, 0, err);
    } else if (!strcmp(tg_hf_tok_type_of(pre), "ByteLevel")) {
        rc = bytes_from_json(j, model, v, err);
    } else if (!strcmp(tg_hf_tok_type_of(pre), "Sequence") && cJSON_GetArraySize(list) == 2 &&
               !strcmp(tg_hf_tok_type_of(split), "Split") && tg_hf_tok_str_is(pat, "Regex", BPE_WORDS) &&
               tg_hf_tok_str_is(split, "behavior", "Isolated") &&
               !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(split, "invert")) &&
               !strcmp(tg_hf_tok_type_of(bl), "ByteLevel") &&
               cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(bl, "use_regex")) &&
               !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(bl, "add_prefix_space"))) {
        rc = bpe_from_json(j, model, llama, v, err);
    } else {
        tg_error_set(err,
                     "hf: tokenizer.json: the pre-tokenizer '%s' is none of tapegrad's (GPT-2's ByteLevel "
                     "with its regex; ByteLevel alone for bytes; Split of tapegrad's BPE words then ByteLevel; none or "
                     "Metaspace with byte_fallback for pieces with scores)",
                     tg_shown(tg_hf_tok_type_of(pre), shown));
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
        return tg_error_set(err,
                            "hf: vocab.json and merges.txt are GPT-2's tokenizer, which has no BOS, with "
                            "which tapegrad's Llama starts every text");
    tg_tokenizer *t = tokenizer_pair(dir, err);
    return t ? tg_vocab_tokenizer(v, t, false, 0, err) : -1;
}
