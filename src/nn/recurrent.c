/*
 * recurrent.c - torch.nn.RNN (tanh, relu), LSTM (with projections) and GRU as one module type
 * (strix/recurrent.h).
 *
 * Per layer and direction: one batched GEMM for the input part of every gate over all T steps
 * (x·W_ihᵀ + b_ih, with b_hh folded in except GRU's b_hn), then per step one GEMM per gate for
 * h_prev·W_hhᵀ, the gate activations and a fused cell pass (strix_recurrent_cell). W_hh is
 * packed once per direction for the T steps' GEMMs where the backend packs (strix_gemm_pack_b,
 * "cpu"; the same bits as packing at every step), forward and backward. Backward runs
 * the cells' backward passes in reverse step order, then forms the weight gradients as one GEMM
 * per gate over all steps and the input gradient as one GEMM per gate. LSTM projections add one
 * GEMM per step (h_t = u_t·W_hrᵀ forward, its transpose backward) and one for W_hr's gradient
 * over all steps. Layouts: the comment of
 * src/nn/recurrent_internal.h. Dropout between layers is the counter-RNG dropout primitive, as the
 * Dropout module: backward re-applies it with the same (seed, offset), so no mask is stored.
 * Relevance (Arras et al. 2019) walks the steps as backward does, with the cells' LRP passes and
 * the epsilon rule of the linear maps (strix_lrp_linear, gru_lrp_hprev). Does not do
 * initialisation (the parameter block draws values).
 */
#include <math.h>
#include <stdlib.h>

#include "layers_internal.h"
#include "nn/recurrent_internal.h"
#include "nn/rules_internal.h"

static const char *mode_name(strix_rnn_mode mode) {
    return mode == STRIX_RNN_LSTM ? "LSTM" : mode == STRIX_RNN_GRU ? "GRU" : "RNN";
}

/* The Elman RNN modes (tanh or relu). */
static bool is_elman(strix_rnn_mode mode) {
    return mode == STRIX_RNN_TANH || mode == STRIX_RNN_RELU;
}

// ---- vtable ------------------------------------------------------------------------------------

typedef struct rnn_state {
    strix_module_state base;
    strix_tensor h, c; /* (L·dirs, B, H); empty: zeros */
} rnn_state;

static void work_free(strix_rnn *m) {
    struct strix_rnn_work *w = m->work;
    int nd = m->cfg.num_layers * m->dirs;
    if (w->dir)
        for (int i = 0; i < nd; i++) {
            strix_rnn_dir_work *d = &w->dir[i];
            strix_tensor *ts[] = {&d->p,  &d->hs, &d->cs, &d->tc, &d->hn, &d->npre,
                                  &d->dp, &d->dhn, &d->gh, &d->hu, &d->dhp};
            for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) strix_tensor_free(ts[k]);
        }
    if (w->layer)
        for (int l = 0; l < m->cfg.num_layers; l++) {
            strix_tensor_free(&w->layer[l].y);
            strix_tensor_free(&w->layer[l].dx);
            strix_tensor_free(&w->layer[l].yd);
            strix_tensor_free(&w->layer[l].gd);
        }
    strix_tensor *ts[] = {&w->xtm, &w->out, &w->h_n, &w->c_n, &w->dytm, &w->dx,
                          &w->dh0, &w->dc0, &w->dh,  &w->dc,  &w->du,   &w->wpack};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) strix_tensor_free(ts[k]);
    free(w->dir);
    free(w->layer);
    free(m->weight_ih);
    free(m->weight_hh);
    free(m->bias_ih);
    free(m->bias_hh);
    free(m->weight_hr);
}

static void vt_destroy(strix_module *mod) {
    strix_rnn *m = (strix_rnn *)mod;
    work_free(m);
    free(m);
}

static strix_status vt_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    ((strix_rnn *)mod)->work->io_inputs = 1;
    return strix_rnn_forward((strix_rnn *)mod, x, NULL, NULL, y, NULL, NULL);
}

static strix_status vt_backward(strix_module *mod, const strix_tensor *dy,
                                const strix_tensor **dx) {
    return strix_rnn_backward((strix_rnn *)mod, dy, NULL, NULL, dx, NULL, NULL);
}

static strix_status vt_state_new(strix_module *mod, strix_module_state **out) {
    rnn_state *st = calloc(1, sizeof *st);
    if (!st) return NN_ALLOC_FAIL(mode_name(((strix_rnn *)mod)->cfg.mode));
    st->base.owner = mod;
    *out = &st->base;
    return STRIX_OK;
}

static void vt_state_free(strix_module *mod, strix_module_state *s) {
    (void)mod;
    rnn_state *st = (rnn_state *)s;
    strix_tensor_free(&st->h);
    strix_tensor_free(&st->c);
    free(st);
}

/* Copies src into the state tensor dst (same shape). */
static strix_status state_store(strix_backend *be, strix_tensor *dst, const strix_tensor *src) {
    STRIX_TRY(strix_tensor_ensure(be, dst, src->ndim, src->shape));
    return strix_copy(be, dst->data, src->data,
                      (size_t)strix_tensor_numel(src) * sizeof(float), STRIX_COPY_D2D);
}

static strix_status vt_forward_ex(strix_module *mod, strix_module_io *io) {
    strix_rnn *m = (strix_rnn *)mod;
    const char *who = mode_name(m->cfg.mode);
    bool lstm = m->cfg.mode == STRIX_RNN_LSTM;
    if (io->n_in < 1 || io->n_in > (lstm ? 3 : 2) || !io->in[0] || io->ids || io->mask)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s takes x and optionally h0%s (float tensors)",
                           who, lstm ? ", c0" : "");
    const strix_tensor *h0 = io->n_in > 1 ? io->in[1] : NULL;
    const strix_tensor *c0 = io->n_in > 2 ? io->in[2] : NULL;
    rnn_state *st = NULL;
    if (io->state) {
        if (io->state->owner != mod)
            return strix_error(STRIX_ERR_ARG, "%s: the state belongs to another module", who);
        if (h0 || c0)
            return strix_error(STRIX_ERR_ARG, "%s: give h0/c0 either as inputs or as a state",
                               who);
        st = (rnn_state *)io->state;
        if (st->h.data) h0 = &st->h;
        if (st->c.data) c0 = &st->c;
    }
    const strix_tensor *y, *hn, *cn;
    STRIX_TRY(strix_rnn_forward(m, io->in[0], h0, c0, &y, &hn, &cn));
    m->work->io_inputs = st ? 1 : io->n_in;
    if (st) {
        STRIX_TRY(state_store(mod->be, &st->h, hn));
        if (cn) STRIX_TRY(state_store(mod->be, &st->c, cn));
    }
    io->n_out = lstm ? 3 : 2;
    io->out[0] = y;
    io->out[1] = hn;
    io->out[2] = cn;
    return STRIX_OK;
}

static strix_status vt_backward_ex(strix_module *mod, strix_module_io *io) {
    strix_rnn *m = (strix_rnn *)mod;
    bool lstm = m->cfg.mode == STRIX_RNN_LSTM;
    if (io->n_in < 1 || io->n_in > (lstm ? 3 : 2) || !io->in[0])
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s backward takes dy and optionally dh_n%s",
                           mode_name(m->cfg.mode), lstm ? ", dc_n" : "");
    const strix_tensor *dx, *dh0, *dc0;
    STRIX_TRY(strix_rnn_backward(m, io->in[0], io->n_in > 1 ? io->in[1] : NULL,
                                 io->n_in > 2 ? io->in[2] : NULL, &dx, &dh0, &dc0));
    io->n_out = m->work->io_inputs; // gradients of the float inputs the forward took
    io->out[0] = dx;
    io->out[1] = io->n_out > 1 ? dh0 : NULL;
    io->out[2] = io->n_out > 2 ? dc0 : NULL;
    return STRIX_OK;
}

