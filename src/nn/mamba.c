/*
 * mamba.c - the Mamba block of strix/mamba.h (transformers 4.40's MambaBlock + MambaMixer
 * slow path), its backward, its state (conv window + SSM state, MambaCache) and its MambaLRP
 * relevance (Jafari et al. 2024).
 *
 * Layout: rows are (b, t) of the (B,T,·) sequence, channels last. The depthwise causal conv runs
 * on a padded copy xpad (B, T+K−1, E) of the conv input whose first K−1 rows per sequence are
 * the zero padding (or the state's window): tap k multiplies the rows k .. k+T−1 (copied
 * contiguously into xsh_k, kept for backward and relevance) by w[:,k] broadcast over the rows,
 * and the taps are added in ascending k; there is no conv primitive for this, so it is
 * copy_2d + mul + add per tap (O(K·B·T·E)). The selective scan is strix_ssm_pass
 * (MAMBA_FORWARD with the state's h0, MAMBA_BACKWARD, MAMBA_GRAD_BC, MAMBA_LRP,
 * STABILIZED_DIV; A's per-step terms are reduced by column_sums); the Linears and the RMSNorm
 * are the library's modules, owned by the block (not exposed as children: the explainers see
 * one leaf with one rule). Does not do: the CUDA fast path (cuda_kernels_forward), dropout, the
 * embedding/head (the character-LM wrapper builds them).
 */
#include <math.h>
#include <stdlib.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"
#include "strix/mamba.h"
#include "strix/ops/ssm.h"

static const char *WHO = "Mamba";

struct strix_mamba_work {
    strix_tensor x;                     /* view of the input of the last forward */
    int64_t B, T;                       /* of the last forward; T 0 before the first */
    const strix_tensor *nrm, *proj, *xp, *zdelta, *f; /* children's outputs (their buffers) */
    strix_tensor xpad, zc, xsh, wT, wb, cpre, cb, u, dtin, Bm, Cm, A;
    strix_tensor delta, abar, bbar, states, ys, g, o, out;
    strix_tensor dys, dg, dzc, dudir, dzd, dh, aterms, dA, dBm, dCm, dxp, du, dcb, dxpad;
    strix_tensor dproj, dwT, dw, tmp, dx, zpre, rres, rf, ro, rhalf, ru, rx;
};

typedef struct mamba_state {
    strix_module_state base;
    int64_t B;                          /* 0: fresh (zeros) */
    strix_tensor win;                   /* (B, K−1, E) the last K−1 conv inputs */
    strix_tensor h;                     /* (B, E, S) */
} mamba_state;

static strix_tensor *work_tensors(struct strix_mamba_work *w, size_t *n) {
    *n = (size_t)(&w->rx - &w->xpad) + 1;
    return &w->xpad;
}

static void vt_destroy(strix_module *mod) {
    strix_mamba_block *m = (strix_mamba_block *)mod;
    size_t n;
    strix_tensor *ts = work_tensors(m->work, &n);
    for (size_t i = 0; i < n; i++) strix_tensor_free(&ts[i]);
    if (m->norm) strix_module_free(&m->norm->base);
    strix_linear *ls[] = {m->in_proj, m->x_proj, m->dt_proj, m->out_proj};
    for (int i = 0; i < 4; i++)
        if (ls[i]) strix_module_free(&ls[i]->base);
    free(m);
}

static strix_status mamba_forward(strix_mamba_block *m, const strix_tensor *x, mamba_state *st,
                                  const strix_tensor **y);
static strix_status mamba_backward(strix_mamba_block *m, const strix_tensor *dy,
                                   const strix_tensor **dx);
static strix_status mamba_relevance(strix_mamba_block *m, const strix_tensor *r,
                                    const strix_tensor **r_x);

static strix_status vt_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    return mamba_forward((strix_mamba_block *)mod, x, NULL, y);
}

static strix_status vt_backward(strix_module *mod, const strix_tensor *dy,
                                const strix_tensor **dx) {
    return mamba_backward((strix_mamba_block *)mod, dy, dx);
}

static strix_status vt_relevance(strix_module *mod, const strix_tensor *r,
                                 const strix_tensor **r_x) {
    return mamba_relevance((strix_mamba_block *)mod, r, r_x);
}

static strix_status check_io(const strix_module_io *io, const char *what) {
    if (io->n_in != 1 || !io->in[0] || io->ids || io->mask)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s %s takes one float tensor", WHO, what);
    return STRIX_OK;
}

static strix_status vt_forward_ex(strix_module *mod, strix_module_io *io) {
    STRIX_TRY(check_io(io, "forward"));
    mamba_state *st = NULL;
    if (io->state) {
        if (io->state->owner != mod)
            return strix_error(STRIX_ERR_ARG, "%s: the state belongs to another module", WHO);
        st = (mamba_state *)io->state;
    }
    const strix_tensor *y;
    STRIX_TRY(mamba_forward((strix_mamba_block *)mod, io->in[0], st, &y));
    io->n_out = 1;
    io->out[0] = y;
    return STRIX_OK;
}

