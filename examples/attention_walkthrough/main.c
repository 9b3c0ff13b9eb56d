/* attention_walkthrough: backprop through multi-head attention, step by
 * step, on numbers small enough to read, computed by tapegrad's ops.
 *
 *   attention_walkthrough [--seed N] [--tokens T] [--d-model C]
 *                         [--heads H] [--dtype f32|f64] [--digits N]
 *
 * It follows the tutorial on multi-head attention that tapegrad's
 * attention layers follow (a Chinese-language text; docs/design.md, "The
 * tutorial", says what it works through): the five steps
 * S = QK^T/sqrt(d_k), mask, row softmax, O = AV, heads merged by W_O. It
 * prints, in order:
 *   1. the tutorial's small cases (cases.c);
 *   2. the forward pass of one causal self-attention layer, every
 *      intermediate with its name, shape and formula (layer.c);
 *   3. its backward, every step from dY back to dX (dW_O, dO, dVh, dA,
 *      dS, the scale, dQh, dKh, the merge, dW_Q, dW_K, dW_V, dX), each by
 *      hand, by the tape and by finite differences, then gradcheck's
 *      verdict on each weight (layer.c);
 *   4. three classic mistakes beside the right version (mistakes.c).
 * The program checks what it can itself (rows of A sum to 1, each step's
 * three gradients agree, gradcheck passes) and exits 1 if a check fails; 2 on bad options.
 * print.c describes the line formats, which tests/ reads back. */
#include "walkthrough.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] = "usage: attention_walkthrough [options]\n"
                            "\n"
                            "Backprop through multi-head attention, step by step, with tapegrad: the\n"
                            "tutorial's small cases, one causal self-attention layer forward and backward\n"
                            "(every gradient from dY back to dX by hand, by the tape and by finite\n"
                            "differences; gradcheck on every weight), and three classic mistakes beside\n"
                            "the right version.\n"
                            "\n"
                            "options:\n"
                            "  --seed N        random inputs and weights (default 1)\n"
                            "  --tokens T      sequence length, 1..16 (default 4)\n"
                            "  --d-model C     model width, 1..32 (default 8)\n"
                            "  --heads H       number of heads; must divide d_model (default 2)\n"
                            "  --dtype D       f32 or f64, for the forward and backward shown (default f64)\n"
                            "  --digits N      significant digits printed, 1..17 (default 5; 17 prints f64 exactly)\n"
                            "  --help          this text\n";

/* A whole number in [lo, hi] from the value of `flag`. */
static int parse_int(const char *flag, const char *v, long long lo, long long hi, long long *out, char *err,
                     size_t errlen)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno) {
        snprintf(err, errlen, "%s: '%s' is not a whole number", flag, v);
        return -1;
    }
    if (x < lo || x > hi) {
        snprintf(err, errlen, "%s: %s is outside [%lld, %lld]", flag, v, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

/* Fills w's options and `digits` from argv. Returns 0, 1 for --help, or
 * -1 with a message in err. */
static int parse_options(int argc, char **argv, walk *w, int *digits, char *err, size_t errlen)
{
    long long seed = 1, tokens = 4, d_model = 8, heads = 2, dig = 5;
    const char *dtype = "f64";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return 1;
        struct {
            const char *name;
            long long lo, hi, *dest;
        } num[] = {
            {"--seed", 0, 9007199254740992LL, &seed},
            {"--tokens", 1, 16, &tokens},
            {"--d-model", 1, 32, &d_model},
            {"--heads", 1, 32, &heads},
            {"--digits", 1, 17, &dig},
        };
        int k = 0, n = (int)(sizeof num / sizeof *num);
        while (k < n && strcmp(a, num[k].name)) k++;
        if (k == n && strcmp(a, "--dtype")) {
            if (strncmp(a, "--", 2)) snprintf(err, errlen, "unexpected argument '%s' (options start with --)", a);
            else snprintf(err, errlen, "unknown option '%s'", a);
            return -1;
        }
        if (i + 1 >= argc) {
            snprintf(err, errlen, "%s needs a value", a);
            return -1;
        }
        const char *v = argv[++i];
        if (k == n) dtype = v;
        else if (parse_int(a, v, num[k].lo, num[k].hi, num[k].dest, err, errlen)) return -1;
    }
    if (strcmp(dtype, "f32") && strcmp(dtype, "f64")) {
        snprintf(err, errlen, "--dtype: '%s' is not f32 or f64", dtype);
        return -1;
    }
    if (d_model % heads) {
        snprintf(err, errlen, "--heads %lld does not divide --d-model %lld (d_head = d_model / heads must be whole)",
                 heads, d_model);
        return -1;
    }
    w->seed = (uint64_t)seed;
    w->B = 1;
    w->T = (int)tokens;
    w->C = (int)d_model;
    w->H = (int)heads;
    w->dh = w->C / w->H;
    w->dtype = strcmp(dtype, "f32") ? TG_F64 : TG_F32;
    *digits = (int)dig;
    return 0;
}

/* Draws the inputs on w->store: X and dY normal(0, 1), the weights
 * normal(0, 1/sqrt(C)), each rounded to the nearest float. */
static int make_inputs(walk *w)
{
    const int B = w->B, T = w->T, C = w->C;
    w->store = tg_graph_new();
    if (!w->store) return -1;
    tg_rng rng;
    tg_rng_seed(&rng, w->seed, 0);
    tg_tensor **t[6] = {&w->x, &w->wq, &w->wk, &w->wv, &w->wo, &w->dy};
    for (int k = 0; k < 6; k++) {
        bool weight = k >= 1 && k <= 4;
        *t[k] = weight ? tg_tensor_new(w->store, TG_F64, 2, (int[]){C, C}) /* (C,C) */
                       : tg_tensor_new(w->store, TG_F64, 3, (int[]){B, T, C}); /* (B,T,C) */
        if (!*t[k]) break;
        double *v = (*t[k])->data;
        for (int64_t i = 0; i < (*t[k])->numel; i++)
            v[i] = (float)(tg_rng_normal(&rng) * (weight ? 1 / sqrt((double)C) : 1));
    }
    w->mask = tg_tensor_new(w->store, TG_BOOL, 2, (int[]){T, T}); /* (T,T) */
    if (!graph_ok(w->store, "making the inputs")) return -1;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) ((uint8_t *)w->mask->data)[i * T + j] = j > i;
    return 0;
}

int main(int argc, char **argv)
{
    walk w = {0};
    int digits;
    char err[256];
    int opt = parse_options(argc, argv, &w, &digits, err, sizeof err);
    if (opt == 1) {
        fputs(usage, stdout);
        return 0;
    }
    if (opt < 0) {
        fprintf(stderr, "attention_walkthrough: %s\n(attention_walkthrough --help lists the options)\n", err);
        return 2;
    }
    print_set_digits(digits);

    printf("attention walkthrough: T = %d tokens, d_model = %d, H = %d heads, d_head = %d, %s, seed %llu\n", w.T, w.C,
           w.H, w.dh, tg_dtype_name(w.dtype), (unsigned long long)w.seed);
    say("Each tensor is printed as NAME (shape) formula, then one line per row of its last axis.");
    say("Weights are used as X W, as in the tutorial (nn.Linear stores W transposed).");

    int rc = make_inputs(&w);
    if (rc == 0) rc = run_tutorial_cases(w.dtype);
    if (rc == 0) rc = run_layer(&w);
    tg_graph_free(w.store);
    if (rc != 0) return 1;

    section("summary");
    if (checks_failed()) {
        printf("%d checks FAILED\n", checks_failed());
        return 1;
    }
    printf("all checks passed\n");
    return 0;
}
