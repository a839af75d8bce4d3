/*
 * kernels/activations.h - per-element forward and derivative of each strix_act
 * (PyTorch's definitions; GELU in its erf form). Pure scalar functions; the loops live in the
 * backends.
 *
 * Derivatives are taken at the forward INPUT x. RELU's backward is a select (x > 0 ? g : 0), so
 * the kink at 0 gives exactly 0.
 */
#ifndef STRIX_KERNELS_ACTIVATIONS_H
#define STRIX_KERNELS_ACTIVATIONS_H

#include "strix/backend.h"
#include "kernels/common.h"
#include "kernels/mathf.h"

#define STRIX_GELU_TANH_K 0.7978845608f /* sqrt(2/pi) */
#define STRIX_GELU_TANH_C 0.044715f
#define STRIX_INV_SQRT2 0.70710678118654752f
#define STRIX_INV_SQRT_2PI 0.39894228040143268f

/* torch.clamp(x, lo, hi): NaN compares false twice and stays NaN. */
STRIX_HD static inline float strix_clampf(float x, float lo, float hi) {
    return x < lo ? lo : x > hi ? hi : x;
}

/* Logistic sigmoid 1/(1+e^-x). */
STRIX_HD static inline float strix_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* GELU (erf form) x·Φ(x) = 0.5·x·(1 + erf(x/√2)), on the branch-free erf of kernels/mathf.h so
 * the CPU loop vectorises. */
STRIX_HD static inline float strix_gelu_forward(float x) {
    return 0.5f * x * (1.0f + strix_kernel_erff(x * STRIX_INV_SQRT2));
}

/* grad_out·(Φ(x) + x·φ(x)); e^(−z²), z = x/√2, serves both erf(z) and φ(x) = e^(−x²/2)/√(2π). */
STRIX_HD static inline float strix_gelu_backward(float x, float grad_out) {
    float z = x * STRIX_INV_SQRT2;
    float e = strix_kernel_expf(-(z * z));
    float cdf = 0.5f * (1.0f + strix_kernel_erff_e(z, e));
    float pdf = STRIX_INV_SQRT_2PI * e;
    return grad_out * (cdf + x * pdf);
}

/* ReLU x < 0 ? 0 : x: NaN and -0 pass through (as torch.relu). A select, so loops vectorise. */
STRIX_HD static inline float strix_relu_forward(float x) { return x < 0.0f ? 0.0f : x; }

/* ReLU's derivative as a select: x > 0 ? grad_out : 0 (0 at the kink, and for NaN x). */
STRIX_HD static inline float strix_relu_backward(float x, float grad_out) {
    return x > 0.0f ? grad_out : 0.0f;
}

/* f(x) for activation `op`. RELU is x < 0 ? 0 : x, so NaN and -0 pass through (as torch.relu). */
STRIX_HD static inline float strix_act_forward(strix_act op, float x) {
    switch (op) {
    case STRIX_ACT_RELU: return strix_relu_forward(x);
    case STRIX_ACT_NEG: return -x;
    case STRIX_ACT_TANH: return tanhf(x);
    case STRIX_ACT_SIGMOID: return strix_sigmoidf(x);
    case STRIX_ACT_SILU: return x * strix_sigmoidf(x);
    case STRIX_ACT_EXP: return expf(x);
    case STRIX_ACT_GELU_TANH: {
        float inner = STRIX_GELU_TANH_K * (x + STRIX_GELU_TANH_C * x * x * x);
        return 0.5f * x * (1.0f + tanhf(inner));
    }
    case STRIX_ACT_GELU: return strix_gelu_forward(x);
    case STRIX_ACT_LOG: return logf(x);
    }
    return x;
}

/* grad_out·f'(x) for activation `op`. */
STRIX_HD static inline float strix_act_backward(strix_act op, float x, float grad_out) {
    switch (op) {
    case STRIX_ACT_RELU: return strix_relu_backward(x, grad_out);
    case STRIX_ACT_NEG: return -grad_out;
    case STRIX_ACT_TANH: {
        float t = tanhf(x);
        return grad_out * (1.0f - t * t);
    }
    case STRIX_ACT_SIGMOID: {
        float s = strix_sigmoidf(x);
        return grad_out * (s * (1.0f - s));
    }
    case STRIX_ACT_SILU: {
        float s = strix_sigmoidf(x);
        return grad_out * (s + x * s * (1.0f - s));
    }
    case STRIX_ACT_EXP: return grad_out * expf(x);
    case STRIX_ACT_GELU_TANH: {
        /* d/dx 0.5x(1+tanh(u)) = 0.5(1+t) + 0.5x(1-t²)·K(1+3C·x²) */
        float x2 = x * x;
        float t = tanhf(STRIX_GELU_TANH_K * (x + STRIX_GELU_TANH_C * x2 * x));
        float du = STRIX_GELU_TANH_K * (1.0f + 3.0f * STRIX_GELU_TANH_C * x2);
        return grad_out * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
    }
    case STRIX_ACT_GELU: return strix_gelu_backward(x, grad_out);
    case STRIX_ACT_LOG: return grad_out / x;
    }
    return grad_out;
}

#endif
