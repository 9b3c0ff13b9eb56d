/* formats: the GGUF export of a GPT (formats/gguf.c), read back here
 * byte by byte, without llama.cpp (tests/gguf_gpt.js runs the files in it).
 *
 * - A GPT is llama.cpp's architecture gpt2: its keys (gpt2.context_length
 *   ... layer_norm_epsilon), its tensors under llama.cpp's names and
 *   ggml's shapes (fastest first), every bias present (zeros for a model
 *   without), no output tensor (the tied head); q8_0 for the matrices,
 *   f32 for the vectors.
 * - Its byte vocabulary is llama.cpp's "rwkv" model (each byte a token,
 *   no BOS, no special token: llama.cpp's "llama" would end texts at id
 *   2), imported back as the same bytes; GPT-2's tiktoken ranks are its
 *   "gpt2" model with the merges, pre-tokenizer gpt-2 and <|endoftext|> a
 *   control token.
 * - A BPE Llama exported (f32, q8_0) and imported back encodes as before.
 * - Refused, naming why and writing nothing: a GPT of bare ids, a Llama
 *   of a text's bytes.
 * - The import of such a file gives the checkpoint back (weights bit for
 *   bit, a tanh GPT with biases, GPT-2's ranks); a gpt2 file tapegrad
 *   cannot run (another MLP width or eps, a bias missing, another
 *   pre-tokenizer, BOS) is refused naming the key or tensor, writing
 *   nothing. */
#define _GNU_SOURCE /* memmem */
#include "tg_test.h"

#define ERRLEN 1024

/* ---- a small GGUF reader for the checks ---------------------------------- */

typedef struct gkv {
    char key[96];
    uint32_t type, elem;
    uint64_t count;
    const unsigned char *val; /* the value (an array: its first element) */
} gkv;
typedef struct gti {
    char name[96];
    uint32_t ndim, type;
    uint64_t ne[4], offset;
} gti;
typedef struct gfile {
    unsigned char *buf;
    size_t len;
    uint64_t n_kv, n_t;
    gkv kv[64];
    gti t[64];
    const unsigned char *data;
} gfile;

