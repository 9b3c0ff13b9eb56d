/* tiny_gpt train on several processes (see ranks.h). */
#include "ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tapegrad.h"

int ranks_agree(const char *cmd, bool failed, const char *err)
{
    if (tg_dist_size() == 1) {
        if (failed) fprintf(stderr, "tiny_gpt %s: %s\n", cmd, err);
        return failed ? -1 : 0;
    }
    int64_t n = failed;
    tg_dist_allreduce_i64(&n, 1, TG_DIST_SUM);
    if (!n) return 0;
    char msg[8192];
    snprintf(msg, sizeof msg, "%s", failed ? err : "");
    int who = tg_dist_first_failure(failed, msg, sizeof msg);
    if (tg_dist_rank() == 0) {
        if (n == tg_dist_size()) fprintf(stderr, "tiny_gpt %s: %s\n", cmd, msg);
        else fprintf(stderr, "tiny_gpt %s: rank %d: %s\n", cmd, who, msg);
    }
    return -1;
}

/* A field's name for a message: the flag for one of the run's settings
 * ("--lr"), else the key as it is ("n_layer", "weights"). */
static void field_name(const char *key, char *buf, size_t size)
{
    if (!strcmp(key, "train.data_bytes")) snprintf(buf, size, "the data's size in bytes");
    else if (!strcmp(key, "train.data_checksum")) snprintf(buf, size, "the data's checksum");
    else if (!strncmp(key, "train.", 6)) {
        snprintf(buf, size, "--%s", key + 6);
        for (char *p = buf + 2; *p; p++)
            if (*p == '_') *p = '-';
    } else {
        snprintf(buf, size, "%s", key);
    }
}

int ranks_check_same(const kv_list *fields, char *err, size_t errlen)
{
    if (tg_dist_size() == 1) return 0;
    /* rank 0's fields, "key\0value\0..." */
    size_t len = 0;
    for (int i = 0; i < 2 * fields->n; i++) len += strlen(fields->kv[i]) + 1;
    int64_t n = (int64_t)len;
    tg_dist_bcast(&n, sizeof n, 0);
    char *mine = malloc(len), *zero = malloc((size_t)n + 1);
    if (!mine || !zero) ranks_abort("train", "out of memory comparing the run with rank 0's");
    size_t at = 0;
    for (int i = 0; i < 2 * fields->n; i++) {
        size_t l = strlen(fields->kv[i]) + 1;
        memcpy(mine + at, fields->kv[i], l);
        at += l;
    }
    if (tg_dist_rank() == 0) memcpy(zero, mine, len);
    tg_dist_bcast(zero, (size_t)n, 0);
    zero[n] = 0;
    /* the first field of this rank that differs from rank 0's */
    char msg[4096] = "";
    const char *z = zero, *zend = zero + n;
    for (int i = 0; i < fields->n && !*msg; i++) {
        const char *key = fields->kv[2 * i], *val = fields->kv[2 * i + 1];
        char name[160];
        field_name(key, name, sizeof name);
        if (z >= zend || strcmp(z, key)) {
            snprintf(msg, sizeof msg, "its run has %s where rank 0's has %s (a different tiny_gpt?)", name,
                     z < zend ? z : "nothing");
            break;
        }
        z += strlen(z) + 1;
        const char *zv = z < zend ? z : "";
        z += strlen(zv) + 1;
        if (strcmp(zv, val))
            snprintf(msg, sizeof msg, "%s is %s here but %s on rank 0; every process must train the same run on "
                                      "the same data and checkpoint", name, val, zv);
    }
    free(mine);
    free(zero);
    int who = tg_dist_first_failure(*msg != 0, msg, sizeof msg);
    if (who < 0) return 0;
    snprintf(err, errlen, "rank %d: %s", who, msg);
    return -1;
}

void ranks_abort(const char *cmd, const char *err)
{
    char msg[8400];
    snprintf(msg, sizeof msg, "tiny_gpt %s: rank %d: %s", cmd, tg_dist_rank(), err);
    tg_dist_abort(1, msg);
}

bool ranks_fault_nan(int64_t step)
{
    static int64_t at = -2;   /* -2: not read yet; -1: none */
    if (at == -2) {
        const char *v = getenv("TINY_GPT_FAULT");
        at = v && !strncmp(v, "nan:", 4) ? strtoll(v + 4, NULL, 10) : -1;
    }
    return at >= 0 && step == at;
}
