/* The Hugging Face layout: a model directory as transformers reads and
 * writes one, to and from a tapegrad checkpoint.
 *
 *   config.json              the architecture and its sizes
 *   model.safetensors        the weights under transformers' names, or
 *   model-0000k-of-0000n.safetensors + model.safetensors.index.json
 *                            ({"weight_map": {name: file}}) for shards
 *   tokenizer.json           the tokenizers library's format (or GPT-2's
 *   (vocab.json, merges.txt)  older pair of files)
 *   tokenizer_config.json, generation_config.json   (written on export)
 *
 * Two families, each with its names and layouts below:
 *
 *   GPT2LMHeadModel   tapegrad's GPT. transformers' GPT-2 projections are
 *                     Conv1D modules whose weight is stored (in, out), the
 *                     transpose of tapegrad's (out, in) linear weights.
 *                     The head is tied to wte. GPT-2 computes GELU with the
 *                     tanh form ("gelu_new", tapegrad's gelu "tanh"),
 *                     nanoGPT with the exact erf form ("gelu", tapegrad's
 *                     default "erf"); each is read and written as itself.
 *   LlamaForCausalLM  tapegrad's Llama. transformers rotates q and k by
 *                     halves (rotate_half: pairs (i, i + d/2) of a head),
 *                     Meta's and llama2.c's checkpoints by interleaved
 *                     pairs (2i, 2i + 1): a tapegrad Llama with interleaved
 *                     pairs is exported with its q and k rows permuted
 *                     within each head so the halves pairing computes the
 *                     same function (as transformers' and llama.cpp's
 *                     convert scripts do), and one read from the layout is
 *                     a Llama with rope "halves", whose rows need nothing.
 *
 * What a Hugging Face config cannot say about a tapegrad model (a GPT
 * without biases; a Llama whose pairs were interleaved, written as
 * "rope_permuted_from": "interleaved" since the file's rows are in the
 * halves order) goes into config.json's "tapegrad" object, which
 * transformers ignores and the import reads back, so export then import
 * gives the same checkpoint bit for bit.
 *
 * This file: the import and the export; beside it config.json both ways
 * (hf_config.c), the weights' files (hf_weights.c), each family's names
 * and layouts (hf_names.c), the tokenizer's files (hf_tokenizer_read.c,
 * hf_tokenizer_write.c), and reading a directory's files (hf_files.c).
 *
 * The reader trusts nothing: each JSON file is read whole up to a limit,
 * every size comes from config.json and is checked against the tensors'
 * own shapes before a model is built, so a crafted directory costs time
 * and memory in proportion to its files. */
#define _POSIX_C_SOURCE 200809L
#include "formats.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/alloc.h"
#include "../core/atomic_file.h"
#include "../core/err_internal.h"
#include "../core/stb_ds_internal.h"
#include "../text/text_internal.h"
#include "gpt2_internal.h"
#include "hf_config_internal.h"
#include "hf_files_internal.h"
#include "hf_names_internal.h"
#include "hf_tokenizer_internal.h"
#include "hf_weights_internal.h"
#include "options_internal.h"

/* ---- import ---------------------------------------------------------------------- */

/* Every tensor the family needs, present with its shape, and no other
 * (but GPT-2's mask buffers); before a model is built. */
static bool all_zero(const tg_st_tensor *e)
{
    for (size_t i = 0; i < e->nbytes; i++)
        if (((const unsigned char *)e->data)[i]) return false;
    return true;
}

