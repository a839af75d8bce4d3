/*
 * kernels/norm.h - BatchNorm (per channel) and GroupNorm (per example and group) math
 * (include/strix/ops/cnn.h, docs/SEMANTICS.md "CNN orders").
 *
 * Summation order (every sum of this file, so that every backend can reproduce it): a sum runs
 * over rows of `spatial` contiguous values (BatchNorm: the rows of one channel, examples
 * ascending; GroupNorm: the channel rows of one (example, group), channels ascending). Value s of
 * a row is added to lane s mod STRIX_NORM_LANES (16 lanes from 0.0f, rows in order, positions
 * ascending); the lanes are then folded pairwise: for half = 8, 4, 2, 1: lane[l] += lane[l+half]
 * (l < half); the total is lane[0]. This blocked order vectorises and does not depend on the
 * thread count. NULL gamma/beta act as 1/0. No allocation, no libc beyond math.h.
 */
#ifndef STRIX_KERNELS_NORM_H
#define STRIX_KERNELS_NORM_H

#include "kernels/common.h"

#define STRIX_NORM_LANES 16

/* lanes[0..16) = 0. */
STRIX_HD static inline void strix_norm_lanes_zero(float *lanes) {
    for (size_t l = 0; l < STRIX_NORM_LANES; l++) lanes[l] = 0.0f;
}

/* The pairwise fold of the 16 lanes (documented above); returns the total. Destroys lanes. */
STRIX_HD static inline float strix_norm_lanes_total(float *lanes) {
    for (size_t half = STRIX_NORM_LANES / 2; half > 0; half /= 2)
        for (size_t l = 0; l < half; l++) lanes[l] += lanes[l + half];
    return lanes[0];
}

/* lanes[s mod 16] += x[s] over one row, s ascending. */
STRIX_HD static inline void strix_norm_lanes_add(float *lanes, const float *x, size_t len) {
    size_t s = 0;
    for (; s + STRIX_NORM_LANES <= len; s += STRIX_NORM_LANES)
        for (size_t l = 0; l < STRIX_NORM_LANES; l++) lanes[l] += x[s + l];
    for (size_t l = 0; s + l < len; l++) lanes[l] += x[s + l];
}

/* lanes[s mod 16] += (x[s] − mean)² over one row. */
STRIX_HD static inline void strix_norm_lanes_add_sq(float *lanes, const float *x, float mean,
                                                    size_t len) {
    size_t s = 0;
    for (; s + STRIX_NORM_LANES <= len; s += STRIX_NORM_LANES) {
        for (size_t l = 0; l < STRIX_NORM_LANES; l++) {
            float d = x[s + l] - mean;
            lanes[l] += d * d;
        }
    }
    for (size_t l = 0; s + l < len; l++) {
        float d = x[s + l] - mean;
        lanes[l] += d * d;
    }
}

/* The four sums of a normalisation backward over one row, each in its own lanes:
 * sg += go·gam, sgx += (go·gam)·xhat, so += go, sox += go·xhat. */
STRIX_HD static inline void strix_norm_lanes_add_grads(float *sg, float *sgx, float *so,
                                                       float *sox, const float *go,
                                                       const float *xhat, float gam, size_t len) {
    size_t s = 0;
    for (; s + STRIX_NORM_LANES <= len; s += STRIX_NORM_LANES) {
        for (size_t l = 0; l < STRIX_NORM_LANES; l++) {
            float d = go[s + l], xh = xhat[s + l], g = d * gam;
            sg[l] += g;
            sgx[l] += g * xh;
            so[l] += d;
            sox[l] += d * xh;
        }
    }
    for (size_t l = 0; s + l < len; l++) {
        float d = go[s + l], xh = xhat[s + l], g = d * gam;
        sg[l] += g;
        sgx[l] += g * xh;
        so[l] += d;
        sox[l] += d * xh;
    }
}

/* xhat = (x − mean)/std and out = gam·xhat (+ bet when has_beta) over one row (xhat/out may
 * alias x). */
