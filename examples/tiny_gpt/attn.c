/* tiny_gpt attn: attention maps of a checkpoint on a text.
 *
 * The text's characters go through the checkpoint's vocabulary as one
 * sequence (1,T), T <= block_size, in eval mode without grad; the GPT
 * forward hands back every layer's softmax weights (1,H,T,T)
 * (model_forward, any family). For each layer l and head h, OUT/attn_l<l>_h<h>.png
 * shows them as a heatmap (queries down, keys across; see heatmap.h), and
 * OUT/index.html shows all of them with the characters on the axes.
 * Every file is staged beside its final name and renamed into place only
 * once all were written (files.h): a failure leaves nothing half-done. */
#include "tiny_gpt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "files.h"
#include "heatmap.h"

int cmd_attn(int argc, char **argv)
{
    const char *ckpt = "out-tiny-gpt/best.safetensors", *text = NULL, *out = "out-tiny-gpt/attn", *dtype = "f32";
    int threads = 1;
    arg_spec specs[] = {
        {"ckpt", ARG_STRING, &ckpt, 0, 0, "checkpoint written by tiny_gpt train", 0, ROLE_NONE},
        {"text", ARG_STRING, &text, 0, 0, "text to run (characters of the vocabulary, at most block_size)", 0, ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "output directory (created if missing)", 0, ROLE_NONE},
        SPEC_DTYPE(&dtype),
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    char err[1024];
    tg_dtype dt;
    /* no --attn: asking for the weights takes the composed path */
    int setup = command_setup("attn", "--ckpt F --text S --out DIR", specs, n_specs, argc, argv, &dtype, &dt,
                              NULL, NULL, &threads);
    if (setup >= 0) return setup;

    int rc = 1;
    bool made_dir = false;
    tg_st_file *f = NULL;
    model m = {0};
    tg_graph *g = NULL;
    int32_t *ids = NULL;
    double *w = NULL;
    uint8_t *blocked = NULL, *png = NULL;
    tg_tensor **aw = NULL;
    textbuf html = {0};
    staged_files staged = {0};
    vocab v = {0};
    if (!text) {
        snprintf(err, sizeof err, "--text is required");
        goto fail;
    }
    if (!(f = tg_st_load(ckpt, err, sizeof err)) || checkpoint_load_model(f, dt, 0.0, &m, err, sizeof err) ||
        checkpoint_model_vocab(f, &m, NULL, &v, err, sizeof err))
        goto fail;
    if (v.kind == VOCAB_TOKENIZER || v.kind == VOCAB_IDS) {
        snprintf(err, sizeof err, "attn labels one character per position: this model's ids are a tokenizer's (or "
                                  "token files'), which it does not take yet");
        goto fail;
    }
    const size_t len = strlen(text);
    const int L = m.cfg.n_layer, H = model_n_head(&m);
    if (len == 0) {
        snprintf(err, sizeof err, "--text is empty; give at least one character");
        goto fail;
    }
    if (len > (size_t)m.cfg.block_size) {
        snprintf(err, sizeof err, "--text has %zu characters, more than the checkpoint's block_size %d", len,
                 m.cfg.block_size);
        goto fail;
    }
    const int T = (int)len;
    ids = malloc((size_t)T * sizeof *ids);
    w = malloc((size_t)L * H * T * T * sizeof *w);
    blocked = malloc((size_t)T * T);
    aw = calloc((size_t)L, sizeof *aw);
    g = tg_graph_new();
    if (!ids || !w || !blocked || !aw || !g) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    size_t bad = 0;
    if (vocab_encode(&v, text, len, ids, &bad) != 0) {
        snprintf(err, sizeof err, "the text's character '%c' (byte %d, offset %zu) is not in the vocabulary",
                 text[bad] >= 32 && text[bad] < 127 ? text[bad] : '?', (uint8_t)text[bad], bad);
        goto fail;
    }

    /* the forward pass, keeping every layer's weights (1,H,T,T) */
    tg_graph_set_grad_enabled(g, false);
    tg_graph_set_training(g, false);
    tg_tensor *idx = tg_tensor_from(g, TG_I32, 2, (int[]){1, T}, ids);   /* (1,T) */
    if (!model_forward(g, &m, idx, aw)) {
        snprintf(err, sizeof err, "%s", tg_graph_error(g));
        goto fail;
    }
    for (int l = 0; l < L; l++) {
        if (!aw[l] || aw[l]->numel != (int64_t)H * T * T) {
            snprintf(err, sizeof err, "layer %d returned no (1,%d,%d,%d) attention weights", l, H, T, T);
            goto fail;
        }
        for (int64_t k = 0; k < (int64_t)H * T * T; k++) w[(int64_t)l * H * T * T + k] = tg_tensor_get(aw[l], k);
    }
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) blocked[i * T + j] = j > i;   /* causal: query i sees keys 0..i */

    /* the output directory: made if missing (and removed again on failure) */
    struct stat st;
    if (stat(out, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            snprintf(err, sizeof err, "--out %s: exists and is not a directory", out);
            goto fail;
        }
    } else if (mkdir(out, 0777) != 0) {
        snprintf(err, sizeof err, "--out %s: %s", out, strerror(errno));
        goto fail;
    } else {
        made_dir = true;
    }

    /* stage every file, then rename them all into place */
    char path[4096], name[64];
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            size_t n = 0;
            char title[64];
            snprintf(title, sizeof title, "layer %d, head %d", l, h);
            if (heatmap_png(w + ((size_t)l * H + h) * T * T, blocked, T, T, text, text, title, &png, &n)) {
                snprintf(err, sizeof err, "out of memory encoding a %d x %d map", T, T);
                goto fail;
            }
            heatmap_png_name(l, h, name, sizeof name);
            snprintf(path, sizeof path, "%s/%s", out, name);
            if (staged_add(&staged, path, png, n, err, sizeof err)) goto fail;
            free(png);
            png = NULL;
        }
    heatmap_html(&html, text, T, L, H, w, blocked);
    if (html.oom) {
        snprintf(err, sizeof err, "out of memory building index.html");
        goto fail;
    }
    snprintf(path, sizeof path, "%s/index.html", out);
    if (staged_add(&staged, path, html.p, html.len, err, sizeof err) || staged_commit(&staged, err, sizeof err))
        goto fail;
    printf("wrote %d attention maps (%d layers x %d heads, %d tokens) and %s\n", L * H, L, H, T, path);
    rc = 0;
    goto done;
fail:
    staged_abort(&staged);
    if (made_dir) rmdir(out);   /* only succeeds when it is still empty */
    fprintf(stderr, "tiny_gpt attn: %s\n", err);
done:
    tb_free(&html);
    free(png);
    free(ids);
    free(w);
    free(blocked);
    free(aw);
    tg_graph_free(g);
    vocab_free(&v);
    model_free(&m);
    tg_st_free(f);
    return rc;
}
