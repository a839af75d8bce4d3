/*
 * rwkv.c - the RWKV-4 block of transformers' RwkvBlock (strix/rwkv.h): forward, backward, LRP
 * and the stateful form (decode), on backend primitives only.
 *
 * Per call over all B·T rows: the LayerNorm and Linear modules, the token shift
 * (STRIX_SSM_RWKV_TOKEN_SHIFT with the state's last row as x_{-1}), the stable WKV
 * (STRIX_SSM_RWKV_STABLE_FORWARD, one lane per (b, channel) walking time), the squared ReLU and
 * gates as elementwise ops. Backward mirrors it call for call; the time_* gradients are per-step
 * terms reduced by REVERSE_TIME_SUM and added to the gradient block. Relevance follows the same
 * path in reverse with the epsilon rules of strix/rwkv.h. Does not draw values at construction
 * (strix_rwkv_block_init does).
 */
#include <math.h>
#include <stdlib.h>

#include "nn/nn_internal.h"
#include "strix/rwkv.h"

/* The caches of the last forward and the scratch of backward and relevance. */
struct strix_rwkv_work {
    bool have_forward;
    int64_t B, T;
    strix_tensor x;                  /* view of the input */
    const strix_tensor *h, *a, *c;   /* pre_ln output (or x), ln1 and ln2 outputs */
    const strix_tensor *att, *zrr, *vv;
    bool stateful;                   /* the last forward started from a non-fresh state */
    strix_tensor prev_att, prev_ffn; /* (B,C): x_{-1} of both shifts in the last forward */
    strix_tensor xr, xk, xv, r, wkv, gated, P, Q, O, h1, fr, fk, s, kq, rr, ffn, y;
    /* backward / relevance scratch */
    strix_tensor g1, g2, gz, dh1, dh, t0, t1, t2, ta, tb, sums, dx, rx;
};

typedef struct rwkv_state {
    strix_module_state base;
    int64_t B;   /* 0: fresh */
    strix_tensor att_x, ffn_x, num, den, max;
} rwkv_state;

static void work_free(struct strix_rwkv_work *w) {
    strix_tensor *ts[] = {&w->prev_att, &w->prev_ffn, &w->xr, &w->xk, &w->xv, &w->r, &w->wkv,
                          &w->gated, &w->P, &w->Q, &w->O, &w->h1, &w->fr, &w->fk, &w->s,
                          &w->kq, &w->rr, &w->ffn, &w->y, &w->g1, &w->g2, &w->gz, &w->dh1,
                          &w->dh, &w->t0, &w->t1, &w->t2, &w->ta, &w->tb, &w->sums, &w->dx,
                          &w->rx};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) strix_tensor_free(ts[k]);
}

static void vt_destroy(strix_module *mod) {
    strix_rwkv_block *m = (strix_rwkv_block *)mod;
    strix_layernorm *lns[] = {m->pre_ln, m->ln1, m->ln2};
    for (size_t k = 0; k < sizeof lns / sizeof lns[0]; k++)
        if (lns[k]) strix_module_free(&lns[k]->base);
    strix_linear *ls[] = {m->att_key, m->att_value, m->att_receptance, m->att_output,
                          m->ffn_key, m->ffn_receptance, m->ffn_value};
    for (size_t k = 0; k < sizeof ls / sizeof ls[0]; k++)
        if (ls[k]) strix_module_free(&ls[k]->base);
    work_free(m->work);
    free(m);
}

// ---- construction ------------------------------------------------------------------------------

strix_rwkv_config strix_rwkv_config_default(int d_model) {
    strix_rwkv_config c = {.d_model = d_model, .attention_hidden_size = d_model,
                           .intermediate_size = 4 * d_model, .layer_norm_epsilon = 1e-5f,
                           .layer = 0, .n_layer = 1};
    return c;
}

static strix_param *add_vec(strix_params *ps, const char *prefix, const char *leaf, int ndim,
                            int64_t n, strix_status *s) {
    char name[STRIX_PARAM_NAME_MAX];
    if (*s != STRIX_OK) return NULL;
    *s = nn_name(name, prefix, leaf);
    if (*s != STRIX_OK) return NULL;
    int64_t shape[3] = {1, 1, n};
    strix_param *p = strix_params_add(ps, name, ndim, ndim == 3 ? shape : shape + 2,
                                      STRIX_INIT_ZEROS, 0.0f, false);
    if (!p) *s = NN_ALLOC_FAIL("RwkvBlock");
    return p;
}

static void add_ln(strix_params *ps, const char *prefix, const char *leaf, int C, float eps,
                   strix_layernorm **out, strix_status *s) {
    char name[STRIX_PARAM_NAME_MAX];
    if (*s != STRIX_OK) return;
    *s = nn_name(name, prefix, leaf);
    if (*s == STRIX_OK) *s = strix_layernorm_new(ps, name, C, true, eps, out);
}

