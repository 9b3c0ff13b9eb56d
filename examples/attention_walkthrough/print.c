/* attention_walkthrough: how numbers are printed.
 *
 * Every number appears in one of two line shapes, so that a reader can
 * follow it and a test can read it back:
 *
 *   NAME (d0,d1,...)   formula        a tensor: its name and shape at
 *     [i0,i1,:]   v  v  v  ...        column 0, then one line per row of
 *                                     its last axis (with "| sum = s"
 *                                     after the row when the sums matter)
 *
 *   NAME = value   note               one number
 *
 *   check ok: what was checked        a check the program makes itself
 *   check FAILED: ...                 (any failure: exit status 1)
 *
 * Prose is indented by two spaces. Values are printed with %g at the
 * number of significant digits --digits asks for (17 prints an f64
 * exactly); -0 is printed as 0. */
#include "walkthrough.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

static int digits = 5;

void print_set_digits(int d) { digits = d; }

void section(const char *title) { printf("\n== %s ==\n", title); }

void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("  ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
}

static void number(double v)
{
    if (v == 0) v = 0; /* -0 -> 0 */
    printf(" %*.*g", digits + 6, digits, v); /* room for "-1.2345e-05" */
}

static void tensor_lines(const char *name, const tg_tensor *t, bool sums, const char *formula, va_list ap)
{
    char shape[64];
    printf("%s %s   ", name, tg_shape_str(t, shape, sizeof shape));
    vprintf(formula, ap);
    fputc('\n', stdout);
    const int n = t->ndim ? t->shape[t->ndim - 1] : 1;
    for (int64_t row = 0; row < t->numel / n; row++) {
        /* the row's index: all but the last axis, then ":" */
        char label[64] = "[";
        int len = 1;
        int64_t rest = row;
        int idx[TG_MAX_DIMS] = {0};
        for (int d = t->ndim - 2; d >= 0; d--) {
            idx[d] = (int)(rest % t->shape[d]);
            rest /= t->shape[d];
        }
        for (int d = 0; d + 1 < t->ndim; d++) len += snprintf(label + len, sizeof label - len, "%d,", idx[d]);
        snprintf(label + len, sizeof label - len, ":]");
        printf("  %-10s", label);
        double sum = 0;
        for (int j = 0; j < n; j++) {
            double v = tg_tensor_get(t, row * n + j);
            sum += v;
            number(v);
        }
        if (sums) {
            printf("   | sum =");
            number(sum);
        }
        fputc('\n', stdout);
    }
}

void show(const char *name, const tg_tensor *t, const char *formula, ...)
{
    va_list ap;
    va_start(ap, formula);
    tensor_lines(name, t, false, formula, ap);
    va_end(ap);
}

void show_with_sums(const char *name, const tg_tensor *t, const char *formula, ...)
{
    va_list ap;
    va_start(ap, formula);
    tensor_lines(name, t, true, formula, ap);
    va_end(ap);
}

void show_value(const char *name, double v, const char *note, ...)
{
    printf("%s =", name);
    if (v == 0) v = 0;
    printf(" %.*g   ", digits, v);
    va_list ap;
    va_start(ap, note);
    vprintf(note, ap);
    va_end(ap);
    fputc('\n', stdout);
}

tg_tensor gradient_of(const tg_tensor *t)
{
    tg_tensor view = *t; /* same dtype and shape, the gradient's buffer as data */
    view.data = t->grad;
    view.grad = NULL;
    return view;
}

double max_abs_diff(const tg_tensor *a, const tg_tensor *b)
{
    double m = 0;
    for (int64_t i = 0; i < a->numel; i++) {
        double d = fabs(tg_tensor_get(a, i) - tg_tensor_get(b, i));
        if (isnan(d)) return d;
        if (d > m) m = d;
    }
    return m;
}

static int n_failed;

bool check(bool ok, const char *fmt, ...)
{
    printf("check %s: ", ok ? "ok" : "FAILED");
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    if (!ok) n_failed++;
    return ok;
}

int checks_failed(void) { return n_failed; }

bool graph_ok(tg_graph *g, const char *what)
{
    const char *e = tg_graph_error(g);
    if (!e) return true;
    fprintf(stderr, "attention_walkthrough: %s failed: %s\n", what, e);
    return false;
}
