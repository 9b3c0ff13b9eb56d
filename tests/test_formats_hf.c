/* formats: the Hugging Face layout (formats/hf.c).
 *
 * - A GPT-2 directory as Hugging Face publishes one (GPT2Model's names
 *   without "transformer.", Conv1D weights (in, out), the mask buffers,
 *   F32, F16 and BF16 tensors, vocab.json + merges.txt) imports with every
 *   value exact and transposed; so does one in shards with an index and a
 *   tokenizer.json, and the tanh GELU is reported in the notice.
 * - What tapegrad cannot run is refused naming the key or tensor, at
 *   once, writing nothing, also when config.json claims a huge model or
 *   65536 layers (at 64 MB of address space).
 * - A file of the directory that is a directory, a named pipe or
 *   /dev/zero is "not a regular file" (a pipe without blocking: each
 *   import runs in a child an alarm ends); config.json is read as
 *   Python's json reads it (a repeated key's last value; a byte-order
 *   mark or bytes after the object refused).
 * - Export then import gives the same checkpoint bit for bit (a GPT with
 *   and without biases, a Llama with interleaved and halves pairs, tied
 *   and not, GQA), and the exported tensors have transformers' names and
 *   layouts (Conv1D transposed, q and k rows in rotate-half order);
 *   config.json says an interleaved Llama's rows were permuted from that
 *   pairing, and the older spelling imports the same.
 * - A Llama's tokenizer.json as transformers writes it imports as pieces
 *   with scores giving the library's ids; what tapegrad's tokenizers cannot
 *   do (merges not every split, or out of order; a non-special added
 *   token; another normalizer, pre-tokenizer, model or template) is
 *   refused naming it; the Metaspace form imports with a notice.
 * - Export of pieces with equal scores, or a byte piece spelled as a raw
 *   byte above 0x7F, writes no tokenizer.json and the notice says why.
 * - tapegrad's BPE (a GPT's, a Llama's) exports and imports back as the
 *   same tokenizer, its learned merges included; a Llama's decoder drops
 *   the space its normalizer prepends.
 * (tests/parity_hf_tokenizer.js checks the ids against the library.) */
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "tg_test.h"

#define ERRLEN 1024

static void write_text(const char *path, const char *s)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "%s", path);
    fputs(s, f);
    fclose(f);
}

/* The whole of a text file, NUL-terminated (free it). */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

/* Writes s with the first `from` replaced by `to` to path. */
static void write_edited(const char *path, const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    ck_assert_msg(at != NULL, "no '%s' to edit", from);
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "%s", path);
    fprintf(f, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
    fclose(f);
}

/* Removes dir's files and dir. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        remove(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

/* GPT-2's stand-in characters for bytes, as UTF-8 into out. */
static void byte_str(const unsigned char *p, size_t n, char *out)
{
    uint32_t cp[256];
    int k = 0;
    for (int b = 0; b < 256; b++)
        cp[b] = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE ? (uint32_t)b : (uint32_t)(256 + k++);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const uint32_t c = cp[p[i]];
        if (c < 0x80) out[o++] = (char)c;
        else out[o++] = (char)(0xC0 | c >> 6), out[o++] = (char)(0x80 | (c & 0x3F));
    }
    out[o] = 0;
}

/* The test's GPT-2 vocabulary: the 256 bytes in order, " t" (256), "he"
 * (257), " the" (258)... as a JSON object's body; <|endoftext|> is 259. */
static const char *const MERGED[3][2] = {{" ", "t"}, {"h", "e"}, {" t", "he"}};
static char *vocab_json(void)
{
    char *s = malloc(65536), piece[16];
    size_t at = (size_t)sprintf(s, "{");
    for (int b = 0; b < 256; b++) {
        const unsigned char c = (unsigned char)b;
        byte_str(&c, 1, piece);
        at += (size_t)sprintf(s + at, "%s\"%s%s\": %d", b ? ", " : "", b == '"' || b == '\\' ? "\\" : "", piece, b);
    }
    for (int k = 0; k < 3; k++) {
        char both[8];
        snprintf(both, sizeof both, "%s%s", MERGED[k][0], MERGED[k][1]);
        byte_str((const unsigned char *)both, strlen(both), piece);
        at += (size_t)sprintf(s + at, ", \"%s\": %d", piece, 256 + k);
    }
    sprintf(s + at, ", \"<|endoftext|>\": 259}");
    return s;
}
static void merges_lines(char *out, bool json)
{
    size_t at = 0;
    for (int k = 0; k < 3; k++) {
        char a[16], b[16];
        byte_str((const unsigned char *)MERGED[k][0], strlen(MERGED[k][0]), a);
        byte_str((const unsigned char *)MERGED[k][1], strlen(MERGED[k][1]), b);
        at += (size_t)sprintf(out + at, json ? "%s\"%s %s\"" : "%s%s %s\n", json && k ? ", " : "", a, b);
    }
}

/* The value a test tensor holds at flat index i: exact in F16 and BF16. */
static float value_at(int tensor, int64_t i) { return (float)((int)((tensor * 37 + i * 11) % 251) - 125) / 64; }

static void to_dtype(const float *v, int64_t n, const char *dt, void *out)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], 4);
        if (!strcmp(dt, "F32")) ((float *)out)[i] = v[i];
        else if (!strcmp(dt, "BF16")) ((uint16_t *)out)[i] = (uint16_t)(bits >> 16);
        else {
            const uint32_t e = bits >> 23 & 255;
            ((uint16_t *)out)[i] =
                (uint16_t)((bits >> 16 & 0x8000) | (v[i] != 0 ? (e - 112) << 10 | (bits >> 13 & 0x3FF) : 0));
        }
    }
}

enum { L = 2, H = 2, C = 8, T = 6, V = 260 };

/* The GPT-2 tensors (name without prefix, shape as stored) in order. */
typedef struct gpt2_t {
    char name[48];
    int ndim;
    int64_t shape[4];
    bool conv1d;
} gpt2_t;
static int gpt2_tensors(gpt2_t *out)
{
    int n = 0;
    out[n++] = (gpt2_t){"wte.weight", 2, {V, C}, false};
    out[n++] = (gpt2_t){"wpe.weight", 2, {T, C}, false};
    for (int l = 0; l < L; l++) {
        static const struct {
            const char *p;
            int ndim;
            int64_t s0, s1;
            bool conv;
        } b[] = {{"ln_1.weight", 1, C, 0, false},           {"ln_1.bias", 1, C, 0, false},
                 {"attn.c_attn.weight", 2, C, 3 * C, true}, {"attn.c_attn.bias", 1, 3 * C, 0, false},
                 {"attn.c_proj.weight", 2, C, C, true},     {"attn.c_proj.bias", 1, C, 0, false},
                 {"ln_2.weight", 1, C, 0, false},           {"ln_2.bias", 1, C, 0, false},
                 {"mlp.c_fc.weight", 2, C, 4 * C, true},    {"mlp.c_fc.bias", 1, 4 * C, 0, false},
                 {"mlp.c_proj.weight", 2, 4 * C, C, true},  {"mlp.c_proj.bias", 1, C, 0, false}};
        for (size_t k = 0; k < sizeof b / sizeof *b; k++) {
            gpt2_t t = {"", b[k].ndim, {b[k].s0, b[k].s1}, b[k].conv};
            snprintf(t.name, sizeof t.name, "h.%d.%s", l, b[k].p);
            out[n++] = t;
        }
    }
    out[n++] = (gpt2_t){"ln_f.weight", 1, {C}, false};
    out[n++] = (gpt2_t){"ln_f.bias", 1, {C}, false};
    return n;
}

