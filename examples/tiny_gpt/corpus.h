/* tiny_gpt's built-in corpus: text drawn from a small stochastic grammar
 * of the project's own, so that its entropy is known exactly.
 *
 * Every random choice the generator makes can be read back from the
 * text (the grammar is unambiguous), so the information in the text is
 * exactly the information in the choices: sum of -ln p(choice). Divided
 * by the number of characters, that is the floor no character model can
 * beat on average: a perfect model's loss per character. Choices are
 * drawn with integer weights from the project's PCG32 stream, so the
 * corpus is byte-identical on every machine. */
#ifndef TINY_GPT_CORPUS_H
#define TINY_GPT_CORPUS_H

#include <stddef.h>
#include <stdint.h>

typedef struct corpus {
    char *text;           /* NUL-terminated, malloc'd */
    size_t len;
    double nats;          /* information of the whole text, in nats */
} corpus;

/* At least min_chars characters, ending after a whole sentence. Returns
 * 0, or -1 when out of memory. */
int corpus_generate(corpus *c, uint64_t seed, size_t min_chars);
void corpus_free(corpus *c);

/* Entropy floor in nats per character. */
static inline double corpus_nats_per_char(const corpus *c) { return c->len ? c->nats / (double)c->len : 0; }

#endif