static strix_status vt_backward_ex(strix_module *mod, strix_module_io *io) {
    STRIX_TRY(check_io(io, "backward"));
    const strix_tensor *dx;
    STRIX_TRY(mamba_backward((strix_mamba_block *)mod, io->in[0], &dx));
    io->n_out = 1;
    io->out[0] = dx;
    return STRIX_OK;
}

static strix_status vt_relevance_ex(strix_module *mod, strix_module_io *io) {
    STRIX_TRY(check_io(io, "relevance"));
    const strix_tensor *rx;
    STRIX_TRY(mamba_relevance((strix_mamba_block *)mod, io->in[0], &rx));
    io->n_out = 1;
    io->out[0] = rx;
    return STRIX_OK;
}

static strix_status vt_state_new(strix_module *mod, strix_module_state **out) {
    mamba_state *st = calloc(1, sizeof *st);
    if (!st) return NN_ALLOC_FAIL(WHO);
    st->base.owner = mod;
    *out = &st->base;
    return STRIX_OK;
}

static void vt_state_free(strix_module *mod, strix_module_state *s) {
    (void)mod;
    mamba_state *st = (mamba_state *)s;
    strix_tensor_free(&st->win);
    strix_tensor_free(&st->h);
    free(st);
}

/* A leaf for the explainers (no child slot): they give the block one rule, which it applies to
 * its Linears and conv itself, as strix_rnn does. */
static const strix_module_i mamba_vt = {
    .type = "MambaBlock", .forward = vt_forward, .backward = vt_backward,
    .destroy = vt_destroy, .relevance = vt_relevance,
    .forward_ex = vt_forward_ex, .backward_ex = vt_backward_ex,
    .relevance_ex = vt_relevance_ex, .state_new = vt_state_new, .state_free = vt_state_free,
};

// ---- construction ------------------------------------------------------------------------------

strix_mamba_config strix_mamba_config_default(int d_model) {
    strix_mamba_config c = {.d_model = d_model, .d_state = 16, .d_conv = 4, .expand = 2,
                            .dt_rank = 0, .conv_bias = true, .bias = false,
                            .rms_norm_eps = 1e-5f, .dt_min = 0.001f, .dt_max = 0.1f,
                            .dt_init_floor = 1e-4f, .dt_scale = 1.0f,
                            .rescale_prenorm_residual = false, .n_layer = 1, .layer_idx = 0};
    return c;
}

static strix_param *add(strix_params *ps, const char *prefix, const char *leaf, int ndim,
                        const int64_t *shape, strix_init init, float bound, bool decay,
                        strix_status *s) {
    if (*s != STRIX_OK) return NULL;
    char name[STRIX_PARAM_NAME_MAX];
    *s = nn_name(name, prefix, leaf);
    if (*s != STRIX_OK) return NULL;
    strix_param *p = strix_params_add(ps, name, ndim, shape, init, bound, decay);
    if (!p) *s = NN_ALLOC_FAIL(WHO);
    return p;
}

static strix_status linear(strix_params *ps, const char *prefix, const char *leaf, int in,
                           int out, bool bias, strix_linear **l) {
    char name[STRIX_PARAM_NAME_MAX];
    STRIX_TRY(nn_name(name, prefix, leaf));
    return strix_linear_new_default(ps, name, in, out, bias, l);
}

