/*
 * ops_lrp.c - the hand-written entry points of include/strix/ops/lrp.h: the LRP primitives with
 * more checks than a dispatch (the others are generated from src/core/primitives.def in
 * src/core/ops_dispatch.c), each a checked call into the backend vtable. No math here.
 */
#include "core/backend_impl.h"

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
