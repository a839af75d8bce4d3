/*
 * ops_recurrent.c - the entry points of include/strix/ops/recurrent.h: the recurrent-cell
 * primitives, each a checked call into the backend vtable (src/core/backend_impl.h; listed in
 * src/core/primitives.def). No math here.
 */
#include "core/backend_impl.h"
#include "kernels/recurrent.h" /* strix_cell_slots */

/* Checks the op and, for a non-empty call, every slot it uses. */
strix_status strix_recurrent_cell(strix_backend *be, strix_cell_op op, const strix_cell_args *args,
                                  size_t n) {
    unsigned need_in = 0, need_out = 0;
    if (!strix_cell_slots(op, &need_in, &need_out))
        return strix_error(STRIX_ERR_ARG, "recurrent_cell: unknown op %d", (int)op);
    if (n > 0) {
        STRIX_ASSERT(args != NULL, "recurrent_cell: NULL args");
        STRIX_ASSERT_SLOTS("recurrent_cell", op, args, need_in, 10, need_out, 6);
    }
    STRIX_DISPATCH(be, recurrent_cell, op, args, n);
}

strix_status strix_gru_lrp_hprev(strix_backend *be, const float *h_prev, const float *w_hn,
                                 const float *hn, const float *r_term_b, const float *direct,
                                 float *r_hprev, size_t rows, size_t hidden, float eps) {
    STRIX_ASSERT(rows * hidden == 0 || (h_prev && w_hn && hn && r_term_b && r_hprev),
                 "gru_lrp_hprev: NULL operand");
    STRIX_DISPATCH(be, gru_lrp_hprev, h_prev, w_hn, hn, r_term_b, direct, r_hprev, rows, hidden,
                   eps);
}
