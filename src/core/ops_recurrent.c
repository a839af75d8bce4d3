/*
 * ops_recurrent.c - the public entry points of include/strix/ops/recurrent.h: the recurrent-cell
 * and state-space primitives, each a checked call into the backend vtable
 * (src/core/backend_impl.h). No math here.
 */
#include "core/backend_impl.h"

strix_status strix_recurrent_cell(strix_backend *be, strix_cell_op op, const strix_cell_args *args,
                                  size_t n) {
    STRIX_DISPATCH(be, recurrent_cell, op, args, n);
}

strix_status strix_gru_lrp_hprev(strix_backend *be, const float *h_prev, const float *w_hn,
                                 const float *hn, const float *r_term_b, const float *direct,
                                 float *r_hprev, size_t rows, size_t hidden, float eps) {
    STRIX_DISPATCH(be, gru_lrp_hprev, h_prev, w_hn, hn, r_term_b, direct, r_hprev, rows, hidden,
                   eps);
}

strix_status strix_ssm_pass(strix_backend *be, strix_ssm_op op, const strix_ssm_args *args) {
    STRIX_DISPATCH(be, ssm_pass, op, args);
}
