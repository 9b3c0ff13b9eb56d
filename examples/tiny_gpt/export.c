/* tiny_gpt export / import: the commands over the library's formats
 * (formats/formats.h): a Llama checkpoint to and from llama2.c's files,
 * the ones its run.c reads; a Llama to and from a GGUF file llama.cpp
 * runs; a GPT or a Llama to and from a Hugging Face model directory. */
#include "tiny_gpt.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"

/* ---- an erf GPT going to llama.cpp's gpt2, which computes the tanh GELU ---- */

#define GELU_WINDOWS 16 /* the val text is scored in at most this many windows of block_size ids */

static void export_notice(void *ctx, tg_run_notice kind, const char *msg)
{
    (void)ctx, (void)kind;
    fprintf(stderr, "tiny_gpt export: notice: %s\n", msg);
}

/* For a GPT with the exact erf GELU: the notice that llama.cpp's gpt2
 * computes the tanh form, with the mean nll of each form on the run's
 * val text (the last 10% of the text the checkpoint records, as train
 * splits it) or on text_path when given, over at most GELU_WINDOWS
 * windows. Nothing for another model. */
static void gelu_notice(const tg_st_file *f, const char *ckpt, const char *text_path, char *notice, size_t len)
{
    tg_model_config c;
    tg_error err = {0};
    if (tg_model_config_read(f, &c, &err) || strcmp(c.arch, "gpt") || c.gelu != TG_GELU_ERF) return;
    const char *head = "this GPT computes GELU's exact erf form; llama.cpp's gpt2 computes the tanh form (train "
                       "--gelu tanh for a model it runs as trained)";
    tg_model m = {0}, mt = {0};
    tg_vocab v = {0};
    tg_run_config rc;
    tg_run_config_init(&rc);
    tg_run_text text = {0};
    tg_dataset d = {0};
    int32_t *ids = NULL;
    const int32_t *at = NULL;
    int64_t n = 0;
    char where[1024];
    if (tg_checkpoint_load_model(f, TG_F32, 0.0, &m, &err) || checkpoint_model_vocab(f, &m, NULL, NULL, &v, &err))
        goto unavailable;
    if (text_path) {
        size_t tl;
        char *t = tg_file_read(text_path, &tl, &err);
        tg_error e = {0};
        n = t ? tg_prompt_ids(&v, c.vocab_size, t, tl, &ids, &e) : -1;
        free(t);
        if (n < 0 && t) snprintf(err.msg, sizeof err.msg, "%s", e.msg);
        if (n < 0) goto unavailable;
        at = ids;
        snprintf(where, sizeof where, "%s", text_path);
    } else {
        if (!tg_st_meta(f, "train.data")) {
            snprintf(err.msg, sizeof err.msg, "%s records no text (trained on token files or an older checkpoint)",
                     ckpt);
            goto unavailable;
        }
        tg_error e = {0}; /* the run's text as its settings record it (train.data "": the built-in corpus) */
        const tg_run_options ro = {.flag_names = true, .notice = export_notice};
        if (tg_run_config_read(&rc, f, &e) || tg_run_text_load(&text, &rc, f, true, &ro, &e)) {
            snprintf(err.msg, sizeof err.msg, "%s", e.msg);
            goto unavailable;
        }
        if (tg_dataset_from_text(&d, &v, text.text, text.len, c.block_size, &err)) goto unavailable;
        at = d.tokens + d.n_train;
        n = (int64_t)(d.n - d.n_train);
        const char *p = tg_st_meta(f, "train.data");
        snprintf(where, sizeof where, "the run's val text (%s)", *p ? p : "the built-in corpus");
    }
    if (n < 2) {
        snprintf(err.msg, sizeof err.msg, "%s gives fewer than 2 ids", text_path ? text_path : "the val split");
        goto unavailable;
    }
    /* the same weights with the tanh form */
    tg_model_config ct = m.config;
    ct.gelu = TG_GELU_TANH;
    if (tg_model_init(&mt, &ct, TG_F32, TG_NO_INIT, &err)) goto unavailable;
    for (int i = 0; i < tg_params_count(m.params); i++) {
        const tg_tensor *a = tg_params_at(m.params, i);
        tg_tensor *b = tg_params_at(mt.params, i);
        memcpy(b->data, a->data, (size_t)a->numel * sizeof(float));
    }
    int64_t preds;
    tg_error e = {0};
    const double erf_nll = tg_text_nll(&m, at, n, GELU_WINDOWS, &preds, &e);
    const double tanh_nll = isnan(erf_nll) ? NAN : tg_text_nll(&mt, at, n, GELU_WINDOWS, &preds, &e);
    if (isnan(tanh_nll)) {
        snprintf(err.msg, sizeof err.msg, "%s", e.msg);
        goto unavailable;
    }
    snprintf(notice, len,
             "%s: on %s, %lld predictions, mean nll %.6f with erf, %.6f with tanh (%+.2e nats, %+.1e relative)", head,
             where, (long long)preds, erf_nll, tanh_nll, tanh_nll - erf_nll, (tanh_nll - erf_nll) / erf_nll);
    goto done;
unavailable:
    if (text_path)
        snprintf(notice, len, "%s; the difference in mean nll is not measured: --text %s cannot be scored (%s)", head,
                 text_path, err.msg);
    else
        snprintf(notice, len,
                 "%s; the difference in mean nll is not measured: the val text is not available (%s; "
                 "give a text with --text F)",
                 head, err.msg);
done:
    tg_free(ids);
    tg_dataset_release(&d);
    tg_run_text_release(&text);
    tg_run_config_release(&rc);
    tg_vocab_release(&v);
    tg_model_release(&mt);
    tg_model_release(&m);
}

