/* Language models behind one interface (nn.h, "Language models behind
 * one interface"): the table of families, the calls that dispatch to
 * them, and the two built-in families' rows (the GPT of gpt.c, the Llama
 * of llama.c) with their checkpoint keys. */
#include "nn.h"

#include <stdio.h>
#include <string.h>

#include "../core/err_internal.h"
#include "nn_internal.h"

/* ---- the speedrun options both families share (docs/speedrun.md), each key
 * written only when the option is on, so a file without it is today's
 * model: mlp ("gelu", "relu2" or "swiglu", when not the family's own),
 * qk_norm, zero_init_proj ("true"), logit_softcap (a number > 0) ---------- */

static int write_options(const tg_model_config *c, tg_ffn_kind family_mlp, tg_st_writer *w)
{
    if (c->mlp != TG_FFN_DEFAULT && c->mlp != family_mlp && tg_st_writer_add_meta(w, "mlp", tg_ffn_kind_name(c->mlp)))
        return -1;
    if (c->qk_norm && tg_st_writer_add_meta(w, "qk_norm", "true")) return -1;
    if (c->zero_init_proj && tg_st_writer_add_meta(w, "zero_init_proj", "true")) return -1;
    char v[40];
    snprintf(v, sizeof v, "%.17g", c->logit_softcap);
    return c->logit_softcap > 0 && tg_st_writer_add_meta(w, "logit_softcap", v) ? -1 : 0;
}
static int read_options(const tg_st_file *f, tg_model_config *c, tg_error *err)
{
    const char *mlp = tg_st_meta(f, "mlp");
    c->mlp = TG_FFN_DEFAULT;
    if (mlp) {
        for (int k = TG_FFN_GELU; k <= TG_FFN_SWIGLU; k++)
            if (!strcmp(mlp, tg_ffn_kind_name((tg_ffn_kind)k))) c->mlp = (tg_ffn_kind)k;
        if (c->mlp == TG_FFN_DEFAULT)
            return tg_error_set(err, "checkpoint metadata 'mlp' = '%.40s' is not gelu, relu2 or swiglu", mlp);
    }
    c->qk_norm = c->zero_init_proj = false;
    c->logit_softcap = 0;
    if ((tg_st_meta(f, "qk_norm") && tg_st_meta_bool(f, "qk_norm", &c->qk_norm, err)) ||
        (tg_st_meta(f, "zero_init_proj") && tg_st_meta_bool(f, "zero_init_proj", &c->zero_init_proj, err)) ||
        (tg_st_meta(f, "logit_softcap") && tg_st_meta_double(f, "logit_softcap", 1e-30, 1e30, &c->logit_softcap, err)))
        return -1;
    return 0;
}

/* ---- the GPT: n_layer, n_head, n_embd, block_size, vocab_size, bias,
 * dropout (a file may lack dropout: 0), gelu ("erf" or "tanh"; a file
 * may lack it: erf), tied ("false" for an untied lm_head; absent: tied),
 * and the options above ------------------------------------------------------ */

static tg_gpt_config gpt_config(const tg_model_config *c)
{
    return (tg_gpt_config){.n_layer = c->n_layer,
                           .n_head = c->n_head,
                           .n_embd = c->n_embd,
                           .block_size = c->block_size,
                           .vocab_size = c->vocab_size,
                           .bias = c->bias,
                           .dropout = c->dropout,
                           .gelu = c->gelu,
                           .mlp = c->mlp,
                           .qk_norm = c->qk_norm,
                           .zero_init_proj = c->zero_init_proj,
                           .untie_head = c->untie_head,
                           .logit_softcap = c->logit_softcap};
}
static void *gpt_create(const tg_model_config *c, tg_dtype dt, uint64_t seed, tg_error *err)
{
    const tg_gpt_config g = gpt_config(c);
    return tg_gpt_new(&g, dt, seed, err);
}
static void gpt_destroy(void *m) { tg_gpt_free(m); }
static tg_params *gpt_params(void *m) { return ((tg_gpt *)m)->params; }
static int64_t gpt_num_params(const tg_model_config *c)
{
    const tg_gpt_config g = gpt_config(c);
    return tg_gpt_num_params(&g);
}
static tg_tensor *gpt_forward(tg_graph *g, void *m, tg_tensor *idx, tg_tensor **w)
{
    return tg_gpt_forward_ex(g, m, idx, w);
}
static tg_tensor *gpt_loss(tg_graph *g, void *m, tg_tensor *idx, tg_tensor *t) { return tg_gpt_loss(g, m, idx, t); }
static void gpt_set_composed(void *m, bool c) { tg_gpt_set_attn_composed(m, c); }
static int gpt_cache_enable(void *m, int b, tg_error *err) { return tg_gpt_cache_enable(m, b, err); }
static void gpt_cache_clear(void *m) { tg_gpt_cache_clear(m); }
static int gpt_cache_len(const void *m) { return ((const tg_gpt *)m)->cache ? ((const tg_gpt *)m)->cache[0].len : 0; }

