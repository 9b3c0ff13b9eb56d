/* tiny_gpt export / import: a Llama checkpoint to and from llama2.c's
 * files, the ones its run.c reads.
 *
 * model.bin (run.c's "legacy" checkpoint, all little-endian):
 *   7 int32   dim, hidden_dim, n_layers, n_heads, n_kv_heads,
 *             vocab_size (negative when the output head is not the
 *             token embedding), seq_len
 *   float32   tok_embeddings (V,dim); then, each for all layers in order:
 *             attention_norm (dim), wq (dim,dim), wk (kv_dim,dim),
 *             wv (kv_dim,dim), wo (dim,dim), ffn_norm (dim),
 *             w1 (hidden,dim), w2 (dim,hidden), w3 (hidden,dim);
 *             norm (dim); two RoPE tables of seq_len x head_size/2
 *             (cos, sin; run.c skips them); output (V,dim) when not tied
 *   (every matrix as PyTorch stores it, (out, in) row-major)
 * tokenizer.bin:
 *   int32 max_token_length; per id: float32 score, int32 length, bytes
 *
 * run.c hard-codes RoPE with interleaved pairs and theta 10000 and an RMS
 * eps of 1e-5, and the vocabulary conventions of data.h's TG_VOCAB_LLAMA2C
 * (pieces: "<unk>", "\n<s>\n", "\n</s>\n", then each byte as itself when
 * printable ASCII, else "<0xXX>", which run.c turns back into the byte),
 * so export refuses a model that differs. Scores are 0: no two pieces
 * concatenate to a third, so run.c's merge loop never merges.
 *
 * A Llama trained with tapegrad's BPE (train --tokenizer) exports its
 * checkpoint's tokenizer the same way. A BPE tokenizer (tapegrad's, text/) goes into tokenizer.bin so that
 * run.c's encoder gives tapegrad's ids for any text without a NUL byte
 * (llama2c_tokenizer_bpe; the rule and why it holds: docs/tokenizers.md):
 * every piece is written as its raw bytes (bytes included, so that
 * run.c's fallback ids byte + 3 concatenate to the learned pieces), and
 * piece id k >= 259 scores -k: run.c merges the highest score, tapegrad
 * the lowest id, both the leftmost on a tie. The specials score -1e30,
 * below run.c's starting best of -1e10, so no merge ever makes one.
 *
 * import reads model.bin back into a Llama checkpoint (the two RoPE
 * tables kept as tensors llama2c.freqs_cos / llama2c.freqs_sin, so that
 * exporting the import writes the same bytes). */
#include "tiny_gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "export.h"
#include "files.h"

/* ---- writing ------------------------------------------------------------ */

/* The piece of id in run.c's tokenizer (TG_VOCAB_LLAMA2C's layout). */
static void llama2c_piece(int id, char *buf, size_t size)
{
    static const char *const specials[3] = {"<unk>", "\n<s>\n", "\n</s>\n"};
    if (id < 3) snprintf(buf, size, "%s", specials[id]);
    else if (id >= TG_VOCAB_LLAMA2C_SIZE) snprintf(buf, size, "<extra_%d>", id);
    else if (id - 3 >= 0x20 && id - 3 < 0x7f) snprintf(buf, size, "%c", id - 3);
    else snprintf(buf, size, "<0x%02X>", id - 3);
}

static void put_i32(textbuf *b, int32_t v) { tb_put(b, (const char *)&v, 4); }

/* tensor t's values as float32 */
static void put_tensor(textbuf *b, const tg_tensor *t)
{
    for (int64_t i = 0; i < t->numel; i++) {
        const float f = (float)tg_tensor_get(t, i);
        tb_put(b, (const char *)&f, 4);
    }
}

