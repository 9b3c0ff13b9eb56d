/* llama2.c's model.bin and tokenizer.bin read into a tapegrad checkpoint
 * (formats.h: tg_llama2c_import); the layout is the one llama2c.c writes. */
#include "formats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/atomic_file.h"
#include "../core/err_internal.h"
#include "llama2c_layout_internal.h"

/* ---- reading ------------------------------------------------------------ */

/* The next numel floats of the file at *at into tensor t (f32). */
static void take(const char *buf, size_t *at, tg_tensor *t)
{
    const size_t n = (size_t)t->numel * 4;
    memcpy(t->data, buf + *at, n);
    *at += n;
}

/* The header h as a Llama config, and the file's expected size in
 * bytes; -1 when it describes no Llama or a size past 2^63 - 1. */
static int64_t header_config(const int32_t h[7], tg_model_config *c, int64_t *floats)
{
    const int V = h[5] == INT32_MIN ? 0 : h[5] < 0 ? -h[5] : h[5]; /* INT32_MIN has no positive (0: refused) */
    *c = (tg_model_config){.arch = "llama",
                           .n_embd = h[0],
                           .hidden_dim = h[1],
                           .n_layer = h[2],
                           .n_head = h[3],
                           .n_kv_head = h[4],
                           .vocab_size = V,
                           .block_size = h[6],
                           .rope_theta = 10000,
                           .norm_eps = 1e-5,
                           .tied = h[5] > 0};
    const int64_t need = V ? tg_model_num_params(c) : -1; /* at most 2^62, or -1 */
    const int hd = c->n_head > 0 ? c->n_embd / c->n_head : 0;
    int64_t bytes;
    *floats = -1;
    if (need < 0) return -1;
    if (__builtin_add_overflow(need, (int64_t)c->block_size * hd, floats) ||
        __builtin_mul_overflow(*floats, (int64_t)4, &bytes) || __builtin_add_overflow(bytes, 28, &bytes))
        return -2;
    return bytes;
}

/* True when t is llama2.c's byte vocabulary as tg_llama2c_export writes
 * it (every piece byte_piece's, every score 0). */
static bool byte_vocabulary(const tg_tokenizer *t)
{
    char want[32];
    for (int32_t id = 0; id < tg_tok_vocab_size(t); id++) {
        size_t l;
        const unsigned char *p = tg_tok_spelled(t, id, &l);
        byte_piece(id, want, sizeof want);
        if (l != strlen(want) || memcmp(p, want, l) || tg_tok_score(t, id) != 0) return false;
    }
    return true;
}

