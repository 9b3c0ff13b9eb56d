/* tiny_gpt export / import: the commands over the library's formats
 * (formats/formats.h): a Llama checkpoint to and from llama2.c's files,
 * the ones its run.c reads; a Llama to and from a GGUF file llama.cpp
 * runs; a GPT or a Llama to and from a Hugging Face model directory. */
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
        {"ckpt", ARG_STRING, &ckpt, 0, 0, "a checkpoint of tiny_gpt train (a Llama for llama2c and gguf)", 0,
         ROLE_NONE},
        {"format", ARG_STRING, &format, 0, 0, "llama2c: llama2.c's run.c checkpoint; gguf: llama.cpp's model file; "
         "hf: a Hugging Face model directory", 0, ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "the model file to write (model.bin, M.gguf), or the directory (hf)", 0,
         ROLE_NONE},
        {"tokenizer", ARG_STRING, &tok, 0, 0, "llama2c: also write run.c's tokenizer file here (tokenizer.bin)", 0,
         ROLE_NONE},
        {"type", ARG_STRING, &type, 0, 0, "gguf: the weights' type, f32 (default), f16 or q8_0", 0, ROLE_NONE},
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    char err[2048];
    tg_dtype dt;
    int setup = command_setup("export", "--ckpt F --format llama2c --out model.bin [--tokenizer tok.bin] | --ckpt F "
                              "--format gguf --out M.gguf [--type f32|f16|q8_0] | --ckpt F --format hf --out DIR",
                              specs, n_specs, argc, argv, &dtype, &dt, NULL, NULL, &threads);
    if (setup >= 0) return setup;
    const bool gguf = !strcmp(format, "gguf"), hf = !strcmp(format, "hf");
    tg_gguf_type gt = TG_GGUF_F32;
    const char *bad = !ckpt || !out ? "--ckpt and --out are required"
                      : !gguf && !hf && strcmp(format, "llama2c") ? "--format: llama2c, gguf or hf"
                      : gguf && tok ? "--tokenizer goes with --format llama2c (a GGUF file holds its tokenizer)"
                      : hf && tok ? "--tokenizer goes with --format llama2c (hf writes the tokenizer into the directory)"
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
    char notice[1024] = "";
    int rc = !f || (gguf ? tg_gguf_export(f, out, gt, err, sizeof err)
                    : hf ? tg_hf_export(f, out, notice, sizeof notice, err, sizeof err)
                         : tg_llama2c_export(f, out, tok, err, sizeof err));
    if (notice[0]) fprintf(stderr, "tiny_gpt export: notice: %s\n", notice);
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
        {"model", ARG_STRING, &model_path, 0, 0, "the model: llama2.c's model.bin, a GGUF file, or a Hugging Face "
         "model directory", 0, ROLE_NONE},
        {"format", ARG_STRING, &format, 0, 0, "llama2c (run.c's files), gguf (a Llama GGUF file, tokenizer inside) "
         "or hf (a Hugging Face directory)", 0, ROLE_NONE},
        {"tokenizer", ARG_STRING, &tok, 0, 0, "llama2c: its tokenizer.bin (llama2.c's own, or one tiny_gpt export "
         "wrote)", 0, ROLE_NONE},
        {"ids-only", ARG_SWITCH, &ids_only, 0, 0, "llama2c, hf: import without a tokenizer: the model reads and "
         "writes bare ids (sample and eval then take --tokenizer F)", 0, ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "the checkpoint to write (safetensors)", 0, ROLE_NONE},
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    char err[2048];
    tg_dtype dt;
    int setup = command_setup("import", "--format llama2c --model model.bin (--tokenizer tok.bin | --ids-only) "
                              "--out F | --format gguf --model M.gguf --out F [--dtype f32|f64] | --format hf "
                              "--model DIR [--ids-only] --out F", specs, n_specs, argc, argv, &dtype, &dt, NULL, NULL,
                              &threads);
    if (setup >= 0) return setup;
    const bool gguf = !strcmp(format, "gguf"), hf = !strcmp(format, "hf");
    const char *bad = !model_path || !out ? "--model and --out are required"
                      : !gguf && !hf && strcmp(format, "llama2c") ? "--format: llama2c, gguf or hf"
                      : (gguf || hf) && tok ? "--tokenizer goes with --format llama2c (a GGUF file and a Hugging Face "
                                              "directory hold their tokenizer)"
                      : gguf && ids_only ? "--ids-only goes with --format llama2c or hf"
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
    char notice[1024] = "";
    const tg_hf_import_options o = {.ids_only = ids_only};
    const int rc = gguf ? tg_gguf_import(model_path, out, dt, err, sizeof err)
                   : hf ? tg_hf_import(model_path, out, &o, notice, sizeof notice, err, sizeof err)
                        : tg_llama2c_import(model_path, tok, out, err, sizeof err);
    if (notice[0]) fprintf(stderr, "tiny_gpt import: notice: %s\n", notice);
    if (rc) {
        fprintf(stderr, "tiny_gpt import: %s\n", err);
        return 1;
    }
    printf("wrote %s (%s)\n", out, gguf ? "a Llama from a GGUF file" : hf ? "from a Hugging Face model directory"
                                                                        : "a Llama from llama2.c's files");
    return 0;
}
