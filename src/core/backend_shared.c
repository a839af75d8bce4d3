/*
 * backend_shared.c - what the backends and the entry points above them both use: the output
 * sizes of a convolution or pooling window (strix/ops/cnn.h) and the check of RL actions
 * (core/backend_impl.h). Plain arithmetic on host values, on the core floor, so a backend never
 * calls up into the entry points (docs/ARCHITECTURE.md, "Floors, checked").
 */
#include <math.h>

#include "core/backend_impl.h"

size_t strix_conv_out_h(const strix_conv_geom *g, size_t h) {
    if (g->stride_h == 0 || h + 2 * g->pad_h < g->kh) return 0;
    return (h + 2 * g->pad_h - g->kh) / g->stride_h + 1;
}

size_t strix_conv_out_w(const strix_conv_geom *g, size_t w) {
    if (g->stride_w == 0 || w + 2 * g->pad_w < g->kw) return 0;
    return (w + 2 * g->pad_w - g->kw) / g->stride_w + 1;
}

strix_status strix_rl_check_actions(const float *actions, size_t count, size_t row0, size_t cols) {
    for (size_t k = 0; k < count; k++) {
        float action = actions[k];
        if (!(action >= 0.0f && action < (float)cols && action == floorf(action)))
            return strix_error(STRIX_ERR_ARG,
                               "rl_rows: action %g of row %zu is not an integer in [0, %zu)",
                               (double)action, row0 + k, cols);
    }
    return STRIX_OK;
}
