/*
 * strix/layers.h - the classic layer zoo with PyTorch's names, defaults and semantics: Conv2d,
 * MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, BatchNorm1d/2d (+ folding into the preceding
 * Conv2d/Linear), GroupNorm, RMSNorm, Dropout, ReLU/Tanh/Sigmoid/SiLU/GELU, Flatten, and the
 * containers Sequential and Residual. Linear (with PyTorch's default init) is in strix/nn.h.
 *
 * Every layer is a strix_module (strix/nn.h) and follows its contracts: construct (parameters
 * are declared into a strix_params block under PyTorch dotted names), strix_params_alloc, then
 * strix_module_forward / strix_module_backward / strix_module_set_training / strix_module_free.
 * forward keeps a pointer to x (leave x unchanged until backward) and returns an output the
 * module owns; backward adds parameter grads (`+=`, none for frozen parameters) and returns the
 * input gradient `=` in a buffer the module owns. Shape-preserving identities (Flatten, Dropout
 * in eval mode or with p = 0, a folded BatchNorm) return views of their input / of dy instead of
 * copies. Images are NCHW. All math runs on backend primitives (strix/ops/cnn.h, backend.h).
 * Modules start in training mode.
 *
 * Errors: constructors return STRIX_ERR_ARG (bad sizes), STRIX_ERR_ALLOC; forward returns
 * STRIX_ERR_SHAPE for inputs of the wrong rank, channel count or size; backward STRIX_ERR_SHAPE
 * when dy's shape differs from the last output's; backend errors pass through.
 *
 * Relevance (LRP, strix/lrp.h): every layer implements the relevance slot for its last forward
 * with its rule (a "Relevance:" line per layer below); it writes only backward-type buffers (dx,
 * dcol), never the forward's caches; pass-through layers return r_out itself (or a view of it).
 *
 * Not here: dilation/groups in Conv2d, ceil_mode, count_include_pad = False, non-affine
 * BatchNorm/GroupNorm, BatchNorm without running statistics.
 */
#ifndef STRIX_LAYERS_H
#define STRIX_LAYERS_H

#include "strix/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- Conv2d ------------------------------------------------------------------------------------

typedef struct strix_conv2d_config {
    int in_channels, out_channels;
    int kernel_h, kernel_w;
    int stride_h, stride_w; /* 0 means 1 (PyTorch's default) */
    int pad_h, pad_w;       /* zero padding */
    bool bias;
} strix_conv2d_config;

/* PyTorch nn.Conv2d (dilation 1, groups 1): x (N, C, H, W) -> y (N, OC, OH, OW) with
 * OH = (H + 2·pad_h − kh)/stride_h + 1. Per example, im2col (col (P, Q), P = C·kh·kw,
 * Q = OH·OW) then z = W·col with W (OC, C, kh, kw) read as an (OC, P) matrix, then y = z + b per
 * channel (strix_conv2d_forward). Backward (strix_conv2d_backward): dW and db += the sum, in
 * group order, of sums over groups of STRIX_CONV_GROUP examples; dx = col2im(Wᵀ·dy_n) (`=`).
 * The forward keeps a view of x and the pre-bias z (for LRP); it makes no batch-sized col:
 * strix_conv2d_patches rebuilds it from x when needed.
 * Relevance: the four affine rules (Zennit 1.0.0) with the convolution as the map, in chunks of
 * images (dcol: one chunk's outputs); the kept z and output serve epsilon and gamma. */
typedef struct strix_conv2d {
    strix_module base;
    strix_conv2d_config cfg;
    strix_conv_geom geom;
    strix_param *weight, *bias; /* bias NULL without bias */
    bool need_input_grad;       /* false: backward skips dx (default true) */
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_conv2d_work *work;
} strix_conv2d;

/* Declares `<prefix>.weight` (OC, C, kh, kw) and, with cfg->bias, `<prefix>.bias` (OC), both
 * with PyTorch's default init U(−1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = C·kh·kw (drawn by
 * strix_params_init); weight decay on the weight. STRIX_ERR_ARG for non-positive sizes or
 * strides, negative padding. */
STRIX_API strix_status strix_conv2d_new(strix_params *ps, const char *prefix,
                                        const strix_conv2d_config *cfg, strix_conv2d **out);
/* The im2col patches (N, P, Q) of the last forward's input (kept x, which must be unchanged),
 * built on the first call after each forward into the module's private buffer and reused until
 * the next forward.
 * Backend errors pass through. */
