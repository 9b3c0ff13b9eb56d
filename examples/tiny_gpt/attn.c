/* tiny_gpt attn: attention maps of a checkpoint on a text.
 *
 * The text goes through the checkpoint's vocabulary as one sequence
 * (1,T), T <= block_size, in eval mode without grad, as the model sees it
 * in sample and eval --text (tg_prompt_ids): a Llama's text after its BOS
 * (and, for llama2.c's bytes, the dummy " "; a tokenizer's Llama encodes
 * " " + text), a GPT's as it is: its characters, or its tokenizer's
 * encoding; for a model of token ids without a tokenizer the ids, written
 * as sample's prompt is (numbers separated by spaces). Each position is
 * labelled with what it stands for: "BOS" (marked as a special token),
 * its character, its token's piece, or its id. The forward hands back
 * every layer's softmax weights (1,H,T,T) (model_forward, any family).
 * For each layer l and head h, OUT/attn_l<l>_h<h>.png shows them as a
 * heatmap (queries down, keys across; see heatmap.h), and OUT/index.html
 * shows all of them with the labels on the axes.
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

/* Every byte, for labels that point at one. */
static char BYTES[256];

/* The ids of text and a label for each (pointing into BYTES, into the
 * tokenizer's pieces, or into nums for ids): for a model of token ids
 * without a tokenizer the ids written as numbers, else the ids sample and
 * eval --text feed the model (prompt_ids: a Llama's BOS first). The
 * count, or -1 with a message; *ids, *lab and *nums are malloc'd. */