static void add_linear(strix_params *ps, const char *prefix, const char *leaf, int in, int out_f,
                       strix_linear **out, strix_status *s) {
    char name[STRIX_PARAM_NAME_MAX];
    if (*s != STRIX_OK) return;
    *s = nn_name(name, prefix, leaf);
    if (*s == STRIX_OK) *s = strix_linear_new_default(ps, name, in, out_f, false, out);
}

static strix_status vt_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y);
static strix_status vt_backward(strix_module *mod, const strix_tensor *dy,
                                const strix_tensor **dx);
static strix_status vt_forward_ex(strix_module *mod, strix_module_io *io);
static strix_status vt_state_new(strix_module *mod, strix_module_state **out);
static void vt_state_free(strix_module *mod, strix_module_state *st);

static const strix_module_i rwkv_vt = {
    .type = "RwkvBlock", .forward = vt_forward, .backward = vt_backward, .destroy = vt_destroy,
    .relevance = strix_rwkv_block_relevance, .forward_ex = vt_forward_ex,
    .state_new = vt_state_new, .state_free = vt_state_free};

strix_status strix_rwkv_block_new(strix_params *ps, const char *prefix,
                                  const strix_rwkv_config *cfg, strix_module **out) {
    *out = NULL;
    int C = cfg->d_model, A = cfg->attention_hidden_size, I = cfg->intermediate_size;
    if (C < 1 || A < 1 || I < 1 || cfg->n_layer < 1 || cfg->layer < 0 ||
        cfg->layer >= cfg->n_layer || !(cfg->layer_norm_epsilon > 0.0f))
        return strix_error(STRIX_ERR_ARG,
                           "RwkvBlock %s: d_model %d, attention_hidden_size %d, "
                           "intermediate_size %d must be >= 1, layer %d in [0, n_layer %d), "
                           "eps %g > 0",
                           prefix, C, A, I, cfg->layer, cfg->n_layer,
                           (double)cfg->layer_norm_epsilon);
    strix_rwkv_block *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("RwkvBlock");
    m->base.vt = &rwkv_vt;
    m->base.be = ps->be;
    m->base.rule = (strix_lrp_rule){.kind = STRIX_LRP_EPSILON, .epsilon = 1e-6f};
    m->cfg = *cfg;
    char att[STRIX_PARAM_NAME_MAX], ffn[STRIX_PARAM_NAME_MAX];
    strix_status s = nn_name(att, prefix, "attention");
    if (s == STRIX_OK) s = nn_name(ffn, prefix, "feed_forward");
    float eps = cfg->layer_norm_epsilon;
    if (cfg->layer == 0) add_ln(ps, prefix, "pre_ln", C, eps, &m->pre_ln, &s);
    add_ln(ps, prefix, "ln1", C, eps, &m->ln1, &s);
    add_ln(ps, prefix, "ln2", C, eps, &m->ln2, &s);
    m->time_decay = add_vec(ps, att, "time_decay", 1, A, &s);
    m->time_first = add_vec(ps, att, "time_first", 1, A, &s);
    m->att_mix_k = add_vec(ps, att, "time_mix_key", 3, C, &s);
    m->att_mix_v = add_vec(ps, att, "time_mix_value", 3, C, &s);
    m->att_mix_r = add_vec(ps, att, "time_mix_receptance", 3, C, &s);
    add_linear(ps, att, "key", C, A, &m->att_key, &s);
    add_linear(ps, att, "value", C, A, &m->att_value, &s);
    add_linear(ps, att, "receptance", C, A, &m->att_receptance, &s);
    add_linear(ps, att, "output", A, C, &m->att_output, &s);
    m->ffn_mix_k = add_vec(ps, ffn, "time_mix_key", 3, C, &s);
    m->ffn_mix_r = add_vec(ps, ffn, "time_mix_receptance", 3, C, &s);
    add_linear(ps, ffn, "key", C, I, &m->ffn_key, &s);
    add_linear(ps, ffn, "receptance", C, C, &m->ffn_receptance, &s);
    add_linear(ps, ffn, "value", I, C, &m->ffn_value, &s);
    if (s != STRIX_OK) {
        vt_destroy(&m->base);
        return s;
    }
    *out = &m->base;
    return STRIX_OK;
}

// ---- init --------------------------------------------------------------------------------------

static strix_status upload(strix_backend *be, strix_param *p, const double *v) {
    float *h = malloc(p->numel * sizeof(float));
    if (!h) return NN_ALLOC_FAIL("RwkvBlock init");
    for (size_t i = 0; i < p->numel; i++) h[i] = (float)v[i];
    strix_status s = strix_copy(be, p->data, h, p->numel * sizeof(float), STRIX_COPY_H2D);
    free(h);
    return s;
}