STRIX_API strix_status strix_conv2d_patches(strix_conv2d *m, const strix_tensor **col);

// ---- pooling -----------------------------------------------------------------------------------

typedef struct strix_pool2d_config {
    int kernel_h, kernel_w;
    int stride_h, stride_w; /* 0 means the kernel size (PyTorch's default) */
    int pad_h, pad_w;       /* at most half the kernel (PyTorch's rule) */
} strix_pool2d_config;

/* PyTorch nn.MaxPool2d (dilation 1, floor mode): per plane of x (N, C, H, W), the first maximum
 * of each window (padding is -inf); argmax (N, C, OH, OW) keeps the flat in-plane index of the
 * winner for backward (dx = 0, then each dy added at its argmax).
 * Relevance: winner takes all, each window's relevance to its argmax (Zennit 1.0.0 leaves max
 * pools to the gradient). */
typedef struct strix_maxpool2d {
    strix_module base;
    strix_conv_geom geom;
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_maxpool2d_work *work;
} strix_maxpool2d;

/* STRIX_ERR_ARG for a non-positive kernel or stride, or padding over half the kernel. */
STRIX_API strix_status strix_maxpool2d_new(strix_backend *be, const strix_pool2d_config *cfg,
                                           strix_maxpool2d **out);

/* PyTorch nn.AvgPool2d with count_include_pad = True (the default): the window sum over kh·kw,
 * padding counted as 0; backward spreads dy/(kh·kw) over each window. As AdaptiveAvgPool2d
 * (output size fixed, geometry chosen per input) it is the same pool with kernel = stride =
 * H/out_h (and likewise W), which is PyTorch's adaptive pool when out_h divides H and out_w
 * divides W; other sizes are STRIX_ERR_UNSUPPORTED at forward.
 * Relevance: the epsilon rule of the window means (lrp_avg_pool; Zennit's Norm rule). */
typedef struct strix_avgpool2d {
    strix_module base;
    strix_conv_geom geom;       /* adaptive: set at each forward */
    bool adaptive;
    int64_t out_h, out_w;       /* adaptive only */
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_avgpool2d_work *work;
} strix_avgpool2d;

/* STRIX_ERR_ARG for a non-positive kernel or stride, or padding over half the kernel. */
STRIX_API strix_status strix_avgpool2d_new(strix_backend *be, const strix_pool2d_config *cfg,
                                           strix_avgpool2d **out);
/* nn.AdaptiveAvgPool2d((out_h, out_w)); STRIX_ERR_ARG unless both are positive. */
STRIX_API strix_status strix_adaptive_avgpool2d_new(strix_backend *be, int out_h, int out_w,
                                                    strix_avgpool2d **out);

// ---- normalisation -----------------------------------------------------------------------------

/* PyTorch nn.BatchNorm2d over x (N, C, H, W), or nn.BatchNorm1d over (N, C) or (N, C, L)
 * (Ioffe & Szegedy 2015): per channel over M = N·spatial values.
 *   training: y = γ·(x − mean)/sqrt(var + eps) + β with the batch mean and biased variance, then
 *     running_mean/var = (1 − momentum)·running + momentum·batch (unbiased variance) and
 *     num_batches_tracked += 1. M < 2 is STRIX_ERR_SHAPE with the running statistics untouched
 *     (PyTorch raises; docs/SEMANTICS.md).
 *   eval: y = γ·(x − running_mean)/sqrt(running_var + eps) + β.
 * Backward follows the mode of the last forward (training: the full batch-statistics gradient;
 * eval: dx = dy·γ/std); γ/β grads `+=` Σ dy·xhat and Σ dy. xhat and the channel std are kept
 * (backward, LRP).
 * Relevance: merged into the preceding Conv2d/Linear by Sequential in eval mode (see strix/lrp.h);
 * otherwise the epsilon rule of y = (γ/std)·x + shift with the std of the last forward. */
typedef struct strix_batchnorm {
    strix_module base;
    int num_features;
    int in_ndim;                /* 4 for BatchNorm2d; 2 for BatchNorm1d (which also takes 3) */
    float eps, momentum;
    bool training;              /* read it with strix_module_training */
    bool folded;                /* strix_batchnorm_fold ran: forward/backward are the identity */
    strix_param *weight, *bias;                 /* γ (ones), β (zeros) */
    strix_param *running_mean, *running_var;    /* buffers: zeros, ones */
    strix_param *num_batches_tracked; /* buffer (1): a count stored as float; a 0-dim int64 in
                                       * state dicts, as PyTorch has it */
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_batchnorm_work *work;
} strix_batchnorm;