static strix_status vt_relevance(strix_module *mod, const strix_tensor *r_out,
                                 const strix_tensor **r_in) {
    return strix_rnn_relevance((strix_rnn *)mod, r_out, NULL, NULL, r_in, NULL, NULL);
}

static strix_status vt_relevance_ex(strix_module *mod, strix_module_io *io) {
    strix_rnn *m = (strix_rnn *)mod;
    bool lstm = m->cfg.mode == STRIX_RNN_LSTM;
    if (io->n_in < 1 || io->n_in > (lstm ? 3 : 2) || !io->in[0])
        return strix_error(STRIX_ERR_UNSUPPORTED,
                           "%s relevance takes that of y and optionally h_n%s",
                           mode_name(m->cfg.mode), lstm ? ", c_n" : "");
    const strix_tensor *rx, *rh0, *rc0;
    STRIX_TRY(strix_rnn_relevance(m, io->in[0], io->n_in > 1 ? io->in[1] : NULL,
                                  io->n_in > 2 ? io->in[2] : NULL, &rx, &rh0, &rc0));
    io->n_out = m->work->io_inputs; // relevance of the float inputs the forward took
    io->out[0] = rx;
    io->out[1] = io->n_out > 1 ? rh0 : NULL;
    io->out[2] = io->n_out > 2 ? rc0 : NULL;
    return STRIX_OK;
}

static void vt_set_training(strix_module *mod, bool training) {
    ((strix_rnn *)mod)->training = training;
}

static bool vt_get_training(const strix_module *mod) { return ((const strix_rnn *)mod)->training; }

/* One vtable per mode; only the type name differs. */
#define RNN_VT(name)                                                                              \
    {.type = (name), .forward = vt_forward, .backward = vt_backward, .destroy = vt_destroy,       \
     .forward_ex = vt_forward_ex, .backward_ex = vt_backward_ex, .relevance = vt_relevance,       \
     .relevance_ex = vt_relevance_ex, .state_new = vt_state_new, .state_free = vt_state_free,     \
     .set_training = vt_set_training, .get_training = vt_get_training}

static const strix_module_i rnn_vt[4] = {
    [STRIX_RNN_TANH] = RNN_VT("RNN"), [STRIX_RNN_LSTM] = RNN_VT("LSTM"),
    [STRIX_RNN_GRU] = RNN_VT("GRU"),  [STRIX_RNN_RELU] = RNN_VT("RNN"),
};

// ---- construction ------------------------------------------------------------------------------

strix_rnn_config strix_rnn_config_default(strix_rnn_mode mode, int input_size, int hidden_size) {
    strix_rnn_config c = {.mode = mode, .input_size = input_size, .hidden_size = hidden_size,
                          .num_layers = 1, .bias = true, .batch_first = true};
    return c;
}

/* Declares <prefix>.<base>_l<l><suffix> with the given shape, U(-bound, bound). */
static strix_param *add_param(strix_params *ps, const char *prefix, const char *base, int l,
                              const char *suffix, int ndim, const int64_t *shape, float bound,
                              bool decay, strix_status *s) {
    char leaf[64], name[STRIX_PARAM_NAME_MAX];
    snprintf(leaf, sizeof leaf, "%s_l%d%s", base, l, suffix);
    *s = nn_name(name, prefix, leaf);
    if (*s != STRIX_OK) return NULL;
    strix_param *p = strix_params_add(ps, name, ndim, shape, STRIX_INIT_UNIFORM, bound, decay);
    if (!p) *s = NN_ALLOC_FAIL("recurrent module");
    return p;
}

strix_status strix_rnn_new(strix_params *ps, const char *prefix, const strix_rnn_config *cfg,
                           strix_rnn **out) {
    *out = NULL;
    if (cfg->mode != STRIX_RNN_TANH && cfg->mode != STRIX_RNN_LSTM && cfg->mode != STRIX_RNN_GRU &&
        cfg->mode != STRIX_RNN_RELU)
        return strix_error(STRIX_ERR_ARG, "recurrent module %s: unknown mode %d", prefix,
                           (int)cfg->mode);
    const char *who = mode_name(cfg->mode);
    if (cfg->input_size < 1 || cfg->hidden_size < 1 || cfg->num_layers < 1)
        return strix_error(STRIX_ERR_ARG,
                           "%s %s: input_size %d, hidden_size %d, num_layers %d must be positive",
                           who, prefix, cfg->input_size, cfg->hidden_size, cfg->num_layers);
    if (!(cfg->dropout >= 0.0f && cfg->dropout <= 1.0f))
        return strix_error(STRIX_ERR_ARG, "%s %s: dropout %g must be in [0, 1]", who, prefix,
                           (double)cfg->dropout);
    if (cfg->proj_size != 0 && cfg->mode != STRIX_RNN_LSTM)
        return strix_error(STRIX_ERR_ARG, "%s %s: proj_size is only supported for LSTM", who,
                           prefix);
    if (cfg->proj_size < 0 || cfg->proj_size >= cfg->hidden_size)
        return strix_error(STRIX_ERR_ARG,
                           "%s %s: proj_size %d must be 0 (off) or in [1, hidden_size %d)", who,
                           prefix, cfg->proj_size, cfg->hidden_size);
    strix_rnn *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL(who);
    m->base.vt = &rnn_vt[cfg->mode];
    m->base.be = ps->be;
    m->cfg = *cfg;
    m->training = true;
    m->dirs = cfg->bidirectional ? 2 : 1;
    m->gates = cfg->mode == STRIX_RNN_LSTM ? 4 : cfg->mode == STRIX_RNN_GRU ? 3 : 1;
    m->out_size = cfg->proj_size > 0 ? cfg->proj_size : cfg->hidden_size;
    int nd = cfg->num_layers * m->dirs;
    m->weight_ih = calloc((size_t)nd, sizeof *m->weight_ih);
    m->weight_hh = calloc((size_t)nd, sizeof *m->weight_hh);
    m->bias_ih = calloc((size_t)nd, sizeof *m->bias_ih);
    m->bias_hh = calloc((size_t)nd, sizeof *m->bias_hh);
    m->weight_hr = calloc((size_t)nd, sizeof *m->weight_hr);
    m->work->dir = calloc((size_t)nd, sizeof *m->work->dir);
    m->work->layer = calloc((size_t)cfg->num_layers, sizeof *m->work->layer);
    strix_status s = STRIX_OK;
    if (!m->weight_ih || !m->weight_hh || !m->bias_ih || !m->bias_hh || !m->weight_hr ||
        !m->work->dir || !m->work->layer)
        s = NN_ALLOC_FAIL(who);
    int64_t gh = (int64_t)m->gates * cfg->hidden_size, h = cfg->hidden_size, hr = m->out_size;
    float bound = (float)(1.0 / sqrt((double)cfg->hidden_size));
    for (int l = 0; l < cfg->num_layers && s == STRIX_OK; l++) {
        int64_t in = l == 0 ? cfg->input_size : (int64_t)m->dirs * hr;
        for (int d = 0; d < m->dirs && s == STRIX_OK; d++) {
            const char *suf = d ? "_reverse" : "";
            int i = l * m->dirs + d;
            int64_t wih[2] = {gh, in}, whh[2] = {gh, hr}, b[1] = {gh}, whr[2] = {hr, h};
            m->weight_ih[i] = add_param(ps, prefix, "weight_ih", l, suf, 2, wih, bound, true, &s);
            if (s == STRIX_OK)
                m->weight_hh[i] = add_param(ps, prefix, "weight_hh", l, suf, 2, whh, bound, true,
                                            &s);
            if (s == STRIX_OK && cfg->bias)
                m->bias_ih[i] = add_param(ps, prefix, "bias_ih", l, suf, 1, b, bound, false, &s);
            if (s == STRIX_OK && cfg->bias)
                m->bias_hh[i] = add_param(ps, prefix, "bias_hh", l, suf, 1, b, bound, false, &s);
            if (s == STRIX_OK && cfg->proj_size > 0)
                m->weight_hr[i] = add_param(ps, prefix, "weight_hr", l, suf, 2, whr, bound, true,
                                            &s);
        }
    }
    if (s != STRIX_OK) {
        work_free(m);
        free(m);
        return s;
    }
    *out = m;
    return STRIX_OK;
}

