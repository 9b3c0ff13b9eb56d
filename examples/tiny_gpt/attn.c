/* tiny_gpt attn: attention maps of a checkpoint on a text.
 *
 * The text goes through the checkpoint's vocabulary as the model sees it
 * in sample and eval --text (tg_prompt_ids): a Llama's text after its BOS,
 * a GPT's as it is; for a model of token ids without a tokenizer the ids,
 * written as sample's prompt is (numbers separated by spaces). The
 * library does the rest (pictures/pictures.h): a label for each position
 * (tg_attn_labels), every layer's weights (tg_attn_maps_init), and
 * OUT/attn_l<l>_h<h>.png for each layer l and head h with OUT/index.html
 * showing all of them, written all or nothing (tg_attn_write). Here: the
 * flags, the checks that name them, the output directory. */
#include "tiny_gpt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"

/* For a model of token ids: that every number of text is an id below V,
 * with the message that names --text. 0, or -1 with a message. */
static int check_ids(const char *text, int V, char *err, size_t errlen)
{
    for (const char *p = text; *p;) {
        p += strspn(p, " \n\t");
        if (!*p) break;
        char *end;
        long id = strtol(p, &end, 10);
        if (end == p || id < 0 || id >= V || (*end && !strchr(" \n\t", *end))) {
            snprintf(err, errlen,
                     "this model has token ids and no tokenizer: --text is ids below %d separated by "
                     "spaces, and \"%.20s\" is not one",
                     V, p);
            return -1;
        }
        p = end;
    }
    return 0;
}

/* The ids the model reads for text (tg_prompt_ids), between 1 and
 * block_size of the text's own. The count, or -1 with a message (*ids
 * tg_malloc'd either way, or NULL). */
static int64_t text_ids(const tg_vocab *v, int V, int block_size, const char *text, int32_t **ids, char *err,
                        size_t errlen)
{
    const char *unit = v->kind == TG_VOCAB_IDS ? "id" : "character";
    *ids = NULL;
    if (!*text) return snprintf(err, errlen, "--text is empty; give at least one %s", unit), -1;
    if (v->kind == TG_VOCAB_IDS && check_ids(text, V, err, errlen)) return -1;
    tg_error e = {0};
    const int64_t n = tg_prompt_ids(v, V, text, strlen(text), ids, &e);
    if (n < 0) return snprintf(err, errlen, "%s", e.msg), -1;
    const bool llama = v->kind == TG_VOCAB_LLAMA2C || (v->kind == TG_VOCAB_TOKENIZER && v->docs);
    if (n == (llama ? 1 : 0)) return snprintf(err, errlen, "--text is empty; give at least one %s", unit), -1;
    if (n <= block_size) return n;
    const char *what = v->kind == TG_VOCAB_TOKENIZER ? "tokens (the checkpoint's tokenizer's)"
        : v->kind == TG_VOCAB_IDS                    ? "ids"
                                                     : "characters";
    const int64_t head = llama ? (v->kind == TG_VOCAB_LLAMA2C ? 2 : 1) : 0; /* BOS, and llama2.c's " " */
    if (head)
        snprintf(err, errlen,
                 "--text has %lld %s, %lld positions with the %s in front, more than the checkpoint's "
                 "block_size %d",
                 (long long)(n - head), what, (long long)n, head == 2 ? "BOS and the space" : "BOS", block_size);
    else
        snprintf(err, errlen, "--text has %lld %s, more than the checkpoint's block_size %d", (long long)n, what,
                 block_size);
    return -1;
}

/* Makes dir if it is missing (*made then true). 0, or -1 with a message. */
static int make_out(const char *dir, bool *made, char *err, size_t errlen)
{
    struct stat st;
    *made = false;
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return 0;
        return snprintf(err, errlen, "--out %s: exists and is not a directory", dir), -1;
    }
    if (mkdir(dir, 0777) != 0) return snprintf(err, errlen, "--out %s: %s", dir, strerror(errno)), -1;
    *made = true;
    return 0;
}