/* Integer keys, then the number formatted exactly (%.17g). */
static int write_ints(tg_st_writer *w, int n, const char *const *keys, const int *vals)
{
    char v[16];
    for (int i = 0; i < n; i++) {
        snprintf(v, sizeof v, "%d", vals[i]);
        if (tg_st_writer_add_meta(w, keys[i], v)) return -1;
    }
    return 0;
}
static int write_double(tg_st_writer *w, const char *key, double x)
{
    char v[40];
    snprintf(v, sizeof v, "%.17g", x);
    return tg_st_writer_add_meta(w, key, v);
}
static int read_ints(const tg_st_file *f, int n, const char *const *keys, int *const *vals, tg_error *err)
{
    for (int i = 0; i < n; i++) {
        int64_t v;
        if (tg_st_meta_int(f, keys[i], 1, 1 << 24, &v, err)) return -1;
        *vals[i] = (int)v;
    }
    return 0;
}
static int read_dropout(const tg_st_file *f, tg_model_config *c, tg_error *err)
{
    c->dropout = 0;
    return tg_st_meta(f, "dropout") ? tg_st_meta_double(f, "dropout", 0, 0.999, &c->dropout, err) : 0;
}

static const char *const GPT_KEYS[] = {"n_layer", "n_head", "n_embd", "block_size", "vocab_size"};

static int gpt_write(const tg_model_config *c, tg_st_writer *w)
{
    const int v[5] = {c->n_layer, c->n_head, c->n_embd, c->block_size, c->vocab_size};
    return write_ints(w, 5, GPT_KEYS, v) || tg_st_writer_add_meta(w, "bias", c->bias ? "true" : "false") ||
        write_double(w, "dropout", c->dropout) ||
        tg_st_writer_add_meta(w, "gelu", c->gelu == TG_GELU_TANH ? "tanh" : "erf") ||
        (c->untie_head && tg_st_writer_add_meta(w, "tied", "false")) || write_options(c, TG_FFN_GELU, w);
}
static int gpt_read(const tg_st_file *f, tg_model_config *c, tg_error *err)
{
    int *const v[5] = {&c->n_layer, &c->n_head, &c->n_embd, &c->block_size, &c->vocab_size};
    if (read_ints(f, 5, GPT_KEYS, v, err) || tg_st_meta_bool(f, "bias", &c->bias, err) || read_options(f, c, err))
        return -1;
    c->tied = true;
    if (tg_st_meta(f, "tied") && tg_st_meta_bool(f, "tied", &c->tied, err)) return -1;
    c->untie_head = !c->tied;
    const char *gelu = tg_st_meta(f, "gelu");
    if (gelu && strcmp(gelu, "erf") && strcmp(gelu, "tanh"))
        return tg_error_set(err, "metadata 'gelu' is '%.40s': not erf or tanh", gelu);
    c->gelu = gelu && !strcmp(gelu, "tanh") ? TG_GELU_TANH : TG_GELU_ERF;
    return read_dropout(f, c, err);
}

static const tg_model_family FAMILY_GPT = {"gpt",
                                           "transformer.wte.weight",
                                           "transformer.wpe.weight",
                                           "lm_head.weight",
                                           gpt_create,
                                           gpt_destroy,
                                           gpt_params,
                                           gpt_num_params,
                                           gpt_forward,
                                           gpt_loss,
                                           gpt_set_composed,
                                           gpt_cache_enable,
                                           gpt_cache_clear,
                                           gpt_cache_len,
                                           gpt_write,
                                           gpt_read,
                                           NULL};

/* ---- the Llama: n_layer, n_head, n_kv_head, n_embd, hidden_dim,
 * block_size, vocab_size, rope_theta, norm_eps, tied, rope ("interleaved",
 * Meta's and llama2.c's pairing, or "halves", Hugging Face's), dropout ---- */

