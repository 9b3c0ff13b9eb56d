/* The attention walkthrough's output, read back and checked.
 *
 *   attention_walkthrough_check path/to/attention_walkthrough
 *
 * Runs the program with --digits 17 (every f64 printed exactly), reads the
 * tensors and numbers it prints (formats in examples/attention_walkthrough/
 * print.c) and checks them against
 * - the tutorial's own numbers ([1.5, 1], (0.25, -0.25), [8, -8] -> 0.881,
 *   [1, 0] vs [0.5, 0], [25, 30] vs [10, 15]), from closed forms;
 * - an independent computation of the whole layer, forward and backward,
 *   and of each mistake, written here in plain loops from the printed
 *   inputs X, W_Q, W_K, W_V, W_O and dY (no tapegrad call);
 * and checks the f32 run against the f64 one, other shapes (one head, one
 * token, odd token counts, three heads), the options' error messages. */
#include <sys/wait.h>

#include "tg_test.h"

static const char *walkthrough; /* the program's path (argv[1]) */

/* ---- running the program and reading its output ----------------------- */

typedef struct run {
    char *out; /* stdout and stderr */
    int status; /* exit status, -1 if it did not exit */
} run;

static run run_program(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", walkthrough, args);
    FILE *f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    while ((n = fread(buf + len, 1, cap - 1 - len, f)) > 0) {
        len += n;
        if (cap - 1 - len == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
    }
    buf[len] = 0;
    int st = pclose(f);
    return (run){buf, WIFEXITED(st) ? WEXITSTATUS(st) : -1};
}

/* A run that must succeed with every check passed. */
static run run_ok(const char *args)
{
    run r = run_program(args);
    ck_assert_msg(r.status == 0, "'%s' exited %d:\n%.3000s", args, r.status, r.out);
    ck_assert_msg(!strstr(r.out, "check FAILED"), "'%s' has a failed check", args);
    ck_assert_msg(strstr(r.out, "\nall checks passed\n"), "'%s' lacks 'all checks passed'", args);
    return r;
}

#define MAXN 8192 /* H*T*T at most 32*16*16 */

typedef struct tens {
    int ndim, shape[4];
    int n; /* elements */
    double v[MAXN];
    double sum[MAXN]; /* "| sum = s" after each row, when printed */
    int n_sums;
} tens;

/* The start of the line that begins with `name` followed by `after`. */
static const char *find_line(const char *out, const char *name, const char *after)
{
    size_t ln = strlen(name), la = strlen(after);
    for (const char *p = out; (p = strstr(p, name)); p += ln)
        if ((p == out || p[-1] == '\n') && !strncmp(p + ln, after, la)) return p;
    return NULL;
}

/* Reads the tensor printed as "NAME (d0,...)   formula" and its rows. */
static tens *get(const char *out, const char *name)
{
    const char *p = find_line(out, name, " (");
    ck_assert_msg(p != NULL, "no tensor '%s' in the output", name);
    tens *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    p += strlen(name) + 2;
    t->n = 1;
    while (*p != ')') {
        char *end;
        long d = strtol(p, &end, 10);
        ck_assert_msg(end != p && d >= 1 && t->ndim < 4, "bad shape of '%s'", name);
        t->shape[t->ndim++] = (int)d;
        t->n *= (int)d;
        p = *end == ',' ? end + 1 : end;
    }
    ck_assert(t->n <= MAXN);
    p = strchr(p, '\n');
    int k = 0;
    while (k < t->n) {
        ck_assert_msg(p && !strncmp(p, "\n  [", 4), "'%s': row lines end after %d of %d values", name, k, t->n);
        p = strchr(p + 4, ']') + 1; /* past the row's index label */
        for (;;) {
            while (*p == ' ') p++;
            if (*p == '\n' || !*p) break;
            if (*p == '|') {
                ck_assert(!strncmp(p, "| sum =", 7));
                t->sum[t->n_sums++] = strtod(p + 7, (char **)&p);
                continue;
            }
            char *end;
            double v = strtod(p, &end);
            ck_assert_msg(end != p && k < t->n, "'%s': bad number at '%.20s'", name, p);
            t->v[k++] = v;
            p = end;
        }
    }
    return t;
}

/* The number printed as "NAME = value". */
static double value(const char *out, const char *name)
{
    const char *p = find_line(out, name, " = ");
    ck_assert_msg(p != NULL, "no value '%s' in the output", name);
    char *end;
    double v = strtod(p + strlen(name) + 3, &end);
    ck_assert_msg(end != p + strlen(name) + 3, "'%s' has no number", name);
    return v;
}

static void assert_shape(const tens *t, const char *name, int ndim, const int *shape)
{
    ck_assert_msg(t->ndim == ndim, "%s: %d dims, want %d", name, t->ndim, ndim);
    for (int i = 0; i < ndim; i++)
        ck_assert_msg(t->shape[i] == shape[i], "%s: dim %d is %d, want %d", name, i, t->shape[i], shape[i]);
}

/* |got - want| <= atol + rtol |want| for each element. */
static void assert_close(const char *what, const double *got, const double *want, int n, double atol, double rtol)
{
    for (int i = 0; i < n; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= atol + rtol * fabs(want[i]), "%s[%d] = %.17g, want %.17g (diff %.3g)",
                      what, i, got[i], want[i], fabs(got[i] - want[i]));
}

/* The printed tensor `name` against want[], with its shape. */
static void expect(const char *out, const char *name, int ndim, const int *shape, const double *want, double tol)
{
    tens *t = get(out, name);
    assert_shape(t, name, ndim, shape);
    assert_close(name, t->v, want, t->n, tol, tol);
    free(t);
}

static double max_abs(const double *a, const double *b, int n)
{
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs(a[i] - b[i]));
    return m;
}