strix_status strix_mamba_block_new(strix_params *ps, const char *prefix,
                                   const strix_mamba_config *cfg, strix_module **out) {
    *out = NULL;
    if (!prefix) prefix = "";
    strix_mamba_config c = *cfg;
    if (c.dt_rank == 0) c.dt_rank = (c.d_model + 15) / 16;
    if (c.d_model < 1 || c.d_state < 1 || c.d_conv < 1 || c.expand < 1 || c.dt_rank < 1 ||
        c.n_layer < 1)
        return strix_error(STRIX_ERR_ARG,
                           "%s %s: d_model %d, d_state %d, d_conv %d, expand %d, dt_rank %d, "
                           "n_layer %d must be positive", WHO, prefix, c.d_model, c.d_state,
                           c.d_conv, c.expand, c.dt_rank, c.n_layer);
    if (!(c.rms_norm_eps > 0.0f) || !(c.dt_min > 0.0f) || !(c.dt_max >= c.dt_min) ||
        !(c.dt_init_floor >= 0.0f))
        return strix_error(STRIX_ERR_ARG, "%s %s: eps %g must be > 0 and 0 < dt_min %g <= dt_max "
                           "%g", WHO, prefix, (double)c.rms_norm_eps, (double)c.dt_min,
                           (double)c.dt_max);
    strix_mamba_block *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL(WHO);
    m->base.vt = &mamba_vt;
    m->base.be = ps->be;
    m->cfg = c;
    int C = c.d_model, E = c.expand * c.d_model, S = c.d_state, K = c.d_conv, R = c.dt_rank;
    m->d_inner = E;
    char name[STRIX_PARAM_NAME_MAX];
    strix_status s = nn_name(name, prefix, "norm");
    if (s == STRIX_OK) s = strix_rmsnorm_new(ps, name, C, c.rms_norm_eps, true, &m->norm);
    if (s == STRIX_OK && m->norm->weight) m->norm->weight->decay = false;
    int64_t sA[2] = {E, S}, sE[1] = {E}, sw[3] = {E, 1, K};
    float cb = (float)(1.0 / sqrt((double)K));
    m->A_log = add(ps, prefix, "mixer.A_log", 2, sA, STRIX_INIT_ZEROS, 0.0f, false, &s);
    m->D = add(ps, prefix, "mixer.D", 1, sE, STRIX_INIT_ONES, 0.0f, false, &s);
    m->conv_weight = add(ps, prefix, "mixer.conv1d.weight", 3, sw, STRIX_INIT_UNIFORM, cb, true,
                         &s);
    if (c.conv_bias)
        m->conv_bias = add(ps, prefix, "mixer.conv1d.bias", 1, sE, STRIX_INIT_UNIFORM, cb, false,
                           &s);
    if (s == STRIX_OK) s = linear(ps, prefix, "mixer.in_proj", C, 2 * E, c.bias, &m->in_proj);
    if (s == STRIX_OK) s = linear(ps, prefix, "mixer.x_proj", E, R + 2 * S, false, &m->x_proj);
    if (s == STRIX_OK) s = linear(ps, prefix, "mixer.dt_proj", R, E, true, &m->dt_proj);
    if (s == STRIX_OK) s = linear(ps, prefix, "mixer.out_proj", E, C, c.bias, &m->out_proj);
    if (s == STRIX_OK) { // biases: zeros (MambaPreTrainedModel._init_weights), no decay
        strix_linear *ls[] = {m->in_proj, m->x_proj, m->dt_proj, m->out_proj};
        for (int i = 0; i < 4; i++)
            if (ls[i]->bias) ls[i]->bias->init = STRIX_INIT_ZEROS, ls[i]->bias->decay = false;
        m->dt_proj->weight->init_std = (float)(pow((double)R, -0.5) * c.dt_scale);
    }
    if (s != STRIX_OK) {
        vt_destroy(&m->base);
        return s;
    }
    *out = &m->base;
    return STRIX_OK;
}

/* Uploads n host floats into parameter p. */
static strix_status upload(strix_backend *be, strix_param *p, const float *h) {
    return strix_copy(be, p->data, h, p->numel * sizeof(float), STRIX_COPY_H2D);
}

static void draw_uniform(strix_rng *r, float *h, size_t n, double bound) {
    for (size_t i = 0; i < n; i++) h[i] = (float)((2.0 * strix_rng_uniform(r) - 1.0) * bound);
}

strix_status strix_mamba_block_init(strix_module *mod, uint64_t seed) {
    if (!mod || mod->vt != &mamba_vt)
        return strix_error(STRIX_ERR_ARG, "strix_mamba_block_init: not a Mamba block");
    strix_mamba_block *m = (strix_mamba_block *)mod;
    if (!m->A_log->data)
        return strix_error(STRIX_ERR_ARG, "strix_mamba_block_init: parameters not allocated");
    const strix_mamba_config *c = &m->cfg;
    size_t E = (size_t)m->d_inner, S = (size_t)c->d_state, C = (size_t)c->d_model;
    size_t K = (size_t)c->d_conv, R = (size_t)c->dt_rank;
    size_t most = 2 * E * C; /* the largest array drawn below: in_proj, x_proj or conv1d */
    if (E * (R + 2 * S) > most) most = E * (R + 2 * S);
    if (E * K > most) most = E * K;
    float *h = malloc(most * sizeof(float));
    if (!h) return NN_ALLOC_FAIL(WHO);
    strix_rng r;
    strix_rng_seed(&r, seed);
    strix_backend *be = mod->be;
    strix_status s = STRIX_OK;
#define UP(p) (s == STRIX_OK ? (s = upload(be, (p), h)) : s)
    for (size_t i = 0; i < C; i++) h[i] = 1.0f;
    if (m->norm->weight) UP(m->norm->weight);
    for (size_t e = 0; e < E; e++)
        for (size_t j = 0; j < S; j++) h[e * S + j] = (float)log((double)(j + 1));
    UP(m->A_log);
    for (size_t e = 0; e < E; e++) h[e] = 1.0f;
    UP(m->D);
    double cbound = 1.0 / sqrt((double)K);
    draw_uniform(&r, h, E * K, cbound);
    UP(m->conv_weight);
    if (m->conv_bias) {
        draw_uniform(&r, h, E, cbound);
        UP(m->conv_bias);
    }
    draw_uniform(&r, h, 2 * E * C, 1.0 / sqrt((double)C));
    UP(m->in_proj->weight);
    draw_uniform(&r, h, (R + 2 * S) * E, 1.0 / sqrt((double)E));
    UP(m->x_proj->weight);
    draw_uniform(&r, h, E * R, pow((double)R, -0.5) * c->dt_scale);
    UP(m->dt_proj->weight);
    double lmin = log((double)c->dt_min), lmax = log((double)c->dt_max);
    for (size_t e = 0; e < E; e++) { // softplus⁻¹ of dt ~ log-uniform [dt_min, dt_max], floored
        double dt = exp(strix_rng_uniform(&r) * (lmax - lmin) + lmin);
        if (dt < c->dt_init_floor) dt = c->dt_init_floor;
        h[e] = (float)(dt + log(-expm1(-dt)));
    }
    UP(m->dt_proj->bias);
    double obound = 1.0 / sqrt((double)E);
    if (c->rescale_prenorm_residual) obound /= sqrt((double)c->n_layer);
    draw_uniform(&r, h, C * E, obound);
    UP(m->out_proj->weight);
    for (size_t i = 0; i < 2 * E; i++) h[i] = 0.0f;
    if (m->in_proj->bias) UP(m->in_proj->bias);
    if (m->out_proj->bias) UP(m->out_proj->bias);
#undef UP
    free(h);
    return s;
}

