/*
 * ops_logic.c - the entry points of include/strix/ops/logic.h: the fuzzy-logic primitives, each
 * a checked call into the backend vtable (src/core/backend_impl.h; listed in
 * src/core/primitives.def). No math here.
 */
#include "core/backend_impl.h"
#include "kernels/logic.h" /* strix_logic_is_forward, strix_logic_reads_y */

strix_status strix_logic_pointwise(strix_backend *be, strix_logic_op op, strix_logic_norm norm,
                                   const float *a, const float *b, const float *g_or_r,
                                   const float *y, float *out_a, float *out_b, size_t n,
                                   float eps) {
    STRIX_ASSERT(op >= STRIX_LOGIC_CONJ_FORWARD && op <= STRIX_LOGIC_IMPL_LRP,
                 "logic_pointwise: op %d", (int)op);
    STRIX_ASSERT(norm >= STRIX_LOGIC_PRODUCT && norm <= STRIX_LOGIC_GODEL,
                 "logic_pointwise: norm %d", (int)norm);
    STRIX_ASSERT(strix_logic_is_forward(op) || (g_or_r != NULL && out_b != NULL),
                 "logic_pointwise: backward/LRP need g_or_r and out_b");
    STRIX_ASSERT(!strix_logic_reads_y(op, norm) || y != NULL,
                 "logic_pointwise: Product conj/disj LRP needs y");
    STRIX_DISPATCH(be, logic_pointwise, op, norm, a, b, g_or_r, y, out_a, out_b, n, eps);
}

strix_status strix_aggregator_forward(strix_backend *be, const float *x, float *mean_pow,
                                      float *out, size_t n, size_t cols, float p) {
    STRIX_ASSERT(p != 0.0f, "aggregator_forward: p = 0");
    STRIX_DISPATCH(be, aggregator_forward, x, mean_pow, out, n, cols, p);
}

strix_status strix_aggregator_backward(strix_backend *be, const float *x, const float *mean_pow,
                                       const float *grad_out, float *grad_in, size_t n,
                                       size_t cols, float p) {
    STRIX_ASSERT(p != 0.0f, "aggregator_backward: p = 0");
    STRIX_DISPATCH(be, aggregator_backward, x, mean_pow, grad_out, grad_in, n, cols, p);
}

strix_status strix_aggregator_lrp(strix_backend *be, const float *x, const float *mean_pow,
                                  const float *r_out, float *r_in, size_t n, size_t cols, float p,
                                  float eps) {
    STRIX_ASSERT(p != 0.0f, "aggregator_lrp: p = 0");
    STRIX_DISPATCH(be, aggregator_lrp, x, mean_pow, r_out, r_in, n, cols, p, eps);
}