static int64_t text_ids(const tg_vocab *v, int V, int block_size, const char *text, int32_t **ids, heatmap_label **lab,
                        char **nums, char *err, size_t errlen)
{
    const size_t len = strlen(text);
    int64_t n = 0;
    *ids = NULL;
    *lab = NULL;
    *nums = NULL;
    if (!len) {
        snprintf(err, errlen, "--text is empty; give at least one %s", v->kind == TG_VOCAB_IDS ? "id" : "character");
        return -1;
    }
    if (v->kind == TG_VOCAB_IDS) {
        *ids = malloc((len / 2 + 1) * sizeof **ids);   /* an id and its space: 2 bytes at least */
        *nums = malloc(len + 1);
        if (*nums) memcpy(*nums, text, len + 1);
        for (char *p = *nums, *end; *ids && p; p = end) {
            while (*p == ' ' || *p == '\n' || *p == '\t') *p++ = 0;
            if (!*p) break;
            long id = strtol(p, &end, 10);
            if (end == p || id < 0 || id >= V || (*end && !strchr(" \n\t", *end))) {
                snprintf(err, errlen, "this model has token ids and no tokenizer: --text is ids below %d separated "
                                      "by spaces, and \"%.20s\" is not one", V, p);
                return -1;
            }
            (*ids)[n++] = (int32_t)id;
        }
        if (*ids && !*nums) n = -1;
    } else {
        tg_error e = {0};
        n = tg_prompt_ids(v, V, text, len, ids, &e);   /* tg_malloc'd: free() frees it */
        if (n < 0) return snprintf(err, errlen, "%s", e.msg), -1;
    }
    *lab = malloc((size_t)(n > 0 ? n : 1) * sizeof **lab);
    if (!*ids || !*lab || n < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const bool llama = v->kind == TG_VOCAB_LLAMA2C || (v->kind == TG_VOCAB_TOKENIZER && v->docs);
    const char *what = v->kind == TG_VOCAB_TOKENIZER ? "tokens (the checkpoint's tokenizer's)"
                       : v->kind == TG_VOCAB_IDS     ? "ids"
                                                  : "characters";
    if (n == (llama ? 1 : 0)) {   /* e.g. ids given as spaces only */
        snprintf(err, errlen, "--text is empty; give at least one %s", v->kind == TG_VOCAB_IDS ? "id" : "character");
        return -1;
    }
    if (n > block_size) {
        const int64_t head = llama ? (v->kind == TG_VOCAB_LLAMA2C ? 2 : 1) : 0;
        if (head)
            snprintf(err, errlen, "--text has %lld %s, %lld positions with the %s in front, more than the checkpoint's "
                                  "block_size %d", (long long)(n - head), what, (long long)n,
                     head == 2 ? "BOS and the space" : "BOS", block_size);
        else
            snprintf(err, errlen, "--text has %lld %s, more than the checkpoint's block_size %d", (long long)n, what,
                     block_size);
        return -1;
    }
    for (int i = 0; i < 256; i++) BYTES[i] = (char)i;
    const int32_t bos = v->kind == TG_VOCAB_TOKENIZER ? tg_tok_bos(v->tok) : TG_VOCAB_BOS;
    char *p = *nums;
    for (int64_t i = 0; i < n; i++) {
        const int32_t id = (*ids)[i];
        if (llama && i == 0 && id == bos) {
            (*lab)[i] = (heatmap_label){"BOS", 3, true};
        } else if (v->kind == TG_VOCAB_TOKENIZER) {
            size_t l = 0;
            const unsigned char *piece = tg_tok_piece(v->tok, id, &l);
            (*lab)[i] = (heatmap_label){(const char *)piece, (int)l, false};
        } else if (v->kind == TG_VOCAB_IDS) {   /* the numbers as written, NUL-separated above */
            while (!*p) p++;
            (*lab)[i] = (heatmap_label){p, (int)strcspn(p, " \n\t"), false};
            p += (*lab)[i].len;
        } else {   /* a byte: llama2.c's id 3 + b, or the i-th byte of a text's vocabulary */
            const int b = v->kind == TG_VOCAB_LLAMA2C ? id - 3 : v->chars[id];
            (*lab)[i] = (heatmap_label){BYTES + (b >= 0 && b < 256 ? b : 0), 1, false};
        }
    }
    return n;
}

int cmd_attn(int argc, char **argv)
{
    const char *ckpt = "out-tiny-gpt/best.safetensors", *text = NULL, *out = "out-tiny-gpt/attn", *dtype = "f32",
               *vocab_file = NULL;
    int threads = 1;
    arg_spec specs[] = {
        {"ckpt", ARG_STRING, &ckpt, 0, 0, "checkpoint written by tiny_gpt train, or its --out directory (the best, "
         "else the last)", 0, ROLE_NONE},
        {"text", ARG_STRING, &text, 0, 0, "text to run, at most block_size tokens (a byte vocabulary's characters, "
         "a tokenizer's tokens; for a model of token ids, ids separated by spaces)", 0, ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "output directory (created if missing)", 0, ROLE_NONE},
        {"vocab", ARG_STRING, &vocab_file, 0, 0, "a text whose bytes are the vocabulary (for weights without 'vocab' "
         "metadata, e.g. from PyTorch)", 0, ROLE_NONE},
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
    tg_model m = {0};
    tg_graph *g = NULL;
    int32_t *ids = NULL;
    double *w = NULL;
    uint8_t *blocked = NULL, *png = NULL;
    tg_tensor **aw = NULL;
    heatmap_label *lab = NULL;
    char *nums = NULL, picked[4096];
    textbuf html = {0};
    staged_files staged = {0};
    tg_vocab v = {0};
    if (!text) {
        snprintf(err, sizeof err, "--text is required");
        goto fail;
    }
    if (!(ckpt = ckpt_resolve(ckpt, "attn", picked, sizeof picked, err, sizeof err)) ||
        !(f = tg_st_load(ckpt, err, sizeof err)) || tg_checkpoint_load_model(f, dt, 0.0, &m, err, sizeof err) ||
        checkpoint_model_vocab(f, &m, vocab_file, NULL, &v, err, sizeof err))
        goto fail;
    const int L = m.config.n_layer, H = m.config.n_head;
    const int64_t n = text_ids(&v, m.config.vocab_size, m.config.block_size, text, &ids, &lab, &nums, err, sizeof err);
    if (n < 0) goto fail;
    const int T = (int)n;
    w = malloc((size_t)L * H * T * T * sizeof *w);
    blocked = malloc((size_t)T * T);
    aw = calloc((size_t)L, sizeof *aw);
    g = tg_graph_new();
    if (!w || !blocked || !aw || !g) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }

    /* the forward pass, keeping every layer's weights (1,H,T,T) */
    tg_graph_set_grad_enabled(g, false);
    tg_graph_set_training(g, false);
    tg_tensor *idx = tg_tensor_from(g, TG_I32, 2, (int[]){1, T}, ids);   /* (1,T) */
    if (!tg_model_forward(g, &m, idx, aw)) {
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
            size_t bytes = 0;
            char title[64];
            snprintf(title, sizeof title, "layer %d, head %d", l, h);
            if (heatmap_png_labels(w + ((size_t)l * H + h) * T * T, blocked, T, T, lab, lab, title, &png, &bytes)) {
                snprintf(err, sizeof err, "out of memory encoding a %d x %d map", T, T);
                goto fail;
            }
            heatmap_png_name(l, h, name, sizeof name);
            snprintf(path, sizeof path, "%s/%s", out, name);
            if (staged_add(&staged, path, png, bytes, err, sizeof err)) goto fail;
            free(png);
            png = NULL;
        }
    const bool tokens = v.kind == TG_VOCAB_TOKENIZER || v.kind == TG_VOCAB_IDS || v.kind == TG_VOCAB_LLAMA2C;
    heatmap_html_labels(&html, lab, T, tokens ? "token" : "character", L, H, w, blocked);
    if (html.oom) {
        snprintf(err, sizeof err, "out of memory building index.html");
        goto fail;
    }
    snprintf(path, sizeof path, "%s/index.html", out);
    if (staged_add(&staged, path, html.p, html.len, err, sizeof err) || staged_commit(&staged, err, sizeof err))
        goto fail;
    printf("wrote %d attention map%s (%d layer%s x %d head%s, %d token%s) and %s\n", L * H, L * H == 1 ? "" : "s", L,
           L == 1 ? "" : "s", H, H == 1 ? "" : "s", T, T == 1 ? "" : "s", path);
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
    free(lab);
    free(nums);
    free(w);
    free(blocked);
    free(aw);
    tg_graph_free(g);
    tg_vocab_free(&v);
    tg_model_free(&m);
    tg_st_free(f);
    return rc;
}