static tg_llama_config llama_config(const tg_model_config *c)
{
    return (tg_llama_config){.n_layer = c->n_layer,
                             .n_head = c->n_head,
                             .n_kv_head = c->n_kv_head,
                             .n_embd = c->n_embd,
                             .hidden_dim = c->hidden_dim,
                             .block_size = c->block_size,
                             .vocab_size = c->vocab_size,
                             .rope_theta = c->rope_theta,
                             .rope_flags = c->rope_halves ? TG_ROPE_HALVES : TG_ROPE_INTERLEAVED,
                             .norm_eps = c->norm_eps,
                             .tied = c->tied && !c->untie_head,
                             .dropout = c->dropout,
                             .mlp = c->mlp,
                             .gelu = c->gelu,
                             .qk_norm = c->qk_norm,
                             .zero_init_proj = c->zero_init_proj,
                             .logit_softcap = c->logit_softcap};
}
static void *llama_create(const tg_model_config *c, tg_dtype dt, uint64_t seed, tg_error *err)
{
    if (c->bias) {
        tg_error_set(err, "llama: the Llama has no biases (give --bias false)");
        return NULL;
    }
    if (c->gelu != TG_GELU_ERF && c->mlp != TG_FFN_GELU) {
        tg_error_set(err, "llama: this Llama's MLP is %s (no GELU to choose; mlp gelu has one)",
                     c->mlp == TG_FFN_RELU2 ? "ReLU squared" : "SwiGLU");
        return NULL;
    }
    const tg_llama_config l = llama_config(c);
    return tg_llama_new(&l, dt, seed, err);
}
static void llama_destroy(void *m) { tg_llama_free(m); }
static tg_params *llama_params(void *m) { return ((tg_llama *)m)->params; }
static int64_t llama_num_params(const tg_model_config *c)
{
    const tg_llama_config l = llama_config(c);
    return c->bias ? -1 : tg_llama_num_params(&l);
}
static tg_tensor *llama_forward(tg_graph *g, void *m, tg_tensor *idx, tg_tensor **w)
{
    return tg_llama_forward_ex(g, m, idx, w);
}
static tg_tensor *llama_loss(tg_graph *g, void *m, tg_tensor *idx, tg_tensor *t) { return tg_llama_loss(g, m, idx, t); }
static void llama_set_composed(void *m, bool c) { tg_llama_set_attn_composed(m, c); }
static int llama_cache_enable(void *m, int b, tg_error *err) { return tg_llama_cache_enable(m, b, err); }
static void llama_cache_clear(void *m) { tg_llama_cache_clear(m); }
static int llama_cache_len(const void *m)
{
    return ((const tg_llama *)m)->cache ? ((const tg_llama *)m)->cache[0].len : 0;
}
/* Every layer's cache with its own RoPE; the layers hold the same
 * positions, so the first one's checks stand for all (none is left
 * half shifted). */
static int llama_cache_shift(void *impl, int n_keep, int n_discard, tg_error *err)
{
    tg_llama *m = impl;
    if (!m->cache) return tg_error_set(err, "model_cache_shift: the KV caches are not enabled");
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const tg_mha_mod *a = &m->layers[l].attention;
        if (tg_kv_cache_shift(&m->cache[l], n_keep, n_discard, a->rope_theta, a->rope_flags, err)) return -1;
    }
    return 0;
}

static const char *const LLAMA_KEYS[] = {"n_layer",    "n_head",     "n_kv_head", "n_embd",
                                         "hidden_dim", "block_size", "vocab_size"};