static strix_status init_ln(strix_backend *be, strix_layernorm *ln) {
    if (!ln) return STRIX_OK;
    STRIX_TRY(strix_fill(be, ln->weight->data, 1.0f, ln->weight->numel));
    return strix_fill(be, ln->bias->data, 0.0f, ln->bias->numel);
}

strix_status strix_rwkv_block_init(strix_module *mod, uint64_t seed) {
    if (!mod || mod->vt != &rwkv_vt)
        return strix_error(STRIX_ERR_ARG, "strix_rwkv_block_init: not an RWKV block");
    strix_rwkv_block *m = (strix_rwkv_block *)mod;
    strix_backend *be = mod->be;
    int C = m->cfg.d_model, A = m->cfg.attention_hidden_size, L = m->cfg.n_layer;
    double layer = m->cfg.layer;
    double r01 = L > 1 ? layer / (L - 1) : 0.0, r10 = 1.0 - layer / L;
    int n = C > A ? C : A;
    double *v = malloc((size_t)n * sizeof(double));
    if (!v) return NN_ALLOC_FAIL("RwkvBlock init");
    strix_status s = STRIX_OK;
    for (int h = 0; h < A; h++) {
        double frac = A > 1 ? (double)h / (A - 1) : 0.0;
        v[h] = -5.0 + 8.0 * pow(frac, 0.7 + 1.3 * r01);
    }
    if (s == STRIX_OK) s = upload(be, m->time_decay, v);
    if (s == STRIX_OK) s = strix_fill(be, m->time_first->data, 1.0f, (size_t)A);
    struct {
        strix_param *p;
        double power, add;
    } mixes[] = {{m->att_mix_k, r10, 0.0}, {m->att_mix_v, r10, 0.3 * r01},
                 {m->att_mix_r, 0.5 * r10, 0.0}, {m->ffn_mix_k, r10, 0.0},
                 {m->ffn_mix_r, r10, 0.0}};
    for (size_t k = 0; k < sizeof mixes / sizeof mixes[0] && s == STRIX_OK; k++) {
        for (int i = 0; i < C; i++) v[i] = pow((double)i / C, mixes[k].power) + mixes[k].add;
        s = upload(be, mixes[k].p, v);
    }
    free(v);
    if (s == STRIX_OK) s = init_ln(be, m->pre_ln);
    if (s == STRIX_OK) s = init_ln(be, m->ln1);
    if (s == STRIX_OK) s = init_ln(be, m->ln2);
    strix_linear *ls[] = {m->att_key, m->att_value, m->att_receptance, m->att_output,
                          m->ffn_key, m->ffn_receptance, m->ffn_value};
    for (size_t k = 0; k < sizeof ls / sizeof ls[0] && s == STRIX_OK; k++) {
        strix_param *w = ls[k]->weight;
        double bound = 1.0 / sqrt((double)ls[k]->in_features);
        double *u = malloc(w->numel * sizeof(double));
        if (!u) return NN_ALLOC_FAIL("RwkvBlock init");
        strix_rng rng;
        strix_rng_seed(&rng, strix_seed_derive(seed, k));
        for (size_t i = 0; i < w->numel; i++) u[i] = bound * (2.0 * strix_rng_uniform(&rng) - 1.0);
        s = upload(be, w, u);
        free(u);
    }
    return s;
}

// ---- forward -----------------------------------------------------------------------------------

static strix_status ensure3(strix_backend *be, strix_tensor *t, int64_t a, int64_t b, int64_t c) {
    int64_t shape[3] = {a, b, c};
    return strix_tensor_ensure(be, t, 3, shape);
}

static strix_status ensure2(strix_backend *be, strix_tensor *t, int64_t a, int64_t b) {
    int64_t shape[2] = {a, b};
    return strix_tensor_ensure(be, t, 2, shape);
}

static strix_status copy_n(strix_backend *be, float *dst, const float *src, size_t n) {
    return strix_copy(be, dst, src, n * sizeof(float), STRIX_COPY_D2D);
}

/* Token shift with two or three mixes (mu3 NULL: two). */
static strix_status shift(strix_backend *be, const strix_tensor *x, const float *prev,
                          const float *mu_r, const float *mu_k, const float *mu_v, float *xr,
                          float *xk, float *xv, size_t B, size_t T, size_t C) {
    strix_ssm_args a = {.n = B, .l = T, .d = C};
    a.in[0] = x->data, a.in[1] = mu_r, a.in[2] = mu_k, a.in[3] = mu_v, a.in[4] = prev;
    a.out[0] = xr, a.out[1] = xk, a.out[2] = xv;
    return strix_ssm_pass(be, STRIX_SSM_RWKV_TOKEN_SHIFT, &a);
}

