/*
 * ops_ssm.c - the entry point of include/strix/ops/ssm.h: the state-space pass (Mamba, RWKV,
 * RetNet), a checked call into the backend vtable (src/core/backend_impl.h; listed in
 * src/core/primitives.def). No math here.
 */
#include "core/backend_impl.h"
#include "kernels/ssm.h" /* strix_ssm_slots, strix_ssm_lanes */

/* Checks the op and, for a non-empty call, every slot it uses. */
strix_status strix_ssm_pass(strix_backend *be, strix_ssm_op op, const strix_ssm_args *args) {
    unsigned need_in = 0, need_out = 0;
    if (!strix_ssm_slots(op, &need_in, &need_out))
        return strix_error(STRIX_ERR_ARG, "ssm_pass: unknown op %d", (int)op);
    STRIX_ASSERT(args != NULL, "ssm_pass: NULL args");
    size_t work = 0;
    if (strix_ssm_lanes(op, args, &work) > 0)
        STRIX_ASSERT_SLOTS("ssm_pass", op, args, need_in, 12, need_out, 10);
    /* the token shift's optional third mix: mu_v and its output (and gradient) come together */
    if (op == STRIX_SSM_RWKV_TOKEN_SHIFT)
        STRIX_ASSERT(!args->in[3] == !args->out[2], "ssm_pass: token shift mu_v without xv");
    if (op == STRIX_SSM_RWKV_SHIFT_BACKWARD)
        STRIX_ASSERT(!args->in[3] == !args->in[6] && !args->in[3] == !args->out[3],
                     "ssm_pass: token shift backward: g_xv, mu_v and their terms come together");
    STRIX_DISPATCH(be, ssm_pass, op, args);
}
