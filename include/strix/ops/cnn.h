/*
 * strix/ops/cnn.h - convolution, pooling and batch/group normalisation primitives of the device
 * backend (included by strix/backend.h; same conventions: backend pointers, row-major float32,
 * `=` unless `+=` is said, every call returns STRIX_OK or STRIX_ERR_UNSUPPORTED).
 *
 * Images are NCHW. A "plane" is one (h, w) image of one channel of one example; planes = n·c.
 * Output sizes: oh = (h + 2·pad_h − kh)/stride_h + 1, ow likewise (PyTorch Conv2d/MaxPool2d with
 * dilation 1, floor mode). Reduction orders are stated with each function (the rules behind
 * them: docs/SEMANTICS.md, "CNN orders").
 * The `+=` gathers (col2im_add, max_unpool, avg_pool_backward) start each pixel from its value in
 * the destination and add its terms one by one in the stated order. A stride of 0 is a contract
 * violation (STRIX_ASSERT); a window that does not fit gives an empty output.
 */
#ifndef STRIX_OPS_CNN_H
#define STRIX_OPS_CNN_H

#include "strix/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel/window geometry of a convolution or a pool. Strides of 0 are not allowed. */
typedef struct strix_conv_geom {
    size_t kh, kw;             /* kernel / window size */
    size_t stride_h, stride_w; /* >= 1 */
    size_t pad_h, pad_w;       /* zero padding (pools: implicit -inf for max, 0 for avg) */
} strix_conv_geom;

/* Output height and width of `g` over an (h, w) input (0 if the window does not fit). */
STRIX_API size_t strix_conv_out_h(const strix_conv_geom *g, size_t h);
STRIX_API size_t strix_conv_out_w(const strix_conv_geom *g, size_t w);

// ---- convolution -------------------------------------------------------------------------------

/* Unfolds in (n, c, h, w) into col (n, c·kh·kw, oh·ow): row p = (ci·kh + i)·kw + j, column
 * q = oh_·ow + ow_ reads in[ci][oh_·sh − ph + i][ow_·sw − pw + j], 0 outside the image
 * (PyTorch nn.Unfold). Bit-exact. */
STRIX_API strix_status strix_im2col(strix_backend *be, const float *in, float *col, size_t n,
                                    size_t c, size_t h, size_t w, const strix_conv_geom *g);
/* The adjoint of im2col, as a gather that ADDS into out (n, c, h, w) (`+=`; PyTorch nn.Fold):
 * each pixel visits its taps with kernel row i descending, then kernel column j descending,
 * skipping taps between strides, and adds them in that order onto its current value. col must
 * not alias out. */
STRIX_API strix_status strix_col2im_add(strix_backend *be, const float *col, float *out,
                                        size_t n, size_t c, size_t h, size_t w,
                                        const strix_conv_geom *g);
/* out[i][ch][k] = in[i][ch][k] + vec[ch] over (n, c, inner) (a conv bias); out may alias in. */
STRIX_API strix_status strix_add_channel_vector(strix_backend *be, const float *in,
                                                const float *vec, float *out, size_t n, size_t c,
                                                size_t inner);

/* Examples per group of strix_conv2d_backward's weight and bias sums. */
#define STRIX_CONV_GROUP 4

/* strix: a whole Conv2d forward (PyTorch nn.Conv2d, dilation 1, groups 1) in one call, without a
 * batch-sized col: per example e, z_e (oc, oh·ow) = weight (oc, c·kh·kw) · im2col(in_e), each
 * element summed over p ascending from 0 (the bits of strix_im2col then strix_gemm on the own
 * kernel), then out = z + bias[oc] (strix_add_channel_vector's bits). in (n, c, h, w); z and out
 * (n, oc, oh, ow). bias NULL: out is not written (may be NULL); out may alias z. */
STRIX_API strix_status strix_conv2d_forward(strix_backend *be, const float *in,
                                            const float *weight, const float *bias, float *z,
                                            float *out, size_t n, size_t c, size_t h, size_t w,
                                            size_t oc, const strix_conv_geom *g);