/* ---- the layer, computed independently --------------------------------- */

typedef struct layer {
    int T, C, H, dh;
    double x[512], wq[1024], wk[1024], wv[1024], wo[1024], dy[512]; /* read from the output */
    /* forward */
    double q[512], k[512], v[512], qh[512], kh[512], vh[512];
    double s[MAXN], a[MAXN], o[512], om[512], y[512];
    /* backward of L = sum(dy * y), every step */
    double dwo[1024], dom[512], dO[512], dvh[512], da[MAXN], ds[MAXN], dqk[MAXN], dqh[512], dkh[512];
    double dq[512], dk[512], dv[512], dwq[1024], dwk[1024], dwv[1024], dx[512];
} layer;

typedef struct variant {
    bool wrong_split; /* reshape (1,T,C) straight to (1,H,T,dh) and back */
    bool zero_after; /* softmax over every key, then zero the future */
    bool by_d_model; /* divide the scores by sqrt(C), not sqrt(dh) */
} variant;

/* Where element (h, t, d) of the split heads sits in the (T, C) matrix's memory. */
static int src(const layer *L, bool wrong, int h, int t, int d)
{
    return wrong ? (h * L->T + t) * L->dh + d : t * L->C + h * L->dh + d;
}

static void matmul_tc(const double *x, const double *w, double *y, int T, int C) /* y = x w, (T,C)(C,C) */
{
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++) {
            double s = 0;
            for (int k = 0; k < C; k++) s += x[t * C + k] * w[k * C + c];
            y[t * C + c] = s;
        }
}

static void forward(layer *L, variant var)
{
    const int T = L->T, C = L->C, H = L->H, dh = L->dh;
    const double scale = sqrt((double)(var.by_d_model ? C : dh));
    matmul_tc(L->x, L->wq, L->q, T, C);
    matmul_tc(L->x, L->wk, L->k, T, C);
    matmul_tc(L->x, L->wv, L->v, T, C);
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++)
            for (int d = 0; d < dh; d++) {
                int i = (h * T + t) * dh + d, from = src(L, var.wrong_split, h, t, d);
                L->qh[i] = L->q[from];
                L->kh[i] = L->k[from];
                L->vh[i] = L->v[from];
            }
    for (int h = 0; h < H; h++)
        for (int i = 0; i < T; i++) {
            double *s = &L->s[(h * T + i) * T], *a = &L->a[(h * T + i) * T];
            for (int j = 0; j < T; j++) {
                double dot = 0;
                for (int d = 0; d < dh; d++) dot += L->qh[(h * T + i) * dh + d] * L->kh[(h * T + j) * dh + d];
                s[j] = dot / scale;
            }
            /* the keys the normaliser runs over: j <= i, or every key for the mistake */
            const int n_norm = var.zero_after ? T : i + 1;
            double mx = -INFINITY, z = 0;
            for (int j = 0; j < n_norm; j++) mx = fmax(mx, s[j]);
            for (int j = 0; j < n_norm; j++) z += exp(s[j] - mx);
            for (int j = 0; j < T; j++) a[j] = j <= i ? exp(s[j] - mx) / z : 0;
        }
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++)
            for (int d = 0; d < dh; d++) {
                double sum = 0;
                for (int j = 0; j < T; j++) sum += L->a[(h * T + t) * T + j] * L->vh[(h * T + j) * dh + d];
                L->o[(h * T + t) * dh + d] = sum;
                L->om[src(L, var.wrong_split, h, t, d)] = sum;
            }
    matmul_tc(L->om, L->wo, L->y, T, C);
}