strix_status strix_rnn_reset_parameters(strix_rnn *m, uint64_t seed) {
    STRIX_ASSERT(m->weight_ih[0]->data != NULL, "recurrent module: parameters not allocated");
    double bound = 1.0 / sqrt((double)m->cfg.hidden_size);
    int nd = m->cfg.num_layers * m->dirs;
    uint64_t k = 0;
    for (int i = 0; i < nd; i++) {
        strix_param *ps[5] = {m->weight_ih[i], m->weight_hh[i], m->bias_ih[i], m->bias_hh[i],
                              m->weight_hr[i]}; // torch's order
        for (int j = 0; j < 5; j++) {
            strix_param *p = ps[j];
            if (!p) continue;
            float *host = malloc((size_t)p->numel * sizeof *host);
            if (!host) return NN_ALLOC_FAIL(mode_name(m->cfg.mode));
            strix_rng rng;
            strix_rng_seed(&rng, strix_seed_derive(seed, k++));
            for (size_t e = 0; e < (size_t)p->numel; e++)
                host[e] = (float)(bound * (2.0 * strix_rng_uniform(&rng) - 1.0));
            strix_status s = strix_copy(m->base.be, p->data, host,
                                        (size_t)p->numel * sizeof *host, STRIX_COPY_H2D);
            free(host);
            STRIX_TRY(s);
        }
    }
    return STRIX_OK;
}

// ---- forward -----------------------------------------------------------------------------------

/* STRIX_ERR_SHAPE unless t is (L·dirs, B, n): n = Hr for h states, H for c states. */
static strix_status check_state(const strix_rnn *m, const char *what, const strix_tensor *t,
                                int64_t B, int64_t n) {
    int64_t want[3] = {(int64_t)m->cfg.num_layers * m->dirs, B, n};
    if (t->ndim == 3 && t->shape[0] == want[0] && t->shape[1] == want[1] && t->shape[2] == want[2])
        return STRIX_OK;
    return strix_error(STRIX_ERR_SHAPE, "%s: %s must be (%lld, %lld, %lld)",
                       mode_name(m->cfg.mode), what, (long long)want[0], (long long)want[1],
                       (long long)want[2]);
}

/* Copies one direction's (B, H) slice `idx` of a (L·dirs, B, H) state into dst, or zeros. */
static strix_status load_slice(strix_backend *be, float *dst, const strix_tensor *src, int idx,
                               size_t bh) {
    if (!src) return strix_fill(be, dst, 0.0f, bh);
    return strix_copy(be, dst, src->data + (size_t)idx * bh, bh * sizeof(float), STRIX_COPY_D2D);
}

/* (B, T, n) <-> (T, B, n): `to_tm` copies batch-major src into time-major dst, else back. */
static strix_status transpose_bt(strix_backend *be, float *dst, const float *src, size_t B,
                                 size_t T, size_t n, bool to_tm) {
    for (size_t t = 0; t < T; t++) {
        if (to_tm) STRIX_TRY(strix_copy_2d(be, dst + t * B * n, n, src + t * n, T * n, B, n));
        else STRIX_TRY(strix_copy_2d(be, dst + t * n, T * n, src + t * B * n, n, B, n));
    }
    return STRIX_OK;
}

/* Packs the B of g (W_hh's gate blocks) once into w->wpack for the per-step GEMMs of one
 * direction: *packed (item i at + i·*item floats), or NULL where the backend packs nothing.
 * The packed products have the bits of the unpacked ones. */
static strix_status pack_hh(strix_rnn *m, const strix_gemm_batch *g, const float **packed,
                            size_t *item) {
    strix_backend *be = m->base.be;
    size_t floats;
    *packed = NULL;
    *item = 0;
    STRIX_TRY(strix_gemm_pack_b(be, g, NULL, &floats));
    if (floats == 0) return STRIX_OK;
    int64_t shape[1] = {(int64_t)floats};
    STRIX_TRY(strix_tensor_ensure(be, &m->work->wpack, 1, shape));
    STRIX_TRY(strix_gemm_pack_b(be, g, m->work->wpack.data, &floats));
    *packed = m->work->wpack.data;
    *item = floats / g->batch;
    return STRIX_OK;
}

