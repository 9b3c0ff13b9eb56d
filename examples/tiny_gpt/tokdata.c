/* A run's vocabulary, and training on token files (tokdata.h). */
#define _DEFAULT_SOURCE   /* realpath */
#include "tokdata.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the run's vocabulary ------------------------------------------------- */

int vocab_for_run(tg_vocab *v, const char *tokenizer, bool data_tokens, int vocab_size, bool llama,
                  const tg_st_file *from, const char *text, size_t len, char *err, size_t errlen)
{
    tg_error e2 = {0};
    tg_tokenizer *given = NULL;
    memset(v, 0, sizeof *v);
    if (tokenizer && !(given = tg_tok_load(tokenizer, &e2)))
        return snprintf(err, errlen, "--tokenizer %s: %s", tokenizer, e2.msg), -1;
    if (given && data_tokens && vocab_size && vocab_size < tg_tok_vocab_size(given) && !(from && tg_st_meta(from, "vocab"))) {
        snprintf(err, errlen, "--vocab-size %d is smaller than the tokenizer's %d ids (it may be larger: ids the "
                              "tokenizer lacks are never seen)", vocab_size, (int)tg_tok_vocab_size(given));
        tg_tok_free(given);
        return -1;
    }
    if (from && tg_st_meta(from, "vocab")) {   /* the run's own */
        if (tg_vocab_read(v, from, err, errlen)) {
            tg_tok_free(given);
            return -1;
        }
        const bool same = !given || (v->kind == TG_VOCAB_TOKENIZER && tg_tok_same(v->tok, given));
        tg_tok_free(given);
        if (same) return 0;
        snprintf(err, errlen, "--tokenizer %s is not the tokenizer of the run (%s); a resumed run keeps it: start a "
                              "new run (another --out, or --force) to change it", tokenizer,
                 v->kind == TG_VOCAB_TOKENIZER ? "its checkpoint holds another one"
                 : v->kind == TG_VOCAB_IDS     ? "it trained on token ids without a tokenizer"
                                            : "it has a byte vocabulary");
        tg_vocab_free(v);
        return -1;
    }
    if (given) return tg_vocab_tokenizer(v, given, llama, data_tokens ? vocab_size : 0, err, errlen);
    if (data_tokens) {
        if (vocab_size < 1)
            return snprintf(err, errlen, "--data-tokens needs --vocab-size V (every id must be below it), or a "
                                         "--tokenizer whose ids they are"), -1;
        tg_vocab_ids(v, vocab_size);
    } else if (llama) {
        tg_vocab_llama2c(v);   /* llama2.c's ids: three specials, then the 256 bytes */
    } else {
        tg_vocab_bytes(v, text, len);   /* the data's sorted bytes */
    }
    return 0;
}

int bpe_words_parse(const char *name, tg_bpe_words *words)
{
    if (!strcmp(name, "classes")) *words = TG_BPE_WORDS_CLASSES;
    else if (!strcmp(name, "spaces")) *words = TG_BPE_WORDS_SPACES;
    else return -1;
    return 0;
}

bool tokenizer_is_trained(const char *tokenizer) { return tokenizer && !strncmp(tokenizer, "bpe:", 4); }

int vocab_train_bpe(tg_vocab *v, const char *tokenizer, bool llama, const char *text, size_t len, char *err,
                    size_t errlen)
{
    memset(v, 0, sizeof *v);
    const char *n = tokenizer + 4;
    char *end;
    errno = 0;
    const long V = strtol(n, &end, 10);
    if (!(*n >= '0' && *n <= '9') || (*end && *end != ':') || errno || V < 259 || V > 1 << 24)
        return snprintf(err, errlen, "--tokenizer %s: bpe:V wants V, the pieces, a whole number from 259 (the bytes "
                                     "and three specials) to 16777216", tokenizer), -1;
    tg_bpe_words words = TG_BPE_WORDS_CLASSES;
    if (*end && bpe_words_parse(end + 1, &words))
        return snprintf(err, errlen, "--tokenizer %s: after bpe:V comes nothing, :classes or :spaces (which pairs may "
                                     "merge: docs/tokenizers.md)", tokenizer), -1;
    const size_t train = tg_text_train_bytes(text, len);   /* the train split's bytes: never the val split's */
    tg_error e2 = {0};
    const tg_bpe_options bo = {.vocab_size = (int)V, .words = words};
    tg_tokenizer *tok = tg_bpe_train(text, train, &bo, &e2);
    if (!tok) return snprintf(err, errlen, "--tokenizer %s: %s", tokenizer, e2.msg), -1;
    return tg_vocab_tokenizer(v, tok, llama, 0, err, errlen);
}