/* dW = x^T dz for a (T,C) x and (T,C) dz */
static void weight_grad(const double *x, const double *dz, double *dw, int T, int C)
{
    for (int k = 0; k < C; k++)
        for (int c = 0; c < C; c++) {
            double s = 0;
            for (int t = 0; t < T; t++) s += x[t * C + k] * dz[t * C + c];
            dw[k * C + c] = s;
        }
}

/* Backward of the right layer (after forward with no mistake). */
static void backward(layer *L)
{
    const int T = L->T, C = L->C, H = L->H, dh = L->dh;
    const double scale = sqrt((double)dh);
    weight_grad(L->om, L->dy, L->dwo, T, C); /* dW_O = O_merged^T dY */
    for (int t = 0; t < T; t++)
        for (int k = 0; k < C; k++) {
            double s = 0;
            for (int c = 0; c < C; c++) s += L->dy[t * C + c] * L->wo[k * C + c];
            L->dom[t * C + k] = s; /* dO_merged = dY W_O^T */
        }
    for (int h = 0; h < H; h++)
        for (int t = 0; t < T; t++)
            for (int d = 0; d < dh; d++) L->dO[(h * T + t) * dh + d] = L->dom[src(L, false, h, t, d)];
    for (int h = 0; h < H; h++) {
        const double *a = &L->a[h * T * T], *qh = &L->qh[h * T * dh], *kh = &L->kh[h * T * dh],
                     *vh = &L->vh[h * T * dh], *dO = &L->dO[h * T * dh];
        double *da = &L->da[h * T * T], *ds = &L->ds[h * T * T], *dqk = &L->dqk[h * T * T];
        for (int i = 0; i < T; i++) {
            double dot = 0;
            for (int j = 0; j < T; j++) {
                double s = 0;
                for (int d = 0; d < dh; d++) s += dO[i * dh + d] * vh[j * dh + d];
                da[i * T + j] = s; /* dA = dO Vh^T */
                dot += a[i * T + j] * s;
            }
            for (int j = 0; j < T; j++) {
                ds[i * T + j] = a[i * T + j] * (da[i * T + j] - dot);
                dqk[i * T + j] = ds[i * T + j] / scale;
            }
        }
        for (int t = 0; t < T; t++)
            for (int d = 0; d < dh; d++) {
                double gq = 0, gk = 0, gv = 0;
                for (int j = 0; j < T; j++) {
                    gq += ds[t * T + j] * kh[j * dh + d] / scale; /* dQh = dS Kh / sqrt(dh) */
                    gk += ds[j * T + t] * qh[j * dh + d] / scale; /* dKh = dS^T Qh / sqrt(dh) */
                    gv += a[j * T + t] * dO[j * dh + d]; /* dVh = A^T dO */
                }
                const int at = src(L, false, h, t, d), e = (h * T + t) * dh + d;
                L->dqh[e] = L->dq[at] = gq;
                L->dkh[e] = L->dk[at] = gk;
                L->dvh[e] = L->dv[at] = gv;
            }
    }
    weight_grad(L->x, L->dq, L->dwq, T, C);
    weight_grad(L->x, L->dk, L->dwk, T, C);
    weight_grad(L->x, L->dv, L->dwv, T, C);
    for (int t = 0; t < T; t++) /* dX = dQ W_Q^T + dK W_K^T + dV W_V^T */
        for (int k = 0; k < C; k++) {
            double s = 0;
            for (int c = 0; c < C; c++)
                s += L->dq[t * C + c] * L->wq[k * C + c] + L->dk[t * C + c] * L->wk[k * C + c] +
                    L->dv[t * C + c] * L->wv[k * C + c];
            L->dx[t * C + k] = s;
        }
}

/* One backward step printed as NAME_hand, NAME_tape and NAME_fd: hand
 * and tape against want[] (this file's own backward) within tol, the
 * finite differences within 1e-8; the printed max |diff| values exactly
 * those of the printed tensors, and both of the program's checks passed. */