/* One direction of one layer over all steps: input `in` (T, B, I_l) time-major. */
static strix_status dir_forward(strix_rnn *m, int l, int d, const float *in, size_t I_l,
                                const strix_tensor *h0, const strix_tensor *c0) {
    strix_backend *be = m->base.be;
    struct strix_rnn_work *w = m->work;
    strix_rnn_dir_work *rd = &w->dir[l * m->dirs + d];
    int idx = l * m->dirs + d;
    strix_rnn_mode mode = m->cfg.mode;
    size_t B = (size_t)w->B, T = (size_t)w->T, H = (size_t)m->cfg.hidden_size;
    size_t Hr = (size_t)m->out_size, G = (size_t)m->gates, BH = B * H, TBH = T * BH, BHr = B * Hr;
    bool proj = m->weight_hr[idx] != NULL;
    int64_t sp[4] = {(int64_t)G, (int64_t)T, (int64_t)B, (int64_t)H};
    int64_t ss[3] = {(int64_t)T + 1, (int64_t)B, (int64_t)H};
    int64_t sh[3] = {(int64_t)T + 1, (int64_t)B, (int64_t)Hr};
    STRIX_TRY(strix_tensor_ensure(be, &rd->p, 4, sp));
    STRIX_TRY(strix_tensor_ensure(be, &rd->hs, 3, sh));
    if (mode == STRIX_RNN_LSTM) {
        STRIX_TRY(strix_tensor_ensure(be, &rd->cs, 3, ss));
        STRIX_TRY(strix_tensor_ensure(be, &rd->tc, 3, sp + 1));
    }
    if (proj) STRIX_TRY(strix_tensor_ensure(be, &rd->hu, 3, sp + 1));
    if (mode == STRIX_RNN_GRU) {
        STRIX_TRY(strix_tensor_ensure(be, &rd->hn, 3, sp + 1));
        STRIX_TRY(strix_tensor_ensure(be, &rd->npre, 3, sp + 1));
    }
    const float *wih = m->weight_ih[idx]->data, *whh = m->weight_hh[idx]->data;
    float *P = rd->p.data;
    // input part of every gate over all steps: P[g] (TB, H) = in (TB, I_l) · W_ih[g]ᵀ
    strix_gemm_batch gb = {.a = in, .lda = I_l, .stride_a = 0, .ta = false,
                           .b = wih, .ldb = I_l, .stride_b = H * I_l, .tb = true,
                           .c = P, .ldc = H, .stride_c = TBH,
                           .m = T * B, .k = I_l, .n = H, .batch = G, .alpha = 1.0f,
                           .beta = 0.0f};
    STRIX_TRY(strix_gemm_batched(be, &gb));
    bool gru = mode == STRIX_RNN_GRU;
    if (m->bias_ih[idx]) {
        const float *bih = m->bias_ih[idx]->data, *bhh = m->bias_hh[idx]->data;
        for (size_t g = 0; g < G; g++) {
            STRIX_TRY(strix_add_row_vector(be, P + g * TBH, bih + g * H, P + g * TBH, T * B, H));
            if (!(gru && g == 2))
                STRIX_TRY(strix_add_row_vector(be, P + g * TBH, bhh + g * H, P + g * TBH, T * B,
                                               H));
        }
    }
    if (gru) { // hn starts as b_hn; each step adds h_prev·W_hnᵀ
        STRIX_TRY(strix_fill(be, rd->hn.data, 0.0f, TBH));
        if (m->bias_hh[idx])
            STRIX_TRY(strix_add_row_vector(be, rd->hn.data, m->bias_hh[idx]->data + 2 * H,
                                           rd->hn.data, T * B, H));
    }
    // W_hh[g]ᵀ of every gate packed once for the T steps
    strix_gemm_batch hb = {.b = whh, .ldb = Hr, .stride_b = H * Hr, .tb = true,
                           .m = B, .k = Hr, .n = H, .batch = G};
    const float *packed;
    size_t packed_item;
    STRIX_TRY(pack_hh(m, &hb, &packed, &packed_item));
    size_t s0 = d == 0 ? 0 : T; // slot of h0
    STRIX_TRY(load_slice(be, rd->hs.data + s0 * BHr, h0, idx, BHr));
    if (mode == STRIX_RNN_LSTM) STRIX_TRY(load_slice(be, rd->cs.data + s0 * BH, c0, idx, BH));
    for (size_t k = 0; k < T; k++) {
        size_t t = d == 0 ? k : T - 1 - k;
        size_t sprev = d == 0 ? t : t + 1, sout = d == 0 ? t + 1 : t;
        const float *hprev = rd->hs.data + sprev * BHr;
        float *hout = rd->hs.data + sout * BHr;
        // P[g][t] (B, H) += h_prev · W_hh[g]ᵀ for every gate in one batched call (GRU's n
        // block goes to hn instead, a call of its own)
        size_t Gb = gru ? 2 : G;
        strix_gemm_batch rb = {.a = hprev, .lda = Hr, .stride_a = 0, .ta = false,
                               .b = whh, .ldb = Hr, .stride_b = H * Hr, .tb = true,
                               .c = P + t * BH, .ldc = H, .stride_c = TBH,
                               .m = B, .k = Hr, .n = H, .batch = Gb, .alpha = 1.0f, .beta = 1.0f,
                               .packed_b = packed};
        STRIX_TRY(strix_gemm_batched(be, &rb));
        if (gru && packed) { // item 2 of the packing: W_hn
            rb.b = whh + 2 * H * Hr;
            rb.c = rd->hn.data + t * BH;
            rb.batch = 1;
            rb.packed_b = packed + 2 * packed_item;
            STRIX_TRY(strix_gemm_batched(be, &rb));
        } else if (gru) {
            STRIX_TRY(strix_gemm_ex(be, hprev, false, whh + 2 * H * Hr, true,
                                    rd->hn.data + t * BH, B, Hr, H, 1.0f));
        }
        float *p0 = P + t * BH, *p1 = p0 + TBH, *p2 = p1 + TBH, *p3 = p2 + TBH;
        strix_cell_args a = {{0}, {0}, 0.0f};
        if (is_elman(mode)) {
            strix_act act = mode == STRIX_RNN_RELU ? STRIX_ACT_RELU : STRIX_ACT_TANH;
            STRIX_TRY(strix_elementwise(be, act, p0, hout, BH));
        } else if (mode == STRIX_RNN_LSTM) {
            STRIX_TRY(strix_elementwise(be, STRIX_ACT_SIGMOID, p0, p0, BH));
            STRIX_TRY(strix_elementwise(be, STRIX_ACT_SIGMOID, p1, p1, BH));
            STRIX_TRY(strix_elementwise(be, STRIX_ACT_TANH, p2, p2, BH));
            STRIX_TRY(strix_elementwise(be, STRIX_ACT_SIGMOID, p3, p3, BH));
            a.in[0] = p0;
            a.in[1] = p1;
            a.in[2] = p2;
            a.in[3] = p3;
            a.in[4] = rd->cs.data + sprev * BH;
            a.out[0] = rd->cs.data + sout * BH;
            a.out[1] = rd->tc.data + t * BH;
            a.out[2] = proj ? rd->hu.data + t * BH : hout;
            STRIX_TRY(strix_recurrent_cell(be, STRIX_CELL_LSTM_FORWARD, &a, BH));
            if (proj) // h_t (B, Hr) = u_t (B, H) · W_hrᵀ
                STRIX_TRY(strix_gemm_ex(be, a.out[2], false, m->weight_hr[idx]->data, true, hout,
                                        B, H, Hr, 0.0f));
        } else {
            STRIX_TRY(strix_elementwise(be, STRIX_ACT_SIGMOID, p0, p0, BH)); // r
            STRIX_TRY(strix_elementwise(be, STRIX_ACT_SIGMOID, p1, p1, BH)); // z
            a.in[0] = p1;
            a.in[1] = p0;
            a.in[2] = p2;
            a.in[3] = rd->hn.data + t * BH;
            a.in[4] = hprev;
            a.out[0] = rd->npre.data + t * BH;
            a.out[1] = p2; // n replaces n_x (the cell reads its inputs before it writes)
            a.out[2] = hout;
            STRIX_TRY(strix_recurrent_cell(be, STRIX_CELL_GRU_FORWARD, &a, BH));
        }
    }
    // the layer output's column block of this direction, and the final states
    size_t DH = (size_t)m->dirs * Hr;
    STRIX_TRY(strix_copy_2d(be, w->layer[l].y.data + (size_t)d * Hr, DH,
                            rd->hs.data + (d == 0 ? BHr : 0), Hr, T * B, Hr));
    size_t slast = d == 0 ? T : 0;
    STRIX_TRY(strix_copy(be, w->h_n.data + (size_t)idx * BHr, rd->hs.data + slast * BHr,
                         BHr * sizeof(float), STRIX_COPY_D2D));
    if (mode == STRIX_RNN_LSTM)
        STRIX_TRY(strix_copy(be, w->c_n.data + (size_t)idx * BH, rd->cs.data + slast * BH,
                             BH * sizeof(float), STRIX_COPY_D2D));
    return STRIX_OK;
}