/* Declares `<prefix>.weight`, `.bias` (C) and the buffers `.running_mean`, `.running_var` (C),
 * `.num_batches_tracked` (1). PyTorch defaults: eps 1e-5, momentum 0.1. STRIX_ERR_ARG for
 * num_features <= 0, eps <= 0 or momentum outside [0, 1]. */
STRIX_API strix_status strix_batchnorm2d_new(strix_params *ps, const char *prefix,
                                             int num_features, float eps, float momentum,
                                             strix_batchnorm **out);
STRIX_API strix_status strix_batchnorm1d_new(strix_params *ps, const char *prefix,
                                             int num_features, float eps, float momentum,
                                             strix_batchnorm **out);

/* Folds the eval-mode BatchNorm `bn` into `prev`, the Conv2d or Linear (with bias) whose output
 * it normalises, for inference: with s = γ/sqrt(running_var + eps),
 *   W'[oc] = s[oc]·W[oc],  b'[oc] = s[oc]·(b[oc] − running_mean[oc]) + β[oc],
 * computed on the backend by the BatchNorm eval primitive itself; then bn becomes the identity
 * (forward returns its input, in both modes) and its parameters are reset to γ = 1, β = 0,
 * running_mean = 0, running_var = 1 so a state dict saved afterwards means the same model to
 * PyTorch up to the factor 1/sqrt(1 + eps). STRIX_ERR_ARG when prev is neither, has no bias, its
 * output width differs from bn's channels, or bn is already folded. */
STRIX_API strix_status strix_batchnorm_fold(strix_batchnorm *bn, strix_module *prev);
/* The mode of bn's last forward (true: batch statistics), which its backward and relevance
 * follow; bn->training is the mode of the next. False before the first forward. */
STRIX_API bool strix_batchnorm_last_training(const strix_batchnorm *bn);

/* PyTorch nn.GroupNorm (Wu & He 2018) over x (N, C, *): per (example, group of C/groups
 * channels) mean and biased variance; y = γ[c]·xhat + β[c]. γ/β grads `+=` (per-example sums
 * added over examples in order).
 * Relevance: pass-through, or with rule.layer_norm_detach_std the epsilon rule with the group std
 * held constant. */
typedef struct strix_groupnorm {
    strix_module base;
    int num_groups, num_channels;
    float eps;
    strix_param *weight, *bias; /* ones, zeros */
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_groupnorm_work *work;
} strix_groupnorm;

/* Declares `<prefix>.weight` and `.bias` (C). STRIX_ERR_ARG unless groups divides channels and
 * eps > 0. */
STRIX_API strix_status strix_groupnorm_new(strix_params *ps, const char *prefix, int num_groups,
                                           int num_channels, float eps, strix_groupnorm **out);

/* PyTorch's default RMSNorm eps (None there: the float32 machine epsilon). */
#define STRIX_RMSNORM_DEFAULT_EPS 1.1920928955078125e-07f

/* PyTorch nn.RMSNorm over the last dim (Zhang & Sennrich 2019): y = γ·x/sqrt(mean(x²) + eps).
 * γ grad `+=` column sums of dy·x/rms.
 * Relevance: pass-through, or with rule.layer_norm_detach_std y·r/stab(y) (rms held constant). */
typedef struct strix_rmsnorm {
    strix_module base;
    int dim;
    float eps;
    strix_param *weight;        /* ones; NULL without elementwise affine */
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_rmsnorm_work *work;
} strix_rmsnorm;

/* Declares `<prefix>.weight` (dim) when `affine`. STRIX_ERR_ARG for dim <= 0 or eps <= 0. */
STRIX_API strix_status strix_rmsnorm_new(strix_params *ps, const char *prefix, int dim, float eps,
                                         bool affine, strix_rmsnorm **out);

// ---- Dropout -----------------------------------------------------------------------------------

/* PyTorch nn.Dropout (inverted): in training, element i of the k-th forward is dropped iff
 * U(seed, offset_k + i) < p (the counter RNG of strix_dropout_forward), kept ones are scaled by
 * 1/(1 − p); offset advances by numel(x) after every training forward, so the masks are
 * reproducible from (seed, offset) and never repeat. Backward applies the same mask and scale to
 * dy. Eval mode (or p = 0) is the identity.
 * Relevance: r itself in eval mode; after a training forward, r on the kept units, 0 elsewhere. */
