/* bench_ops: times the ops that dominate a GPT training step, one by one,
 * for bench/bench.py --ops (bench/torch_ops.py is the PyTorch twin).
 *
 *   bench_ops [--config S|M|L|N] [--threads 1] [--repeats 20] [--warmup 3]
 *             [--ops name,name,...] [--list]
 *
 * Shapes come from the config (n_layer, n_head H, n_embd C, block T,
 * batch B; dh = C / H): S (2,4,64,64,16), M (4,4,128,128,16),
 * L (6,8,256,256,8), N (4,4,128,64,12). All f32. The ops (the table
 * OPS below; add a row to add an op):
 *   linear_attn   x (B,T,C) @ W^T, W (3C,C)        c_attn
 *   linear_fc     x (B,T,C) @ W^T, W (4C,C)        mlp c_fc
 *   linear_proj   x (B,T,4C) @ W^T, W (C,4C)       mlp c_proj
 *   matmul_qk     (B,H,T,dh) @ (B,H,dh,T)          attention scores
 *   matmul_av     (B,H,T,T) @ (B,H,T,dh)           attention output
 *   softmax       causal masked softmax on (B,H,T,T), mask (T,T)
 *   layernorm     (B,T,C), weight (C), no bias, eps 1e-5
 *   gelu          exact (erf) GELU on (B,T,4C)
 *   gelu_tanh     GPT-2's tanh GELU on (B,T,4C), the same x
 *   relu2         ReLU squared on (B,T,4C) (modded-nanogpt's MLP)
 *   softcap       15 tanh(x / 15) on (B,T,4C), x spread 30 (a logit cap on
 *                 logits of V = 4C)
 *   cross_entropy logits (B*T,65), i32 targets (B*T), mean
 *   attention     tg_mha_forward: fused c_attn (3C,C), causal, c_proj
 *                 (C,C), no bias, no dropout, on x (B,T,C)
 * and the Llama's own ops, on the same shapes:
 *   rmsnorm       (B,T,C), weight, eps 1e-5
 *   swiglu        silu(a) * b, a and b (B,T,hidden), hidden =
 *                 tg_llama_hidden_dim(C, 32) (llama2.c's width)
 *   rope          x (B,T,C) as H heads of dh, interleaved pairs, theta
 *                 10000, positions 0..T-1
 *
 * Per op: the float inputs (weights and activations alike) are leaves in
 * a parameter store, so they require grad and keep their gradient
 * buffers; targets and the mask sit on a graph that is never reset. One
 * repeat: forward (recording the tape, as in training) -> t_fwd; backward
 * from a fixed output gradient dy (tg_graph_backward_seeded; the loss
 * itself for cross_entropy) -> t_fwdbwd. Between repeats, untimed: zero
 * the input gradients, reset the graph (its arena memory is reused, so
 * after the first repeat no memory is allocated). W warm-up repeats are
 * not reported.
 *
 * Inputs are a fixed hash pattern that bench/torch_ops.py reproduces
 * exactly: element i of input k (k = 0, 1, ... in the op's order) is
 * scale_k * (2 u - 1), u = lowbias32(i + (k + 1) * 0x9E3779B9) / 2^32
 * (24 bits kept), dy uses k = 99, targets lowbias32(i + 50 * 0x9E3779B9)
 * mod 65. So the two sides compute the same numbers, and "check" lets
 * bench.py compare them: the sum of squares of the output and of each
 * input's gradient after the last repeat (accumulated in double).
 *
 * Output: one JSON line per op on stdout:
 *   {"impl": "tapegrad", "config", "op", "shape", "threads", "warmup",
 *    "repeats", "fwd_ms": [...], "fwdbwd_ms": [...], "fwd_median_ms",
 *    "fwdbwd_median_ms", "flop_fwd", "flop_bwd" (0 = not counted),
 *    "check": {"out_sq", "grad_sq": [...]}, "peak_rss_kb"}
 *
 * The f32 matrix products alone (bench/README.md, "The AVX-512 gemm"):
 *
 *   bench_ops --gemm [--threads 1] [--repeats 20] [--rounds 1] [--peak GFLOPS]
 *             [--shapes MxNxK[:tn|:nt|:tt],...]
 *
 * C (M,N) = op(A) op(B), op as the suffix says (t: stored transposed;
 * default as stored), each shape timed by turns of 5 calls, best of the
 * repeats, and of --rounds passes over all the shapes (after one
 * untimed call each; at 1 thread in the
 * thread's CPU time, so that time another process had the core does not
 * count, else in wall time): tapegrad's AVX-512 kernel
 * in one call (tg_sgemm_kernel_avx512), its AVX2 kernel in one call (the
 * avx2 path's tg_sgemm_kernel), OpenBLAS's cblas_sgemm in one call,
 * tg_gemm_f32 (what the ops call: the product cut into at most 8 calls
 * as ops/gemm.c cuts it, each by the kernel of the path in use or, with
 * TG_SGEMM=openblas in the environment, by OpenBLAS) and, for shapes with
 * neither operand transposed, the op tg_matmul (a graph recording it,
 * reset between turns). GFLOP/s = 2 M N K / seconds / 1e9, each as a
 * share of the AVX-512 FMA peak: bench/fma_peak.c's probe run for 0.3 s
 * before each shape, the best of the run (or --peak GFLOPS, as
 * build/bench/fma_peak prints it). Prints a markdown table. Default shapes: a training step's (768x128x384,
 * 768x128x512, 768x512x128, 2048x288x768, the linear layers' x W^T
 * forms :nt, the weight gradients 768x256x2048:tn and 1024x256x2048:tn)
 * and 1024x1024x1024. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "tapegrad.h"

#include "bench_common.h"

#include <cblas.h>

#include "ops/gemm_internal.h"
#include "ops/sgemm_avx512_internal.h"
#include "ops/sgemm_internal.h"

#define FMA_PEAK_NO_MAIN /* the FMA probe of bench/fma_peak.c, for --gemm */
#include "fma_peak.c"