/* model.py's RoPE tables in float: cos and sin of t / theta^(2i / hd) */
static void put_freqs(textbuf *b, int seq_len, int hd, double theta, bool sine)
{
    for (int t = 0; t < seq_len; t++)
        for (int i = 0; i < hd / 2; i++) {
            const float freq = 1.0f / powf((float)theta, (float)(2 * i) / (float)hd), a = (float)t * freq;
            const float v = sine ? sinf(a) : cosf(a);
            tb_put(b, (const char *)&v, 4);
        }
}

static const char *const LAYER_ORDER[9] = {"attention_norm.weight", "attention.wq.weight", "attention.wk.weight",
                                           "attention.wv.weight", "attention.wo.weight", "ffn_norm.weight",
                                           "feed_forward.w1.weight", "feed_forward.w2.weight", "feed_forward.w3.weight"};

static int export_llama2c(const tg_st_file *f, const tg_model *m, const tg_vocab *v, const char *out, const char *tok,
                          char *err, size_t errlen)
{
    const tg_model_config *c = &m->config;
    if (strcmp(c->arch, "llama"))
        return snprintf(err, errlen, "llama2c export needs a Llama checkpoint, this one is a %s", c->arch), -1;
    if (c->rope_halves || c->rope_theta != 10000 || c->norm_eps != 1e-5)
        return snprintf(err, errlen, "run.c hard-codes RoPE with interleaved pairs and theta 10000 and RMSNorm eps "
                                     "1e-5; this model has %s pairs, theta %g, eps %g",
                        c->rope_halves ? "halves" : "interleaved", c->rope_theta, c->norm_eps), -1;
    const bool bpe = v->kind == TG_VOCAB_TOKENIZER;   /* tapegrad's BPE: tokenizer.bin from llama2c_tokenizer_bpe */
    if (v->kind != TG_VOCAB_LLAMA2C && !bpe)
        return snprintf(err, errlen, "run.c reads llama2.c's vocabulary (three specials, then the bytes, or a BPE "
                                     "tokenizer of that layout); this model's vocabulary is another"), -1;
    if (bpe && tg_tok_vocab_size(v->tok) != c->vocab_size)
        return snprintf(err, errlen, "run.c reads as many pieces as the model has ids: this model has %d, its "
                                     "tokenizer %d", c->vocab_size, (int)tg_tok_vocab_size(v->tok)), -1;
    textbuf t = {0};
    if (bpe && llama2c_tokenizer_bpe(v->tok, &t, err, errlen)) {
        tb_free(&t);
        return -1;
    }
    const int hd = c->n_embd / c->n_head;
    textbuf b = {0};
    const int32_t hdr[7] = {c->n_embd, c->hidden_dim, c->n_layer, c->n_head, c->n_kv_head,
                            c->tied ? c->vocab_size : -c->vocab_size, c->block_size};
    for (int i = 0; i < 7; i++) put_i32(&b, hdr[i]);
    put_tensor(&b, tg_params_get(m->params, "tok_embeddings.weight"));
    char name[96];
    for (int k = 0; k < 9; k++)
        for (int l = 0; l < c->n_layer; l++) {
            snprintf(name, sizeof name, "layers.%d.%s", l, LAYER_ORDER[k]);
            put_tensor(&b, tg_params_get(m->params, name));
        }
    put_tensor(&b, tg_params_get(m->params, "norm.weight"));
    for (int s = 0; s < 2; s++) {   /* the tables an import kept, else model.py's */
        const tg_st_tensor *e = tg_st_find(f, s ? "llama2c.freqs_sin" : "llama2c.freqs_cos");
        if (e && !strcmp(e->dtype, "F32") && e->numel == (int64_t)c->block_size * hd / 2) tb_put(&b, e->data, e->nbytes);
        else put_freqs(&b, c->block_size, hd, c->rope_theta, s);
    }
    if (!c->tied) put_tensor(&b, tg_params_get(m->params, "output.weight"));
    /* the tokenizer of llama2.c's bytes (a BPE's is in t already) */
    int32_t max_len = 0;
    char piece[32];
    for (int id = 0; !bpe && id < c->vocab_size; id++) {
        llama2c_piece(id, piece, sizeof piece);
        if ((int32_t)strlen(piece) > max_len) max_len = (int32_t)strlen(piece);
    }
    if (!bpe) put_i32(&t, max_len);
    for (int id = 0; !bpe && id < c->vocab_size; id++) {
        const float score = 0;
        llama2c_piece(id, piece, sizeof piece);
        tb_put(&t, (const char *)&score, 4);
        put_i32(&t, (int32_t)strlen(piece));
        tb_puts(&t, piece);
    }
    staged_files st = {0};
    int rc = b.oom || t.oom ? snprintf(err, errlen, "out of memory"), -1 : 0;
    if (!rc) rc = staged_add(&st, out, b.p, b.len, err, errlen);
    if (!rc && tok) rc = staged_add(&st, tok, t.p, t.len, err, errlen);
    if (!rc) rc = staged_commit(&st, err, errlen);
    else staged_abort(&st);
    if (!rc) printf("wrote %s (%zu bytes)%s%s\n", out, b.len, tok ? " and " : "", tok ? tok : "");
    tb_free(&b);
    tb_free(&t);
    return rc;
}