static void expect_step(const char *out, const char *name, int ndim, const int *shape, const double *want, double tol)
{
    char n[3][64], line[160];
    const char *tag[3] = {"hand", "tape", "fd"};
    tens *t[3];
    for (int k = 0; k < 3; k++) {
        snprintf(n[k], sizeof n[k], "%s_%s", name, tag[k]);
        t[k] = get(out, n[k]);
        assert_shape(t[k], n[k], ndim, shape);
        assert_close(n[k], t[k]->v, want, t[k]->n, k == 2 ? 1e-8 : tol, k == 2 ? 0 : tol);
    }
    for (int k = 1; k < 3; k++) {
        snprintf(line, sizeof line, "max_abs(%s-%s)", n[0], n[k]);
        ck_assert_msg(value(out, line) == max_abs(t[0]->v, t[k]->v, t[0]->n), "%s is not the printed tensors'", line);
        snprintf(line, sizeof line, "\ncheck ok: %s by hand agrees with %s (", name,
                 k == 1 ? "the tape" : "finite differences");
        ck_assert_msg(strstr(out, line), "no '%s'", line + 1);
    }
    for (int k = 0; k < 3; k++) free(t[k]);
}

/* Reads the inputs of a run into a fresh layer. */
static layer *read_layer(const char *out, int T, int C, int H)
{
    layer *L = calloc(1, sizeof *L);
    ck_assert_ptr_nonnull(L);
    L->T = T, L->C = C, L->H = H, L->dh = C / H;
    const char *names[6] = {"X", "W_Q", "W_K", "W_V", "W_O", "dY"};
    double *dest[6] = {L->x, L->wq, L->wk, L->wv, L->wo, L->dy};
    for (int i = 0; i < 6; i++) {
        tens *t = get(out, names[i]);
        if (i == 0 || i == 5) assert_shape(t, names[i], 3, (int[]){1, T, C});
        else assert_shape(t, names[i], 2, (int[]){C, C});
        memcpy(dest[i], t->v, sizeof(double) * t->n);
        free(t);
    }
    return L;
}

/* ---- the checks ----------------------------------------------------------- */

