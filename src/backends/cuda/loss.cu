/*
 * loss.cu - CUDA/HIP launchers of binary cross-entropy with logits and its gradient
 * (CPU: src/backends/cpu/loss.c): one thread per element over kernels/loss.h. No reductions (the
 * caller sums the per-element losses).
 */
#include "backends/cuda/cuda_internal.h"
#include "kernels/loss.h"

/* Index of the calling thread in a 1-D launch of cuda_blocks(n) blocks of CUDA_BLOCK threads. */
static __device__ inline size_t lane_index(void) {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

/* out may alias logits (each element is read before it is written). */
static __global__ void bce_kernel(const float *logits, const float *target, float *out, size_t n) {
    size_t i = lane_index();
    if (i < n) out[i] = strix_bce_with_logits_elem(logits[i], target[i]);
}

strix_status cuda_bce_with_logits(strix_backend *be, const float *logits, const float *target,
                                  float *out, size_t n) {
    if (n == 0) return STRIX_OK;
    bce_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(logits, target, out, n);
    return cuda_launched(be, "bce_with_logits");
}

static __global__ void bce_grad_kernel(const float *logits, const float *target, float *grad,
                                       size_t n, float scale) {
    size_t i = lane_index();
    if (i < n) grad[i] = strix_bce_with_logits_grad_elem(logits[i], target[i], scale);
}

strix_status cuda_bce_with_logits_grad(strix_backend *be, const float *logits, const float *target,
                                       float *grad, size_t n, float scale) {
    if (n == 0) return STRIX_OK;
    bce_grad_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(logits, target, grad, n,
                                                                        scale);
    return cuda_launched(be, "bce_with_logits_grad");
}
