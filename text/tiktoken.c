/* tiktoken rank files (".tiktoken"), the form OpenAI's tiktoken ships its
 * encodings in: one line per piece, "<base64 of the piece's bytes> <rank>",
 * ranks 0..N-1. The rank is the piece's id and its merge priority (lower
 * merges first). GPT-2's file has N = 50256 ranks; <|endoftext|> is 50256.
 *
 * The reader is strict where tiktoken's Python reader is loose (it skips
 * empty lines, as that one does, but refuses bad base64, a rank that is not
 * a whole number, a rank or a piece seen twice, a gap in the ranks, or a
 * missing single byte), and names the line. */
#define _POSIX_C_SOURCE 200809L /* fdopen */
#include "text_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/file_internal.h"

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
    int64_t off; /* into the decoded bytes */
    int32_t len, line, rank;
} line_piece;

/* Grows *p (of *cap elements of size es) to hold at least need; -1 out of memory. */
static int grow(void **p, size_t *cap, size_t need, size_t es)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = tg_realloc(*p, c * es);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* Lines from a file read in blocks: a line inside the block is returned
 * where it is, one that spans blocks is gathered in line (grown to the
 * longest such line). */
#define BLOCK 65536
typedef struct line_reader {
    FILE *f;
    char *buf, *line;
    size_t at, end, line_cap;
    bool eof;
} line_reader;

/* The next line's length (without its '\n') and *out, -1 at the end of the
 * file, -2 out of memory. */
static int64_t next_line(line_reader *r, const char **out)
{
    size_t len = 0;
    bool any = false;
    for (;;) {
        if (r->at == r->end) {
            if (r->eof) break;
            r->end = fread(r->buf, 1, BLOCK, r->f);
            r->at = 0;
            r->eof = r->end < BLOCK;
            if (!r->end) break;
        }
        any = true;
        const char *s = r->buf + r->at, *nl = memchr(s, '\n', r->end - r->at);
        const size_t take = nl ? (size_t)(nl - s) : r->end - r->at;
        r->at += take + (nl ? 1 : 0);
        if (nl && !len) { /* the whole line is in the block */
            *out = s;
            return (int64_t)take;
        }
        if (len + take + 1 > r->line_cap) {
            size_t c = r->line_cap ? r->line_cap : BLOCK;
            while (c < len + take + 1) c *= 2;
            char *q = tg_realloc(r->line, c);
            if (!q) return -2;
            r->line = q;
            r->line_cap = c;
        }
        memcpy(r->line + len, s, take);
        len += take;
        if (nl) break;
    }
    if (!any) return -1;
    *out = r->line;
    return (int64_t)len;
}

/* The file is read a line at a time (in blocks), and only the pieces' lines cost
 * memory: their decoded bytes and one entry each (an entry for every line,
 * blank ones too, would take 1.1 GB for 64 MB of newlines). */
