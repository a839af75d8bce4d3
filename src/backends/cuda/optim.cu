/*
 * optim.cu - CUDA/HIP launchers of the optimizer, regularisation and selection slots: adam_step,
 * dropout_forward and top_k_rows (CPU: src/backends/cpu/optim.c), over kernels/{adam,dropout,
 * topk}.h. One thread per element (Adam, dropout) or per row (top-k). Dropout masks depend only
 * on (seed, offset + i) and top-k is a selection, so both are bit-identical to the CPU.
 */
#include "backends/cuda/cuda_internal.h"
#include "kernels/adam.h"
#include "kernels/dropout.h"
#include "kernels/topk.h"

/* Index of the calling thread in a 1-D launch of cuda_blocks(n) blocks of CUDA_BLOCK threads. */
static __device__ inline size_t lane_index(void) {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

static __global__ void adam_kernel(float *param, const float *grad, float *m, float *v, size_t n,
                                   float lr, float beta1, float beta2, float eps,
                                   float bias_correction1, float bias_correction2) {
    size_t i = lane_index();
    if (i >= n) return;
    strix_adam_element(&param[i], grad[i], &m[i], &v[i], lr, beta1, beta2, eps, bias_correction1,
                       bias_correction2);
}

strix_status cuda_adam_step(strix_backend *be, float *param, const float *grad, float *m, float *v,
                            size_t n, float lr, float beta1, float beta2, float eps,
                            float bias_correction1, float bias_correction2) {
    if (n == 0) return STRIX_OK;
    adam_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        param, grad, m, v, n, lr, beta1, beta2, eps, bias_correction1, bias_correction2);
    return cuda_launched(be, "adam_step");
}

/* Element i uses the counter offset + i; mask may be NULL. */
static __global__ void dropout_kernel(const float *in, float *out, float *mask, size_t n, float p,
                                      float scale, uint64_t seed, uint64_t offset) {
    size_t i = lane_index();
    if (i >= n) return;
    strix_dropout_element(in[i], &out[i], mask ? &mask[i] : NULL, p, scale, seed, offset + i);
}

strix_status cuda_dropout_forward(strix_backend *be, const float *in, float *out, float *mask,
                                  size_t n, float p, float scale, uint64_t seed, uint64_t offset) {
    if (n == 0) return STRIX_OK;
    dropout_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(in, out, mask, n, p, scale,
                                                                       seed, offset);
    return cuda_launched(be, "dropout_forward");
}

/* One thread per row; vals/idx of the row are its working list (insertion selection). */
static __global__ void top_k_kernel(const float *in, float *vals, int32_t *idx, size_t rows,
                                    size_t cols, size_t k, bool largest) {
    size_t r = lane_index();
    if (r < rows) strix_topk_row(in + r * cols, vals + r * k, idx + r * k, cols, k, largest);
}

strix_status cuda_top_k_rows(strix_backend *be, const float *in, float *vals, int32_t *idx,
                             size_t rows, size_t cols, size_t k, bool largest) {
    if (rows == 0) return STRIX_OK;
    top_k_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(in, vals, idx, rows, cols,
                                                                        k, largest);
    return cuda_launched(be, "top_k_rows");
}