typedef struct strix_dropout {
    strix_module base;
    float p;
    bool training;              /* read it with strix_module_training */
    uint64_t seed, offset;      /* the next forward uses (seed, offset); both may be set */
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_dropout_work *work;
} strix_dropout;

/* STRIX_ERR_ARG unless 0 <= p <= 1. `seed` picks the mask stream (e.g. strix_seed_derive of the
 * global seed and the layer's index). */
STRIX_API strix_status strix_dropout_new(strix_backend *be, float p, uint64_t seed,
                                         strix_dropout **out);

// ---- activations, Flatten ---------------------------------------------------------------------

/* Elementwise activation module: op is STRIX_ACT_RELU (nn.ReLU), _TANH, _SIGMOID, _SILU,
 * _GELU (erf form, nn.GELU()) or _GELU_TANH (nn.GELU(approximate="tanh")). Backward is
 * dy·f'(x) at the kept input (ReLU: a select, 0 at x = 0).
 * Relevance: passes through unchanged (Zennit's Pass, LXT's identity rule). */
typedef struct strix_activation {
    strix_module base;
    strix_act op;
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_activation_work *work;
} strix_activation;

/* STRIX_ERR_ARG for another op (NEG, EXP are not modules). */
STRIX_API strix_status strix_activation_new(strix_backend *be, strix_act op,
                                            strix_activation **out);

/* PyTorch nn.Flatten(start_dim, end_dim): merges dims start..end (negative counts from the end)
 * into one; y is a view of x and dx a view of dy (no copies). Relevance: reshaped like dy. */
typedef struct strix_flatten {
    strix_module base;
    int start_dim, end_dim;
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_flatten_work *work;
} strix_flatten;

/* nn.Flatten() is (1, -1). Dims are checked at forward (STRIX_ERR_SHAPE when out of range). */
STRIX_API strix_status strix_flatten_new(strix_backend *be, int start_dim, int end_dim,
                                         strix_flatten **out);

// ---- containers --------------------------------------------------------------------------------

/* PyTorch nn.Sequential: children run in order forward and in reverse backward; set_training
 * reaches every child. Children are named "<prefix>.0", "<prefix>.1", ... in the order they are
 * added (parameterless ones take an index too): build each child with the name
 * strix_sequential_child_name gives, then add it. An empty Sequential is the identity.
 * Relevance: the children's in reverse, an eval-mode BatchNorm right after a Conv2d or Linear
 * merged into it (strix/lrp.h); the `child` slot lists the children. General form
 * (strix_module_forward_ex): the io (ids, mask, state, several inputs) goes to the first child,
 * whose one output runs through the rest; backward_ex/relevance_ex end with the first child's
 * general form (an Embedding-headed Sequential takes ids and explains per id). */
typedef struct strix_sequential {
    strix_module base;
    char prefix[STRIX_PARAM_NAME_MAX];
    strix_module **children;
    int count, cap;
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_sequential_work *work;
} strix_sequential;

/* An empty Sequential whose children live under `prefix` ("" at the top level: "0.weight").
 * STRIX_ERR_ARG for a prefix too long, STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_sequential_new(strix_backend *be, const char *prefix,
                                            strix_sequential **out);
/* The name of the next child: "<prefix>.<count>" (or "<count>"). STRIX_ERR_ARG if too long. */
STRIX_API strix_status strix_sequential_child_name(const strix_sequential *s,
                                                   char name[STRIX_PARAM_NAME_MAX]);
/* Appends `child` and takes ownership of it, also on failure (then it is freed):
 * STRIX_ERR_ALLOC. child must be non-NULL and on s's backend. */
STRIX_API strix_status strix_sequential_add(strix_sequential *s, strix_module *child);
/* Child i (0 <= i < count). */
STRIX_API strix_module *strix_sequential_at(const strix_sequential *s, int i);

/* y = x + f(x): f must keep the shape (STRIX_ERR_SHAPE otherwise). Backward: dx = dy + f's
 * input gradient of dy. Relevance: the epsilon split r_x = (x/stab y)·r, r_f = (f(x)/stab y)·r
 * (eps of the Residual's rule), then r_x + f's relevance of r_f; `child` 0 is f. General form:
 * one float input, a mask or state in the io goes on to f (f must have one output). */
typedef struct strix_residual {
    strix_module base;
    strix_module *f;
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_residual_work *work;
} strix_residual;

/* Takes ownership of f, also on failure (STRIX_ERR_ALLOC; f is then freed). */
STRIX_API strix_status strix_residual_new(strix_module *f, strix_residual **out);

#ifdef __cplusplus
}
#endif
#endif
