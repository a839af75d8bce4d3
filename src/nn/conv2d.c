/*
 * conv2d.c - Conv2d (PyTorch nn.Conv2d, dilation 1, groups 1) on the fused backend primitives
 * strix_conv2d_forward / strix_conv2d_backward (im2col + GEMM per example, no batch-sized col;
 * their orders are documented in strix/ops/cnn.h). The forward keeps x and the pre-bias z; the
 * im2col patches are rebuilt from x on demand (strix_conv2d_patches). Relevance: the four affine
 * rules of src/nn/lrp_affine.c with the convolution as the map (per chunk of images: the fused
 * forward, and the fused backward's dx for the transpose), so clamped or constant inputs are
 * images (padding taps stay 0) and the rules' elementwise work is in image space, as Zennit's
 * autograd on the image; the kept z and output serve the epsilon and gamma rules. The backend's
 * lrp_conv primitive computes the same epsilon rule in patch space (r_col, then col2im_add): it
 * needs the batch's im2col patches (N·P·Q floats) where this path keeps one chunk of images, so
 * the epsilon rule stays composed here (lrp_stabilized_divide between the fused maps).
 */
#include <math.h>
#include <stdlib.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"

static strix_status conv_forward(strix_module *mod, const strix_tensor *x,
                                 const strix_tensor **y);
static strix_status conv_backward(strix_module *mod, const strix_tensor *dy,
                                  const strix_tensor **dx);

static void conv_destroy(strix_module *mod) {
    strix_conv2d *m = (strix_conv2d *)mod;
    strix_tensor *ts[] = {&m->work->col, &m->work->z, &m->work->out, &m->work->dcol, &m->work->dx};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    free(m);
}

static strix_status conv_relevance(strix_module *mod, const strix_tensor *r,
                                   const strix_tensor **r_in);

static const strix_module_i conv2d_vt = {
    .type = "Conv2d", .forward = conv_forward, .backward = conv_backward, .destroy = conv_destroy,
    .relevance = conv_relevance, .supports_rule = lrp_supports_all};

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
    strix_conv2d *m = NULL;
    NN_CALLOC_WITH_WORK(m);
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
    m->work->N = N, m->work->H = H, m->work->W = W, m->work->OH = (int64_t)OH,
    m->work->OW = (int64_t)OW;
    m->work->x = nn_view_of(x);
    m->work->col_valid = false;
    STRIX_TRY(nn_ensure4(be, &m->work->z, N, OC, (int64_t)OH, (int64_t)OW));
    if (m->bias) STRIX_TRY(nn_ensure4(be, &m->work->out, N, OC, (int64_t)OH, (int64_t)OW));
    if (N > 0)
        STRIX_TRY(strix_conv2d_forward(be, x->data, m->weight->data,
                                       m->bias ? m->bias->data : NULL, m->work->z.data,
                                       m->bias ? m->work->out.data : NULL, (size_t)N, (size_t)C,
                                       (size_t)H, (size_t)W, (size_t)OC, &m->geom));
    if (!m->bias) m->work->out = nn_view_of(&m->work->z);
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

static strix_status conv_backward(strix_module *mod, const strix_tensor *dy,
                                  const strix_tensor **dx) {
    strix_conv2d *m = (strix_conv2d *)mod;
    STRIX_TRY(nn_check_same("Conv2d", dy, &m->work->out));
    strix_backend *be = m->base.be;
    size_t N = (size_t)m->work->N, OC = (size_t)m->cfg.out_channels, C = (size_t)m->cfg.in_channels;
    float *dw = nn_wants_grad(m->weight) ? m->weight->grad : NULL;
    float *db = m->bias && nn_wants_grad(m->bias) ? m->bias->grad : NULL;
    if (m->need_input_grad) STRIX_TRY(nn_ensure4(be, &m->work->dx, m->work->N, (int64_t)C,
                                                 m->work->H, m->work->W));
    if (N > 0)
        STRIX_TRY(strix_conv2d_backward(be, m->work->x.data, m->weight->data, dy->data, dw, db,
                                        m->need_input_grad ? m->work->dx.data : NULL, N, C,
                                        (size_t)m->work->H, (size_t)m->work->W, OC, &m->geom));
    if (dx) *dx = m->need_input_grad ? &m->work->dx : NULL;
    return STRIX_OK;
}