/* The forward from state st (NULL or fresh: the zero state); st is left at the end of x. */
static strix_status rwkv_forward(strix_rwkv_block *m, const strix_tensor *x, rwkv_state *st,
                                 const strix_tensor **y) {
    strix_backend *be = m->base.be;
    struct strix_rwkv_work *w = m->work;
    int64_t C = m->cfg.d_model, A = m->cfg.attention_hidden_size, I = m->cfg.intermediate_size;
    if (x->ndim != 3 || x->shape[0] < 1 || x->shape[1] < 1 || x->shape[2] != C)
        return strix_error(STRIX_ERR_SHAPE, "RwkvBlock: x must be (B, T, %lld) with B, T >= 1",
                           (long long)C);
    int64_t B = x->shape[0], T = x->shape[1];
    if (st && st->B && st->B != B)
        return strix_error(STRIX_ERR_SHAPE, "RwkvBlock: the state holds batch %lld, x has %lld",
                           (long long)st->B, (long long)B);
    bool cont = st && st->B;
    size_t nC = (size_t)(B * T * C), nI = (size_t)(B * T * I);
    w->have_forward = false;
    w->B = B, w->T = T;
    w->x = nn_view_of(x);
    w->stateful = cont;
    STRIX_TRY(ensure2(be, &w->prev_att, B, C));
    STRIX_TRY(ensure2(be, &w->prev_ffn, B, C));
    if (cont) {
        STRIX_TRY(copy_n(be, w->prev_att.data, st->att_x.data, (size_t)(B * C)));
        STRIX_TRY(copy_n(be, w->prev_ffn.data, st->ffn_x.data, (size_t)(B * C)));
    }
    strix_tensor *bufs_c[] = {&w->xr, &w->xk, &w->xv, &w->h1, &w->fr, &w->fk, &w->rr, &w->ffn,
                              &w->y};
    for (size_t k = 0; k < sizeof bufs_c / sizeof bufs_c[0]; k++)
        STRIX_TRY(ensure3(be, bufs_c[k], B, T, C));
    STRIX_TRY(ensure3(be, &w->r, B, T, A));
    STRIX_TRY(ensure3(be, &w->wkv, B, T, A));
    STRIX_TRY(ensure3(be, &w->gated, B, T, A));
    STRIX_TRY(ensure3(be, &w->P, B, T + 1, A));
    STRIX_TRY(ensure3(be, &w->Q, B, T + 1, A));
    STRIX_TRY(ensure3(be, &w->O, B, T + 1, A));
    STRIX_TRY(ensure3(be, &w->s, B, T, I));
    STRIX_TRY(ensure3(be, &w->kq, B, T, I));
    /* h = pre_ln(x) or x; a = ln1(h) */
    w->h = &w->x; /* the view, not the caller's struct, which may not outlive the call */
    if (m->pre_ln) STRIX_TRY(strix_layernorm_forward(m->pre_ln, x, &w->h));
    STRIX_TRY(strix_layernorm_forward(m->ln1, w->h, &w->a));
    const float *prev_att = cont ? w->prev_att.data : NULL;
    const float *prev_ffn = cont ? w->prev_ffn.data : NULL;
    STRIX_TRY(shift(be, w->a, prev_att, m->att_mix_r->data, m->att_mix_k->data,
                    m->att_mix_v->data, w->xr.data, w->xk.data, w->xv.data, (size_t)B, (size_t)T,
                    (size_t)C));
    const strix_tensor *k, *v, *zr;
    STRIX_TRY(strix_linear_forward(m->att_key, &w->xk, &k));
    STRIX_TRY(strix_linear_forward(m->att_value, &w->xv, &v));
    STRIX_TRY(strix_linear_forward(m->att_receptance, &w->xr, &zr));
    strix_ssm_args a = {.n = (size_t)B, .l = (size_t)T, .d = (size_t)A};
    a.in[0] = zr->data, a.in[1] = k->data, a.in[2] = v->data;
    a.in[3] = m->time_first->data, a.in[4] = m->time_decay->data;
    if (cont) a.in[5] = st->num.data, a.in[6] = st->den.data, a.in[7] = st->max.data;
    a.out[0] = w->r.data, a.out[1] = w->wkv.data, a.out[2] = w->gated.data;
    a.out[3] = w->P.data, a.out[4] = w->Q.data, a.out[5] = w->O.data;
    STRIX_TRY(strix_ssm_pass(be, STRIX_SSM_RWKV_STABLE_FORWARD, &a));
    STRIX_TRY(strix_linear_forward(m->att_output, &w->gated, &w->att));
    STRIX_TRY(strix_add(be, w->h->data, w->att->data, w->h1.data, nC));
    /* channel-mix */
    STRIX_TRY(strix_layernorm_forward(m->ln2, &w->h1, &w->c));
    STRIX_TRY(shift(be, w->c, prev_ffn, m->ffn_mix_r->data, m->ffn_mix_k->data, NULL,
                    w->fr.data, w->fk.data, NULL, (size_t)B, (size_t)T, (size_t)C));
    const strix_tensor *z;
    STRIX_TRY(strix_linear_forward(m->ffn_key, &w->fk, &z));
    STRIX_TRY(strix_elementwise(be, STRIX_ACT_RELU, z->data, w->s.data, nI));
    STRIX_TRY(strix_mul(be, w->s.data, w->s.data, w->kq.data, nI));
    STRIX_TRY(strix_linear_forward(m->ffn_value, &w->kq, &w->vv));
    STRIX_TRY(strix_linear_forward(m->ffn_receptance, &w->fr, &w->zrr));
    STRIX_TRY(strix_elementwise(be, STRIX_ACT_SIGMOID, w->zrr->data, w->rr.data, nC));
    STRIX_TRY(strix_mul(be, w->rr.data, w->vv->data, w->ffn.data, nC));
    STRIX_TRY(strix_add(be, w->h1.data, w->ffn.data, w->y.data, nC));
    if (st) { /* the state moves to the end of x */
        if (!cont) {
            STRIX_TRY(ensure2(be, &st->att_x, B, C));
            STRIX_TRY(ensure2(be, &st->ffn_x, B, C));
            STRIX_TRY(ensure2(be, &st->num, B, A));
            STRIX_TRY(ensure2(be, &st->den, B, A));
            STRIX_TRY(ensure2(be, &st->max, B, A));
            st->B = B;
        }
        size_t last = (size_t)(T - 1), Bs = (size_t)B, Cs = (size_t)C, As = (size_t)A;
        size_t Ts = (size_t)T;
        STRIX_TRY(strix_copy_2d(be, st->att_x.data, Cs, w->a->data + last * Cs, Ts * Cs, Bs, Cs));
        STRIX_TRY(strix_copy_2d(be, st->ffn_x.data, Cs, w->c->data + last * Cs, Ts * Cs, Bs, Cs));
        STRIX_TRY(strix_copy_2d(be, st->num.data, As, w->P.data + Ts * As, (Ts + 1) * As, Bs, As));
        STRIX_TRY(strix_copy_2d(be, st->den.data, As, w->Q.data + Ts * As, (Ts + 1) * As, Bs, As));
        STRIX_TRY(strix_copy_2d(be, st->max.data, As, w->O.data + Ts * As, (Ts + 1) * As, Bs, As));
    }
    w->have_forward = true;
    *y = &w->y;
    return STRIX_OK;
}