/* strix: the Conv2d backward in one call, from the forward's input in and dy (n, oc, oh, ow).
 * Examples go in groups of STRIX_CONV_GROUP (the last may be smaller), groups ascending:
 *   dweight (oc, c·kh·kw) += ((S_0 + S_1) + S_2) + ...: S_g[o][p] is one sum from 0.0f over the
 *     group's (example, q) ascending of dy_e[o][q]·col_e[p][q] (multiply, round, add, round);
 *   dbias (oc) += ((T_0 + T_1) + ...) likewise: T_g[o] sums the group's rows dy_e[o][·] in the
 *     16-lane order of the norms below (value q to lane q mod 16, rows in order, lanes folded
 *     pairwise);
 *   dx (n, c, h, w) = col2im(weightᵀ·dy_e) (`=`: each pixel from 0.0f, its taps in the order of
 *     strix_col2im_add), weightᵀ·dy_e summed over o ascending from 0.
 * dweight, dbias and dx may each be NULL (not computed); dx must not alias the others.
 * GPU backends keep the orders: bit-identical with their own GEMM (STRIX_CUDA_GEMM=own), equal to
 * rounding with cuBLAS. */
STRIX_API strix_status strix_conv2d_backward(strix_backend *be, const float *in,
                                             const float *weight, const float *dy,
                                             float *dweight, float *dbias, float *dx, size_t n,
                                             size_t c, size_t h, size_t w, size_t oc,
                                             const strix_conv_geom *g);

// ---- pooling -----------------------------------------------------------------------------------

/* Max pool over `planes` planes of (h, w) into out (planes, oh, ow) (PyTorch MaxPool2d): each
 * window scans rows then columns with a strict > starting from -inf, so the first maximum wins.
 * Padding taps never win, and unlike PyTorch (which propagates NaN) a NaN never wins: a window
 * of only NaN, -inf or padding gives -inf and argmax -1. argmax (planes, oh, ow) is the flat
 * in-plane index y·w + x of the winner, int32 (h·w < 2^31). Bit-exact. */
STRIX_API strix_status strix_max_pool_forward(strix_backend *be, const float *in, float *out,
                                              int32_t *argmax, size_t planes, size_t h, size_t w,
                                              const strix_conv_geom *g);
/* Max unpool / max-pool backward as a gather: dst[plane][y·w+x] += Σ src[plane][o] over the
 * windows o (ascending) of geometry g that cover the pixel and whose argmax is that pixel (`+=`;
 * the caller zeroes dst for an unpool). src/argmax are (planes, oh, ow); argmax -1 adds nothing. */
STRIX_API strix_status strix_max_unpool(strix_backend *be, const float *src,
                                        const int32_t *argmax, float *dst, size_t planes,
                                        size_t h, size_t w, const strix_conv_geom *g);
/* Average pool (PyTorch AvgPool2d, count_include_pad=True): out = Σ window / (kh·kw), the
 * window summed rows then columns ascending, padding counted as 0. */
STRIX_API strix_status strix_avg_pool_forward(strix_backend *be, const float *in, float *out,
                                              size_t planes, size_t h, size_t w,
                                              const strix_conv_geom *g);
/* Its backward as a gather: grad_in[pixel] += Σ grad_out[o]/(kh·kw) (each term divided) over the
 * windows o covering the pixel, ascending (`+=`; the caller zeroes grad_in). */
STRIX_API strix_status strix_avg_pool_backward(strix_backend *be, const float *grad_out,
                                               float *grad_in, size_t planes, size_t h, size_t w,
                                               const strix_conv_geom *g);

// ---- batch and group normalisation -------------------------------------------------------------
/* Summation order of every BatchNorm/GroupNorm sum (fixed, independent of the thread count; see
 * src/kernels/norm.h): the values are taken as rows of `spatial` contiguous values (BatchNorm:
 * the channel's rows, examples ascending; GroupNorm: the group's channel rows, ascending); value
 * s of a row goes to lane s mod 16 (16 float lanes from 0.0f), then the lanes are folded
 * pairwise (half = 8, 4, 2, 1: lane[l] += lane[l + half]). Means divide by the count in float.
 * GPU backends keep this order only with gpu_exact_reductions; by default they sum in a fixed
 * block tree (to rounding, docs/BACKENDS.md). xhat or out may alias in; grad_in may alias
 * grad_out. NULL gamma/beta act as 1/0. */

