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

#include "error.h"
#include "export.h"
#include "params.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_ST_MAX_DIMS 8

/* One tensor of a loaded file. dtype is the file's name for it: "F32",
 * "F64", "I32", "I64", ... (any dtype name of the format is accepted on
 * read: BOOL U8 I8 I16 U16 F16 BF16 I32 U32 F32 F64 I64 U64 F8_E5M2
 * F8_E4M3; conversions below support F32, F64, F16, BF16, I32, I64, U8,
 * BOOL).
 * A dimension may be 0 (numel 0, nbytes 0); ndim 0 is a scalar. */
typedef struct tg_st_tensor {
    const char *name;
    const char *dtype;
    int ndim;
    int64_t shape[TG_ST_MAX_DIMS];
    int64_t numel;
    const void *data; /* little-endian, unaligned; nbytes long */
    size_t nbytes;
} tg_st_tensor;

typedef struct tg_st_file tg_st_file;

/* Reads and validates a whole file (loaded into one buffer that the
 * tensors point into; tensors in header order). NULL with a message
 * "safetensors: <path>: ..." in err on any problem (missing file, short
 * header, bad JSON, unknown dtype, shape that does not match its byte
 * range, offsets out of bounds, overlapping or leaving holes, duplicate
 * names, non-string metadata, ...). */
TG_API tg_st_file *tg_st_load(const char *path, tg_error *err);
/* Frees the file's buffer: every tg_st_tensor of it becomes invalid. */
TG_API void tg_st_free(tg_st_file *f); /* accepts NULL */

/* Number of tensors in f (not counting __metadata__); 0 for NULL. */
TG_API int tg_st_count(const tg_st_file *f);
/* Tensor i in header order (0 <= i < count), or NULL. */
TG_API const tg_st_tensor *tg_st_at(const tg_st_file *f, int i);
/* The tensor called name. */
TG_API const tg_st_tensor *tg_st_find(const tg_st_file *f, const char *name); /* or NULL */
/* __metadata__ value for key, or NULL. */
TG_API const char *tg_st_meta(const tg_st_file *f, const char *key);
/* Number of __metadata__ entries; 0 for NULL. */
TG_API int tg_st_meta_count(const tg_st_file *f);
/* Metadata entry i (0 <= i < tg_st_meta_count, in the file's order): its
 * key, and its value in *value (value may be NULL). NULL (and *value
 * NULL) when i is out of range. */
TG_API const char *tg_st_meta_at(const tg_st_file *f, int i, const char **value);
/* Metadata values as numbers, for readers of a config (the whole value
 * must be the number: no spaces, '+', hexadecimal, "inf" or "nan"). An
 * integer: an optional '-' and decimal digits, in [lo, hi]. 0, or -1 with
 * a message "checkpoint metadata 'key' = 'value' is not an integer in
 * [lo, hi]" (or "... has no 'key'"; the value shown escaped). */
TG_API int tg_st_meta_int(const tg_st_file *f, const char *key, int64_t lo, int64_t hi, int64_t *out, tg_error *err);
/* A decimal number (digits, an optional point and exponent), finite, in
 * [lo, hi]; the messages of tg_st_meta_int. */
TG_API int tg_st_meta_double(const tg_st_file *f, const char *key, double lo, double hi, double *out, tg_error *err);
/* "true" or "false" (also "True", "False", "1", "0", as Python writers
 * put them); the messages of tg_st_meta_int. */
TG_API int tg_st_meta_bool(const tg_st_file *f, const char *key, bool *out, tg_error *err);

/* Copies e into dst (same numel and the same shape, ignoring nothing),
 * converting: F32/F64 -> f32 or f64 (a finite F64 beyond f32's range is
 * an error; inf and NaN carry over); F16/BF16 -> f32 or f64 (exactly:
 * every half and bfloat16 value is a float); I32/I64 -> i32 (values must fit);
 * U8/BOOL -> bool (values must be 0 or 1). Returns 0, or -1 with a
 * message naming the tensor (and the element, for a value that does not
 * fit); dst is untouched on error. Also an error: a NULL e or dst, or an
 * e whose dtype, numel, nbytes and data do not agree (one a caller made). */
TG_API int tg_st_copy_to(const tg_st_tensor *e, tg_tensor *dst, tg_error *err);

/* Writing. Tensors are referenced, not copied: their data must stay
 * valid until tg_st_writer_save returns. The header lists __metadata__
 * first, then the tensors in the order added, their data contiguous in
 * that order; it is padded with spaces to a multiple of 8 bytes.
 *
 * Errors stick: an add that fails returns -1 and the writer keeps its
 * message; every later add returns -1 and tg_st_writer_save fails with
 * that message in its err, writing nothing. So a sequence of adds is
 * checked once, at save. With a NULL writer, the adds return -1 and save
 * returns -1 with a message in err. */
typedef struct tg_st_writer tg_st_writer;
/* An empty writer; NULL when out of memory. */
TG_API tg_st_writer *tg_st_writer_new(void);
TG_API void tg_st_writer_free(tg_st_writer *w); /* accepts NULL */
/* dtype "F32", "F64", "I32", "I64", "U8" (or any other dtype name of
 * the format); data holds numel elements (may be NULL if numel is 0).
 * Names are non-empty UTF-8, unique, and not "__metadata__"; dimensions
 * are >= 0. */
TG_API int tg_st_writer_add(tg_st_writer *w, const char *name, const char *dtype, int ndim, const int64_t *shape,
                            const void *data);
/* Adds a tapegrad tensor under name (F32/F64/I32/BOOL->U8). */
TG_API int tg_st_writer_add_tensor(tg_st_writer *w, const char *name, const tg_tensor *t);
/* A __metadata__ pair (UTF-8 strings, copied); a key may be set once. */
TG_API int tg_st_writer_add_meta(tg_st_writer *w, const char *key, const char *value);
/* Writes atomically: a temporary file "<path>.tmp.<pid>.XXXXXX" in the
 * same directory, written, flushed and synced, then renamed over path (and
 * the directory synced; core/atomic_file.h says what a killed write
 * leaves). On failure the temporary file is removed, path is
 * left as it was and err says why: the first failed add's message
 * ("safetensors: writer: ... (nothing written to '<path>')"), or the
 * file's. The file gets the mode of the file it
 * replaces, or 0666 minus the umask if new (the umask is read with
 * umask(2), which is not thread-safe against concurrent umask changes). */
TG_API int tg_st_writer_save(tg_st_writer *w, const char *path, tg_error *err);

/* Writes every parameter of p under its name, in the store's order and
 * dtype (F32 or F64), with n_meta metadata pairs (meta[2i] = key,
 * meta[2i+1] = value, i < n_meta), atomically. Returns 0, or -1 with a
 * message in err (NULL p, bad metadata, I/O failure; the file at path is
 * then untouched). */
TG_API int tg_st_save_params(const tg_params *p, const char *path, const char *const *meta, int n_meta, tg_error *err);
/* Loads every parameter of p from f by name (converting F32/F64/F16/BF16). A
 * parameter missing from f, or a shape mismatch, is an error naming it;
 * tensors in f that p lacks are ignored. Nothing is written to p unless
 * every parameter is present and fits. Returns 0, or -1 with the message
 * in err. */
TG_API int tg_st_load_params(tg_params *p, const tg_st_file *f, tg_error *err);

#ifdef __cplusplus
}
#endif

#endif