/* True when a piece of two or more bytes is whole UTF-8 characters or
 * the first bytes of one (the trainer's rule, text/bpe_train.c). */
static bool keeps_characters(const unsigned char *p, size_t l)
{
    for (size_t i = 0; i < l;) {
        const unsigned char c = p[i];
        const size_t n = c < 0x80 ? 1 : c < 0xC0 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF8 ? 4 : 0;
        if (!n) return false;
        size_t k = 1;
        while (k < n && i + k < l && p[i + k] >= 0x80 && p[i + k] < 0xC0) k++;
        if (k < n) return i == 0 && k == l;
        i += n;
    }
    return true;
}

int llama2c_tokenizer_bpe(const tg_tokenizer *t, textbuf *b, char *err, size_t errlen)
{
    static const char *const specials[3] = {"<unk>", "\n<s>\n", "\n</s>\n"};
    if (tg_tok_kind_of(t) != TG_TOK_BPE)
        return snprintf(err, errlen, "run.c's tokenizer merges pieces by score: only tapegrad's BPE maps onto it "
                                     "(this tokenizer is GPT-2's tiktoken ranks)"), -1;
    const int32_t V = tg_tok_vocab_size(t);
    size_t max_len = 6;
    for (int32_t id = 3; id < V; id++) {
        size_t l;
        const unsigned char *p = tg_tok_piece(t, id, &l);
        if (id < 259 ? l != 1 || p[0] != id - 3 : tg_tok_is_special(t, id))
            return snprintf(err, errlen, "id %d is not llama2.c's layout (3 specials, byte b at 3 + b, then the "
                                         "merges)", (int)id), -1;
        if (id < 259) continue;
        if (memchr(p, 0, l))
            return snprintf(err, errlen, "piece %d holds a NUL byte, which run.c's C strings cannot", (int)id), -1;
        if (!keeps_characters(p, l))
            return snprintf(err, errlen, "piece %d joins part of a UTF-8 character to other bytes (a tokenizer "
                                         "trained before characters were kept whole): run.c, which looks whole "
                                         "characters up first, would give other ids; train it again", (int)id), -1;
        if (l == 5 && !memcmp(p, "<unk>", 5))
            return snprintf(err, errlen, "piece %d is \"<unk>\", which run.c's file spells id 0", (int)id), -1;
        if (l > max_len) max_len = l;
    }
    put_i32(b, (int32_t)max_len);
    for (int32_t id = 0; id < V; id++) {
        size_t l;
        const char *p = id < 3 ? specials[id] : (const char *)tg_tok_piece(t, id, &l);
        if (id < 3) l = strlen(p);
        const float score = id < 3 ? -1e30f : id < 259 ? 0.0f : (float)-id;
        tb_put(b, (const char *)&score, 4);
        put_i32(b, (int32_t)l);
        tb_put(b, p, l);
    }
    return b->oom ? snprintf(err, errlen, "out of memory"), -1 : 0;
}

