/* tiny_gpt export / import: the commands over the library's formats
 * (formats/formats.h): a Llama checkpoint to and from llama2.c's files,
 * the ones its run.c reads; a GPT or a Llama to and from a Hugging Face
 * model directory (--format hf). */
#include "tiny_gpt.h"

#include <stdio.h>
#include <string.h>

#include "files.h"

/* ---- the commands -------------------------------------------------------- */

int cmd_export(int argc, char **argv)
{
    const char *ckpt = NULL, *format = "llama2c", *out = NULL, *tok = NULL, *dtype = "f32";
    int threads = 1;
    arg_spec specs[] = {
        {"ckpt", ARG_STRING, &ckpt, 0, 0, "a checkpoint of tiny_gpt train (a Llama for llama2c)", 0, ROLE_NONE},
        {"format", ARG_STRING, &format, 0, 0,
         "llama2c: llama2.c's run.c checkpoint; hf: a Hugging Face model directory", 0, ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "the model file to write (model.bin), or the directory (hf)", 0, ROLE_NONE},
        {"tokenizer", ARG_STRING, &tok, 0, 0, "also write run.c's tokenizer file here (tokenizer.bin)", 0, ROLE_NONE},
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    char err[2048];
    tg_dtype dt;
    int setup = command_setup("export", "--ckpt F --format llama2c|hf --out model.bin|DIR [--tokenizer tok.bin]",
                              specs, n_specs, argc, argv, &dtype, &dt, NULL, NULL, &threads);
    if (setup >= 0) return setup;
    const bool hf = !strcmp(format, "hf");
    if (!ckpt || !out || (!hf && strcmp(format, "llama2c")) || (hf && tok)) {
        fprintf(stderr, "tiny_gpt export: %s\n", !hf && strcmp(format, "llama2c") ? "--format: llama2c or hf"
                                                  : hf && tok ? "--tokenizer is llama2c's: hf writes the tokenizer "
                                                                "into the directory"
                                                              : "--ckpt and --out are required");
        return 2;
    }
    char picked[4096];   /* --ckpt DIR: the run's best, else last, as sample and eval take it */
    tg_st_file *f = (ckpt = ckpt_resolve(ckpt, "export", picked, sizeof picked, err, sizeof err))
                        ? tg_st_load(ckpt, err, sizeof err) : NULL;
    char notice[1024] = "";
    int rc = !f || (hf ? tg_hf_export(f, out, notice, sizeof notice, err, sizeof err)
                       : tg_llama2c_export(f, out, tok, err, sizeof err));
    if (notice[0]) fprintf(stderr, "tiny_gpt export: notice: %s\n", notice);
    if (rc) fprintf(stderr, "tiny_gpt export: %s\n", err);
    else if (hf) printf("wrote %s (a Hugging Face model directory)\n", out);
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
        {"model", ARG_STRING, &model_path, 0, 0, "llama2.c's model file (model.bin), or a Hugging Face model "
         "directory (hf)", 0, ROLE_NONE},
        {"format", ARG_STRING, &format, 0, 0, "llama2c or hf", 0, ROLE_NONE},
        {"ids-only", ARG_SWITCH, &ids_only, 0, 0, "hf: import weights without a tokenizer tapegrad reads, as bare ids",
         0, ROLE_NONE},
        {"tokenizer", ARG_STRING, &tok, 0, 0, "its tokenizer.bin, checked to be llama2.c's byte vocabulary", 0,
         ROLE_NONE},
        {"out", ARG_STRING, &out, 0, 0, "the checkpoint to write (safetensors)", 0, ROLE_NONE},
        SPEC_THREADS(&threads),
    };
    const int n_specs = (int)(sizeof specs / sizeof specs[0]);
    char err[2048];
    tg_dtype dt;
    int setup = command_setup("import", "--format llama2c|hf --model model.bin|DIR [--tokenizer tok.bin] --out F",
                              specs, n_specs, argc, argv, &dtype, &dt, NULL, NULL, &threads);
    if (setup >= 0) return setup;
    const bool hf = !strcmp(format, "hf");
    if (!model_path || !out || (!hf && strcmp(format, "llama2c")) || (hf && tok)) {
        fprintf(stderr, "tiny_gpt import: %s\n", !hf && strcmp(format, "llama2c") ? "--format: llama2c or hf"
                                                  : hf && tok ? "--tokenizer is llama2c's: hf reads the tokenizer "
                                                                "from the directory"
                                                              : "--model and --out are required");
        return 2;
    }
    if (hf) {
        char notice[1024];
        const tg_hf_import_options o = {.ids_only = ids_only};
        const int rc = tg_hf_import(model_path, out, &o, notice, sizeof notice, err, sizeof err);
        if (notice[0]) fprintf(stderr, "tiny_gpt import: notice: %s\n", notice);
        if (rc) {
            fprintf(stderr, "tiny_gpt import: %s\n", err);
            return 1;
        }
        printf("wrote %s (from the Hugging Face model directory %s)\n", out, model_path);
        return 0;
    }
    if (tg_llama2c_import(model_path, tok, out, err, sizeof err)) {
        fprintf(stderr, "tiny_gpt import: %s\n", err);
        return 1;
    }
    printf("wrote %s (a Llama from llama2.c's files)\n", out);
    return 0;
}
