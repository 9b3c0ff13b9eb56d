/* Elementwise unary ops. y = f(x); backward dx += dy * f'(x).
 *
 *   scale  y = s x                        f' = s
 *   neg    y = -x                         f' = -1
 *   exp    y = e^x                        f' = y
 *   log    y = ln x        (x > 0)        f' = 1 / x
 *   tanh   y = tanh x                     f' = 1 - y^2
 *   sqrt   y = sqrt x      (x >= 0)       f' = 1 / (2 y), taken as 0 at x = 0
 *   relu   y = max(x, 0)                  f' = [x > 0]
 *   relu2  y = max(x, 0)^2                f' = 2 max(x, 0)     (modded-nanogpt's MLP)
 *   softcap  y = s tanh(x / s)   (s > 0)  f' = 1 - (y / s)^2   (Gemma's and
 *                                         modded-nanogpt's cap on the logits)
 *   gelu   y = x Phi(x),  Phi(x) = (1 + erf(x / sqrt 2)) / 2
 *                                         f' = Phi(x) + x phi(x),
 *                                         phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
 *   gelu_tanh  y = x (1 + tanh u) / 2,  u = k (x + c x^3),
 *              k = sqrt(2 / pi), c = 0.044715
 *                                         f' = (1 + t) / 2 + x (1 - t^2) k (1 + 3 c x^2) / 2,
 *                                         t = tanh u
 *
 * f32 GELU, both forms, runs its own kernels (ops/gelu_f32.c), with the
 * call-free Phi and exp of fastmath_internal.h, so its loops vectorise
 * (erf: error of Phi <= 1e-7, float rounding; its backward folds Phi and
 * x phi into one expression; tanh: (1 + tanh u) / 2 as 1 / (1 + exp(-2u)),
 * one exp and one division). f64 keeps libm. So does the soft cap's forward: f64 here,
 * f32 in ops/softcap_f32.c (a call-free tanh that vectorises, for the
 * (B,T,V) logits); its backward reads only y and shares its loop.
 * Long tensors are cut into chunks, one per thread. */
#include "ops.h"

#include <tgmath.h>

#include "../core/op.h"
#include "../core/parallel.h"
#include "kernels_internal.h"

enum { SCALE, NEG, EXP, LOG, TANH, SQRT, RELU, GELU, GELU_TANH, RELU2, SOFTCAP };
static const char *const NAMES[] = {"scale", "neg",  "exp",  "log",   "tanh",   "sqrt",
                                    "relu",  "gelu", "gelu", "relu2", "softcap"};

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794
#define GELU_K 0.79788456080286535588 /* sqrt(2 / pi) */
#define GELU_C 0.044715

/* ---- the op ----------------------------------------------------------- */

/* One elementwise pass, cut into chunks across threads. */
typedef struct unary_job {
    int op;
    bool backward, acc; /* acc: add into dx; else store (a new gradient) */
    tg_dtype dt;
    double s;
    const void *x, *y, *dy;
    void *out; /* y (forward) or dx (backward) */
} unary_job;

#define UNARY_GRAIN 16384 /* elements: below this a thread is not worth waking */

static void unary_part(void *ctx, int64_t lo, int64_t hi);
static void unary_backward(tg_graph *g, tg_node *nd);

/* log needs x > 0 and sqrt x >= 0: name the first element outside. */
static bool check_domain(tg_graph *g, int op, const tg_tensor *x)
{
    if (op != LOG && op != SQRT) return true;
    for (int64_t i = 0; i < x->numel; i++) {
        double v = tg_tensor_get(x, i);
        if (op == LOG ? !(v > 0) : !(v >= 0)) {
            char s[64];
            tg_fail(g, "%s: input x %s %s has %g at element %lld; %s", NAMES[op], tg_dtype_name(x->dtype),
                    tg_shape_str(x, s, sizeof s), v, (long long)i, op == LOG ? "log needs x > 0" : "sqrt needs x >= 0");
            return false;
        }
    }
    return true;
}