static const char GPT2_CONFIG[] =
    "{\"architectures\": [\"GPT2LMHeadModel\"], \"model_type\": \"gpt2\", \"n_layer\": 2, \"n_head\": 2, "
    "\"n_embd\": 8, \"n_positions\": 6, \"n_ctx\": 6, \"vocab_size\": 260, \"layer_norm_epsilon\": 1e-05, "
    "\"activation_function\": \"gelu_new\", \"resid_pdrop\": 0.1, \"embd_pdrop\": 0.1, \"attn_pdrop\": 0.1, "
    "\"n_inner\": null, \"scale_attn_weights\": true, \"torch_dtype\": \"float32\"}";

/* A GPT-2 directory: prefix "" or "transformer.", one file or two shards
 * with an index, the tokenizer as vocab.json + merges.txt or tokenizer.json. */
static void make_gpt2_dir(const char *dir, const char *prefix, bool sharded, bool tokenizer_json)
{
    mkdir(dir, 0777);
    char p[1024];
    tg_error err = {0};
    gpt2_t ts[64];
    const int n = gpt2_tensors(ts);
    static const char *const dts[3] = {"F32", "F16", "BF16"};
    tg_st_writer *w[2] = {tg_st_writer_new(), tg_st_writer_new()};
    void *bufs[64];
    char index[8192];
    size_t at = (size_t)sprintf(index, "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {");
    for (int i = 0; i < n; i++) {
        const int64_t numel = ts[i].shape[0] * (ts[i].ndim == 2 ? ts[i].shape[1] : 1);
        float *v = malloc((size_t)numel * 4);
        for (int64_t j = 0; j < numel; j++) v[j] = value_at(i, j);
        bufs[i] = malloc((size_t)numel * 4);
        to_dtype(v, numel, dts[i % 3], bufs[i]);
        free(v);
        char name[96];
        snprintf(name, sizeof name, "%s%s", prefix, ts[i].name);
        const int shard = sharded && i >= n / 2;
        ck_assert_int_eq(tg_st_writer_add(w[shard], name, dts[i % 3], ts[i].ndim, ts[i].shape, bufs[i]), 0);
        at += (size_t)sprintf(index + at, "%s\"%s\": \"model-0000%d-of-00002.safetensors\"", i ? ", " : "", name,
                              shard + 1);
    }
    /* the buffers older transformers saved: the causal mask and masked_bias */
    static uint8_t mask[T * T];
    static float masked_bias = -1e4f;
    for (int l = 0; l < L; l++) {
        char name[96];
        snprintf(name, sizeof name, "%sh.%d.attn.bias", prefix, l);
        tg_st_writer_add(w[0], name, "U8", 4, (int64_t[]){1, 1, T, T}, mask);
        at += (size_t)sprintf(index + at, ", \"%s\": \"model-00001-of-00002.safetensors\"", name);
        snprintf(name, sizeof name, "%sh.%d.attn.masked_bias", prefix, l);
        tg_st_writer_add(w[0], name, "F32", 0, NULL, &masked_bias);
        at += (size_t)sprintf(index + at, ", \"%s\": \"model-00001-of-00002.safetensors\"", name);
    }
    sprintf(index + at, "}}");
    for (int s = 0; s < (sharded ? 2 : 1); s++) {
        char name[64];
        snprintf(name, sizeof name, sharded ? "model-0000%d-of-00002.safetensors" : "model.safetensors", s + 1);
        snprintf(p, sizeof p, "%s/%s", dir, name);
        ck_assert_msg(tg_st_writer_save(w[s], p, &err) == 0, "%s", err.msg);
    }
    tg_st_writer_free(w[0]);
    tg_st_writer_free(w[1]);
    for (int i = 0; i < n; i++) free(bufs[i]);
    if (sharded) {
        snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
        write_text(p, index);
    }
    snprintf(p, sizeof p, "%s/config.json", dir);
    write_text(p, GPT2_CONFIG);
    char *vocab = vocab_json(), merges[256], *tj = malloc(80000);
    if (tokenizer_json) {
        merges_lines(merges, true);
        snprintf(tj, 80000,
                 "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 259, \"content\": \"<|endoftext|>\", "
                 "\"special\": true}], \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"ByteLevel\", "
                 "\"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": true}, \"model\": {\"type\": "
                 "\"BPE\", \"vocab\": %s, \"merges\": [%s]}}",
                 vocab, merges);
        snprintf(p, sizeof p, "%s/tokenizer.json", dir);
        write_text(p, tj);
    } else {
        snprintf(p, sizeof p, "%s/vocab.json", dir);
        write_text(p, vocab);
        merges_lines(merges, false);
        snprintf(tj, 80000, "#version: 0.2\n%s", merges);
        snprintf(p, sizeof p, "%s/merges.txt", dir);
        write_text(p, tj);
    }
    free(vocab);
    free(tj);
}

