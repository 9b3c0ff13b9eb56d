/* tapegrad's training layer: the built-in corpus, text drawn from a small
 * stochastic grammar of the project's own, so that its entropy is known
 * exactly: a run trained on it can be told how far it is from the best
 * any model can do.
 *
 * Every random choice the generator makes can be read back from the
 * text (the grammar is unambiguous), so the information in the text is
 * exactly the information in the choices: sum of -ln p(choice). Divided
 * by the number of characters, that is the floor no character model can
 * beat on average: a perfect model's loss per character. Choices are
 * drawn with integer weights from the project's PCG32 stream, so the
 * corpus is byte-identical on every machine. tiny_gpt train trains on it
 * when given no text (seed 1). Included by train/train.h. */
#ifndef TG_CORPUS_H
#define TG_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#include "../core/error.h"
#include "../core/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_corpus {
    char *text; /* NUL-terminated, malloc'd */
    size_t len;
    double nats; /* information of the whole text, in nats */
} tg_corpus;

/* Fills c with a text of at least min_chars characters drawn from seed,
 * ending after a whole sentence. 0, or -1 with a message (a NULL c, out
 * of memory; c is then empty). */
TG_API int tg_corpus_init(tg_corpus *c, uint64_t seed, size_t min_chars, tg_error *err);
/* Frees the text (c itself stays the caller's, empty). Accepts NULL. */
TG_API void tg_corpus_release(tg_corpus *c);
/* The entropy floor in nats per character: the loss of a perfect model
 * of the grammar (0 for an empty or NULL c). */
TG_API double tg_corpus_floor(const tg_corpus *c);

#ifdef __cplusplus
}
#endif

#endif
