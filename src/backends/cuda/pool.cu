/*
 * pool.cu - CUDA/HIP backend: max pooling (+ the gather-form unpool) and average pooling
 * (+ backward) (include/strix/ops/cnn.h).
 *
 * One GPU thread per lane of the per-output / per-pixel functions of kernels/cnn.h, which give
 * the bits of the CPU's row functions: the forwards one thread per output (strix_max_pool_at,
 * strix_avg_pool_at), the backwards as gathers, one thread per input pixel
 * (strix_max_unpool_pixel, strix_avg_pool_backward_pixel: outputs ascending onto the pixel's
 * value). Every output is written by one thread: no atomics, bit-exact with the CPU.
 */
#include "backends/cuda/cuda_internal.h"
#include "kernels/cnn.h"

static __global__ void max_pool_kernel(const float *in, float *out, int32_t *argmax, size_t total,
                                       size_t h, size_t w, size_t oh, size_t ow,
                                       strix_conv_geom g) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    size_t q = idx % (oh * ow), p = idx / (oh * ow);
    int32_t arg;
    out[idx] = strix_max_pool_at(in + p * h * w, &arg, q / ow, q % ow, h, w, &g);
    argmax[idx] = arg;
}

static __global__ void max_unpool_kernel(const float *src, const int32_t *argmax, float *dst,
                                         size_t total, size_t h, size_t w, size_t oh, size_t ow,
                                         strix_conv_geom g) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    size_t pix = idx % (h * w), p = idx / (h * w);
    dst[idx] = strix_max_unpool_pixel(src + p * oh * ow, argmax + p * oh * ow, dst[idx], pix / w,
                                      pix % w, w, oh, ow, &g);
}

static __global__ void avg_pool_kernel(const float *in, float *out, size_t total, size_t h,
                                       size_t w, size_t oh, size_t ow, strix_conv_geom g) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    size_t q = idx % (oh * ow), p = idx / (oh * ow);
    out[idx] = strix_avg_pool_at(in + p * h * w, q / ow, q % ow, h, w, &g);
}

static __global__ void avg_pool_backward_kernel(const float *grad_out, float *grad_in, size_t total,
                                                size_t h, size_t w, size_t oh, size_t ow,
                                                strix_conv_geom g) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    size_t pix = idx % (h * w), p = idx / (h * w);
    grad_in[idx] = strix_avg_pool_backward_pixel(grad_out + p * oh * ow, grad_in[idx], pix / w,
                                                 pix % w, oh, ow, &g);
}

strix_status cuda_max_pool_forward(strix_backend *be, const float *in, float *out, int32_t *argmax,
                                   size_t planes, size_t h, size_t w, const strix_conv_geom *g) {
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w), total = planes * oh * ow;
    if (total == 0) return STRIX_OK;
    max_pool_kernel<<<cuda_blocks(total), CUDA_BLOCK, 0, cuda_stream(be)>>>(in, out, argmax,
                                                                            total, h, w, oh, ow,
                                                                            *g);
    return cuda_launched(be, "max_pool_forward");
}

strix_status cuda_max_unpool(strix_backend *be, const float *src, const int32_t *argmax,
                             float *dst, size_t planes, size_t h, size_t w,
                             const strix_conv_geom *g) {
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w), total = planes * h * w;
    if (total == 0 || oh == 0 || ow == 0) return STRIX_OK; /* no windows: nothing to add */
    max_unpool_kernel<<<cuda_blocks(total), CUDA_BLOCK, 0, cuda_stream(be)>>>(src, argmax, dst,
                                                                              total, h, w, oh,
                                                                              ow, *g);
    return cuda_launched(be, "max_unpool");
}

strix_status cuda_avg_pool_forward(strix_backend *be, const float *in, float *out, size_t planes,
                                   size_t h, size_t w, const strix_conv_geom *g) {
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w), total = planes * oh * ow;
    if (total == 0) return STRIX_OK;
    avg_pool_kernel<<<cuda_blocks(total), CUDA_BLOCK, 0, cuda_stream(be)>>>(in, out, total, h, w,
                                                                            oh, ow, *g);
    return cuda_launched(be, "avg_pool_forward");
}

strix_status cuda_avg_pool_backward(strix_backend *be, const float *grad_out, float *grad_in,
                                    size_t planes, size_t h, size_t w, const strix_conv_geom *g) {
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w), total = planes * h * w;
    if (total == 0 || oh == 0 || ow == 0) return STRIX_OK; /* no windows: nothing to add */
    avg_pool_backward_kernel<<<cuda_blocks(total), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        grad_out, grad_in, total, h, w, oh, ow, *g);
    return cuda_launched(be, "avg_pool_backward");
}
