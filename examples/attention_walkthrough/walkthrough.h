/* attention_walkthrough: backprop through multi-head attention, step by
 * step, with tapegrad's ops. Shared declarations of its files:
 *
 *   main.c      options, the inputs, the sections in order
 *   cases.c     the tutorial's small cases ([1.5, 1], (0.25, -0.25), ...)
 *   layer.c     one causal self-attention layer: forward, then backward with
 *               every step three ways (by hand, tape, finite differences)
 *               and gradcheck's verdicts on the weights
 *   mistakes.c  three classic mistakes beside the right version
 *   print.c     the line formats every number is printed in
 *
 * The tutorial writes Q = X W_Q, so here the weights are (d_model, d_model)
 * matrices used as X W (in, out); nn.Linear, and tapegrad's nn/ layer,
 * store the transpose (out, in) and compute X W^T. */
#ifndef ATTENTION_WALKTHROUGH_H
#define ATTENTION_WALKTHROUGH_H

#include "../../tapegrad.h"

/* The example every section after the small cases works on. */
typedef struct walk {
    /* options */
    uint64_t seed;
    int T, C, H, dh; /* tokens, d_model, heads, d_head = C / H */
    int B; /* batch: one sequence */
    tg_dtype dtype; /* of the forward and backward on display */
    /* the inputs, f64 leaves on `store` (never reset); drawn in double and
     * rounded to float, so f32 and f64 runs start from the same numbers */
    tg_graph *store;
    tg_tensor *x; /* (B,T,C) token vectors */
    tg_tensor *wq, *wk, *wv, *wo; /* (C,C) each, used as X W */
    tg_tensor *dy; /* (B,T,C) upstream gradient: L = sum(dY * Y) */
    tg_tensor *mask; /* (T,T) bool, 1 = blocked (key j > query i) */
} walk;

/* Every intermediate of one forward pass, for printing. */
typedef struct attn_parts {
    tg_tensor *q, *k, *v; /* (B,T,C) */
    tg_tensor *q_split; /* (B,T,H,dh) Q viewed with the heads split */
    tg_tensor *qh, *kh, *vh; /* (B,H,T,dh) */
    tg_tensor *qk; /* (B,H,T,T) Qh Kh^T, before the scale */
    tg_tensor *s; /* (B,H,T,T) scaled scores */
    tg_tensor *a; /* (B,H,T,T) attention weights */
    tg_tensor *o; /* (B,H,T,dh) per-head outputs */
    tg_tensor *o_merged; /* (B,T,C) heads concatenated */
    tg_tensor *y; /* (B,T,C) after W_O */
} attn_parts;

/* Where a rerun of the layer starts (layer_from): what it reads from
 * attn_parts, in the order of the forward pass. */
typedef enum stage {
    FROM_X, /* X and the weights: everything */
    FROM_QKV, /* Q, K, V (B,T,C): the split onwards */
    FROM_HEADS, /* Qh, Kh, Vh: the scores onwards (A depends on Qh, Kh only) */
    FROM_QK, /* Qh Kh^T: the scale onwards */
    FROM_S, /* S: the softmax onwards */
    FROM_A, /* A (and Vh): A Vh onwards */
    FROM_O, /* O per head: the merge onwards */
    FROM_MERGED, /* O_merged (and W_O): Y = O_merged W_O */
} stage;

/* layer.c */
tg_tensor *split_heads(tg_graph *g, tg_tensor *t, int H, tg_tensor **mid);
tg_tensor *layer_from(tg_graph *g, const walk *w, stage from, tg_tensor *const wt[5], attn_parts *p);
tg_tensor *attend(tg_graph *g, const walk *w, tg_tensor *s, tg_tensor *vh, tg_tensor *wo, attn_parts *p);
tg_tensor *attention(tg_graph *g, const walk *w, tg_tensor *x, tg_tensor *wq, tg_tensor *wk, tg_tensor *wv,
                     tg_tensor *wo, attn_parts *p);
tg_tensor *leaf_copy(tg_graph *g, const tg_tensor *src, tg_dtype dt, bool requires_grad);
tg_tensor *softmax_backward_by_hand(tg_graph *g, const tg_tensor *p, const void *dp);
int run_layer(const walk *w);

/* cases.c */
int run_tutorial_cases(tg_dtype dt);

/* mistakes.c: p is the right forward pass, made on g with the weight W_O */
int run_mistakes(tg_graph *g, const walk *w, const attn_parts *p, tg_tensor *wo);

/* print.c */
void print_set_digits(int digits);
void section(const char *title);
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void show(const char *name, const tg_tensor *t, const char *formula, ...) __attribute__((format(printf, 3, 4)));
void show_with_sums(const char *name, const tg_tensor *t, const char *formula, ...)
    __attribute__((format(printf, 3, 4)));
void show_value(const char *name, double v, const char *note, ...) __attribute__((format(printf, 3, 4)));
tg_tensor gradient_of(const tg_tensor *t);
double max_abs_diff(const tg_tensor *a, const tg_tensor *b);
bool check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int checks_failed(void);
bool graph_ok(tg_graph *g, const char *what);

#endif
