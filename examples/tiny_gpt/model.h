/* tiny_gpt's models: one small interface over the model families of nn/
 * (the GPT of nn/gpt.c, the Llama of nn/llama.c), so that train, sample,
 * eval, step, attn and export drive any of them.
 *
 * A family is one row of FAMILIES (model.c) pointing at its adapter
 * (model_gpt.c, model_llama.c): how to build it from a config, its
 * forward and loss, its KV cache, and how its config is written to and
 * read from a checkpoint's __metadata__ ("arch" names the family; a file
 * without "arch" is a GPT). A new family needs its nn/ file, its adapter
 * and its row (docs/adding-a-model.md). */
#ifndef TINY_GPT_MODEL_H
#define TINY_GPT_MODEL_H

#include "../../tapegrad.h"
#include "run.h"

/* Every family's settings in one struct; a family reads the fields it has. */
typedef struct model_config {
    const char *arch;               /* "gpt" or "llama" */
    int n_layer, n_head, n_embd, block_size, vocab_size;
    bool bias;                      /* gpt */
    int n_kv_head, hidden_dim;      /* llama (hidden_dim: the SwiGLU width) */
    double rope_theta, norm_eps;    /* llama */
    bool rope_halves;               /* llama: Hugging Face's pairing instead of Meta's / llama2.c's */
    bool tied;                      /* llama: output head = token embedding (a GPT's always is) */
    double dropout;
} model_config;

typedef struct family family;

typedef struct model {
    const family *fam;
    model_config cfg;
    void *impl;          /* tg_gpt *, tg_llama * */
    tg_params *params;   /* the family model's store */
} model;

/* The family called arch, or NULL. */
const family *model_family(const char *arch);
/* "gpt, llama": the families' names, for messages. */
const char *model_families(void);

/* Builds a new model of c's family in dtype dt, initialised from seed.
 * 0, or -1 with a message. */
int model_new(model *m, const model_config *c, tg_dtype dt, uint64_t seed, char *err, size_t errlen);
void model_free(model *m);   /* accepts a zeroed m */

/* The parameter count c implies (without allocating), or -1. */
int64_t model_num_params(const model_config *c);
/* Heads of the attention weights forward_ex hands back (the query heads). */
static inline int model_n_head(const model *m) { return m->cfg.n_head; }

/* idx (B,T) i32 -> logits (B,T,V); attn_weights NULL or n_layer slots. */
tg_tensor *model_forward(tg_graph *g, model *m, tg_tensor *idx, tg_tensor **attn_weights);
/* Mean cross-entropy against targets (B,T) i32: a scalar. */
tg_tensor *model_loss(tg_graph *g, model *m, tg_tensor *idx, tg_tensor *targets);
void model_set_composed(model *m, bool composed);
int model_cache_enable(model *m, int batch, char *err, size_t errlen);
void model_cache_clear(model *m);
int model_cache_len(const model *m);   /* positions in the caches (0 when disabled) */

/* The config's metadata pairs (arch and the family's keys), for a checkpoint. */
int model_config_record(const model_config *c, kv_list *l);
/* Reads a checkpoint's config: "arch" (absent: gpt) picks the family,
 * which reads its keys, every number whole and in range. 0, or -1 with a
 * message naming the key. */
int model_config_read(const tg_st_file *f, model_config *c, char *err, size_t errlen);

/* One family (a row of FAMILIES in model.c). */
struct family {
    const char *arch;
    const char *embedding;   /* the token embedding's name, (V, C) in the file */
    const char *position;    /* the position embedding's, (block_size, C), or NULL */
    const char *head;        /* the output head's name in files that carry a tied head anyway */
    void *(*create)(const model_config *c, tg_dtype dt, uint64_t seed, char *err, size_t errlen);
    void (*destroy)(void *impl);
    tg_params *(*params)(void *impl);
    int64_t (*num_params)(const model_config *c);
    tg_tensor *(*forward)(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor **attn_weights);
    tg_tensor *(*loss)(tg_graph *g, void *impl, tg_tensor *idx, tg_tensor *targets);
    void (*set_composed)(void *impl, bool composed);
    int (*cache_enable)(void *impl, int batch, char *err, size_t errlen);
    void (*cache_clear)(void *impl);
    int (*cache_len)(const void *impl);
    int (*record)(const model_config *c, kv_list *l);   /* the family's keys */
    int (*read)(const tg_st_file *f, model_config *c, char *err, size_t errlen);
};

extern const family FAMILY_GPT, FAMILY_LLAMA;

/* Shared by the adapters: a metadata integer / number / bool, whole and
 * in range ("checkpoint metadata 'key' = ..." on failure). */
int meta_int_in(const tg_st_file *f, const char *key, int lo, int hi, int *out, char *err, size_t errlen);
int meta_double_in(const tg_st_file *f, const char *key, double lo, double hi, double *out, char *err, size_t errlen);
int meta_bool(const tg_st_file *f, const char *key, bool *out, char *err, size_t errlen);

#endif
