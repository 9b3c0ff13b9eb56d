/* A program built against an installed tapegrad with pkg-config and a
 * plain cc command line (tests/install_consumers.sh):
 * L = sum(tanh(x w)), its gradient by the tape against the one written
 * out by hand, dL/dw = x^T (1 - tanh(x w)^2), and tg_gradcheck's verdict. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tapegrad.h"

static tg_tensor *f(tg_graph *g, tg_tensor **in, void *ctx)
{
    (void)ctx;
    return tg_tanh(g, tg_matmul(g, in[0], in[1])); /* (3,2) */
}

int main(void)
{
    /* the library this program loads is the one its headers describe */
    if (strcmp(tg_version(), TG_VERSION) != 0) {
        fprintf(stderr, "c_pkgconfig: the headers say %s, the library %s\n", TG_VERSION, tg_version());
        return 1;
    }
    printf("c_pkgconfig: tapegrad %s\n", tg_version());
    enum { M = 3, K = 4, N = 2 };
    double xv[M * K], wv[K * N];
    for (int i = 0; i < M * K; i++) xv[i] = 0.1 * (i % 5) - 0.2;
    for (int i = 0; i < K * N; i++) wv[i] = 0.3 - 0.05 * i;
    tg_graph *g = tg_graph_new();
    tg_tensor *x = tg_tensor_from(g, TG_F64, 2, (int[]){M, K}, xv);
    tg_tensor *w = tg_tensor_from(g, TG_F64, 2, (int[]){K, N}, wv);
    tg_tensor_set_requires_grad(g, w, true);
    tg_tensor *loss = tg_sum_all(g, f(g, (tg_tensor *[]){x, w}, NULL));
    if (!loss || tg_graph_backward(g, loss) != 0) {
        fprintf(stderr, "c_pkgconfig: %s\n", tg_graph_error(g));
        return 1;
    }
    int bad = 0;
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) {
            double want = 0;
            for (int i = 0; i < M; i++) {
                double z = 0;
                for (int q = 0; q < K; q++) z += xv[i * K + q] * wv[q * N + j];
                want += xv[i * K + k] * (1 - tanh(z) * tanh(z));
            }
            const double got = ((const double *)w->grad)[k * N + j];
            if (fabs(got - want) > 1e-12) {
                fprintf(stderr, "c_pkgconfig: dL/dw(%d,%d) = %.17g, by hand %.17g\n", k, j, got, want);
                bad = 1;
            }
        }
    tg_gradcheck_result res;
    tg_gradcheck(f, NULL, 2, (tg_tensor *[]){x, w}, NULL, &res);
    printf("c_pkgconfig: loss %.6f, dL/dw(0,0) %.6f; %s\n", tg_tensor_item(loss), ((const double *)w->grad)[0],
           res.message);
    tg_graph_free(g);
    return bad || !res.ok;
}
