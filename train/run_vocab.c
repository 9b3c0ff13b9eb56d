/* A run's vocabulary (train/run_internal.h): the checkpoint's, a
 * tokenizer's (read, or a BPE trained on the train split), token ids, or
 * bytes. */
#include "train.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

bool tg_run_trains_tokenizer(const char *tokenizer) { return tokenizer && !strncmp(tokenizer, "bpe:", 4); }

/* tokenizer "bpe:V[:words]": a V-piece BPE tokenizer (tg_bpe_train)
 * learned from the train split of the text alone, its first 90% of bytes
 * (nanoGPT's split), into v (docs for a Llama). */
static int train_bpe(tg_vocab *v, const char *tokenizer, bool llama, const tg_run_text *t, const char *flag,
                     tg_error *err)
{
    memset(v, 0, sizeof *v);
    const char *n = tokenizer + 4;
    char *end;
    errno = 0;
    const long V = strtol(n, &end, 10);
    if (!(*n >= '0' && *n <= '9') || (*end && *end != ':') || errno || V < 259 || V > 1 << 24)
        return tg_error_set(err,
                            "%s %s: bpe:V wants V, the pieces, a whole number from 259 (the bytes and three "
                            "specials) to 16777216",
                            flag, tokenizer);
    tg_bpe_words words = TG_BPE_WORDS_CLASSES;
    if (*end && !strcmp(end + 1, "spaces")) words = TG_BPE_WORDS_SPACES;
    else if (*end && strcmp(end + 1, "classes"))
        return tg_error_set(err,
                            "%s %s: after bpe:V comes nothing, :classes or :spaces (which pairs may merge: "
                            "docs/tokenizers.md)",
                            flag, tokenizer);
    const size_t train = tg_text_train_bytes(t->text, t->len); /* the train split's bytes: never the val split's */
    const tg_bpe_options bo = {.vocab_size = (int)V, .words = words};
    tg_tokenizer *tok = tg_bpe_train(t->text, train, &bo, err);
    char what[1200];
    snprintf(what, sizeof what, "%s %s", flag, tokenizer);
    if (!tok) return tg_error_prefix(err, what);
    return tg_vocab_tokenizer(v, tok, llama, 0, err);
}

/* The vocabulary of a run that trains no tokenizer now: the checkpoint's
 * (from, when it records one; a tokenizer given too must be the one it
 * holds), else the tokenizer file, else ids of vocab_size for token
 * files, else llama2.c's bytes for a Llama, else the text's bytes. */
static int vocab_of(tg_vocab *v, const tg_run_config *c, bool tokens, bool llama, const tg_st_file *from,
                    const tg_run_text *t, const tg_run_say *say, tg_error *err)
{
    char tname[80], vname[80], dname[80], again[80];
    tg_error le = {0};
    tg_run_label(say, "tokenizer", tname);
    tg_run_label(say, "vocab-size", vname);
    tg_run_label(say, "data-tokens", dname);
    snprintf(again, sizeof again, "%s", say->flags ? "another --out, or --force" : "another directory, or force");
    tg_tokenizer *given = NULL;
    memset(v, 0, sizeof *v);
    if (c->tokenizer && !(given = tg_tok_load(c->tokenizer, &le)))
        return tg_error_set(err, "%s %s: %s", tname, c->tokenizer, le.msg);
    const bool own = from && tg_st_meta(from, "vocab");
    if (given && tokens && c->vocab_size && c->vocab_size < tg_tok_vocab_size(given) && !own) {
        tg_error_set(err,
                     "%s %d is smaller than the tokenizer's %d ids (it may be larger: ids the tokenizer lacks "
                     "are never seen)",
                     vname, c->vocab_size, (int)tg_tok_vocab_size(given));
        tg_tok_free(given);
        return -1;
    }
    if (own) { /* the run's own */
        if (tg_vocab_read(v, from, err)) {
            tg_tok_free(given);
            return -1;
        }
        const bool same = !given || (v->kind == TG_VOCAB_TOKENIZER && tg_tok_same(v->tok, given));
        tg_tok_free(given);
        if (same) return 0;
        tg_error_set(err,
                     "%s %s is not the tokenizer of the run (%s); a resumed run keeps it: start a new run (%s) "
                     "to change it",
                     tname, c->tokenizer,
                     v->kind == TG_VOCAB_TOKENIZER ? "its checkpoint holds another one"
                         : v->kind == TG_VOCAB_IDS ? "it trained on token ids without a tokenizer"
                                                   : "it has a byte vocabulary",
                     again);
        tg_vocab_release(v);
        return -1;
    }
    if (given) return tg_vocab_tokenizer(v, given, llama, tokens ? c->vocab_size : 0, err);
    if (tokens) {
        if (c->vocab_size < 1)
            return tg_error_set(err, "%s needs %s V (every id must be below it), or a %s whose ids they are", dname,
                                vname, tname);
        tg_vocab_ids(v, c->vocab_size);
    } else if (llama) {
        tg_vocab_llama2c(v); /* llama2.c's ids: three specials, then the 256 bytes */
    } else {
        tg_vocab_bytes(v, t->text, t->len); /* the data's sorted bytes */
    }
    return 0;
}

int tg_run_vocab(tg_vocab *v, const tg_run_config *c, bool tokens, const tg_st_file *from, const char *out_dir,
                 const tg_run_text *t, const tg_run_say *say, tg_error *err)
{
    const bool llama = c->arch && !strcmp(c->arch, "llama");
    const bool train = tg_run_trains_tokenizer(c->tokenizer);
    char tname[80];
    tg_run_label(say, "tokenizer", tname);
    if (train && tokens)
        return tg_error_set(err, "%s %s trains on a text: it excludes token files", tname, c->tokenizer);
    if (train && !(from && tg_st_meta(from, "vocab"))) {
        const double t0 = tg_run_clock();
        if (train_bpe(v, c->tokenizer, llama, t, tname, err)) return -1;
        tg_run_notify(say, TG_RUN_SAY,
                      "%s %s: trained %d ids on the text's first %zu bytes (the train split) in "
                      "%.2f s",
                      tname, c->tokenizer, (int)tg_tok_vocab_size(v->tok), tg_text_train_bytes(t->text, t->len),
                      tg_run_clock() - t0);
        return 0;
    }
    tg_run_config given = *c; /* a tokenizer to be trained is not a file to read */
    if (train) given.tokenizer = NULL;
    if (vocab_of(v, &given, tokens, llama, from, t, say, err)) return -1;
    if (train && (v->kind != TG_VOCAB_TOKENIZER || tg_tok_kind_of(v->tok) != TG_TOK_BPE)) {
        tg_vocab_release(v);
        return tg_error_set(err,
                            "%s %s: the run in %s has no BPE tokenizer of its own to keep (a resumed run keeps "
                            "its vocabulary)",
                            tname, c->tokenizer, out_dir);
    }
    return 0;
}