int cmd_attn(int argc, char **argv)
{
    const char *ckpt = "out-tiny-gpt/best.safetensors", *text = NULL, *out = "out-tiny-gpt/attn", *dtype = "f32",
               *vocab_file = NULL;
    int threads = 1;
    arg_spec specs[] = {
        {"ckpt", ARG_STRING, &ckpt, 0, 0,
         "checkpoint written by tiny_gpt train, or its --out directory (the best, "
         "else the last)",
         0, ROLE_NONE},
        {"text", ARG_STRING, &text, 0, 0,
         "text to run, at most block_size tokens (a byte vocabulary's characters, "
         "a tokenizer's tokens; for a model of token ids, ids separated by spaces)",
         0, ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "output directory (created if missing)", 0, ROLE_NONE},
        {"vocab", ARG_STRING, &vocab_file, 0, 0,
         "a text whose bytes are the vocabulary (for weights without 'vocab' "
         "metadata, e.g. from PyTorch)",
         0, ROLE_NONE},
        SPEC_DTYPE(&dtype),
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    tg_error err = {0};
    tg_dtype dt;
    /* no --attn: asking for the weights takes the composed path */
    int setup = command_setup("attn", "--ckpt F --text S --out DIR", specs, n_specs, argc, argv, &dtype, &dt, NULL,
                              NULL, &threads);
    if (setup >= 0) return setup;

    int rc = 1;
    bool made_dir = false;
    tg_st_file *f = NULL;
    tg_model m = {0};
    tg_vocab v = {0};
    tg_attn_maps maps = {0};
    int32_t *ids = NULL;
    tg_heatmap_label *lab = NULL;
    tg_error e = {0};
    char picked[4096];
    if (!text) {
        snprintf(err.msg, sizeof err.msg, "--text is required");
        goto fail;
    }
    if (!(ckpt = ckpt_resolve(ckpt, "attn", picked, sizeof picked, &err)) || !(f = tg_st_load(ckpt, &err)) ||
        tg_checkpoint_load_model(f, dt, 0.0, &m, &err) || checkpoint_model_vocab(f, &m, vocab_file, NULL, &v, &err))
        goto fail;
    const int64_t n = text_ids(&v, m.config.vocab_size, m.config.block_size, text, &ids, err.msg, sizeof err.msg);
    if (n < 0) goto fail;
    if (!(lab = tg_attn_labels(&v, ids, n, text, strlen(text), &e)) || tg_attn_maps_init(&maps, &m, ids, (int)n, &e)) {
        snprintf(err.msg, sizeof err.msg, "%s", e.msg);
        goto fail;
    }
    if (make_out(out, &made_dir, err.msg, sizeof err.msg)) goto fail;
    const bool tokens = v.kind == TG_VOCAB_TOKENIZER || v.kind == TG_VOCAB_IDS || v.kind == TG_VOCAB_LLAMA2C;
    if (tg_attn_write(&maps, lab, tokens ? "token" : "character", out, &e)) {
        snprintf(err.msg, sizeof err.msg, "%s", e.msg);
        goto fail;
    }
    const int L = maps.n_layer, H = maps.n_head, T = maps.T;
    printf("wrote %d attention map%s (%d layer%s x %d head%s, %d token%s) and %s/index.html\n", L * H,
           L * H == 1 ? "" : "s", L, L == 1 ? "" : "s", H, H == 1 ? "" : "s", T, T == 1 ? "" : "s", out);
    rc = 0;
    goto done;
fail:
    if (made_dir) rmdir(out); /* only succeeds when it is still empty */
    fprintf(stderr, "tiny_gpt attn: %s\n", err.msg);
done:
    tg_attn_maps_release(&maps);
    tg_free(lab);
    tg_free(ids);
    tg_vocab_release(&v);
    tg_model_release(&m);
    tg_st_free(f);
    return rc;
}