#define VOCAB 65
#define MAX_INPUTS 4

typedef struct config {
    const char *name;
    int n_layer, n_head, n_embd, block, batch;
} config;

static const config CONFIGS[] = {
    {"S", 2, 4, 64, 64, 16},
    {"M", 4, 4, 128, 128, 16},
    {"L", 6, 8, 256, 256, 8},
    {"N", 4, 4, 128, 64, 12},
};

/* one op's inputs and what it needs at forward time */
typedef struct op_ctx {
    int B, T, C, H, dh;
    tg_params *p; /* float inputs, requiring grad */
    tg_error add_err; /* why an add_input failed */
    tg_graph *data; /* targets, mask: never reset */
    int n_in;
    tg_tensor *in[MAX_INPUTS]; /* float inputs in the op's order */
    double scale[MAX_INPUTS]; /* their fill amplitudes */
    tg_tensor *targets, *mask;
    tg_mha_mod mha;
    int64_t out_numel; /* 1 for a loss (backward from 1) */
    double flop_fwd, flop_bwd;
    char shape[96];
} op_ctx;

typedef struct op_def {
    const char *name;
    /* registers the inputs (add_input), sets out_numel, shape, flops; 0 or -1 */
    int (*setup)(op_ctx *o, tg_error *err);
    tg_tensor *(*forward)(tg_graph *g, op_ctx *o);
} op_def;

static tg_tensor *add_input(op_ctx *o, const char *name, double scale, int ndim, const int *shape)
{
    tg_tensor *t = tg_params_add(o->p, name, ndim, shape, &o->add_err);
    if (t) {
        o->scale[o->n_in] = scale;
        o->in[o->n_in++] = t;
    }
    return t;
}

/* ---- the ops ---------------------------------------------------------- */

/* x (B,T,in) @ W^T, W (out,in): 2 BT in out FLOP forward, twice that
 * backward (dx = dy W, dW = dy^T x) */
static int setup_linear(op_ctx *o, int in, int out, const char *what)
{
    int bt = o->B * o->T;
    if (!add_input(o, "x", 1.0, 3, (int[]){o->B, o->T, in}) || !add_input(o, "w", 0.02, 2, (int[]){out, in})) return -1;
    o->out_numel = (int64_t)bt * out;
    o->flop_fwd = 2.0 * bt * in * out;
    o->flop_bwd = 2 * o->flop_fwd;
    snprintf(o->shape, sizeof o->shape, "%s: x (%d,%d,%d) @ W^T (%d,%d)", what, o->B, o->T, in, out, in);
    return 0;
}
static int setup_linear_attn(op_ctx *o, tg_error *e)
{
    (void)e;
    return setup_linear(o, o->C, 3 * o->C, "c_attn");
}
static int setup_linear_fc(op_ctx *o, tg_error *e)
{
    (void)e;
    return setup_linear(o, o->C, 4 * o->C, "c_fc");
}
static int setup_linear_proj(op_ctx *o, tg_error *e)
{
    (void)e;
    return setup_linear(o, 4 * o->C, o->C, "mlp c_proj");
}
static tg_tensor *fwd_linear(tg_graph *g, op_ctx *o) { return tg_linear(g, o->in[0], o->in[1], NULL); }