static strix_status vt_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    return rwkv_forward((strix_rwkv_block *)mod, x, NULL, y);
}

static strix_status vt_forward_ex(strix_module *mod, strix_module_io *io) {
    if (io->n_in != 1 || !io->in[0] || io->ids || io->mask)
        return strix_error(STRIX_ERR_UNSUPPORTED, "RwkvBlock takes one float tensor x (B,T,C)");
    rwkv_state *st = NULL;
    if (io->state) {
        if (io->state->owner != mod)
            return strix_error(STRIX_ERR_ARG, "RwkvBlock: the state belongs to another module");
        st = (rwkv_state *)io->state;
    }
    const strix_tensor *y;
    STRIX_TRY(rwkv_forward((strix_rwkv_block *)mod, io->in[0], st, &y));
    io->n_out = 1;
    io->out[0] = y;
    return STRIX_OK;
}

static strix_status vt_state_new(strix_module *mod, strix_module_state **out) {
    rwkv_state *st = calloc(1, sizeof *st);
    if (!st) return NN_ALLOC_FAIL("RwkvBlock state");
    st->base.owner = mod;
    *out = &st->base;
    return STRIX_OK;
}

static void vt_state_free(strix_module *mod, strix_module_state *s) {
    (void)mod;
    rwkv_state *st = (rwkv_state *)s;
    strix_tensor_free(&st->att_x), strix_tensor_free(&st->ffn_x);
    strix_tensor_free(&st->num), strix_tensor_free(&st->den), strix_tensor_free(&st->max);
    free(st);
}

// ---- backward ----------------------------------------------------------------------------------

static strix_status check_out(const strix_rwkv_block *m, const char *what, const strix_tensor *t) {
    const struct strix_rwkv_work *w = m->work;
    if (!w->have_forward)
        return strix_error(STRIX_ERR_ARG, "RwkvBlock: %s before a forward", what);
    if (t->ndim != 3 || t->shape[0] != w->B || t->shape[1] != w->T ||
        t->shape[2] != m->cfg.d_model)
        return strix_error(STRIX_ERR_SHAPE, "RwkvBlock: %s must have the output's shape", what);
    return STRIX_OK;
}

