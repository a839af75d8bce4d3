/*
 * conv2d.c - Conv2d (PyTorch nn.Conv2d, dilation 1, groups 1) as im2col + GEMM.
 *
 * Forward: one im2col of the whole batch, one batched GEMM (the weight shared by every example,
 * batch stride 0), one channel-vector add. Backward: dW per example (GEMMs adding in example
 * order), db as per-(example, channel) row sums (a GEMM against ones) summed over examples,
 * dx as a batched GEMM then col2im. No relevance rule here.
 */
#include <math.h>
#include <stdlib.h>

#include "layers_internal.h"

static strix_status conv_forward(strix_module *mod, const strix_tensor *x,
                                 const strix_tensor **y);
static strix_status conv_backward(strix_module *mod, const strix_tensor *dy,
                                  const strix_tensor **dx);

static void conv_destroy(strix_module *mod) {
    strix_conv2d *m = (strix_conv2d *)mod;
    strix_tensor *ts[] = {&m->col, &m->z, &m->out, &m->dcol, &m->dx, &m->ones, &m->colsum};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    free(m);
}

static const strix_module_i conv2d_vt = {
    .type = "Conv2d", .forward = conv_forward, .backward = conv_backward, .destroy = conv_destroy};

strix_status strix_conv2d_new(strix_params *ps, const char *prefix,
                              const strix_conv2d_config *cfg, strix_conv2d **out) {
    *out = NULL;
    strix_conv2d_config c = *cfg;
    if (c.stride_h == 0) c.stride_h = 1;
    if (c.stride_w == 0) c.stride_w = 1;
    if (c.in_channels <= 0 || c.out_channels <= 0 || c.kernel_h <= 0 || c.kernel_w <= 0 ||
        c.stride_h < 0 || c.stride_w < 0 || c.pad_h < 0 || c.pad_w < 0)
        return strix_error(STRIX_ERR_ARG,
                           "Conv2d %s: channels %d -> %d, kernel %dx%d, stride %dx%d, padding "
                           "%dx%d must be positive (padding >= 0)", prefix, c.in_channels,
                           c.out_channels, c.kernel_h, c.kernel_w, c.stride_h, c.stride_w,
                           c.pad_h, c.pad_w);
    char wname[STRIX_PARAM_NAME_MAX], bname[STRIX_PARAM_NAME_MAX];
    STRIX_TRY(nn_name(wname, prefix, "weight"));
    STRIX_TRY(nn_name(bname, prefix, "bias"));
    strix_conv2d *m = calloc(1, sizeof *m);
    if (!m) return NN_ALLOC_FAIL("Conv2d");
    m->base.vt = &conv2d_vt;
    m->base.be = ps->be;
    m->cfg = c;
    m->geom = (strix_conv_geom){.kh = (size_t)c.kernel_h, .kw = (size_t)c.kernel_w,
                                .stride_h = (size_t)c.stride_h, .stride_w = (size_t)c.stride_w,
                                .pad_h = (size_t)c.pad_h, .pad_w = (size_t)c.pad_w};
    m->need_input_grad = true;
    // PyTorch reset_parameters: kaiming_uniform_(a=sqrt(5)) gives bound 1/sqrt(fan_in), and the
    // bias uses the same bound
    double fan_in = (double)c.in_channels * c.kernel_h * c.kernel_w;
    float bound = (float)(1.0 / sqrt(fan_in));
    int64_t wshape[4] = {c.out_channels, c.in_channels, c.kernel_h, c.kernel_w};
    m->weight = strix_params_add(ps, wname, 4, wshape, STRIX_INIT_UNIFORM, bound, true);
    if (m->weight && c.bias) {
        int64_t bshape[1] = {c.out_channels};
        m->bias = strix_params_add(ps, bname, 1, bshape, STRIX_INIT_UNIFORM, bound, false);
        if (!m->bias) m->weight = NULL;
    }
    if (!m->weight) {
        free(m);
        return NN_ALLOC_FAIL("Conv2d");
    }
    *out = m;
    return STRIX_OK;
}