STRIX_HD static inline void strix_norm_row_apply(const float *x, float *xhat, float *out,
                                                 float mean, float std, float gam, bool has_gamma,
                                                 float bet, bool has_beta, size_t len) {
    for (size_t s = 0; s < len; s++) {
        float normed = (x[s] - mean) / std;
        float scaled = has_gamma ? gam * normed : normed;
        xhat[s] = normed;
        out[s] = has_beta ? scaled + bet : scaled;
    }
}

/* grad_in = (D·g − Σg − xhat·Σ(g·xhat))/(D·std), g = go·gam, over one row (may alias go). */
STRIX_HD static inline void strix_norm_row_grad_in(const float *go, const float *xhat,
                                                   float *grad_in, float gam, float width,
                                                   float sum_g, float sum_gx, float std,
                                                   size_t len) {
    float denom = width * std;
    for (size_t s = 0; s < len; s++) {
        float g = go[s] * gam;
        grad_in[s] = (width * g - sum_g - xhat[s] * sum_gx) / denom;
    }
}

// ---- BatchNorm: one channel ch of (n, c, spatial) ---------------------------------------------

/* Mean of channel ch over its M = n·spatial values (documented lane order, then ÷ M). */
STRIX_HD static inline float strix_bn_channel_mean(const float *in, size_t n, size_t c,
                                                   size_t spatial, size_t ch) {
    float lanes[STRIX_NORM_LANES];
    strix_norm_lanes_zero(lanes);
    for (size_t e = 0; e < n; e++)
        strix_norm_lanes_add(lanes, in + (e * c + ch) * spatial, spatial);
    return strix_norm_lanes_total(lanes) / (float)(n * spatial);
}

/* Σ (x − mean)² over channel ch (documented lane order). */
STRIX_HD static inline float strix_bn_channel_squares(const float *in, float mean, size_t n,
                                                      size_t c, size_t spatial, size_t ch) {
    float lanes[STRIX_NORM_LANES];
    strix_norm_lanes_zero(lanes);
    for (size_t e = 0; e < n; e++)
        strix_norm_lanes_add_sq(lanes, in + (e * c + ch) * spatial, mean, spatial);
    return strix_norm_lanes_total(lanes);
}

/* Training forward of channel ch: mean, biased var = Σ(x − mean)²/M, std = sqrt(var + eps),
 * xhat, out; *std_out = std. */
STRIX_HD static inline void strix_bn_channel_forward(const float *in, const float *gamma,
                                                     const float *beta, float *xhat, float *out,
                                                     float *std_out, size_t n, size_t c,
                                                     size_t spatial, size_t ch, float eps) {
    float mean = strix_bn_channel_mean(in, n, c, spatial, ch);
    float squares = strix_bn_channel_squares(in, mean, n, c, spatial, ch);
    float std = sqrtf(squares / (float)(n * spatial) + eps);
    *std_out = std;
    float gam = gamma ? gamma[ch] : 1.0f, bet = beta ? beta[ch] : 0.0f;
    for (size_t e = 0; e < n; e++) {
        size_t at = (e * c + ch) * spatial;
        strix_norm_row_apply(in + at, xhat + at, out + at, mean, std, gam, gamma != NULL, bet,
                             beta != NULL, spatial);
    }
}

/* Training backward of channel ch (see strix_batch_norm_backward). */
STRIX_HD static inline void strix_bn_channel_backward(const float *grad_out, const float *gamma,
                                                      const float *xhat, float std,
                                                      float *grad_in, float *gamma_grad,
                                                      float *beta_grad, size_t n, size_t c,
                                                      size_t spatial, size_t ch) {
    float sg[STRIX_NORM_LANES], sgx[STRIX_NORM_LANES], so[STRIX_NORM_LANES];
    float sox[STRIX_NORM_LANES];
    strix_norm_lanes_zero(sg), strix_norm_lanes_zero(sgx);
    strix_norm_lanes_zero(so), strix_norm_lanes_zero(sox);
    float gam = gamma ? gamma[ch] : 1.0f;
    for (size_t e = 0; e < n; e++) {
        size_t at = (e * c + ch) * spatial;
        strix_norm_lanes_add_grads(sg, sgx, so, sox, grad_out + at, xhat + at, gam, spatial);
    }
    float sum_g = strix_norm_lanes_total(sg), sum_gx = strix_norm_lanes_total(sgx);
    if (gamma_grad) gamma_grad[ch] = strix_norm_lanes_total(sox);
    if (beta_grad) beta_grad[ch] = strix_norm_lanes_total(so);
    float width = (float)(n * spatial);
    for (size_t e = 0; e < n; e++) {
        size_t at = (e * c + ch) * spatial;
        strix_norm_row_grad_in(grad_out + at, xhat + at, grad_in + at, gam, width, sum_g, sum_gx,
                               std, spatial);
    }
}