static int llama_write(const tg_model_config *c, tg_st_writer *w)
{
    const int v[7] = {c->n_layer, c->n_head, c->n_kv_head, c->n_embd, c->hidden_dim, c->block_size, c->vocab_size};
    return write_ints(w, 7, LLAMA_KEYS, v) || write_double(w, "rope_theta", c->rope_theta) ||
        write_double(w, "norm_eps", c->norm_eps) || tg_st_writer_add_meta(w, "tied", c->tied ? "true" : "false") ||
        tg_st_writer_add_meta(w, "rope", c->rope_halves ? "halves" : "interleaved") ||
        tg_st_writer_add_meta(w, "bias", "false") || write_double(w, "dropout", c->dropout) ||
        (c->mlp == TG_FFN_GELU && tg_st_writer_add_meta(w, "gelu", c->gelu == TG_GELU_TANH ? "tanh" : "erf")) ||
        write_options(c, TG_FFN_SWIGLU, w);
}
static int llama_read(const tg_st_file *f, tg_model_config *c, tg_error *err)
{
    int *const v[7] = {&c->n_layer,    &c->n_head,     &c->n_kv_head, &c->n_embd,
                       &c->hidden_dim, &c->block_size, &c->vocab_size};
    if (read_ints(f, 7, LLAMA_KEYS, v, err) ||
        tg_st_meta_double(f, "rope_theta", 1.0000001, 1e12, &c->rope_theta, err) ||
        tg_st_meta_double(f, "norm_eps", 1e-30, 1, &c->norm_eps, err) || tg_st_meta_bool(f, "tied", &c->tied, err))
        return -1;
    const char *rope = tg_st_meta(f, "rope");
    if (rope && strcmp(rope, "interleaved") && strcmp(rope, "halves"))
        return tg_error_set(err, "checkpoint metadata 'rope' = '%.40s' is not interleaved or halves", rope);
    c->rope_halves = rope && !strcmp(rope, "halves");
    c->bias = false;
    if (read_options(f, c, err)) return -1;
    const char *gelu = tg_st_meta(f, "gelu"); /* the GELU MLP's form */
    if (gelu && (c->mlp != TG_FFN_GELU || (strcmp(gelu, "erf") && strcmp(gelu, "tanh"))))
        return tg_error_set(err, "checkpoint metadata 'gelu' = '%.40s' is not erf or tanh of an mlp gelu", gelu);
    c->gelu = gelu && !strcmp(gelu, "tanh") ? TG_GELU_TANH : TG_GELU_ERF;
    return read_dropout(f, c, err);
}

static const tg_model_family FAMILY_LLAMA = {
    "llama",           "tok_embeddings.weight", NULL,          "output.weight", llama_create,       llama_destroy,
    llama_params,      llama_num_params,        llama_forward, llama_loss,      llama_set_composed, llama_cache_enable,
    llama_cache_clear, llama_cache_len,         llama_write,   llama_read,      llama_cache_shift};

/* ---- the table ------------------------------------------------------------- */

static const tg_model_family *families[TG_MODEL_MAX_FAMILIES] = {&FAMILY_GPT, &FAMILY_LLAMA};
static int n_families = 2;
static char family_names[TG_MODEL_MAX_FAMILIES * 34] = "gpt, llama";

int tg_model_register(const tg_model_family *f, tg_error *err)
{
    if (!f) return tg_error_set(err, "model_register: the family is NULL");
    size_t len = f->arch ? strlen(f->arch) : 0;
    bool name_ok = len >= 1 && len <= 31;
    for (size_t i = 0; name_ok && i < len; i++) {
        const char c = f->arch[i];
        name_ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    }
    if (!name_ok) return tg_error_set(err, "model_register: a family's name is 1-31 bytes of [a-z0-9_]");
    if (!f->embedding || !f->create || !f->destroy || !f->params || !f->num_params || !f->forward || !f->loss ||
        !f->config_write != !f->config_read)
        return tg_error_set(err,
                            "model_register: family '%s' lacks its embedding's name, a required "
                            "function (create, destroy, params, num_params, forward, loss), or one of config_write "
                            "and config_read (give both or neither)",
                            f->arch);
    if (tg_model_family_find(f->arch))
        return tg_error_set(err, "model_register: there is a family '%s' already", f->arch);
    if (n_families == TG_MODEL_MAX_FAMILIES)
        return tg_error_set(err, "model_register: the table holds %d families", TG_MODEL_MAX_FAMILIES);
    families[n_families++] = f;
    snprintf(family_names + strlen(family_names), sizeof family_names - strlen(family_names), ", %s", f->arch);
    return 0;
}

const tg_model_family *tg_model_family_find(const char *arch)
{
    for (int i = 0; arch && i < n_families; i++)
        if (!strcmp(families[i]->arch, arch)) return families[i];
    return NULL;
}

const char *tg_model_family_names(void) { return family_names; }

/* ---- models ---------------------------------------------------------------- */