/* batched (M,K) @ (K,N) over B*H: 2 BH M K N forward, twice that backward */
static int setup_matmul_qk(op_ctx *o, tg_error *e)
{
    (void)e;
    const int B = o->B, H = o->H, T = o->T, dh = o->dh;
    if (!add_input(o, "q", 1.0, 4, (int[]){B, H, T, dh}) || !add_input(o, "kt", 1.0, 4, (int[]){B, H, dh, T}))
        return -1;
    o->out_numel = (int64_t)B * H * T * T;
    o->flop_fwd = 2.0 * B * H * T * dh * T;
    o->flop_bwd = 2 * o->flop_fwd;
    snprintf(o->shape, sizeof o->shape, "(%d,%d,%d,%d) @ (%d,%d,%d,%d)", B, H, T, dh, B, H, dh, T);
    return 0;
}
static int setup_matmul_av(op_ctx *o, tg_error *e)
{
    (void)e;
    const int B = o->B, H = o->H, T = o->T, dh = o->dh;
    if (!add_input(o, "a", 0.1, 4, (int[]){B, H, T, T}) || !add_input(o, "v", 1.0, 4, (int[]){B, H, T, dh})) return -1;
    o->out_numel = (int64_t)B * H * T * dh;
    o->flop_fwd = 2.0 * B * H * T * T * dh;
    o->flop_bwd = 2 * o->flop_fwd;
    snprintf(o->shape, sizeof o->shape, "(%d,%d,%d,%d) @ (%d,%d,%d,%d)", B, H, T, T, B, H, T, dh);
    return 0;
}
static tg_tensor *fwd_matmul(tg_graph *g, op_ctx *o) { return tg_matmul(g, o->in[0], o->in[1]); }

/* the causal mask (T,T), true = blocked (key j after query i) */
static int make_causal_mask(op_ctx *o, tg_error *err)
{
    const int T = o->T;
    o->mask = tg_tensor_new(o->data, TG_BOOL, 2, (int[]){T, T}); /* (T,T) */
    if (!o->mask) {
        tg_error_set(err, "%s", tg_graph_error(o->data));
        return -1;
    }
    uint8_t *m = o->mask->data;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) m[(size_t)i * T + j] = j > i;
    return 0;
}

static int setup_softmax(op_ctx *o, tg_error *err)
{
    const int B = o->B, H = o->H, T = o->T;
    if (!add_input(o, "s", 3.0, 4, (int[]){B, H, T, T}) || make_causal_mask(o, err)) return -1;
    o->out_numel = (int64_t)B * H * T * T;
    snprintf(o->shape, sizeof o->shape, "(%d,%d,%d,%d), causal", B, H, T, T);
    return 0;
}
static tg_tensor *fwd_softmax(tg_graph *g, op_ctx *o) { return tg_softmax(g, o->in[0], o->mask); }

static int setup_layernorm(op_ctx *o, tg_error *e)
{
    (void)e;
    if (!add_input(o, "x", 1.0, 3, (int[]){o->B, o->T, o->C}) || !add_input(o, "w", 1.0, 1, (int[]){o->C})) return -1;
    o->out_numel = (int64_t)o->B * o->T * o->C;
    snprintf(o->shape, sizeof o->shape, "(%d,%d,%d), weight, no bias", o->B, o->T, o->C);
    return 0;
}
static tg_tensor *fwd_layernorm(tg_graph *g, op_ctx *o)
{
    return tg_layernorm(g, o->in[0], o->in[1], NULL, TG_LAYERNORM_EPS);
}

static int setup_gelu(op_ctx *o, tg_error *e)
{
    (void)e;
    if (!add_input(o, "x", 3.0, 3, (int[]){o->B, o->T, 4 * o->C})) return -1;
    o->out_numel = (int64_t)o->B * o->T * 4 * o->C;
    snprintf(o->shape, sizeof o->shape, "(%d,%d,%d), erf", o->B, o->T, 4 * o->C);
    return 0;
}
static tg_tensor *fwd_gelu(tg_graph *g, op_ctx *o) { return tg_gelu(g, o->in[0], TG_GELU_ERF); }

static int setup_gelu_tanh(op_ctx *o, tg_error *e)
{
    if (setup_gelu(o, e) != 0) return -1;
    snprintf(o->shape, sizeof o->shape, "(%d,%d,%d), tanh", o->B, o->T, 4 * o->C);
    return 0;
}
static tg_tensor *fwd_gelu_tanh(tg_graph *g, op_ctx *o) { return tg_gelu(g, o->in[0], TG_GELU_TANH); }

static int setup_relu2(op_ctx *o, tg_error *e)
{
    (void)e;
    if (!add_input(o, "x", 3.0, 3, (int[]){o->B, o->T, 4 * o->C})) return -1;
    o->out_numel = (int64_t)o->B * o->T * 4 * o->C;
    snprintf(o->shape, sizeof o->shape, "(%d,%d,%d)", o->B, o->T, 4 * o->C);
    return 0;
}
static tg_tensor *fwd_relu2(tg_graph *g, op_ctx *o) { return tg_relu2(g, o->in[0]); }

