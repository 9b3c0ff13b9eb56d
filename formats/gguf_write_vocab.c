/* A checkpoint's vocabulary as llama.cpp's tokenizer, for the GGUF
 * writer (tg_gguf_make_vocab, formats/gguf_write_internal.h).
 *
 * The tokenizer is llama.cpp's "llama" (SentencePiece-style) model, the
 * one that encodes as llama2.c's run.c does: BOS, " " in front of the
 * text, then every character merged by score, the highest first, with
 * bytes (tokens <0xXX>) for what no piece holds. llama.cpp writes every
 * space as U+2581 before it looks pieces up, so the byte 0x20 is the
 * token "▁" and every space in a piece is written "▁"; the learned piece
 * of id k scores -k (the lowest id merges first, as in tapegrad's BPE).
 * A GPT's text has neither BOS nor the space: add_bos_token and
 * add_space_prefix are false. A GPT's byte vocabulary is llama.cpp's
 * "rwkv" model instead (byte strings, no special token: bytes_vocab says
 * why), GPT-2's tiktoken ranks its "gpt2" model (byte-level pieces,
 * merges, pre-tokenizer gpt-2).
 * docs/formats.md ("GGUF") says why this gives tapegrad's ids, and for
 * which texts it does not. */
#include "gguf_write_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/err_internal.h"
#include "gpt2_internal.h"

void tg_gguf_vocab_free(gvocab *g)
{
    free(g->merges.p);
    free(g->text.p);
    free(g->at);
    free(g->len);
    free(g->score);
    free(g->type);
}

/* Appends piece p (l bytes) with every space written as U+2581. */
static void add_token(gvocab *g, int id, const unsigned char *p, size_t l, float score, int32_t type)
{
    g->at[id] = g->text.len;
    for (size_t i = 0; i < l; i++) {
        if (p[i] == ' ') tg_gguf_put(&g->text, "\xe2\x96\x81", 3);
        else tg_gguf_put(&g->text, p + i, 1);
    }
    g->len[id] = g->text.len - g->at[id];
    g->score[id] = score;
    g->type[id] = type;
}

/* Appends token text p (l bytes) as it is (a gpt2 vocabulary's byte-level string). */
static void add_raw(gvocab *g, int id, const void *p, size_t l, int32_t type)
{
    g->at[id] = g->text.len;
    tg_gguf_put(&g->text, p, l);
    g->len[id] = l;
    g->score[id] = 0;
    g->type[id] = type;
}

static int gvocab_alloc(gvocab *g, int V, tg_error *err)
{
    g->n = V;
    g->at = calloc((size_t)V, sizeof *g->at);
    g->len = calloc((size_t)V, sizeof *g->len);
    g->score = calloc((size_t)V, sizeof *g->score);
    g->type = calloc((size_t)V, sizeof *g->type);
    if (!g->at || !g->len || !g->score || !g->type) return tg_error_set(err, "out of memory"), -1;
    return 0;
}

/* a token's text, for finding two alike (sorted, no context needed) */
typedef struct spelled {
    const unsigned char *p;
    size_t len;
    int id;
} spelled;

static int cmp_spelled(const void *a, const void *b)
{
    const spelled *x = a, *y = b;
    const int c = memcmp(x->p, y->p, x->len < y->len ? x->len : y->len);
    return c ? c : x->len < y->len ? -1 : x->len > y->len ? 1 : x->id - y->id;
}

/* llama.cpp finds a token by its text: two ids with one text would read
 * as one (a piece spelling "<0x41>", "<s>", or U+2581 alone) */
static int distinct_texts(gvocab *g, tg_error *err)
{
    const int V = g->n;
    if (g->text.oom) return tg_error_set(err, "out of memory"), -1;
    spelled *order = malloc((size_t)V * sizeof *order);
    if (!order) return tg_error_set(err, "out of memory"), -1;
    for (int i = 0; i < V; i++) order[i] = (spelled){g->text.p + g->at[i], g->len[i], i};
    qsort(order, (size_t)V, sizeof *order, cmp_spelled);
    int rc = 0;
    for (int i = 1; i < V && !rc; i++) {
        const spelled *a = &order[i - 1], *b = &order[i];
        if (a->len == b->len && !memcmp(a->p, b->p, a->len)) {
            const char *what = a->id < 3        ? "a special token"
                : a->id < TG_VOCAB_LLAMA2C_SIZE ? "a byte"
                                                : "another piece";
            char text[64], shown[TG_SHOWN_SIZE];
            snprintf(text, sizeof text, "%.*s", (int)(b->len < 63 ? b->len : 63), (const char *)b->p);
            tg_error_set(err,
                         "gguf_export: piece %d is written \"%s\" in llama.cpp's vocabulary, as is %s "
                         "(id %d): llama.cpp finds tokens by their text and would mistake one for the other",
                         b->id, tg_shown(text, shown), what, a->id);
            rc = -1;
        }
    }
    free(order);
    return rc;
}

