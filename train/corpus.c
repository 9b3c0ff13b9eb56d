/* The built-in corpus (see corpus.h). The grammar, one sentence per line:
 *
 *   sentence  -> subject verb-phrase "."            (number agrees)
 *   subject   -> det [adjective] noun                (singular or plural)
 *   verb-phrase -> transitive object | intransitive [adverb]
 *   object    -> det [adjective] noun                (either number)
 *
 * Words of each class are disjoint, so a reader of the text can tell
 * which choice made every word; determiners shared by both numbers are
 * settled by the noun that follows. Subject-verb agreement is the long
 * dependency a model has to learn: the verb's form depends on a noun a
 * few words back. */
#include "corpus.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/rng.h"

typedef struct choice {
    const char *word;
    uint32_t weight;
} choice;

typedef struct word_class {
    const choice *c;
    int n;
} word_class;

#define CLASS(a)                                                                                                       \
    {                                                                                                                  \
        a, (int)(sizeof a / sizeof a[0])                                                                               \
    }

static const choice DET_SG[] = {{"the", 6}, {"a", 4}, {"one", 1}, {"this", 2}};
static const choice DET_PL[] = {{"the", 6}, {"some", 3}, {"two", 2}, {"these", 2}};
static const choice ADJ[] = {{"small", 3}, {"red", 2}, {"old", 3}, {"quick", 2}, {"quiet", 1}, {"green", 1}};
static const choice NOUN_SG[] = {{"cat", 4},  {"dog", 4},   {"bird", 3}, {"fox", 2},
                                 {"king", 1}, {"child", 2}, {"horse", 1}};
static const choice NOUN_PL[] = {{"cats", 4},  {"dogs", 4},     {"birds", 3}, {"foxes", 2},
                                 {"kings", 1}, {"children", 2}, {"horses", 1}};
static const choice VT_SG[] = {{"sees", 4}, {"likes", 3}, {"chases", 3}, {"finds", 2}, {"follows", 1}};
static const choice VT_PL[] = {{"see", 4}, {"like", 3}, {"chase", 3}, {"find", 2}, {"follow", 1}};
static const choice VI_SG[] = {{"sleeps", 3}, {"runs", 3}, {"sings", 1}, {"waits", 2}};
static const choice VI_PL[] = {{"sleep", 3}, {"run", 3}, {"sing", 1}, {"wait", 2}};
static const choice ADV[] = {{"today", 2}, {"again", 2}, {"outside", 1}};

/* binary choices as weights {no, yes} */
static const uint32_t P_PLURAL[2] = {3, 2}; /* subject / object plural */
static const uint32_t P_ADJ[2] = {2, 1}; /* an adjective before the noun */
static const uint32_t P_TRANSITIVE[2] = {2, 3}; /* intransitive, transitive */
static const uint32_t P_ADV[2] = {1, 1}; /* an adverb after an intransitive verb */

typedef struct gen {
    tg_rng rng;
    char *buf;
    size_t len, cap;
    double nats;
    int failed;
} gen;

/* Draws index i with probability w[i] / sum(w), adding -ln p to the total. */
static int draw(gen *g, const uint32_t *w, int n)
{
    uint32_t total = 0;
    for (int i = 0; i < n; i++) total += w[i];
    uint32_t r = tg_rng_below(&g->rng, total);
    int i = 0;
    while (r >= w[i]) r -= w[i++];
    g->nats -= log((double)w[i] / (double)total);
    return i;
}

static void put(gen *g, const char *s)
{
    size_t n = strlen(s);
    if (g->len + n + 1 > g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 4096;
        while (cap < g->len + n + 1) cap *= 2;
        char *b = realloc(g->buf, cap);
        if (!b) {
            g->failed = 1;
            return;
        }
        g->buf = b;
        g->cap = cap;
    }
    memcpy(g->buf + g->len, s, n + 1);
    g->len += n;
}

static void word(gen *g, word_class wc)
{
    uint32_t w[16];
    for (int i = 0; i < wc.n; i++) w[i] = wc.c[i].weight;
    put(g, wc.c[draw(g, w, wc.n)].word);
}

static void noun_phrase(gen *g, int plural)
{
    word(g, plural ? (word_class)CLASS(DET_PL) : (word_class)CLASS(DET_SG));
    put(g, " ");
    if (draw(g, P_ADJ, 2)) {
        word(g, (word_class)CLASS(ADJ));
        put(g, " ");
    }
    word(g, plural ? (word_class)CLASS(NOUN_PL) : (word_class)CLASS(NOUN_SG));
}

static void sentence(gen *g)
{
    int plural = draw(g, P_PLURAL, 2);
    noun_phrase(g, plural);
    put(g, " ");
    if (draw(g, P_TRANSITIVE, 2)) {
        word(g, plural ? (word_class)CLASS(VT_PL) : (word_class)CLASS(VT_SG));
        put(g, " ");
        noun_phrase(g, draw(g, P_PLURAL, 2));
    } else {
        word(g, plural ? (word_class)CLASS(VI_PL) : (word_class)CLASS(VI_SG));
        if (draw(g, P_ADV, 2)) {
            put(g, " ");
            word(g, (word_class)CLASS(ADV));
        }
    }
    put(g, ".\n");
}

int tg_corpus_init(tg_corpus *c, uint64_t seed, size_t min_chars, tg_error *err)
{
    if (!c) return tg_error_set(err, "corpus_init: NULL corpus");
    *c = (tg_corpus){0};
    gen g = {0};
    tg_rng_seed(&g.rng, seed, 0x7e47);
    do sentence(&g); /* one sentence at least */
    while (g.len < min_chars && !g.failed);
    if (g.failed || !g.buf) {
        free(g.buf);
        return tg_error_set(err, "corpus_init: out of memory for %zu characters", min_chars);
    }
    c->text = g.buf;
    c->len = g.len;
    c->nats = g.nats;
    return 0;
}

void tg_corpus_release(tg_corpus *c)
{
    if (!c) return;
    free(c->text);
    *c = (tg_corpus){0};
}

double tg_corpus_floor(const tg_corpus *c) { return c && c->len ? c->nats / (double)c->len : 0; }
