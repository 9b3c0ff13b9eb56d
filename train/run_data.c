/* A run's data (train/run.h): its text, a file's bytes or the built-in
 * corpus, with the identity its checkpoints record (path, size, FNV-1a),
 * and its token files with theirs. */
#define _DEFAULT_SOURCE /* realpath */
#include "train.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_internal.h"

uint64_t tg_run_fnv1a64(const void *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < n; i++) h = (h ^ ((const uint8_t *)p)[i]) * 0x100000001b3u;
    return h;
}

void tg_run_say_from(tg_run_say *say, const tg_run_options *o)
{
    *say = (tg_run_say){.fn = o ? o->notice : NULL, .ctx = o ? o->ctx : NULL, .flags = o && o->flag_names};
}

/* ---- the text ---------------------------------------------------------------- */

/* What a checkpoint records of a text: 1 when it does, 0 when it does not
 * (an older checkpoint), -1 on malformed values. */
static int recorded_text(char *path, size_t size, uint64_t *bytes, uint64_t *fnv, const tg_st_file *f, const char *from,
                         tg_error *err)
{
    const char *p = tg_st_meta(f, "train.data"), *b = tg_st_meta(f, "train.data_bytes"),
               *c = tg_st_meta(f, "train.data_checksum");
    if (!p && !b && !c) return 0;
    char *end;
    if (!p || !b || !c || strlen(p) >= size || !(*b >= '0' && *b <= '9') || (*bytes = strtoull(b, &end, 10), *end) ||
        strncmp(c, "fnv1a64:", 8) || strlen(c) != 24 || (*fnv = strtoull(c + 8, &end, 16), *end))
        return tg_error_set(err,
                            "%s: the data's identity (train.data, train.data_bytes, train.data_checksum) is "
                            "malformed",
                            from);
    snprintf(path, size, "%s", p);
    return 1;
}

/* The bytes of the file at path, or the corpus (path NULL or ""). */
static int read_text(tg_run_text *t, const char *path, int corpus_chars, const tg_run_say *say, tg_error *err)
{
    char name[80];
    if (path && *path) {
        if (!(t->text = tg_file_read(path, &t->len, err))) return -1;
        if (t->len == 0) {
            tg_run_text_release(t);
            return tg_error_set(err, "%s %s: the file is empty", tg_run_label(say, "data", name), path);
        }
        return 0;
    }
    tg_corpus cp;
    if (tg_corpus_init(&cp, 1, corpus_chars > 0 ? (size_t)corpus_chars : 1, NULL))
        return tg_error_set(err, "out of memory generating the corpus");
    t->text = cp.text;
    t->len = cp.len;
    t->floor_nats = tg_corpus_floor(&cp);
    return 0;
}

int tg_run_text_read(tg_run_text *t, const tg_run_config *c, const tg_st_file *rec, const char *from, bool must_match,
                     const tg_run_say *say, tg_error *err)
{
    memset(t, 0, sizeof *t);
    t->floor_nats = -1;
    char was_path[4096], name[80];
    uint64_t was_bytes = 0, was_fnv = 0;
    const int have = rec ? recorded_text(was_path, sizeof was_path, &was_bytes, &was_fnv, rec, from, err) : 0;
    if (have < 0) return -1;
    if (read_text(t, c->data, c->corpus_chars, say, err)) {
        if (have && *was_path && c->data && !strcmp(c->data, was_path)) { /* the run's own, gone */
            char e2[TG_ERROR_SIZE];
            snprintf(e2, sizeof e2, "%s", err ? err->msg : "");
            tg_error_set(err, "the run's text: %s (give its new place with %s)", e2, tg_run_label(say, "data", name));
        }
        return -1;
    }
    if (c->data && *c->data && !realpath(c->data, t->path)) snprintf(t->path, sizeof t->path, "%s", c->data);
    t->fnv = tg_run_fnv1a64(t->text, t->len);
    if (!have) return 0;
    const char *now = *t->path ? t->path : "the built-in corpus", *was = *was_path ? was_path : "the built-in corpus";
    if (was_bytes != t->len || was_fnv != t->fnv) {
        if (!must_match) {
            tg_run_notify(say, TG_RUN_NOTICE, "%s is not the text the run was trained on (%s)", now, was);
            return 0;
        }
        tg_error_set(err,
                     "%s (%zu bytes, checksum %016" PRIx64 ") is not the text the run was trained on: %s (%" PRIu64
                     " bytes, checksum %016" PRIx64 ")",
                     now, t->len, t->fnv, was, was_bytes, was_fnv);
        tg_run_text_release(t);
        return -1;
    }
    if (strcmp(was_path, t->path))
        tg_run_notify(say, TG_RUN_NOTICE, "the run's text, recorded as %s, is now read from %s (the same bytes)", was,
                      now);
    return 0;
}

