/* llama2.c's files (formats.h): a Llama checkpoint to and from the
 * model.bin and tokenizer.bin its run.c reads.
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
 * eps of 1e-5, and the vocabulary conventions of TG_VOCAB_LLAMA2C
 * (pieces: "<unk>", "\n<s>\n", "\n</s>\n", then each byte as itself when
 * printable ASCII, else "<0xXX>", which run.c turns back into the byte),
 * so export refuses a model that differs. Scores are 0: no two pieces
 * concatenate to a third, so run.c's merge loop never merges.
 *
 * A tapegrad BPE tokenizer goes into tokenizer.bin so that run.c's
 * encoder gives tapegrad's ids for any text without a NUL byte (the rule
 * and why it holds: docs/tokenizers.md): every piece is written as its
 * raw bytes (bytes included, so that run.c's fallback ids byte + 3
 * concatenate to the learned pieces), and piece id k >= 259 scores -k:
 * run.c merges the highest score, tapegrad the lowest id, both the
 * leftmost on a tie. The specials score -1e30, below run.c's starting
 * best of -1e10, so no merge ever makes one.
 *
 * Import reads model.bin back into a Llama checkpoint, keeping the two
 * RoPE tables as tensors llama2c.freqs_cos / llama2c.freqs_sin, so that
 * exporting the import writes the same bytes, and tokenizer.bin as
 * text/'s reader takes it (tg_tok_load_llama2c: pieces with scores,
 * merged as run.c merges them): llama2.c's byte vocabulary becomes
 * TG_VOCAB_LLAMA2C again, any other (tapegrad's BPE as export writes it,
 * llama2.c's own files) a TG_TOK_SPM tokenizer, which export writes back
 * as it was read. Without a tokenizer the model is bare ids. */
#include "formats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/atomic_file.h"
#include "../core/err_internal.h"
#include "llama2c_layout_internal.h"
#include "options_internal.h"

/* ---- writing ------------------------------------------------------------ */

/* Output into a tg_atomic_file; a failure sticks in the file (f->step). */
static void put(tg_atomic_file *f, const void *p, size_t n) { tg_atomic_write(f, p, n, NULL); }
static void put_i32(tg_atomic_file *f, int32_t v) { put(f, &v, 4); }
static void put_f32(tg_atomic_file *f, float v) { put(f, &v, 4); }

/* tensor t's values as float32 */
static void put_tensor(tg_atomic_file *f, const tg_tensor *t)
{
    float chunk[1024];
    for (int64_t i = 0; i < t->numel;) {
        int n = 0;
        for (; n < 1024 && i < t->numel; n++, i++) chunk[n] = (float)tg_tensor_get(t, i);
        put(f, chunk, (size_t)n * 4);
    }
}