int tg_model_init(tg_model *m, const tg_model_config *c, tg_dtype dt, uint64_t seed, tg_error *err)
{
    if (!m || !c) return tg_error_set(err, "model_init: %s is NULL", m ? "the config" : "the model");
    memset(m, 0, sizeof *m);
    const tg_model_family *f = tg_model_family_find(c->arch);
    if (!f)
        return tg_error_set(err, "unknown model architecture '%.40s' (known: %s)", c->arch ? c->arch : "",
                            family_names);
    if (!(m->impl = f->create(c, dt, seed, err))) return -1;
    m->family = f;
    m->config = *c;
    m->config.arch = f->arch; /* a string that lives, whatever c pointed at */
    if (m->config.untie_head) m->config.tied = false; /* one answer to "is the head tied" */
    m->params = f->params(m->impl);
    return 0;
}

void tg_model_release(tg_model *m)
{
    if (!m) return;
    if (m->family) m->family->destroy(m->impl);
    memset(m, 0, sizeof *m);
}

int64_t tg_model_num_params(const tg_model_config *c)
{
    const tg_model_family *f = c ? tg_model_family_find(c->arch) : NULL;
    return f ? f->num_params(c) : -1;
}

tg_tensor *tg_model_forward(tg_graph *g, tg_model *m, tg_tensor *idx, tg_tensor **attn_weights)
{
    return m && m->family ? m->family->forward(g, m->impl, idx, attn_weights) : NULL;
}

tg_tensor *tg_model_loss(tg_graph *g, tg_model *m, tg_tensor *idx, tg_tensor *targets)
{
    return m && m->family ? m->family->loss(g, m->impl, idx, targets) : NULL;
}

int tg_model_set_composed(tg_model *m, bool composed)
{
    if (!m || !m->family || !m->family->set_composed) return -1;
    m->family->set_composed(m->impl, composed);
    return 0;
}

int tg_model_cache_enable(tg_model *m, int batch, tg_error *err)
{
    if (!m || !m->family) return tg_error_set(err, "model_cache_enable: the model is NULL or empty");
    if (!m->family->cache_enable)
        return tg_error_set(err, "model_cache_enable: family '%s' has no KV cache", m->family->arch);
    return m->family->cache_enable(m->impl, batch, err);
}

void tg_model_cache_clear(tg_model *m)
{
    if (m && m->family && m->family->cache_clear) m->family->cache_clear(m->impl);
}

int tg_model_cache_len(const tg_model *m)
{
    return m && m->family && m->family->cache_len ? m->family->cache_len(m->impl) : 0;
}

int tg_model_cache_shift(tg_model *m, int n_keep, int n_discard, tg_error *err)
{
    if (!m || !m->family) return tg_error_set(err, "model_cache_shift: the model is NULL or empty");
    if (!m->family->cache_shift)
        return tg_error_set(err,
                            "model_cache_shift: family '%s' cannot shift its KV cache (its positions are not "
                            "RoPE's)",
                            m->family->arch);
    return m->family->cache_shift(m->impl, n_keep, n_discard, err);
}

/* ---- the config in a file's metadata ------------------------------------- */

/* a family without config functions: these four */
static const char *const PLAIN_KEYS[] = {"n_layer", "n_embd", "block_size", "vocab_size"};

int tg_model_config_write(const tg_model_config *c, tg_st_writer *w)
{
    const tg_model_family *f = c ? tg_model_family_find(c->arch) : NULL;
    if (!f || !w || tg_st_writer_add_meta(w, "arch", f->arch)) return -1;
    if (f->config_write) return f->config_write(c, w) ? -1 : 0;
    return write_ints(w, 4, PLAIN_KEYS, (const int[]){c->n_layer, c->n_embd, c->block_size, c->vocab_size});
}

int tg_model_config_read(const tg_st_file *f, tg_model_config *c, tg_error *err)
{
    if (!f || !c) return tg_error_set(err, "model_config_read: %s is NULL", c ? "the file" : "the config");
    memset(c, 0, sizeof *c);
    const char *arch = tg_st_meta(f, "arch");
    const tg_model_family *fam = tg_model_family_find(arch ? arch : "gpt");
    if (!fam)
        return tg_error_set(err,
                            "checkpoint metadata 'arch' = '%.40s' is not a model family this program "
                            "knows (%s)",
                            arch, family_names);
    c->arch = fam->arch;
    if (fam->config_read) return fam->config_read(f, c, err);
    return read_ints(f, 4, PLAIN_KEYS, (int *const[]){&c->n_layer, &c->n_embd, &c->block_size, &c->vocab_size}, err);
}
