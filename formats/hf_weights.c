/* A Hugging Face directory's weights (hf_weights_internal.h): one
 * model.safetensors, or shards and their index, each file checked as
 * tg_st_load checks one. */
#include "hf_weights_internal.h"

#include <cJSON.h>
#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/err_internal.h"
#include "../core/stb_ds_internal.h"
#include "hf_files_internal.h"

#define HF_MAX_SHARDS 4096

void tg_hf_weights_free(hf_weights *w)
{
    for (ptrdiff_t i = 0; i < stbds_arrlen(w->files); i++) {
        tg_st_free(w->files[i]);
        tg_free(w->names[i]);
    }
    stbds_arrfree(w->files);
    stbds_arrfree(w->names);
    stbds_shfree(w->where);
    memset(w, 0, sizeof *w);
}

static int weights_add_file(hf_weights *w, const char *dir, const char *name, tg_error *err)
{
    if (tg_hf_stat(dir, name, err) < 0) return -1; /* tg_st_load's open would wait on a pipe */
    char *p = tg_hf_path(dir, name), *copy = tg_malloc(strlen(name) + 1);
    tg_st_file *f = p && copy ? tg_st_load(p, err) : NULL;
    if (!p || !copy) tg_error_set(err, "hf: out of memory");
    tg_free(p);
    if (!f) {
        tg_free(copy);
        return -1;
    }
    strcpy(copy, name);
    stbds_arrput(w->files, f);
    stbds_arrput(w->names, copy);
    return 0;
}

/* A shard's name from the index: a plain file name in the directory. */
static bool shard_name_ok(const char *s)
{
    const size_t n = strlen(s);
    return n > 0 && n < 256 && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

int tg_hf_weights_open(hf_weights *w, const char *dir, tg_error *err)
{
    memset(w, 0, sizeof *w);
    stbds_sh_new_strdup(w->where);
    const int ix_there = tg_hf_stat(dir, "model.safetensors.index.json", err);
    if (ix_there < 0) return -1;
    if (!ix_there) {
        const int there = tg_hf_stat(dir, "model.safetensors", err);
        if (!there)
            return tg_error_set(err,
                                "hf: %s has neither model.safetensors nor model.safetensors.index.json "
                                "(a Hugging Face model directory holds its weights in one of them)",
                                dir);
        return there < 0 ? -1 : weights_add_file(w, dir, "model.safetensors", err);
    }
    w->indexed = true;
    cJSON *ix = tg_hf_read_json(dir, "model.safetensors.index.json", false, err);
    if (!ix) return -1;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(ix, "weight_map");
    int rc = 0;
    hf_shard_ix *file_ix = NULL; /* shard name -> index into w->files */
    stbds_sh_new_strdup(file_ix);
    if (!cJSON_IsObject(map))
        rc = tg_error_set(err, "hf: %s/model.safetensors.index.json has no \"weight_map\" object", dir);
    for (const cJSON *e = map ? map->child : NULL; !rc && e; e = e->next) {
        char shown[TG_SHOWN_SIZE];
        if (!cJSON_IsString(e) || !shard_name_ok(e->valuestring)) {
            rc = tg_error_set(err,
                              "hf: model.safetensors.index.json: tensor '%s' is in '%s', not a file name in "
                              "the directory",
                              tg_shown(e->string, shown), cJSON_IsString(e) ? e->valuestring : "(not a string)");
            break;
        }
        if (stbds_shgeti(w->where, e->string) >= 0) {
            rc = tg_error_set(err, "hf: model.safetensors.index.json: tensor '%s' appears twice",
                              tg_shown(e->string, shown));
            break;
        }
        ptrdiff_t k = stbds_shgeti(file_ix, e->valuestring);
        if (k < 0) {
            if (stbds_arrlen(w->files) == HF_MAX_SHARDS) {
                rc = tg_error_set(err, "hf: model.safetensors.index.json names more than %d files", HF_MAX_SHARDS);
                break;
            }
            if ((rc = weights_add_file(w, dir, e->valuestring, err))) break;
            stbds_shput(file_ix, e->valuestring, (int)stbds_arrlen(w->files) - 1);
            k = stbds_shgeti(file_ix, e->valuestring);
        }
        stbds_shput(w->where, e->string, file_ix[k].value);
    }
    stbds_shfree(file_ix);
    cJSON_Delete(ix);
    return rc;
}

const tg_st_tensor *tg_hf_weights_find(const hf_weights *w, const char *name)
{
    if (!w->indexed) return tg_st_find(w->files[0], name);
    const ptrdiff_t i = stbds_shgeti(((hf_weights *)w)->where, name);
    return i < 0 ? NULL : tg_st_find(w->files[w->where[i].value], name);
}

bool tg_hf_float_dtype(const char *d)
{
    return !strcmp(d, "F32") || !strcmp(d, "F64") || !strcmp(d, "F16") || !strcmp(d, "BF16");
}