static tg_tensor *unary(tg_graph *g, int op, tg_tensor *x, double s)
{
    tg_tensor *in[1] = {x};
    if (!tg_op_begin(g, NAMES[op], 1, in) || !tg_op_check_float(g, NAMES[op], "x", x)) return NULL;
    if (!check_domain(g, op, x)) return NULL;
    tg_tensor *y = tg_op_output(g, x->dtype, x->ndim, x->shape);
    if (!y) return NULL;
    unary_job j = {op, false, false, x->dtype, s, x->data, NULL, NULL, y->data};
    tg_parallel_for(x->numel, UNARY_GRAIN, unary_part, &j);
    tg_node *nd = tg_op_record(g, NAMES[op], unary_backward, y, 1, in);
    if (nd) {
        nd->iarg[0] = op;
        nd->darg[0] = s;
    }
    return tg_graph_error(g) ? NULL : y;
}

tg_tensor *tg_scale(tg_graph *g, tg_tensor *x, double s)
{
    if (!isfinite(s)) {
        if (!tg_op_begin(g, "scale", 1, &x)) return NULL;
        return tg_fail(g, "scale: factor must be finite, got %g", s);
    }
    return unary(g, SCALE, x, s);
}
tg_tensor *tg_neg(tg_graph *g, tg_tensor *x) { return unary(g, NEG, x, 0); }
tg_tensor *tg_exp(tg_graph *g, tg_tensor *x) { return unary(g, EXP, x, 0); }
tg_tensor *tg_log(tg_graph *g, tg_tensor *x) { return unary(g, LOG, x, 0); }
tg_tensor *tg_tanh(tg_graph *g, tg_tensor *x) { return unary(g, TANH, x, 0); }
tg_tensor *tg_sqrt(tg_graph *g, tg_tensor *x) { return unary(g, SQRT, x, 0); }
tg_tensor *tg_relu(tg_graph *g, tg_tensor *x) { return unary(g, RELU, x, 0); }
tg_tensor *tg_relu2(tg_graph *g, tg_tensor *x) { return unary(g, RELU2, x, 0); }

tg_tensor *tg_softcap(tg_graph *g, tg_tensor *x, double s)
{
    if (!(s > 0 && isfinite(s))) {
        if (!tg_op_begin(g, "softcap", 1, &x)) return NULL;
        return tg_fail(g, "softcap: the cap must be finite and > 0, got %g", s);
    }
    return unary(g, SOFTCAP, x, s);
}

tg_tensor *tg_gelu(tg_graph *g, tg_tensor *x, tg_gelu_mode mode)
{
    if (mode != TG_GELU_ERF && mode != TG_GELU_TANH) {
        if (!tg_op_begin(g, "gelu", 1, &x)) return NULL;
        return tg_fail(g, "gelu: unknown mode %d (use TG_GELU_ERF or TG_GELU_TANH)", (int)mode);
    }
    return unary(g, mode == TG_GELU_ERF ? GELU : GELU_TANH, x, 0);
}

/* ---- the reference kernels (f64), and the f32 ones they share --------- */

/* The simple ops, f32 and f64 from one text: forward_f32, backward_f32,
 * forward_f64, backward_f64 (switching on op). */
#define T float
#define KERNEL(name) name##_f32
#include "unary_kernels.inc"
#define T double
#define KERNEL(name) name##_f64
#include "unary_kernels.inc"

/* The reference GELU (erf), f64: y = x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2 */
void tg_gelu_forward_f64(int64_t n, const double *restrict x, double *restrict y)
{
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * 0.5 * (1 + erf(x[i] * INV_SQRT2));
}

/* gelu' x = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi) */
static inline double gelu_grad_f64(double v)
{
    return 0.5 * (1 + erf(v * INV_SQRT2)) + v * INV_SQRT_2PI * exp(-0.5 * v * v);
}

/* dx += dy gelu'(x), or dx = dy gelu'(x) when !acc (a new gradient) */
void tg_gelu_backward_f64(int64_t n, const double *restrict x, const double *restrict dy, double *restrict dx, bool acc)
{
    if (acc)
        for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * gelu_grad_f64(x[i]);
    else
        for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * gelu_grad_f64(x[i]);
}