/* The scratch of backward and relevance for the last forward's (B, T): (B,T,max(C,A)) buffers
 * seen as (B,T,C) or (B,T,A) through as_c / as_a. */
static strix_status ensure_scratch(strix_rwkv_block *m) {
    strix_backend *be = m->base.be;
    struct strix_rwkv_work *w = m->work;
    int64_t C = m->cfg.d_model, A = m->cfg.attention_hidden_size, M = C > A ? C : A;
    strix_tensor *big[] = {&w->g1, &w->g2, &w->t0, &w->t1, &w->t2, &w->ta, &w->tb};
    for (size_t k = 0; k < sizeof big / sizeof big[0]; k++)
        STRIX_TRY(ensure3(be, big[k], w->B, w->T, M));
    STRIX_TRY(ensure3(be, &w->gz, w->B, w->T, m->cfg.intermediate_size));
    STRIX_TRY(ensure3(be, &w->dh1, w->B, w->T, C));
    STRIX_TRY(ensure3(be, &w->dh, w->B, w->T, C));
    STRIX_TRY(ensure3(be, &w->dx, w->B, w->T, C));
    STRIX_TRY(ensure3(be, &w->rx, w->B, w->T, C));
    return strix_tensor_ensure(be, &w->sums, 1, &M);
}

static strix_tensor view3(const struct strix_rwkv_work *w, strix_tensor *t, int64_t last) {
    int64_t shape[3] = {w->B, w->T, last};
    return strix_tensor_view(t->data, t->device, 3, shape);
}

#define as_c(w, t) view3((w), (t), m->cfg.d_model)
#define as_a(w, t) view3((w), (t), m->cfg.attention_hidden_size)

/* grad(p) += Σ_(b,t) terms (n, l, d) when p takes gradients; sums: (d) scratch. */
static strix_status add_time_sum(strix_backend *be, strix_param *p, const float *terms,
                                 float *sums, size_t B, size_t T, size_t d) {
    if (!p->requires_grad) return STRIX_OK;
    strix_ssm_args a = {.n = B, .l = T, .d = d};
    a.in[0] = terms, a.out[0] = sums;
    STRIX_TRY(strix_ssm_pass(be, STRIX_SSM_REVERSE_TIME_SUM, &a));
    return strix_add(be, p->grad, sums, p->grad, d);
}

