/* st_edit: a test helper that copies a safetensors file with some of its
 * __metadata__ or tensors changed, to craft the files the tiny_gpt tests
 * feed back to the program.
 *
 *   st_edit IN OUT [KEY=VALUE | -KEY]...
 *
 * KEY=VALUE sets (or adds) a metadata entry; -NAME removes the metadata
 * entry or the tensor called NAME. Exit 0, or 1 with a message. */
#include <stdio.h>
#include <string.h>

#include "tapegrad.h"

static const char REMOVE[] = "";

/* The value the command line gives key (REMOVE to remove it), or NULL. */
static const char *edit_of(int argc, char **argv, const char *key)
{
    const char *found = NULL;
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && !strcmp(a + 1, key)) found = REMOVE;
        size_t n = strcspn(a, "=");
        if (a[n] == '=' && strlen(key) == n && !strncmp(a, key, n)) found = a + n + 1;
    }
    return found;
}

int main(int argc, char **argv)
{
    tg_error err = {0};
    if (argc < 3) {
        fprintf(stderr, "usage: st_edit IN OUT [KEY=VALUE | -NAME]...\n");
        return 1;
    }
    tg_st_file *f = tg_st_load(argv[1], &err);
    tg_st_writer *w = f ? tg_st_writer_new() : NULL;
    if (!w) {
        fprintf(stderr, "st_edit: %s\n", f ? "out of memory" : err.msg);
        tg_st_free(f);
        return 1;
    }
    for (int i = 0; i < tg_st_meta_count(f); i++) { /* the file's entries, edited */
        const char *v, *k = tg_st_meta_at(f, i, &v), *e = edit_of(argc, argv, k);
        if (e != REMOVE) tg_st_writer_add_meta(w, k, e ? e : v);
    }
    for (int i = 3; i < argc; i++) { /* new entries */
        size_t n = strcspn(argv[i], "=");
        if (argv[i][0] == '-' || !argv[i][n]) continue;
        argv[i][n] = 0;
        if (!tg_st_meta(f, argv[i])) tg_st_writer_add_meta(w, argv[i], argv[i] + n + 1);
        argv[i][n] = '=';
    }
    for (int i = 0; i < tg_st_count(f); i++) {
        const tg_st_tensor *e = tg_st_at(f, i);
        if (!edit_of(argc, argv, e->name)) tg_st_writer_add(w, e->name, e->dtype, e->ndim, e->shape, e->data);
    }
    int rc = tg_st_writer_save(w, argv[2], &err);
    if (rc) fprintf(stderr, "st_edit: %s\n", err.msg);
    tg_st_writer_free(w);
    tg_st_free(f);
    return rc ? 1 : 0;
}
