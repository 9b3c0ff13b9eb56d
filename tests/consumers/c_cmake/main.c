/* A program built against an installed tapegrad with find_package
 * (tests/install_consumers.sh): a linear layer in a parameter store,
 * fitted by SGD to targets y = 2 x0 - x1 + 0.5; the weights must come out
 * as those numbers. */
#include <math.h>
#include <stdio.h>

#include "tapegrad.h"

int main(void)
{
    enum { N = 16 };
    float xv[N * 2], yv[N];
    for (int i = 0; i < N; i++) {
        xv[2 * i] = (float)(i % 4) - 1.5f;
        xv[2 * i + 1] = (float)(i / 4) - 1.5f;
        yv[i] = 2 * xv[2 * i] - xv[2 * i + 1] + 0.5f;
    }
    tg_params *p = tg_params_new(TG_F32, NULL);
    tg_tensor *w = tg_params_add(p, "w", 2, (int[]){1, 2}, NULL);
    tg_tensor *b = tg_params_add(p, "b", 1, (int[]){1}, NULL);
    tg_sgd *opt = tg_sgd_new(p, 0.9, 0, NULL);
    tg_graph *g = tg_graph_new();
    if (!w || !b || !opt || !g) {
        fprintf(stderr, "c_cmake: set-up failed\n");
        return 1;
    }
    double first = 0, last = 0;
    for (int step = 0; step < 200; step++) {
        tg_tensor *x = tg_tensor_from(g, TG_F32, 2, (int[]){N, 2}, xv);
        tg_tensor *y = tg_tensor_from(g, TG_F32, 2, (int[]){N, 1}, yv);
        tg_tensor *d = tg_sub(g, tg_linear(g, x, w, b), y);
        tg_tensor *loss = tg_mean_all(g, tg_mul(g, d, d));
        if (!loss || tg_graph_backward(g, loss) != 0) {
            fprintf(stderr, "c_cmake: step %d: %s\n", step, tg_graph_error(g));
            return 1;
        }
        last = tg_tensor_item(loss);
        if (step == 0) first = last;
        tg_sgd_step(opt, 0.05, NULL);
        tg_params_zero_grad(p);
        tg_graph_reset(g);
    }
    const float *wd = w->data, *bd = b->data;
    printf("c_cmake: loss %.3g -> %.3g, w (%.4f, %.4f), b %.4f\n", first, last, wd[0], wd[1], bd[0]);
    const int ok = last < 1e-6 && fabsf(wd[0] - 2) < 1e-3f && fabsf(wd[1] + 1) < 1e-3f && fabsf(bd[0] - 0.5f) < 1e-3f;
    tg_graph_free(g);
    tg_sgd_free(opt);
    tg_params_free(p);
    return ok ? 0 : 1;
}