/* A vocabulary of pieces with scores (TG_TOK_SPM: an imported GGUF or
 * llama2.c tokenizer) as it is: each piece's score and type, spaces
 * written U+2581, byte pieces <0xXX>, its BOS and EOS, its own
 * space-prefix rule. A piece its merge floor keeps out of merges (run.c's
 * -1e10) is refused when NORMAL: llama.cpp has no floor and would make it. */
static int spm_vocab(const tg_vocab *v, int V, gvocab *g, tg_error *err)
{
    const tg_tokenizer *t = v->tok;
    tg_spm_options o;
    tg_tok_spm_options_of(t, &o);
    const int32_t T = tg_tok_vocab_size(t);
    if (T != V)
        return tg_error_set(err,
                            "gguf_export: llama.cpp needs a token per id: this model has %d ids, its "
                            "tokenizer %d",
                            V, (int)T),
               -1;
    *g = (gvocab){.n = V,
                  .bos = tg_tok_bos(t),
                  .eos = tg_tok_eos(t),
                  .unk = -1,
                  .add_bos = v->docs,
                  .add_prefix = tg_tok_adds_prefix(t)};
    g->at = calloc((size_t)V, sizeof *g->at);
    g->len = calloc((size_t)V, sizeof *g->len);
    g->score = calloc((size_t)V, sizeof *g->score);
    g->type = calloc((size_t)V, sizeof *g->type);
    if (!g->at || !g->len || !g->score || !g->type) return tg_error_set(err, "out of memory"), -1;
    for (int32_t id = 0; id < V; id++) {
        size_t l;
        const unsigned char *p = tg_tok_spelled(t, id, &l);
        const int type = tg_tok_piece_type(t, id);
        const float score = tg_tok_score(t, id);
        char buf[8];
        if (type == TG_PIECE_UNKNOWN && g->unk < 0) g->unk = id;
        if (type == TG_PIECE_NORMAL && l >= 2 && (double)score <= o.merge_floor)
            return tg_error_set(err,
                                "gguf_export: piece %d scores %g, at or below its tokenizer's merge floor "
                                "%g, which llama.cpp does not have: it would merge into it",
                                (int)id, (double)score, o.merge_floor),
                   -1;
        if (type == TG_PIECE_BYTE && l == 1) { /* a byte spelled as itself: llama.cpp's <0xXX>, a space its "▁" */
            if (p[0] == ' ') {
                add_token(g, id, p, 1, score, TOKEN_NORMAL);
                continue;
            }
            snprintf(buf, sizeof buf, "<0x%02X>", p[0]);
            p = (const unsigned char *)buf, l = 6;
        }
        add_token(g, id, p, l, score, type);
    }
    return distinct_texts(g, err);
}

/* A GPT's byte vocabulary (TG_VOCAB_BYTES: id i is the i-th byte the
 * text has) as llama.cpp's "rwkv" model: each token a byte string (its
 * spelling escapes what is not printable ASCII, "\x0a", and the
 * backslash), the text cut into the longest tokens it starts with, which
 * for single bytes is the text's bytes; no BOS, no space in front, as a
 * GPT reads its text. Not the "llama" model: llama.cpp gives that one
 * EOS 2 when the file names none (and any id it names is EOS), and ends
 * generation there, so a GPT of a text's bytes, whose every id is a byte
 * of text, would stop at its third byte ("." in the built-in corpus);
 * "rwkv" has no special token unless the file names one. */
static int bytes_vocab(const tg_vocab *v, int V, gvocab *g, tg_error *err)
{
    if (V != v->size)
        return tg_error_set(err,
                            "gguf_export: llama.cpp needs a token per id: this model has %d ids, its "
                            "vocabulary %d bytes",
                            V, v->size),
               -1;
    *g = (gvocab){.bos = -1, .eos = -1, .unk = -1, .rwkv = true};
    if (gvocab_alloc(g, V, err)) return -1;
    for (int id = 0; id < V; id++) {
        char buf[8];
        const unsigned char b = v->chars[id];
        if (b >= 0x20 && b < 0x7f && b != '\\') snprintf(buf, sizeof buf, "%c", b);
        else if (b == '\\') snprintf(buf, sizeof buf, "\\\\");
        else snprintf(buf, sizeof buf, "\\x%02x", b); /* llama.cpp's unescape reads lower-case hex */
        add_raw(g, id, buf, strlen(buf), TOKEN_NORMAL);
    }
    return distinct_texts(g, err);
}