int tg_run_text_record(const tg_run_text *t, tg_run_kv *l)
{
    char bytes[32], fnv[40];
    snprintf(bytes, sizeof bytes, "%zu", t->len);
    snprintf(fnv, sizeof fnv, "fnv1a64:%016" PRIx64, t->fnv);
    return tg_run_kv_add(l, "train.data", t->path) || tg_run_kv_add(l, "train.data_bytes", bytes) ||
        tg_run_kv_add(l, "train.data_checksum", fnv);
}

int tg_run_text_load(tg_run_text *t, const tg_run_config *c, const tg_st_file *rec, bool must_match,
                     const tg_run_options *o, tg_error *err)
{
    if (!t || !c) {
        if (t) memset(t, 0, sizeof *t);
        return tg_error_set(err, "run_text_load: NULL argument");
    }
    tg_run_say say;
    tg_run_say_from(&say, o);
    return tg_run_text_read(t, c, rec, "the checkpoint", must_match, &say, err);
}

void tg_run_text_release(tg_run_text *t)
{
    if (!t) return;
    free(t->text);
    memset(t, 0, sizeof *t);
    t->floor_nats = -1;
}

/* ---- token files -------------------------------------------------------------- */

/* Checks the file read for `flag` against the identity rec records under
 * key (a different one: an error if must_match, else a notice), says what
 * was read, and adds its path and identity to meta. */
static int check_file(const char *flag, const char *path, const tg_token_file_id *id, const tg_st_file *rec,
                      const char *key, bool must_match, tg_run_kv *meta, const tg_run_say *say, tg_error *err)
{
    char idkey[64], idt[64], full[4096], name[80];
    snprintf(idt, sizeof idt, "%lld:fnv1a64:%016" PRIx64, (long long)id->count, id->fnv);
    snprintf(idkey, sizeof idkey, "%s_id", key);
    tg_run_label(say, flag, name);
    const char *was = rec ? tg_st_meta(rec, idkey) : NULL;
    if (was && strcmp(was, idt)) {
        if (must_match)
            return tg_error_set(err, "%s %s (%s) is not the token file the run was trained on: %s (%s)", name, path,
                                idt, tg_st_meta(rec, key) ? tg_st_meta(rec, key) : "?", was);
        tg_run_notify(say, TG_RUN_NOTICE, "%s %s is not the file the run was trained on", name, path);
    }
    if (!realpath(path, full)) snprintf(full, sizeof full, "%s", path);
    if (meta)
        tg_run_notify(say, TG_RUN_SAY, "%s: %lld tokens (%s's format)", path, (long long)id->count,
                      id->format == TG_TOKFILE_LLMC ? "llm.c" : "nanoGPT");
    if (meta && (tg_run_kv_add(meta, key, full) || tg_run_kv_add(meta, idkey, idt)))
        return tg_error_set(err, "out of memory");
    return 0;
}

int tg_run_tokens_read(tg_dataset *d, const tg_vocab *v, int vocab_size, const tg_run_config *c, const tg_st_file *rec,
                       bool must_match, tg_run_kv *meta, const tg_run_say *say, tg_error *err)
{
    memset(d, 0, sizeof *d);
    char name[80];
    const char *train = c->data_tokens, *val = c->val_tokens && *c->val_tokens ? c->val_tokens : NULL;
    if (!train) return tg_error_set(err, "%s is required", tg_run_label(say, "data-tokens", name));
    tg_vocab ids_v = *v; /* ids below the model's vocab_size (a tokenizer may have fewer) */
    ids_v.size = vocab_size;
    tg_token_file_id ids[2];
    if (tg_dataset_from_token_files(d, &ids_v, train, val, c->block_size, ids, err)) /* the flag of the file at fault */
        return tg_error_prefix(
            err, tg_run_label(say, val && ids[0].count >= 0 && ids[1].count < 0 ? "val-tokens" : "data-tokens", name));
    if (check_file("data-tokens", train, &ids[0], rec, "train.data_tokens", must_match, meta, say, err) ||
        (val && check_file("val-tokens", val, &ids[1], rec, "train.val_tokens", must_match, meta, say, err)) ||
        (!val && meta &&
         (tg_run_kv_add(meta, "train.val_tokens", "") || tg_run_kv_add(meta, "train.val_tokens_id", "")))) {
        if (!tg_error_failed(err)) tg_error_set(err, "out of memory");
        tg_dataset_release(d);
        return -1;
    }
    return 0;
}

int tg_run_tokens_load(tg_dataset *d, const tg_vocab *v, const tg_run_config *c, const tg_st_file *rec, bool must_match,
                       const tg_run_options *o, tg_error *err)
{
    if (!d || !v || !c) {
        if (d) memset(d, 0, sizeof *d);
        return tg_error_set(err, "run_tokens_load: NULL argument");
    }
    tg_run_say say;
    tg_run_say_from(&say, o);
    return tg_run_tokens_read(d, v, c->vocab_size > 0 ? c->vocab_size : v->size, c, rec, must_match, NULL, &say, err);
}