static int check_tensors(const hf_weights *w, const hf_map *maps, const tg_model_config *c, tg_error *err)
{
    hf_shard_ix *need = NULL;
    stbds_sh_new_strdup(need);
    int rc = 0;
    for (ptrdiff_t i = 0; i < stbds_arrlen(maps); i++) stbds_shput(need, maps[i].hf, (int)i);
    if (c->tied && !strcmp(c->arch, "llama")) stbds_shput(need, "lm_head.weight", -1); /* the tied copy, if saved */
    if (!strcmp(c->arch, "gpt")) stbds_shput(need, "lm_head.weight", -1);
    for (ptrdiff_t f = 0; f < stbds_arrlen(w->files) && !rc; f++)
        for (int i = 0; i < tg_st_count(w->files[f]) && !rc; i++) {
            const tg_st_tensor *e = tg_st_at(w->files[f], i);
            char shown[TG_SHOWN_SIZE];
            const bool gpt = !strcmp(c->arch, "gpt"), skip = gpt && tg_hf_gpt2_buffer(e->name);
            /* a GPT without biases is exported with zero ones, which transformers' GPT-2 has */
            const size_t nl = strlen(e->name);
            const bool zero_bias = gpt && !c->bias && nl > 5 && !strcmp(e->name + nl - 5, ".bias") && all_zero(e);
            if (stbds_shgeti(need, e->name) < 0 && !skip && !zero_bias)
                rc = tg_error_set(err,
                                  "hf: %s holds '%s', which tapegrad's %s has no place for (another "
                                  "architecture, or a variant of it)",
                                  w->names[f], tg_shown(e->name, shown), c->arch);
            else if (!tg_hf_float_dtype(e->dtype) && !skip)
                rc = tg_error_set(err, "hf: %s: '%s' is %s; the reader takes F32, F64, F16 and BF16", w->names[f],
                                  tg_shown(e->name, shown), e->dtype);
        }
    stbds_shfree(need);
    return rc;
}

/* config.json's layer count against the files, before the table of
 * every tensor name is built (a few hundred bytes per name): when the
 * layers need more tensors than the files hold, the first one missing is
 * named, found by looking at the layers in order, which costs time in
 * proportion to the tensors present. */
static int check_layer_count(const hf_weights *w, const tg_model_config *c, const char *prefix, tg_error *err)
{
    const bool gpt = !strcmp(c->arch, "gpt");
    int64_t have = 0;
    for (ptrdiff_t f = 0; f < stbds_arrlen(w->files); f++) have += tg_st_count(w->files[f]);
    hf_map *one = NULL;
    int rc = 0;
    for (int i = 0; i < c->n_layer && !rc; i++) {
        stbds_arrfree(one);
        if (gpt) tg_hf_gpt2_layer_names(c, prefix, i, &one);
        else tg_hf_llama_layer_names(c, i, &one);
        if (i == 0 && (int64_t)c->n_layer * stbds_arrlen(one) <= have) break; /* the names' table fits the files */
        for (ptrdiff_t k = 0; k < stbds_arrlen(one) && !rc; k++)
            if (!tg_hf_weights_find(w, one[k].hf))
                rc = tg_error_set(err, "hf: the weights have no '%s' (config.json describes %d layers)", one[k].hf,
                                  c->n_layer);
    }
    stbds_arrfree(one);
    return rc;
}

/* The shapes the config implies, from the counts alone (no model yet):
 * compared name by name with the file's tensors. */
