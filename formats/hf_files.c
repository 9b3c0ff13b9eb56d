/* The files of a Hugging Face model directory as the readers of
 * formats/hf*.c take them: each JSON or text file read whole, up to a
 * limit, from a regular file only (checked on the file opened, which is
 * opened without waiting on a pipe). */
#define _POSIX_C_SOURCE 200809L
#include "hf_files_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/stb_ds_internal.h"

#define HF_MAX_JSON (64u << 20) /* bytes of one JSON or merges file; GPT-2's tokenizer.json is 1.4 MB */

char *tg_hf_path(const char *dir, const char *name)
{
    const size_t a = strlen(dir), b = strlen(name);
    char *p = tg_malloc(a + b + 2);
    if (p) snprintf(p, a + b + 2, "%s/%s", dir, name);
    return p;
}

int tg_hf_stat(const char *dir, const char *name, tg_error *err)
{
    char *p = tg_hf_path(dir, name);
    if (!p) return tg_error_set(err, "hf: out of memory");
    struct stat st;
    int rc = 1;
    if (stat(p, &st))
        rc = errno == ENOENT || errno == ENOTDIR ? 0 : tg_error_set(err, "hf: %s: %s", p, strerror(errno));
    else if (!S_ISREG(st.st_mode)) rc = tg_error_set(err, "hf: %s: not a regular file", p);
    tg_free(p);
    return rc;
}

/* n bytes from fd into buf: 0, or -1 (errno set; 0 when the file ended first). */
static int read_exactly(int fd, char *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        const ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (k == 0) errno = 0;
            return -1;
        }
        got += (size_t)k;
    }
    return 0;
}

/* The whole file dir/name (NUL-terminated), at most HF_MAX_JSON bytes.
 * Opened without blocking, so that a named pipe (whose open waits for a
 * writer) is refused by the regular-file test instead of hanging. */
char *tg_hf_read_small(const char *dir, const char *name, size_t *len, tg_error *err)
{
    char *p = tg_hf_path(dir, name);
    if (!p) {
        tg_error_set(err, "hf: out of memory");
        return NULL;
    }
    const int fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    char *buf = NULL;
    struct stat st;
    if (fd < 0) tg_error_set(err, "hf: %s: %s", p, strerror(errno));
    else if (fstat(fd, &st) || !S_ISREG(st.st_mode)) tg_error_set(err, "hf: %s: not a regular file", p);
    else if ((uint64_t)st.st_size > HF_MAX_JSON)
        tg_error_set(err, "hf: %s: %lld bytes, more than the %u this reader takes", p, (long long)st.st_size,
                     HF_MAX_JSON);
    else if (!(buf = tg_malloc((size_t)st.st_size + 1))) tg_error_set(err, "hf: out of memory");
    else if (read_exactly(fd, buf, (size_t)st.st_size)) {
        tg_error_set(err, "hf: %s: read failed: %s", p, errno ? strerror(errno) : "the file got shorter");
        tg_free(buf);
        buf = NULL;
    } else {
        buf[st.st_size] = 0;
        *len = (size_t)st.st_size;
    }
    if (fd >= 0) close(fd);
    tg_free(p);
    return buf;
}

/* JSON's whitespace, the only bytes Python's json.loads takes around a value. */
static bool json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

typedef struct key_ix {
    char *key;
    cJSON *value;
} key_ix; /* stb_ds string map */

/* Python's json keeps the last value of a key an object repeats: the
 * earlier ones are dropped, in o and every object inside it. Each
 * object's keys go through a map, so a long object costs time in
 * proportion to it (cJSON nests at most CJSON_NESTING_LIMIT deep). */
static void last_key_wins(cJSON *o)
{
    if (cJSON_IsObject(o)) {
        key_ix *seen = NULL;
        stbds_sh_new_arena(seen);
        for (cJSON *c = o->child, *next; c; c = next) {
            next = c->next;
            const ptrdiff_t i = stbds_shgeti(seen, c->string);
            if (i >= 0) {
                cJSON_Delete(cJSON_DetachItemViaPointer(o, seen[i].value));
                seen[i].value = c;
            } else {
                stbds_shput(seen, c->string, c);
            }
        }
        stbds_shfree(seen);
    }
    for (cJSON *c = cJSON_IsObject(o) || cJSON_IsArray(o) ? o->child : NULL; c; c = c->next) last_key_wins(c);
}

/* dir/name parsed as a JSON object, refused where Python's json.loads
 * (transformers' reader) and the tokenizers library refuse it too: a
 * UTF-8 byte-order mark before it, bytes but whitespace after it. */
cJSON *tg_hf_read_json(const char *dir, const char *name, bool last_wins, tg_error *err)
{
    size_t len = 0;
    char *text = tg_hf_read_small(dir, name, &len, err);
    if (!text) return NULL;
    const char *end = NULL;
    cJSON *j = NULL;
    size_t lead = 0;
    while (lead < len && json_space(text[lead])) lead++;
    if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) {
        tg_error_set(err,
                     "hf: %s/%s: begins with a UTF-8 byte-order mark, which JSON does not allow (Python's "
                     "json, which transformers reads it with, refuses it too): remove the first 3 bytes",
                     dir, name);
    } else if (lead < len && text[lead] != '{') {
        tg_error_set(err, "hf: %s/%s: not a JSON object (byte %zu is not '{')", dir, name, lead);
    } else if (!(j = cJSON_ParseWithLengthOpts(text, len, &end, 0))) {
        tg_error_set(err, "hf: %s/%s: not valid JSON (error near byte %td)", dir, name, end ? end - text : 0);
    } else {
        size_t at = (size_t)(end - text);
        while (at < len && json_space(text[at])) at++;
        if (at < len) {
            tg_error_set(err,
                         "hf: %s/%s: %zu byte%s after the JSON object, from byte %zu (Python's json and the "
                         "tokenizers library refuse them too)",
                         dir, name, len - at, len - at == 1 ? "" : "s", at);
            cJSON_Delete(j);
            j = NULL;
        } else if (last_wins) {
            last_key_wins(j);
        }
    }
    tg_free(text);
    return j;
}
