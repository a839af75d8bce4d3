/*
 * layers_internal.h - helpers shared by the layer zoo of src/nn (strix/layers.h): shapes of NCHW
 * inputs, int32 scratch that grows, gradient flags. Host-side bookkeeping only; no tensor data is
 * touched here except through backend calls.
 */
#ifndef STRIX_LAYERS_INTERNAL_H
#define STRIX_LAYERS_INTERNAL_H

#include "nn_internal.h"
#include "strix/layers.h"

/* Whether a parameter's gradient is wanted (a tied name follows the storage it shares). */
static inline bool nn_wants_grad(const strix_param *p) {
    return (p->tied_to ? p->tied_to : p)->requires_grad;
}

/* STRIX_ERR_SHAPE unless x is (N, channels, H, W); channels < 0 accepts any. */
static inline strix_status nn_check_nchw(const char *who, const strix_tensor *x, int channels) {
    if (x->ndim != 4)
        return strix_error(STRIX_ERR_SHAPE, "%s: input has %d dims, expected (N, C, H, W)", who,
                           x->ndim);
    if (channels >= 0 && x->shape[1] != channels)
        return strix_error(STRIX_ERR_SHAPE, "%s: input has %lld channels, expected %d", who,
                           (long long)x->shape[1], channels);
    return STRIX_OK;
}

/* t = a tensor of the given 4-d shape (grows only when needed). */
static inline strix_status nn_ensure4(strix_backend *be, strix_tensor *t, int64_t d0, int64_t d1,
                                      int64_t d2, int64_t d3) {
    int64_t shape[4] = {d0, d1, d2, d3};
    return strix_tensor_ensure(be, t, 4, shape);
}

/* t = a tensor with x's shape. */
static inline strix_status nn_ensure_same(strix_backend *be, strix_tensor *t,
                                          const strix_tensor *x) {
    return strix_tensor_ensure(be, t, x->ndim, x->shape);
}

/* t = a 1-d tensor of n floats. */
static inline strix_status nn_ensure1(strix_backend *be, strix_tensor *t, int64_t n) {
    return strix_tensor_ensure(be, t, 1, &n);
}

/* *buf holds at least n int32 of backend memory (reallocated only when it grows). */
static inline strix_status nn_ensure_i32(strix_backend *be, int32_t **buf, size_t *cap,
                                         size_t n) {
    if (n <= *cap && *buf) return STRIX_OK;
    strix_free(be, *buf);
    *buf = NULL;
    *cap = 0;
    STRIX_TRY(strix_alloc(be, (n ? n : 1) * sizeof(int32_t), (void **)buf));
    *cap = n ? n : 1;
    return STRIX_OK;
}

/* A view with x's data and the given shape (a module's output that is its input reshaped). */
static inline strix_tensor nn_reshape_view(const strix_tensor *x, int ndim, const int64_t *shape) {
    return strix_tensor_view(x->data, x->device, ndim, shape);
}

/* p->grad += scratch (n floats), unless p is frozen. */
static inline strix_status nn_add_grad(strix_backend *be, strix_param *p, const float *scratch,
                                       size_t n) {
    if (!p || !nn_wants_grad(p)) return STRIX_OK;
    return strix_add(be, p->grad, scratch, p->grad, n);
}

/* The product of shape[from..ndim). */
static inline int64_t nn_prod(const strix_tensor *x, int from) {
    int64_t n = 1;
    for (int d = from; d < x->ndim; d++) n *= x->shape[d];
    return n;
}

/* ---- the private state of the layers of strix/layers.h (see nn_internal.h) */

struct strix_conv2d_work {
    int64_t N, H, W, OH, OW;    /* shape of the last forward */
    strix_tensor x;             /* view of the input of the last forward */
    strix_tensor col;           /* (N, P, Q) im2col of x, valid when col_valid (patches) */
    bool col_valid;             /* col holds the patches of the last forward's x */
    strix_tensor z;             /* (N, OC, OH, OW) pre-bias output */
    strix_tensor out;           /* (N, OC, OH, OW); a view of z without bias */
    strix_tensor dcol, dx;      /* relevance scratch (chunk, OC, Q); input grad (N, C, H, W) */
};

struct strix_maxpool2d_work {
    int64_t N, C, H, W, OH, OW;
    int32_t *argmax;            /* backend, (N, C, OH, OW) */
    size_t argmax_cap;
    strix_tensor out, dx;
};

struct strix_avgpool2d_work {
    int64_t N, C, H, W, OH, OW;
    strix_tensor x;             /* view of the input of the last forward (LRP) */
    strix_tensor out, dx;
};

struct strix_batchnorm_work {
    bool last_training;         /* mode of the last forward */
    int64_t n, spatial;         /* last forward: examples, values per channel per example */
    strix_tensor x;             /* view of the input of the last forward (LRP) */
    strix_tensor out, xhat, std, dx, gamma_grad, beta_grad, one, zeros;
};

struct strix_groupnorm_work {
    int64_t n, spatial;
    strix_tensor x;             /* view of the input of the last forward (LRP) */
    strix_tensor out, xhat, std, dx, gamma_grad, beta_grad;
};

struct strix_rmsnorm_work {
    strix_tensor x;             /* view of the input of the last forward */
    strix_tensor out, rms, dx, terms;
};

struct strix_dropout_work {
    uint64_t last_offset;       /* offset of the last forward's mask */
    bool last_dropped;          /* the last forward applied a mask */
    strix_tensor out, dx;       /* owned: the masked output and gradient */
    strix_tensor ident_out, ident_dx; /* views: the identity's output and gradient */
};

struct strix_activation_work {
    strix_tensor x;             /* view of the input of the last forward */
    strix_tensor out, dx;
};

struct strix_flatten_work {
    int in_ndim;
    int64_t in_shape[STRIX_MAX_DIMS];
    strix_tensor out, dx;       /* views */
};

struct strix_sequential_work {
    strix_tensor out, dx;       /* identity views when empty */
};

struct strix_residual_work {
    strix_tensor x;             /* view of the input of the last forward */
    strix_tensor out, dx;
};

#endif
