/* llama2.c's tokenizer.bin as a TG_TOK_SPM tokenizer (text.h).
 *
 * The file: an int32 max_token_length, then per id a float32 score, an
 * int32 length and that many bytes, to the end of the file (the count is
 * the model's vocab_size; the file does not say it). All little-endian.
 * run.c hard-codes BOS = 1 and EOS = 2 and takes byte b's id to be
 * b + 3; the files it reads hold "<unk>", "\n<s>\n", "\n</s>\n", then
 * the 256 byte pieces ("<0xXX>", or the byte itself as tapegrad's export
 * writes a printable byte or a BPE's bytes), then the rest. So: ids 0, 1,
 * 2 are read as the UNKNOWN, BOS and EOS specials, ids 3..258 must be the
 * bytes 0..255 in order, the rest are NORMAL pieces, and the options are
 * run.c's (TG_SPM_LLAMA2C). Every read is checked against the file's
 * size before it is made, so a crafted length allocates nothing. */
#include "text_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/file_internal.h"

static int32_t rd32(const unsigned char *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

tg_tokenizer *tg_tok_load_llama2c(const char *path, int32_t vocab_size, tg_error *err)
{
    if (!path) {
        tg_error_set(err, "llama2.c tokenizer: NULL path");
        return NULL;
    }
    if (vocab_size < 0 || vocab_size > (1 << 30)) {
        tg_error_set(err, "llama2.c tokenizer: %s: vocab_size %d is not 0 (any) or 1..2^30", path, (int)vocab_size);
        return NULL;
    }
    const char *why = NULL;
    size_t len = 0;
    const int fd = tg_open_regular(path, &len, &why); /* a directory, a FIFO, a device: refused unread */
    if (fd < 0) {
        tg_error_set(err, "llama2.c tokenizer: %s: %s", path, why);
        return NULL;
    }
    unsigned char *buf = NULL, *pieces = NULL;
    int64_t *off = NULL;
    float *scores = NULL;
    uint8_t *types = NULL;
    tg_tokenizer *t = NULL;
    if (!(buf = tg_malloc(len ? len : 1)) || tg_read_exact(fd, buf, len, &why)) {
        tg_error_set(err, "llama2.c tokenizer: %s: %s", path, buf ? why : "out of memory");
        goto done;
    }
    if (len < 4) {
        tg_error_set(err, "llama2.c tokenizer: %s: %zu bytes, shorter than its 4-byte header", path, len);
        goto done;
    }
    const int32_t max_len = rd32(buf);
    /* count the entries: each is at least 8 bytes, so at most len / 8 */
    int32_t n = 0;
    size_t p = 4, longest = 0;
    while (p < len && (!vocab_size || n < vocab_size)) {
        if (len - p < 8) {
            tg_error_set(err,
                         "llama2.c tokenizer: %s: offset %zu: id %d is cut short (%zu bytes left, 8 for its "
                         "score and length)",
                         path, p, (int)n, len - p);
            goto done;
        }
        const int32_t l = rd32(buf + p + 4);
        if (l < 1 || (size_t)l > len - p - 8) {
            tg_error_set(err, "llama2.c tokenizer: %s: offset %zu: id %d has length %d (%s)", path, p + 4, (int)n,
                         (int)l, l < 1 ? "a piece has at least one byte" : "past the end of the file");
            goto done;
        }
        if ((size_t)l > longest) longest = (size_t)l;
        p += 8 + (size_t)l;
        n++;
    }
    if (vocab_size && n < vocab_size) {
        tg_error_set(err, "llama2.c tokenizer: %s: %d pieces, the model has %d ids", path, (int)n, (int)vocab_size);
        goto done;
    }
    if (p != len) { /* (only with vocab_size: else every byte was read) */
        tg_error_set(err,
                     "llama2.c tokenizer: %s: offset %zu: %zu bytes after the vocab_size %d entries (the "
                     "file has %zu): another tokenizer's, or garbage",
                     path, p, len - p, (int)n, len);
        goto done;
    }
    if (n < 259) {
        tg_error_set(err,
                     "llama2.c tokenizer: %s: %d pieces; run.c's layout has at least 259 (3 specials, then "
                     "the 256 bytes)",
                     path, (int)n);
        goto done;
    }
    if (max_len < 0 ||
        (size_t)max_len != longest) { /* run.c sizes its buffers from it; every writer puts the longest */
        tg_error_set(err,
                     "llama2.c tokenizer: %s: offset 0: max_token_length %d is not the longest piece's "
                     "length %zu",
                     path, (int)max_len, longest);
        goto done;
    }
    pieces = tg_malloc(len);
    off = tg_malloc(((size_t)n + 1) * sizeof *off);
    scores = tg_malloc((size_t)n * sizeof *scores);
    types = tg_malloc((size_t)n);
    if (!pieces || !off || !scores || !types) {
        tg_error_set(err, "llama2.c tokenizer: %s: out of memory", path);
        goto done;
    }
    p = 4;
    off[0] = 0;
    for (int32_t i = 0; i < n; i++) {
        const size_t at = p;
        memcpy(&scores[i], buf + p, 4);
        const size_t l = (size_t)rd32(buf + p + 4);
        const unsigned char *s = buf + p + 8;
        memcpy(pieces + off[i], s, l);
        off[i + 1] = off[i] + (int64_t)l;
        p += 8 + l;
        if (isnan(scores[i]) || isinf(scores[i])) {
            tg_error_set(err, "llama2.c tokenizer: %s: offset %zu: id %d scores %g: scores must be finite", path, at,
                         (int)i, (double)scores[i]);
            goto done;
        }
        if (i < 3) {
            types[i] = i ? TG_PIECE_CONTROL : TG_PIECE_UNKNOWN;
            continue;
        }
        if (i < 259) {
            const int b = i - 3;
            char want[8];
            snprintf(want, sizeof want, "<0x%02X>", b);
            const bool raw = l == 1 && s[0] == b,
                       spelled = l == 6 && !memcmp(s, want, 3) && !strncasecmp((const char *)s + 3, want + 3, 3);
            if (!raw && !spelled) {
                tg_error_set(err,
                             "llama2.c tokenizer: %s: offset %zu: id %d must be the byte 0x%02X (run.c's "
                             "ids 3 to 258 are the bytes), as \"%s\" or the byte itself",
                             path, at, (int)i, b, want);
                goto done;
            }
            types[i] = TG_PIECE_BYTE;
            continue;
        }
        if (memchr(s, 0, l)) {
            tg_error_set(err,
                         "llama2.c tokenizer: %s: offset %zu: id %d holds a NUL byte, which run.c's C "
                         "strings never match",
                         path, at, (int)i);
            goto done;
        }
        types[i] = TG_PIECE_NORMAL;
    }
    tg_error e2 = {0};
    t = tg_tok_new_spm(&(tg_spm_pieces){n, pieces, off, scores, types, 1, 2}, &TG_SPM_LLAMA2C, &e2);
    if (!t) tg_error_set(err, "llama2.c tokenizer: %s: %s", path, e2.msg);
done:
    close(fd);
    tg_free(buf);
    tg_free(pieces);
    tg_free(off);
    tg_free(scores);
    tg_free(types);
    return t;
}
