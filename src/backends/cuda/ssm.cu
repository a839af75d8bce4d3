/*
 * ssm.cu - CUDA/HIP launchers of the state-space passes (Mamba, RWKV, RetNet, stabilised divide,
 * reverse-time sum; include/strix/ops/ssm.h); the math is src/kernels/ssm.h, as in
 * src/backends/cpu/ssm.c.
 *
 * One thread per lane of the op (strix_ssm_lanes): a sequence lane walks time itself in the
 * documented direction, so no atomics and no scratch. The argument struct travels by value as a
 * kernel parameter (its slots are device pointers). The op and its slots are checked by the
 * public entry point (src/core/ops_recurrent.c).
 */
#include "backends/cuda/cuda_internal.h"
#include "kernels/ssm.h"

/* Global index of the calling thread (one lane each). */
static __device__ inline size_t ssm_lane(void) {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

/* A kernel running lane function `fn` on lane < lanes. */
#define SSM_KERNEL(name, fn)                                                                   \
    static __global__ void name(strix_ssm_args args, size_t lanes) {                           \
        size_t lane = ssm_lane();                                                              \
        if (lane < lanes) fn(&args, lane);                                                     \
    }

SSM_KERNEL(mamba_forward_kernel, strix_mamba_forward_lane)
SSM_KERNEL(mamba_backward_kernel, strix_mamba_backward_lane)
SSM_KERNEL(mamba_grad_bc_kernel, strix_mamba_grad_bc_lane)
SSM_KERNEL(mamba_lrp_kernel, strix_mamba_lrp_lane)
SSM_KERNEL(rwkv_token_shift_kernel, strix_rwkv_token_shift_element)
SSM_KERNEL(rwkv_shift_backward_kernel, strix_rwkv_shift_backward_element)
SSM_KERNEL(rwkv_shift_lrp_kernel, strix_rwkv_shift_lrp_element)
SSM_KERNEL(rwkv_wkv_forward_kernel, strix_rwkv_wkv_forward_lane)
SSM_KERNEL(rwkv_wkv_backward_kernel, strix_rwkv_wkv_backward_lane)
SSM_KERNEL(rwkv_wkv_lrp_kernel, strix_rwkv_wkv_lrp_lane)
SSM_KERNEL(retnet_forward_kernel, strix_retnet_forward_lane)
SSM_KERNEL(retnet_state_grad_kernel, strix_retnet_state_grad_lane)
SSM_KERNEL(retnet_grad_qk_kernel, strix_retnet_grad_qk_lane)
SSM_KERNEL(retnet_grad_v_kernel, strix_retnet_grad_v_lane)
SSM_KERNEL(retnet_scores_kernel, strix_retnet_scores_lane)
SSM_KERNEL(retnet_readout_kernel, strix_retnet_readout_lane)
SSM_KERNEL(retnet_lrp_input_kernel, strix_retnet_lrp_input_lane)
SSM_KERNEL(ssm_stabilized_div_kernel, strix_ssm_stabilized_div_element)
SSM_KERNEL(ssm_reverse_time_sum_kernel, strix_ssm_reverse_time_sum_lane)
SSM_KERNEL(rwkv_stable_forward_kernel, strix_rwkv_stable_forward_lane)
SSM_KERNEL(rwkv_stable_backward_kernel, strix_rwkv_stable_backward_lane)
SSM_KERNEL(rwkv_stable_lrp_kernel, strix_rwkv_stable_lrp_lane)

/* Launches kernel `k` over every lane. */
#define SSM_LAUNCH(k) k<<<blocks, CUDA_BLOCK, 0, stream>>>(*args, lanes)

strix_status cuda_ssm_pass(strix_backend *be, strix_ssm_op op, const strix_ssm_args *args) {
    size_t work = 0, lanes = strix_ssm_lanes(op, args, &work);
    if (lanes == 0) return STRIX_OK; /* op and slots: checked by strix_ssm_pass */
    unsigned blocks = cuda_blocks(lanes);
    cudaStream_t stream = cuda_stream(be);
    switch (op) {
    case STRIX_SSM_MAMBA_FORWARD: SSM_LAUNCH(mamba_forward_kernel); break;
    case STRIX_SSM_MAMBA_BACKWARD: SSM_LAUNCH(mamba_backward_kernel); break;
    case STRIX_SSM_MAMBA_GRAD_BC: SSM_LAUNCH(mamba_grad_bc_kernel); break;
    case STRIX_SSM_MAMBA_LRP: SSM_LAUNCH(mamba_lrp_kernel); break;
    case STRIX_SSM_RWKV_TOKEN_SHIFT: SSM_LAUNCH(rwkv_token_shift_kernel); break;
    case STRIX_SSM_RWKV_SHIFT_BACKWARD: SSM_LAUNCH(rwkv_shift_backward_kernel); break;
    case STRIX_SSM_RWKV_SHIFT_LRP: SSM_LAUNCH(rwkv_shift_lrp_kernel); break;
    case STRIX_SSM_RWKV_WKV_FORWARD: SSM_LAUNCH(rwkv_wkv_forward_kernel); break;
    case STRIX_SSM_RWKV_WKV_BACKWARD: SSM_LAUNCH(rwkv_wkv_backward_kernel); break;
    case STRIX_SSM_RWKV_WKV_LRP: SSM_LAUNCH(rwkv_wkv_lrp_kernel); break;
    case STRIX_SSM_RETNET_FORWARD: SSM_LAUNCH(retnet_forward_kernel); break;
    case STRIX_SSM_RETNET_STATE_GRAD: SSM_LAUNCH(retnet_state_grad_kernel); break;
    case STRIX_SSM_RETNET_GRAD_QK: SSM_LAUNCH(retnet_grad_qk_kernel); break;
    case STRIX_SSM_RETNET_GRAD_V: SSM_LAUNCH(retnet_grad_v_kernel); break;
    case STRIX_SSM_RETNET_SCORES: SSM_LAUNCH(retnet_scores_kernel); break;
    case STRIX_SSM_RETNET_READOUT: SSM_LAUNCH(retnet_readout_kernel); break;
    case STRIX_SSM_RETNET_LRP_INPUT: SSM_LAUNCH(retnet_lrp_input_kernel); break;
    case STRIX_SSM_STABILIZED_DIV: SSM_LAUNCH(ssm_stabilized_div_kernel); break;
    case STRIX_SSM_REVERSE_TIME_SUM: SSM_LAUNCH(ssm_reverse_time_sum_kernel); break;
    case STRIX_SSM_RWKV_STABLE_FORWARD: SSM_LAUNCH(rwkv_stable_forward_kernel); break;
    case STRIX_SSM_RWKV_STABLE_BACKWARD: SSM_LAUNCH(rwkv_stable_backward_kernel); break;
    case STRIX_SSM_RWKV_STABLE_LRP: SSM_LAUNCH(rwkv_stable_lrp_kernel); break;
    }
    return cuda_launched(be, "ssm_pass");
}