/* GPT-2's tiktoken ranks as llama.cpp's "gpt2" model: each piece's
 * byte-level string (GPT-2's stand-ins for bytes), <|endoftext|> a
 * control token (BOS and EOS, as GPT-2's own files have it), and the
 * merges in the order of the pieces they make: piece r is the merge of
 * the two pieces tiktoken's rule leaves from its bytes with the ranks
 * below r, so merging by merge number (llama.cpp) is merging by rank
 * (tiktoken, tapegrad). */
static int tiktoken_vocab(const tg_tokenizer *t, int V, gvocab *g, tg_error *err)
{
    const int32_t T = tg_tok_vocab_size(t), n = T - 1; /* <|endoftext|> is id n */
    if (T != V)
        return tg_error_set(err,
                            "gguf_export: llama.cpp needs a token per id: this model has %d ids, its "
                            "tokenizer %d",
                            V, (int)T),
               -1;
    *g = (gvocab){.bos = n, .eos = n, .unk = -1, .gpt2 = true};
    if (gvocab_alloc(g, V, err)) return -1;
    uint32_t cp_of[256];
    tg_gpt2_byte_chars(cp_of);
    const size_t maxp = tg_tok_max_piece_len(t);
    char *a = malloc(2 * maxp + 1), *b = malloc(2 * maxp + 1);
    int32_t *parts = malloc((maxp + 1) * sizeof *parts);
    int rc = -1;
    if (!a || !b || !parts) {
        tg_error_set(err, "out of memory");
        goto done;
    }
    for (int32_t id = 0; id < n; id++) {
        size_t l;
        const unsigned char *p = tg_tok_piece(t, id, &l);
        tg_gpt2_byte_string(p, l, cp_of, a);
        add_raw(g, id, a, strlen(a), TOKEN_NORMAL);
        if (l < 2) continue;
        int32_t x, y;
        const int split = tg_gpt2_tiktoken_split(t, id, parts, &x, &y);
        if (split) {
            if (split == -2) tg_error_set(err, "out of memory");
            else
                tg_error_set(err,
                             "gguf_export: piece %d is no merge of two earlier pieces, so llama.cpp's "
                             "merges cannot make it",
                             (int)id);
            goto done;
        }
        size_t lx, ly;
        const unsigned char *px = tg_tok_piece(t, x, &lx), *py = tg_tok_piece(t, y, &ly);
        tg_gpt2_byte_string(px, lx, cp_of, a);
        tg_gpt2_byte_string(py, ly, cp_of, b);
        const size_t la = strlen(a), lb = strlen(b);
        tg_gguf_put_u64(&g->merges, la + 1 + lb);
        tg_gguf_put(&g->merges, a, la);
        tg_gguf_put(&g->merges, " ", 1);
        tg_gguf_put(&g->merges, b, lb);
        g->n_merges++;
    }
    size_t le;
    const unsigned char *eot = tg_tok_piece(t, n, &le);
    add_raw(g, n, eot, le, TOKEN_CONTROL);
    rc = g->merges.oom ? (tg_error_set(err, "out of memory"), -1) : distinct_texts(g, err);
done:
    free(a), free(b), free(parts);
    return rc;
}

/* The model's vocabulary as llama.cpp's tokenizer. A Llama's text is
 * BOS + " " + text (run.c's), a GPT's the text alone: the same pieces,
 * with add_bos_token and add_space_prefix off. */