/* Everything about one f64 run of shape (T, C, H). */
static void check_layer_run(const char *args, int T, int C, int H)
{
    char full[256];
    snprintf(full, sizeof full, "--digits 17 %s", args);
    run r = run_ok(full);
    const char *out = r.out;
    const int dh = C / H;
    char head[160];
    snprintf(head, sizeof head, "T = %d tokens, d_model = %d, H = %d heads, d_head = %d, f64", T, C, H, dh);
    ck_assert_msg(strstr(out, head), "'%s': header lacks '%s'", args, head);

    layer *L = read_layer(out, T, C, H);
    forward(L, (variant){0});
    backward(L);
    const int tc[3] = {1, T, C}, heads[4] = {1, H, T, dh}, tt[4] = {1, H, T, T}, cc[2] = {C, C};
    const double tol = 1e-12;
    expect(out, "Q", 3, tc, L->q, tol);
    expect(out, "K", 3, tc, L->k, tol);
    expect(out, "V", 3, tc, L->v, tol);
    expect(out, "Q_split", 4, (int[]){1, T, H, dh}, L->q, tol); /* the same memory as Q */
    expect(out, "Qh", 4, heads, L->qh, tol);
    expect(out, "Kh", 4, heads, L->kh, tol);
    expect(out, "Vh", 4, heads, L->vh, tol);
    expect(out, "S", 4, tt, L->s, tol);
    expect(out, "A", 4, tt, L->a, tol);
    expect(out, "O", 4, heads, L->o, tol);
    expect(out, "O_merged", 3, tc, L->om, tol);
    expect(out, "Y", 3, tc, L->y, tol);

    /* the mask, S + M, and the rows of A */
    tens *m = get(out, "M"), *sm = get(out, "S+M"), *a = get(out, "A"), *blocked = get(out, "blocked");
    assert_shape(m, "M", 2, (int[]){T, T});
    ck_assert_int_eq(a->n_sums, H * T);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < T; i++) {
            double sum = 0;
            for (int j = 0; j < T; j++) {
                int e = (h * T + i) * T + j;
                sum += a->v[e];
                if (j > i) {
                    ck_assert(blocked->v[i * T + j] == 1 && m->v[i * T + j] == -INFINITY);
                    ck_assert(sm->v[e] == -INFINITY);
                    ck_assert_msg(a->v[e] == 0, "A[%d] = %g on a future key", e, a->v[e]);
                } else {
                    ck_assert(blocked->v[i * T + j] == 0 && m->v[i * T + j] == 0);
                    ck_assert(fabs(sm->v[e] - L->s[e]) <= tol);
                    ck_assert(a->v[e] > 0);
                }
            }
            ck_assert_msg(fabs(sum - 1) <= 1e-15, "row (%d,%d) of A sums to %.17g", h, i, sum);
            ck_assert_msg(fabs(a->sum[h * T + i] - 1) <= 1e-15, "printed row sum %.17g", a->sum[h * T + i]);
        }
    free(m), free(sm), free(a), free(blocked);

    /* backward: the loss, then every step by hand, by the tape and by finite differences */
    double loss = 0;
    for (int i = 0; i < T * C; i++) loss += L->dy[i] * L->y[i];
    ck_assert_msg(fabs(value(out, "L") - loss) <= tol, "L = %.17g, want %.17g", value(out, "L"), loss);
    expect_step(out, "dW_O", 2, cc, L->dwo, tol);
    expect_step(out, "dO_merged", 3, tc, L->dom, tol);
    expect_step(out, "dO", 4, heads, L->dO, tol);
    expect_step(out, "dVh", 4, heads, L->dvh, tol);
    expect_step(out, "dA", 4, tt, L->da, tol);
    expect_step(out, "dS", 4, tt, L->ds, tol);
    expect_step(out, "dQK", 4, tt, L->dqk, tol);
    expect_step(out, "dQh", 4, heads, L->dqh, tol);
    expect_step(out, "dKh", 4, heads, L->dkh, tol);
    expect_step(out, "dQ", 3, tc, L->dq, tol);
    expect_step(out, "dK", 3, tc, L->dk, tol);
    expect_step(out, "dV", 3, tc, L->dv, tol);
    expect_step(out, "dW_Q", 2, cc, L->dwq, tol);
    expect_step(out, "dW_K", 2, cc, L->dwk, tol);
    expect_step(out, "dW_V", 2, cc, L->dwv, tol);
    expect_step(out, "dX", 3, tc, L->dx, tol);
    /* the steps come in the backward's order */
    const char *order[] = {"dY (",      "dW_O_hand (", "dO_merged_hand (", "dO_hand (",   "dVh_hand (", "dA_hand (",
                           "dS_hand (", "dQK_hand (",  "dQh_hand (",       "dKh_hand (",  "dQ_hand (",  "dK_hand (",
                           "dV_hand (", "dW_Q_hand (", "dW_K_hand (",      "dW_V_hand (", "dX_hand ("};
    const char *prev = out;
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        const char *at = find_line(prev, order[i], "");
        ck_assert_msg(at && at > prev, "'%s' is missing or out of order", order[i]);
        prev = at;
    }
    tens *hand = get(out, "dS_hand"), *tape = get(out, "dS_tape"), *fd = get(out, "dS_fd");
    assert_close("dS_tape", tape->v, hand->v, tape->n, 1e-15, 0);
    for (int row = 0; row < H * T; row++) {
        double sum = 0;
        for (int j = 0; j < T; j++) {
            sum += hand->v[row * T + j];
            if (j > row % T) ck_assert(tape->v[row * T + j] == 0 && fd->v[row * T + j] == 0);
        }
        ck_assert_msg(fabs(sum) <= 1e-14, "row %d of dS sums to %g", row, sum);
        if (row % T == 0) /* query 0 sees only key 0: its whole row is 0 */
            for (int j = 0; j < T; j++) ck_assert(hand->v[row * T + j] == 0);
    }
    free(hand), free(tape), free(fd);
    const char *w[4] = {"W_Q", "W_K", "W_V", "W_O"};
    for (int i = 0; i < 4; i++) {
        char line[64];
        snprintf(line, sizeof line, "\ncheck ok: gradcheck %s: gradcheck: ok, %d elements", w[i], C * C);
        ck_assert_msg(strstr(out, line), "'%s': no passing gradcheck of %s", args, w[i]);
    }

    /* mistake 1: zero after the softmax */
    layer *Z = read_layer(out, T, C, H);
    forward(Z, (variant){.zero_after = true});
    expect(out, "mistake_mask.A_right", 4, tt, L->a, tol);
    expect(out, "mistake_mask.A_wrong", 4, tt, Z->a, tol);
    expect(out, "mistake_mask.O_wrong", 4, heads, Z->o, tol);
    tens *rs = get(out, "mistake_mask.row_sum");
    assert_shape(rs, "mistake_mask.row_sum", 3, (int[]){1, H, T});
    for (int row = 0; row < H * T; row++) {
        /* r_i = sum_{j<=i} e^{S_ij} / sum_j e^{S_ij}, from the scores */
        double num = 0, den = 0;
        for (int j = 0; j < T; j++) {
            den += exp(L->s[row * T + j]);
            if (j <= row % T) num += exp(L->s[row * T + j]);
        }
        ck_assert_msg(fabs(rs->v[row] - num / den) <= tol, "row_sum[%d] = %.17g, want %.17g", row, rs->v[row],
                      num / den);
        if (row % T == T - 1) ck_assert(fabs(rs->v[row] - 1) <= 1e-15); /* the last row blocks nothing */
        else ck_assert(rs->v[row] < 1);
        for (int j = 0; j < T; j++) ck_assert(fabs(Z->a[row * T + j] - rs->v[row] * L->a[row * T + j]) <= tol);
    }
    free(rs);
    ck_assert(fabs(value(out, "mistake_mask.max_abs(A_wrong-A_right)") - max_abs(Z->a, L->a, H * T * T)) <= tol);
    ck_assert(fabs(value(out, "mistake_mask.max_abs(O_wrong-O_right)") - max_abs(Z->o, L->o, H * T * dh)) <= tol);
    if (T > 1) ck_assert(max_abs(Z->a, L->a, H * T * T) > 0.01);

    /* mistake 2: reshape straight to (B,H,T,dh) */
    layer *W = read_layer(out, T, C, H);
    forward(W, (variant){.wrong_split = true});
    expect(out, "mistake_split.Qh_right", 4, heads, L->qh, tol);
    expect(out, "mistake_split.Qh_wrong", 4, heads, W->qh, tol);
    expect(out, "mistake_split.Y_right", 3, tc, L->y, tol);
    expect(out, "mistake_split.Y_wrong", 3, tc, W->y, tol);
    double dq = max_abs(W->qh, L->qh, T * C), dy = max_abs(W->y, L->y, T * C);
    ck_assert(fabs(value(out, "mistake_split.max_abs(Qh_wrong-Qh_right)") - dq) <= tol);
    ck_assert(fabs(value(out, "mistake_split.max_abs(Y_wrong-Y_right)") - dy) <= tol);
    if (H == 1 || T == 1) ck_assert(dq == 0 && dy == 0);
    else ck_assert(dq > 0.01 && dy > 0.01);

    /* mistake 3: scale by sqrt(d_model) */
    layer *D = read_layer(out, T, C, H);
    forward(D, (variant){.by_d_model = true});
    expect(out, "mistake_scale.S_right", 4, tt, L->s, tol);
    expect(out, "mistake_scale.S_wrong", 4, tt, D->s, tol);
    expect(out, "mistake_scale.A_wrong", 4, tt, D->a, tol);
    const double factor = 1 / sqrt((double)H);
    ck_assert(fabs(value(out, "mistake_scale.factor") - factor) <= 1e-15);
    for (int e = 0; e < H * T * T; e++) ck_assert(fabs(D->s[e] - factor * L->s[e]) <= tol);
    double da = max_abs(D->a, L->a, H * T * T), dyy = max_abs(D->y, L->y, T * C);
    ck_assert(fabs(value(out, "mistake_scale.max_abs(A_wrong-A_right)") - da) <= tol);
    ck_assert(fabs(value(out, "mistake_scale.max_abs(Y_wrong-Y_right)") - dyy) <= tol);
    if (H == 1 || T == 1) ck_assert(da == 0 && dyy == 0);
    else ck_assert(da > 1e-3);

    free(L), free(Z), free(W), free(D);
    free(r.out);
}

