/*
 * ops_lrp.c - the public entry points of include/strix/ops/lrp.h: the LRP and fuzzy-logic
 * primitives, each a checked call into the backend vtable (src/core/backend_impl.h). No math here.
 */
#include "core/backend_impl.h"
#include "kernels/logic.h" /* strix_logic_is_forward, strix_logic_reads_y */

strix_status strix_lrp_rope(strix_backend *be, const float *x, const float *y, const float *r,
                            const float *cos_table, const float *sin_table, float *r_in,
                            size_t rows, size_t seq_len, size_t head_dim, float eps) {
    STRIX_ASSERT(head_dim % 2 == 0, "lrp_rope: head_dim %zu is odd", head_dim);
    STRIX_ASSERT(seq_len > 0 || rows == 0, "lrp_rope: seq_len is 0");
    STRIX_DISPATCH(be, lrp_rope, x, y, r, cos_table, sin_table, r_in, rows, seq_len, head_dim, eps);
}

strix_status strix_lrp_avg_pool(strix_backend *be, const float *x, const float *r, float *r_in,
                                size_t planes, size_t h, size_t w, const strix_conv_geom *g,
                                float eps) {
    STRIX_ASSERT(g != NULL && g->stride_h > 0 && g->stride_w > 0 && g->kh > 0 && g->kw > 0,
                 "lrp_avg_pool: bad geometry");
    STRIX_DISPATCH(be, lrp_avg_pool, x, r, r_in, planes, h, w, g, eps);
}

strix_status strix_lrp_stabilized_divide(strix_backend *be, const float *r, const float *den,
                                         const float *gate, float *out, size_t n, float eps,
                                         strix_lrp_gate gate_mode) {
    STRIX_ASSERT(gate_mode == STRIX_LRP_GATE_NONE || gate_mode == STRIX_LRP_GATE_POSITIVE ||
                     gate_mode == STRIX_LRP_GATE_NEGATIVE,
                 "lrp_stabilized_divide: gate mode %d", (int)gate_mode);
    STRIX_ASSERT(gate != NULL || gate_mode == STRIX_LRP_GATE_NONE,
                 "lrp_stabilized_divide: a gate mode needs a gate");
    STRIX_DISPATCH(be, lrp_stabilized_divide, r, den, gate, out, n, eps, gate_mode);
}

strix_status strix_logic_pointwise(strix_backend *be, strix_logic_op op, strix_logic_norm norm,
                                   const float *a, const float *b, const float *g_or_r,
                                   const float *y, float *out_a, float *out_b, size_t n,
                                   float eps) {
    STRIX_ASSERT(op >= STRIX_LOGIC_CONJ_FORWARD && op <= STRIX_LOGIC_DISJ_LRP,
                 "logic_pointwise: op %d", (int)op);
    STRIX_ASSERT(norm >= STRIX_LOGIC_PRODUCT && norm <= STRIX_LOGIC_GODEL,
                 "logic_pointwise: norm %d", (int)norm);
    STRIX_ASSERT(strix_logic_is_forward(op) || (g_or_r != NULL && out_b != NULL),
                 "logic_pointwise: backward/LRP need g_or_r and out_b");
    STRIX_ASSERT(!strix_logic_reads_y(op, norm) || y != NULL,
                 "logic_pointwise: Product LRP needs y");
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