static int check_shapes_before_build(const hf_weights *w, const hf_map *maps, const tg_model_config *c, tg_error *err)
{
    const int64_t C = c->n_embd, V = c->vocab_size;
    const int64_t Ckv = !strcmp(c->arch, "llama") ? (int64_t)c->n_kv_head * (C / c->n_head) : C;
    for (ptrdiff_t i = 0; i < stbds_arrlen(maps); i++) {
        const char *n = maps[i].tg;
        int64_t want[2] = {C, 0};
        int nd = 1;
        if (strstr(n, "wte.") || strstr(n, "tok_embeddings.") || strstr(n, "output.")) want[0] = V, want[1] = C, nd = 2;
        else if (strstr(n, "wpe.")) want[0] = c->block_size, want[1] = C, nd = 2;
        else if (strstr(n, "c_attn.weight")) want[0] = C, want[1] = 3 * C, nd = 2;
        else if (strstr(n, "c_attn.bias")) want[0] = 3 * C;
        else if (strstr(n, "attn.c_proj.weight")) want[0] = C, want[1] = C, nd = 2;
        else if (strstr(n, "c_fc.weight")) want[0] = C, want[1] = 4 * C, nd = 2;
        else if (strstr(n, "c_fc.bias")) want[0] = 4 * C;
        else if (strstr(n, "mlp.c_proj.weight")) want[0] = 4 * C, want[1] = C, nd = 2;
        else if (strstr(n, ".wq.") || strstr(n, ".wo.")) want[0] = C, want[1] = C, nd = 2;
        else if (strstr(n, ".wk.") || strstr(n, ".wv.")) want[0] = Ckv, want[1] = C, nd = 2;
        else if (strstr(n, ".w1.") || strstr(n, ".w3.")) want[0] = c->hidden_dim, want[1] = C, nd = 2;
        else if (strstr(n, ".w2.")) want[0] = C, want[1] = c->hidden_dim, nd = 2;
        const tg_st_tensor *e = tg_hf_weights_find(w, maps[i].hf);
        if (!e)
            return tg_error_set(err, "hf: the weights have no '%s' (config.json describes %d layers)", maps[i].hf,
                                c->n_layer);
        if (e->ndim != nd || e->shape[0] != want[0] || (nd == 2 && e->shape[1] != want[1])) {
            char s[64] = "", g[64] = "";
            snprintf(s, sizeof s, nd == 2 ? "(%lld,%lld)" : "(%lld)", (long long)want[0], (long long)want[1]);
            for (int d = 0; d < e->ndim && strlen(g) < 40; d++)
                snprintf(g + strlen(g), sizeof g - strlen(g), d ? ",%lld" : "(%lld", (long long)e->shape[d]);
            strcat(g, ")");
            return tg_error_set(err, "hf: '%s' is %s, but config.json says %s", maps[i].hf, e->ndim ? g : "()", s);
        }
    }
    return 0;
}

/* Fills parameter m->tg of the model from its file tensor, exactly. */
static int fill_param(const hf_weights *w, const hf_map *m, tg_model *model, tg_error *err)
{
    tg_tensor *t = tg_params_get(model->params, m->tg);
    tg_st_tensor e = *tg_hf_weights_find(w, m->hf);
    if (m->layout == HF_TRANSPOSE) { /* read as (out, in) with the data still (in, out), then transposed */
        e.shape[0] = t->shape[0];
        e.shape[1] = t->shape[1];
    }
    if (tg_st_copy_to(&e, t, err)) return -1;
    for (int64_t i = 0; i < t->numel; i++) /* a checkpoint holds finite weights only */
        if (!isfinite(tg_tensor_get(t, i)))
            return tg_error_set(err, "hf: '%s' holds %g at element %lld", m->hf, tg_tensor_get(t, i), (long long)i);
    if (m->layout == HF_SAME) return 0;
    const size_t es = tg_dtype_size(t->dtype);
    unsigned char *scratch = tg_malloc((size_t)t->numel * es);
    if (!scratch) return tg_error_set(err, "hf: out of memory");
    if (m->layout == HF_TRANSPOSE) {
        tg_hf_transpose(t->data, scratch, t->shape[1], t->shape[0], es); /* (in, out) data -> (out, in) */
        memcpy(t->data, scratch, (size_t)t->numel * es);
    } else {
        tg_hf_permute_rope_rows(t->data, scratch, t->shape[0], t->shape[1], m->heads, es, -1);
    }
    tg_free(scratch);
    return 0;
}