START_TEST(default_run)
{
    check_layer_run("", 4, 8, 2);
    run r = run_ok("--seed 1 --tokens 4 --d-model 8 --heads 2 --dtype f64");
    ck_assert_msg(strstr(r.out, "seed 1\n"), "the defaults are seed 1, T 4, d_model 8, 2 heads, f64");
    run d = run_ok("");
    ck_assert_str_eq(r.out, d.out);
    free(r.out), free(d.out);
}
END_TEST

START_TEST(other_shapes)
{
    check_layer_run("--heads 1 --tokens 3", 3, 8, 1);
    check_layer_run("--heads 4 --tokens 5 --seed 7", 5, 8, 4);
    check_layer_run("--heads 8 --tokens 1", 1, 8, 8);
    check_layer_run("--tokens 7 --seed 3", 7, 8, 2);
    check_layer_run("--d-model 6 --heads 3 --tokens 5", 5, 6, 3);
    check_layer_run("--d-model 12 --heads 3 --tokens 9 --seed 11", 9, 12, 3);
}
END_TEST

START_TEST(seed_changes_the_inputs)
{
    run a = run_ok("--digits 17"), b = run_ok("--digits 17 --seed 2");
    tens *xa = get(a.out, "X"), *xb = get(b.out, "X");
    ck_assert(max_abs(xa->v, xb->v, xa->n) > 0.1);
    free(xa), free(xb), free(a.out), free(b.out);
}
END_TEST