strix_status strix_conv2d_patches(strix_conv2d *m, const strix_tensor **col) {
    STRIX_ASSERT(m->work->x.data != NULL || m->work->N == 0, "Conv2d patches: no forward yet");
    strix_backend *be = m->base.be;
    size_t C = (size_t)m->cfg.in_channels;
    size_t P = C * m->geom.kh * m->geom.kw, Q = (size_t)(m->work->OH * m->work->OW);
    if (!m->work->col_valid) {
        int64_t cshape[3] = {m->work->N, (int64_t)P, (int64_t)Q};
        STRIX_TRY(strix_tensor_ensure(be, &m->work->col, 3, cshape));
        if (m->work->N > 0)
            STRIX_TRY(strix_im2col(be, m->work->x.data, m->work->col.data, (size_t)m->work->N, C,
                                   (size_t)m->work->H, (size_t)m->work->W, &m->geom));
        m->work->col_valid = true;
    }
    if (col) *col = &m->work->col;
    return STRIX_OK;
}

// ---- relevance (LRP) ---------------------------------------------------------------------------

/* The map of the affine rules: the convolution of a chunk of images, on the fused forward and
 * backward primitives (no batch-sized patches). */
typedef struct conv_map {
    strix_backend *be;
    const strix_conv_geom *geom;
    const float *x;  /* any input of the chunk size: the dx-only backward does not read it */
    size_t C, H, W, OC, Q;
    float *tmp;      /* chunk·OC·Q scratch for accumulating passes (the module's dcol) */
} conv_map;

static strix_status conv_map_forward(void *ctx, size_t count, const float *in, const float *w,
                                     const float *b, float *z, bool accumulate) {
    conv_map *c = ctx;
    float *dst = accumulate ? c->tmp : z;
    STRIX_TRY(strix_conv2d_forward(c->be, in, w, b, dst, b ? dst : NULL, count, c->C, c->H, c->W,
                                   c->OC, c->geom));
    return accumulate ? strix_add(c->be, z, c->tmp, z, count * c->OC * c->Q) : STRIX_OK;
}

static strix_status conv_map_backward(void *ctx, size_t count, const float *s, const float *w,
                                      float *out) {
    conv_map *c = ctx;
    // out = col2im(Wᵀ·s_n) per image
    return strix_conv2d_backward(c->be, c->x, w, s, NULL, NULL, out, count, c->C, c->H, c->W,
                                 c->OC, c->geom);
}

strix_status lrp_conv2d_relevance(strix_conv2d *m, const float *w, const float *b,
                                  const strix_tensor *r, const strix_tensor **r_in) {
    STRIX_TRY(nn_check_same("Conv2d relevance", r, &m->work->out));
    STRIX_TRY(lrp_rule_check(&m->base.rule, "Conv2d"));
    strix_backend *be = m->base.be;
    conv_map map = {.be = be, .geom = &m->geom, .x = m->work->x.data,
                    .C = (size_t)m->cfg.in_channels, .H = (size_t)m->work->H,
                    .W = (size_t)m->work->W, .OC = (size_t)m->cfg.out_channels,
                    .Q = (size_t)(m->work->OH * m->work->OW)};
    STRIX_TRY(nn_ensure4(be, &m->work->dx, m->work->N, (int64_t)map.C, m->work->H, m->work->W));
    size_t in_item = map.C * map.H * map.W, out_item = map.OC * map.Q;
    size_t widest = in_item > out_item ? in_item : out_item;
    size_t N = (size_t)m->work->N, chunk = lrp_chunk_items(4 * widest * sizeof(float));
    if (chunk > N) chunk = N;
    if (N > 0) {
        int64_t tshape[3] = {(int64_t)chunk, (int64_t)map.OC, (int64_t)map.Q};
        STRIX_TRY(strix_tensor_ensure(be, &m->work->dcol, 3, tshape));
        map.tmp = m->work->dcol.data;
        bool own = w == m->weight->data && b == (m->bias ? m->bias->data : NULL);
        lrp_affine a = {.be = be, .ctx = &map, .items = N, .chunk = chunk, .in_item = in_item,
                        .out_item = out_item, .w_n = map.OC * map.C * m->geom.kh * m->geom.kw,
                        .b_n = b ? map.OC : 0, .x = m->work->x.data, .w = w, .b = b,
                        .z_pre = own ? m->work->z.data : NULL,
                        .z_full = own ? m->work->out.data : NULL, .forward = conv_map_forward,
                        .backward = conv_map_backward};
        STRIX_TRY(lrp_affine_relevance(&a, &m->base.rule, r->data, m->work->dx.data));
    }
    if (r_in) *r_in = &m->work->dx;
    return STRIX_OK;
}

static strix_status conv_relevance(strix_module *mod, const strix_tensor *r,
                                   const strix_tensor **r_in) {
    strix_conv2d *m = (strix_conv2d *)mod;
    return lrp_conv2d_relevance(m, m->weight->data, m->bias ? m->bias->data : NULL, r, r_in);
}
