/* safetensors files: tg_st_load on the input, then every accessor and,
 * for each small tensor, tg_st_copy_to into a tensor of its shape (every
 * dtype tapegrad holds, so the conversions and their refusals run); then
 * the model config a checkpoint's metadata holds (tg_model_config_read,
 * every family's keys and issue 23's options, and the parameter count it
 * implies); then the optimizers' state readers (tg_muon_state_read, tg_adamw_state_read)
 * on a small store, which must leave the state as it was when they
 * refuse. */
#include "fuzz_util.h"

#include <math.h>

/* One graph for the process, reset per tensor: a new graph per input
 * would map and clear a fresh 1 MiB arena each time (most of the time). */
static tg_graph *graph;
volatile unsigned fuzz_st_sink; /* where the data's bytes are summed to (read, not optimised away) */
static void free_graph(void) { tg_graph_free(graph); }

/* A store with one block matrix (2,3) and a bias (3), f32, with Muon and
 * AdamW on it (made once). */
static tg_params *store;
static tg_muon *muon;
static tg_adamw *adamw;
static void free_store(void)
{
    tg_muon_free(muon);
    tg_adamw_free(adamw);
    tg_params_free(store);
}

static void state_readers(const tg_st_file *f)
{
    if (!store && (store = tg_params_new(TG_F32, NULL))) {
        tg_params_add(store, "h.0.w", 2, (int[]){2, 3}, NULL);
        tg_params_add(store, "b", 1, (int[]){3}, NULL);
        muon = tg_muon_new(store, NULL, NULL);
        adamw = tg_adamw_new(store, NULL, NULL);
        atexit(free_store);
    }
    if (!muon || !adamw || tg_muon_numel(muon) != 6) return;
    tg_error err = {0};
    float before[6];
    memcpy(before, tg_muon_momentum(muon), sizeof before);
    const int64_t steps = tg_muon_steps(muon);
    const int rc = tg_muon_state_read(muon, f, "muon", &err);
    if (rc && (memcmp(before, tg_muon_momentum(muon), sizeof before) || tg_muon_steps(muon) != steps)) {
        fprintf(stderr, "fuzz: a refused Muon state changed the optimizer (%s)\n", err.msg);
        abort();
    }
    for (int i = 0; rc == 0 && i < 6; i++)
        if (!isfinite(((float *)tg_muon_momentum(muon))[i])) abort(); /* the reader lets no NaN in */
    (void)tg_adamw_state_read(adamw, f, "optimizer", &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write(0, "in.safetensors", data, size);
    if (!path) return 0;
    tg_error err = {0};
    tg_st_file *f = tg_st_load(path, &err);
    fuzz_report(f != NULL, err.msg);
    if (!f) return 0;
    const int n = tg_st_count(f);
    for (int i = 0; i < tg_st_meta_count(f); i++) {
        const char *v;
        const char *k = tg_st_meta_at(f, i, &v);
        if (!k || !v || tg_st_meta(f, k) == NULL) abort(); /* a listed key is found */
    }
    if (!graph && (graph = tg_graph_new())) atexit(free_graph);
    tg_graph *g = graph;
    for (int i = 0; i < n && g; i++) {
        const tg_st_tensor *e = tg_st_at(f, i);
        if (!e || tg_st_find(f, e->name) != e) abort(); /* names are unique: find gives this one */
        unsigned sum = 0; /* every byte of the data is inside the file */
        for (size_t b = 0; b < e->nbytes; b++) sum += ((const unsigned char *)e->data)[b];
        fuzz_st_sink = sum;
        if (e->numel > 4096) continue;
        int shape[TG_ST_MAX_DIMS];
        int ok = 1;
        for (int d = 0; d < e->ndim; d++) ok &= e->shape[d] <= 4096, shape[d] = (int)e->shape[d];
        if (!ok) continue;
        static const tg_dtype dts[4] = {TG_F32, TG_F64, TG_I32, TG_BOOL};
        for (int k = 0; k < 4; k++) {
            tg_tensor *t = tg_tensor_new(g, dts[k], e->ndim, shape);
            if (t) (void)tg_st_copy_to(e, t, &err);
        }
        tg_graph_reset(g); /* the arena stays small */
    }
    (void)tg_st_at(f, n);
    (void)tg_st_find(f, "");
    tg_model_config c;
    if (tg_model_config_read(f, &c, &err) == 0) (void)tg_model_num_params(&c);
    state_readers(f);
    tg_st_free(f);
    return 0;
}