static strix_status vt_backward(strix_module *mod, const strix_tensor *dy,
                                const strix_tensor **dx) {
    strix_rwkv_block *m = (strix_rwkv_block *)mod;
    strix_backend *be = mod->be;
    struct strix_rwkv_work *w = m->work;
    STRIX_TRY(check_out(m, "backward's dy", dy));
    size_t B = (size_t)w->B, T = (size_t)w->T, C = (size_t)m->cfg.d_model;
    size_t A = (size_t)m->cfg.attention_hidden_size, I = (size_t)m->cfg.intermediate_size;
    size_t nC = B * T * C, nI = B * T * I;
    STRIX_TRY(ensure_scratch(m));
    strix_tensor g1 = as_c(w, &w->g1), g2 = as_c(w, &w->g2), t2 = as_c(w, &w->t2);
    const float *prev_att = w->stateful ? w->prev_att.data : NULL;
    const float *prev_ffn = w->stateful ? w->prev_ffn.data : NULL;
    /* channel-mix: ffn = rr·vv */
    const strix_tensor *g;
    STRIX_TRY(strix_mul(be, dy->data, w->vv->data, g1.data, nC));    /* d rr */
    STRIX_TRY(strix_elementwise_backward(be, STRIX_ACT_SIGMOID, w->zrr->data, g1.data, g1.data,
                                         nC));                         /* d zrr */
    STRIX_TRY(strix_mul(be, dy->data, w->rr.data, g2.data, nC));     /* d vv */
    const strix_tensor *d_fr, *d_kq, *d_fk;
    STRIX_TRY(strix_linear_backward(m->ffn_receptance, &g1, &d_fr));
    STRIX_TRY(strix_linear_backward(m->ffn_value, &g2, &d_kq));
    STRIX_TRY(strix_mul(be, w->s.data, d_kq->data, w->gz.data, nI));    /* dz = 2·s·d kq */
    STRIX_TRY(strix_axpby(be, 2.0f, w->gz.data, 0.0f, NULL, w->gz.data, nI));
    STRIX_TRY(strix_linear_backward(m->ffn_key, &w->gz, &d_fk));
    strix_ssm_args sb = {.n = B, .l = T, .d = C};
    sb.in[0] = w->c->data, sb.in[1] = d_fr->data, sb.in[2] = d_fk->data;
    sb.in[4] = m->ffn_mix_r->data, sb.in[5] = m->ffn_mix_k->data, sb.in[7] = prev_ffn;
    sb.out[0] = w->t2.data, sb.out[1] = w->t0.data, sb.out[2] = w->t1.data;
    STRIX_TRY(strix_ssm_pass(be, STRIX_SSM_RWKV_SHIFT_BACKWARD, &sb));
    STRIX_TRY(add_time_sum(be, m->ffn_mix_r, w->t0.data, w->sums.data, B, T, C));
    STRIX_TRY(add_time_sum(be, m->ffn_mix_k, w->t1.data, w->sums.data, B, T, C));
    STRIX_TRY(strix_layernorm_backward(m->ln2, &t2, &g));
    STRIX_TRY(strix_add(be, dy->data, g->data, w->dh1.data, nC));
    /* time-mix: att = output(r·wkv) */
    const strix_tensor *d_gated, *dxr, *dxk, *dxv;
    STRIX_TRY(strix_linear_backward(m->att_output, &w->dh1, &d_gated));
    /* dz_r -> g1, dk -> g2, dv -> t2 (as (B,T,A)), u terms -> ta, time_decay terms -> tb */
    const strix_tensor *k = strix_linear_output(m->att_key), *v = strix_linear_output(m->att_value);
    strix_ssm_args wb = {.n = B, .l = T, .d = A};
    const float *win[] = {d_gated->data, w->r.data, k->data, v->data, w->wkv.data, w->P.data,
                          w->Q.data, w->O.data, m->time_first->data, m->time_decay->data};
    for (int i = 0; i < 10; i++) wb.in[i] = win[i];
    wb.out[0] = w->g1.data, wb.out[1] = w->g2.data, wb.out[2] = w->t2.data;
    wb.out[3] = w->ta.data, wb.out[4] = w->tb.data;
    STRIX_TRY(strix_ssm_pass(be, STRIX_SSM_RWKV_STABLE_BACKWARD, &wb));
    STRIX_TRY(add_time_sum(be, m->time_first, w->ta.data, w->sums.data, B, T, A));
    STRIX_TRY(add_time_sum(be, m->time_decay, w->tb.data, w->sums.data, B, T, A));
    strix_tensor gA[3] = {as_a(w, &w->g1), as_a(w, &w->g2), as_a(w, &w->t2)};
    STRIX_TRY(strix_linear_backward(m->att_receptance, &gA[0], &dxr));
    STRIX_TRY(strix_linear_backward(m->att_key, &gA[1], &dxk));
    STRIX_TRY(strix_linear_backward(m->att_value, &gA[2], &dxv));
    strix_ssm_args ab = {.n = B, .l = T, .d = C};
    ab.in[0] = w->a->data, ab.in[1] = dxr->data, ab.in[2] = dxk->data, ab.in[3] = dxv->data;
    ab.in[4] = m->att_mix_r->data, ab.in[5] = m->att_mix_k->data, ab.in[6] = m->att_mix_v->data;
    ab.in[7] = prev_att;
    ab.out[0] = w->dh.data, ab.out[1] = w->t0.data, ab.out[2] = w->t1.data;
    ab.out[3] = w->ta.data;
    STRIX_TRY(strix_ssm_pass(be, STRIX_SSM_RWKV_SHIFT_BACKWARD, &ab));
    STRIX_TRY(add_time_sum(be, m->att_mix_r, w->t0.data, w->sums.data, B, T, C));
    STRIX_TRY(add_time_sum(be, m->att_mix_k, w->t1.data, w->sums.data, B, T, C));
    STRIX_TRY(add_time_sum(be, m->att_mix_v, w->ta.data, w->sums.data, B, T, C));
    STRIX_TRY(strix_layernorm_backward(m->ln1, &w->dh, &g));
    STRIX_TRY(strix_add(be, w->dh1.data, g->data, w->dx.data, nC)); /* d h */
    if (m->pre_ln) {
        STRIX_TRY(strix_layernorm_backward(m->pre_ln, &w->dx, &g));
        *dx = g;
    } else {
        *dx = &w->dx;
    }
    return STRIX_OK;
}

// ---- relevance ---------------------------------------------------------------------------------

/* Relevance of a Linear's input with the block's rule. */
static strix_status lin_rel(strix_rwkv_block *m, strix_linear *l, const strix_tensor *r,
                            const strix_tensor **r_in) {
    l->base.rule = m->base.rule;
    return strix_module_relevance(&l->base, r, r_in);
}

/* LayerNorm's epsilon rule with the std detached. */
static strix_status ln_rel(strix_rwkv_block *m, strix_layernorm *ln, const strix_tensor *r,
                           const strix_tensor **r_in) {
    ln->base.rule = m->base.rule;
    ln->base.rule.layer_norm_detach_std = true;
    return strix_layernorm_relevance(ln, NULL, r, r_in);
}

