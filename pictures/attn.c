/* A model's attention maps over a text: the weights every layer and head
 * give (tg_model_forward hands them back), a label for each position,
 * and the files: one PNG per map and the page (see pictures.h). */
#include "pictures.h"

#include <stdio.h>
#include <string.h>

#include "../core/alloc.h"
#include "../core/atomic_file.h"

/* ---- the weights --------------------------------------------------------- */

/* Copies the n_layer weights aw[l] (1,H,T,T) into a->w. 0, or -1 with a message. */
static int copy_weights(tg_attn_maps *a, tg_tensor **aw, tg_error *err)
{
    const int64_t per = (int64_t)a->n_head * a->T * a->T;
    for (int l = 0; l < a->n_layer; l++) {
        if (!aw[l] || aw[l]->numel != per)
            return tg_error_set(err, "attn_maps_init: layer %d returned no (1,%d,%d,%d) attention weights", l,
                                a->n_head, a->T, a->T);
        for (int64_t k = 0; k < per; k++) a->w[l * per + k] = tg_tensor_get(aw[l], k);
    }
    return 0;
}

int tg_attn_maps_init(tg_attn_maps *a, tg_model *m, const int32_t *ids, int T, tg_error *err)
{
    if (!a) return tg_error_set(err, "attn_maps_init: the maps are NULL");
    memset(a, 0, sizeof *a);
    if (!m || !ids) return tg_error_set(err, "attn_maps_init: a NULL argument (the model or the ids)");
    const int L = m->config.n_layer, H = m->config.n_head, block = m->config.block_size;
    if (T < 1 || T > block)
        return tg_error_set(err, "attn_maps_init: %d positions, outside [1, the model's block_size %d]", T, block);
    if (L < 1 || H < 1) return tg_error_set(err, "attn_maps_init: a model of %d layers and %d heads", L, H);
    if ((double)L * H * T * T > (double)((int64_t)1 << 40))
        return tg_error_set(err, "attn_maps_init: %d layers x %d heads of %d x %d weights: too many", L, H, T, T);
    *a = (tg_attn_maps){.n_layer = L, .n_head = H, .T = T};
    a->w = tg_malloc((size_t)L * H * T * T * sizeof *a->w);
    a->blocked = tg_malloc((size_t)T * T);
    tg_tensor **aw = tg_calloc((size_t)L, sizeof *aw);
    tg_graph *g = tg_graph_new();
    int rc = -1;
    if (!a->w || !a->blocked || !aw || !g) {
        tg_error_set(err, "attn_maps_init: out of memory");
    } else {
        /* the forward pass, keeping every layer's weights (1,H,T,T) */
        tg_graph_set_grad_enabled(g, false);
        tg_graph_set_training(g, false);
        tg_tensor *idx = tg_tensor_from(g, TG_I32, 2, (int[]){1, T}, ids); /* (1,T) */
        if (!tg_model_forward(g, m, idx, aw)) tg_error_set(err, "attn_maps_init: %s", tg_graph_error(g));
        else rc = copy_weights(a, aw, err);
    }
    for (int i = 0; rc == 0 && i < T; i++)
        for (int j = 0; j < T; j++) a->blocked[(size_t)i * T + j] = j > i; /* causal: query i sees keys 0..i */
    tg_graph_free(g);
    tg_free(aw);
    if (rc) tg_attn_maps_release(a);
    return rc;
}

void tg_attn_maps_release(tg_attn_maps *a)
{
    if (!a) return;
    tg_free(a->w);
    tg_free(a->blocked);
    memset(a, 0, sizeof *a);
}

/* ---- the labels ---------------------------------------------------------- */

/* Every byte, for labels that point at one. */
static const char BYTES[256] = {
#define BYTES4(k) (char)(k), (char)((k) + 1), (char)((k) + 2), (char)((k) + 3)
#define BYTES16(k) BYTES4(k), BYTES4((k) + 4), BYTES4((k) + 8), BYTES4((k) + 12)
#define BYTES64(k) BYTES16(k), BYTES16((k) + 16), BYTES16((k) + 32), BYTES16((k) + 48)
    BYTES64(0), BYTES64(64), BYTES64(128), BYTES64(192)
#undef BYTES64
#undef BYTES16
#undef BYTES4
};

/* The next number of a TG_VOCAB_IDS text as written, from *at on (a NUL
 * ends the text): its label, *at moved past it; {NULL, 0} when the text
 * has no more. */
static tg_heatmap_label next_number(const char *text, size_t len, size_t *at)
{
    size_t i = *at;
    while (i < len && text[i] && strchr(" \n\t", text[i])) i++;
    size_t j = i;
    while (j < len && text[j] && !strchr(" \n\t", text[j])) j++;
    *at = j;
    return j > i ? (tg_heatmap_label){text + i, (int)(j - i), false} : (tg_heatmap_label){NULL, 0, false};
}