/* The tutorial's numbers, from closed forms; tol and tail_rtol (relative,
 * for a weight of 1e-7) fit the run's dtype. */
static void check_cases(const char *out, double tol, double tail_rtol)
{
    const int two[1] = {2};
    expect(out, "readout.A", 1, two, (double[]){0.75, 0.25}, tol);
    expect(out, "readout.O", 1, two, (double[]){1.5, 1}, tol);

    expect(out, "softgrad.P", 1, two, (double[]){0.5, 0.5}, 0);
    expect(out, "softgrad.dS_tape", 1, two, (double[]){0.25, -0.25}, 0);
    expect(out, "softgrad.dS_hand", 1, two, (double[]){0.25, -0.25}, 0);
    expect(out, "softgrad.dS_diag", 1, two, (double[]){0.25, 0}, 0);
    expect(out, "softgrad.dS_tape_ones", 1, two, (double[]){0, 0}, 0);
    expect(out, "softgrad.dS_hand_ones", 1, two, (double[]){0, 0}, 0);

    const double tail = 1 / (1 + exp(16.0)); /* e^-8 / (e^8 + e^-8) */
    tens *u = get(out, "scaling.A_unscaled");
    ck_assert(fabs(u->v[1] - tail) <= tail_rtol * tail && fabs(u->v[0] - (1 - tail)) <= tol);
    free(u);
    expect(out, "scaling.A_scaled", 1, two, (double[]){1 / (1 + exp(-2.0)), 1 / (1 + exp(2.0))}, tol);
    tens *sc = get(out, "scaling.A_scaled");
    ck_assert(fabs(sc->v[0] - 0.881) < 5e-4 && fabs(sc->v[1] - 0.119) < 5e-4); /* the tutorial's rounding */
    free(sc);
    const double z = 16 / sqrt(512.0);
    expect(out, "scaling.A_dmodel", 1, two, (double[]){1 / (1 + exp(-z)), 1 / (1 + exp(z))}, tol);
    expect(out, "scaling.A_large", 1, two, (double[]){0.5, 0.5}, 0);

    expect(out, "mask.A_before", 1, two, (double[]){1, 0}, 0);
    expect(out, "mask.A_after", 1, two, (double[]){0.5, 0}, 0);
    tens *b = get(out, "mask.A_before"), *a = get(out, "mask.A_after");
    ck_assert(b->n_sums == 1 && b->sum[0] == 1 && a->n_sums == 1 && a->sum[0] == 0.5);
    free(b), free(a);

    const int col[2] = {2, 1};
    expect(out, "kv.O_aligned", 2, col, (double[]){25, 30}, tol * 30);
    expect(out, "kv.O_upper_left", 2, col, (double[]){10, 15}, tol * 15);
    expect(out, "kv.A_aligned", 2, (int[]){2, 5}, (double[]){0.25, 0.25, 0.25, 0.25, 0, 0.2, 0.2, 0.2, 0.2, 0.2}, tol);
    expect(out, "kv.A_upper_left", 2, (int[]){2, 5}, (double[]){1, 0, 0, 0, 0, 0.5, 0.5, 0, 0, 0}, 0);
}

START_TEST(tutorial_cases)
{
    run r = run_ok("--digits 17");
    check_cases(r.out, 1e-15, 1e-13);
    free(r.out);
    r = run_ok("--digits 17 --dtype f32");
    check_cases(r.out, 2e-7, 1e-6);
    free(r.out);
}
END_TEST

/* f32 starts from the same numbers as f64 and agrees to about 1e-6 on
 * small examples (at 16 tokens and width 32, f32 rounding alone nears
 * 1e-6 in dW_Q, so larger shapes would need a wider tolerance). */