strix_status strix_rnn_forward(strix_rnn *m, const strix_tensor *x, const strix_tensor *h0,
                               const strix_tensor *c0, const strix_tensor **y,
                               const strix_tensor **h_n, const strix_tensor **c_n) {
    STRIX_ASSERT(m->weight_ih[0]->data != NULL, "recurrent module: parameters not allocated");
    const char *who = mode_name(m->cfg.mode);
    strix_backend *be = m->base.be;
    struct strix_rnn_work *w = m->work;
    bool lstm = m->cfg.mode == STRIX_RNN_LSTM;
    if (x->ndim != 3 || x->shape[2] != m->cfg.input_size || x->shape[0] < 1 || x->shape[1] < 1)
        return strix_error(STRIX_ERR_SHAPE, "%s: input must be %s with I = %d and B, T >= 1 "
                           "(got %d dims, last %lld)", who,
                           m->cfg.batch_first ? "(B,T,I)" : "(T,B,I)", m->cfg.input_size,
                           x->ndim, x->ndim >= 1 ? (long long)x->shape[x->ndim - 1] : -1LL);
    int64_t B = m->cfg.batch_first ? x->shape[0] : x->shape[1];
    int64_t T = m->cfg.batch_first ? x->shape[1] : x->shape[0];
    if (c0 && !lstm) return strix_error(STRIX_ERR_ARG, "%s takes no c0 (LSTM only)", who);
    if (h0) STRIX_TRY(check_state(m, "h0", h0, B, m->out_size));
    if (c0) STRIX_TRY(check_state(m, "c0", c0, B, m->cfg.hidden_size));
    w->T = 0; // no valid forward until this one completes
    w->B = B;
    size_t I = (size_t)m->cfg.input_size, H = (size_t)m->cfg.hidden_size;
    size_t DH = (size_t)m->dirs * (size_t)m->out_size, L = (size_t)m->cfg.num_layers;
    int64_t sst[3] = {(int64_t)(L * (size_t)m->dirs), B, (int64_t)H};
    int64_t ssh[3] = {sst[0], B, (int64_t)m->out_size};
    STRIX_TRY(strix_tensor_ensure(be, &w->h_n, 3, ssh));
    if (lstm) STRIX_TRY(strix_tensor_ensure(be, &w->c_n, 3, sst));
    w->x = nn_view_of(x);
    const float *in = x->data;
    if (m->cfg.batch_first) {
        int64_t st[3] = {T, B, (int64_t)I};
        STRIX_TRY(strix_tensor_ensure(be, &w->xtm, 3, st));
        STRIX_TRY(transpose_bt(be, w->xtm.data, x->data, (size_t)B, (size_t)T, I, true));
        in = w->xtm.data;
    }
    w->T = T;
    for (size_t l = 0; l < L; l++) {
        int64_t sy[3] = {T, B, (int64_t)DH};
        strix_status s = strix_tensor_ensure(be, &w->layer[l].y, 3, sy);
        for (int d = 0; d < m->dirs && s == STRIX_OK; d++)
            s = dir_forward(m, (int)l, d, in, l == 0 ? I : DH, h0, c0);
        if (s != STRIX_OK) {
            w->T = 0;
            return s;
        }
        in = w->layer[l].y.data;
        strix_rnn_layer_work *lw = &w->layer[l];
        lw->dropped = m->training && m->cfg.dropout > 0.0f && l + 1 < L;
        if (lw->dropped) {
            float p = m->cfg.dropout, scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
            size_t n = (size_t)strix_tensor_numel(&lw->y);
            s = strix_tensor_ensure(be, &lw->yd, 3, sy);
            if (s == STRIX_OK)
                s = strix_dropout_forward(be, lw->y.data, lw->yd.data, NULL, n, p, scale,
                                          m->seed, m->offset);
            if (s != STRIX_OK) {
                w->T = 0;
                return s;
            }
            lw->offset = m->offset;
            m->offset += n;
            in = lw->yd.data;
        }
    }
    const strix_tensor *out = &w->layer[L - 1].y;
    if (m->cfg.batch_first) {
        int64_t so[3] = {B, T, (int64_t)DH};
        strix_status s = strix_tensor_ensure(be, &w->out, 3, so);
        if (s == STRIX_OK)
            s = transpose_bt(be, w->out.data, out->data, (size_t)B, (size_t)T, DH, false);
        if (s != STRIX_OK) {
            w->T = 0;
            return s;
        }
        out = &w->out;
    }
    if (y) *y = out;
    if (h_n) *h_n = &w->h_n;
    if (c_n) *c_n = lstm ? &w->c_n : NULL;
    return STRIX_OK;
}

// ---- backward ----------------------------------------------------------------------------------

/* One step's share of gate q in dh: sb's C (+)= a · W_hh[q] (sb: the packed batch of
 * dir_backward with batch 1), beta 0 or 1 as strix_gemm_ex's; the plain strix_gemm_ex where
 * nothing is packed. */
static strix_status step_dh(strix_backend *be, const strix_gemm_batch *sb, const float *a, size_t q,
                            const float *packed, size_t packed_item, float beta) {
    if (!packed)
        return strix_gemm_ex(be, a, false, sb->b + q * sb->stride_b, false, sb->c, sb->m, sb->k,
                             sb->n, beta);
    strix_gemm_batch g = *sb;
    g.a = a;
    g.b = sb->b + q * sb->stride_b;
    g.packed_b = packed + q * packed_item;
    g.beta = beta;
    return strix_gemm_batched(be, &g);
}

/* Backward of one direction of layer l: g (T, B, dirs·H) the gradient of the layer output,
 * in (T, B, I_l) its input; dX (T, B, I_l) gets `=` (d == 0) or `+=` (d == 1). */