int tg_hf_import(const char *dir, const char *ckpt_out, const tg_hf_import_options *opts, char *notice,
                 size_t notice_len, tg_error *err)
{
    if (notice && notice_len) notice[0] = 0;
    if (!dir || !ckpt_out) return tg_error_set(err, "hf_import: %s is NULL", dir ? "the output path" : "the directory");
    const tg_hf_import_options o = opts ? *opts : (tg_hf_import_options){0};
    cJSON *cj = tg_hf_read_json(dir, "config.json", true, err);
    if (!cj) return -1;
    tg_model_config c = {0};
    hf_weights w = {0};
    hf_map *maps = NULL;
    tg_model model = {0};
    tg_vocab v = {0};
    int rc = -1;
    if (tg_hf_config_read(cj, &c, err)) goto out;
    if (tg_model_num_params(&c) < 0) {
        tg_error_set(err,
                     "hf: config.json describes a %s tapegrad cannot build (n_layer %d, n_head %d, n_embd %d, "
                     "block_size %d, vocab_size %d)",
                     c.arch, c.n_layer, c.n_head, c.n_embd, c.block_size, c.vocab_size);
        goto out;
    }
    if (tg_hf_weights_open(&w, dir, err)) goto out;
    const bool gpt = !strcmp(c.arch, "gpt");
    const char *prefix = gpt && tg_hf_weights_find(&w, "transformer.wte.weight") ? "transformer." : "";
    if (check_layer_count(&w, &c, prefix, err)) goto out;
    if (gpt) tg_hf_gpt2_names(&c, prefix, &maps);
    else tg_hf_llama_names(&c, &maps);
    if (check_tensors(&w, maps, &c, err) || check_shapes_before_build(&w, maps, &c, err)) goto out;
    /* F64 weights make an f64 checkpoint; the others are exact in f32 */
    bool f64 = false;
    for (ptrdiff_t i = 0; i < stbds_arrlen(maps); i++) f64 |= !strcmp(tg_hf_weights_find(&w, maps[i].hf)->dtype, "F64");
    if (tg_model_init(&model, &c, f64 ? TG_F64 : TG_F32, TG_NO_INIT, err)) goto out;
    for (ptrdiff_t i = 0; i < stbds_arrlen(maps); i++)
        if (fill_param(&w, &maps[i], &model, err)) goto out;
    /* a head saved beside a tied embedding must be that embedding */
    const tg_st_tensor *head = tg_hf_weights_find(&w, "lm_head.weight");
    if (head && c.tied) {
        const tg_st_tensor *emb = tg_hf_weights_find(&w, maps[0].hf);
        if (head->nbytes != emb->nbytes || strcmp(head->dtype, emb->dtype) ||
            memcmp(head->data, emb->data, emb->nbytes)) {
            tg_error_set(err,
                         "hf: lm_head.weight differs from %s, but this %s ties its head to the token "
                         "embedding",
                         maps[0].hf, gpt ? "GPT-2" : "Llama (tie_word_embeddings)");
            goto out;
        }
    }
    /* the tokenizer: tokenizer.json (each of tapegrad's kinds) or GPT-2's vocab.json + merges.txt */
    int found = 0;
    const int32_t bos_id = tg_hf_config_token_id(cj, "bos_token_id", c.vocab_size);
    const int32_t eos_id = tg_hf_config_token_id(cj, "eos_token_id", c.vocab_size);
    if (tg_hf_tokenizer_read(dir, !gpt, bos_id, eos_id, &v, &found, notice, notice_len, err)) goto out;
    if (!found && !o.ids_only) {
        tg_error_set(err,
                     "hf: %s has no tokenizer tapegrad reads (tokenizer.json%s); to import the weights with "
                     "bare ids, say the model is ids-only",
                     dir, gpt ? ", or vocab.json and merges.txt" : "");
        goto out;
    }
    if (found && tg_vocab_check_size(&v, c.vocab_size, "the tokenizer's", err)) {
        tg_error_prefix(err, "hf");
        goto out;
    }
    if (found) v.size = c.vocab_size;
    else tg_vocab_ids(&v, c.vocab_size);
    char src[600];
    snprintf(src, sizeof src, "hugging face: %s", dir);
    const char *meta[2] = {"imported_from", src};
    rc = tg_checkpoint_save(ckpt_out, &(tg_checkpoint){.model = &model, .vocab = &v, .meta = meta, .n_meta = 1}, err);
out:
    tg_vocab_release(&v);
    tg_model_release(&model);
    stbds_arrfree(maps);
    tg_hf_weights_free(&w);
    cJSON_Delete(cj);
    return rc;
}