/* ---- token files ------------------------------------------------------------ */

bool run_on_tokens(const char *data_tokens, const tg_st_file *rec)
{
    return data_tokens || (rec && tg_st_meta(rec, "train.data_tokens"));
}

/* The identity the run records for a token file: "N:fnv1a64:HEX". */
static void id_text(const tg_token_file_id *id, char *buf, size_t size)
{
    snprintf(buf, size, "%lld:fnv1a64:%016" PRIx64, (long long)id->count, id->fnv);
}

/* Checks the file read for flag against the identity rec records under
 * key (a different one: an error if must_match, else a notice), says what
 * was read, and adds its path and identity to meta. */
static int check_one(const char *flag, const char *path, const tg_token_file_id *id, const tg_st_file *rec,
                     const char *key, bool must_match, kv_list *meta, const char *cmd, char *err, size_t errlen)
{
    char idkey[64], idt[64], full[4096];
    id_text(id, idt, sizeof idt);
    snprintf(idkey, sizeof idkey, "%s_id", key);
    const char *was = rec ? tg_st_meta(rec, idkey) : NULL;
    if (was && strcmp(was, idt)) {
        if (must_match)
            return snprintf(err, errlen, "--%s %s (%s) is not the token file the run was trained on: %s (%s)", flag,
                            path, idt, tg_st_meta(rec, key), was), -1;
        if (cmd) fprintf(stderr, "tiny_gpt %s: notice: --%s %s is not the file the run was trained on\n", cmd, flag, path);
    }
    if (!realpath(path, full)) snprintf(full, sizeof full, "%s", path);
    if (cmd && meta) fprintf(stderr, "tiny_gpt %s: %s: %lld tokens (%s's format)\n", cmd, path, (long long)id->count,
                             id->format == TG_TOKFILE_LLMC ? "llm.c" : "nanoGPT");
    if (meta && (kv_add(meta, key, full) || kv_add(meta, idkey, idt))) return snprintf(err, errlen, "out of memory"), -1;
    return 0;
}

int run_load_tokens(tg_dataset *d, const tg_vocab *v, int64_t V, const char *train_flag, const char *val_flag,
                    int block_size, const tg_st_file *rec, bool must_match, kv_list *meta, const char *cmd,
                    char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    if (errlen) err[0] = 0;
    const char *train = train_flag ? train_flag : rec ? tg_st_meta(rec, "train.data_tokens") : NULL;
    const char *val = val_flag ? val_flag : rec ? tg_st_meta(rec, "train.val_tokens") : NULL;
    if (val && !*val) val = NULL;   /* recorded as "": the train file split 90/10 */
    if (!train) return snprintf(err, errlen, "--data-tokens is required"), -1;
    tg_vocab ids_v = *v;   /* ids below the model's V (a tokenizer may have fewer) */
    ids_v.size = (int)V;
    tg_token_file_id ids[2];
    char e2[2048];
    const int rc = tg_dataset_from_token_files(d, &ids_v, train, val, block_size, ids, e2, sizeof e2);
    if (rc) return snprintf(err, errlen, "--%s: %s", rc == -2 ? "val-tokens" : "data-tokens", e2), -1;
    if (check_one("data-tokens", train, &ids[0], rec, "train.data_tokens", must_match, meta, cmd, err, errlen) ||
        (val && check_one("val-tokens", val, &ids[1], rec, "train.val_tokens", must_match, meta, cmd, err, errlen)) ||
        (!val && meta && (kv_add(meta, "train.val_tokens", "") || kv_add(meta, "train.val_tokens_id", "")))) {
        if (!*err) snprintf(err, errlen, "out of memory");
        tg_dataset_free(d);
        return -1;
    }
    return 0;
}