static void check_f32_against_f64(const char *args)
{
    char a64[256], a32[256];
    snprintf(a64, sizeof a64, "--digits 17 %s", args);
    snprintf(a32, sizeof a32, "--digits 17 --dtype f32 %s", args);
    run a = run_ok(a64), b = run_ok(a32);
    ck_assert(strstr(b.out, ", f32, seed "));
    const char *same[] = {"X", "W_Q", "W_K", "W_V", "W_O", "dY"};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        tens *x = get(a.out, same[i]), *y = get(b.out, same[i]);
        ck_assert_msg(max_abs(x->v, y->v, x->n) == 0, "%s differs between f32 and f64", same[i]);
        free(x), free(y);
    }
    const char *close[] = {"Q",
                           "S",
                           "A",
                           "O",
                           "Y",
                           "dW_O_hand",
                           "dW_O_tape",
                           "dO_merged_tape",
                           "dVh_tape",
                           "dA_hand",
                           "dA_tape",
                           "dS_hand",
                           "dS_tape",
                           "dQK_tape",
                           "dQh_tape",
                           "dKh_tape",
                           "dW_Q_hand",
                           "dW_Q_tape",
                           "dW_K_tape",
                           "dW_V_tape",
                           "dX_hand",
                           "dX_tape",
                           "mistake_mask.A_wrong",
                           "mistake_split.Y_wrong",
                           "mistake_scale.A_wrong"};
    double worst = 0; /* largest |f32 - f64| / (1e-6 (1 + |f64|)) */
    for (size_t i = 0; i < sizeof close / sizeof *close; i++) {
        tens *x = get(a.out, close[i]), *y = get(b.out, close[i]);
        ck_assert_int_eq(x->n, y->n);
        assert_close(close[i], y->v, x->v, x->n, 1e-6, 1e-6);
        for (int k = 0; k < x->n; k++) worst = fmax(worst, fabs(x->v[k] - y->v[k]) / (1e-6 * (1 + fabs(x->v[k]))));
        free(x), free(y);
    }
    printf("f32 vs f64 (%s): largest |f32 - f64| is %.2f of the tolerance 1e-6 (1 + |f64|)\n", args, worst);
    free(a.out), free(b.out);
}

START_TEST(f32_agrees_with_f64)
{
    check_f32_against_f64("");
    check_f32_against_f64("--tokens 7 --heads 4 --seed 5");
}
END_TEST

START_TEST(bad_options)
{
    static const struct {
        const char *args, *message;
    } bad[] = {
        {"--heads 3", "--heads 3 does not divide --d-model 8"},
        {"--d-model 10 --heads 4", "--heads 4 does not divide --d-model 10"},
        {"--tokens 0", "--tokens: 0 is outside [1, 16]"},
        {"--tokens 17", "--tokens: 17 is outside [1, 16]"},
        {"--heads two", "--heads: 'two' is not a whole number"},
        {"--tokens 2.5", "--tokens: '2.5' is not a whole number"},
        {"--dtype f16", "--dtype: 'f16' is not f32 or f64"},
        {"--seed", "--seed needs a value"},
        {"--frobnicate 1", "unknown option '--frobnicate'"},
        {"tokens", "unexpected argument 'tokens'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        run r = run_program(bad[i].args);
        ck_assert_msg(r.status == 2, "'%s' exited %d, want 2", bad[i].args, r.status);
        ck_assert_msg(strstr(r.out, bad[i].message), "'%s' printed '%s', want '%s'", bad[i].args, r.out,
                      bad[i].message);
        ck_assert_msg(!strstr(r.out, "=="), "'%s' printed a walkthrough", bad[i].args);
        free(r.out);
    }
    run h = run_program("--help");
    ck_assert_int_eq(h.status, 0);
    const char *opts[] = {
        "usage: attention_walkthrough", "--seed", "--tokens", "--d-model", "--heads", "--dtype", "--digits"};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) ck_assert_msg(strstr(h.out, opts[i]), "%s", opts[i]);
    free(h.out);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s path/to/attention_walkthrough\n", argv[0]);
        return 2;
    }
    walkthrough = argv[1];
    return tt_main(
        "attention_walkthrough", "output", 120,
        TT_TESTS(default_run, tutorial_cases, f32_agrees_with_f64, other_shapes, seed_changes_the_inputs, bad_options));
}