/* ---- export ---------------------------------------------------------------------- */

/* A JSON file of the export, begun and finished under its temporary name. */
static int stage_json(tg_atomic_file *f, const char *dir, const char *name, cJSON *j, tg_error *err)
{
    char *p = tg_hf_path(dir, name), *text = j ? cJSON_PrintUnformatted(j) : NULL;
    int rc = 0;
    memset(f, 0, sizeof *f);
    if (!p || !text) rc = tg_error_set(err, "hf: out of memory");
    else if (tg_atomic_begin(f, p, err) || tg_atomic_write(f, text, strlen(text), err) ||
             tg_atomic_write(f, "\n", 1, err) || tg_atomic_finish(f, err)) {
        rc = tg_error_prefix(err, "hf");
        tg_atomic_abort(f);
        memset(f, 0, sizeof *f);
    }
    free(text); /* cJSON's own allocation */
    tg_free(p);
    return rc;
}

int tg_hf_export(const tg_st_file *ckpt, const char *dir, char *notice, size_t notice_len, tg_error *err)
{
    if (notice && notice_len) notice[0] = 0;
    if (!ckpt || !dir) return tg_error_set(err, "hf_export: %s is NULL", ckpt ? "the directory" : "the checkpoint");
    tg_model_config c0;
    if (tg_model_config_read(ckpt, &c0, err)) return -1;
    if (strcmp(c0.arch, "gpt") && strcmp(c0.arch, "llama"))
        return tg_error_set(err, "hf: a '%s' has no Hugging Face layout here (gpt, llama)", c0.arch);
    if (tg_fmt_check_options(
            &c0, "hf", strcmp(c0.arch, "gpt") ? "transformers' LlamaForCausalLM" : "transformers' GPT2LMHeadModel",
            false, err))
        return -1;
    const tg_st_tensor *emb = tg_st_find(ckpt, tg_model_family_find(c0.arch)->embedding);
    const tg_dtype dt = emb && !strcmp(emb->dtype, "F64") ? TG_F64 : TG_F32;
    tg_model m;
    if (tg_checkpoint_load_model(ckpt, dt, -1, &m, err)) return -1;
    const tg_model_config *c = &m.config;
    const bool gpt = !strcmp(c->arch, "gpt");
    tg_vocab v = {0};
    const bool has_vocab = tg_vocab_read(&v, ckpt, NULL) == 0;
    hf_map *maps = NULL;
    unsigned char **bufs = NULL;
    tg_st_writer *w = NULL;
    cJSON *json[4] = {NULL, NULL, NULL, NULL};
    static const char *const json_names[4] = {"config.json", "generation_config.json", "tokenizer.json",
                                              "tokenizer_config.json"};
    tg_atomic_file staged[4];
    memset(staged, 0, sizeof staged);
    int rc = -1;
    if (tg_hf_stat(dir, "model.safetensors.index.json", NULL)) {
        tg_error_set(err,
                     "hf: %s holds model.safetensors.index.json (another model's shards): export into a "
                     "new or empty directory",
                     dir);
        goto out;
    }
    if (mkdir(dir, 0777) && errno != EEXIST) {
        tg_error_set(err, "hf: cannot make the directory %s: %s", dir, strerror(errno));
        goto out;
    }
    /* the weights */
    tg_model_config names_cfg = *c;
    names_cfg.bias = true; /* transformers' GPT-2 has biases: a GPT without them gets zero ones */
    if (gpt) tg_hf_gpt2_names(&names_cfg, "transformer.", &maps);
    else tg_hf_llama_names(c, &maps);
    if (!(w = tg_st_writer_new()) || tg_st_writer_add_meta(w, "format", "pt")) goto oom;
    const size_t es = tg_dtype_size(dt);
    for (ptrdiff_t i = 0; i < stbds_arrlen(maps); i++) {
        const tg_tensor *t = tg_params_get(m.params, maps[i].tg);
        int64_t shape[2];
        if (!t) { /* a bias of a GPT without biases: zeros of the bias's length */
            const char *n = maps[i].tg;
            shape[0] = strstr(n, "c_attn") ? 3 * (int64_t)c->n_embd
                : strstr(n, "c_fc")        ? 4 * (int64_t)c->n_embd
                                           : c->n_embd;
            unsigned char *z = tg_calloc((size_t)shape[0], es);
            if (!z) goto oom;
            stbds_arrput(bufs, z);
            tg_st_writer_add(w, maps[i].hf, dt == TG_F64 ? "F64" : "F32", 1, shape, z);
            continue;
        }
        for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d];
        const void *data = t->data;
        if (maps[i].layout != HF_SAME) {
            unsigned char *b = tg_malloc((size_t)t->numel * es), *scratch = NULL;
            if (!b) goto oom;
            stbds_arrput(bufs, b);
            if (maps[i].layout == HF_TRANSPOSE) {
                tg_hf_transpose(t->data, b, t->shape[0], t->shape[1], es);
                shape[0] = t->shape[1], shape[1] = t->shape[0];
            } else {
                if (!(scratch = tg_malloc((size_t)t->numel * es))) goto oom;
                memcpy(b, t->data, (size_t)t->numel * es);
                tg_hf_permute_rope_rows(b, scratch, t->shape[0], t->shape[1], maps[i].heads, es, 1);
                tg_free(scratch);
            }
            data = b;
        }
        tg_st_writer_add(w, maps[i].hf, dt == TG_F64 ? "F64" : "F32", t->ndim, shape, data);
    }
    /* the JSON files */
    char why[300] = "";
    int32_t bos = -1, eos = -1;
    if (has_vocab && !tg_hf_tokenizer_write(&v, !gpt, c->block_size, &json[2], &json[3], &bos, &eos, why, sizeof why)) {
    } else if (notice && notice_len) {
        snprintf(notice, notice_len, "no tokenizer.json written: %s",
                 has_vocab ? why : "the checkpoint has no vocabulary");
    }
    json[0] = tg_hf_config_write(c, dt, bos, eos);
    json[1] = cJSON_CreateObject();
    cJSON_AddBoolToObject(json[1], "_from_model_config", true);
    if (bos >= 0) cJSON_AddNumberToObject(json[1], "bos_token_id", bos);
    if (eos >= 0) cJSON_AddNumberToObject(json[1], "eos_token_id", eos);
    cJSON_AddNumberToObject(json[1], "max_length", c->block_size);
    for (int k = 0; k < 4; k++)
        if (json[k] && stage_json(&staged[k], dir, json_names[k], json[k], err)) goto out;
    char *mp = tg_hf_path(dir, "model.safetensors");
    if (!mp) goto oom;
    rc = tg_st_writer_save(w, mp, err);
    tg_free(mp);
    if (rc) goto out;
    for (int k = 0; k < 4; k++)
        if (json[k] && tg_atomic_commit(&staged[k], err)) {
            rc = tg_error_prefix(err, "hf");
            goto out;
        }
    goto out;
oom:
    tg_error_set(err, "hf: out of memory");
    rc = -1;
out:
    for (int k = 0; k < 4; k++) {
        tg_atomic_abort(&staged[k]);
        cJSON_Delete(json[k]);
    }
    for (ptrdiff_t i = 0; i < stbds_arrlen(bufs); i++) tg_free(bufs[i]);
    stbds_arrfree(bufs);
    stbds_arrfree(maps);
    tg_st_writer_free(w);
    tg_vocab_release(&v);
    tg_model_release(&m);
    return rc;
}