// ---- forward -----------------------------------------------------------------------------------

static strix_status ensure(strix_backend *be, strix_tensor *t, int64_t a, int64_t b, int64_t c,
                           int64_t d) {
    int64_t shape[4] = {a, b, c, d};
    int nd = d ? 4 : c ? 3 : b ? 2 : 1;
    return strix_tensor_ensure(be, t, nd, shape);
}

/* wb (rows, E) = w[:, k] broadcast over the rows (wT row k). */
static strix_status broadcast_tap(strix_mamba_block *m, size_t k, size_t rows) {
    struct strix_mamba_work *w = m->work;
    size_t E = (size_t)m->d_inner;
    STRIX_TRY(strix_fill(m->base.be, w->wb.data, 0.0f, rows * E));
    return strix_add_row_vector(m->base.be, w->wb.data, w->wT.data + k * E, w->wb.data, rows, E);
}

static strix_status mamba_forward(strix_mamba_block *m, const strix_tensor *x, mamba_state *st,
                                  const strix_tensor **y) {
    struct strix_mamba_work *w = m->work;
    strix_backend *be = m->base.be;
    const strix_mamba_config *c = &m->cfg;
    if (x->ndim != 3 || x->shape[2] != c->d_model || x->shape[0] < 1 || x->shape[1] < 1)
        return strix_error(STRIX_ERR_SHAPE, "%s: x must be (B, T, %d) with B, T >= 1", WHO,
                           c->d_model);
    int64_t B = x->shape[0], T = x->shape[1];
    if (st && st->B && st->B != B)
        return strix_error(STRIX_ERR_SHAPE, "%s: the state holds batch %lld, x has %lld", WHO,
                           (long long)st->B, (long long)B);
    bool cont = st && st->B; // continue from the state's window and h
    size_t E = (size_t)m->d_inner, S = (size_t)c->d_state, K = (size_t)c->d_conv;
    size_t R = (size_t)c->dt_rank, C = (size_t)c->d_model, P = R + 2 * S;
    size_t nb = (size_t)B, nt = (size_t)T, BT = nb * nt, TP = nt + K - 1;
    w->T = 0;
    w->x = nn_view_of(x);
    STRIX_TRY(strix_module_forward(&m->norm->base, x, &w->nrm));
    STRIX_TRY(strix_module_forward(&m->in_proj->base, w->nrm, &w->proj));
    STRIX_TRY(ensure(be, &w->xpad, B, (int64_t)TP, (int64_t)E, 0));
    STRIX_TRY(ensure(be, &w->zc, B, T, (int64_t)E, 0));
    STRIX_TRY(ensure(be, &w->xsh, (int64_t)K, B, T, (int64_t)E));
    STRIX_TRY(ensure(be, &w->wT, (int64_t)K, (int64_t)E, 0, 0));
    STRIX_TRY(ensure(be, &w->wb, B, T, (int64_t)E, 0));
    strix_tensor *bte[] = {&w->cpre, &w->cb, &w->u, &w->ys, &w->g, &w->o, &w->tmp};
    for (size_t i = 0; i < sizeof bte / sizeof bte[0]; i++)
        STRIX_TRY(ensure(be, bte[i], B, T, (int64_t)E, 0));
    // the conv input padded by the window (zeros, or the state's last K-1 inputs)
    const float *proj = w->proj->data;
    float *xpad = w->xpad.data;
    if (K > 1) {
        if (cont)
            STRIX_TRY(strix_copy_2d(be, xpad, TP * E, st->win.data, (K - 1) * E, nb,
                                    (K - 1) * E));
        else
            for (size_t b = 0; b < nb; b++)
                STRIX_TRY(strix_fill(be, xpad + b * TP * E, 0.0f, (K - 1) * E));
    }
    for (size_t b = 0; b < nb; b++)
        STRIX_TRY(strix_copy_2d(be, xpad + (b * TP + K - 1) * E, E, proj + b * nt * 2 * E, 2 * E,
                                nt, E));
    STRIX_TRY(strix_copy_2d(be, w->zc.data, E, proj + E, 2 * E, BT, E));
    // depthwise causal conv: c = Σ_k xsh_k ⊙ w[:,k], k ascending
    const float *cw = m->conv_weight->data;
    for (size_t k = 0; k < K; k++) {
        STRIX_TRY(strix_copy_2d(be, w->wT.data + k * E, 1, cw + k, K, E, 1));
        float *xs = w->xsh.data + k * BT * E;
        STRIX_TRY(strix_copy_2d(be, xs, nt * E, xpad + k * E, TP * E, nb, nt * E));
        STRIX_TRY(broadcast_tap(m, k, BT));
        if (k == 0) STRIX_TRY(strix_mul(be, xs, w->wb.data, w->cpre.data, BT * E));
        else {
            STRIX_TRY(strix_mul(be, xs, w->wb.data, w->tmp.data, BT * E));
            STRIX_TRY(strix_add(be, w->cpre.data, w->tmp.data, w->cpre.data, BT * E));
        }
    }
    if (m->conv_bias)
        STRIX_TRY(strix_add_row_vector(be, w->cpre.data, m->conv_bias->data, w->cb.data, BT, E));
    else
        STRIX_TRY(strix_copy(be, w->cb.data, w->cpre.data, BT * E * sizeof(float),
                             STRIX_COPY_D2D));
    STRIX_TRY(strix_elementwise(be, STRIX_ACT_SILU, w->cb.data, w->u.data, BT * E));
    // selection: dt, B, C = x_proj(u); delta's pre-activation = dt_proj(dt) (bias included)
    STRIX_TRY(strix_module_forward(&m->x_proj->base, &w->u, &w->xp));
    STRIX_TRY(ensure(be, &w->dtin, B, T, (int64_t)R, 0));
    STRIX_TRY(ensure(be, &w->Bm, B, T, (int64_t)S, 0));
    STRIX_TRY(ensure(be, &w->Cm, B, T, (int64_t)S, 0));
    STRIX_TRY(strix_copy_2d(be, w->dtin.data, R, w->xp->data, P, BT, R));
    STRIX_TRY(strix_copy_2d(be, w->Bm.data, S, w->xp->data + R, P, BT, S));
    STRIX_TRY(strix_copy_2d(be, w->Cm.data, S, w->xp->data + R + S, P, BT, S));
    STRIX_TRY(strix_module_forward(&m->dt_proj->base, &w->dtin, &w->zdelta));
    // the scan, A = -exp(A_log)
    STRIX_TRY(ensure(be, &w->A, (int64_t)E, (int64_t)S, 0, 0));
    STRIX_TRY(strix_elementwise(be, STRIX_ACT_EXP, m->A_log->data, w->A.data, E * S));
    STRIX_TRY(strix_elementwise(be, STRIX_ACT_NEG, w->A.data, w->A.data, E * S));
    STRIX_TRY(ensure(be, &w->delta, B, T, (int64_t)E, 0));
    STRIX_TRY(ensure(be, &w->abar, B, T, (int64_t)E, (int64_t)S));
    STRIX_TRY(ensure(be, &w->bbar, B, T, (int64_t)E, (int64_t)S));
    STRIX_TRY(ensure(be, &w->states, B, T + 1, (int64_t)E, (int64_t)S));
    strix_ssm_args a = {.n = nb, .l = nt, .d = E, .s = S};
    a.in[0] = w->u.data, a.in[1] = w->zdelta->data, a.in[2] = w->Bm.data, a.in[3] = w->Cm.data;
    a.in[4] = w->A.data, a.in[5] = m->D->data, a.in[6] = cont ? st->h.data : NULL;
    a.out[0] = w->delta.data, a.out[1] = w->abar.data, a.out[2] = w->bbar.data;
    a.out[3] = w->states.data, a.out[4] = w->ys.data;
    STRIX_TRY(strix_ssm_pass(be, STRIX_SSM_MAMBA_FORWARD, &a));
    // gate and output projection, residual
    STRIX_TRY(strix_elementwise(be, STRIX_ACT_SILU, w->zc.data, w->g.data, BT * E));
    STRIX_TRY(strix_mul(be, w->ys.data, w->g.data, w->o.data, BT * E));
    STRIX_TRY(strix_module_forward(&m->out_proj->base, &w->o, &w->f));
    STRIX_TRY(strix_tensor_ensure(be, &w->out, 3, x->shape));
    STRIX_TRY(strix_add(be, x->data, w->f->data, w->out.data, BT * C));
    if (st) { // the end of x becomes the state
        if (!cont) {
            STRIX_TRY(ensure(be, &st->win, B, (int64_t)(K > 1 ? K - 1 : 1), (int64_t)E, 0));
            STRIX_TRY(ensure(be, &st->h, B, (int64_t)E, (int64_t)S, 0));
        }
        if (K > 1)
            STRIX_TRY(strix_copy_2d(be, st->win.data, (K - 1) * E, xpad + nt * E, TP * E, nb,
                                    (K - 1) * E));
        STRIX_TRY(strix_copy_2d(be, st->h.data, E * S, w->states.data + nt * E * S,
                                (nt + 1) * E * S, nb, E * S));
        st->B = B;
    }
    w->B = B;
    w->T = T;
    *y = &w->out;
    return STRIX_OK;
}

