/* The files of a Hugging Face model directory as the readers of
 * formats/hf.c and formats/hf_tokenizer.c take them: each JSON or text
 * file read whole, up to a limit, from a regular file only (checked on
 * the file opened, which is opened without waiting on a pipe). */
#define _POSIX_C_SOURCE 200809L
#include "hf_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"

#define HF_MAX_JSON (64u << 20)   /* bytes of one JSON or merges file; GPT-2's tokenizer.json is 1.4 MB */

char *tg_hf_path(const char *dir, const char *name)
{
    const size_t a = strlen(dir), b = strlen(name);
    char *p = tg_malloc(a + b + 2);
    if (p) snprintf(p, a + b + 2, "%s/%s", dir, name);
    return p;
}

int tg_hf_stat(const char *dir, const char *name, char *err, size_t errlen)
{
    char *p = tg_hf_path(dir, name);
    if (!p) return tg_set_err(err, errlen, "hf: out of memory");
    struct stat st;
    int rc = 1;
    if (stat(p, &st)) rc = errno == ENOENT || errno == ENOTDIR ? 0 : tg_set_err(err, errlen, "hf: %s: %s", p, strerror(errno));
    else if (!S_ISREG(st.st_mode)) rc = tg_set_err(err, errlen, "hf: %s: not a regular file", p);
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
char *tg_hf_read_small(const char *dir, const char *name, size_t *len, char *err, size_t errlen)
{
    char *p = tg_hf_path(dir, name);
    if (!p) {
        tg_set_err(err, errlen, "hf: out of memory");
        return NULL;
    }
    const int fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    char *buf = NULL;
    struct stat st;
    if (fd < 0) tg_set_err(err, errlen, "hf: %s: %s", p, strerror(errno));
    else if (fstat(fd, &st) || !S_ISREG(st.st_mode)) tg_set_err(err, errlen, "hf: %s: not a regular file", p);
    else if ((uint64_t)st.st_size > HF_MAX_JSON)
        tg_set_err(err, errlen, "hf: %s: %lld bytes, more than the %u this reader takes", p, (long long)st.st_size,
                   HF_MAX_JSON);
    else if (!(buf = tg_malloc((size_t)st.st_size + 1))) tg_set_err(err, errlen, "hf: out of memory");
    else if (read_exactly(fd, buf, (size_t)st.st_size)) {
        tg_set_err(err, errlen, "hf: %s: read failed: %s", p, errno ? strerror(errno) : "the file got shorter");
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

/* dir/name parsed as a JSON object. */
cJSON *tg_hf_read_json(const char *dir, const char *name, char *err, size_t errlen)
{
    size_t len = 0;
    char *text = tg_hf_read_small(dir, name, &len, err, errlen);
    if (!text) return NULL;
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!j) tg_set_err(err, errlen, "hf: %s/%s: not valid JSON (error near byte %td)", dir, name, end ? end - text : 0);
    else if (!cJSON_IsObject(j)) {
        tg_set_err(err, errlen, "hf: %s/%s: not a JSON object", dir, name);
        cJSON_Delete(j);
        j = NULL;
    }
    tg_free(text);
    return j;
}
