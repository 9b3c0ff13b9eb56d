/* What the GGUF reader's files share (not public): a file in memory cut
 * into its parts (formats/gguf_parse.c), read into a checkpoint by
 * formats/gguf_read.c, its tokenizer by formats/gguf_read_vocab.c. */
#ifndef TG_GGUF_INTERNAL_H
#define TG_GGUF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/err_internal.h"
#include "formats.h"

enum { T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STRING, T_ARRAY, T_U64, T_I64, T_F64 };
enum { G_F32 = 0, G_F16 = 1, G_Q8_0 = 8, G_BF16 = 30 }; /* ggml's type numbers */

/* bytes of the file (not NUL-terminated) */
typedef struct str {
    const char *p;
    uint64_t n;
} str;

typedef struct kv {
    str key;
    uint32_t type;
    const unsigned char *val; /* the value's bytes (an array: after its type and count) */
    uint32_t elem; /* an array's element type */
    uint64_t count; /* an array's length */
} kv;

typedef struct tinfo {
    str name;
    uint32_t ndim, type;
    uint64_t dims[4], offset, numel, nbytes;
} tinfo;

typedef struct gguf {
    const unsigned char *buf;
    size_t len, at;
    kv *kvs;
    tinfo *ts;
    uint64_t n_kv, n_t;
    const str **kv_names, **t_names; /* the keys' and the tensors' names, sorted */
    const unsigned char *data; /* the data section */
    size_t data_len;
} gguf;

/* s as a message shows it (tg_shown: the first 60 bytes, escaped). */
const char *tg_gguf_shown(str s, char buf[TG_SHOWN_SIZE]);
/* Cuts g->buf (g->len bytes) into its key-values and tensor infos, each
 * checked to lie in the file, no name given twice. 0, or -1 with a
 * message; tg_gguf_release frees what it allocated either way. */
int tg_gguf_parse(gguf *g, tg_error *err);
/* Frees what tg_gguf_parse allocated (not g->buf) and zeroes g. */
void tg_gguf_release(gguf *g);
/* Places the data section and checks every tensor's type and that its
 * bytes lie in it, right after the tensor before it's (llama.cpp's
 * layout: no two tensors share bytes). 0, or -1 with a message naming
 * the tensor. */
int tg_gguf_place_data(gguf *g, tg_error *err);

/* The key-value named key, or NULL. */
const kv *tg_gguf_find(const gguf *g, const char *key);
/* An unsigned or signed integer value of key: 0, 1 when absent, or -1
 * with a message (another type, or outside [lo, hi]). */
int tg_gguf_get_int(const gguf *g, const char *key, int64_t lo, int64_t hi, int64_t *v, tg_error *err);
/* A float32 or float64 value of key, finite: 0, 1 when absent, or -1 with a message. */
int tg_gguf_get_float(const gguf *g, const char *key, double *v, tg_error *err);
/* A bool value of key; dflt when absent or not a bool. */
bool tg_gguf_get_bool(const gguf *g, const char *key, bool dflt);
/* A string value: true with *s, false when absent or not a string. */
bool tg_gguf_get_str(const gguf *g, const char *key, str *s);
/* s holds exactly the string z. */
bool tg_gguf_str_is(str s, const char *z);

/* The tensor named name, or NULL. */
const tinfo *tg_gguf_find_tensor(const gguf *g, const char *name);
/* Value i of a tensor of ggml type `type` whose data starts at q. */
float tg_gguf_value_at(const unsigned char *q, uint32_t type, int64_t i);

/* The file's vocabulary for a model of V ids into v (a GPT's when gpt):
 * llama.cpp's "llama" model as TG_TOK_SPM, a GPT's "gpt2" as GPT-2's
 * tiktoken ranks, a GPT's byte vocabulary as a text's bytes, "no" (or no
 * tokenizer at all) as bare ids. 0, or -1 with a message naming the key. */
int tg_gguf_read_vocab(const gguf *g, int V, bool gpt, tg_vocab *v, tg_error *err);

#endif