/* ---- the commands -------------------------------------------------------- */

int cmd_export(int argc, char **argv)
{
    const char *ckpt = NULL, *format = "llama2c", *out = NULL, *tok = NULL, *dtype = "f32", *type = NULL, *text = NULL;
    int threads = 1;
    arg_spec specs[] = {
        {"ckpt", ARG_STRING, &ckpt, 0, 0, "a checkpoint of tiny_gpt train (a Llama for llama2c and gguf)", 0,
         ROLE_NONE},
        {"format", ARG_STRING, &format, 0, 0,
         "llama2c: llama2.c's run.c checkpoint; gguf: llama.cpp's model file; "
         "hf: a Hugging Face model directory",
         0, ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "the model file to write (model.bin, M.gguf), or the directory (hf)", 0,
         ROLE_NONE},
        {"tokenizer", ARG_STRING, &tok, 0, 0, "llama2c: also write run.c's tokenizer file here (tokenizer.bin)", 0,
         ROLE_NONE},
        {"type", ARG_STRING, &type, 0, 0, "gguf: the weights' type, f32 (default), f16 or q8_0", 0, ROLE_NONE},
        {"text", ARG_STRING, &text, 0, 0,
         "gguf, an erf GPT: measure the tanh GELU's nll on this text (default: the "
         "run's val text)",
         0, ROLE_NONE},
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    tg_error err = {0};
    tg_dtype dt;
    int setup = command_setup("export",
                              "--ckpt F --format llama2c --out model.bin [--tokenizer tok.bin] | --ckpt F "
                              "--format gguf --out M.gguf [--type f32|f16|q8_0] [--text F] | --ckpt F --format hf "
                              "--out DIR",
                              specs, n_specs, argc, argv, &dtype, &dt, NULL, NULL, &threads);
    if (setup >= 0) return setup;
    const bool gguf = !strcmp(format, "gguf"), hf = !strcmp(format, "hf");
    tg_gguf_type gt = TG_GGUF_F32;
    const char *bad = !ckpt || !out                 ? "--ckpt and --out are required"
        : !gguf && !hf && strcmp(format, "llama2c") ? "--format: llama2c, gguf or hf"
        : gguf && tok   ? "--tokenizer goes with --format llama2c (a GGUF file holds its tokenizer)"
        : hf && tok     ? "--tokenizer goes with --format llama2c (hf writes the tokenizer into the directory)"
        : !gguf && type ? "--type goes with --format gguf"
        : !gguf && text ? "--text goes with --format gguf"
                        : NULL;
    if (!bad && type) {
        if (!strcmp(type, "f32")) gt = TG_GGUF_F32;
        else if (!strcmp(type, "f16")) gt = TG_GGUF_F16;
        else if (!strcmp(type, "q8_0")) gt = TG_GGUF_Q8_0;
        else bad = "--type: f32, f16 or q8_0";
    }
    if (bad) {
        fprintf(stderr, "tiny_gpt export: %s\n", bad);
        return 2;
    }
    char picked[4096]; /* --ckpt DIR: the run's best, else last, as sample and eval take it */
    tg_st_file *f = (ckpt = ckpt_resolve(ckpt, "export", picked, sizeof picked, &err)) ? tg_st_load(ckpt, &err) : NULL;
    char notice[8192] = "";
    int rc = !f ||
        (gguf     ? tg_gguf_export(f, out, gt, &err)
             : hf ? tg_hf_export(f, out, notice, sizeof notice, &err)
                  : tg_llama2c_export(f, out, tok, &err));
    if (!rc && gguf) gelu_notice(f, ckpt, text, notice, sizeof notice);
    if (notice[0]) fprintf(stderr, "tiny_gpt export: notice: %s\n", notice);
    if (rc) fprintf(stderr, "tiny_gpt export: %s\n", err.msg);
    else printf("wrote %s%s%s\n", out, tok ? " and " : "", tok ? tok : "");
    tg_st_free(f);
    return rc ? 1 : 0;
}

int cmd_import(int argc, char **argv)
{
    const char *model_path = NULL, *format = "llama2c", *out = NULL, *tok = NULL, *dtype = "f32";
    int threads = 1;
    bool ids_only = false;
    arg_spec specs[] = {
        {"model", ARG_STRING, &model_path, 0, 0,
         "the model: llama2.c's model.bin, a GGUF file, or a Hugging Face "
         "model directory",
         0, ROLE_NONE},
        {"format", ARG_STRING, &format, 0, 0,
         "llama2c (run.c's files), gguf (a Llama's or a GPT's GGUF file, "
         "tokenizer inside) or hf (a Hugging Face directory)",
         0, ROLE_NONE},
        {"tokenizer", ARG_STRING, &tok, 0, 0,
         "llama2c: its tokenizer.bin (llama2.c's own, or one tiny_gpt export "
         "wrote)",
         0, ROLE_NONE},
        {"ids-only", ARG_SWITCH, &ids_only, 0, 0,
         "llama2c, hf: import without a tokenizer: the model reads and "
         "writes bare ids (sample and eval then take --tokenizer F)",
         0, ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "the checkpoint to write (safetensors)", 0, ROLE_NONE},
        {"dtype", ARG_STRING, &dtype, 0, 0, "gguf: the checkpoint's weights, f32 or f64 (llama2c and hf write f32)", 0,
         ROLE_NONE},
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    tg_error err = {0};
    tg_dtype dt;
    int setup = command_setup("import",
                              "--format llama2c --model model.bin (--tokenizer tok.bin | --ids-only) "
                              "--out F | --format gguf --model M.gguf --out F [--dtype f32|f64] | --format hf "
                              "--model DIR [--ids-only] --out F",
                              specs, n_specs, argc, argv, &dtype, &dt, NULL, NULL, &threads);
    if (setup >= 0) return setup;
    const bool gguf = !strcmp(format, "gguf"), hf = !strcmp(format, "hf");
    const char *bad = !model_path || !out           ? "--model and --out are required"
        : !gguf && !hf && strcmp(format, "llama2c") ? "--format: llama2c, gguf or hf"
        : (gguf || hf) && tok   ? "--tokenizer goes with --format llama2c (a GGUF file and a Hugging Face "
                                  "directory hold their tokenizer)"
        : gguf && ids_only      ? "--ids-only goes with --format llama2c or hf"
        : !gguf && dt != TG_F32 ? "--dtype f64 goes with --format gguf (llama2c and hf imports write f32)"
        : !gguf && !hf && !tok == !ids_only
        ? (tok ? "--tokenizer and --ids-only exclude each other"
               : "--tokenizer tokenizer.bin is required: the model's ids mean nothing without it "
                 "(give --ids-only to import a model of bare ids, and --tokenizer F to sample and "
                 "eval later)")
        : NULL;
    if (bad) {
        fprintf(stderr, "tiny_gpt import: %s\n", bad);
        return 2;
    }
    char notice[8192] = "";
    const tg_hf_import_options o = {.ids_only = ids_only};
    const int rc = gguf ? tg_gguf_import(model_path, out, dt, &err)
        : hf            ? tg_hf_import(model_path, out, &o, notice, sizeof notice, &err)
                        : tg_llama2c_import(model_path, tok, out, &err);
    if (notice[0]) fprintf(stderr, "tiny_gpt import: notice: %s\n", notice);
    if (rc) {
        fprintf(stderr, "tiny_gpt import: %s\n", err.msg);
        return 1;
    }
    printf("wrote %s (%s)\n", out,
           gguf     ? "from a GGUF file"
               : hf ? "from a Hugging Face model directory"
                    : "a Llama from llama2.c's files");
    return 0;
}