int tg_llama2c_import(const char *model_path, const char *tokenizer_path, const char *ckpt_path, tg_error *err)
{
    if (!model_path || !ckpt_path)
        return tg_error_set(err, "llama2c_import: the %s is NULL", model_path ? "checkpoint path" : "model path"), -1;
    const char *in = model_path, *tok = tokenizer_path;
    size_t len;
    char *buf = tg_file_read(in, &len, err);
    if (!buf) return -1;
    int32_t h[7];
    int rc = -1;
    tg_model m = {0};
    tg_graph *g = NULL;
    tg_tokenizer *t = NULL;
    tg_vocab *vocab = NULL; /* a tokenizer's, freed at the end */
    tg_model_config c;
    int64_t floats, bytes = -1;
    if (len < sizeof h) {
        tg_error_set(err, "%s: %zu bytes is shorter than llama2.c's 28-byte header", in, len);
        goto done;
    }
    memcpy(h, buf, sizeof h);
    if ((bytes = header_config(h, &c, &floats)) != (int64_t)len) {
        char sizes[80] = "";
        if (bytes >= 0) snprintf(sizes, sizeof sizes, " (%zu bytes, %lld expected)", len, (long long)bytes);
        else if (bytes == -2) snprintf(sizes, sizeof sizes, " (%zu bytes, more than 2^63 expected)", len);
        tg_error_set(err,
                     "%s: the header (dim %d, hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, "
                     "vocab_size %d, seq_len %d) %s%s",
                     in, h[0], h[1], h[2], h[3], h[4], h[5], h[6],
                     bytes == -1 ? "does not describe a Llama" : "does not match the file's size", sizes);
        goto done;
    }
    const int V = c.vocab_size, hd = c.n_embd / c.n_head;
    if (tok && V < TG_VOCAB_LLAMA2C_SIZE) { /* run.c's tokenizers hold 3 specials and the 256 bytes first */
        tg_error_set(err,
                     "%s: vocab_size %d is below the %d ids of llama2.c's tokenizers (3 specials and 256 "
                     "bytes, then the rest)",
                     in, V, TG_VOCAB_LLAMA2C_SIZE);
        goto done;
    }
    for (int64_t i = 0; i < floats; i++) { /* every weight and both tables */
        float x;
        memcpy(&x, buf + 28 + 4 * i, 4);
        if (!isfinite(x)) {
            tg_error_set(err,
                         "%s: offset %lld: the weight %lld of the file is %g; a model with NaN or infinite "
                         "weights cannot be run",
                         in, (long long)(28 + 4 * i), (long long)i, (double)x);
            goto done;
        }
    }
    /* the vocabulary: llama2.c's bytes when the file is that vocabulary
     * (so that exporting the import writes the same bytes), else its
     * pieces with scores; without a tokenizer, bare ids */
    tg_vocab v;
    if (!tok) {
        tg_vocab_ids(&v, V);
    } else if (!(t = tg_tok_load_llama2c(tok, V, err))) {
        goto done;
    } else if (byte_vocabulary(t)) {
        tg_vocab_llama2c(&v);
    } else {
        tg_tokenizer *own = t;
        t = NULL;
        if (tg_vocab_tokenizer(&v, own, true, V, err)) goto done;
        vocab = &v;
    }
    if (tg_model_init(&m, &c, TG_F32, TG_NO_INIT, err)) goto done;
    size_t at = 28;
    char name[96];
    take(buf, &at, tg_params_get(m.params, "tok_embeddings.weight"));
    for (int k = 0; k < 9; k++)
        for (int l = 0; l < c.n_layer; l++) {
            snprintf(name, sizeof name, "layers.%d.%s", l, LAYER_ORDER[k]);
            take(buf, &at, tg_params_get(m.params, name));
        }
    take(buf, &at, tg_params_get(m.params, "norm.weight"));
    const size_t table = (size_t)c.block_size * hd / 2 * 4;
    const char *freqs = buf + at;
    at += 2 * table;
    if (!c.tied) take(buf, &at, tg_params_get(m.params, "output.weight"));
    /* the checkpoint: weights, config, the vocabulary, and the tables as they were */
    tg_tensor *cs[2] = {0};
    if ((g = tg_graph_new()))
        for (int s = 0; s < 2; s++)
            cs[s] = tg_tensor_from(g, TG_F32, 2, (int[]){c.block_size, hd / 2}, freqs + s * table);
    if (!cs[0] || !cs[1]) {
        tg_error_set(err, "out of memory");
        goto done;
    }
    tg_st_writer *w = tg_st_writer_new();
    int bad = !w || tg_model_config_write(&m.config, w) || tg_vocab_write(&v, w) ||
        tg_st_writer_add_meta(w, "format", "tapegrad (imported from llama2.c)");
    for (int i = 0; !bad && i < tg_params_count(m.params); i++)
        bad |= tg_st_writer_add_tensor(w, tg_params_at(m.params, i)->name, tg_params_at(m.params, i));
    bad = bad || tg_st_writer_add_tensor(w, "llama2c.freqs_cos", cs[0]) ||
        tg_st_writer_add_tensor(w, "llama2c.freqs_sin", cs[1]);
    if (bad) tg_error_set(err, "%s: could not assemble the checkpoint", ckpt_path);
    else rc = tg_st_writer_save(w, ckpt_path, err);
    tg_st_writer_free(w);
done:
    free(buf);
    tg_tok_free(t);
    if (vocab) tg_vocab_release(vocab);
    tg_graph_free(g);
    tg_model_release(&m);
    return rc;
}