static strix_status dir_backward(strix_rnn *m, int l, int d, const float *g, const float *in,
                                 size_t I_l, float *dX, const strix_tensor *dh_n,
                                 const strix_tensor *dc_n) {
    strix_backend *be = m->base.be;
    struct strix_rnn_work *w = m->work;
    int idx = l * m->dirs + d;
    strix_rnn_dir_work *rd = &w->dir[idx];
    strix_rnn_mode mode = m->cfg.mode;
    bool gru = mode == STRIX_RNN_GRU, lstm = mode == STRIX_RNN_LSTM;
    size_t B = (size_t)w->B, T = (size_t)w->T, H = (size_t)m->cfg.hidden_size;
    size_t G = (size_t)m->gates, BH = B * H, TBH = T * BH, Hr = (size_t)m->out_size;
    size_t BHr = B * Hr, DH = (size_t)m->dirs * Hr;
    const strix_param *whr = m->weight_hr[idx];
    int64_t sp[4] = {(int64_t)G, (int64_t)T, (int64_t)B, (int64_t)H};
    int64_t sh[3] = {(int64_t)T, (int64_t)B, (int64_t)Hr};
    STRIX_TRY(strix_tensor_ensure(be, &rd->dp, 4, sp));
    if (gru) STRIX_TRY(strix_tensor_ensure(be, &rd->dhn, 3, sp + 1));
    if (whr) STRIX_TRY(strix_tensor_ensure(be, &rd->dhp, 3, sh));
    const float *gh = g;
    if (m->dirs > 1) {
        STRIX_TRY(strix_tensor_ensure(be, &rd->gh, 3, sh));
        STRIX_TRY(strix_copy_2d(be, rd->gh.data, Hr, g + (size_t)d * Hr, DH, T * B, Hr));
        gh = rd->gh.data;
    }
    float *dh = w->dh.data, *dc = w->dc.data, *dP = rd->dp.data;
    const float *P = rd->p.data, *whh = m->weight_hh[idx]->data;
    STRIX_TRY(load_slice(be, dh, dh_n, idx, BHr));
    if (lstm) STRIX_TRY(load_slice(be, dc, dc_n, idx, BH));
    // dh (B, Hr) (+)= dP[q]_t (B, H) · W_hh[q] (H, Hr): every gate's W_hh packed once
    strix_gemm_batch sb = {.b = whh, .ldb = Hr, .stride_b = H * Hr, .tb = false, .lda = H,
                           .c = dh, .ldc = Hr, .m = B, .k = H, .n = Hr, .batch = G,
                           .alpha = 1.0f};
    const float *packed;
    size_t packed_item;
    STRIX_TRY(pack_hh(m, &sb, &packed, &packed_item));
    sb.batch = 1;
    for (size_t k = 0; k < T; k++) {
        size_t t = d == 0 ? T - 1 - k : k;
        size_t sprev = d == 0 ? t : t + 1, sout = d == 0 ? t + 1 : t;
        const float *p0 = P + t * BH, *p1 = p0 + TBH, *p2 = p1 + TBH, *p3 = p2 + TBH;
        float *d0 = dP + t * BH, *d1 = d0 + TBH, *d2 = d1 + TBH, *d3 = d2 + TBH;
        strix_cell_args a = {{0}, {0}, 0.0f};
        a.in[0] = gh + t * BHr;
        a.in[1] = dh;
        if (is_elman(mode)) {
            a.in[2] = rd->hs.data + sout * BH;
            a.out[0] = d0;
            STRIX_TRY(strix_recurrent_cell(be, mode == STRIX_RNN_RELU ? STRIX_CELL_RNN_RELU_BACKWARD
                                                                      : STRIX_CELL_RNN_BACKWARD,
                                           &a, BH));
            STRIX_TRY(step_dh(be, &sb, d0, 0, packed, packed_item, 0.0f));
        } else if (lstm) {
            if (whr) { // h_t = u_t·W_hrᵀ: dhp_t = dh_t (B, Hr), du = dhp_t · W_hr (B, H)
                float *dhp_t = rd->dhp.data + t * BHr;
                STRIX_TRY(strix_add(be, a.in[0], dh, dhp_t, BHr));
                STRIX_TRY(strix_gemm_ex(be, dhp_t, false, whr->data, false, w->du.data, B, Hr, H,
                                        0.0f));
                a.in[0] = w->du.data;
                a.in[1] = NULL;
            }
            a.in[2] = dc;
            a.in[3] = p0;
            a.in[4] = p1;
            a.in[5] = p2;
            a.in[6] = p3;
            a.in[7] = rd->tc.data + t * BH;
            a.in[8] = rd->cs.data + sprev * BH;
            a.out[0] = d0;
            a.out[1] = d1;
            a.out[2] = d2;
            a.out[3] = d3;
            a.out[4] = dc;
            STRIX_TRY(strix_recurrent_cell(be, STRIX_CELL_LSTM_BACKWARD, &a, BH));
            for (size_t q = 0; q < G; q++)
                STRIX_TRY(step_dh(be, &sb, d0 + q * TBH, q, packed, packed_item,
                                  q == 0 ? 0.0f : 1.0f));
        } else {
            float *dhn_t = rd->dhn.data + t * BH;
            a.in[2] = p1;
            a.in[3] = p0;
            a.in[4] = p2;
            a.in[5] = rd->hn.data + t * BH;
            a.in[6] = rd->hs.data + sprev * BH;
            a.out[0] = dh; // the direct z·h_prev path; the GEMMs below add the rest
            a.out[1] = d1;
            a.out[2] = d2;
            a.out[3] = d0;
            a.out[4] = dhn_t;
            STRIX_TRY(strix_recurrent_cell(be, STRIX_CELL_GRU_BACKWARD, &a, BH));
            const float *src[3] = {d0, d1, dhn_t};
            for (size_t q = 0; q < G; q++)
                STRIX_TRY(step_dh(be, &sb, src[q], q, packed, packed_item, 1.0f));
        }
    }
    STRIX_TRY(strix_copy(be, w->dh0.data + (size_t)idx * BHr, dh, BHr * sizeof(float),
                         STRIX_COPY_D2D));
    if (lstm)
        STRIX_TRY(strix_copy(be, w->dc0.data + (size_t)idx * BH, dc, BH * sizeof(float),
                             STRIX_COPY_D2D));
    // parameter gradients over all steps; h_prev of t = 0 .. T-1 are TB contiguous rows
    const float *hprev = rd->hs.data + (d == 0 ? 0 : BHr);
    strix_param *wih = m->weight_ih[idx], *wh = m->weight_hh[idx];
    strix_param *bih = m->bias_ih[idx], *bhh = m->bias_hh[idx];
    for (size_t q = 0; q < G; q++) {
        const float *dq = dP + q * TBH;                                // input-side gate grad
        const float *hq = (gru && q == 2) ? rd->dhn.data : dq;        // hidden-side
        if (nn_wants_grad(wh))
            STRIX_TRY(strix_gemm_ex(be, hq, true, hprev, false, wh->grad + q * H * Hr, H, T * B,
                                    Hr, 1.0f));
        if (nn_wants_grad(wih))
            STRIX_TRY(strix_gemm_ex(be, dq, true, in, false, wih->grad + q * H * I_l, H, T * B,
                                    I_l, 1.0f));
        if (bih && nn_wants_grad(bih))
            STRIX_TRY(strix_column_sums(be, dq, bih->grad + q * H, T * B, H, 1.0f));
        if (bhh && nn_wants_grad(bhh))
            STRIX_TRY(strix_column_sums(be, hq, bhh->grad + q * H, T * B, H, 1.0f));
    }
    if (whr && nn_wants_grad(whr)) // dW_hr (Hr, H) += Σ_t dhp_tᵀ · u_t
        STRIX_TRY(strix_gemm_ex(be, rd->dhp.data, true, rd->hu.data, false, whr->grad, Hr, T * B,
                                H, 1.0f));
    // gradient of the layer input: dX (TB, I_l) (+)= Σ_q dP[q] (TB, H) · W_ih[q] (H, I_l)
    for (size_t q = 0; q < G; q++)
        STRIX_TRY(strix_gemm_ex(be, dP + q * TBH, false, wih->data + q * H * I_l, false, dX,
                                T * B, H, I_l, (d == 0 && q == 0) ? 0.0f : 1.0f));
    return STRIX_OK;
}

/* What backward and relevance share before their walk back in time: checks of the signal of y
 * (gradient or relevance) and of h_n, c_n (`hn_name`, `cn_name` in errors) against the last
 * forward, the per-step and h0/c0 buffers, and y's signal in time-major order (*tm: gy's data,
 * or dytm holding it transposed). */
static strix_status reverse_begin(strix_rnn *m, const char *who, const char *hn_name,
                                  const char *cn_name, const strix_tensor *gy,
                                  const strix_tensor *ghn, const strix_tensor *gcn,
                                  const float **tm) {
    struct strix_rnn_work *w = m->work;
    strix_backend *be = m->base.be;
    bool lstm = m->cfg.mode == STRIX_RNN_LSTM;
    const strix_tensor *yref = m->cfg.batch_first ? &w->out : &w->layer[m->cfg.num_layers - 1].y;
    STRIX_TRY(nn_check_same(who, gy, yref));
    if (gcn && !lstm)
        return strix_error(STRIX_ERR_ARG, "%s takes no %s (LSTM only)", who, cn_name);
    if (ghn) STRIX_TRY(check_state(m, hn_name, ghn, w->B, m->out_size));
    if (gcn) STRIX_TRY(check_state(m, cn_name, gcn, w->B, m->cfg.hidden_size));
    size_t B = (size_t)w->B, T = (size_t)w->T, DH = (size_t)m->dirs * m->out_size;
    int64_t sbh[2] = {(int64_t)B, (int64_t)m->cfg.hidden_size}, sbr[2] = {sbh[0], m->out_size};
    STRIX_TRY(strix_tensor_ensure(be, &w->dh, 2, sbr));
    STRIX_TRY(strix_tensor_ensure(be, &w->dc, 2, sbh));
    if (m->cfg.proj_size > 0) STRIX_TRY(strix_tensor_ensure(be, &w->du, 2, sbh));
    STRIX_TRY(strix_tensor_ensure(be, &w->dh0, 3, w->h_n.shape));
    if (lstm) STRIX_TRY(strix_tensor_ensure(be, &w->dc0, 3, w->c_n.shape));
    *tm = gy->data;
    if (m->cfg.batch_first) {
        int64_t st[3] = {(int64_t)T, (int64_t)B, (int64_t)DH};
        STRIX_TRY(strix_tensor_ensure(be, &w->dytm, 3, st));
        STRIX_TRY(transpose_bt(be, w->dytm.data, gy->data, B, T, DH, true));
        *tm = w->dytm.data;
    }
    return STRIX_OK;
}