// ---- backward ----------------------------------------------------------------------------------

/* dxpad (B, T+K−1, E) = Σ_k tap k's rows k .. k+T−1 += g ⊙ w[:,k] (g (B,T,E)); the adjoint of
 * the conv on the padded input. */
static strix_status conv_input_adjoint(strix_mamba_block *m, const float *g) {
    struct strix_mamba_work *w = m->work;
    strix_backend *be = m->base.be;
    size_t E = (size_t)m->d_inner, K = (size_t)m->cfg.d_conv;
    size_t nb = (size_t)w->B, nt = (size_t)w->T, BT = nb * nt, TP = nt + K - 1;
    STRIX_TRY(ensure(be, &w->dxpad, w->B, (int64_t)TP, (int64_t)E, 0));
    STRIX_TRY(strix_fill(be, w->dxpad.data, 0.0f, nb * TP * E));
    for (size_t k = 0; k < K; k++) {
        STRIX_TRY(broadcast_tap(m, k, BT));
        STRIX_TRY(strix_mul(be, g, w->wb.data, w->tmp.data, BT * E));
        for (size_t b = 0; b < nb; b++) {
            float *dst = w->dxpad.data + (b * TP + k) * E;
            STRIX_TRY(strix_add(be, dst, w->tmp.data + b * nt * E, dst, nt * E));
        }
    }
    return STRIX_OK;
}