static int setup_softcap(op_ctx *o, tg_error *e)
{
    (void)e;
    if (!add_input(o, "x", 30.0, 3, (int[]){o->B, o->T, 4 * o->C})) return -1;
    o->out_numel = (int64_t)o->B * o->T * 4 * o->C;
    snprintf(o->shape, sizeof o->shape, "(%d,%d,%d), s 15", o->B, o->T, 4 * o->C);
    return 0;
}
static tg_tensor *fwd_softcap(tg_graph *g, op_ctx *o) { return tg_softcap(g, o->in[0], 15.0); }

static int setup_rmsnorm(op_ctx *o, tg_error *e)
{
    (void)e;
    if (!add_input(o, "x", 1.0, 3, (int[]){o->B, o->T, o->C}) || !add_input(o, "w", 1.0, 1, (int[]){o->C})) return -1;
    o->out_numel = (int64_t)o->B * o->T * o->C;
    snprintf(o->shape, sizeof o->shape, "(%d,%d,%d), weight, eps 1e-5", o->B, o->T, o->C);
    return 0;
}
static tg_tensor *fwd_rmsnorm(tg_graph *g, op_ctx *o) { return tg_rmsnorm(g, o->in[0], o->in[1], 1e-5); }

static int setup_swiglu(op_ctx *o, tg_error *e)
{
    (void)e;
    const int hidden = tg_llama_hidden_dim(o->C, 32);
    if (!add_input(o, "a", 3.0, 3, (int[]){o->B, o->T, hidden}) ||
        !add_input(o, "b", 1.0, 3, (int[]){o->B, o->T, hidden}))
        return -1;
    o->out_numel = (int64_t)o->B * o->T * hidden;
    snprintf(o->shape, sizeof o->shape, "(%d,%d,%d) twice", o->B, o->T, hidden);
    return 0;
}
static tg_tensor *fwd_swiglu(tg_graph *g, op_ctx *o) { return tg_swiglu(g, o->in[0], o->in[1]); }

static int setup_rope(op_ctx *o, tg_error *e)
{
    (void)e;
    if (!add_input(o, "x", 1.0, 3, (int[]){o->B, o->T, o->C})) return -1;
    o->out_numel = (int64_t)o->B * o->T * o->C;
    snprintf(o->shape, sizeof o->shape, "(%d,%d,%d), %d heads of %d, interleaved", o->B, o->T, o->C, o->H, o->dh);
    return 0;
}
static tg_tensor *fwd_rope(tg_graph *g, op_ctx *o)
{
    return tg_rope(g, o->in[0], o->dh, o->H, 0, 10000.0, TG_ROPE_INTERLEAVED);
}

static uint32_t lowbias32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

static int setup_cross_entropy(op_ctx *o, tg_error *err)
{
    const int n = o->B * o->T;
    if (!add_input(o, "logits", 2.0, 2, (int[]){n, VOCAB})) return -1;
    o->targets = tg_tensor_new(o->data, TG_I32, 1, (int[]){n}); /* (B*T) */
    if (!o->targets) {
        tg_error_set(err, "%s", tg_graph_error(o->data));
        return -1;
    }
    for (int i = 0; i < n; i++)
        ((int32_t *)o->targets->data)[i] = (int32_t)(lowbias32((uint32_t)i + 50u * 0x9E3779B9u) % VOCAB);
    o->out_numel = 1;
    snprintf(o->shape, sizeof o->shape, "(%d,%d), mean", n, VOCAB);
    return 0;
}
static tg_tensor *fwd_cross_entropy(tg_graph *g, op_ctx *o) { return tg_cross_entropy(g, o->in[0], o->targets); }

/* c_attn 2 BT C 3C, scores and weighted sum 2 x 2 B H T T dh (the full
 * T x T, as nanoGPT counts), c_proj 2 BT C C; backward twice forward */
static int setup_attention(op_ctx *o, tg_error *err)
{
    const int B = o->B, T = o->T, C = o->C, H = o->H;
    if (tg_mha_init(&o->mha, o->p, "attn", &(tg_mha_config){.n_embd = C, .n_head = H}, err) ||
        !add_input(o, "x", 1.0, 3, (int[]){B, T, C}))
        return -1;
    /* inputs in the order x (added above as in[0]), c_attn.weight, c_proj.weight */
    o->in[1] = o->mha.c_attn.weight;
    o->in[2] = o->mha.c_proj.weight;
    o->scale[1] = o->scale[2] = 0.02;
    o->n_in = 3;
    o->out_numel = (int64_t)B * T * C;
    o->flop_fwd = 2.0 * B * T * C * 4 * C + 4.0 * B * H * T * T * o->dh;
    o->flop_bwd = 2 * o->flop_fwd;
    snprintf(o->shape, sizeof o->shape, "x (%d,%d,%d), H %d, causal, fused c_attn", B, T, C, H);
    return 0;
}
static tg_tensor *fwd_attention(tg_graph *g, op_ctx *o)
{
    tg_attn_args a = {.causal = true};
    return tg_mha_forward(g, &o->mha, o->in[0], NULL, &a);
}