/* Running statistics of channel ch: mean = (1−m)·mean + m·batch_mean; var likewise with the
 * unbiased batch variance Σ(x − mean)²/(M − 1), kept when M < 2. M == 0 changes nothing. */
STRIX_HD static inline void strix_bn_channel_update_running(const float *in, float *running_mean,
                                                            float *running_var, size_t n,
                                                            size_t c, size_t spatial, size_t ch,
                                                            float momentum) {
    size_t count = n * spatial;
    if (count == 0) return;
    float mean = strix_bn_channel_mean(in, n, c, spatial, ch);
    float keep = 1.0f - momentum;
    running_mean[ch] = keep * running_mean[ch] + momentum * mean;
    if (count < 2) return;
    float var = strix_bn_channel_squares(in, mean, n, c, spatial, ch) / (float)(count - 1);
    running_var[ch] = keep * running_var[ch] + momentum * var;
}

/* Eval forward of channel ch from the running statistics. */
STRIX_HD static inline void strix_bn_channel_eval_forward(const float *in, const float *gamma,
                                                          const float *beta, float mean,
                                                          float var, float *xhat, float *out,
                                                          float *std_out, size_t n, size_t c,
                                                          size_t spatial, size_t ch, float eps) {
    float std = sqrtf(var + eps);
    *std_out = std;
    float gam = gamma ? gamma[ch] : 1.0f, bet = beta ? beta[ch] : 0.0f;
    for (size_t e = 0; e < n; e++) {
        size_t at = (e * c + ch) * spatial;
        strix_norm_row_apply(in + at, xhat + at, out + at, mean, std, gam, gamma != NULL, bet,
                             beta != NULL, spatial);
    }
}

/* Eval backward of channel ch: grad_in = (go·gam)/std; gamma_grad = Σ go·xhat, beta_grad = Σ go
 * (each may be NULL). */
STRIX_HD static inline void strix_bn_channel_eval_backward(const float *grad_out,
                                                           const float *gamma, const float *xhat,
                                                           float std, float *grad_in,
                                                           float *gamma_grad, float *beta_grad,
                                                           size_t n, size_t c, size_t spatial,
                                                           size_t ch) {
    float gam = gamma ? gamma[ch] : 1.0f;
    if (gamma_grad || beta_grad) {
        float sg[STRIX_NORM_LANES], sgx[STRIX_NORM_LANES], so[STRIX_NORM_LANES];
        float sox[STRIX_NORM_LANES];
        strix_norm_lanes_zero(sg), strix_norm_lanes_zero(sgx);
        strix_norm_lanes_zero(so), strix_norm_lanes_zero(sox);
        for (size_t e = 0; e < n; e++) {
            size_t at = (e * c + ch) * spatial;
            strix_norm_lanes_add_grads(sg, sgx, so, sox, grad_out + at, xhat + at, gam, spatial);
        }
        if (gamma_grad) gamma_grad[ch] = strix_norm_lanes_total(sox);
        if (beta_grad) beta_grad[ch] = strix_norm_lanes_total(so);
    }
    for (size_t e = 0; e < n; e++) {
        size_t at = (e * c + ch) * spatial;
        for (size_t s = 0; s < spatial; s++) grad_in[at + s] = grad_out[at + s] * gam / std;
    }
}