static strix_status shift_rel(strix_backend *be, const strix_tensor *x, const float *mix,
                              const strix_tensor *r_mix, const float *mu, float *r_x, size_t B,
                              size_t T, size_t C, float eps) {
    strix_ssm_args a = {.n = B, .l = T, .d = C, .eps = eps};
    a.in[0] = x->data, a.in[1] = mix, a.in[2] = r_mix->data, a.in[3] = mu;
    a.out[0] = r_x;
    return strix_ssm_pass(be, STRIX_SSM_RWKV_SHIFT_LRP, &a);
}

strix_status strix_rwkv_block_relevance(strix_module *mod, const strix_tensor *r_y,
                                        const strix_tensor **r_x) {
    if (!mod || mod->vt != &rwkv_vt)
        return strix_error(STRIX_ERR_ARG, "strix_rwkv_block_relevance: not an RWKV block");
    strix_rwkv_block *m = (strix_rwkv_block *)mod;
    strix_backend *be = mod->be;
    struct strix_rwkv_work *w = m->work;
    if (mod->rule.kind != STRIX_LRP_EPSILON)
        return strix_error(STRIX_ERR_UNSUPPORTED, "RwkvBlock: relevance has the epsilon rule only");
    STRIX_TRY(check_out(m, "the relevance of y", r_y));
    float eps = mod->rule.epsilon;
    size_t B = (size_t)w->B, T = (size_t)w->T, C = (size_t)m->cfg.d_model;
    size_t A = (size_t)m->cfg.attention_hidden_size, nC = B * T * C;
    STRIX_TRY(ensure_scratch(m));
    strix_tensor r_ffn = as_c(w, &w->g1);
    /* y = h1 + ffn: dh1 <- R_h1 (residual share), g1 <- R_ffn (all to value: the gate takes
     * none) */
    STRIX_TRY(strix_lrp_residual_split(be, w->h1.data, w->ffn.data, r_y->data, w->dh1.data,
                                       w->g1.data, nC, eps));
    const strix_tensor *r_kq, *r_fk, *r;
    STRIX_TRY(lin_rel(m, m->ffn_value, &r_ffn, &r_kq));
    /* relu(z)·[relu(z)]: z gets R_kq unchanged */
    STRIX_TRY(lin_rel(m, m->ffn_key, r_kq, &r_fk));
    STRIX_TRY(shift_rel(be, w->c, w->fk.data, r_fk, m->ffn_mix_k->data, w->g2.data, B, T, C, eps));
    strix_tensor r_c = as_c(w, &w->g2);
    STRIX_TRY(ln_rel(m, m->ln2, &r_c, &r));
    STRIX_TRY(strix_add(be, w->dh1.data, r->data, w->dh1.data, nC)); /* R_h1 */
    /* h1 = h + att: rx <- R_h (residual share), g1 <- R_att */
    STRIX_TRY(strix_lrp_residual_split(be, w->h->data, w->att->data, w->dh1.data, w->rx.data,
                                       w->g1.data, nC, eps));
    strix_tensor r_att = as_c(w, &w->g1);
    const strix_tensor *r_gated, *r_xv;
    STRIX_TRY(lin_rel(m, m->att_output, &r_att, &r_gated));
    const strix_tensor *k = strix_linear_output(m->att_key), *v = strix_linear_output(m->att_value);
    strix_ssm_args l = {.n = B, .l = T, .d = A, .eps = eps};
    const float *lin[] = {r_gated->data, k->data, v->data, w->wkv.data, w->P.data, w->Q.data,
                          w->O.data, m->time_first->data, m->time_decay->data};
    for (int i = 0; i < 9; i++) l.in[i] = lin[i];
    l.out[0] = w->t2.data;
    STRIX_TRY(strix_ssm_pass(be, STRIX_SSM_RWKV_STABLE_LRP, &l));
    strix_tensor r_v = as_a(w, &w->t2);
    STRIX_TRY(lin_rel(m, m->att_value, &r_v, &r_xv));
    STRIX_TRY(shift_rel(be, w->a, w->xv.data, r_xv, m->att_mix_v->data, w->g2.data, B, T, C, eps));
    strix_tensor r_a = as_c(w, &w->g2);
    STRIX_TRY(ln_rel(m, m->ln1, &r_a, &r));
    STRIX_TRY(strix_add(be, w->rx.data, r->data, w->rx.data, nC)); /* R_h */
    if (m->pre_ln) {
        STRIX_TRY(ln_rel(m, m->pre_ln, &w->rx, &r));
        *r_x = r;
    } else {
        *r_x = &w->rx;
    }
    return STRIX_OK;
}