strix_status strix_rnn_backward(strix_rnn *m, const strix_tensor *dy, const strix_tensor *dh_n,
                                const strix_tensor *dc_n, const strix_tensor **dx,
                                const strix_tensor **dh0, const strix_tensor **dc0) {
    const char *who = mode_name(m->cfg.mode);
    struct strix_rnn_work *w = m->work;
    if (w->T == 0) return strix_error(STRIX_ERR_ARG, "%s: backward before a forward", who);
    const float *g;
    STRIX_TRY(reverse_begin(m, who, "dh_n", "dc_n", dy, dh_n, dc_n, &g));
    strix_backend *be = m->base.be;
    bool lstm = m->cfg.mode == STRIX_RNN_LSTM;
    size_t B = (size_t)w->B, T = (size_t)w->T, I = (size_t)m->cfg.input_size;
    size_t DH = (size_t)m->dirs * (size_t)m->out_size;
    int L = m->cfg.num_layers;
    for (int l = L - 1; l >= 0; l--) {
        size_t I_l = l == 0 ? I : DH;
        const float *in = l == 0 ? (m->cfg.batch_first ? w->xtm.data : w->x.data)
                        : w->layer[l - 1].dropped ? w->layer[l - 1].yd.data
                                                  : w->layer[l - 1].y.data;
        strix_rnn_layer_work *lw = &w->layer[l];
        if (lw->dropped) { // the gradient of y is dropout's backward of the next layer's dx
            float p = m->cfg.dropout, scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
            STRIX_TRY(strix_tensor_ensure(be, &lw->gd, 3, lw->y.shape));
            STRIX_TRY(strix_dropout_forward(be, g, lw->gd.data, NULL,
                                            (size_t)strix_tensor_numel(&lw->y), p, scale,
                                            m->seed, lw->offset));
            g = lw->gd.data;
        }
        int64_t sx[3] = {(int64_t)T, (int64_t)B, (int64_t)I_l};
        STRIX_TRY(strix_tensor_ensure(be, &w->layer[l].dx, 3, sx));
        for (int d = 0; d < m->dirs; d++)
            STRIX_TRY(dir_backward(m, l, d, g, in, I_l, w->layer[l].dx.data, dh_n, dc_n));
        g = w->layer[l].dx.data;
    }
    const strix_tensor *res = &w->layer[0].dx;
    if (m->cfg.batch_first) {
        STRIX_TRY(strix_tensor_ensure(be, &w->dx, 3, w->x.shape));
        STRIX_TRY(transpose_bt(be, w->dx.data, res->data, B, T, I, false));
        res = &w->dx;
    }
    if (dx) *dx = res;
    if (dh0) *dh0 = &w->dh0;
    if (dc0) *dc0 = lstm ? &w->dc0 : NULL;
    return STRIX_OK;
}

// ---- relevance (LRP) ---------------------------------------------------------------------------

/* Relevance of one direction of layer l (Arras et al. 2019; the rule is written at
 * strix_rnn_relevance): r (T, B, dirs·H) the relevance of the layer output, in (T, B, I_l) its
 * input; rX (T, B, I_l) gets `=` (d == 0) or `+=` (d == 1, through the scratch sx). The
 * relevance of this direction's h0/c0 goes to w->dh0/dc0 slice idx. Scratch: dp's gate blocks
 * (block 0 the denominators z of LSTM/RNN and GRU's per-step terms, block 2 the relevance of
 * the cell input g / candidate n / RNN pre-activation for all steps), w->dh, w->dc the running
 * relevance of h and c, whnt (H, H) GRU's W_hn transposed. */