// ---- GroupNorm: one (example, group) block of cg channels x spatial, contiguous ---------------

/* Forward of one block: mean and biased var over D = cg·spatial values (lane order, channel rows
 * ascending), std = sqrt(var + eps), xhat, out with gamma/beta of the block's channels (gamma,
 * beta point at the block's first channel). Returns std. */
STRIX_HD static inline float strix_gn_block_forward(const float *in, const float *gamma,
                                                    const float *beta, float *xhat, float *out,
                                                    size_t cg, size_t spatial, float eps) {
    size_t count = cg * spatial;
    float lanes[STRIX_NORM_LANES];
    strix_norm_lanes_zero(lanes);
    for (size_t k = 0; k < cg; k++) strix_norm_lanes_add(lanes, in + k * spatial, spatial);
    float mean = strix_norm_lanes_total(lanes) / (float)count;
    strix_norm_lanes_zero(lanes);
    for (size_t k = 0; k < cg; k++) strix_norm_lanes_add_sq(lanes, in + k * spatial, mean, spatial);
    float std = sqrtf(strix_norm_lanes_total(lanes) / (float)count + eps);
    for (size_t k = 0; k < cg; k++) {
        size_t at = k * spatial;
        strix_norm_row_apply(in + at, xhat + at, out + at, mean, std, gamma ? gamma[k] : 1.0f,
                             gamma != NULL, beta ? beta[k] : 0.0f, beta != NULL, spatial);
    }
    return std;
}

/* Input gradient of one block: g = go·gamma[k]; the LayerNorm-style formula over D values. */
STRIX_HD static inline void strix_gn_block_backward(const float *grad_out, const float *gamma,
                                                    const float *xhat, float std, float *grad_in,
                                                    size_t cg, size_t spatial) {
    float sg[STRIX_NORM_LANES], sgx[STRIX_NORM_LANES], so[STRIX_NORM_LANES];
    float sox[STRIX_NORM_LANES];
    strix_norm_lanes_zero(sg), strix_norm_lanes_zero(sgx);
    strix_norm_lanes_zero(so), strix_norm_lanes_zero(sox);
    for (size_t k = 0; k < cg; k++)
        strix_norm_lanes_add_grads(sg, sgx, so, sox, grad_out + k * spatial, xhat + k * spatial,
                                   gamma ? gamma[k] : 1.0f, spatial);
    float sum_g = strix_norm_lanes_total(sg), sum_gx = strix_norm_lanes_total(sgx);
    float width = (float)(cg * spatial);
    for (size_t k = 0; k < cg; k++)
        strix_norm_row_grad_in(grad_out + k * spatial, xhat + k * spatial, grad_in + k * spatial,
                               gamma ? gamma[k] : 1.0f, width, sum_g, sum_gx, std, spatial);
}

/* GroupNorm parameter grads of channel ch: per example e the row sums Σ go·xhat and Σ go (lane
 * order over the row), added over examples ascending from 0.0f. */
STRIX_HD static inline void strix_gn_channel_param_grads(const float *grad_out, const float *xhat,
                                                         float *gamma_grad, float *beta_grad,
                                                         size_t n, size_t c, size_t spatial,
                                                         size_t ch) {
    float total_gx = 0.0f, total_g = 0.0f;
    for (size_t e = 0; e < n; e++) {
        float sg[STRIX_NORM_LANES], sgx[STRIX_NORM_LANES], so[STRIX_NORM_LANES];
        float sox[STRIX_NORM_LANES];
        strix_norm_lanes_zero(sg), strix_norm_lanes_zero(sgx);
        strix_norm_lanes_zero(so), strix_norm_lanes_zero(sox);
        size_t at = (e * c + ch) * spatial;
        strix_norm_lanes_add_grads(sg, sgx, so, sox, grad_out + at, xhat + at, 1.0f, spatial);
        total_gx += strix_norm_lanes_total(sox);
        total_g += strix_norm_lanes_total(so);
    }
    if (gamma_grad) gamma_grad[ch] = total_gx;
    if (beta_grad) beta_grad[ch] = total_g;
}

#endif
