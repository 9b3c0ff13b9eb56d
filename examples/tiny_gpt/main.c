/* tiny_gpt: a small causal language model trained with tapegrad.
 *
 *   tiny_gpt train  [--data FILE] [flags]   train (built-in corpus by default)
 *   tiny_gpt sample --ckpt F --prompt S     generate text with the KV cache
 *   tiny_gpt eval   --init W --batch B      loss and gradients of given weights
 *   tiny_gpt step   --init W --batch B ...  AdamW steps on one batch
 *   tiny_gpt attn   --ckpt F --text S --out DIR  attention maps (PNG + HTML)
 *   tiny_gpt tokenizer train|encode|decode|info  BPE tokenizers (tokenizer.c) */
#include "tiny_gpt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../distributed/dist.h"

/* n <= 0: the machine's cores, divided among the job's processes on it */
void set_threads(int n)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0 && tg_dist_local_size() > 1)
        n = cores / tg_dist_local_size() > 1 ? (int)(cores / tg_dist_local_size()) : 1;
    tg_set_num_threads(n);
}

int parse_dtype(const char *s, tg_dtype *dt, char *err, size_t errlen)
{
    if (!strcmp(s, "f32")) *dt = TG_F32;
    else if (!strcmp(s, "f64")) *dt = TG_F64;
    else {
        snprintf(err, errlen, "--dtype: '%s' is not f32 or f64", s);
        return -1;
    }
    return 0;
}

double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int parse_attn(const char *s, bool *composed, char *err, size_t errlen)
{
    if (!strcmp(s, "fused")) *composed = false;
    else if (!strcmp(s, "composed")) *composed = true;
    else {
        snprintf(err, errlen, "--attn: '%s' is not fused or composed", s);
        return -1;
    }
    return 0;
}

int parse_optimizer(const char *s, bool *muon, char *err, size_t errlen)
{
    if (!strcmp(s, "adamw")) *muon = false;
    else if (!strcmp(s, "muon")) *muon = true;
    else {
        snprintf(err, errlen, "--optimizer: '%s' is not adamw or muon", s);
        return -1;
    }
    return 0;
}

int agree_on(const char *cmd, bool failed, const char *err)
{
    const tg_run_backend *b = tg_dist_run_backend();
    char msg[8192];
    snprintf(msg, sizeof msg, "%s", failed ? err : "");
    bool all = false;
    const int who = b->agree(b->ctx, failed, msg, sizeof msg, &all);
    if (who < 0) return 0;
    if (b->rank == 0) {
        if (all || b->size == 1) fprintf(stderr, "tiny_gpt %s: %s\n", cmd, msg);
        else fprintf(stderr, "tiny_gpt %s: rank %d: %s\n", cmd, who, msg);
    }
    return -1;
}

void eval_progress(int64_t step, bool val, int64_t done, int64_t iters)
{
    static double shown;
    if (done && now_seconds() - shown < 0.1) return;
    shown = now_seconds();
    fprintf(stderr, "\r\033[Kstep %lld: estimating the %s loss, batch %lld of %lld", (long long)step,
            val ? "val" : "train", (long long)done + 1, (long long)iters);
}

/* The run settings given (ARG_SETTING flags) into their config, the
 * ones every command checks first first: 0, or -1 with the message. */
static int apply_settings(const arg_spec *specs, int n_specs, char *err, size_t errlen)
{
    static const char *const first[] = {"dtype", "attn", NULL};
    for (int k = 0; k < n_specs; k++)
        if (specs[k].kind == ARG_SETTING) return args_apply(specs, n_specs, specs[k].dest, first, err, errlen);
    return 0;
}