/* ---- reading ------------------------------------------------------------ */

/* The next n floats of the file at *at into tensor t (f32), or -1 past the end. */
static int take(const char *buf, size_t len, size_t *at, tg_tensor *t)
{
    const size_t n = (size_t)t->numel * 4;
    if (*at + n > len) return -1;
    memcpy(t->data, buf + *at, n);
    *at += n;
    return 0;
}

static int import_llama2c(const char *in, const char *tok, const char *out, char *err, size_t errlen)
{
    size_t len;
    char *buf = tg_file_read(in, &len, err, errlen);
    if (!buf) return -1;
    int32_t h[7];
    int rc = -1;
    tg_model m = {0};
    tg_graph *g = NULL;
    char *tbuf = NULL;
    if (len < sizeof h) {
        snprintf(err, errlen, "%s: %zu bytes is shorter than llama2.c's 28-byte header", in, len);
        goto done;
    }
    memcpy(h, buf, sizeof h);
    const bool tied = h[5] > 0;
    const int V = h[5] == INT32_MIN ? 0 : h[5] < 0 ? -h[5] : h[5];   /* INT32_MIN has no positive (0: refused below) */
    tg_model_config c = {.arch = "llama", .n_embd = h[0], .hidden_dim = h[1], .n_layer = h[2], .n_head = h[3],
                      .n_kv_head = h[4], .vocab_size = V, .block_size = h[6], .rope_theta = 10000, .norm_eps = 1e-5,
                      .tied = tied};
    const int64_t need = V ? tg_model_num_params(&c) : -1;   /* at most 2^62, or -1 */
    const int hd = c.n_head > 0 ? c.n_embd / c.n_head : 0;
    int64_t floats = -1, bytes = -1;   /* the parameters and the two tables; -1 past int64 */
    if (need >= 0 && (__builtin_add_overflow(need, (int64_t)c.block_size * hd, &floats) ||
                      __builtin_mul_overflow(floats, (int64_t)4, &bytes) || __builtin_add_overflow(bytes, 28, &bytes)))
        bytes = -1;
    if (need < 0 || bytes != (int64_t)len) {
        snprintf(err, errlen, "%s: the header (dim %d, hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, "
                              "vocab_size %d, seq_len %d) %s", in, h[0], h[1], h[2], h[3], h[4], h[5], h[6],
                 need < 0 ? "does not describe a Llama" : "does not match the file's size");
        if (need >= 0 && bytes >= 0)
            snprintf(err + strlen(err), errlen - strlen(err), " (%zu bytes, %lld expected)", len, (long long)bytes);
        else if (need >= 0)
            snprintf(err + strlen(err), errlen - strlen(err), " (%zu bytes, more than 2^63 expected)", len);
        goto done;
    }
    if (V < TG_VOCAB_LLAMA2C_SIZE) {   /* sample and eval read its ids as llama2.c's bytes */
        snprintf(err, errlen, "%s: vocab_size %d is below the %d ids of llama2.c's byte vocabulary (3 specials and "
                              "256 bytes), the only vocabulary tiny_gpt imports", in, V, TG_VOCAB_LLAMA2C_SIZE);
        goto done;
    }
    for (int64_t i = 0; i < floats; i++) {   /* every weight and both tables */
        float x;
        memcpy(&x, buf + 28 + 4 * i, 4);
        if (!isfinite(x)) {
            snprintf(err, errlen, "%s: offset %lld: the weight %lld of the file is %g; a model with NaN or infinite "
                                  "weights cannot be run", in, (long long)(28 + 4 * i), (long long)i, (double)x);
            goto done;
        }
    }
    if (tg_model_new(&m, &c, TG_F32, 0, err, errlen)) goto done;
    size_t at = 28;
    char name[96];
    take(buf, len, &at, tg_params_get(m.params, "tok_embeddings.weight"));
    for (int k = 0; k < 9; k++)
        for (int l = 0; l < c.n_layer; l++) {
            snprintf(name, sizeof name, "layers.%d.%s", l, LAYER_ORDER[k]);
            take(buf, len, &at, tg_params_get(m.params, name));
        }
    take(buf, len, &at, tg_params_get(m.params, "norm.weight"));
    const size_t table = (size_t)c.block_size * hd / 2 * 4;
    const char *freqs = buf + at;
    at += 2 * table;
    if (!tied) take(buf, len, &at, tg_params_get(m.params, "output.weight"));
    /* the vocabulary: llama2.c's byte layout (checked piece by piece when a tokenizer is given) */
    tg_vocab v;
    tg_vocab_llama2c(&v);
    if (tok) {
        size_t tl;
        if (!(tbuf = tg_file_read(tok, &tl, err, errlen))) goto done;
        int32_t max_len = -1;
        if (tl >= 4) memcpy(&max_len, tbuf, 4);
        size_t p = 4, longest = 0;
        char want[32];
        for (int id = 0; id < V; id++) {
            int32_t n = -1;
            if (p + 8 <= tl) memcpy(&n, tbuf + p + 4, 4);
            llama2c_piece(id, want, sizeof want);
            if (n < 0 || p + 8 + (size_t)n > tl) {
                snprintf(err, errlen, "%s: cut short at id %d", tok, id);
                goto done;
            }
            if (id < TG_VOCAB_LLAMA2C_SIZE && ((size_t)n != strlen(want) || memcmp(tbuf + p + 8, want, (size_t)n))) {
                snprintf(err, errlen, "%s: id %d is '%.*s', not llama2.c's byte vocabulary's '%s' (tiny_gpt reads only "
                                      "that vocabulary)", tok, id, n, tbuf + p + 8, want);
                goto done;
            }
            if ((size_t)n > longest) longest = (size_t)n;
            p += 8 + (size_t)n;
        }
        if (p != tl) {
            snprintf(err, errlen, "%s: %zu bytes after the vocab_size %d entries (the file has %zu): another "
                                  "tokenizer's, or garbage", tok, tl - p, V, tl);
            goto done;
        }
        if (max_len < 0 || (size_t)max_len != longest) {   /* run.c sizes its merge buffer from it */
            snprintf(err, errlen, "%s: offset 0: max_token_length %d is not the longest piece's length %zu", tok,
                     (int)max_len, longest);
            goto done;
        }
    }
    /* the checkpoint: weights, config, vocabulary, and the tables as they were */
    if (!(g = tg_graph_new())) goto done;
    tg_tensor *cs[2];
    for (int s = 0; s < 2; s++) {
        cs[s] = tg_tensor_from(g, TG_F32, 2, (int[]){c.block_size, hd / 2}, freqs + s * table);
        if (!cs[s]) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
    }
    tg_st_writer *w = tg_st_writer_new();
    int bad = !w || tg_model_config_write(&m.config, w) || tg_vocab_write(&v, w) ||
              tg_st_writer_meta(w, "format", "tapegrad tiny_gpt (imported from llama2.c)");
    for (int i = 0; !bad && i < tg_params_count(m.params); i++)
        bad |= tg_st_writer_add_tensor(w, tg_params_at(m.params, i)->name, tg_params_at(m.params, i));
    bad = bad || tg_st_writer_add_tensor(w, "llama2c.freqs_cos", cs[0]) ||
          tg_st_writer_add_tensor(w, "llama2c.freqs_sin", cs[1]);
    if (bad) snprintf(err, errlen, "%s: could not assemble the checkpoint", out);
    else rc = tg_st_writer_save(w, out, err, errlen);
    tg_st_writer_free(w);
    if (!rc) printf("wrote %s (a Llama of %lld parameters)\n", out, (long long)need);
done:
    free(buf);
    free(tbuf);
    tg_graph_free(g);
    tg_model_free(&m);
    return rc;
}