static const op_def OPS[] = {
    {"linear_attn", setup_linear_attn, fwd_linear}, {"linear_fc", setup_linear_fc, fwd_linear},
    {"linear_proj", setup_linear_proj, fwd_linear}, {"matmul_qk", setup_matmul_qk, fwd_matmul},
    {"matmul_av", setup_matmul_av, fwd_matmul},     {"softmax", setup_softmax, fwd_softmax},
    {"layernorm", setup_layernorm, fwd_layernorm},  {"gelu", setup_gelu, fwd_gelu},
    {"gelu_tanh", setup_gelu_tanh, fwd_gelu_tanh},  {"relu2", setup_relu2, fwd_relu2},
    {"softcap", setup_softcap, fwd_softcap},        {"cross_entropy", setup_cross_entropy, fwd_cross_entropy},
    {"attention", setup_attention, fwd_attention},  {"rmsnorm", setup_rmsnorm, fwd_rmsnorm},
    {"swiglu", setup_swiglu, fwd_swiglu},           {"rope", setup_rope, fwd_rope},
};
#define N_OPS ((int)(sizeof OPS / sizeof OPS[0]))

/* ---- timing ------------------------------------------------------------ */

static double median(const double *v, int n, double *scratch)
{
    memcpy(scratch, v, (size_t)n * sizeof *v);
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_double);
    return n % 2 ? scratch[n / 2] : 0.5 * (scratch[n / 2 - 1] + scratch[n / 2]);
}

/* element i of input k: scale (2u - 1), u from lowbias32 (see the top) */
static void fill_pattern(float *p, int64_t n, int k, double scale)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t h = lowbias32((uint32_t)i + (uint32_t)(k + 1) * 0x9E3779B9u);
        p[i] = (float)(scale * (2.0 * (double)(h >> 8) / 16777216.0 - 1.0));
    }
}

static double sum_sq(const float *p, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)p[i] * p[i];
    return s;
}

static void print_list(const char *key, const double *v, int n)
{
    printf("\"%s\": [", key);
    for (int i = 0; i < n; i++) printf("%s%.4f", i ? ", " : "", v[i]);
    printf("], ");
}

/* runs one op: 0, or -1 with a message in err */
static int run_op(const op_def *def, const config *c, int warmup, int repeats, tg_error *err)
{
    op_ctx o = {.B = c->batch, .T = c->block, .C = c->n_embd, .H = c->n_head, .dh = c->n_embd / c->n_head};
    int rc = -1;
    float *dy = NULL;
    double *fwd = tg_calloc((size_t)repeats, sizeof *fwd), *fb = tg_calloc((size_t)repeats, sizeof *fb);
    double *scratch = tg_calloc((size_t)repeats, sizeof *scratch);
    double out_sq = 0, grad_sq[MAX_INPUTS] = {0};
    o.p = tg_params_new(TG_F32, err);
    o.data = tg_graph_new();
    tg_graph *g = tg_graph_new();
    if (!fwd || !fb || !scratch || !o.p || !o.data || !g) {
        tg_error_set(err, "out of memory");
        goto out;
    }
    if (def->setup(&o, err)) {
        if (!tg_error_failed(err)) tg_error_set(err, "%s", o.add_err.msg[0] ? o.add_err.msg : "setup failed");
        goto out;
    }
    for (int k = 0; k < o.n_in; k++) fill_pattern(o.in[k]->data, o.in[k]->numel, k, o.scale[k]);
    if (o.out_numel > 1) {
        if (!(dy = tg_malloc((size_t)o.out_numel * sizeof *dy))) {
            tg_error_set(err, "out of memory");
            goto out;
        }
        fill_pattern(dy, o.out_numel, 98, 1.0); /* k + 1 = 99 */
    }

    for (int r = 0; r < warmup + repeats; r++) {
        tg_params_zero_grad(o.p);
        double t0 = now_ms();
        tg_tensor *y = def->forward(g, &o);
        double t1 = now_ms();
        if (!y || y->numel != o.out_numel) {
            tg_error_set(err, "forward: %s", y ? "output size differs from the op's table" : tg_graph_error(g));
            goto out;
        }
        int bad = dy ? tg_graph_backward_seeded(g, y, dy) : tg_graph_backward(g, y);
        double t2 = now_ms();
        if (bad) {
            tg_error_set(err, "backward: %s", tg_graph_error(g));
            goto out;
        }
        if (r >= warmup) {
            fwd[r - warmup] = t1 - t0;
            fb[r - warmup] = t2 - t0;
        }
        if (r == warmup + repeats - 1) {
            out_sq = sum_sq(y->data, y->numel);
            for (int k = 0; k < o.n_in; k++) grad_sq[k] = sum_sq(o.in[k]->grad, o.in[k]->numel);
        }
        tg_graph_reset(g);
    }

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"impl\": \"tapegrad\", \"config\": \"%s\", \"op\": \"%s\", \"shape\": \"%s\", \"threads\": %d, "
           "\"warmup\": %d, \"repeats\": %d, ",
           c->name, def->name, o.shape, tg_num_threads(), warmup, repeats);
    print_list("fwd_ms", fwd, repeats);
    print_list("fwdbwd_ms", fb, repeats);
    printf("\"fwd_median_ms\": %.4f, ", median(fwd, repeats, scratch));
    printf("\"fwdbwd_median_ms\": %.4f, \"flop_fwd\": %.0f, \"flop_bwd\": %.0f, ", median(fb, repeats, scratch),
           o.flop_fwd, o.flop_bwd);
    printf("\"check\": {\"out_sq\": %.9g, \"grad_sq\": [", out_sq);
    for (int k = 0; k < o.n_in; k++) printf("%s%.9g", k ? ", " : "", grad_sq[k]);
    printf("]}, \"peak_rss_kb\": %ld}\n", ru.ru_maxrss);
    fflush(stdout);
    rc = 0;
