/* formats/hf_weights.c: a Hugging Face directory's weights, one
 * model.safetensors or its shards with their index, found by tensor name.
 * Not public. */
#ifndef TG_HF_WEIGHTS_INTERNAL_H
#define TG_HF_WEIGHTS_INTERNAL_H

#include <stdbool.h>

#include "../core/error.h"
#include "../core/safetensors.h"

typedef struct hf_shard_ix {
    char *key;
    int value;
} hf_shard_ix;

typedef struct hf_weights {
    tg_st_file **files; /* stb_ds array */
    char **names; /* the files' names, for messages */
    hf_shard_ix *where; /* tensor name -> file (with an index), stb_ds string map */
    bool indexed;
} hf_weights;

/* Opens dir's weights: model.safetensors, or the files
 * model.safetensors.index.json's weight_map names (plain file names in
 * dir, at most 4096, each tensor in one). 0, or -1 with a message naming
 * the file or the tensor; free w with tg_hf_weights_free either way. */
int tg_hf_weights_open(hf_weights *w, const char *dir, tg_error *err);
/* The tensor called name in whichever file holds it, or NULL. */
const tg_st_tensor *tg_hf_weights_find(const hf_weights *w, const char *name);
/* Frees what w holds; accepts a zeroed w. */
void tg_hf_weights_free(hf_weights *w);
/* A dtype the import reads as floats (F16, BF16, F32, F64). */
bool tg_hf_float_dtype(const char *d);

#endif