/* model.py's RoPE tables in float: cos and sin of t / theta^(2i / hd) */
static void put_freqs(tg_atomic_file *f, int seq_len, int hd, double theta, bool sine)
{
    for (int t = 0; t < seq_len; t++)
        for (int i = 0; i < hd / 2; i++) {
            const float freq = 1.0f / powf((float)theta, (float)(2 * i) / (float)hd), a = (float)t * freq;
            put_f32(f, sine ? sinf(a) : cosf(a));
        }
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

/* 0 when a TG_TOK_SPM tokenizer is run.c's (an imported tokenizer.bin:
 * run.c's options, <unk> BOS EOS, the bytes at 3 + b, then normal
 * pieces), so that writing its pieces as spelled, with their scores,
 * gives run.c the same tokenizer; else -1 with the message. *max_len:
 * the longest piece as spelled. */
static int spm_fits(const tg_tokenizer *t, size_t *max_len, tg_error *err)
{
    tg_spm_options o;
    tg_tok_spm_options_of(t, &o);
    if (o.space_u2581 || !o.add_prefix || o.merge_floor != -1e10)
        return tg_error_set(err,
                            "the tokenizer's pieces with scores are not run.c's (%s): run.c would encode "
                            "differently",
                            o.space_u2581       ? "spaces spelled U+2581"
                                : !o.add_prefix ? "no dummy prefix"
                                                : "another merge floor than -1e10"),
               -1;
    *max_len = 0;
    const int32_t V = tg_tok_vocab_size(t);
    for (int32_t id = 0; id < V; id++) {
        size_t l;
        const unsigned char *p = tg_tok_piece(t, id, &l);
        const int ty = tg_tok_piece_type(t, id);
        const int want = id == 0 ? TG_PIECE_UNKNOWN
            : id < 3             ? TG_PIECE_CONTROL
            : id < 259           ? TG_PIECE_BYTE
                                 : TG_PIECE_NORMAL;
        if (ty != want || (ty == TG_PIECE_BYTE && (l != 1 || p[0] != id - 3)))
            return tg_error_set(err,
                                "id %d is not llama2.c's layout (<unk>, BOS, EOS, byte b at 3 + b, then "
                                "the pieces)",
                                (int)id),
                   -1;
        tg_tok_spelled(t, id, &l);
        if (l > *max_len) *max_len = l;
    }
    return 0;
}

/* 0 when run.c's encoder gives t's ids (the top comment's rule); else -1
 * with the message. *max_len: the longest piece. */
static int bpe_fits(const tg_tokenizer *t, size_t *max_len, tg_error *err)
{
    if (tg_tok_kind_of(t) == TG_TOK_SPM) return spm_fits(t, max_len, err);
    if (tg_tok_kind_of(t) != TG_TOK_BPE)
        return tg_error_set(err,
                            "run.c's tokenizer merges pieces by score: only tapegrad's BPE maps onto it "
                            "(this tokenizer is GPT-2's tiktoken ranks)"),
               -1;
    *max_len = 6; /* "\n</s>\n" */
    for (int32_t id = 3; id < tg_tok_vocab_size(t); id++) {
        size_t l;
        const unsigned char *p = tg_tok_piece(t, id, &l);
        if (id < 259 ? l != 1 || p[0] != id - 3 : tg_tok_is_special(t, id))
            return tg_error_set(err,
                                "id %d is not llama2.c's layout (3 specials, byte b at 3 + b, then the "
                                "merges)",
                                (int)id),
                   -1;
        if (id < 259) continue;
        if (memchr(p, 0, l))
            return tg_error_set(err, "piece %d holds a NUL byte, which run.c's C strings cannot", (int)id), -1;
        if (!keeps_characters(p, l))
            return tg_error_set(err,
                                "piece %d joins part of a UTF-8 character to other bytes (a tokenizer "
                                "trained before characters were kept whole): run.c, which looks whole "
                                "characters up first, would give other ids; train it again",
                                (int)id),
                   -1;
        if (l == 5 && !memcmp(p, "<unk>", 5))
            return tg_error_set(err, "piece %d is \"<unk>\", which run.c's file spells id 0", (int)id), -1;
        if (l > *max_len) *max_len = l;
    }
    return 0;
}

/* tokenizer.bin: a BPE tokenizer t (checked by bpe_fits), else the byte
 * vocabulary's V pieces */
static void put_tokenizer(tg_atomic_file *f, const tg_tokenizer *t, size_t bpe_max_len, int V)
{
    char piece[32];
    size_t max_len = bpe_max_len;
    for (int id = 0; !t && id < V; id++) {
        byte_piece(id, piece, sizeof piece);
        if (strlen(piece) > max_len) max_len = strlen(piece);
    }
    put_i32(f, (int32_t)max_len);
    for (int id = 0; id < V; id++) {
        size_t l;
        const char *p = piece;
        if (tg_tok_kind_of(t) == TG_TOK_SPM) { /* as it was read: spelled, scored */
            p = (const char *)tg_tok_spelled(t, id, &l);
            put_f32(f, tg_tok_score(t, id));
            put_i32(f, (int32_t)l);
            put(f, p, l);
            continue;
        }
        if (id < 3 || !t) byte_piece(id, piece, sizeof piece), l = strlen(piece);
        else p = (const char *)tg_tok_piece(t, id, &l);
        put_f32(f, !t ? 0.0f : id < 3 ? -1e30f : id < 259 ? 0.0f : (float)-id);
        put_i32(f, (int32_t)l);
        put(f, p, l);
    }
}

/* Begins the n files of paths (NULL paths skipped), lets write fill them,
 * then commits all or none. 0, or -1 with the message. */
static int write_files(int n, const char *const *paths, void (*write)(tg_atomic_file *files, void *ctx), void *ctx,
                       tg_error *err)
{
    tg_atomic_file f[2] = {0};
    int bad = -1;
    for (int i = 0; i < n && bad < 0; i++)
        if (paths[i] && tg_atomic_begin(&f[i], paths[i], err)) bad = i;
    if (bad < 0) write(f, ctx); /* a failed write sticks in its file: the finish reports it */
    for (int i = 0; i < n && bad < 0; i++)
        if (paths[i] && tg_atomic_finish(&f[i], err)) bad = i;
    for (int i = 0; i < n && bad < 0; i++)
        if (paths[i] && tg_atomic_commit(&f[i], err)) bad = i;
    for (int i = 0; i < n; i++) tg_atomic_abort(&f[i]);
    return bad >= 0 ? -1 : 0;
}

typedef struct export_job {
    const tg_st_file *f;
    const tg_model *m;
    const tg_tokenizer *bpe; /* or NULL: the byte vocabulary */
    size_t bpe_max_len;
} export_job;

static void write_model_and_tokenizer(tg_atomic_file *files, void *ctx)
{
    const export_job *j = ctx;
    const tg_model_config *c = &j->m->config;
    const tg_params *p = j->m->params;
    tg_atomic_file *f = &files[0];
    const int32_t hdr[7] = {c->n_embd,    c->hidden_dim, c->n_layer,
                            c->n_head,    c->n_kv_head,  c->tied ? c->vocab_size : -c->vocab_size,
                            c->block_size};
    for (int i = 0; i < 7; i++) put_i32(f, hdr[i]);
    put_tensor(f, tg_params_get(p, "tok_embeddings.weight"));
    char name[96];
    for (int k = 0; k < 9; k++)
        for (int l = 0; l < c->n_layer; l++) {
            snprintf(name, sizeof name, "layers.%d.%s", l, LAYER_ORDER[k]);
            put_tensor(f, tg_params_get(p, name));
        }
    put_tensor(f, tg_params_get(p, "norm.weight"));
    const int hd = c->n_embd / c->n_head;
    for (int s = 0; s < 2; s++) { /* the tables an import kept, else model.py's */
        const tg_st_tensor *e = tg_st_find(j->f, s ? "llama2c.freqs_sin" : "llama2c.freqs_cos");
        if (e && !strcmp(e->dtype, "F32") && e->numel == (int64_t)c->block_size * hd / 2) put(f, e->data, e->nbytes);
        else put_freqs(f, c->block_size, hd, c->rope_theta, s);
    }
    if (!c->tied) put_tensor(f, tg_params_get(p, "output.weight"));
    if (files[1].path) put_tokenizer(&files[1], j->bpe, j->bpe_max_len, c->vocab_size);
}

int tg_llama2c_export(const tg_st_file *f, const char *model_path, const char *tokenizer_path, tg_error *err)
{
    if (!f || !model_path)
        return tg_error_set(err, "llama2c_export: the %s is NULL", f ? "model path" : "checkpoint"), -1;
    tg_model m = {0};
    tg_vocab v = {0};
    if (tg_checkpoint_load_model(f, TG_F32, 0.0, &m, err)) return -1;
    int rc = -1;
    const tg_model_config *c = &m.config;
    export_job j = {.f = f, .m = &m};
    if (tg_checkpoint_load_vocab(f, &m, &v, err)) goto done;
    if (strcmp(c->arch, "llama")) {
        tg_error_set(err, "llama2c export needs a Llama checkpoint, this one is a %s", c->arch);
        goto done;
    }
    if (tg_fmt_check_options(c, "llama2c export", "llama2.c's run.c", false, err)) goto done;
    if (c->rope_halves || c->rope_theta != 10000 || c->norm_eps != 1e-5) {
        tg_error_set(err,
                     "run.c hard-codes RoPE with interleaved pairs and theta 10000 and RMSNorm eps 1e-5; "
                     "this model has %s pairs, theta %g, eps %g",
                     c->rope_halves ? "halves" : "interleaved", c->rope_theta, c->norm_eps);
        goto done;
    }
    if (v.kind == TG_VOCAB_TOKENIZER) {
        j.bpe = v.tok;
        if (bpe_fits(v.tok, &j.bpe_max_len, err)) goto done;
        if (tg_tok_vocab_size(v.tok) != c->vocab_size) {
            tg_error_set(err,
                         "run.c reads as many pieces as the model has ids: this model has %d, its "
                         "tokenizer %d",
                         c->vocab_size, (int)tg_tok_vocab_size(v.tok));
            goto done;
        }
    } else if (v.kind != TG_VOCAB_LLAMA2C && !(v.kind == TG_VOCAB_IDS && !tokenizer_path)) { /* ids: model.bin alone */
        tg_error_set(err,
                     "run.c reads llama2.c's vocabulary (three specials, then the bytes, or a BPE "
                     "tokenizer of that layout); this model's vocabulary is %s",
                     v.kind == TG_VOCAB_IDS ? "bare ids (no tokenizer to write: leave out the tokenizer's path)"
                                            : "another");
        goto done;
    }
    rc = write_files(2, (const char *const[]){model_path, tokenizer_path}, write_model_and_tokenizer, &j, err);
done:
    tg_vocab_release(&v);
    tg_model_release(&m);
    return rc;
}

typedef struct tokenizer_job {
    const tg_tokenizer *t;
    size_t max_len;
} tokenizer_job;

static void write_tokenizer(tg_atomic_file *files, void *ctx)
{
    const tokenizer_job *j = ctx;
    put_tokenizer(&files[0], j->t, j->max_len, tg_tok_vocab_size(j->t));
}

int tg_llama2c_tokenizer_write(const tg_tokenizer *t, const char *path, tg_error *err)
{
    tokenizer_job j = {.t = t};
    if (!t || !path) return tg_error_set(err, "llama2c_tokenizer_write: the %s is NULL", t ? "path" : "tokenizer"), -1;
    if (bpe_fits(t, &j.max_len, err)) return -1;
    return write_files(1, (const char *const[]){path}, write_tokenizer, &j, err);
}