out:
    tg_free(dy);
    tg_free(fwd);
    tg_free(fb);
    tg_free(scratch);
    tg_graph_free(g);
    tg_graph_free(o.data);
    tg_params_free(o.p);
    return rc;
}

/* ---- --gemm: the f32 products alone ------------------------------------ */

enum { GEMM_IMPLS = 5, GEMM_MAX_SHAPES = 32, GEMM_BURST = 5 };
static const char *const GEMM_IMPL_NAMES[GEMM_IMPLS] = {"AVX-512 kernel", "AVX2 kernel", "OpenBLAS", "tg_gemm_f32",
                                                        "tg_matmul"};

static void fill_gemm(float *p, size_t n, uint32_t k)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t h = lowbias32((uint32_t)i + (k + 1) * 0x9E3779B9u);
        p[i] = (float)(2.0 * (double)(h >> 8) / 16777216.0 - 1.0);
    }
}

/* seconds: the calling thread's CPU time at 1 thread (every implementation
 * then runs on it, and time when another process had the core does not
 * count), else the monotonic clock */
static double gemm_clock(void)
{
    struct timespec ts;
    clock_gettime(tg_num_threads() == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* one call of implementation `impl`; false when it cannot run here */
static bool gemm_call(int impl, const bench_shape *g, const float *A, const float *B, float *C, tg_graph *graph,
                      tg_tensor *ta, tg_tensor *tb)
{
    const int lda = g->ta ? g->M : g->K, ldb = g->tb ? g->K : g->N;
    switch (impl) {
    case 0: return tg_sgemm_kernel_avx512(g->ta, g->tb, g->M, g->N, g->K, 1, A, lda, B, ldb, 0, C, g->N);
    case 1: {
        const tg_isa was = tg_isa_active();
        if (tg_isa_set_max(TG_ISA_AVX2) != TG_ISA_AVX2) {
            tg_isa_set_max(was);
            return false;
        }
        const bool ok = tg_sgemm_kernel(g->ta, g->tb, g->M, g->N, g->K, 1, A, lda, B, ldb, 0, C, g->N);
        tg_isa_set_max(was);
        return ok;
    }
    case 2:
        cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans, g->tb ? CblasTrans : CblasNoTrans, g->M, g->N,
                    g->K, 1, A, lda, B, ldb, 0, C, g->N);
        return true;
    case 3: tg_gemm_f32(g->ta, g->tb, g->M, g->N, g->K, 1, A, lda, B, ldb, 0, C, g->N); return true;
    default: {
        if (!ta) return false;
        tg_tensor *y = tg_matmul(graph, ta, tb);
        tg_graph_reset(graph);
        return y != NULL;
    }
    }
}

/* times one shape: best[i] seconds per call, < 0 when impl i cannot run */
static int time_gemm(const bench_shape *g, int repeats, double best[GEMM_IMPLS])
{
    const size_t na = (size_t)g->M * g->K, nb = (size_t)g->K * g->N, nc = (size_t)g->M * g->N;
    float *A = tg_malloc(na * sizeof *A), *B = tg_malloc(nb * sizeof *B), *C = tg_malloc(nc * sizeof *C);
    tg_graph *data = tg_graph_new(), *graph = tg_graph_new();
    tg_tensor *ta = NULL, *tb = NULL;
    int rc = -1;
    if (!A || !B || !C || !data || !graph) goto out;
    fill_gemm(A, na, 0);
    fill_gemm(B, nb, 1);
    if (!g->ta && !g->tb) { /* tg_matmul's operands: the same numbers */
        ta = tg_tensor_wrap(data, TG_F32, 2, (int[]){g->M, g->K}, A);
        tb = tg_tensor_wrap(data, TG_F32, 2, (int[]){g->K, g->N}, B);
        if (!ta || !tb) goto out;
    }
    for (int i = 0; i < GEMM_IMPLS; i++) best[i] = gemm_call(i, g, A, B, C, graph, ta, tb) ? 1e30 : -1;
    /* turns of GEMM_BURST calls each (so that the operands are where the
     * implementation's own last call left them, as in a loop of calls) */
    for (int r = 0; r < repeats; r += GEMM_BURST)
        for (int i = 0; i < GEMM_IMPLS; i++)
            for (int q = r; q < r + GEMM_BURST && q < repeats && best[i] >= 0; q++) {
                const double t0 = gemm_clock();
                gemm_call(i, g, A, B, C, graph, ta, tb);
                const double t = gemm_clock() - t0;
                if (t < best[i]) best[i] = t;
            }
    rc = 0;
out:
    tg_graph_free(graph);
    tg_graph_free(data);
    tg_free(A), tg_free(B), tg_free(C);
    return rc;
}

static int run_gemm_bench(const char *shapes, int repeats, int rounds, double peak_arg)
{
    static const char *const defaults = "768x128x384,768x128x512,768x512x128,2048x288x768,768x128x384:nt,"
                                        "768x512x128:nt,2048x288x768:nt,768x256x2048:tn,1024x256x2048:tn,"
                                        "1024x1024x1024";
    bench_shape list[GEMM_MAX_SHAPES];
    int n = 0;
    for (const char *s = shapes ? shapes : defaults; *s;) {
        const size_t len = strcspn(s, ",");
        if (n == GEMM_MAX_SHAPES || bench_parse_shape(s, len, &list[n])) {
            fprintf(stderr, "bench_ops: --shapes: '%.*s' is not MxNxK[:tn|:nt|:tt] (at most %d shapes)\n", (int)len, s,
                    GEMM_MAX_SHAPES);
            return 2;
        }
        n++;
        s += len + (s[len] == ',');
    }
    /* the products, and the peak probe between them: rounds over all the
     * shapes, the best of every round (and the best peak) kept */
    static double best[GEMM_MAX_SHAPES][GEMM_IMPLS];
    double peak = peak_arg;
    for (int round = 0; round < rounds; round++)
        for (int k = 0; k < n; k++) {
            if (peak_arg <= 0) {
                const double p = fma_peak_gflops(1, 0.3);
                if (p > peak) peak = p;
            }
            double b[GEMM_IMPLS];
            if (time_gemm(&list[k], repeats, b)) {
                fprintf(stderr, "bench_ops: out of memory\n");
                return 1;
            }
            for (int i = 0; i < GEMM_IMPLS; i++)
                if (round == 0 || (b[i] >= 0 && b[i] < best[k][i])) best[k][i] = b[i];
        }
    printf("f32 gemm, %d thread(s), kernel path %s%s, best of %d x %d calls each (%s); GFLOP/s", tg_num_threads(),
           tg_isa_name(tg_isa_active()), getenv("TG_SGEMM") ? ", TG_SGEMM set" : "", rounds, repeats,
           tg_num_threads() == 1 ? "thread CPU time" : "wall time");
    if (peak > 0)
        printf(" and %% of the AVX-512 FMA peak of one core, %.1f GFLOP/s (%s)", peak,
               peak_arg > 0 ? "--peak" : "bench/fma_peak.c's probe, best of this run");
    printf("\n\n| shape MxNxK:op(A)op(B) |");
    for (int i = 0; i < GEMM_IMPLS; i++) printf(" %s |", GEMM_IMPL_NAMES[i]);
    printf("\n| --- |");
    for (int i = 0; i < GEMM_IMPLS; i++) printf(" --- |");
    printf("\n");
    for (int k = 0; k < n; k++) {
        const bench_shape *g = &list[k];
        printf("| %dx%dx%d:%c%c |", g->M, g->N, g->K, g->ta ? 't' : 'n', g->tb ? 't' : 'n');
        const double flop = 2.0 * g->M * g->N * g->K;
        for (int i = 0; i < GEMM_IMPLS; i++) {
            if (best[k][i] < 0) {
                printf(" - |");
                continue;
            }
            const double gf = flop / best[k][i] / 1e9;
            if (peak > 0) printf(" %.1f (%.0f%%) |", gf, 100 * gf / peak);
            else printf(" %.1f |", gf);
        }
        printf("\n");
    }
    return 0;
}

/* ---- main -------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_ops [--config S|M|L|N] [--threads 1] [--repeats 20] [--warmup 3]\n"
            "                 [--ops name,name,...] [--list]\n"
            "       bench_ops --gemm [--threads 1] [--repeats 20] [--rounds 1] [--peak GFLOPS]\n"
            "                 [--shapes MxNxK[:tn|:nt|:tt],...]\n");
}

static const op_def *find_op(const char *name, size_t len)
{
    for (int i = 0; i < N_OPS; i++)
        if (strlen(OPS[i].name) == len && !strncmp(OPS[i].name, name, len)) return &OPS[i];
    return NULL;
}

static int parse_int(const char *flag, const char *v, long lo, long hi, int *out)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "bench_ops: %s: '%s' is not an integer in [%ld, %ld]\n", flag, v ? v : "", lo, hi);
        return -1;
    }
    *out = (int)x;
    return 0;
}

int main(int argc, char **argv)
{
    const char *cfg_name = "S", *ops = NULL;
    int threads = 1, repeats = 20, warmup = 3;
    bool gemm = false;
    int rounds = 1;
    const char *gemm_shapes = NULL;
    double peak = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            return 0;
        }
        if (!strcmp(a, "--list")) {
            for (int k = 0; k < N_OPS; k++) printf("%s\n", OPS[k].name);
            return 0;
        }
        if (!strcmp(a, "--gemm")) {
            gemm = true;
            continue;
        }
        if (!strcmp(a, "--peak") && v) {
            char *end;
            peak = strtod(v, &end);
            if (end == v || *end || !(peak > 0)) {
                fprintf(stderr, "bench_ops: --peak: '%s' is not a positive number\n", v);
                return 2;
            }
            i++;
            continue;
        }
        if (!strcmp(a, "--rounds")) {
            if (parse_int(a, v, 1, 1000, &rounds)) return 2;
            i++;
            continue;
        }
        if (!strcmp(a, "--shapes") && v) {
            gemm_shapes = v;
            i++;
            continue;
        }
        int bad = 0;
        if (!strcmp(a, "--threads")) bad = parse_int(a, v, 1, 256, &threads);
        else if (!strcmp(a, "--repeats")) bad = parse_int(a, v, 1, 1 << 20, &repeats);
        else if (!strcmp(a, "--warmup")) bad = parse_int(a, v, 0, 1 << 20, &warmup);
        else if (!strcmp(a, "--config") && v) cfg_name = v;
        else if (!strcmp(a, "--ops") && v) ops = v;
        else {
            fprintf(stderr, "bench_ops: %s flag '%s'\n", v ? "unknown" : "no value after", a);
            usage();
            return 2;
        }
        if (bad) return 2;
        i++;
    }
    if (gemm) {
        if (tg_set_num_threads(threads) != threads) {
            fprintf(stderr, "bench_ops: could not start %d threads\n", threads);
            return 1;
        }
        return run_gemm_bench(gemm_shapes, repeats, rounds, peak);
    }
    const config *c = NULL;
    for (size_t k = 0; k < sizeof CONFIGS / sizeof CONFIGS[0]; k++)
        if (!strcmp(CONFIGS[k].name, cfg_name)) c = &CONFIGS[k];
    if (!c) {
        fprintf(stderr, "bench_ops: unknown config '%s' (S, M, L or N)\n", cfg_name);
        return 2;
    }
    /* the ops to run, checked before any is run */
    const op_def *run[N_OPS];
    int n_run = 0;
    if (!ops) {
        for (int k = 0; k < N_OPS; k++) run[n_run++] = &OPS[k];
    } else {
        for (const char *s = ops; *s;) {
            size_t len = strcspn(s, ",");
            const op_def *d = find_op(s, len);
            if (!d) {
                fprintf(stderr, "bench_ops: unknown op '%.*s' (--list shows them)\n", (int)len, s);
                return 2;
            }
            bool seen = false;
            for (int k = 0; k < n_run; k++) seen |= run[k] == d;
            if (!seen) run[n_run++] = d;
            s += len + (s[len] == ',');
        }
        if (!n_run) {
            fprintf(stderr, "bench_ops: --ops names no op\n");
            return 2;
        }
    }
    if (tg_set_num_threads(threads) != threads) {
        fprintf(stderr, "bench_ops: could not start %d threads\n", threads);
        return 1;
    }
    tg_error err = {0};
    for (int k = 0; k < n_run; k++) {
        err.msg[0] = 0;
        if (run_op(run[k], c, warmup, repeats, &err)) {
            fprintf(stderr, "bench_ops: %s, config %s: %s\n", run[k]->name, c->name, err.msg);
            return 1;
        }
    }
    return 0;
}
