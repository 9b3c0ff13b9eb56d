/* Decoding: ids -> bytes, whole or as a stream.
 *
 * Whole: the pieces end to end (for a tokenizer that adds the dummy
 * prefix, without the space that begins the first piece or the one after
 * BOS). Streaming (one token at a time, as a
 * sampler produces them): the bytes held back from the last token are
 * followed by the new token's, and everything is written out except a
 * tail that is the proper prefix of a valid UTF-8 character (a lead byte
 * and fewer continuation bytes than it needs, each in its range): that
 * tail waits for the next token. A byte that can neither start nor
 * continue such a character goes out at once, so invalid UTF-8 is never
 * held for long, and flushing at the end emits the held bytes as they are:
 * the stream's output is exactly the ids' bytes. */
#include "text_internal.h"

#include <stdio.h>
#include <string.h>

#include "../core/err_internal.h"

int64_t tg_tok_decode(const tg_tokenizer *t, const int32_t *ids, size_t n, void *out, size_t cap, tg_error *err)
{
    if (!t || (!ids && n) || (!out && cap)) {
        tg_error_set(err, "tokenizer decode: NULL argument");
        return -1;
    }
    unsigned char *o = out;
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n) {
            tg_error_set(err, "tokenizer decode: id %lld at position %zu is outside the vocabulary [0, %d)",
                         (long long)ids[i], i, (int)t->n);
            return -1;
        }
        size_t len = (size_t)(t->off[ids[i] + 1] - t->off[ids[i]]);
        const unsigned char *p = t->bytes + t->off[ids[i]];
        if (tg_tok_adds_prefix(t) && (i == 0 || ids[i - 1] == t->bos) && len && p[0] == ' ') p++, len--;
        if ((uint64_t)total < cap) {
            size_t room = cap - (size_t)total, k = len < room ? len : room;
            memcpy(o + total, p, k);
        }
        total += (int64_t)len;
    }
    return total;
}

void tg_tok_stream_init(tg_tok_stream *s, const tg_tokenizer *t)
{
    if (!s) return;
    s->tok = t;
    s->n_held = 0;
}

int64_t tg_tok_stream_push(tg_tok_stream *s, int32_t id, void *out, size_t cap)
{
    if (!s || !s->tok || !out || id < 0 || id >= s->tok->n || s->n_held < 0 || s->n_held > 3) return -1;
    const tg_tokenizer *t = s->tok;
    if (cap < t->max_piece + 3) return -1; /* the documented room, whatever this id needs */
    size_t len = (size_t)(t->off[id + 1] - t->off[id]), total = (size_t)s->n_held + len;
    unsigned char *o = out;
    memcpy(o, s->held, (size_t)s->n_held);
    memcpy(o + s->n_held, t->bytes + t->off[id], len);
    size_t i = 0;
    while (i < total) {
        if (o[i] < 0x80) {
            i++;
            continue;
        }
        int sub, k = tg_utf8_char(o + i, total - i, &sub);
        if (k) {
            i += (size_t)k;
        } else if (total - i < 4 && tg_utf8_incomplete(o + i, (int)(total - i))) {
            break; /* the start of a character the next token may finish */
        } else {
            i += (size_t)sub;
        }
    }
    s->n_held = (int)(total - i);
    memcpy(s->held, o + i, (size_t)s->n_held);
    return (int64_t)i;
}

int64_t tg_tok_stream_flush(tg_tok_stream *s, void *out, size_t cap)
{
    if (!s || !out || cap < 3 || s->n_held < 0 || s->n_held > 3) return -1;
    int n = s->n_held;
    memcpy(out, s->held, (size_t)n);
    s->n_held = 0;
    return n;
}