static uint64_t rd64(const unsigned char **p)
{
    uint64_t v;
    memcpy(&v, *p, 8);
    *p += 8;
    return v;
}
static uint32_t rd32(const unsigned char **p)
{
    uint32_t v;
    memcpy(&v, *p, 4);
    *p += 4;
    return v;
}
static size_t vsize(uint32_t t, const unsigned char *p)
{
    static const size_t S[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    uint64_t n;
    if (t == 8) return memcpy(&n, p, 8), 8 + (size_t)n;
    return S[t];
}

static void gread(gfile *g, const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    fseek(f, 0, SEEK_END);
    g->len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    g->buf = malloc(g->len);
    ck_assert(fread(g->buf, 1, g->len, f) == g->len);
    fclose(f);
    const unsigned char *p = g->buf;
    ck_assert(!memcmp(p, "GGUF", 4));
    p += 4;
    ck_assert_uint_eq(rd32(&p), 3);
    g->n_t = rd64(&p);
    g->n_kv = rd64(&p);
    ck_assert(g->n_t <= 64 && g->n_kv <= 64);
    for (uint64_t i = 0; i < g->n_kv; i++) {
        gkv *k = &g->kv[i];
        const uint64_t n = rd64(&p);
        ck_assert(n < sizeof k->key);
        memcpy(k->key, p, n);
        k->key[n] = 0;
        p += n;
        k->type = rd32(&p);
        if (k->type == 9) {
            k->elem = rd32(&p);
            k->count = rd64(&p);
            k->val = p;
            for (uint64_t j = 0; j < k->count; j++) p += vsize(k->elem, p);
        } else {
            k->val = p;
            p += vsize(k->type, p);
        }
    }
    for (uint64_t i = 0; i < g->n_t; i++) {
        gti *t = &g->t[i];
        const uint64_t n = rd64(&p);
        memcpy(t->name, p, n);
        t->name[n] = 0;
        p += n;
        t->ndim = rd32(&p);
        for (uint32_t d = 0; d < t->ndim; d++) t->ne[d] = rd64(&p);
        t->type = rd32(&p);
        t->offset = rd64(&p);
    }
    const size_t at = (size_t)(p - g->buf);
    g->data = g->buf + (at + 31) / 32 * 32;
}

static const gkv *key(const gfile *g, const char *k)
{
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (!strcmp(g->kv[i].key, k)) return &g->kv[i];
    return NULL;
}
static uint32_t key_u32(const gfile *g, const char *k)
{
    const gkv *v = key(g, k);
    ck_assert_msg(v && v->type == 4, "no u32 %s", k);
    uint32_t x;
    memcpy(&x, v->val, 4);
    return x;
}
/* a string value, or element i of a string array, NUL-terminated into out */
static const char *key_str(const gfile *g, const char *k, uint64_t i, char *out, size_t cap)
{
    const gkv *v = key(g, k);
    ck_assert_msg(v && (v->type == 8 || (v->type == 9 && v->elem == 8 && i < v->count)), "no string %s[%llu]", k,
                  (unsigned long long)i);
    const unsigned char *p = v->val;
    for (uint64_t j = 0; v->type == 9 && j < i; j++) p += vsize(8, p);
    uint64_t n;
    memcpy(&n, p, 8);
    ck_assert(n < cap);
    memcpy(out, p + 8, n);
    out[n] = 0;
    return out;
}
static const gti *tensor(const gfile *g, const char *name)
{
    for (uint64_t i = 0; i < g->n_t; i++)
        if (!strcmp(g->t[i].name, name)) return &g->t[i];
    return NULL;
}

/* ---- checkpoints ------------------------------------------------------------ */

enum { L = 2, H = 2, C = 32, T = 8 };

/* A GPT (biases, not zero, or none) of vocabulary v saved at path. */
static void save_gpt(const char *path, tg_vocab *v, bool bias, tg_gelu_mode gelu)
{
    tg_error err = {0};
    tg_model_config c = {.arch = "gpt",
                         .n_layer = L,
                         .n_head = H,
                         .n_embd = C,
                         .block_size = T,
                         .vocab_size = v->size,
                         .bias = bias,
                         .gelu = gelu};
    tg_model m = {0};
    ck_assert_msg(tg_model_init(&m, &c, TG_F32, 7, &err) == 0, "%s", err.msg);
    for (int i = 0; i < tg_params_count(m.params); i++) { /* biases not zero (nanoGPT's init zeroes them) */
        tg_tensor *t = tg_params_at(m.params, i);
        if (strstr(t->name, ".bias"))
            for (int64_t k = 0; k < t->numel; k++) ((float *)t->data)[k] = 0.01f * (float)(k % 7 + 1);
    }
    ck_assert_msg(tg_checkpoint_save(path, &(tg_checkpoint){.model = &m, .vocab = v}, &err) == 0, "%s", err.msg);
    tg_model_release(&m);
}

static int export(const char *ckpt, const char *out, tg_gguf_type type, tg_error *err)
{
    tg_st_file *f = tg_st_load(ckpt, err);
    ck_assert_msg(f != NULL, "%s", err->msg);
    const int rc = tg_gguf_export(f, out, type, err);
    tg_st_free(f);
    return rc;
}

START_TEST(a_gpt_is_llamacpps_gpt2)
{
    tg_error err = {0};
    char s[256], want[64];
    static const char text[] = "hello world\n";
    tg_vocab v = {0};
    tg_vocab_bytes(&v, text, strlen(text)); /* "\n", " ", d e h l o r w: 9 ids */
    ck_assert_int_eq(v.size, 9);
    save_gpt(tt_path("gpt.safetensors"), &v, false, TG_GELU_TANH);
    for (int q = 0; q < 2; q++) {
        const tg_gguf_type type = q ? TG_GGUF_Q8_0 : TG_GGUF_F32;
        ck_assert_msg(export(tt_path("gpt.safetensors"), tt_path("gpt.gguf"), type, &err) == 0, "%s", err.msg);
        gfile g = {0};
        gread(&g, tt_path("gpt.gguf"));
        ck_assert_str_eq(key_str(&g, "general.architecture", 0, s, sizeof s), "gpt2");
        ck_assert_uint_eq(key_u32(&g, "gpt2.context_length"), T);
        ck_assert_uint_eq(key_u32(&g, "gpt2.embedding_length"), C);
        ck_assert_uint_eq(key_u32(&g, "gpt2.block_count"), L);
        ck_assert_uint_eq(key_u32(&g, "gpt2.feed_forward_length"), 4 * C);
        ck_assert_uint_eq(key_u32(&g, "gpt2.attention.head_count"), H);
        ck_assert_uint_eq(key_u32(&g, "general.file_type"), q ? 7 : 0);
        const gkv *eps = key(&g, "gpt2.attention.layer_norm_epsilon");
        ck_assert(eps && eps->type == 6);
        float e;
        memcpy(&e, eps->val, 4);
        ck_assert_float_eq(e, 1e-5f);
        ck_assert_ptr_null(key(&g, "gpt2.rope.dimension_count"));
        /* the tokenizer: llama.cpp's rwkv, each byte a token (escaped as llama.cpp unescapes it), no BOS and
         * no special token at all: llama.cpp's llama model would take id 2 for EOS and end texts there */
        ck_assert_str_eq(key_str(&g, "tokenizer.ggml.model", 0, s, sizeof s), "rwkv");
        ck_assert_str_eq(key_str(&g, "tokenizer.ggml.tokens", 0, s, sizeof s), "\\x0a");
        ck_assert_str_eq(key_str(&g, "tokenizer.ggml.tokens", 1, s, sizeof s), " ");
        ck_assert_str_eq(key_str(&g, "tokenizer.ggml.tokens", 8, s, sizeof s), "w");
        ck_assert_uint_eq(key(&g, "tokenizer.ggml.tokens")->count, 9);
        const gkv *bos = key(&g, "tokenizer.ggml.add_bos_token");
        ck_assert(bos && bos->type == 7 && bos->val[0] == 0);
        ck_assert_ptr_null(key(&g, "tokenizer.ggml.bos_token_id"));
        ck_assert_ptr_null(key(&g, "tokenizer.ggml.eos_token_id"));
        ck_assert_ptr_null(key(&g, "tokenizer.ggml.unknown_token_id"));
        ck_assert_ptr_null(key(&g, "tokenizer.ggml.scores"));
        /* the tensors: llama.cpp's names, ggml's shapes, biases as zeros, no output */
        ck_assert_uint_eq(g.n_t, 12 * L + 4);
        static const struct {
            const char *name;
            uint64_t ne0, ne1;
            bool matrix;
        } want_t[] = {
            {"token_embd.weight", C, 9, true},         {"position_embd.weight", C, T, true},
            {"blk.1.attn_norm.weight", C, 0, false},   {"blk.1.attn_norm.bias", C, 0, false},
            {"blk.1.attn_qkv.weight", C, 3 * C, true}, {"blk.1.attn_qkv.bias", 3 * C, 0, false},
            {"blk.1.attn_output.weight", C, C, true},  {"blk.1.attn_output.bias", C, 0, false},
            {"blk.1.ffn_norm.weight", C, 0, false},    {"blk.1.ffn_norm.bias", C, 0, false},
            {"blk.1.ffn_up.weight", C, 4 * C, true},   {"blk.1.ffn_up.bias", 4 * C, 0, false},
            {"blk.1.ffn_down.weight", 4 * C, C, true}, {"blk.1.ffn_down.bias", C, 0, false},
            {"output_norm.weight", C, 0, false},       {"output_norm.bias", C, 0, false},
        };
        for (size_t i = 0; i < sizeof want_t / sizeof *want_t; i++) {
            const gti *t = tensor(&g, want_t[i].name);
            ck_assert_msg(t != NULL, "no %s", want_t[i].name);
            ck_assert_uint_eq(t->ndim, want_t[i].matrix ? 2 : 1);
            ck_assert_uint_eq(t->ne[0], want_t[i].ne0);
            if (want_t[i].matrix) ck_assert_uint_eq(t->ne[1], want_t[i].ne1);
            ck_assert_uint_eq(t->type, want_t[i].matrix && q ? 8 : 0);
            if (strstr(want_t[i].name, ".bias")) { /* the model has none: zeros */
                const float *d = (const float *)(g.data + t->offset);
                for (uint64_t k = 0; k < t->ne[0]; k++) ck_assert_float_eq(d[k], 0.0f);
            }
        }
        ck_assert_ptr_null(tensor(&g, "output.weight"));
        snprintf(want, sizeof want, "blk.%d.ffn_down.bias", L - 1);
        ck_assert_ptr_eq(tensor(&g, want), &g.t[g.n_t - 3]); /* llama.cpp's order: the blocks, then output_norm */
        free(g.buf);
        /* and back: the same bytes */
        ck_assert_msg(tg_gguf_import(tt_path("gpt.gguf"), tt_path("back.safetensors"), TG_F32, &err) == 0, "%s",
                      err.msg);
        tg_st_file *f = tg_st_load(tt_path("back.safetensors"), &err);
        tg_model m = {0};
        tg_vocab b = {0};
        ck_assert(f && tg_checkpoint_load_model(f, TG_F32, 0.0, &m, &err) == 0);
        ck_assert_msg(tg_checkpoint_load_vocab(f, &m, &b, &err) == 0, "%s", err.msg);
        ck_assert(b.kind == TG_VOCAB_BYTES && b.size == v.size && !memcmp(b.chars, v.chars, (size_t)v.size));
        tg_vocab_release(&b);
        tg_model_release(&m);
        tg_st_free(f);
    }
    tg_vocab_release(&v);
}
END_TEST

/* GPT-2-like ranks: the 256 bytes, " t" (256), "he" (257), " the" (258); <|endoftext|> 259 */
static tg_tokenizer *tiny_tiktoken(void)
{
    static const char *const MERGED[3] = {" t", "he", " the"};
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    FILE *f = fopen(tt_path("tiny.tiktoken"), "wb");
    for (int r = 0; r < 259; r++) {
        unsigned char piece[8];
        size_t n = 1;
        if (r < 256) piece[0] = (unsigned char)r;
        else n = (size_t)snprintf((char *)piece, sizeof piece, "%s", MERGED[r - 256]);
        char out[16];
        size_t o = 0;
        for (size_t i = 0; i < n; i += 3) {
            uint32_t x = (uint32_t)piece[i] << 16 | (i + 1 < n ? (uint32_t)piece[i + 1] << 8 : 0) |
                (i + 2 < n ? piece[i + 2] : 0);
            out[o++] = b64[x >> 18 & 63], out[o++] = b64[x >> 12 & 63];
            out[o++] = i + 1 < n ? b64[x >> 6 & 63] : '=', out[o++] = i + 2 < n ? b64[x & 63] : '=';
        }
        fprintf(f, "%.*s %d\n", (int)o, out, r);
    }
    fclose(f);
    tg_error err = {0};
    tg_tokenizer *t = tg_tok_load_tiktoken(tt_path("tiny.tiktoken"), &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    return t;
}

START_TEST(gpt2_ranks_are_llamacpps_gpt2_tokenizer)
{
    tg_error err = {0};
    char s[256];
    tg_vocab v = {0};
    ck_assert_int_eq(tg_vocab_tokenizer(&v, tiny_tiktoken(), false, 260, &err), 0);
    save_gpt(tt_path("tt.safetensors"), &v, true, TG_GELU_TANH);
    ck_assert_msg(export(tt_path("tt.safetensors"), tt_path("tt.gguf"), TG_GGUF_F32, &err) == 0, "%s", err.msg);
    gfile g = {0};
    gread(&g, tt_path("tt.gguf"));
    ck_assert_str_eq(key_str(&g, "tokenizer.ggml.model", 0, s, sizeof s), "gpt2");
    ck_assert_str_eq(key_str(&g, "tokenizer.ggml.pre", 0, s, sizeof s), "gpt-2");
    ck_assert_uint_eq(key(&g, "tokenizer.ggml.tokens")->count, 260);
    ck_assert_str_eq(key_str(&g, "tokenizer.ggml.tokens", ' ', s, sizeof s), "\xc4\xa0"); /* GPT-2's stand-in: U+0120 */
    ck_assert_str_eq(key_str(&g, "tokenizer.ggml.tokens", 'a', s, sizeof s), "a");
    ck_assert_str_eq(key_str(&g, "tokenizer.ggml.tokens", 258, s, sizeof s), "\xc4\xa0the");
    ck_assert_str_eq(key_str(&g, "tokenizer.ggml.tokens", 259, s, sizeof s), "<|endoftext|>");
    const gkv *m = key(&g, "tokenizer.ggml.merges");
    ck_assert(m && m->count == 3);
    ck_assert_str_eq(key_str(&g, "tokenizer.ggml.merges", 0, s, sizeof s), "\xc4\xa0 t");
    ck_assert_str_eq(key_str(&g, "tokenizer.ggml.merges", 1, s, sizeof s), "h e");
    ck_assert_str_eq(key_str(&g, "tokenizer.ggml.merges", 2, s, sizeof s), "\xc4\xa0t he");
    const gkv *ty = key(&g, "tokenizer.ggml.token_type");
    int32_t t0, t259;
    memcpy(&t0, ty->val, 4);
    memcpy(&t259, ty->val + 4 * 259, 4);
    ck_assert_int_eq(t0, 1); /* normal */
    ck_assert_int_eq(t259, 3); /* control */
    ck_assert_uint_eq(key_u32(&g, "tokenizer.ggml.bos_token_id"), 259);
    ck_assert_uint_eq(key_u32(&g, "tokenizer.ggml.eos_token_id"), 259);
    ck_assert_ptr_null(key(&g, "tokenizer.ggml.scores"));
    ck_assert_ptr_null(key(&g, "tokenizer.ggml.add_space_prefix"));
    const gti *b = tensor(&g, "blk.0.attn_qkv.bias"); /* the model's own biases, not zeros */
    ck_assert(b != NULL);
    free(g.buf);
    tg_vocab_release(&v);
}
END_TEST

START_TEST(what_llamacpp_cannot_read_alike_is_refused)
{
    tg_error err = {0};
    tg_vocab v = {0};
    /* a GPT of bare ids */
    tg_vocab_ids(&v, 16);
    save_gpt(tt_path("ids.safetensors"), &v, false, TG_GELU_TANH);
    ck_assert_int_eq(export(tt_path("ids.safetensors"), tt_path("no.gguf"), TG_GGUF_F32, &err), -1);
    ck_assert_msg(strstr(err.msg, "a GPT's vocabulary") && strstr(err.msg, "bare token ids"), "%s", err.msg);
    ck_assert_int_eq(access(tt_path("no.gguf"), F_OK), -1);
    tg_vocab_release(&v);
    static const char text[] = "the cat and the hat and the bat, the cat and the hat.";
    /* a Llama of a text's bytes */
    tg_vocab_bytes(&v, text, strlen(text));
    tg_model_config c = {.arch = "llama",
                         .n_layer = 1,
                         .n_head = 2,
                         .n_kv_head = 2,
                         .n_embd = 16,
                         .hidden_dim = 32,
                         .block_size = 8,
                         .vocab_size = v.size,
                         .rope_theta = 10000,
                         .norm_eps = 1e-5,
                         .tied = true};
    tg_model m = {0};
    ck_assert_msg(tg_model_init(&m, &c, TG_F32, 3, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(tg_checkpoint_save(tt_path("lb.safetensors"), &(tg_checkpoint){.model = &m, .vocab = &v}, &err),
                     0);
    tg_model_release(&m);
    ck_assert_int_eq(export(tt_path("lb.safetensors"), tt_path("no.gguf"), TG_GGUF_F32, &err), -1);
    ck_assert_msg(strstr(err.msg, "a Llama's vocabulary") && strstr(err.msg, "a text's bytes"), "%s", err.msg);
    ck_assert_int_eq(access(tt_path("no.gguf"), F_OK), -1);
    tg_vocab_release(&v);
}
END_TEST

/* Writes path's bytes to out with the first occurrence of `find` (n
 * bytes) replaced by `with` (n bytes), at `skip` bytes past its start. */
static void patch(const char *path, const char *out, const void *find, size_t n, size_t skip, const void *with,
                  size_t wn)
{
    gfile g = {0};
    gread(&g, path);
    unsigned char *at = memmem(g.buf, g.len, find, n);
    ck_assert_msg(at != NULL, "%s: no %.*s", path, (int)n, (const char *)find);
    memcpy(at + skip, with, wn);
    FILE *f = fopen(out, "wb");
    ck_assert(f && fwrite(g.buf, 1, g.len, f) == g.len);
    fclose(f);
    free(g.buf);
}

START_TEST(an_rwkv_vocabulary_is_read_as_a_texts_bytes_only)
{
    tg_error err = {0};
    static const char text[] = "hello world\n";
    tg_vocab v = {0};
    tg_vocab_bytes(&v, text, strlen(text));
    save_gpt(tt_path("rw.safetensors"), &v, false, TG_GELU_TANH);
    tg_vocab_release(&v);
    ck_assert_msg(export(tt_path("rw.safetensors"), tt_path("rw.gguf"), TG_GGUF_F32, &err) == 0, "%s", err.msg);
    static const char W[] = "\x01\0\0\0\0\0\0\0w"; /* the last token, "w", as a GGUF string */
    const struct {
        const char *with, *why;
    } cases[] = {
        {"\\", "token 8 ('\\') is not one byte: tapegrad reads an 'rwkv' vocabulary as a text's bytes"},
        {"d", "token 8 ('d') is not after the byte before it"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        patch(tt_path("rw.gguf"), tt_path("bad.gguf"), W, sizeof W - 1, 8, cases[i].with, 1);
        remove(tt_path("c.safetensors"));
        ck_assert_int_eq(tg_gguf_import(tt_path("bad.gguf"), tt_path("c.safetensors"), TG_F32, &err), -1);
        ck_assert_msg(strstr(err.msg, cases[i].why), "case %zu: %s", i, err.msg);
        ck_assert_int_eq(access(tt_path("c.safetensors"), F_OK), -1);
    }
}
END_TEST

START_TEST(gpt2_files_import_and_what_tapegrad_cannot_run_is_refused)
{
    tg_error err = {0};
    tg_vocab v = {0};
    ck_assert_int_eq(tg_vocab_tokenizer(&v, tiny_tiktoken(), false, 260, &err), 0);
    save_gpt(tt_path("a.safetensors"), &v, true, TG_GELU_TANH);
    tg_vocab_release(&v);
    ck_assert_msg(export(tt_path("a.safetensors"), tt_path("a.gguf"), TG_GGUF_F32, &err) == 0, "%s", err.msg);
    /* back: the same weights, a tanh GPT with biases, GPT-2's ranks */
    ck_assert_msg(tg_gguf_import(tt_path("a.gguf"), tt_path("b.safetensors"), TG_F32, &err) == 0, "%s", err.msg);
    tg_st_file *a = tg_st_load(tt_path("a.safetensors"), &err), *b = tg_st_load(tt_path("b.safetensors"), &err);
    ck_assert(a && b);
    tg_model ma = {0}, mb = {0};
    ck_assert_int_eq(tg_checkpoint_load_model(a, TG_F32, 0.0, &ma, &err), 0);
    ck_assert_int_eq(tg_checkpoint_load_model(b, TG_F32, 0.0, &mb, &err), 0);
    ck_assert(mb.config.bias && mb.config.gelu == TG_GELU_TANH && !strcmp(mb.config.arch, "gpt"));
    ck_assert_int_eq(tg_params_count(ma.params), tg_params_count(mb.params));
    for (int i = 0; i < tg_params_count(ma.params); i++) {
        const tg_tensor *x = tg_params_at(ma.params, i), *y = tg_params_at(mb.params, i);
        ck_assert_str_eq(x->name, y->name);
        ck_assert_msg(x->numel == y->numel && !memcmp(x->data, y->data, (size_t)x->numel * 4), "%s differs", x->name);
    }
    tg_vocab vb = {0};
    ck_assert_int_eq(tg_checkpoint_load_vocab(b, &mb, &vb, &err), 0);
    ck_assert(vb.kind == TG_VOCAB_TOKENIZER && tg_tok_kind_of(vb.tok) == TG_TOK_TIKTOKEN && !vb.docs);
    tg_vocab_release(&vb);
    tg_model_release(&ma);
    tg_model_release(&mb);
    tg_st_free(a);
    tg_st_free(b);
    /* refused, naming the key or tensor, writing nothing */
    const uint32_t ff = 4 * C + 1;
    const uint8_t yes = 1;
    static const char FF[] = "gpt2.feed_forward_length", EPS[] = "gpt2.attention.layer_norm_epsilon",
                      BIAS[] = "blk.1.attn_qkv.bias", PRE[] = "gpt-2", BOS[] = "tokenizer.ggml.add_bos_token";
    const float eps = 1e-6f, eps_near = nextafterf(1e-5f, 1.0f); /* the next float32 up: printed alike by %g */
    const struct {
        const void *find;
        size_t n, skip;
        const void *with;
        size_t wn;
        const char *why;
    } cases[] = {
        {FF, sizeof FF - 1, sizeof FF - 1 + 4, &ff, 4, "key 'gpt2.feed_forward_length' = 129 is not 4 x"},
        {EPS, sizeof EPS - 1, sizeof EPS - 1 + 4, &eps, 4,
         "key 'gpt2.attention.layer_norm_epsilon' is 9.99999997e-07 "
         "as a float32"},
        {EPS, sizeof EPS - 1, sizeof EPS - 1 + 4, &eps_near, 4,
         "key 'gpt2.attention.layer_norm_epsilon' is "
         "1.00000007e-05 as a float32: tapegrad's LayerNorm has "
         "eps 1e-05 (9.99999975e-06 as a float32)"},
        {BIAS, sizeof BIAS - 1, sizeof BIAS - 2, "z", 1, "no tensor 'blk.1.attn_qkv.bias'"},
        {PRE, sizeof PRE - 1, 4, "4", 1, "key 'tokenizer.ggml.pre' is 'gpt-4'"},
        {BOS, sizeof BOS - 1, sizeof BOS - 1 + 4, &yes, 1, "key 'tokenizer.ggml.add_bos_token' is true"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        patch(tt_path("a.gguf"), tt_path("bad.gguf"), cases[i].find, cases[i].n, cases[i].skip, cases[i].with,
              cases[i].wn);
        remove(tt_path("c.safetensors"));
        ck_assert_int_eq(tg_gguf_import(tt_path("bad.gguf"), tt_path("c.safetensors"), TG_F32, &err), -1);
        ck_assert_msg(strstr(err.msg, cases[i].why), "case %zu: %s", i, err.msg);
        ck_assert_int_eq(access(tt_path("c.safetensors"), F_OK), -1);
    }
}
END_TEST

/* tapegrad's ids of text for the checkpoint at path: its tokenizer's, with the space in front a Llama's
 * text takes (an imported tokenizer of pieces with scores adds it itself). n ids into ids (freed by the caller). */
static int64_t ids_of(const char *path, const char *text, int32_t **ids)
{
    tg_error err = {0};
    char buf[512];
    tg_st_file *f = tg_st_load(path, &err);
    ck_assert_msg(f != NULL, "%s", err.msg);
    tg_model m = {0};
    tg_vocab v = {0};
    ck_assert_msg(tg_checkpoint_load_model(f, TG_F32, 0.0, &m, &err) == 0, "%s", err.msg);
    ck_assert_msg(tg_checkpoint_load_vocab(f, &m, &v, &err) == 0, "%s", err.msg);
    ck_assert(v.kind == TG_VOCAB_TOKENIZER);
    snprintf(buf, sizeof buf, "%s%s", tg_tok_adds_prefix(v.tok) ? "" : " ", text);
    const int64_t n = tg_tok_encode(v.tok, buf, strlen(buf), ids, &err);
    ck_assert_msg(n > 0, "%s", err.msg);
    tg_vocab_release(&v);
    tg_model_release(&m);
    tg_st_free(f);
    return n;
}

START_TEST(a_bpe_llama_comes_back_with_its_ids)
{
    /* tapegrad's BPE as GGUF has every single byte (the space aside) only as a byte token <0xXX>:
     * llama.cpp merges characters by their text whatever they are, and so must the import */
    static const char *const lines[] = {"First Citizen:\nBefore we proceed any further, hear me speak.\n",
                                        "All:\nSpeak, speak.\n",
                                        "First Citizen:\nYou are all resolved rather to die "
                                        "than to famish?\n",
                                        "Second Citizen:\nWould you proceed especially?\n"};
    char text[8192] = "";
    tg_error err = {0};
    for (int r = 0; r < 30; r++) strcat(text, lines[r % 4]);
    const tg_bpe_options bo = {.vocab_size = 320};
    tg_tokenizer *tok = tg_bpe_train(text, strlen(text), &bo, &err);
    ck_assert_msg(tok != NULL, "%s", err.msg);
    tg_vocab v = {0};
    ck_assert_msg(tg_vocab_tokenizer(&v, tok, true, 0, &err) == 0, "%s", err.msg);
    tg_model_config c = {.arch = "llama",
                         .n_layer = 1,
                         .n_head = 2,
                         .n_kv_head = 2,
                         .n_embd = 32,
                         .hidden_dim = 64,
                         .block_size = 8,
                         .vocab_size = v.size,
                         .rope_theta = 10000,
                         .norm_eps = 1e-5,
                         .tied = true};
    tg_model m = {0};
    ck_assert_msg(tg_model_init(&m, &c, TG_F32, 3, &err) == 0, "%s", err.msg);
    ck_assert_msg(tg_checkpoint_save(tt_path("bpe.safetensors"), &(tg_checkpoint){.model = &m, .vocab = &v}, &err) == 0,
                  "%s", err.msg);
    tg_model_release(&m);
    tg_vocab_release(&v);
    static const char *const probes[] = {"First Citizen:", "Before we proceed any further, hear me speak.",
                                         "Second Citizen: you famish, all resolved?"};
    for (int q = 0; q < 2; q++) {
        ck_assert_msg(export(tt_path("bpe.safetensors"), tt_path("bpe.gguf"), q ? TG_GGUF_Q8_0 : TG_GGUF_F32, &err) ==
                          0,
                      "%s", err.msg);
        ck_assert_msg(tg_gguf_import(tt_path("bpe.gguf"), tt_path("back.safetensors"), TG_F32, &err) == 0, "%s",
                      err.msg);
        for (size_t i = 0; i < sizeof probes / sizeof *probes; i++) {
            int32_t *want, *got;
            const int64_t nw = ids_of(tt_path("bpe.safetensors"), probes[i], &want),
                          ng = ids_of(tt_path("back.safetensors"), probes[i], &got);
            ck_assert_msg(i > 0 || nw <= 4, "%s: %lld ids: the tokenizer learned too few pieces for a test", probes[i],
                          (long long)nw);
            int64_t k = 0;
            while (k < nw && k < ng && want[k] == got[k]) k++;
            ck_assert_msg(k == nw && k == ng,
                          "%s, %s: %lld ids exported, %lld imported, the first difference at %lld "
                          "(%d, imported %d)",
                          q ? "q8_0" : "f32", probes[i], (long long)nw, (long long)ng, (long long)k,
                          k < nw ? (int)want[k] : -1, k < ng ? (int)got[k] : -1);
            free(want);
            free(got);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("formats_gguf");
    tt_tcase(s, "gguf", 60,
             TT_TESTS(a_gpt_is_llamacpps_gpt2, gpt2_ranks_are_llamacpps_gpt2_tokenizer,
                      what_llamacpp_cannot_read_alike_is_refused,
                      gpt2_files_import_and_what_tapegrad_cannot_run_is_refused, a_bpe_llama_comes_back_with_its_ids,
                      an_rwkv_vocabulary_is_read_as_a_texts_bytes_only));
    return tt_run_in_tmpdir(s, "tg_gguf_test", true);
}
