/* tiktoken rank files (".tiktoken"), the form OpenAI's tiktoken ships its
 * encodings in: one line per piece, "<base64 of the piece's bytes> <rank>",
 * ranks 0..N-1. The rank is the piece's id and its merge priority (lower
 * merges first). GPT-2's file has N = 50256 ranks; <|endoftext|> is 50256.
 *
 * The reader is strict where tiktoken's Python reader is loose (it skips
 * empty lines, as that one does, but refuses bad base64, a rank that is not
 * a whole number, a rank or a piece seen twice, a gap in the ranks, or a
 * missing single byte), and names the line. */
#include "text_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decodes standard padded base64 s[0..n) into out (room for 3n/4 bytes);
 * the byte count, or -1 when s is not base64. */
static int64_t b64_decode(const unsigned char *s, size_t n, unsigned char *out)
{
    if (n == 0 || n % 4) return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            if (s[i + k] == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
            } else if (pad || (v[k] = b64_value(s[i + k])) < 0) {
                return -1;
            }
        }
        uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (unsigned char)(x >> 16);
        if (pad < 2) out[o++] = (unsigned char)(x >> 8);
        if (pad < 1) out[o++] = (unsigned char)x;
    }
    return (int64_t)o;
}

typedef struct line_piece {
    int64_t off;    /* into the decoded bytes */
    int32_t len, line;
} line_piece;

tg_tokenizer *tg_tok_load_tiktoken(const char *path, char *err, size_t errlen)
{
    if (!path) {
        tg_set_err(err, errlen, "tiktoken: NULL path");
        return NULL;
    }
    tg_tokenizer *t = NULL;
    unsigned char *text = NULL, *bytes = NULL;
    line_piece *by_rank = NULL;
    int64_t *off = NULL;
    uint8_t *special = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        tg_set_err(err, errlen, "tiktoken: %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 > cap) {
            cap = cap ? 2 * cap : 1 << 20;
            unsigned char *b = tg_realloc(text, cap);
            if (!b) goto oom;
            text = b;
        }
        size_t got = fread(text + len, 1, 65536, f);
        len += got;
        if (got < 65536) break;
    }
    if (ferror(f)) {
        tg_set_err(err, errlen, "tiktoken: %s: read error", path);
        goto fail;
    }
    /* lines: at most one piece per line; decoded bytes are shorter than the text */
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    if (lines > (1u << 30)) {
        tg_set_err(err, errlen, "tiktoken: %s: more than 2^30 lines", path);
        goto fail;
    }
    by_rank = tg_malloc(lines * sizeof *by_rank);
    bytes = tg_malloc(len ? len : 1);
    if (!by_rank || !bytes) goto oom;
    for (size_t i = 0; i < lines; i++) by_rank[i].line = 0;
    int32_t n = 0;
    int64_t nb = 0;
    int line = 0;
    for (size_t p = 0; p < len;) {
        size_t q = p;
        while (q < len && text[q] != '\n') q++;
        size_t end = q > p && text[q - 1] == '\r' ? q - 1 : q;
        line++;
        if (end > p) {
            size_t sp = p;
            while (sp < end && text[sp] != ' ') sp++;
            int64_t k = sp < end ? b64_decode(text + p, sp - p, bytes + nb) : -1;
            if (k <= 0) {
                tg_set_err(err, errlen, "tiktoken: %s:%d: expected \"<base64 piece> <rank>\"%s", path, line,
                           sp < end ? ", and the piece is not base64 of at least one byte" : "");
                goto fail;
            }
            int64_t rank = 0;
            size_t r = sp + 1;
            if (r == end) rank = -1;
            for (; r < end && rank >= 0; r++) {
                if (text[r] < '0' || text[r] > '9' || rank > (1 << 30)) rank = -1;
                else rank = rank * 10 + (text[r] - '0');
            }
            if (rank < 0 || (size_t)rank >= lines) {
                tg_set_err(err, errlen,
                           "tiktoken: %s:%d: the rank \"%.*s\" is not a whole number below the number of lines",
                           path, line, (int)(end - sp - 1 > 20 ? 20 : end - sp - 1), (const char *)text + sp + 1);
                goto fail;
            }
            if (by_rank[rank].line) {
                tg_set_err(err, errlen, "tiktoken: %s:%d: rank %lld was given already on line %d", path, line,
                           (long long)rank, by_rank[rank].line);
                goto fail;
            }
            by_rank[rank] = (line_piece){nb, (int32_t)k, line};
            nb += k;
            n++;
        }
        p = q + 1;
    }
    if (n == 0) {
        tg_set_err(err, errlen, "tiktoken: %s: no pieces", path);
        goto fail;
    }
    for (int32_t r = 0; r < n; r++)
        if (!by_rank[r].line) {
            tg_set_err(err, errlen, "tiktoken: %s: rank %d is missing (%d pieces must have ranks 0..%d)", path, (int)r,
                       (int)n, (int)n - 1);
            goto fail;
        }
    /* pieces in rank order, then <|endoftext|> */
    static const char EOT[] = "<|endoftext|>";
    unsigned char *ordered = tg_malloc((size_t)nb + sizeof EOT);
    off = tg_malloc(((size_t)n + 2) * sizeof *off);
    special = tg_calloc((size_t)n + 1, 1);
    if (!ordered || !off || !special) {
        tg_free(ordered);
        goto oom;
    }
    int64_t o = 0;
    for (int32_t r = 0; r < n; r++) {
        off[r] = o;
        memcpy(ordered + o, bytes + by_rank[r].off, (size_t)by_rank[r].len);
        o += by_rank[r].len;
    }
    off[n] = o;
    memcpy(ordered + o, EOT, sizeof EOT - 1);
    off[n + 1] = o + (int64_t)sizeof EOT - 1;
    special[n] = 1;
    char what[600];
    snprintf(what, sizeof what, "tiktoken: %s", path);
    t = tg_tok_build(TG_TOK_TIKTOKEN, n + 1, ordered, off, special, what, err, errlen);
    tg_free(ordered);
    if (!t) goto fail;
    t->eos = n;
    t->whole_word_first = true;
    size_t pl = strlen(TG_GPT2_PATTERN) + 1;
    if (!(t->pattern = tg_malloc(pl))) goto oom;
    memcpy(t->pattern, TG_GPT2_PATTERN, pl);
    if (tg_tok_compile_pattern(t, what, err, errlen)) goto fail;
    goto done;
oom:
    tg_set_err(err, errlen, "tiktoken: %s: out of memory", path);
fail:
    tg_tok_free(t);
    t = NULL;
done:
    fclose(f);
    tg_free(text);
    tg_free(bytes);
    tg_free(by_rank);
    tg_free(off);
    tg_free(special);
    return t;
}
