/* tapegrad core: the error a fallible function reports.
 *
 * Every public function that can fail, but for the ops, takes a
 * `tg_error *err` as its last parameter and on failure writes one message
 * there naming what was wrong (a file, a key, a value, a shape), then
 * returns its type's one failure value: -1 for an int (or int64_t) status
 * or count, NULL for a pointer, NAN for a double. On success err is left
 * as it was. err may be NULL: the message is then dropped, the failure
 * value still returned.
 *
 * The ops are the one exception, by design: they take a graph, and
 * record their message on it (tg_graph_error), so that a forward pass is
 * written without checks and checked once.
 *
 *   tg_error err = {0};
 *   tg_model *m = tg_model_load("ckpt.safetensors", &err);
 *   if (!m) fprintf(stderr, "%s\n", err.msg); */
#ifndef TG_ERROR_H
#define TG_ERROR_H

#include <stdbool.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_ERROR_SIZE 1024

typedef struct tg_error {
    char msg[TG_ERROR_SIZE]; /* NUL-terminated; "" until something failed */
} tg_error;

/* Writes the message (a printf format and its arguments) into e,
 * truncated to TG_ERROR_SIZE - 1 bytes. Returns -1, so that a function
 * can `return tg_error_set(err, ...)`. Nothing is written for a NULL e
 * or fmt. */
TG_API int tg_error_set(tg_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Puts "prefix: " before e's message (a file's name before what is wrong
 * in it). Returns -1. Nothing for a NULL e or prefix. */
TG_API int tg_error_prefix(tg_error *e, const char *prefix);
/* True when e holds a message (false for NULL). */
TG_API bool tg_error_failed(const tg_error *e);

#ifdef __cplusplus
}
#endif

#endif
