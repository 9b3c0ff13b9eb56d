/* Token files other programs write: nanoGPT's prepare.py output (the ids
 * as raw little-endian uint16, nothing else) and llm.c's .bin shards
 * (dev/data/data_common.py: 256 little-endian int32 -- magic 20240520,
 * version, token count, zeros -- then the ids, uint16 for version 1 (GPT-2)
 * and uint32 for version 2 (Llama 3)).
 *
 * Telling them apart: a raw file has no header, so any bytes may start
 * it; its first two ids would have to be 55432 and 308 (0xD888, 0x0134)
 * to spell llm.c's magic, which no GPT-2 file can (55432 >= 50257) but a
 * larger vocabulary's could. The rule: TG_TOKFILE_AUTO reads a file that
 * starts with the magic as llm.c's and holds it to that header (a
 * mismatch is an error that says how to read it as raw instead);
 * anything else is raw.
 *
 * The file is mapped, not copied (nanoGPT's OpenWebText train.bin is 17
 * GB), and checked once when opened: every id below the vocabulary size. */
#define _POSIX_C_SOURCE 200809L
#include "text_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/file_internal.h"

#define LLMC_HEADER 1024 /* 256 int32 */

struct tg_tokfile {
    const unsigned char *map;
    size_t size;
    const unsigned char *ids; /* first id */
    int width; /* bytes per id: 2 or 4 */
    int64_t n;
    tg_tokfile_format format;
};