int tg_gguf_make_vocab(const tg_vocab *v, int V, bool gpt, gvocab *g, tg_error *err)
{
    static const char *const specials[3] = {"<unk>", "<s>", "</s>"};
    const int tk = v->kind == TG_VOCAB_TOKENIZER ? tg_tok_kind_of(v->tok) : 0;
    if (gpt && v->kind == TG_VOCAB_BYTES) return bytes_vocab(v, V, g, err);
    if (gpt && tk == TG_TOK_TIKTOKEN) return tiktoken_vocab(v->tok, V, g, err);
    const bool bpe = tk == TG_TOK_BPE && v->docs != gpt;
    const bool spm = tk == TG_TOK_SPM;
    if (gpt && !bpe && !spm)
        return tg_error_set(err,
                            "gguf_export: a GPT's vocabulary goes in as a text's bytes, tapegrad's BPE "
                            "without BOS, GPT-2's tiktoken ranks or pieces with scores; this model's is %s",
                            v->kind == TG_VOCAB_IDS           ? "bare token ids, without a tokenizer"
                                : v->kind == TG_VOCAB_LLAMA2C ? "llama2.c's bytes"
                                                              : "tapegrad's BPE with BOS (a Llama's)"),
               -1;
    if (v->kind != TG_VOCAB_LLAMA2C && !bpe && !spm)
        return tg_error_set(err,
                            "gguf_export: a Llama's vocabulary goes in as llama.cpp's SentencePiece-style "
                            "tokenizer: llama2.c's bytes, tapegrad's BPE with BOS (train --tokenizer) or "
                            "pieces with scores (an imported GGUF or llama2.c tokenizer); this model's is %s",
                            v->kind == TG_VOCAB_BYTES                  ? "a text's bytes"
                                : v->kind == TG_VOCAB_IDS              ? "bare token ids, without a tokenizer"
                                : tg_tok_kind_of(v->tok) == TG_TOK_BPE ? "tapegrad's BPE without BOS (a GPT's)"
                                                                       : "GPT-2's tiktoken ranks"),
               -1;
    if (spm) return spm_vocab(v, V, g, err);
    *g = (gvocab){.bos = 1, .eos = 2, .unk = 0, .add_bos = !gpt, .add_prefix = !gpt};
    const int32_t T = bpe ? tg_tok_vocab_size(v->tok) : TG_VOCAB_LLAMA2C_SIZE;
    if (bpe && T != V)
        return tg_error_set(err,
                            "gguf_export: llama.cpp needs a token per id: this model has %d ids, its "
                            "tokenizer %d",
                            V, (int)T),
               -1;
    g->n = V;
    g->at = calloc((size_t)V, sizeof *g->at);
    g->len = calloc((size_t)V, sizeof *g->len);
    g->score = calloc((size_t)V, sizeof *g->score);
    g->type = calloc((size_t)V, sizeof *g->type);
    if (!g->at || !g->len || !g->score || !g->type) return tg_error_set(err, "out of memory"), -1;
    for (int id = 0; id < V; id++) {
        char buf[32];
        size_t l;
        const unsigned char *p;
        if (id < 3) {
            if (bpe &&
                (!tg_tok_is_special(v->tok, id) || !(p = tg_tok_piece(v->tok, id, &l)) || l != strlen(specials[id]) ||
                 memcmp(p, specials[id], l)))
                return tg_error_set(err,
                                    "gguf_export: id %d of the tokenizer is not \"%s\" (a BPE tokenizer "
                                    "for a Llama has llama2.c's layout: <unk>, <s>, </s>, then the bytes)",
                                    id, specials[id]),
                       -1;
            add_token(g, id, (const unsigned char *)specials[id], strlen(specials[id]), 0.0f,
                      id ? TOKEN_CONTROL : TOKEN_UNKNOWN);
        } else if (id < TG_VOCAB_LLAMA2C_SIZE) {
            const int byte = id - 3;
            if (bpe &&
                ((p = tg_tok_piece(v->tok, id, &l)) == NULL || l != 1 || p[0] != byte || tg_tok_is_special(v->tok, id)))
                return tg_error_set(err,
                                    "gguf_export: id %d of the tokenizer is not the byte %d (a BPE "
                                    "tokenizer for a Llama has llama2.c's layout: 3 specials, then byte b "
                                    "at 3 + b)",
                                    id, byte),
                       -1;
            if (byte == ' ') {
                add_token(g, id, (const unsigned char *)" ", 1, 0.0f, TOKEN_NORMAL); /* "▁": spaces are escaped */
            } else {
                snprintf(buf, sizeof buf, "<0x%02X>", byte);
                add_token(g, id, (const unsigned char *)buf, 6, 0.0f, TOKEN_BYTE);
            }
        } else if (!bpe) { /* llama2.c's vocabulary past its 259 ids: never produced */
            snprintf(buf, sizeof buf, "<extra_%d>", id);
            add_token(g, id, (const unsigned char *)buf, strlen(buf), -1e30f, TOKEN_CONTROL);
        } else {
            p = tg_tok_piece(v->tok, id, &l);
            if (tg_tok_is_special(v->tok, id)) /* a control token: never made from text, by either */
                add_token(g, id, p, l, 0.0f, TOKEN_CONTROL);
            else add_token(g, id, p, l, (float)-id, TOKEN_NORMAL);
        }
    }
    return distinct_texts(g, err);
}
