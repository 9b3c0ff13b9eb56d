/* The files of a Hugging Face model directory as the readers of
 * formats/hf.c and formats/hf_tokenizer.c take them: each JSON or text
 * file read whole, up to a limit, from a regular file only. */
#define _POSIX_C_SOURCE 200809L
#include "hf_internal.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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

bool tg_hf_file_exists(const char *dir, const char *name)
{
    char *p = tg_hf_path(dir, name);
    struct stat st;
    const bool ok = p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
    tg_free(p);
    return ok;
}

/* The whole file dir/name (NUL-terminated), at most HF_MAX_JSON bytes. */
char *tg_hf_read_small(const char *dir, const char *name, size_t *len, char *err, size_t errlen)
{
    char *p = tg_hf_path(dir, name);
    if (!p) {
        tg_set_err(err, errlen, "hf: out of memory");
        return NULL;
    }
    FILE *f = fopen(p, "rb");
    char *buf = NULL;
    struct stat st;
    if (!f) tg_set_err(err, errlen, "hf: %s: %s", p, strerror(errno));
    else if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) tg_set_err(err, errlen, "hf: %s: not a regular file", p);
    else if ((uint64_t)st.st_size > HF_MAX_JSON)
        tg_set_err(err, errlen, "hf: %s: %lld bytes, more than the %u this reader takes", p, (long long)st.st_size,
                   HF_MAX_JSON);
    else if (!(buf = tg_malloc((size_t)st.st_size + 1))) tg_set_err(err, errlen, "hf: out of memory");
    else if (fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
        tg_set_err(err, errlen, "hf: %s: read failed", p);
        tg_free(buf);
        buf = NULL;
    } else {
        buf[st.st_size] = 0;
        *len = (size_t)st.st_size;
    }
    if (f) fclose(f);
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