/* dst (B,T,2E) columns [0,E) = rows K−1.. of the padded (B, T+K−1, E) src, per sequence. */
static strix_status unpad_into(strix_mamba_block *m, float *dst, const float *src) {
    struct strix_mamba_work *w = m->work;
    size_t E = (size_t)m->d_inner, K = (size_t)m->cfg.d_conv;
    size_t nb = (size_t)w->B, nt = (size_t)w->T, TP = nt + K - 1;
    for (size_t b = 0; b < nb; b++)
        STRIX_TRY(strix_copy_2d(m->base.be, dst + b * nt * 2 * E, 2 * E,
                                src + (b * TP + K - 1) * E, E, nt, E));
    return STRIX_OK;
}

static strix_status mamba_backward(strix_mamba_block *m, const strix_tensor *dy,
                                   const strix_tensor **dx) {
    struct strix_mamba_work *w = m->work;
    if (w->T == 0) return strix_error(STRIX_ERR_ARG, "%s: backward before a forward", WHO);
    STRIX_TRY(nn_check_same(WHO, dy, &w->out));
    strix_backend *be = m->base.be;
    const strix_mamba_config *c = &m->cfg;
    size_t E = (size_t)m->d_inner, S = (size_t)c->d_state, K = (size_t)c->d_conv;
    size_t R = (size_t)c->dt_rank, C = (size_t)c->d_model, P = R + 2 * S;
    int64_t B = w->B, T = w->T;
    size_t nb = (size_t)B, nt = (size_t)T, BT = nb * nt;
    strix_tensor *bte[] = {&w->dys, &w->dg, &w->dzc, &w->dudir, &w->dzd, &w->du, &w->dcb};
    for (size_t i = 0; i < sizeof bte / sizeof bte[0]; i++)
        STRIX_TRY(ensure(be, bte[i], B, T, (int64_t)E, 0));
    STRIX_TRY(ensure(be, &w->dh, B, T, (int64_t)E, (int64_t)S));
    STRIX_TRY(ensure(be, &w->aterms, B, T, (int64_t)E, (int64_t)S));
    STRIX_TRY(ensure(be, &w->dA, (int64_t)E, (int64_t)S, 0, 0));
    STRIX_TRY(ensure(be, &w->dBm, B, T, (int64_t)S, 0));
    STRIX_TRY(ensure(be, &w->dCm, B, T, (int64_t)S, 0));
    STRIX_TRY(ensure(be, &w->dxp, B, T, (int64_t)P, 0));
    STRIX_TRY(ensure(be, &w->dproj, B, T, 2 * (int64_t)E, 0));
    STRIX_TRY(ensure(be, &w->dwT, (int64_t)K, (int64_t)E, 0, 0));
    STRIX_TRY(ensure(be, &w->dw, (int64_t)E, (int64_t)K, 0, 0));
    const strix_tensor *d_o, *ddt, *dux, *dn, *dxb;
    STRIX_TRY(strix_module_backward(&m->out_proj->base, dy, &d_o));
    // o = ys ⊙ SiLU(z)
    STRIX_TRY(strix_mul(be, d_o->data, w->g.data, w->dys.data, BT * E));
    STRIX_TRY(strix_mul(be, d_o->data, w->ys.data, w->dg.data, BT * E));
    STRIX_TRY(strix_elementwise_backward(be, STRIX_ACT_SILU, w->zc.data, w->dg.data, w->dzc.data,
                                         BT * E));
    // the scan
    strix_ssm_args a = {.n = nb, .l = nt, .d = E, .s = S};
    const float *bin[] = {w->dys.data, w->u.data, w->delta.data, w->zdelta->data,
                          w->states.data, w->abar.data, w->bbar.data, w->Bm.data, w->Cm.data,
                          w->A.data, m->D->data};
    for (int k = 0; k < 11; k++) a.in[k] = bin[k];
    a.out[0] = w->dudir.data, a.out[1] = w->dzd.data, a.out[2] = w->dh.data;
    a.out[3] = w->aterms.data;
    STRIX_TRY(strix_ssm_pass(be, STRIX_SSM_MAMBA_BACKWARD, &a));
    if (nn_wants_grad(m->A_log)) { // dA_log = dA ⊙ ∂A/∂A_log = dA ⊙ A
        // dA = Σ over the (b, t) rows of A's per-step terms, rows ascending (column_sums reads
        // the rows contiguously; REVERSE_TIME_SUM's strided lanes are ~10x slower here)
        STRIX_TRY(strix_column_sums(be, w->aterms.data, w->dA.data, BT, E * S, 0.0f));
        STRIX_TRY(strix_mul(be, w->dA.data, w->A.data, w->dA.data, E * S));
        STRIX_TRY(strix_add(be, m->A_log->grad, w->dA.data, m->A_log->grad, E * S));
    }
    if (nn_wants_grad(m->D)) { // dD = Σ_rows dys ⊙ u
        STRIX_TRY(strix_mul(be, w->dys.data, w->u.data, w->tmp.data, BT * E));
        STRIX_TRY(strix_column_sums(be, w->tmp.data, m->D->grad, BT, E, 1.0f));
    }
    strix_ssm_args g = {.n = nb, .l = nt, .d = E, .s = S};
    g.in[0] = w->dys.data, g.in[1] = w->u.data, g.in[2] = w->delta.data;
    g.in[3] = w->states.data, g.in[4] = w->dh.data;
    g.out[0] = w->dBm.data, g.out[1] = w->dCm.data;
    STRIX_TRY(strix_ssm_pass(be, STRIX_SSM_MAMBA_GRAD_BC, &g));
    // selection projections
    STRIX_TRY(strix_module_backward(&m->dt_proj->base, &w->dzd, &ddt));
    STRIX_TRY(strix_copy_2d(be, w->dxp.data, P, ddt->data, R, BT, R));
    STRIX_TRY(strix_copy_2d(be, w->dxp.data + R, P, w->dBm.data, S, BT, S));
    STRIX_TRY(strix_copy_2d(be, w->dxp.data + R + S, P, w->dCm.data, S, BT, S));
    STRIX_TRY(strix_module_backward(&m->x_proj->base, &w->dxp, &dux));
    STRIX_TRY(strix_add(be, dux->data, w->dudir.data, w->du.data, BT * E));
    STRIX_TRY(strix_elementwise_backward(be, STRIX_ACT_SILU, w->cb.data, w->du.data, w->dcb.data,
                                         BT * E));
    // conv: bias, weight (per tap: Σ_rows dcb ⊙ xsh_k), input
    if (m->conv_bias && nn_wants_grad(m->conv_bias))
        STRIX_TRY(strix_column_sums(be, w->dcb.data, m->conv_bias->grad, BT, E, 1.0f));
    if (nn_wants_grad(m->conv_weight)) {
        for (size_t k = 0; k < K; k++) {
            STRIX_TRY(strix_mul(be, w->dcb.data, w->xsh.data + k * BT * E, w->tmp.data, BT * E));
            STRIX_TRY(strix_column_sums(be, w->tmp.data, w->dwT.data + k * E, BT, E, 0.0f));
            STRIX_TRY(strix_copy_2d(be, w->dw.data + k, K, w->dwT.data + k * E, 1, E, 1));
        }
        STRIX_TRY(strix_add(be, m->conv_weight->grad, w->dw.data, m->conv_weight->grad, E * K));
    }
    STRIX_TRY(conv_input_adjoint(m, w->dcb.data));
    STRIX_TRY(unpad_into(m, w->dproj.data, w->dxpad.data));
    STRIX_TRY(strix_copy_2d(be, w->dproj.data + E, 2 * E, w->dzc.data, E, BT, E));
    STRIX_TRY(strix_module_backward(&m->in_proj->base, &w->dproj, &dn));
    STRIX_TRY(strix_module_backward(&m->norm->base, dn, &dxb));
    STRIX_TRY(strix_tensor_ensure(be, &w->dx, 3, w->out.shape));
    STRIX_TRY(strix_add(be, dy->data, dxb->data, w->dx.data, BT * C));
    *dx = &w->dx;
    return STRIX_OK;
}

