/* tiny_gpt export / import: the commands over the library's formats
 * (formats/formats.h): a Llama checkpoint to and from llama2.c's files,
 * the ones its run.c reads, and to a GGUF file llama.cpp runs. */
#include "tiny_gpt.h"

#include <stdio.h>
#include <string.h>

#include "files.h"

/* ---- the commands -------------------------------------------------------- */

int cmd_export(int argc, char **argv)
{
    const char *ckpt = NULL, *format = "llama2c", *out = NULL, *tok = NULL, *dtype = "f32", *type = NULL;
    int threads = 1;
    arg_spec specs[] = {
        {"ckpt", ARG_STRING, &ckpt, 0, 0, "a Llama checkpoint of tiny_gpt train", 0, ROLE_NONE},
        {"format", ARG_STRING, &format, 0, 0, "llama2c: llama2.c's run.c checkpoint; gguf: llama.cpp's model file", 0,
         ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "the model file to write (model.bin, M.gguf)", 0, ROLE_NONE},
        {"tokenizer", ARG_STRING, &tok, 0, 0, "llama2c: also write run.c's tokenizer file here (tokenizer.bin)", 0,
         ROLE_NONE},
        {"type", ARG_STRING, &type, 0, 0, "gguf: the weights' type, f32 (default), f16 or q8_0", 0, ROLE_NONE},
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    char err[2048];
    tg_dtype dt;
    int setup = command_setup("export", "--ckpt F --format llama2c --out model.bin [--tokenizer tok.bin] | --ckpt F "
                              "--format gguf --out M.gguf [--type f32|f16|q8_0]", specs, n_specs, argc, argv, &dtype,
                              &dt, NULL, NULL, &threads);
    if (setup >= 0) return setup;
    const bool gguf = !strcmp(format, "gguf");
    tg_gguf_type gt = TG_GGUF_F32;
    const char *bad = !ckpt || !out ? "--ckpt and --out are required"
                      : !gguf && strcmp(format, "llama2c") ? "--format: llama2c or gguf"
                      : gguf && tok ? "--tokenizer goes with --format llama2c (a GGUF file holds its tokenizer)"
                      : !gguf && type ? "--type goes with --format gguf"
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
    char picked[4096];   /* --ckpt DIR: the run's best, else last, as sample and eval take it */
    tg_st_file *f = (ckpt = ckpt_resolve(ckpt, "export", picked, sizeof picked, err, sizeof err))
                        ? tg_st_load(ckpt, err, sizeof err) : NULL;
    int rc = !f || (gguf ? tg_gguf_export(f, out, gt, err, sizeof err) : tg_llama2c_export(f, out, tok, err, sizeof err));
    if (rc) fprintf(stderr, "tiny_gpt export: %s\n", err);
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
        {"model", ARG_STRING, &model_path, 0, 0, "the model file: llama2.c's model.bin, or a GGUF file", 0, ROLE_NONE},
        {"format", ARG_STRING, &format, 0, 0, "llama2c (run.c's files) or gguf (a Llama GGUF file, tokenizer "
         "inside)", 0, ROLE_NONE},
        {"tokenizer", ARG_STRING, &tok, 0, 0, "llama2c: its tokenizer.bin (llama2.c's own, or one tiny_gpt export "
         "wrote)", 0, ROLE_NONE},
        {"ids-only", ARG_SWITCH, &ids_only, 0, 0, "llama2c: import without a tokenizer: the model reads and writes "
         "bare ids (sample and eval then take --tokenizer F)", 0, ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "the checkpoint to write (safetensors)", 0, ROLE_NONE},
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    char err[2048];
    tg_dtype dt;
    int setup = command_setup("import", "--format llama2c --model model.bin (--tokenizer tok.bin | --ids-only) "
                              "--out F | --format gguf --model M.gguf --out F [--dtype f32|f64]", specs,
                              n_specs, argc, argv, &dtype, &dt, NULL, NULL, &threads);
    if (setup >= 0) return setup;
    const bool gguf = !strcmp(format, "gguf");
    if (!model_path || !out || (!gguf && strcmp(format, "llama2c"))) {
        fprintf(stderr, "tiny_gpt import: %s\n", model_path && out ? "--format: llama2c or gguf"
                                                                     : "--model and --out are required");
        return 2;
    }
    if (gguf ? tok || ids_only : !tok == !ids_only) {   /* weights alone are ids: reading them as bytes printed garbage (issue 22) */
        fprintf(stderr, "tiny_gpt import: %s\n", gguf ? "--tokenizer and --ids-only are llama2c's: a GGUF file holds "
                                                        "its tokenizer"
                : tok ? "--tokenizer and --ids-only exclude each other"
                : "--tokenizer tokenizer.bin is required: the model's ids mean nothing without it (give --ids-only "
                  "to import a model of bare ids, and --tokenizer F to sample and eval later)");
        return 2;
    }
    if (gguf ? tg_gguf_import(model_path, out, dt, err, sizeof err) : tg_llama2c_import(model_path, tok, out, err, sizeof err)) {
        fprintf(stderr, "tiny_gpt import: %s\n", err);
        return 1;
    }
    printf("wrote %s (a Llama from %s)\n", out, gguf ? "a GGUF file" : "llama2.c's files");
    return 0;
}