static uint32_t rd(const unsigned char *p, int width)
{
    return width == 2 ? (uint32_t)p[0] | (uint32_t)p[1] << 8
                      : (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

tg_tokfile *tg_tokfile_open(const char *path, tg_tokfile_format format, int64_t vocab_size, tg_error *err)
{
    if (!path || vocab_size < 1 || format < TG_TOKFILE_AUTO || format > TG_TOKFILE_LLMC) {
        tg_error_set(err, "token file: %s",
                     !path                ? "NULL path"
                         : vocab_size < 1 ? "vocab_size must be >= 1"
                                          : "unknown format");
        return NULL;
    }
    /* ids are read as int32 (tg_tokfile_read): an id of 2^31 or more would come back negative */
    if (vocab_size > TG_TOKFILE_MAX_VOCAB) {
        tg_error_set(err, "token file %s: vocab_size %lld is above 2^31 (%lld): ids are read as int32", path,
                     (long long)vocab_size, (long long)TG_TOKFILE_MAX_VOCAB);
        return NULL;
    }
    const char *why = NULL;
    size_t size = 0;
    int fd = tg_open_regular(path, &size, &why); /* a FIFO would block a plain open */
    if (fd < 0) {
        tg_error_set(err, "token file %s: %s", path, why);
        return NULL;
    }
    if (size == 0) {
        tg_error_set(err, "token file %s: the file is empty", path);
        close(fd);
        return NULL;
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        tg_error_set(err, "token file %s: mmap: %s", path, strerror(errno));
        return NULL;
    }
    tg_tokfile *f = tg_calloc(1, sizeof *f);
    if (!f) {
        munmap(map, size);
        tg_error_set(err, "token file %s: out of memory", path);
        return NULL;
    }
    f->map = map;
    f->size = size;
    const unsigned char *b = map;
    bool magic = size >= 4 && rd(b, 4) == TG_LLMC_MAGIC;
    if (format == TG_TOKFILE_LLMC || (format == TG_TOKFILE_AUTO && magic)) {
        const char *raw_hint = format == TG_TOKFILE_AUTO
            ? " (if it is a raw uint16 file whose first ids are 55432 308, "
              "open it as nanoGPT's format)"
            : "";
        if (size < LLMC_HEADER) {
            tg_error_set(err, "token file %s: %zu bytes, shorter than llm.c's 1024-byte header%s", path, size,
                         raw_hint);
            goto fail;
        }
        if (!magic) {
            tg_error_set(err, "token file %s: offset 0: magic %u is not llm.c's %d", path, rd(b, 4), TG_LLMC_MAGIC);
            goto fail;
        }
        uint32_t version = rd(b + 4, 4);
        int32_t count = (int32_t)rd(b + 8, 4);
        if (version != 1 && version != 2) {
            tg_error_set(err, "token file %s: offset 4: llm.c version %u (known: 1, uint16 ids; 2, uint32 ids)%s", path,
                         version, raw_hint);
            goto fail;
        }
        f->width = version == 1 ? 2 : 4;
        if (count < 1) {
            tg_error_set(err, "token file %s: offset 8: the header says %d tokens, and a file holds at least one%s",
                         path, count, raw_hint);
            goto fail;
        }
        uint64_t want = (uint64_t)LLMC_HEADER + (uint64_t)count * (uint64_t)f->width;
        if (want != size) {
            tg_error_set(err,
                         "token file %s: offset 8: the header says %d tokens (%llu bytes in all) but the file has %zu "
                         "bytes%s%s",
                         path, count, (unsigned long long)want, size, want > size ? ": truncated" : "", raw_hint);
            goto fail;
        }
        f->ids = b + LLMC_HEADER;
        f->n = count;
        f->format = TG_TOKFILE_LLMC;
    } else {
        if (size % 2) {
            tg_error_set(err, "token file %s: %zu bytes is not a whole number of uint16 ids (truncated?)", path, size);
            goto fail;
        }
        f->width = 2;
        f->ids = b;
        f->n = (int64_t)(size / 2);
        f->format = TG_TOKFILE_NANOGPT;
    }
    for (int64_t i = 0; i < f->n; i++) {
        uint32_t id = rd(f->ids + i * f->width, f->width);
        if (id >= (uint64_t)vocab_size) {
            tg_error_set(err, "token file %s: offset %lld (token %lld): id %u is not below the vocabulary size %lld",
                         path, (long long)(f->ids - b + i * f->width), (long long)i, id, (long long)vocab_size);
            goto fail;
        }
    }
    return f;
fail:
    tg_tokfile_free(f);
    return NULL;
}

void tg_tokfile_free(tg_tokfile *f)
{
    if (!f) return;
    if (f->map) munmap((void *)f->map, f->size);
    tg_free(f);
}

int64_t tg_tokfile_count(const tg_tokfile *f) { return f ? f->n : 0; }
tg_tokfile_format tg_tokfile_format_of(const tg_tokfile *f) { return f ? f->format : TG_TOKFILE_AUTO; }

int tg_tokfile_read(const tg_tokfile *f, int64_t start, int64_t n, int32_t *out)
{
    if (!f || (!out && n) || start < 0 || n < 0 || start > f->n || n > f->n - start) return -1;
    const unsigned char *p = f->ids + start * f->width;
    for (int64_t i = 0; i < n; i++) out[i] = (int32_t)rd(p + i * f->width, f->width);
    return 0;
}

static void put(unsigned char *p, uint32_t v, int width)
{
    for (int k = 0; k < width; k++) p[k] = (unsigned char)(v >> (8 * k));
}

int tg_tokfile_write(const char *path, tg_tokfile_format format, const int32_t *ids, int64_t n, tg_error *err)
{
    if (!path || (!ids && n) || n < 0 || (format != TG_TOKFILE_NANOGPT && format != TG_TOKFILE_LLMC)) {
        tg_error_set(err, "token file: %s",
                     !path || (!ids && n) ? "NULL argument"
                         : n < 0          ? "negative count"
                                          : "format must be NANOGPT or LLMC");
        return -1;
    }
    bool wide = false;
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (format == TG_TOKFILE_NANOGPT && ids[i] > 65535)) {
            tg_error_set(err, "token file %s: id %d at %lld does not fit in %s", path, (int)ids[i], (long long)i,
                         ids[i] < 0 ? "an unsigned id" : "uint16 (nanoGPT's format)");
            return -1;
        }
        wide |= ids[i] > 65535;
    }
    if (format == TG_TOKFILE_LLMC && n > INT32_MAX) {
        tg_error_set(err, "token file %s: %lld tokens do not fit llm.c's int32 count", path, (long long)n);
        return -1;
    }
    int width = wide ? 4 : 2;
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp) {
        tg_error_set(err, "token file: path too long");
        return -1;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        tg_error_set(err, "token file %s: %s", path, strerror(errno));
        return -1;
    }
    FILE *f = fdopen(fd, "wb");
    bool ok = f != NULL;
    if (ok && format == TG_TOKFILE_LLMC) {
        unsigned char h[LLMC_HEADER] = {0};
        put(h, TG_LLMC_MAGIC, 4);
        put(h + 4, wide ? 2 : 1, 4);
        put(h + 8, (uint32_t)n, 4);
        ok = fwrite(h, 1, sizeof h, f) == sizeof h;
    }
    unsigned char buf[8192];
    for (int64_t i = 0; ok && i < n;) {
        size_t k = 0;
        for (; i < n && k + 4 <= sizeof buf; i++, k += (size_t)width) put(buf + k, (uint32_t)ids[i], width);
        ok = fwrite(buf, 1, k, f) == k;
    }
    if (f) ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
    if (f ? fclose(f) != 0 : close(fd) != 0) ok = false;
    if (ok && rename(tmp, path) != 0) ok = false;
    if (!ok) {
        tg_error_set(err, "token file %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