// ---- relevance (MambaLRP) ----------------------------------------------------------------------

/* The z of a Linear's epsilon rule: its output y, or without the bias (pre-bias z, recomputed as
 * x·Wᵀ) unless the rule puts the bias in the denominator. */
static strix_status linear_z(strix_mamba_block *m, strix_linear *l, const float *x,
                             const float *y, size_t rows, const float **z) {
    *z = y;
    if (!l->bias || m->base.rule.bias_in_denominator) return STRIX_OK;
    struct strix_mamba_work *w = m->work;
    STRIX_TRY(ensure(m->base.be, &w->zpre, (int64_t)rows, l->out_features, 0, 0));
    STRIX_TRY(strix_gemm_ex(m->base.be, x, false, l->weight->data, true, w->zpre.data, rows,
                            (size_t)l->in_features, (size_t)l->out_features, 0.0f));
    *z = w->zpre.data;
    return STRIX_OK;
}

static strix_status mamba_relevance(strix_mamba_block *m, const strix_tensor *r,
                                    const strix_tensor **r_x) {
    struct strix_mamba_work *w = m->work;
    if (w->T == 0) return strix_error(STRIX_ERR_ARG, "%s: relevance before a forward", WHO);
    STRIX_TRY(lrp_rule_check(&m->base.rule, WHO));
    if (m->base.rule.kind != STRIX_LRP_EPSILON)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s: only the epsilon rule (got %s)", WHO,
                           lrp_kind_name(m->base.rule.kind));
    STRIX_TRY(nn_check_same(WHO, r, &w->out));
    strix_backend *be = m->base.be;
    const strix_mamba_config *c = &m->cfg;
    float eps = m->base.rule.epsilon;
    size_t E = (size_t)m->d_inner, S = (size_t)c->d_state, C = (size_t)c->d_model;
    size_t K = (size_t)c->d_conv, nb = (size_t)w->B, nt = (size_t)w->T, BT = nb * nt;
    size_t TP = nt + K - 1;
    int64_t B = w->B, T = w->T;
    STRIX_TRY(ensure(be, &w->rres, B, T, (int64_t)C, 0));
    STRIX_TRY(ensure(be, &w->rf, B, T, (int64_t)C, 0));
    STRIX_TRY(ensure(be, &w->rx, B, T, (int64_t)C, 0));
    STRIX_TRY(ensure(be, &w->ro, B, T, (int64_t)E, 0));
    STRIX_TRY(ensure(be, &w->rhalf, B, T, (int64_t)E, 0));
    STRIX_TRY(ensure(be, &w->ru, B, T, (int64_t)E, 0));
    STRIX_TRY(ensure(be, &w->dh, B, T, (int64_t)E, (int64_t)S));
    STRIX_TRY(ensure(be, &w->dproj, B, T, 2 * (int64_t)E, 0));
    // y = x + f: epsilon split
    STRIX_TRY(strix_lrp_residual_split(be, w->x.data, w->f->data, r->data, w->rres.data,
                                       w->rf.data, BT * C, eps));
    // out_proj
    const float *z;
    STRIX_TRY(linear_z(m, m->out_proj, w->o.data, w->f->data, BT, &z));
    STRIX_TRY(strix_lrp_linear(be, w->o.data, m->out_proj->weight->data, z, w->rf.data,
                               w->ro.data, BT, E, C, eps));
    // o = ys ⊙ SiLU(z): half to each; SiLU(z) passes its half to z
    STRIX_TRY(strix_lrp_bilinear_elementwise(be, w->ys.data, w->g.data, w->ro.data,
                                             w->rhalf.data, BT * E, eps));
    STRIX_TRY(strix_copy_2d(be, w->dproj.data + E, 2 * E, w->rhalf.data, E, BT, E));
    // the scan with Abar, Bbar, C detached
    strix_ssm_args a = {.n = nb, .l = nt, .d = E, .s = S, .eps = eps};
    a.in[0] = w->u.data, a.in[1] = w->ys.data, a.in[2] = w->rhalf.data;
    a.in[3] = w->states.data, a.in[4] = w->abar.data, a.in[5] = w->bbar.data;
    a.in[6] = w->Cm.data, a.in[7] = m->D->data;
    a.out[0] = w->ru.data, a.out[1] = w->dh.data;
    STRIX_TRY(strix_ssm_pass(be, STRIX_SSM_MAMBA_LRP, &a));
    // SiLU passes R_u to the conv output; the conv's epsilon rule: s = r/stab(z_c), then
    // r_u0 = u0 ⊙ (the conv's adjoint of s)
    strix_ssm_args dv = {.n = nb, .l = nt, .d = E, .eps = eps};
    dv.in[0] = w->ru.data;
    dv.in[1] = m->base.rule.bias_in_denominator ? w->cb.data : w->cpre.data;
    dv.out[0] = w->ru.data;
    STRIX_TRY(strix_ssm_pass(be, STRIX_SSM_STABILIZED_DIV, &dv));
    STRIX_TRY(conv_input_adjoint(m, w->ru.data));
    STRIX_TRY(strix_mul(be, w->dxpad.data, w->xpad.data, w->dxpad.data, nb * TP * E));
    STRIX_TRY(unpad_into(m, w->dproj.data, w->dxpad.data));
    // in_proj; RMSNorm with 1/rms detached passes relevance through
    STRIX_TRY(linear_z(m, m->in_proj, w->nrm->data, w->proj->data, BT, &z));
    STRIX_TRY(strix_lrp_linear(be, w->nrm->data, m->in_proj->weight->data, z, w->dproj.data,
                               w->tmp.data, BT, C, 2 * E, eps)); // tmp holds B·T·E >= B·T·C
    STRIX_TRY(strix_add(be, w->rres.data, w->tmp.data, w->rx.data, BT * C));
    *r_x = &w->rx;
    return STRIX_OK;
}
