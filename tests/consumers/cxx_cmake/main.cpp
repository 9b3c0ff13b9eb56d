// A C++ program built against an installed tapegrad with find_package
// (tests/install_consumers.sh): a tiny GPT trained for a few AdamW steps
// on one batch. The first loss must be about ln(vocab) (the weights start
// near zero) and the loss must fall.
#include <cmath>
#include <cstdio>
#include <vector>

#include <tapegrad/tapegrad.h>

int main()
{
    const int B = 2, T = 8, V = 12;
    tg_model_config cfg = tg_model_config();
    cfg.arch = "gpt", cfg.n_layer = 1, cfg.n_head = 2, cfg.n_embd = 16, cfg.block_size = T, cfg.vocab_size = V;
    tg_error err = {};
    tg_model model = tg_model(), *m = &model;
    if (tg_model_init(m, &cfg, TG_F32, 1, &err) != 0) {
        std::fprintf(stderr, "gpt_cxx: %s\n", err.msg);
        return 1;
    }
    tg_adamw_config oc = TG_ADAMW_DEFAULTS;   // the C++ form of the macro
    oc.weight_decay = 0;
    tg_adamw *opt = tg_adamw_new(m->params, &oc, &err);
    tg_graph *g = tg_graph_new();
    std::vector<int32_t> ids(B * T), tgt(B * T);
    for (int i = 0; i < B * T; i++) ids[i] = i % V, tgt[i] = (i + 1) % V;
    const int shape[2] = {B, T};
    std::vector<double> losses;
    for (int step = 0; step < 20; step++) {
        tg_tensor *x = tg_tensor_from(g, TG_I32, 2, shape, ids.data());
        tg_tensor *y = tg_tensor_from(g, TG_I32, 2, shape, tgt.data());
        tg_tensor *loss = tg_model_loss(g, m, x, y);
        if (!loss || !tg_dtype_is_float(loss->dtype) || tg_graph_backward(g, loss) != 0) {
            std::fprintf(stderr, "gpt_cxx: step %d: %s\n", step, tg_graph_error(g));
            return 1;
        }
        losses.push_back(tg_tensor_item(loss));
        tg_clip_grad_norm(m->params, 1.0);
        tg_adamw_step(opt, 1e-2, NULL);
        tg_params_zero_grad(m->params);
        tg_graph_reset(g);
    }
    std::printf("gpt_cxx: loss %.4f (ln %d = %.4f) -> %.4f after %zu steps\n", losses.front(), V, std::log(V),
                losses.back(), losses.size());
    const bool ok = std::fabs(losses.front() - std::log(V)) < 0.1 && losses.back() < 0.5 * losses.front();
    tg_graph_free(g);
    tg_adamw_free(opt);
    tg_model_release(m);
    return ok ? 0 : 1;
}