tg_tokenizer *tg_tok_load_tiktoken(const char *path, tg_error *err)
{
    if (!path) {
        tg_error_set(err, "tiktoken: NULL path");
        return NULL;
    }
    tg_tokenizer *t = NULL;
    line_reader lr = {0};
    unsigned char *bytes = NULL;
    line_piece *pieces = NULL;
    int32_t *by_rank = NULL;
    int64_t *off = NULL;
    /* a regular file: a FIFO or a device (/dev/zero, one endless line) is refused unread */
    const char *why = NULL;
    size_t size = 0;
    const int fd = tg_open_regular(path, &size, &why);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        tg_error_set(err, "tiktoken: %s: %s", path, fd < 0 ? why : strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    lr.f = f;
    if (!(lr.buf = tg_malloc(BLOCK))) goto oom;
    size_t bytes_cap = 0, pieces_cap = 0;
    int32_t n = 0;
    int64_t nb = 0;
    int64_t line = 0;
    for (;;) {
        const char *text;
        int64_t got = next_line(&lr, &text);
        if (got == -2) goto oom;
        if (got < 0) break;
        if (++line > (1 << 30)) {
            tg_error_set(err, "tiktoken: %s: more than 2^30 lines", path);
            goto fail;
        }
        size_t end = (size_t)got;
        if (end && text[end - 1] == '\r') end--;
        if (!end) continue; /* an empty line, skipped as tiktoken does */
        size_t sp = 0;
        while (sp < end && text[sp] != ' ') sp++;
        if (grow((void **)&bytes, &bytes_cap, (size_t)nb + sp, 1) ||
            grow((void **)&pieces, &pieces_cap, (size_t)n + 1, sizeof *pieces))
            goto oom;
        /* an empty piece (the line starts with its space) is refused before
         * bytes, still NULL for a first line, is offset */
        int64_t k = sp > 0 && sp < end ? b64_decode((const unsigned char *)text, sp, bytes + nb) : -1;
        if (k <= 0) {
            tg_error_set(err, "tiktoken: %s:%lld: expected \"<base64 piece> <rank>\"%s", path, (long long)line,
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
        if (rank < 0 || rank > (1 << 30)) {
            tg_error_set(err, "tiktoken: %s:%lld: the rank \"%.*s\" is not a whole number up to 2^30", path,
                         (long long)line, (int)(end - sp - 1 > 20 ? 20 : end - sp - 1), text + sp + 1);
            goto fail;
        }
        if (n == (1 << 30)) {
            tg_error_set(err, "tiktoken: %s: more than 2^30 pieces", path);
            goto fail;
        }
        pieces[n++] = (line_piece){nb, (int32_t)k, (int32_t)line, (int32_t)rank};
        nb += k;
    }
    if (ferror(f)) {
        tg_error_set(err, "tiktoken: %s: read error", path);
        goto fail;
    }
    if (n == 0) {
        tg_error_set(err, "tiktoken: %s: no pieces", path);
        goto fail;
    }
    /* the ranks: each of 0..n-1 once */
    if (!(by_rank = tg_calloc((size_t)n, sizeof *by_rank))) goto oom; /* index + 1 into pieces */
    for (int32_t i = 0; i < n; i++) {
        const int32_t rk = pieces[i].rank;
        if (rk >= n) continue;
        if (by_rank[rk]) {
            tg_error_set(err, "tiktoken: %s:%d: rank %d was given already on line %d", path, (int)pieces[i].line,
                         (int)rk, (int)pieces[by_rank[rk] - 1].line);
            goto fail;
        }
        by_rank[rk] = i + 1;
    }
    for (int32_t r = 0; r < n; r++)
        if (!by_rank[r]) {
            int32_t beyond = 0;
            while (pieces[beyond].rank < n) beyond++; /* n pieces, a rank missing: one is beyond n - 1 */
            tg_error_set(err,
                         "tiktoken: %s: rank %d is missing (%d pieces must have ranks 0..%d; line %d has "
                         "rank %d)",
                         path, (int)r, (int)n, (int)n - 1, (int)pieces[beyond].line, (int)pieces[beyond].rank);
            goto fail;
        }
    /* pieces in rank order, then <|endoftext|> */
    unsigned char *ordered = tg_malloc((size_t)nb + 1);
    off = tg_malloc(((size_t)n + 1) * sizeof *off);
    if (!ordered || !off) {
        tg_free(ordered);
        goto oom;
    }
    int64_t o = 0;
    for (int32_t r = 0; r < n; r++) {
        off[r] = o;
        const line_piece *lp = &pieces[by_rank[r] - 1];
        memcpy(ordered + o, bytes + lp->off, (size_t)lp->len);
        o += lp->len;
    }
    off[n] = o;
    char what[600];
    snprintf(what, sizeof what, "tiktoken: %s", path);
    t = tg_tok_tiktoken_new(n, ordered, off, what, err);
    tg_free(ordered);
    if (!t) goto fail;
    goto done;
oom:
    tg_error_set(err, "tiktoken: %s: out of memory", path);
fail:
    tg_tok_free(t);
    t = NULL;
done:
    fclose(f);
    tg_free(lr.buf);
    tg_free(lr.line);
    tg_free(bytes);
    tg_free(pieces);
    tg_free(by_rank);
    tg_free(off);
    return t;
}

tg_tokenizer *tg_tok_tiktoken_new(int32_t n, const unsigned char *bytes, const int64_t *off, const char *what,
                                  tg_error *err)
{
    static const char EOT[] = "<|endoftext|>";
    tg_tokenizer *t = NULL;
    unsigned char *all = tg_malloc((size_t)off[n] + sizeof EOT);
    int64_t *o = tg_malloc(((size_t)n + 2) * sizeof *o);
    uint8_t *special = tg_calloc((size_t)n + 1, 1);
    if (!all || !o || !special) goto oom;
    memcpy(all, bytes, (size_t)off[n]);
    memcpy(o, off, ((size_t)n + 1) * sizeof *o);
    memcpy(all + off[n], EOT, sizeof EOT - 1);
    o[n + 1] = off[n] + (int64_t)sizeof EOT - 1;
    special[n] = 1;
    if (!(t = tg_tok_build(TG_TOK_TIKTOKEN, n + 1, all, o, special, what, err))) goto done;
    t->eos = n;
    t->whole_word_first = true;
    const size_t pl = strlen(TG_GPT2_PATTERN) + 1;
    if (!(t->pattern = tg_malloc(pl))) goto oom;
    memcpy(t->pattern, TG_GPT2_PATTERN, pl);
    if (tg_tok_compile_pattern(t, what, err)) {
        tg_tok_free(t);
        t = NULL;
    }
    goto done;
oom:
    tg_error_set(err, "%s: out of memory", what);
    tg_tok_free(t);
    t = NULL;
done:
    tg_free(all);
    tg_free(o);
    tg_free(special);
    return t;
}