static strix_status conv_forward(strix_module *mod, const strix_tensor *x,
                                 const strix_tensor **y) {
    strix_conv2d *m = (strix_conv2d *)mod;
    STRIX_ASSERT(m->weight->data != NULL, "Conv2d: parameters not allocated");
    STRIX_TRY(nn_check_nchw("Conv2d", x, m->cfg.in_channels));
    strix_backend *be = m->base.be;
    int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    size_t OH = strix_conv_out_h(&m->geom, (size_t)H), OW = strix_conv_out_w(&m->geom, (size_t)W);
    if (OH == 0 || OW == 0)
        return strix_error(STRIX_ERR_SHAPE, "Conv2d: kernel %dx%d does not fit the padded "
                           "%lldx%lld input", m->cfg.kernel_h, m->cfg.kernel_w, (long long)H,
                           (long long)W);
    int64_t OC = m->cfg.out_channels;
    size_t P = (size_t)C * m->geom.kh * m->geom.kw, Q = OH * OW;
    m->N = N, m->H = H, m->W = W, m->OH = (int64_t)OH, m->OW = (int64_t)OW;
    m->x = nn_view_of(x);
    int64_t cshape[3] = {N, (int64_t)P, (int64_t)Q};
    STRIX_TRY(strix_tensor_ensure(be, &m->col, 3, cshape));
    STRIX_TRY(nn_ensure4(be, &m->z, N, OC, (int64_t)OH, (int64_t)OW));
    if (m->bias) STRIX_TRY(nn_ensure4(be, &m->out, N, OC, (int64_t)OH, (int64_t)OW));
    if (N > 0) {
        STRIX_TRY(strix_im2col(be, x->data, m->col.data, (size_t)N, (size_t)C, (size_t)H,
                               (size_t)W, &m->geom));
        // z_n (OC, Q) = W (OC, P) · col_n (P, Q) for every example n
        strix_gemm_batch g = {.a = m->weight->data, .lda = P, .stride_a = 0, .ta = false,
                              .b = m->col.data, .ldb = Q, .stride_b = P * Q, .tb = false,
                              .c = m->z.data, .ldc = Q, .stride_c = (size_t)OC * Q,
                              .m = (size_t)OC, .k = P, .n = Q, .batch = (size_t)N,
                              .alpha = 1.0f, .beta = 0.0f, .skip = STRIX_GEMM_FULL};
        STRIX_TRY(strix_gemm_batched(be, &g));
        if (m->bias)
            STRIX_TRY(strix_add_channel_vector(be, m->z.data, m->bias->data, m->out.data,
                                               (size_t)N, (size_t)OC, Q));
    }
    if (!m->bias) m->out = nn_view_of(&m->z);
    if (y) *y = &m->out;
    return STRIX_OK;
}

static strix_status conv_backward(strix_module *mod, const strix_tensor *dy,
                                  const strix_tensor **dx) {
    strix_conv2d *m = (strix_conv2d *)mod;
    STRIX_TRY(nn_check_same("Conv2d", dy, &m->out));
    strix_backend *be = m->base.be;
    size_t N = (size_t)m->N, OC = (size_t)m->cfg.out_channels, C = (size_t)m->cfg.in_channels;
    size_t P = C * m->geom.kh * m->geom.kw, Q = (size_t)(m->OH * m->OW);
    if (N > 0 && nn_wants_grad(m->weight)) {
        // dW (OC, P) += dy_n (OC, Q) · col_nᵀ (Q, P), examples in order
        for (size_t n = 0; n < N; n++)
            STRIX_TRY(strix_gemm_ex(be, dy->data + n * OC * Q, false, m->col.data + n * P * Q,
                                    true, m->weight->grad, OC, Q, P, 1.0f));
    }
    if (N > 0 && m->bias && nn_wants_grad(m->bias)) {
        // per (n, oc): Σ_q dy (a GEMM against ones, q ascending); then db += Σ_n in order
        STRIX_TRY(nn_ensure1(be, &m->ones, (int64_t)Q));
        STRIX_TRY(strix_fill(be, m->ones.data, 1.0f, Q));
        STRIX_TRY(nn_ensure1(be, &m->colsum, (int64_t)(N * OC)));
        STRIX_TRY(strix_gemm_ex(be, dy->data, false, m->ones.data, false, m->colsum.data, N * OC,
                                Q, 1, 0.0f));
        STRIX_TRY(strix_column_sums(be, m->colsum.data, m->bias->grad, N, OC, 1.0f));
    }
    if (m->need_input_grad) {
        STRIX_TRY(nn_ensure4(be, &m->dx, m->N, (int64_t)C, m->H, m->W));
        if (N > 0) {
            int64_t cshape[3] = {(int64_t)N, (int64_t)P, (int64_t)Q};
            STRIX_TRY(strix_tensor_ensure(be, &m->dcol, 3, cshape));
            // dcol_n (P, Q) = Wᵀ (P, OC) · dy_n (OC, Q)
            strix_gemm_batch g = {.a = m->weight->data, .lda = P, .stride_a = 0, .ta = true,
                                  .b = dy->data, .ldb = Q, .stride_b = OC * Q, .tb = false,
                                  .c = m->dcol.data, .ldc = Q, .stride_c = P * Q,
                                  .m = P, .k = OC, .n = Q, .batch = N,
                                  .alpha = 1.0f, .beta = 0.0f, .skip = STRIX_GEMM_FULL};
            STRIX_TRY(strix_gemm_batched(be, &g));
            STRIX_TRY(strix_fill(be, m->dx.data, 0.0f, (size_t)strix_tensor_numel(&m->dx)));
            STRIX_TRY(strix_col2im_add(be, m->dcol.data, m->dx.data, N, C, (size_t)m->H,
                                       (size_t)m->W, &m->geom));
        }
    }
    if (dx) *dx = m->need_input_grad ? &m->dx : NULL;
    return STRIX_OK;
}