/* The imported checkpoint holds every value, Conv1D weights transposed. */
static void check_gpt2_import(const char *ck)
{
    tg_error err = {0};
    tg_st_file *f = tg_st_load(ck, &err);
    ck_assert_msg(f != NULL, "%s", err.msg);
    tg_model m;
    ck_assert_msg(tg_checkpoint_load_model(f, TG_F32, -1, &m, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(m.config.arch, "gpt");
    ck_assert(m.config.n_layer == L && m.config.n_head == H && m.config.n_embd == C && m.config.block_size == T &&
              m.config.vocab_size == V && m.config.bias && m.config.dropout == 0.1);
    ck_assert_int_eq(m.config.gelu, TG_GELU_TANH); /* "gelu_new", GPT-2's own */
    gpt2_t ts[64];
    const int n = gpt2_tensors(ts);
    for (int i = 0; i < n; i++) {
        char name[128];
        snprintf(name, sizeof name, "transformer.%.47s", ts[i].name);
        const tg_tensor *t = tg_params_get(m.params, name);
        ck_assert_msg(t != NULL, "%s", name);
        const int64_t rows = ts[i].shape[0], cols = ts[i].ndim == 2 ? ts[i].shape[1] : 1;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) {
                const float want = value_at(i, r * cols + c);
                const float got = ((float *)t->data)[ts[i].conv1d ? c * rows + r : r * cols + c];
                ck_assert_msg(got == want, "%s (%lld,%lld): %g, want %g", name, (long long)r, (long long)c, got, want);
            }
    }
    tg_vocab v;
    ck_assert_msg(tg_vocab_read(&v, f, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(v.kind, TG_VOCAB_TOKENIZER);
    ck_assert_int_eq(tg_tok_vocab_size(v.tok), V);
    ck_assert_int_eq(tg_tok_eos(v.tok), 259);
    int32_t *ids = NULL;
    const int64_t k = tg_tok_encode(v.tok, "the the", 7, &ids, &err);
    ck_assert_int_eq(k, 3); /* "t" "he" (257), " the" (258) */
    ck_assert(ids[0] == 't' && ids[1] == 257 && ids[2] == 258);
    tg_free(ids);
    tg_vocab_release(&v);
    tg_model_release(&m);
    tg_st_free(f);
}

START_TEST(gpt2_as_published_imports_exactly)
{
    tg_error err = {0};
    char notice[512];
    char dir[600], ck[600];
    snprintf(dir, sizeof dir, "%s", tt_path("gpt2"));
    snprintf(ck, sizeof ck, "%s", tt_path("gpt2.safetensors"));
    for (int k = 0; k < 2; k++) {
        make_gpt2_dir(dir, k ? "transformer." : "", k == 1, k == 1);
        ck_assert_msg(tg_hf_import(dir, ck, NULL, notice, sizeof notice, &err) == 0, "%s", err.msg);
        ck_assert_msg(!notice[0], "%s", notice);
        check_gpt2_import(ck);
        remove(ck);
        remove_dir(dir);
    }
}
END_TEST

START_TEST(what_tapegrad_cannot_run_is_refused)
{
    tg_error err = {0};
    char dir[600], ck[600], p[1024];
    snprintf(dir, sizeof dir, "%s", tt_path("bad"));
    snprintf(ck, sizeof ck, "%s", tt_path("bad.safetensors"));
    static const struct {
        const char *from, *to, *want;
    } cases[] = {
        {"\"gpt2\"", "\"mistral\"", "config.json: 'model_type' 'mistral' is not one tapegrad runs (gpt2, llama)"},
        {"\"n_layer\": 2", "\"n_layer\": 3", "the weights have no 'h.2.ln_1.weight'"},
        {"\"n_embd\": 8", "\"n_embd\": 16777216", "config.json describes a gpt tapegrad cannot build"},
        {"\"n_embd\": 8", "\"n_embd\": 4096", "'wte.weight' is (260,8), but config.json says (260,4096)"},
        {"\"n_positions\": 6", "\"n_positions\": 1e9", "'n_positions' is not an integer in [1, 16777216]"},
        {"\"n_head\": 2", "\"n_head\": \"2\"", "'n_head' is not an integer"},
        {"1e-05", "1e-06", "'layer_norm_epsilon' 1e-06 is not 1e-05"},
        {"\"gelu_new\"", "\"relu\"", "'activation_function' 'relu' is not one tapegrad's GPT computes"},
        {"\"n_inner\": null", "\"n_inner\": 16", "'n_inner' 16 is not 4 n_embd = 32"},
        {"\"n_inner\": null", "\"scale_attn_by_inverse_layer_idx\": true",
         "'scale_attn_by_inverse_layer_idx' must be false"},
        {"\"vocab_size\": 260", "\"vocab_size\": 300", "'wte.weight' is (260,8), but config.json says (300,8)"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        make_gpt2_dir(dir, "", false, false);
        char cfg[2048];
        const char *at = strstr(GPT2_CONFIG, cases[k].from);
        ck_assert_ptr_nonnull(at);
        snprintf(cfg, sizeof cfg, "%.*s%s%s", (int)(at - GPT2_CONFIG), GPT2_CONFIG, cases[k].to,
                 at + strlen(cases[k].from));
        snprintf(p, sizeof p, "%s/config.json", dir);
        write_text(p, cfg);
        const clock_t t0 = clock();
        ck_assert_int_eq(tg_hf_import(dir, ck, NULL, NULL, 0, &err), -1);
        ck_assert_msg(strstr(err.msg, cases[k].want), "case %zu: '%s' lacks '%s'", k, err.msg, cases[k].want);
        ck_assert_msg((double)(clock() - t0) / CLOCKS_PER_SEC < 0.5, "case %zu took too long", k);
        ck_assert_int_eq(access(ck, F_OK), -1); /* nothing written */
        remove_dir(dir);
    }
    /* a tensor it has no place for; a non-float tensor; no tokenizer; a shard outside the directory */
    make_gpt2_dir(dir, "transformer.", true, false);
    snprintf(p, sizeof p, "%s/vocab.json", dir);
    remove(p);
    ck_assert_int_eq(tg_hf_import(dir, ck, NULL, NULL, 0, &err), -1);
    ck_assert_msg(strstr(err.msg, "has no tokenizer tapegrad reads"), "%s", err.msg);
    tg_hf_import_options o = {.ids_only = true};
    ck_assert_msg(tg_hf_import(dir, ck, &o, NULL, 0, &err) == 0, "%s", err.msg);
    remove(ck);
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    write_text(p, "{\"weight_map\": {\"transformer.wte.weight\": \"../model-00001-of-00002.safetensors\"}}");
    ck_assert_int_eq(tg_hf_import(dir, ck, &o, NULL, 0, &err), -1);
    ck_assert_msg(strstr(err.msg, "is in '../model-00001-of-00002.safetensors', not a file name in the directory"),
                  "%s", err.msg);
    remove_dir(dir);

    mkdir(dir, 0777);
    snprintf(p, sizeof p, "%s/config.json", dir);
    write_text(p, GPT2_CONFIG);
    float x[V * C] = {0};
    tg_st_writer *w = tg_st_writer_new();
    gpt2_t ts[64];
    for (int i = 0, n = gpt2_tensors(ts); i < n; i++)
        tg_st_writer_add(w, ts[i].name, "F32", ts[i].ndim, ts[i].shape, x);
    tg_st_writer_add(w, "h.0.attn.rotary", "F32", 1, (int64_t[]){C}, x);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    ck_assert_int_eq(tg_st_writer_save(w, p, &err), 0);
    tg_st_writer_free(w);
    ck_assert_int_eq(tg_hf_import(dir, ck, &o, NULL, 0, &err), -1);
    ck_assert_msg(strstr(err.msg, "holds 'h.0.attn.rotary', which tapegrad's gpt has no place for"), "%s", err.msg);

    /* a Llama with what tapegrad's has not */
    static const char *const llama_bad[][2] = {
        {"\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}", "'rope_scaling' is set"},
        {"\"attention_bias\": true", "'attention_bias' must be false"},
        {"\"hidden_act\": \"gelu\"", "'hidden_act' is not silu"},
        {"\"head_dim\": 2", "'head_dim' 2 is not hidden_size / num_attention_heads (8 / 2)"},
    };
    for (size_t k = 0; k < sizeof llama_bad / sizeof *llama_bad; k++) {
        char cfg[1024];
        snprintf(cfg, sizeof cfg,
                 "{\"model_type\": \"llama\", \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                 "\"hidden_size\": 8, \"intermediate_size\": 12, \"max_position_embeddings\": 6, \"vocab_size\": 260, "
                 "%s}",
                 llama_bad[k][0]);
        snprintf(p, sizeof p, "%s/config.json", dir);
        write_text(p, cfg);
        ck_assert_int_eq(tg_hf_import(dir, ck, &o, NULL, 0, &err), -1);
        ck_assert_msg(strstr(err.msg, llama_bad[k][1]), "'%s' lacks '%s'", err.msg, llama_bad[k][1]);
    }
    ck_assert_int_eq(access(ck, F_OK), -1);
    remove_dir(dir);
}
END_TEST

/* ---- export, and back ------------------------------------------------------------ */

static const tg_model_config RT[4] = {
    {.arch = "gpt", .n_layer = 2, .n_head = 2, .n_embd = 8, .block_size = 8, .vocab_size = 260, .bias = true},
    {.arch = "gpt",
     .n_layer = 1,
     .n_head = 2,
     .n_embd = 8,
     .block_size = 5,
     .vocab_size = 300,
     .bias = false,
     .dropout = 0.25},
    {.arch = "llama",
     .n_layer = 2,
     .n_head = 4,
     .n_kv_head = 2,
     .n_embd = 32,
     .hidden_dim = 24,
     .block_size = 8,
     .vocab_size = 259,
     .rope_theta = 10000,
     .norm_eps = 1e-5,
     .tied = false},
    {.arch = "llama",
     .n_layer = 1,
     .n_head = 2,
     .n_kv_head = 1,
     .n_embd = 8,
     .hidden_dim = 12,
     .block_size = 8,
     .vocab_size = 259,
     .rope_theta = 500000,
     .norm_eps = 1e-6,
     .tied = true,
     .rope_halves = true},
};

/* A tiny tiktoken file: the 256 bytes and the merges of MERGED. */
static tg_tokenizer *tiny_tiktoken(void)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    FILE *f = fopen(tt_path("tiny.tiktoken"), "wb");
    for (int r = 0; r < 259; r++) {
        unsigned char piece[8];
        size_t n = 1;
        if (r < 256) piece[0] = (unsigned char)r;
        else n = (size_t)snprintf((char *)piece, sizeof piece, "%s%s", MERGED[r - 256][0], MERGED[r - 256][1]);
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
    remove(tt_path("tiny.tiktoken"));
    return t;
}

START_TEST(export_then_import_is_the_same_checkpoint)
{
    tg_error err = {0};
    char notice[512], dir[600], a[600], b[600];
    snprintf(dir, sizeof dir, "%s", tt_path("out"));
    snprintf(a, sizeof a, "%s", tt_path("a.safetensors"));
    snprintf(b, sizeof b, "%s", tt_path("b.safetensors"));
    for (int k = 0; k < 8; k++) {
        const tg_model_config *c = &RT[k % 4];
        const tg_dtype dt = k < 4 ? TG_F32 : TG_F64;
        const bool gpt = !strcmp(c->arch, "gpt");
        tg_model m;
        ck_assert_msg(tg_model_init(&m, c, dt, 11 + k, &err) == 0, "%s", err.msg);
        if (!gpt) /* norm weights other than 1, so a mix-up shows */
            for (int i = 0; i < tg_params_count(m.params); i++) {
                tg_tensor *t = tg_params_at(m.params, i);
                if (strstr(t->name, "norm"))
                    for (int64_t j = 0; j < t->numel; j++) {
                        const double x = 1 + 0.01 * (double)(j + i);
                        if (dt == TG_F32) ((float *)t->data)[j] = (float)x;
                        else ((double *)t->data)[j] = x;
                    }
            }
        tg_vocab v;
        if (gpt) ck_assert_int_eq(tg_vocab_tokenizer(&v, tiny_tiktoken(), false, c->vocab_size, &err), 0);
        else tg_vocab_llama2c(&v);
        ck_assert_int_eq(tg_checkpoint_save(a, &(tg_checkpoint){.model = &m, .vocab = &v}, &err), 0);
        tg_st_file *fa = tg_st_load(a, &err);
        ck_assert_msg(fa != NULL, "%s", err.msg);
        ck_assert_msg(tg_hf_export(fa, dir, notice, sizeof notice, &err) == 0, "%s", err.msg);
        ck_assert_msg(!notice[0], "%s", notice); /* GPT-2's ranks and llama2.c's bytes each have a tokenizer.json */

        /* transformers' names and layouts */
        char p[1024];
        snprintf(p, sizeof p, "%s/model.safetensors", dir);
        tg_st_file *hf = tg_st_load(p, &err);
        ck_assert_msg(hf != NULL, "%s", err.msg);
        ck_assert_str_eq(tg_st_meta(hf, "format"), "pt");
        const char *fdt = dt == TG_F64 ? "F64" : "F32";
        const size_t es = dt == TG_F64 ? 8 : 4;
        if (gpt) {
            const tg_st_tensor *ca = tg_st_find(hf, "transformer.h.0.attn.c_attn.weight");
            const tg_tensor *w = tg_params_get(m.params, "transformer.h.0.attn.c_attn.weight");
            ck_assert(ca && !strcmp(ca->dtype, fdt) && ca->shape[0] == c->n_embd && ca->shape[1] == 3 * c->n_embd);
            for (int64_t o = 0; o < 3 * c->n_embd; o++)
                for (int64_t i = 0; i < c->n_embd; i++)
                    ck_assert(!memcmp((const char *)ca->data + (i * 3 * c->n_embd + o) * es,
                                      (const char *)w->data + (o * c->n_embd + i) * es, es));
            ck_assert_ptr_null(tg_st_find(hf, "lm_head.weight"));
            ck_assert_ptr_nonnull(tg_st_find(hf, "transformer.h.0.ln_1.bias")); /* zeros without biases */
        } else {
            const int d = c->n_embd / c->n_head;
            const tg_st_tensor *q = tg_st_find(hf, "model.layers.0.self_attn.k_proj.weight");
            const tg_tensor *wk = tg_params_get(m.params, "layers.0.attention.wk.weight");
            ck_assert(q && q->shape[0] == c->n_kv_head * d);
            for (int h = 0; h < c->n_kv_head; h++)
                for (int r = 0; r < d; r++) { /* halves row of interleaved row r */
                    const int to = c->rope_halves ? r : (r % 2) * (d / 2) + r / 2;
                    ck_assert(!memcmp((const char *)q->data + (int64_t)(h * d + to) * c->n_embd * es,
                                      (const char *)wk->data + (int64_t)(h * d + r) * c->n_embd * es, c->n_embd * es));
                }
            ck_assert(!tg_st_find(hf, "lm_head.weight") == c->tied);
            ck_assert_ptr_nonnull(tg_st_find(hf, "model.layers.0.mlp.gate_proj.weight"));
        }
        tg_st_free(hf);

        /* and back: the same checkpoint */
        ck_assert_msg(tg_hf_import(dir, b, NULL, notice, sizeof notice, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(notice, ""); /* "gelu": nothing changes */
        tg_st_file *fb = tg_st_load(b, &err);
        ck_assert_msg(fb != NULL, "%s", err.msg);
        tg_model r;
        ck_assert_msg(tg_checkpoint_load_model(fb, dt, -1, &r, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(r.config.arch, c->arch);
        ck_assert(r.config.n_layer == c->n_layer && r.config.n_head == c->n_head && r.config.n_embd == c->n_embd &&
                  r.config.block_size == c->block_size && r.config.vocab_size == c->vocab_size &&
                  r.config.bias == c->bias && r.config.dropout == c->dropout && r.config.tied == (gpt || c->tied));
        if (!gpt)
            ck_assert(r.config.n_kv_head == c->n_kv_head && r.config.hidden_dim == c->hidden_dim &&
                      r.config.rope_theta == c->rope_theta && r.config.norm_eps == c->norm_eps &&
                      r.config.rope_halves == c->rope_halves);
        ck_assert_int_eq(tg_params_count(r.params), tg_params_count(m.params));
        for (int i = 0; i < tg_params_count(m.params); i++) {
            const tg_tensor *x = tg_params_at(m.params, i), *y = tg_params_get(r.params, x->name);
            ck_assert_msg(y && y->dtype == dt && y->numel == x->numel &&
                              !memcmp(x->data, y->data, (size_t)x->numel * es),
                          "%s differs", x->name);
        }
        tg_vocab back;
        ck_assert_int_eq(tg_vocab_read(&back, fb, &err), 0);
        if (gpt) ck_assert(back.kind == TG_VOCAB_TOKENIZER && tg_tok_same(back.tok, v.tok));
        else ck_assert(back.kind == TG_VOCAB_LLAMA2C);
        tg_vocab_release(&back);
        tg_model_release(&r);
        tg_st_free(fb);

        /* config.json says what the weights hold: an interleaved Llama's rows were permuted from that
         * pairing (the file's are in transformers' halves order), a halves Llama needs no word; the older
         * spelling "rope": "interleaved" still imports as the same checkpoint */
        snprintf(p, sizeof p, "%s/config.json", dir);
        char *cfg = read_text(p);
        ck_assert_msg(!strstr(cfg, "\"rope\":"), "%s", cfg);
        if (!gpt && !c->rope_halves) {
            ck_assert_msg(strstr(cfg, "\"tapegrad\":{\"rope_permuted_from\":\"interleaved\"}"), "%s", cfg);
            write_edited(p, cfg, "\"rope_permuted_from\"", "\"rope\"");
            ck_assert_msg(tg_hf_import(dir, b, NULL, notice, sizeof notice, &err) == 0, "%s", err.msg);
            fb = tg_st_load(b, &err);
            ck_assert_msg(fb && tg_checkpoint_load_model(fb, dt, -1, &r, &err) == 0, "%s", err.msg);
            ck_assert(!r.config.rope_halves);
            for (int i = 0; i < tg_params_count(m.params); i++) {
                const tg_tensor *x = tg_params_at(m.params, i), *y = tg_params_get(r.params, x->name);
                ck_assert_msg(!memcmp(x->data, y->data, (size_t)x->numel * es), "%s differs", x->name);
            }
            tg_model_release(&r);
            tg_st_free(fb);
            write_edited(p, cfg, "\"interleaved\"", "\"halves\"");
            ck_assert_int_eq(tg_hf_import(dir, b, NULL, NULL, 0, &err), -1);
            ck_assert_msg(strstr(err.msg, "'tapegrad.rope_permuted_from' is not \"interleaved\""), "%s", err.msg);
            write_edited(p, cfg, "{\"rope_permuted_from\"", "{\"rope\":\"halves\",\"rope_permuted_from\"");
            ck_assert_int_eq(tg_hf_import(dir, b, NULL, NULL, 0, &err), -1);
            ck_assert_msg(strstr(err.msg, "'tapegrad.rope' \"halves\" contradicts"), "%s", err.msg);
        } else if (!gpt) {
            ck_assert_msg(!strstr(cfg, "\"tapegrad\""), "%s", cfg);
        }
        free(cfg);
        tg_st_free(fa);
        tg_vocab_release(&v);
        tg_model_release(&m);
        remove(a);
        remove(b);
        remove_dir(dir);
    }
}
END_TEST

/* config.json's n_layer 65536 (a 517-byte file) against weights of two
 * layers (a GPT-2) or one (a Llama): refused naming the first tensor
 * missing, in a child whose address space may grow by 64 MB only (the
 * table of 65536 layers' names alone is 170 to 250 MB), within 0.5 s. */
START_TEST(a_huge_layer_count_is_refused_at_small_memory)
{
    tg_error err = {0};
    char notice[512], gdir[600], ldir[600], ck[600], p[1024];
    snprintf(gdir, sizeof gdir, "%s", tt_path("layers_gpt"));
    snprintf(ldir, sizeof ldir, "%s", tt_path("layers_llama"));
    snprintf(ck, sizeof ck, "%s", tt_path("layers.safetensors"));
    make_gpt2_dir(gdir, "", false, false);
    snprintf(p, sizeof p, "%s/config.json", gdir);
    write_edited(p, GPT2_CONFIG, "\"n_layer\": 2", "\"n_layer\": 65536");
    tg_model m;
    tg_vocab v;
    ck_assert_msg(tg_model_init(&m, &RT[3], TG_F32, 5, &err) == 0, "%s", err.msg);
    tg_vocab_llama2c(&v);
    ck_assert_int_eq(tg_checkpoint_save(ck, &(tg_checkpoint){.model = &m, .vocab = &v}, &err), 0);
    tg_model_release(&m);
    tg_st_file *f = tg_st_load(ck, &err);
    ck_assert_msg(f && tg_hf_export(f, ldir, notice, sizeof notice, &err) == 0, "%s", err.msg);
    tg_st_free(f);
    remove(ck);
    snprintf(p, sizeof p, "%s/config.json", ldir);
    char *cfg = read_text(p);
    write_edited(p, cfg, "\"num_hidden_layers\":1,", "\"num_hidden_layers\":65536,");
    free(cfg);
    const char *dirs[2] = {gdir, ldir};
    static const char *const want[2] = {"the weights have no 'h.2.ln_1.weight' (config.json describes 65536 layers)",
                                        "the weights have no 'model.layers.1.self_attn.q_proj.weight' (config.json "
                                        "describes 65536 layers)"};
    fflush(NULL);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* the limit must not outlive this test (the suite runs in one process) */
        long pages = 0;
        FILE *st = fopen("/proc/self/statm", "r");
        if (!st || fscanf(st, "%ld", &pages) != 1) _exit(2);
        fclose(st);
        struct rlimit lim;
        lim.rlim_cur = lim.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)64 << 20);
        if (setrlimit(RLIMIT_AS, &lim)) _exit(3);
        for (int k = 0; k < 2; k++) {
            const clock_t t0 = clock();
            const int rc = tg_hf_import(dirs[k], ck, NULL, NULL, 0, &err);
            const double dt = (double)(clock() - t0) / CLOCKS_PER_SEC;
            if (rc != -1 || !strstr(err.msg, want[k]) || dt > 0.5) {
                fprintf(stderr, "%s: rc %d in %.2f s: %s\n", dirs[k], rc, dt, rc ? err.msg : "accepted");
                _exit(4 + k);
            }
        }
        _exit(0);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %d): see stderr", status);
    ck_assert_int_eq(access(ck, F_OK), -1);
    remove_dir(gdir);
    remove_dir(ldir);
    tg_vocab_release(&v);
}
END_TEST

/* tg_hf_import(dir) in a child that an alarm ends after 10 s, so that a
 * reader blocked on a pipe fails the test instead of hanging it: it must
 * refuse with a message holding want. */
static void refused_in_child(const char *dir, const char *want)
{
    fflush(NULL);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        signal(SIGALRM, SIG_DFL); /* Check's handler would kill the whole process group */
        alarm(10);
        tg_error err = {0};
        const int rc = tg_hf_import(dir, tt_path("child.safetensors"), NULL, NULL, 0, &err);
        if (rc != -1 || !strstr(err.msg, want)) {
            fprintf(stderr, "rc %d: '%s' lacks '%s'\n", rc, rc ? err.msg : "accepted", want);
            _exit(4);
        }
        _exit(0);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(!WIFSIGNALED(status) || WTERMSIG(status) != SIGALRM, "the import of %s hung (10 s)", dir);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %d): see stderr", status);
    ck_assert_int_eq(access(tt_path("child.safetensors"), F_OK), -1);
}

/* A named pipe as config.json: open() of a pipe waits for a writer, so
 * the reader must find it is not a regular file without blocking. */
START_TEST(a_pipe_as_config_json_is_refused)
{
    char dir[600], p[1024];
    snprintf(dir, sizeof dir, "%s", tt_path("fifo"));
    make_gpt2_dir(dir, "", false, false);
    snprintf(p, sizeof p, "%s/config.json", dir);
    remove(p);
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    refused_in_child(dir, "/config.json: not a regular file");
    remove_dir(dir);
}
END_TEST

/* model.safetensors, a shard or a tokenizer file that is a directory, a
 * named pipe or a device (/dev/zero) is there but is no file to read:
 * refused as such, not taken for absent, and without waiting on a pipe. */
START_TEST(what_is_not_a_regular_file_is_refused)
{
    char dir[600], p[1024], q[1024];
    snprintf(dir, sizeof dir, "%s", tt_path("odd"));
    for (int k = 0; k < 3; k++) { /* a directory, a pipe, /dev/zero */
        /* model.safetensors; a shard the index names; tokenizer.json; vocab.json beside merges.txt */
        for (int which = 0; which < 4; which++) {
            make_gpt2_dir(dir, which == 1 ? "transformer." : "", which == 1, which == 2);
            static const char *const names[4] = {"model.safetensors", "model-00002-of-00002.safetensors",
                                                 "tokenizer.json", "vocab.json"};
            snprintf(p, sizeof p, "%s/%s", dir, names[which]);
            ck_assert_int_eq(remove(p), 0);
            if (k == 0) ck_assert_int_eq(mkdir(p, 0700), 0);
            else if (k == 1) ck_assert_int_eq(mkfifo(p, 0600), 0);
            else ck_assert_int_eq(symlink("/dev/zero", p), 0);
            snprintf(q, sizeof q, "/%s: not a regular file", names[which]);
            refused_in_child(dir, q);
            if (k == 0) rmdir(p);
            remove_dir(dir);
        }
    }
}
END_TEST

/* config.json as transformers reads it (Python's json.loads): a repeated
 * key has its last value, at every depth; a byte-order mark before the
 * object and bytes after it (but whitespace) are refused, as json.loads
 * refuses them. */
START_TEST(config_json_is_read_as_pythons_json_reads_it)
{
    tg_error err = {0};
    char dir[600], ck[600], p[1024];
    snprintf(dir, sizeof dir, "%s", tt_path("json"));
    snprintf(ck, sizeof ck, "%s", tt_path("json.safetensors"));
    make_gpt2_dir(dir, "", false, false);
    snprintf(p, sizeof p, "%s/config.json", dir);
    /* the last "n_layer" (2, the weights') and the last "bias" inside "tapegrad" ("true": the file has biases) */
    write_edited(p, GPT2_CONFIG, "{\"architectures\"",
                 "{\"n_layer\": 7, \"tapegrad\": {\"bias\": \"false\", \"bias\": \"true\"}, \"architectures\"");
    ck_assert_msg(tg_hf_import(dir, ck, NULL, NULL, 0, &err) == 0, "%s", err.msg);
    check_gpt2_import(ck);
    remove(ck);
    write_edited(p, GPT2_CONFIG, "}", "}\n \r\n\t"); /* whitespace after: taken */
    ck_assert_msg(tg_hf_import(dir, ck, NULL, NULL, 0, &err) == 0, "%s", err.msg);
    remove(ck);
    const size_t n = strlen(GPT2_CONFIG); /* its last byte is the object's '}' */
    char bad[5][2][1024];
    snprintf(bad[0][0], 1024, "\xef\xbb\xbf%s", GPT2_CONFIG);
    snprintf(bad[0][1], 1024, "/config.json: begins with a UTF-8 byte-order mark");
    snprintf(bad[1][0], 1024, "} x");
    snprintf(bad[1][1], 1024, "/config.json: 1 byte after the JSON object, from byte %zu", n + 1);
    snprintf(bad[2][0], 1024, "}{}");
    snprintf(bad[2][1], 1024, "/config.json: 2 bytes after the JSON object, from byte %zu", n);
    snprintf(bad[3][0], 1024, "}\n\f");
    snprintf(bad[3][1], 1024, "/config.json: 1 byte after the JSON object, from byte %zu", n + 1);
    snprintf(bad[4][0], 1024, "[%s]", GPT2_CONFIG);
    snprintf(bad[4][1], 1024, "/config.json: not a JSON object (byte 0 is not '{')");
    for (int k = 0; k < 5; k++) {
        if (k == 0 || k == 4) write_text(p, bad[k][0]);
        else write_edited(p, GPT2_CONFIG, "}", bad[k][0]);
        ck_assert_int_eq(tg_hf_import(dir, ck, NULL, NULL, 0, &err), -1);
        ck_assert_msg(strstr(err.msg, bad[k][1]), "case %d: '%s' lacks '%s'", k, err.msg, bad[k][1]);
        ck_assert_int_eq(access(ck, F_OK), -1);
    }
    remove_dir(dir);
}
END_TEST

/* ---- a Llama's tokenizer.json ------------------------------------------------------- */

/* A Llama tokenizer.json as transformers writes one, of <unk> <s> </s>,
 * the 256 bytes, and the pieces U+2581, a, b, U+2581a, ab, U+2581ab; edit
 * replaces the first `from` by `to` in it (from NULL: as it is). */
static void write_llama_tokenizer(const char *dir, const char *from, const char *to)
{
    char *j = malloc(65536), *out = malloc(65536), p[1024];
    size_t at = (size_t)sprintf(j,
                                "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", "
                                "\"special\": true}, {\"id\": 1, \"content\": \"<s>\", \"special\": true}, {\"id\": 2, "
                                "\"content\": \"</s>\", \"special\": true}], \"normalizer\": {\"type\": \"Sequence\", "
                                "\"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"\u2581\"}, {\"type\": "
                                "\"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\u2581\"}]}, "
                                "\"pre_tokenizer\": null, \"post_processor\": {\"type\": \"TemplateProcessing\", "
                                "\"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, {\"Sequence\": "
                                "{\"id\": \"A\", \"type_id\": 0}}], \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", "
                                "\"ids\": [1], \"tokens\": [\"<s>\"]}}}, \"model\": {\"type\": \"BPE\", \"dropout\": "
                                "null, \"unk_token\": \"<unk>\", \"byte_fallback\": true, \"fuse_unk\": true, "
                                "\"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2");
    for (int b = 0; b < 256; b++) at += (size_t)sprintf(j + at, ", \"<0x%02X>\": %d", b, 3 + b);
    sprintf(j + at,
            ", \"\u2581\": 259, \"a\": 260, \"b\": 261, \"\u2581a\": 262, \"ab\": 263, \"\u2581ab\": 264}, "
            "\"merges\": [\"\u2581 a\", \"a b\", \"\u2581a b\", \"\u2581 ab\"]}}");
    const char *at2 = from ? strstr(j, from) : NULL;
    ck_assert(!from || at2);
    if (at2) snprintf(out, 65536, "%.*s%s%s", (int)(at2 - j), j, to, at2 + strlen(from));
    else snprintf(out, 65536, "%s", j);
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    write_text(p, out);
    free(j);
    free(out);
}

START_TEST(a_llamas_tokenizer_json_imports_or_is_refused)
{
    tg_error err = {0};
    char notice[512], dir[600], a[600], b[600];
    snprintf(dir, sizeof dir, "%s", tt_path("llama"));
    snprintf(a, sizeof a, "%s", tt_path("a.safetensors"));
    snprintf(b, sizeof b, "%s", tt_path("b.safetensors"));
    tg_model m;
    const tg_model_config c = {.arch = "llama",
                               .n_layer = 1,
                               .n_head = 2,
                               .n_kv_head = 2,
                               .n_embd = 8,
                               .hidden_dim = 12,
                               .block_size = 8,
                               .vocab_size = 270,
                               .rope_theta = 10000,
                               .norm_eps = 1e-5,
                               .tied = true};
    ck_assert_msg(tg_model_init(&m, &c, TG_F32, 5, &err) == 0, "%s", err.msg);
    tg_vocab v;
    tg_vocab_llama2c(&v);
    ck_assert_int_eq(tg_checkpoint_save(a, &(tg_checkpoint){.model = &m, .vocab = &v}, &err), 0);
    tg_model_release(&m);
    tg_st_file *fa = tg_st_load(a, &err);
    ck_assert_msg(fa && tg_hf_export(fa, dir, notice, sizeof notice, &err) == 0, "%s", err.msg);
    tg_st_free(fa);

    /* as transformers writes it: pieces with scores, merged as the library merges */
    write_llama_tokenizer(dir, NULL, NULL);
    ck_assert_msg(tg_hf_import(dir, b, NULL, notice, sizeof notice, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(notice, "");
    tg_st_file *fb = tg_st_load(b, &err);
    tg_vocab back;
    ck_assert_msg(fb && tg_vocab_read(&back, fb, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(tg_tok_kind_of(back.tok), TG_TOK_SPM);
    ck_assert_int_eq(tg_tok_bos(back.tok), 1);
    ck_assert_int_eq(tg_tok_eos(back.tok), 2);
    ck_assert(tg_tok_adds_prefix(back.tok));
    int32_t *ids = NULL;
    /* U+2581 ab U+2581 a U+2581 b U+2581 U+2581 a !: "\u2581 a" is merged first, then "\u2581a b", never "a b" */
    const int64_t n = tg_tok_encode(back.tok, "ab a b  a!", 10, &ids, &err);
    const int32_t want[] = {264, 262, 259, 261, 259, 262, 3 + '!'};
    ck_assert_int_eq(n, 7);
    for (int i = 0; i < 7; i++) ck_assert_int_eq(ids[i], want[i]);
    tg_free(ids);
    tg_vocab_release(&back);
    tg_st_free(fb);
    remove(b);

    /* what it cannot represent, named */
    static const char *const bad[][3] = {
        {"\"\u2581 a\", \"a b\"", "\"a b\", \"\u2581 a\", \"x\"", "merge 2 does not join two vocabulary entries"},
        {"\"\u2581 ab\"]", "\"\u2581 ab\", \"a b\"]", "merge 4 repeats merge 1"},
        {"\"\u2581a b\", \"\u2581 ab\"", "\"\u2581a b\"", "no merge joins '\\xe2\\x96\\x81' and 'ab'"},
        {"\"a b\", \"\u2581a b\"", "\"\u2581a b\", \"a b\"", "the merges making"},
        {"\"id\": 2, \"content\": \"</s>\", \"special\": true", "\"id\": 2, \"content\": \"</s>\", \"special\": false",
         "the added token '</s>' is not special"},
        {"{\"type\": \"Prepend\", \"prepend\": \"\u2581\"}", "{\"type\": \"NFKC\"}", "the normalizer 'NFKC'"},
        {"{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\u2581\"}",
         "{\"type\": \"Lowercase\"}", "the normalizer 'Lowercase'"},
        {"\"pre_tokenizer\": null", "\"pre_tokenizer\": {\"type\": \"Whitespace\"}", "the pre-tokenizer 'Whitespace'"},
        {"\"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}}, ", "\"single\": [",
         "adds no BOS, with which tapegrad's Llama starts"},
        {"{\"id\": \"A\", \"type_id\": 0}}]",
         "{\"id\": \"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"</s>\"}}]",
         "adds tokens tapegrad does not add"},
        {"\"type\": \"BPE\"", "\"type\": \"WordPiece\"", "the model 'WordPiece' is not BPE"},
        {"\"fuse_unk\": true", "\"ignore_merges\": true", "ignore_merges is true"},
        {"\"dropout\": null", "\"dropout\": 0.1", "model.dropout is set"},
        {"\"\u2581\": 259", "\"\u2581\": 2000", "has an id that is not one of 0..264"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        write_llama_tokenizer(dir, bad[k][0], bad[k][1]);
        ck_assert_int_eq(tg_hf_import(dir, b, NULL, notice, sizeof notice, &err), -1);
        ck_assert_msg(strstr(err.msg, bad[k][2]), "case %zu: '%s' lacks '%s'", k, err.msg, bad[k][2]);
        ck_assert_int_eq(access(b, F_OK), -1);
    }
    /* the newer form: Metaspace, with a notice of what differs */
    write_llama_tokenizer(dir,
                          "\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", "
                          "\"prepend\": \"\u2581\"}, {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, "
                          "\"content\": \"\u2581\"}]}, \"pre_tokenizer\": null",
                          "\"normalizer\": null, \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": "
                          "\"\u2581\", \"prepend_scheme\": \"first\", \"split\": false}");
    ck_assert_msg(tg_hf_import(dir, b, NULL, notice, sizeof notice, &err) == 0, "%s", err.msg);
    ck_assert_msg(strstr(notice, "Metaspace pre-tokenizer puts no"), "%s", notice);
    remove(b);
    remove(a);
    remove_dir(dir);
}
END_TEST

/* Export: pieces with equal scores, or a byte piece spelled as a byte
 * above 0x7F, have no tokenizer.json the library encodes as tapegrad does:
 * the directory is written without one, and the notice says why. */
START_TEST(what_a_tokenizer_json_cannot_say_is_noticed)
{
    tg_error err = {0};
    char notice[512], dir[600], a[600];
    snprintf(dir, sizeof dir, "%s", tt_path("spm"));
    snprintf(a, sizeof a, "%s", tt_path("a.safetensors"));
    for (int k = 0; k < 2; k++) {
        /* <unk> <s> </s>, the bytes, then a b ab ba: ab and ba score the same (k 0), or byte 0xC3 spelled raw (k 1) */
        enum { N = 263 };
        unsigned char pieces[2048];
        int64_t off[N + 1];
        float scores[N] = {0};
        uint8_t types[N];
        size_t at = 0;
        static const char *const sp[3] = {"<unk>", "<s>", "</s>"};
        for (int i = 0; i < N; i++) {
            off[i] = (int64_t)at;
            if (i < 3)
                at += (size_t)sprintf((char *)pieces + at, "%s", sp[i]),
                    types[i] = i ? TG_PIECE_CONTROL : TG_PIECE_UNKNOWN;
            else if (i < 259 && k == 1 && i - 3 == 0xC3) pieces[at++] = 0xC3, types[i] = TG_PIECE_BYTE;
            else if (i < 259) at += (size_t)sprintf((char *)pieces + at, "<0x%02X>", i - 3), types[i] = TG_PIECE_BYTE;
            else {
                static const char *const t[4] = {"a", "b", "ab", "ba"};
                at += (size_t)sprintf((char *)pieces + at, "%s", t[i - 259]);
                types[i] = TG_PIECE_NORMAL;
                scores[i] = i >= 261 ? -1.0f : -2.0f;
            }
        }
        off[N] = (int64_t)at;
        const tg_spm_options o = {0, 1, -INFINITY};
        tg_tokenizer *t = tg_tok_new_spm(&(tg_spm_pieces){N, pieces, off, scores, types, 1, 2}, &o, &err);
        ck_assert_msg(t != NULL, "%s", err.msg);
        const tg_model_config c = {.arch = "llama",
                                   .n_layer = 1,
                                   .n_head = 2,
                                   .n_kv_head = 2,
                                   .n_embd = 8,
                                   .hidden_dim = 12,
                                   .block_size = 8,
                                   .vocab_size = N,
                                   .rope_theta = 10000,
                                   .norm_eps = 1e-5,
                                   .tied = true};
        tg_model m;
        tg_vocab v;
        ck_assert_msg(tg_model_init(&m, &c, TG_F32, 5, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(tg_vocab_tokenizer(&v, t, true, N, &err), 0);
        ck_assert_int_eq(tg_checkpoint_save(a, &(tg_checkpoint){.model = &m, .vocab = &v}, &err), 0);
        tg_st_file *fa = tg_st_load(a, &err);
        ck_assert_msg(fa && tg_hf_export(fa, dir, notice, sizeof notice, &err) == 0, "%s", err.msg);
        ck_assert_msg(strstr(notice, k ? "id 198 is not UTF-8 text" : "ids 261 and 262 score the same"), "%s", notice);
        char p[1024];
        snprintf(p, sizeof p, "%s/tokenizer.json", dir);
        ck_assert_int_eq(access(p, F_OK), -1);
        tg_st_free(fa);
        tg_vocab_release(&v);
        tg_model_release(&m);
        remove(a);
        remove_dir(dir);
    }
}
END_TEST

/* tapegrad's BPE, a GPT's and a Llama's: export then import is the same
 * tokenizer, its learned merges too (parity_hf_tokenizer checks the ids
 * against the tokenizers library). */
START_TEST(a_bpe_tokenizer_comes_back_the_same)
{
    tg_error err = {0};
    char notice[512], dir[600], a[600], b[600];
    snprintf(dir, sizeof dir, "%s", tt_path("bpe"));
    snprintf(a, sizeof a, "%s", tt_path("a.safetensors"));
    snprintf(b, sizeof b, "%s", tt_path("b.safetensors"));
    static const char text[] =
        "the cat sat on the mat, the cat ate the hat.\n\nthe end \xc3\xa9t\xc3\xa9 \xe6\x9d\xb1\n";
    for (int k = 0; k < 2; k++) {
        const tg_bpe_options bo = {.vocab_size = 300, .min_count = 2};
        tg_tokenizer *t = tg_bpe_train(text, sizeof text - 1, &bo, &err);
        ck_assert_msg(t != NULL, "%s", err.msg);
        ck_assert_int_gt(tg_tok_n_merges(t), 5);
        const tg_model_config c = k ? (tg_model_config){.arch = "llama",
                                                        .n_layer = 1,
                                                        .n_head = 2,
                                                        .n_kv_head = 2,
                                                        .n_embd = 8,
                                                        .hidden_dim = 12,
                                                        .block_size = 8,
                                                        .vocab_size = 320,
                                                        .rope_theta = 10000,
                                                        .norm_eps = 1e-5,
                                                        .tied = true}
                                    : (tg_model_config){.arch = "gpt",
                                                        .n_layer = 1,
                                                        .n_head = 2,
                                                        .n_embd = 8,
                                                        .block_size = 8,
                                                        .vocab_size = 320,
                                                        .bias = true};
        tg_model m;
        tg_vocab v;
        ck_assert_msg(tg_model_init(&m, &c, TG_F32, 3, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(tg_vocab_tokenizer(&v, t, k == 1, c.vocab_size, &err), 0);
        ck_assert_int_eq(tg_checkpoint_save(a, &(tg_checkpoint){.model = &m, .vocab = &v}, &err), 0);
        tg_st_file *fa = tg_st_load(a, &err);
        ck_assert_msg(fa && tg_hf_export(fa, dir, notice, sizeof notice, &err) == 0, "%s", err.msg);
        ck_assert_str_eq(notice, "");
        /* a Llama's text is ' ' + text: its decoder drops that space, as transformers' Llama decoders do */
        char p[1024];
        snprintf(p, sizeof p, "%s/tokenizer.json", dir);
        char *tj = read_text(p);
        const char *dec = strstr(tj, "\"decoder\":");
        ck_assert_ptr_nonnull(dec);
        static const char seq[] = "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"ByteLevel\"";
        const bool strips = !strncmp(dec, seq, sizeof seq - 1) &&
            strstr(dec, "{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":0}]}") != NULL;
        ck_assert_msg(strips == (k == 1), "%.200s", dec);
        free(tj);
        ck_assert_msg(tg_hf_import(dir, b, NULL, notice, sizeof notice, &err) == 0, "%s", err.msg);
        tg_st_file *fb = tg_st_load(b, &err);
        tg_vocab back;
        ck_assert_msg(fb && tg_vocab_read(&back, fb, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(tg_tok_kind_of(back.tok), TG_TOK_BPE);
        ck_assert(tg_tok_same(back.tok, v.tok));
        ck_assert_int_eq(tg_tok_n_merges(back.tok), tg_tok_n_merges(v.tok));
        for (int32_t i = 0; i < tg_tok_n_merges(v.tok); i++) {
            int32_t l1, r1, l2, r2;
            ck_assert_int_eq(tg_tok_merge(v.tok, i, &l1, &r1), tg_tok_merge(back.tok, i, &l2, &r2));
            ck_assert(l1 == l2 && r1 == r2);
        }
        ck_assert_int_eq(back.docs, k == 1);
        tg_vocab_release(&back);
        tg_st_free(fb);
        tg_st_free(fa);
        tg_vocab_release(&v);
        tg_model_release(&m);
        remove(a);
        remove(b);
        remove_dir(dir);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("formats_hf");
    tt_tcase(s, "hf", 60,
             TT_TESTS(gpt2_as_published_imports_exactly, what_tapegrad_cannot_run_is_refused,
                      a_huge_layer_count_is_refused_at_small_memory, a_pipe_as_config_json_is_refused,
                      what_is_not_a_regular_file_is_refused, config_json_is_read_as_pythons_json_reads_it,
                      export_then_import_is_the_same_checkpoint, a_llamas_tokenizer_json_imports_or_is_refused,
                      what_a_tokenizer_json_cannot_say_is_noticed, a_bpe_tokenizer_comes_back_the_same));
    return tt_run_in_tmpdir(s, "tg_hf_test", true);
}