static strix_status dir_relevance(strix_rnn *m, int l, int d, const float *r, const float *in,
                                  size_t I_l, float *rX, float *sx, float *whnt,
                                  const strix_tensor *r_hn, const strix_tensor *r_cn) {
    strix_backend *be = m->base.be;
    struct strix_rnn_work *w = m->work;
    int idx = l * m->dirs + d;
    strix_rnn_dir_work *rd = &w->dir[idx];
    strix_rnn_mode mode = m->cfg.mode;
    bool gru = mode == STRIX_RNN_GRU, lstm = mode == STRIX_RNN_LSTM;
    float eps = m->base.rule.epsilon;
    size_t B = (size_t)w->B, T = (size_t)w->T, H = (size_t)m->cfg.hidden_size;
    size_t G = (size_t)m->gates, BH = B * H, TBH = T * BH, Hr = (size_t)m->out_size;
    size_t BHr = B * Hr, DH = (size_t)m->dirs * Hr;
    const strix_param *whr = m->weight_hr[idx];
    int64_t sp[4] = {(int64_t)G, (int64_t)T, (int64_t)B, (int64_t)H};
    int64_t sh[3] = {(int64_t)T, (int64_t)B, (int64_t)Hr};
    STRIX_TRY(strix_tensor_ensure(be, &rd->dp, 4, sp));
    if (whr) STRIX_TRY(strix_tensor_ensure(be, &rd->dhp, 3, sh));
    const float *rown = r;
    if (m->dirs > 1) {
        STRIX_TRY(strix_tensor_ensure(be, &rd->gh, 3, sh));
        STRIX_TRY(strix_copy_2d(be, rd->gh.data, Hr, r + (size_t)d * Hr, DH, T * B, Hr));
        rown = rd->gh.data;
    }
    // the block of the cell input: LSTM's g (rows 2H..3H), GRU's n (2H..3H), RNN's only block
    size_t q = is_elman(mode) ? 0 : 2;
    const float *wih = m->weight_ih[idx]->data + q * H * I_l;
    const float *whh = m->weight_hh[idx]->data + q * H * Hr;
    const float *P = rd->p.data;
    float *Z = rd->dp.data, *RG = rd->dp.data + (G > 1 ? 2 : 0) * TBH;
    const float *hprev_all = rd->hs.data + (d == 0 ? 0 : BHr);
    if (!gru) { // z = in·W_ihᵀ + h_prev·W_hhᵀ of the cell input, + its biases with the flag
        float *zd = Z;
        if (G == 1) { // RNN: RG is dp itself, z goes to dhn
            STRIX_TRY(strix_tensor_ensure(be, &rd->dhn, 3, sp + 1));
            zd = rd->dhn.data;
        }
        STRIX_TRY(strix_gemm_ex(be, in, false, wih, true, zd, T * B, I_l, H, 0.0f));
        STRIX_TRY(strix_gemm_ex(be, hprev_all, false, whh, true, zd, T * B, Hr, H, 1.0f));
        if (m->base.rule.bias_in_denominator && m->bias_ih[idx]) {
            STRIX_TRY(strix_add_row_vector(be, zd, m->bias_ih[idx]->data + q * H, zd, T * B, H));
            STRIX_TRY(strix_add_row_vector(be, zd, m->bias_hh[idx]->data + q * H, zd, T * B, H));
        }
        Z = zd;
    } else { // W_hn (out, in) -> (in, out) for gru_lrp_hprev
        for (size_t k = 0; k < H; k++)
            STRIX_TRY(strix_copy_2d(be, whnt + k, H, whh + k * H, 1, H, 1));
    }
    float *rh = w->dh.data, *rc = w->dc.data;
    STRIX_TRY(load_slice(be, rh, r_hn, idx, BHr));
    if (lstm) STRIX_TRY(load_slice(be, rc, r_cn, idx, BH));
    for (size_t k = 0; k < T; k++) {
        size_t t = d == 0 ? T - 1 - k : k;
        size_t sprev = d == 0 ? t : t + 1, sout = d == 0 ? t + 1 : t;
        const float *hprev = rd->hs.data + sprev * BHr;
        const float *p0 = P + t * BH, *p1 = p0 + TBH, *p2 = p1 + TBH;
        float *rg = RG + t * BH;
        strix_cell_args a = {{0}, {0}, eps};
        if (lstm) {
            a.in[0] = rown + t * BHr;
            a.in[1] = rh;
            if (whr) { // h_t = u_t·W_hrᵀ (no bias): R_u by the epsilon rule with z = h_t
                float *rsum = rd->dhp.data + t * BHr;
                STRIX_TRY(strix_add(be, a.in[0], rh, rsum, BHr));
                STRIX_TRY(strix_lrp_linear(be, rd->hu.data + t * BH, whr->data,
                                           rd->hs.data + sout * BHr, rsum, w->du.data, B, H, Hr,
                                           eps));
                a.in[0] = w->du.data;
                a.in[1] = NULL;
            }
            a.in[2] = rc;
            a.in[3] = p0;
            a.in[4] = p1;
            a.in[5] = p2;
            a.in[6] = rd->cs.data + sprev * BH;
            a.in[7] = rd->cs.data + sout * BH;
            a.out[0] = rg;
            a.out[1] = rc;
            STRIX_TRY(strix_recurrent_cell(be, STRIX_CELL_LSTM_LRP, &a, BH));
            STRIX_TRY(strix_lrp_linear(be, hprev, whh, Z + t * BH, rg, rh, B, Hr, H, eps));
        } else if (gru) {
            float *direct = rd->dp.data + t * BH, *term = rd->dp.data + TBH + t * BH;
            a.in[0] = rown + t * BH;
            a.in[1] = rh;
            a.in[2] = p1;
            a.in[3] = p0;
            a.in[4] = p2;
            a.in[5] = rd->hn.data + t * BH;
            a.in[6] = hprev;
            a.in[7] = rd->hs.data + sout * BH;
            a.in[8] = rd->npre.data + t * BH;
            a.out[0] = direct;
            a.out[1] = rg;
            a.out[2] = term;
            STRIX_TRY(strix_recurrent_cell(be, STRIX_CELL_GRU_LRP, &a, BH));
            STRIX_TRY(strix_gru_lrp_hprev(be, hprev, whnt, rd->hn.data + t * BH, term, direct, rh,
                                          B, H, eps));
        } else { // h = tanh(z) or relu(z) hands all of R_h to z
            STRIX_TRY(strix_add(be, rown + t * BH, rh, rg, BH));
            STRIX_TRY(strix_lrp_linear(be, hprev, whh, Z + t * BH, rg, rh, B, H, H, eps));
        }
    }
    STRIX_TRY(strix_copy(be, w->dh0.data + (size_t)idx * BHr, rh, BHr * sizeof(float),
                         STRIX_COPY_D2D));
    if (lstm)
        STRIX_TRY(strix_copy(be, w->dc0.data + (size_t)idx * BH, rc, BH * sizeof(float),
                             STRIX_COPY_D2D));
    // the input's share of the cell input over all steps, with the same denominators
    const float *zin = gru ? rd->npre.data : Z;
    float *dst = d == 0 ? rX : sx;
    STRIX_TRY(strix_lrp_linear(be, in, wih, zin, RG, dst, T * B, I_l, H, eps));
    if (d > 0) STRIX_TRY(strix_add(be, rX, sx, rX, T * B * I_l));
    return STRIX_OK;
}

strix_status strix_rnn_relevance(strix_rnn *m, const strix_tensor *r_y, const strix_tensor *r_hn,
                                 const strix_tensor *r_cn, const strix_tensor **r_x,
                                 const strix_tensor **r_h0, const strix_tensor **r_c0) {
    const char *who = mode_name(m->cfg.mode);
    struct strix_rnn_work *w = m->work;
    if (w->T == 0) return strix_error(STRIX_ERR_ARG, "%s: relevance before a forward", who);
    STRIX_TRY(lrp_rule_check(&m->base.rule, who));
    if (m->base.rule.kind != STRIX_LRP_EPSILON)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s: only the epsilon rule (got %s)", who,
                           lrp_kind_name(m->base.rule.kind));
    const float *r;
    STRIX_TRY(reverse_begin(m, who, "the relevance of h_n", "the relevance of c_n", r_y, r_hn,
                            r_cn, &r));
    strix_backend *be = m->base.be;
    bool lstm = m->cfg.mode == STRIX_RNN_LSTM;
    size_t B = (size_t)w->B, T = (size_t)w->T, I = (size_t)m->cfg.input_size;
    size_t H = (size_t)m->cfg.hidden_size, DH = (size_t)m->dirs * (size_t)m->out_size;
    int L = m->cfg.num_layers;
    size_t widest = I > DH ? I : DH;
    size_t nsx = T * B * (widest > H ? widest : H); // +=-scratch of dirs 2, RNN's z
    float *sx = NULL, *whnt = NULL;
    strix_status s = lrp_scratch(be, nsx, &sx);
    if (s == STRIX_OK) s = lrp_scratch(be, H * H, &whnt);
    // a dropped layer output hands its relevance to y unchanged (dropped units got none)
    for (int l = L - 1; l >= 0 && s == STRIX_OK; l--) {
        size_t I_l = l == 0 ? I : DH;
        const float *in = l == 0 ? (m->cfg.batch_first ? w->xtm.data : w->x.data)
                        : w->layer[l - 1].dropped ? w->layer[l - 1].yd.data
                                                  : w->layer[l - 1].y.data;
        int64_t sx3[3] = {(int64_t)T, (int64_t)B, (int64_t)I_l};
        s = strix_tensor_ensure(be, &w->layer[l].dx, 3, sx3);
        for (int d = 0; d < m->dirs && s == STRIX_OK; d++)
            s = dir_relevance(m, l, d, r, in, I_l, w->layer[l].dx.data, sx, whnt, r_hn, r_cn);
        r = w->layer[l].dx.data;
    }
    strix_free(be, sx);
    strix_free(be, whnt);
    STRIX_TRY(s);
    const strix_tensor *res = &w->layer[0].dx;
    if (m->cfg.batch_first) {
        STRIX_TRY(strix_tensor_ensure(be, &w->dx, 3, w->x.shape));
        STRIX_TRY(transpose_bt(be, w->dx.data, res->data, B, T, I, false));
        res = &w->dx;
    }
    if (r_x) *r_x = res;
    if (r_h0) *r_h0 = &w->dh0;
    if (r_c0) *r_c0 = lstm ? &w->dc0 : NULL;
    return STRIX_OK;
}
