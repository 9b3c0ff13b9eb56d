/* tapegrad core: safetensors files (the format PyTorch users exchange
 * weights in), read with validation and written atomically.
 *
 * Layout: 8 bytes little-endian u64 N; N bytes of UTF-8 JSON, an object
 * mapping each tensor name to {"dtype": "F32", "shape": [2, 3],
 * "data_offsets": [begin, end]} (offsets relative to the data section),
 * plus an optional "__metadata__" object of string -> string; then the
 * data section. The reader trusts nothing: every failure is a message in
 * err, never a crash. */
#ifndef TG_SAFETENSORS_H
#define TG_SAFETENSORS_H

#include "params.h"
#include "tensor.h"

#define TG_ST_MAX_DIMS 8

/* One tensor of a loaded file. dtype is the file's name for it: "F32",
 * "F64", "I32", "I64", ... (any dtype name of the format is accepted on
 * read; conversions below support F32, F64, I32, I64). */
typedef struct tg_st_tensor {
    const char *name;
    const char *dtype;
    int ndim;
    int64_t shape[TG_ST_MAX_DIMS];
    int64_t numel;
    const void *data;     /* little-endian, unaligned; nbytes long */
    size_t nbytes;
} tg_st_tensor;

typedef struct tg_st_file tg_st_file;

/* Reads and validates a whole file. NULL with a message in err on any
 * problem (missing file, short header, bad JSON, unknown dtype, shape
 * that does not match its byte range, offsets out of bounds, overlapping
 * or leaving holes, duplicate names, non-string metadata, ...). */
tg_st_file *tg_st_load(const char *path, char *err, size_t errlen);
void tg_st_free(tg_st_file *f);      /* accepts NULL */

int tg_st_count(const tg_st_file *f);
const tg_st_tensor *tg_st_at(const tg_st_file *f, int i);
const tg_st_tensor *tg_st_find(const tg_st_file *f, const char *name);  /* or NULL */
/* __metadata__ value for key, or NULL. */
const char *tg_st_meta(const tg_st_file *f, const char *key);

/* Copies e into dst (same numel and the same shape, ignoring nothing),
 * converting: F32/F64 -> f32 or f64; I32/I64 -> i32 (values must fit).
 * Returns 0, or -1 with a message naming the tensor. */
int tg_st_copy_to(const tg_st_tensor *e, tg_tensor *dst, char *err, size_t errlen);

/* Writing. Tensors are referenced, not copied: their data must stay
 * valid until tg_st_writer_save returns. */
typedef struct tg_st_writer tg_st_writer;
tg_st_writer *tg_st_writer_new(void);
void tg_st_writer_free(tg_st_writer *w);   /* accepts NULL */
/* dtype "F32", "F64", "I32", "I64" or "U8"; data holds numel elements. */
int tg_st_writer_add(tg_st_writer *w, const char *name, const char *dtype, int ndim,
                     const int64_t *shape, const void *data);
/* Adds a tapegrad tensor under name (F32/F64/I32/BOOL->U8). */
int tg_st_writer_add_tensor(tg_st_writer *w, const char *name, const tg_tensor *t);
int tg_st_writer_meta(tg_st_writer *w, const char *key, const char *value);
/* Writes atomically: a temporary file in the same directory, written,
 * flushed and synced, then renamed over path. On failure path is left as
 * it was and err says why. */
int tg_st_writer_save(tg_st_writer *w, const char *path, char *err, size_t errlen);

/* Every parameter of p under its name, with metadata pairs
 * (meta[2i] = key, meta[2i+1] = value), atomically. */
int tg_st_save_params(const tg_params *p, const char *path, const char *const *meta, int n_meta,
                      char *err, size_t errlen);
/* Loads every parameter of p from f by name (converting F32/F64). A
 * parameter missing from f, or a shape mismatch, is an error naming it;
 * tensors in f that p lacks are ignored. Nothing is written to p unless
 * every parameter is present and fits. */
int tg_st_load_params(tg_params *p, const tg_st_file *f, char *err, size_t errlen);

#endif