tg_heatmap_label *tg_attn_labels(const tg_vocab *v, const int32_t *ids, int64_t n, const char *text, size_t len,
                                 tg_error *err)
{
    if (!v || !ids) return tg_error_set(err, "attn_labels: a NULL argument (the vocabulary or the ids)"), NULL;
    if (n < 1) return tg_error_set(err, "attn_labels: %lld ids: at least 1", (long long)n), NULL;
    if (v->kind == TG_VOCAB_TOKENIZER && !v->tok)
        return tg_error_set(err, "attn_labels: the vocabulary has no tokenizer"), NULL;
    if (v->kind == TG_VOCAB_IDS && !text)
        return tg_error_set(err, "attn_labels: a model of token ids labels them from the text, and it is NULL"), NULL;
    tg_heatmap_label *lab = tg_malloc((size_t)n * sizeof *lab);
    if (!lab) return tg_error_set(err, "attn_labels: out of memory for %lld labels", (long long)n), NULL;
    const bool llama = v->kind == TG_VOCAB_LLAMA2C || (v->kind == TG_VOCAB_TOKENIZER && v->docs);
    const int32_t bos = v->kind == TG_VOCAB_TOKENIZER ? tg_tok_bos(v->tok) : TG_VOCAB_BOS;
    size_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        const int32_t id = ids[i];
        if (id < 0 || id >= v->size) {
            tg_free(lab);
            return tg_error_set(err, "attn_labels: id %d at position %lld is outside the vocabulary's %d", id,
                                (long long)i, v->size),
                   NULL;
        }
        if (llama && i == 0 && id == bos) {
            lab[i] = (tg_heatmap_label){"BOS", 3, true};
        } else if (v->kind == TG_VOCAB_TOKENIZER) {
            size_t l = 0;
            const unsigned char *piece = tg_tok_piece(v->tok, id, &l); /* an id past the tokenizer's: no bytes */
            lab[i] = (tg_heatmap_label){piece ? (const char *)piece : "", piece ? (int)l : 0, false};
        } else if (v->kind == TG_VOCAB_IDS) { /* the numbers as the text writes them */
            if (!(lab[i] = next_number(text, len, &at)).s) {
                tg_free(lab);
                return tg_error_set(err, "attn_labels: the text writes %lld ids, fewer than the %lld given",
                                    (long long)i, (long long)n),
                       NULL;
            }
        } else { /* a byte: llama2.c's id 3 + b, or the i-th byte of a text's vocabulary */
            const int b = v->kind == TG_VOCAB_LLAMA2C ? id - 3 : v->chars[id];
            lab[i] = (tg_heatmap_label){BYTES + (b >= 0 && b < 256 ? b : 0), 1, false};
        }
    }
    return lab;
}

/* ---- the files ----------------------------------------------------------- */

tg_heatmap tg_attn_heatmap(const tg_attn_maps *a, int layer, int head, const tg_heatmap_label *labels)
{
    tg_heatmap m = {0};
    if (!a || !a->w || !labels || layer < 0 || layer >= a->n_layer || head < 0 || head >= a->n_head) return m;
    m.w = a->w + ((size_t)layer * a->n_head + head) * a->T * a->T;
    m.blocked = a->blocked;
    m.Tq = m.Tk = a->T;
    m.q = m.k = labels;
    snprintf(m.title, sizeof m.title, "layer %d, head %d", layer, head);
    return m;
}

/* Stages data as the file dir/name: a temporary beside it, whole and
 * synced, into f. 0, or -1 with a message (nothing left behind). */
static int stage(tg_atomic_file *f, const char *dir, const char *name, const void *data, size_t len, tg_error *err)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return tg_error_set(err, "attn_write: the directory's name is too long: %.200s...", dir);
    if (tg_atomic_begin(f, path, err) || tg_atomic_write(f, data, len, err) || tg_atomic_finish(f, err)) {
        tg_atomic_abort(f);
        return tg_error_prefix(err, "attn_write");
    }
    return 0;
}

int tg_attn_write(const tg_attn_maps *a, const tg_heatmap_label *labels, const char *unit, const char *dir,
                  tg_error *err)
{
    if (!dir) return tg_error_set(err, "attn_write: the directory is NULL");
    size_t html_len = 0;
    char *html = tg_attn_page_html(a, labels, unit, &html_len, err); /* checks a, labels and unit */
    if (!html) return -1;
    const int n = a->n_layer * a->n_head;
    tg_atomic_file *files = tg_calloc((size_t)n + 1, sizeof *files);
    int staged = 0, rc = files ? 0 : tg_error_set(err, "attn_write: out of memory");
    for (int l = 0; rc == 0 && l < a->n_layer; l++)
        for (int h = 0; rc == 0 && h < a->n_head; h++) {
            const tg_heatmap m = tg_attn_heatmap(a, l, h, labels);
            uint8_t *png = NULL;
            size_t len = 0;
            char name[64];
            rc = tg_heatmap_png(&m, &png, &len, err);
            if (rc == 0) rc = stage(&files[staged], dir, tg_attn_png_name(l, h, name, sizeof name), png, len, err);
            staged += rc == 0;
            tg_free(png);
        }
    if (rc == 0) rc = stage(&files[staged], dir, "index.html", html, html_len, err);
    staged += rc == 0;
    /* every file is whole beside its name: now the renames */
    for (int i = 0; rc == 0 && i < staged; i++)
        if (tg_atomic_commit(&files[i], err)) rc = tg_error_prefix(err, "attn_write");
    for (int i = 0; files && i < staged; i++) tg_atomic_abort(&files[i]); /* a committed one: nothing */
    tg_free(files);
    tg_free(html);
    return rc;
}