/* The reference soft cap, f64: y = s tanh(x / s) */
void tg_softcap_forward_f64(int64_t n, double s, const double *restrict x, double *restrict y)
{
    for (int64_t i = 0; i < n; i++) y[i] = s * tanh(x[i] / s);
}

/* The reference GELU (tanh form), f64: y = x (1 + tanh u) / 2 */
void tg_gelu_tanh_forward_f64(int64_t n, const double *restrict x, double *restrict y)
{
    for (int64_t i = 0; i < n; i++) {
        const double v = x[i];
        y[i] = 0.5 * v * (1 + tanh(GELU_K * (v + GELU_C * v * v * v)));
    }
}

/* gelu' x = (1 + t) / 2 + x (1 - t^2) u' / 2, t = tanh u, u' = k (1 + 3c x^2) */
static inline double gelu_tanh_grad_f64(double v)
{
    const double t = tanh(GELU_K * (v + GELU_C * v * v * v));
    const double du = GELU_K * (1 + 3 * GELU_C * v * v);
    return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * du;
}

void tg_gelu_tanh_backward_f64(int64_t n, const double *restrict x, const double *restrict dy, double *restrict dx,
                               bool acc)
{
    if (acc)
        for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * gelu_tanh_grad_f64(x[i]);
    else
        for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * gelu_tanh_grad_f64(x[i]);
}

/* ---- backward, and the chunks shared out among threads ---------------- */

static void unary_backward(tg_graph *g, tg_node *nd)
{
    tg_tensor *x = nd->in[0], *y = nd->out;
    bool store;
    void *dx = tg_grad_store(g, x, &store);
    if (!dx) return;
    unary_job j = {nd->iarg[0], true, !store, x->dtype, nd->darg[0], x->data, y->data, y->grad, dx};
    tg_parallel_for(x->numel, UNARY_GRAIN, unary_part, &j);
}

static void unary_part(void *ctx, int64_t lo, int64_t hi)
{
    const unary_job *j = ctx;
    const int64_t n = hi - lo;
    if (j->dt == TG_F32) {
        const float *x = (const float *)j->x + lo, *y = j->y ? (const float *)j->y + lo : NULL;
        float *out = (float *)j->out + lo;
        if (!j->backward && j->op == GELU) tg_gelu_forward_f32(n, x, out);
        else if (!j->backward && j->op == GELU_TANH) tg_gelu_tanh_forward_f32(n, x, out);
        else if (!j->backward && j->op == SOFTCAP) tg_softcap_forward_f32(n, (float)j->s, x, out);
        else if (!j->backward) forward_f32(j->op, (float)j->s, n, x, out);
        else if (j->op == GELU) tg_gelu_backward_f32(n, x, (const float *)j->dy + lo, out, j->acc);
        else if (j->op == GELU_TANH) tg_gelu_tanh_backward_f32(n, x, (const float *)j->dy + lo, out, j->acc);
        else backward_f32(j->op, (float)j->s, n, x, y, (const float *)j->dy + lo, out, j->acc);
    } else {
        const double *x = (const double *)j->x + lo, *y = j->y ? (const double *)j->y + lo : NULL;
        double *out = (double *)j->out + lo;
        if (!j->backward && j->op == GELU) tg_gelu_forward_f64(n, x, out);
        else if (!j->backward && j->op == GELU_TANH) tg_gelu_tanh_forward_f64(n, x, out);
        else if (!j->backward && j->op == SOFTCAP) tg_softcap_forward_f64(n, j->s, x, out);
        else if (!j->backward) forward_f64(j->op, j->s, n, x, out);
        else if (j->op == GELU) tg_gelu_backward_f64(n, x, (const double *)j->dy + lo, out, j->acc);
        else if (j->op == GELU_TANH) tg_gelu_tanh_backward_f64(n, x, (const double *)j->dy + lo, out, j->acc);
        else backward_f64(j->op, j->s, n, x, y, (const double *)j->dy + lo, out, j->acc);
    }
}