int command_setup(const char *cmd, const char *usage, arg_spec *specs, int n_specs, int argc, char **argv,
                  const char *const *dtype, tg_dtype *dt, const char *const *attn, bool *attn_composed,
                  const int *threads)
{
    char err[1024];
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            if (tg_dist_rank() == 0) {
                printf("usage: tiny_gpt %s %s\n", cmd, usage);
                args_usage(stdout, specs, n_specs, "  ");
            }
            return 0;
        }
    bool failed = args_parse(specs, n_specs, argc, argv, err, sizeof err) ||
        (dtype && parse_dtype(*dtype, dt, err, sizeof err)) ||
        (attn && parse_attn(*attn, attn_composed, err, sizeof err)) || apply_settings(specs, n_specs, err, sizeof err);
    if (failed) { /* a value from a config file: its line */
        args_place(specs, n_specs, "dtype", err, sizeof err);
        args_place(specs, n_specs, "attn", err, sizeof err);
    }
    if (agree_on(cmd, failed, err)) return 2; /* printed once, also on several processes */
    set_threads(*threads);
    return -1;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tiny_gpt <command> [flags]\n"
            "  train   train a GPT (built-in corpus, or --data FILE; --config FILE); writes\n"
            "          OUT/best.safetensors, OUT/last.safetensors (--resume continues the run),\n"
            "          OUT/metrics.csv, OUT/loss.png\n"
            "  sample  generate text from a checkpoint (--ckpt, --prompt, --tokens, --temperature, --top-k)\n"
            "  eval    train and val loss of a checkpoint on its run's data split (--ckpt [--data]), or\n"
            "          loss and gradients of nanoGPT-named weights on one batch (--init, --batch, --dump-grads)\n"
            "  step    AdamW or Muon steps of such weights on a batch (--init, --batch, --steps, --out)\n"
            "  attn    attention maps of a checkpoint on a text: DIR/attn_l<layer>_h<head>.png and\n"
            "          DIR/index.html (--ckpt, --text, --out DIR)\n"
            "  tokenizer  train a byte-level BPE tokenizer (train --data F --vocab-size N --out F), or\n"
            "          encode stdin to ids / decode ids to bytes (encode|decode --tokenizer F)\n"
            "  export  a Llama checkpoint as llama2.c's model.bin and tokenizer.bin (--ckpt, --out, --tokenizer),\n"
            "          or a checkpoint as a GGUF file (--format gguf --ckpt F --out F.gguf) or a Hugging Face\n"
            "          model directory (--format hf --ckpt F --out DIR)\n"
            "  import  llama2.c's model.bin as a Llama checkpoint (--model, --tokenizer, --out), a GGUF file\n"
            "          (--format gguf --model F.gguf --out F [--dtype f32|f64]) or a Hugging Face model\n"
            "          directory, GPT-2 or Llama (--format hf --model DIR --out F)\n"
            "tiny_gpt <command> --help lists the command's flags; tiny_gpt --version the version, the\n"
            "build and the kernel path (TG_ISA=generic|avx2|avx512 caps it).\n");
}

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} COMMANDS[] = {{"train", cmd_train}, {"sample", cmd_sample},       {"eval", cmd_eval},     {"step", cmd_step},
                {"attn", cmd_attn},   {"tokenizer", cmd_tokenizer}, {"export", cmd_export}, {"import", cmd_import}};

/* tiny_gpt --version: the library's version, its build's options and the
 * kernel path in use (core/cpu.h) */
static void version(void)
{
    printf("tiny_gpt (tapegrad) %s\nbuild: %s\nkernel path: %s (this CPU offers %s; TG_ISA caps it)\n", tg_version(),
           tg_build_options(), tg_isa_name(tg_isa_active()), tg_isa_name(tg_isa_cpu()));
}

/* The command named by argv[1]; only train runs on several processes. */
static int run(int argc, char **argv)
{
    if (argc < 2) {
        if (tg_dist_rank() == 0) usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    tg_error isa_err = {0};
    if (tg_isa_check_env(&isa_err)) { /* a TG_ISA the library does not know: no silent fallback */
        if (tg_dist_rank() == 0) fprintf(stderr, "tiny_gpt: %s\n", isa_err.msg);
        return 2;
    }
    if (!strcmp(cmd, "--version")) {
        if (tg_dist_rank() == 0) version();
        return 0;
    }
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (!strcmp(cmd, COMMANDS[i].name)) {
            if (tg_dist_size() > 1 && COMMANDS[i].run != cmd_train) {
                if (tg_dist_rank() == 0)
                    fprintf(stderr,
                            "tiny_gpt %s: runs as one process, not %d (only train runs on several: mpirun -np "
                            "N tiny_gpt train ...)\n",
                            cmd, tg_dist_size());
                return 2;
            }
            int rc = COMMANDS[i].run(argc - 2, argv + 2);
            args_free();
            return rc;
        }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        if (tg_dist_rank() == 0) usage(stdout);
        return 0;
    }
    if (tg_dist_rank() == 0) {
        fprintf(stderr, "tiny_gpt: unknown command '%s'\n", cmd);
        usage(stderr);
    }
    return 2;
}

int main(int argc, char **argv)
{
    tg_error err = {0};
    if (tg_dist_init(&argc, &argv, &err)) { /* MPI, when mpirun started us; first of all */
        fprintf(stderr, "tiny_gpt: %s\n", err.msg);
        return 1;
    }
    int rc = run(argc, argv);
    tg_dist_finalize();
    return rc;
}