/* BatchNorm training forward over (n, c, spatial) (Ioffe & Szegedy 2015; PyTorch BatchNorm2d):
 * per channel over M = n·spatial values, two-pass mean then biased variance Σ(x − mean)²/M (the
 * lane order above), std = sqrt(var + eps), xhat = (x − mean)/std, out = gamma·xhat + beta.
 * Writes xhat, out (n, c, spatial) and channel_std (c). gamma/beta may be NULL (1, 0). M = 1
 * gives var 0 and xhat 0 (the module refuses to train on such a batch). */
STRIX_API strix_status strix_batch_norm_forward(strix_backend *be, const float *in,
                                                const float *gamma, const float *beta,
                                                float *xhat, float *out, float *channel_std,
                                                size_t n, size_t c, size_t spatial, float eps);
/* Its backward: g = go·gamma; grad_in = (M·g − Σg − xhat·Σ(g·xhat))/(M·std) (`=`);
 * gamma_grad[ch] = Σ go·xhat and beta_grad[ch] = Σ go are OVERWRITTEN (the module adds them into
 * the parameter grads); either may be NULL. Sums in the forward's order. */
STRIX_API strix_status strix_batch_norm_backward(strix_backend *be, const float *grad_out,
                                                 const float *gamma, const float *xhat,
                                                 const float *channel_std, float *grad_in,
                                                 float *gamma_grad, float *beta_grad, size_t n,
                                                 size_t c, size_t spatial);
/* Folds this batch's statistics into the running ones (PyTorch's rule): running_mean =
 * (1−momentum)·running_mean + momentum·mean; running_var likewise with the UNBIASED variance
 * Σ(x − mean)²/(M−1) (mean and sums exactly as in the forward); running_var is kept unchanged
 * when M < 2; M = 0 changes nothing. */
STRIX_API strix_status strix_batch_norm_update_running(strix_backend *be, const float *in,
                                                       float *running_mean, float *running_var,
                                                       size_t n, size_t c, size_t spatial,
                                                       float momentum);
/* Eval-mode BatchNorm from the running statistics: std = sqrt(running_var + eps), xhat =
 * (x − running_mean)/std, out = gamma·xhat + beta. Writes xhat, out, channel_std. */
STRIX_API strix_status strix_batch_norm_eval_forward(strix_backend *be, const float *in,
                                                     const float *gamma, const float *beta,
                                                     const float *running_mean,
                                                     const float *running_var, float *xhat,
                                                     float *out, float *channel_std, size_t n,
                                                     size_t c, size_t spatial, float eps);
/* Eval-mode backward: grad_in = (go·gamma)/std; gamma_grad/beta_grad as in the training backward
 * (overwritten, may be NULL). */
STRIX_API strix_status strix_batch_norm_eval_backward(strix_backend *be, const float *grad_out,
                                                      const float *gamma, const float *xhat,
                                                      const float *channel_std, float *grad_in,
                                                      float *gamma_grad, float *beta_grad,
                                                      size_t n, size_t c, size_t spatial);
/* GroupNorm (Wu & He 2018; PyTorch GroupNorm) over (n, c, spatial): per (example, group) of
 * c/groups channels (D values, contiguous), two-pass mean and biased variance (the lane order
 * above), std = sqrt(var + eps); out = gamma[ch]·xhat + beta[ch]. Writes xhat, out and group_std
 * (n, groups). c % groups == 0 (asserted). */
STRIX_API strix_status strix_group_norm_forward(strix_backend *be, const float *in,
                                                const float *gamma, const float *beta,
                                                float *xhat, float *out, float *group_std,
                                                size_t n, size_t c, size_t spatial,
                                                size_t groups, float eps);
/* Its backward: per (example, group) the LayerNorm-style input gradient with g = go·gamma[ch],
 * grad_in = (D·g − Σg − xhat·Σ(g·xhat))/(D·std) (`=`); gamma_grad[ch] = Σ go·xhat and
 * beta_grad[ch] = Σ go (c) OVERWRITTEN: each example's row sum (lane order) added over examples
 * ascending from 0.0f (may be NULL). */
STRIX_API strix_status strix_group_norm_backward(strix_backend *be, const float *grad_out,
                                                 const float *gamma, const float *xhat,
                                                 const float *group_std, float *grad_in,
                                                 float *gamma_grad, float *beta_grad, size_t n,
                                                 size_t c, size_t spatial, size_t groups);

#ifdef __cplusplus
}
#endif
#endif