/* ---- the commands -------------------------------------------------------- */

int cmd_export(int argc, char **argv)
{
    const char *ckpt = NULL, *format = "llama2c", *out = NULL, *tok = NULL, *dtype = "f32";
    int threads = 1;
    arg_spec specs[] = {
        {"ckpt", ARG_STRING, &ckpt, 0, 0, "a Llama checkpoint of tiny_gpt train", 0, ROLE_NONE},
        {"format", ARG_STRING, &format, 0, 0, "llama2c: llama2.c's run.c checkpoint", 0, ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "the model file to write (model.bin)", 0, ROLE_NONE},
        {"tokenizer", ARG_STRING, &tok, 0, 0, "also write run.c's tokenizer file here (tokenizer.bin)", 0, ROLE_NONE},
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    char err[2048];
    tg_dtype dt;
    int setup = command_setup("export", "--ckpt F --format llama2c --out model.bin [--tokenizer tok.bin]", specs,
                              n_specs, argc, argv, &dtype, &dt, NULL, NULL, &threads);
    if (setup >= 0) return setup;
    if (!ckpt || !out || strcmp(format, "llama2c")) {
        fprintf(stderr, "tiny_gpt export: %s\n", strcmp(format, "llama2c") ? "--format: only llama2c is known"
                                                                             : "--ckpt and --out are required");
        return 2;
    }
    char picked[4096];   /* --ckpt DIR: the run's best, else last, as sample and eval take it */
    tg_st_file *f = (ckpt = ckpt_resolve(ckpt, "export", picked, sizeof picked, err, sizeof err))
                        ? tg_st_load(ckpt, err, sizeof err) : NULL;
    tg_model m = {0};
    tg_vocab v = {0};
    int rc = !f || tg_checkpoint_load_model(f, TG_F32, 0.0, &m, err, sizeof err) ||
             checkpoint_model_vocab(f, &m, NULL, NULL, &v, err, sizeof err) ||
             export_llama2c(f, &m, &v, out, tok, err, sizeof err);
    if (rc) fprintf(stderr, "tiny_gpt export: %s\n", err);
    tg_vocab_free(&v);
    tg_model_free(&m);
    tg_st_free(f);
    return rc ? 1 : 0;
}

int cmd_import(int argc, char **argv)
{
    const char *model_path = NULL, *format = "llama2c", *out = NULL, *tok = NULL, *dtype = "f32";
    int threads = 1;
    arg_spec specs[] = {
        {"model", ARG_STRING, &model_path, 0, 0, "llama2.c's model file (model.bin)", 0, ROLE_NONE},
        {"format", ARG_STRING, &format, 0, 0, "llama2c", 0, ROLE_NONE},
        {"tokenizer", ARG_STRING, &tok, 0, 0, "its tokenizer.bin, checked to be llama2.c's byte vocabulary", 0,
         ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "the checkpoint to write (safetensors)", 0, ROLE_NONE},
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    char err[2048];
    tg_dtype dt;
    int setup = command_setup("import", "--format llama2c --model model.bin [--tokenizer tok.bin] --out F", specs,
                              n_specs, argc, argv, &dtype, &dt, NULL, NULL, &threads);
    if (setup >= 0) return setup;
    if (!model_path || !out || strcmp(format, "llama2c")) {
        fprintf(stderr, "tiny_gpt import: %s\n", strcmp(format, "llama2c") ? "--format: only llama2c is known"
                                                                             : "--model and --out are required");
        return 2;
    }
    if (import_llama2c(model_path, tok, out, err, sizeof err)) {
        fprintf(stderr, "tiny_gpt import: %s\n", err);
        return 1;
    }
    return 0;
}
