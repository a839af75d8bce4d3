/*
 * ssm.c - CPU backend: the state-space passes (Mamba, RWKV, RetNet, stabilised divide,
 * reverse-time sum).
 *
 * Each op runs its kernels/ssm.h lane function over every lane; a sequence lane walks time
 * itself, so OpenMP only splits independent lanes and results do not depend on the thread count.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/ssm.h"

/* Runs lane function `fn` over every lane. */
#define LANE_LOOP(fn)                                                                          \
    do {                                                                                       \
        CPU_PARALLEL_FOR_IF(lanes > 1 && CPU_BIG(work))                                        \
        for (size_t lane = 0; lane < lanes; lane++) fn(args, lane);                            \
    } while (0)

strix_status cpu_ssm_pass(strix_backend *be, strix_ssm_op op, const strix_ssm_args *args) {
    (void)be;
    size_t work = 0, lanes = strix_ssm_lanes(op, args, &work);
    if (lanes == 0) return STRIX_OK; /* op and slots: checked by strix_ssm_pass */
    switch (op) {
    case STRIX_SSM_MAMBA_FORWARD: LANE_LOOP(strix_mamba_forward_lane); break;
    case STRIX_SSM_MAMBA_BACKWARD: LANE_LOOP(strix_mamba_backward_lane); break;
    case STRIX_SSM_MAMBA_GRAD_BC: LANE_LOOP(strix_mamba_grad_bc_lane); break;
    case STRIX_SSM_MAMBA_LRP: LANE_LOOP(strix_mamba_lrp_lane); break;
    case STRIX_SSM_RWKV_TOKEN_SHIFT: LANE_LOOP(strix_rwkv_token_shift_element); break;
    case STRIX_SSM_RWKV_SHIFT_BACKWARD: LANE_LOOP(strix_rwkv_shift_backward_element); break;
    case STRIX_SSM_RWKV_SHIFT_LRP: LANE_LOOP(strix_rwkv_shift_lrp_element); break;
    case STRIX_SSM_RWKV_WKV_FORWARD: LANE_LOOP(strix_rwkv_wkv_forward_lane); break;
    case STRIX_SSM_RWKV_WKV_BACKWARD: LANE_LOOP(strix_rwkv_wkv_backward_lane); break;
    case STRIX_SSM_RWKV_WKV_LRP: LANE_LOOP(strix_rwkv_wkv_lrp_lane); break;
    case STRIX_SSM_RETNET_FORWARD: LANE_LOOP(strix_retnet_forward_lane); break;
    case STRIX_SSM_RETNET_STATE_GRAD: LANE_LOOP(strix_retnet_state_grad_lane); break;
    case STRIX_SSM_RETNET_GRAD_QK: LANE_LOOP(strix_retnet_grad_qk_lane); break;
    case STRIX_SSM_RETNET_GRAD_V: LANE_LOOP(strix_retnet_grad_v_lane); break;
    case STRIX_SSM_RETNET_SCORES: LANE_LOOP(strix_retnet_scores_lane); break;
    case STRIX_SSM_RETNET_READOUT: LANE_LOOP(strix_retnet_readout_lane); break;
    case STRIX_SSM_RETNET_LRP_INPUT: LANE_LOOP(strix_retnet_lrp_input_lane); break;
    case STRIX_SSM_STABILIZED_DIV: LANE_LOOP(strix_ssm_stabilized_div_element); break;
    case STRIX_SSM_REVERSE_TIME_SUM: LANE_LOOP(strix_ssm_reverse_time_sum_lane); break;
    case STRIX_SSM_RWKV_STABLE_FORWARD: LANE_LOOP(strix_rwkv_stable_forward_lane); break;
    case STRIX_SSM_RWKV_STABLE_BACKWARD: LANE_LOOP(strix_rwkv_stable_backward_lane); break;
    case STRIX_SSM_RWKV_STABLE_LRP: LANE_LOOP(strix_rwkv_stable_lrp_lane); break;
    }
    return STRIX_OK;
}
