/*
 * attention.c - causal multi-head self-attention (nanoGPT CausalSelfAttention), with uniform or
 * heterogeneous head sizes, optional RoPE (Su et al. 2021, adjacent pairs) and a batch-1 KV-cache
 * decode path.
 *
 * Layout: qkv = c_attn(x) is one (B,T,3C) buffer, q | k | v; head h owns columns
 * [off_h, off_h + hs_h) of each third. Every GEMM reads those slices in place through
 * strix_gemm_batched (row stride 3C, batch stride T·3C), and P·V is written straight into the
 * head's column slice of the (B,T,C) buffer that feeds c_proj, so there is no split/merge copy.
 * Probabilities are stored (NH, B, T, T): head h's B blocks are contiguous, so one fused causal
 * softmax per head covers them with the head's own scale 1/sqrt(hs_h). The products tell the
 * backend their causal zeros (strix_gemm_skip), so the own GEMM skips most of the upper triangle.
 *
 * Relevance (AttnLRP, Achtibat et al. 2024) walks the same slices backwards: the bilinear rule
 * of P·V and q·kᵀ in its gradient×input form (the backward's GEMMs on r/stab(2·o), times the
 * operands), the softmax rule on recomputed scores, the RoPE rule on the pre-rotation q, k.
 *
 * Key padding masks (forward_ex's io.mask) fill the scores with -inf before the causal softmax;
 * the relevance pass masks its recomputed scores the same way.
 * Dropout (training mode, p > 0): each head's probabilities go through the counter-RNG dropout
 * primitive into att_drop, which P·V reads; backward re-applies the same (seed, offset) to dP
 * (in place) before the softmax backward, which needs the undropped P. p = 0 adds no work.
 * Not here: GQA; relevance after a dropping forward (refused).
 */
#include <math.h>
#include <stdlib.h>

#include "nn/rules_internal.h"
#include "nn_internal.h"

/* The caches and scratch of one attention module (strix_attention.work): what forward keeps for
 * backward and relevance, the decode buffers of the module's own KV cache, relevance scratch.
 * Private to this file; callers see the results through strix_attention_relevance_qkv and
 * strix_attention_softmax_gap. */
struct strix_attention_work {
    int B, T;                            /* shape of the last forward; B 0 after a decode step */
    const float *keep;                   /* the last forward's key mask (B,T) or NULL (kept
                                          * pointer: relevance masks its recomputed scores) */
    strix_tensor att;                    /* (NH, B, T, T) probabilities */
    strix_tensor att_drop;               /* (NH, B, T, T) dropped probabilities (dropout only) */
    bool dropped;                        /* the last forward dropped: backward follows its mask
                                          * (drop_seed, drop_at), relevance refuses */
    uint64_t drop_at;                    /* the offset the last dropping forward used */
    strix_tensor y;                      /* (B,T,C) head outputs before c_proj */
    strix_tensor datt;                   /* (NH, B, T, T) */
    strix_tensor dqkv;                   /* (B,T,3C) */
    strix_tensor kv_cache;               /* (block_size, 3C): rows of rotated qkv (decode) */
    strix_tensor dec_att;                /* (NH, block_size) decode scores/probabilities */
    strix_tensor lrp_w;                  /* (B,T,C) r_y/stab(2y), the P·V bilinear weights */
    strix_tensor lrp_qkv;                /* (B,T,3C) relevance of q|k|v */
    strix_tensor lrp_raw;                /* (B,T,3C) c_attn output before RoPE (RoPE only) */
    strix_tensor lrp_p, lrp_s, lrp_x;    /* (B,T,T) one head: r of P then of the scores; q·kᵀ;
                                          * scale·q·kᵀ masked with -inf */
    strix_tensor lrp_rope;               /* (3, B·T, max hs) contiguous head slices for lrp_rope */
    double lrp_softmax_gap;              /* Σ r_P − Σ r_scores over heads in the last relevance */
};

static strix_status vt_forward(strix_module *m, const strix_tensor *x, const strix_tensor **y) {
    return strix_attention_forward((strix_attention *)m, x, y);
}
static strix_status vt_backward(strix_module *m, const strix_tensor *dy, const strix_tensor **dx) {
    return strix_attention_backward((strix_attention *)m, dy, dx);
}
static strix_status vt_relevance(strix_module *m, const strix_tensor *r, const strix_tensor **ri) {
    return strix_attention_relevance((strix_attention *)m, r, ri);
}
/* Whether a child module can be explained with rule kind k. */
static bool child_supports(const strix_module *m, strix_lrp_kind k) {
    if (!m->vt->relevance) return false;
    return m->vt->supports_rule ? m->vt->supports_rule(m, k) : k == STRIX_LRP_EPSILON;
}
/* The rule kind is the projections' (the attention's own rules use only its epsilon). */
static bool vt_supports_rule(const strix_module *m, strix_lrp_kind k) {
    const strix_attention *a = (const strix_attention *)m;
    return child_supports(&a->c_attn->base, k) && child_supports(&a->c_proj->base, k);
}
static strix_module *vt_child(strix_module *m, int i) {
    strix_attention *a = (strix_attention *)m;
    return i == 0 ? &a->c_attn->base : i == 1 ? &a->c_proj->base : NULL;
}
static void vt_destroy(strix_module *m) {
    strix_attention *a = (strix_attention *)m;
    strix_module_free(&a->c_attn->base);
    strix_module_free(&a->c_proj->base);
    strix_free(a->base.be, a->rope_cos);
    strix_free(a->base.be, a->rope_sin);
    struct strix_attention_work *w = a->work;
    strix_tensor_free(&w->att_drop);
    strix_tensor *ts[] = {&w->att,     &w->y,     &w->datt,    &w->dqkv,    &w->kv_cache,
                          &w->dec_att, &w->lrp_w, &w->lrp_qkv, &w->lrp_raw, &w->lrp_p,
                          &w->lrp_s,   &w->lrp_x, &w->lrp_rope};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) strix_tensor_free(ts[i]);
    free(a->work);
    free(a);
}
/* The train/eval mode: only the dropout of the probabilities depends on it. */
static void vt_set_training(strix_module *m, bool training) {
    ((strix_attention *)m)->training = training;
}
static bool vt_get_training(const strix_module *m) {
    return ((const strix_attention *)m)->training;
}
/* The general form (KV-cache states) is at the end of the file. */
static strix_status vt_forward_ex(strix_module *mod, strix_module_io *io);
static strix_status vt_state_new(strix_module *m, strix_module_state **out);
static void vt_state_free(strix_module *m, strix_module_state *s);
static const strix_module_i attention_vt = {
    .type = "CausalSelfAttention", .forward = vt_forward, .backward = vt_backward,
    .destroy = vt_destroy, .relevance = vt_relevance, .supports_rule = vt_supports_rule,
    .child = vt_child, .forward_ex = vt_forward_ex, .state_new = vt_state_new,
    .state_free = vt_state_free, .set_training = vt_set_training,
    .get_training = vt_get_training};

// ---- construction ------------------------------------------------------------------------------

/* Validates the head layout and fills sizes/offsets. */
static strix_status head_layout(const strix_attention_config *cfg, int *size, int *off) {
    int C = cfg->d_model, NH = cfg->n_head;
    if (C <= 0) return strix_error(STRIX_ERR_ARG, "attention: d_model %d must be positive", C);
    if (NH <= 0 || NH > STRIX_ATTN_MAX_HEADS)
        return strix_error(STRIX_ERR_ARG, "attention: n_head %d not in [1, %d]", NH,
                           STRIX_ATTN_MAX_HEADS);
    int sum = 0;
    for (int h = 0; h < NH; h++) {
        if (cfg->head_sizes) {
            size[h] = cfg->head_sizes[h];
            if (size[h] <= 0)
                return strix_error(STRIX_ERR_ARG, "attention: head %d has size %d", h, size[h]);
        } else {
            if (C % NH != 0)
                return strix_error(STRIX_ERR_ARG, "n_head %d does not divide d_model %d", NH, C);
            size[h] = C / NH;
        }
        off[h] = sum;
        sum += size[h];
    }
    if (sum != C)
        return strix_error(STRIX_ERR_ARG, "head sizes sum to %d, not d_model %d", sum, C);
    if (cfg->rope)
        for (int h = 0; h < NH; h++)
            if (size[h] % 2 != 0)
                return strix_error(STRIX_ERR_ARG, "RoPE needs an even head size (got %d)",
                                   size[h]);
    return STRIX_OK;
}

/* cos/sin tables per head: (block_size, hs/2), angle pos / base^(2i/hs), computed in double. */
static strix_status build_rope_tables(strix_attention *m) {
    size_t total = 0;
    for (int h = 0; h < m->NH; h++) {
        m->rope_off[h] = total;
        total += (size_t)m->block_size * (size_t)(m->head_size[h] / 2);
    }
    float *hc = malloc(total * sizeof(float)), *hsn = malloc(total * sizeof(float));
    strix_status s = STRIX_OK;
    if (!hc || !hsn) s = NN_ALLOC_FAIL("attention RoPE");
    for (int h = 0; h < m->NH && s == STRIX_OK; h++) {
        int half = m->head_size[h] / 2;
        for (int p = 0; p < m->block_size; p++)
            for (int i = 0; i < half; i++) {
                double inv_freq = 1.0 / pow((double)m->rope_base, 2.0 * i / m->head_size[h]);
                double angle = (double)p * inv_freq;
                size_t at = m->rope_off[h] + (size_t)p * (size_t)half + (size_t)i;
                hc[at] = (float)cos(angle);
                hsn[at] = (float)sin(angle);
            }
    }
    strix_backend *be = m->base.be;
    if (s == STRIX_OK) s = strix_alloc(be, total * sizeof(float), (void **)&m->rope_cos);
    if (s == STRIX_OK) s = strix_alloc(be, total * sizeof(float), (void **)&m->rope_sin);
    if (s == STRIX_OK) s = strix_copy(be, m->rope_cos, hc, total * sizeof(float), STRIX_COPY_H2D);
    if (s == STRIX_OK) s = strix_copy(be, m->rope_sin, hsn, total * sizeof(float), STRIX_COPY_H2D);
    free(hc);
    free(hsn);
    return s;
}

strix_status strix_attention_new(strix_params *ps, const char *prefix,
                                 const strix_attention_config *cfg, strix_attention **out) {
    *out = NULL;
    int size[STRIX_ATTN_MAX_HEADS], off[STRIX_ATTN_MAX_HEADS];
    STRIX_TRY(head_layout(cfg, size, off));
    if (cfg->block_size <= 0)
        return strix_error(STRIX_ERR_ARG, "attention: block_size %d must be positive",
                           cfg->block_size);
    if (cfg->rope && !(cfg->rope_base > 0.0f))
        return strix_error(STRIX_ERR_ARG, "attention: rope_base %g must be positive",
                           (double)cfg->rope_base);
    if (!(cfg->dropout >= 0.0f && cfg->dropout < 1.0f))
        return strix_error(STRIX_ERR_ARG, "attention: dropout %g must be in [0, 1)",
                           (double)cfg->dropout);
    char name[STRIX_PARAM_NAME_MAX];
    strix_attention *m = calloc(1, sizeof *m);
    if (m) m->work = calloc(1, sizeof *m->work);
    if (!m || !m->work) {
        free(m);
        return NN_ALLOC_FAIL("attention");
    }
    m->base.vt = &attention_vt;
    m->base.be = ps->be;
    m->C = cfg->d_model;
    m->NH = cfg->n_head;
    m->block_size = cfg->block_size;
    m->rope = cfg->rope;
    m->rope_base = cfg->rope_base;
    m->dropout = cfg->dropout;
    m->training = true;
    for (int h = 0; h < m->NH; h++) {
        m->head_size[h] = size[h];
        m->head_off[h] = off[h];
    }
    strix_status s = nn_name(name, prefix, "c_attn");
    if (s == STRIX_OK)
        s = strix_linear_new(ps, name, m->C, 3 * m->C, cfg->bias, cfg->init_std, NULL, &m->c_attn);
    if (s == STRIX_OK) s = nn_name(name, prefix, "c_proj");
    if (s == STRIX_OK)
        s = strix_linear_new(ps, name, m->C, m->C, cfg->bias, cfg->proj_init_std, NULL,
                             &m->c_proj);
    if (s == STRIX_OK && m->rope) s = build_rope_tables(m);
    if (s != STRIX_OK) {
        if (m->c_attn) strix_module_free(&m->c_attn->base);
        if (m->c_proj) strix_module_free(&m->c_proj->base);
        strix_free(ps->be, m->rope_cos);
        strix_free(ps->be, m->rope_sin);
        free(m->work);
        free(m);
        return s;
    }
    *out = m;
    return STRIX_OK;
}

// ---- forward / backward ------------------------------------------------------------------------

static float head_scale(int hs) { return (float)(1.0 / sqrt((double)hs)); }

/* Rotates (or un-rotates) the q and k slices of every head of a (rows, 3C) buffer in place;
 * row r is at position r mod seq_len + pos0. */
static strix_status rope_qk(strix_attention *m, float *qkv, size_t rows, size_t seq_len,
                            size_t pos0, bool inverse) {
    size_t ld = 3 * (size_t)m->C;
    for (int h = 0; h < m->NH; h++) {
        const float *cs = m->rope_cos + m->rope_off[h], *sn = m->rope_sin + m->rope_off[h];
        for (int part = 0; part < 2; part++) { // q, then k
            float *p = qkv + (size_t)part * (size_t)m->C + (size_t)m->head_off[h];
            STRIX_TRY(strix_rope_rotate(m->base.be, p, ld, cs, sn, p, ld, rows, seq_len, pos0,
                                        (size_t)m->head_size[h], inverse));
        }
    }
    return STRIX_OK;
}

strix_status strix_attention_forward(strix_attention *m, const strix_tensor *x,
                                     const strix_tensor **y) {
    return strix_attention_forward_masked(m, x, NULL, y);
}

strix_status strix_attention_forward_masked(strix_attention *m, const strix_tensor *x,
                                            const strix_tensor *keep, const strix_tensor **y) {
    if (x->ndim != 3 || x->shape[2] != m->C || x->shape[1] > m->block_size || x->shape[1] < 1)
        return strix_error(STRIX_ERR_SHAPE, "attention: input must be (B, T<=%d, %d)",
                           m->block_size, m->C);
    if (keep && (keep->ndim != 2 || keep->shape[0] != x->shape[0] ||
                 keep->shape[1] != x->shape[1]))
        return strix_error(STRIX_ERR_SHAPE, "attention: the key mask must be (B, T) = (%lld, %lld)",
                           (long long)x->shape[0], (long long)x->shape[1]);
    strix_backend *be = m->base.be;
    size_t B = (size_t)x->shape[0], T = (size_t)x->shape[1], C = (size_t)m->C, NH = (size_t)m->NH;
    m->work->B = (int)B;
    m->work->T = (int)T;
    m->work->keep = keep ? keep->data : NULL;
    const strix_tensor *qkv_t;
    STRIX_TRY(strix_linear_forward(m->c_attn, x, &qkv_t));
    float *qkv = qkv_t->data;
    if (m->rope) STRIX_TRY(rope_qk(m, qkv, B * T, T, 0, false));

    int64_t att_shape[4] = {(int64_t)NH, (int64_t)B, (int64_t)T, (int64_t)T};
    STRIX_TRY(strix_tensor_ensure(be, &m->work->att, 4, att_shape));
    STRIX_TRY(nn_ensure_like(be, &m->work->y, x, (int64_t)C));
    bool drop = m->training && m->dropout > 0.0f && B > 0;
    m->work->dropped = drop;
    if (drop) {
        STRIX_TRY(strix_tensor_ensure(be, &m->work->att_drop, 4, att_shape));
        m->work->drop_at = m->drop_offset;
        m->drop_offset += NH * B * T * T;
    }
    if (B == 0) return strix_linear_forward(m->c_proj, &m->work->y, y);
    for (size_t h = 0; h < NH; h++) {
        size_t hs = (size_t)m->head_size[h], off = (size_t)m->head_off[h];
        float *att = m->work->att.data + h * B * T * T;
        float *pv = att; /* what P·V reads: P, or its dropout */
        // scores (T,T) = q_h · k_hᵀ for each b
        strix_gemm_batch s = {
            .a = qkv + off, .lda = 3 * C, .stride_a = T * 3 * C, .ta = false,
            .b = qkv + C + off, .ldb = 3 * C, .stride_b = T * 3 * C, .tb = true,
            .c = att, .ldc = T, .stride_c = T * T,
            .m = T, .k = hs, .n = T, .batch = B, .alpha = 1.0f, .beta = 0.0f,
            .skip = STRIX_GEMM_OUT_LOWER};
        STRIX_TRY(strix_gemm_batched(be, &s));
        // key padding: -inf where keep[b,j] == 0 (scale·-inf stays -inf; P is 0 there, so the
        // backward's softmax gradient is 0 there too)
        if (keep)
            STRIX_TRY(strix_attention_mask_fill(be, att, keep->data, B, 1, T, T, false, 0, 0,
                                                -INFINITY));
        STRIX_TRY(strix_attn_softmax_causal(be, att, att, B, T, head_scale((int)hs)));
        // dropout keeps the causal zeros zero, so the skip hints below still hold
        if (drop) {
            pv = m->work->att_drop.data + h * B * T * T;
            STRIX_TRY(strix_dropout_forward(be, att, pv, NULL, B * T * T, m->dropout,
                                            1.0f / (1.0f - m->dropout), m->drop_seed,
                                            m->work->drop_at + h * B * T * T));
        }
        // y_h (T,hs) = P (T,T) · v_h (T,hs), written at the head's columns of (B,T,C)
        strix_gemm_batch o = {
            .a = pv, .lda = T, .stride_a = T * T, .ta = false,
            .b = qkv + 2 * C + off, .ldb = 3 * C, .stride_b = T * 3 * C, .tb = false,
            .c = m->work->y.data + off, .ldc = C, .stride_c = T * C,
            .m = T, .k = T, .n = hs, .batch = B, .alpha = 1.0f, .beta = 0.0f,
            .skip = STRIX_GEMM_A_LOWER};
        STRIX_TRY(strix_gemm_batched(be, &o));
    }
    return strix_linear_forward(m->c_proj, &m->work->y, y);
}

strix_status strix_attention_backward(strix_attention *m, const strix_tensor *dy,
                                      const strix_tensor **dx) {
    strix_backend *be = m->base.be;
    if (m->work->B <= 0)
        return strix_error(STRIX_ERR_ARG, "attention backward: needs a forward first (a decode "
                                          "step overwrites the forward's buffers)");
    size_t B = (size_t)m->work->B, T = (size_t)m->work->T, C = (size_t)m->C, NH = (size_t)m->NH;
    const strix_tensor *dyh_t;
    STRIX_TRY(strix_linear_backward(m->c_proj, dy, &dyh_t));
    const float *dyh = dyh_t->data, *qkv = m->c_attn->work->out.data;
    STRIX_TRY(strix_tensor_ensure(be, &m->work->datt, 4, m->work->att.shape));
    STRIX_TRY(strix_tensor_ensure(be, &m->work->dqkv, 3, m->c_attn->work->out.shape));
    float *dqkv = m->work->dqkv.data;
    for (size_t h = 0; h < NH && B > 0; h++) {
        size_t hs = (size_t)m->head_size[h], off = (size_t)m->head_off[h];
        const float *att = m->work->att.data + h * B * T * T;
        const float *pv = m->work->dropped ? m->work->att_drop.data + h * B * T * T : att;
        float *datt = m->work->datt.data + h * B * T * T;
        // dP (T,T) = dy_h (T,hs) · v_hᵀ
        strix_gemm_batch dp = {
            .a = dyh + off, .lda = C, .stride_a = T * C, .ta = false,
            .b = qkv + 2 * C + off, .ldb = 3 * C, .stride_b = T * 3 * C, .tb = true,
            .c = datt, .ldc = T, .stride_c = T * T,
            .m = T, .k = hs, .n = T, .batch = B, .alpha = 1.0f, .beta = 0.0f,
            .skip = STRIX_GEMM_OUT_LOWER};
        STRIX_TRY(strix_gemm_batched(be, &dp));
        // dv_h (T,hs) = Pᵀ · dy_h (the dropped P when the forward dropped)
        strix_gemm_batch dv = {
            .a = pv, .lda = T, .stride_a = T * T, .ta = true,
            .b = dyh + off, .ldb = C, .stride_b = T * C, .tb = false,
            .c = dqkv + 2 * C + off, .ldc = 3 * C, .stride_c = T * 3 * C,
            .m = T, .k = T, .n = hs, .batch = B, .alpha = 1.0f, .beta = 0.0f,
            .skip = STRIX_GEMM_A_UPPER};
        STRIX_TRY(strix_gemm_batched(be, &dv));
        // through the dropout: the forward's mask and scale on dP, in place
        if (m->work->dropped)
            STRIX_TRY(strix_dropout_forward(be, datt, datt, NULL, B * T * T, m->dropout,
                                            1.0f / (1.0f - m->dropout), m->drop_seed,
                                            m->work->drop_at + h * B * T * T));
        // dS = scale·P⊙(dP − rowdot), in place
        STRIX_TRY(strix_attn_softmax_causal_backward(be, att, datt, datt, B, T,
                                                     head_scale((int)hs)));
        // dq_h = dS · k_h ; dk_h = dSᵀ · q_h
        strix_gemm_batch dq = {
            .a = datt, .lda = T, .stride_a = T * T, .ta = false,
            .b = qkv + C + off, .ldb = 3 * C, .stride_b = T * 3 * C, .tb = false,
            .c = dqkv + off, .ldc = 3 * C, .stride_c = T * 3 * C,
            .m = T, .k = T, .n = hs, .batch = B, .alpha = 1.0f, .beta = 0.0f,
            .skip = STRIX_GEMM_A_LOWER};
        STRIX_TRY(strix_gemm_batched(be, &dq));
        strix_gemm_batch dk = {
            .a = datt, .lda = T, .stride_a = T * T, .ta = true,
            .b = qkv + off, .ldb = 3 * C, .stride_b = T * 3 * C, .tb = false,
            .c = dqkv + C + off, .ldc = 3 * C, .stride_c = T * 3 * C,
            .m = T, .k = T, .n = hs, .batch = B, .alpha = 1.0f, .beta = 0.0f,
            .skip = STRIX_GEMM_A_UPPER};
        STRIX_TRY(strix_gemm_batched(be, &dk));
    }
    // the gradient w.r.t. the unrotated q,k is the inverse rotation of the rotated one
    if (m->rope && B > 0) STRIX_TRY(rope_qk(m, dqkv, B * T, T, 0, true));
    return strix_linear_backward(m->c_attn, &m->work->dqkv, dx);
}

// ---- relevance (AttnLRP) -----------------------------------------------------------------------

/* The RoPE rule on the q and k slices of g (B,T,3C), the relevance of the rotated q|k|v, in
 * place: the pre-rotation values are c_attn's output recomputed with the forward's own GEMM
 * (bit-identical), each head's slices are copied to contiguous rows for lrp_rope and back. */
static strix_status rope_relevance(strix_attention *m, float *g, float eps) {
    strix_backend *be = m->base.be;
    strix_linear *l = m->c_attn;
    size_t rows = (size_t)m->work->B * (size_t)m->work->T, C = (size_t)m->C, ld = 3 * C;
    STRIX_TRY(strix_tensor_ensure(be, &m->work->lrp_raw, l->work->out.ndim, l->work->out.shape));
    float *raw = m->work->lrp_raw.data;
    STRIX_TRY(strix_gemm_ex(be, l->work->x.data, false, l->weight->data, true, raw, rows, C, ld,
                            0.0f));
    if (l->bias) STRIX_TRY(strix_add_row_vector(be, raw, l->bias->data, raw, rows, ld));
    size_t hs_max = 0;
    for (int h = 0; h < m->NH; h++)
        if ((size_t)m->head_size[h] > hs_max) hs_max = (size_t)m->head_size[h];
    int64_t shape[3] = {3, (int64_t)rows, (int64_t)hs_max};
    STRIX_TRY(strix_tensor_ensure(be, &m->work->lrp_rope, 3, shape));
    float *xs = m->work->lrp_rope.data, *ys = xs + rows * hs_max, *rs = ys + rows * hs_max;
    const float *qkv = l->work->out.data;
    for (int h = 0; h < m->NH; h++) {
        size_t hs = (size_t)m->head_size[h];
        const float *cs = m->rope_cos + m->rope_off[h], *sn = m->rope_sin + m->rope_off[h];
        for (size_t part = 0; part < 2; part++) { // q, then k
            size_t col = part * C + (size_t)m->head_off[h];
            STRIX_TRY(strix_copy_2d(be, xs, hs, raw + col, ld, rows, hs));
            STRIX_TRY(strix_copy_2d(be, ys, hs, qkv + col, ld, rows, hs));
            STRIX_TRY(strix_copy_2d(be, rs, hs, g + col, ld, rows, hs));
            STRIX_TRY(strix_lrp_rope(be, xs, ys, rs, cs, sn, rs, rows, (size_t)m->work->T, hs,
                                     eps));
            STRIX_TRY(strix_copy_2d(be, g + col, ld, rs, hs, rows, hs));
        }
    }
    return STRIX_OK;
}

/* Relevance through one module's vtable slot. */
static strix_status sub_relevance(strix_module *m, const strix_tensor *r, const strix_tensor **ri) {
    if (!m->vt->relevance)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s has no relevance", m->vt->type);
    return m->vt->relevance(m, r, ri);
}

strix_status strix_attention_relevance(strix_attention *m, const strix_tensor *r_out,
                                       const strix_tensor **r_in) {
    strix_backend *be = m->base.be;
    if (m->work->B <= 0)
        return strix_error(STRIX_ERR_ARG, "attention relevance: needs a forward first (a decode "
                                          "step overwrites the forward's buffers)");
    if (m->work->dropped)
        return strix_error(STRIX_ERR_UNSUPPORTED, "attention relevance: the last forward dropped "
                           "probabilities (training mode); explain in eval mode");
    STRIX_TRY(nn_check_same("attention relevance", r_out, &m->c_proj->work->out));
    size_t B = (size_t)m->work->B, T = (size_t)m->work->T, C = (size_t)m->C, NH = (size_t)m->NH;
    size_t n = B * T * C, tt = B * T * T;
    float eps = m->base.rule.epsilon;
    m->work->lrp_softmax_gap = 0.0;
    const strix_tensor *ry;
    STRIX_TRY(sub_relevance(&m->c_proj->base, r_out, &ry));
    // w = r_y/stab(2·y): the bilinear weights of every head's P·v_h at once
    STRIX_TRY(strix_tensor_ensure(be, &m->work->lrp_w, m->work->y.ndim, m->work->y.shape));
    float *w = m->work->lrp_w.data;
    STRIX_TRY(strix_axpby(be, 2.0f, m->work->y.data, 0.0f, NULL, w, n));
    STRIX_TRY(strix_lrp_stabilized_divide(be, ry->data, w, NULL, w, n, eps,
                                          STRIX_LRP_GATE_NONE));
    int64_t tshape[3] = {(int64_t)B, (int64_t)T, (int64_t)T};
    STRIX_TRY(strix_tensor_ensure(be, &m->work->lrp_p, 3, tshape));
    STRIX_TRY(strix_tensor_ensure(be, &m->work->lrp_s, 3, tshape));
    STRIX_TRY(strix_tensor_ensure(be, &m->work->lrp_x, 3, tshape));
    STRIX_TRY(strix_tensor_ensure(be, &m->work->lrp_qkv, m->c_attn->work->out.ndim,
                                  m->c_attn->work->out.shape));
    const float *qkv = m->c_attn->work->out.data; /* q, k rotated when RoPE is on */
    float *g = m->work->lrp_qkv.data, *rp = m->work->lrp_p.data, *s = m->work->lrp_s.data;
    float *x = m->work->lrp_x.data;
    for (size_t h = 0; h < NH; h++) {
        size_t hs = (size_t)m->head_size[h], off = (size_t)m->head_off[h];
        const float *att = m->work->att.data + h * tt;
        // r_P = P ⊙ (w_h · v_hᵀ): full (T,T), so the masked zeros of P meet finite values
        strix_gemm_batch gp = {
            .a = w + off, .lda = C, .stride_a = T * C, .ta = false,
            .b = qkv + 2 * C + off, .ldb = 3 * C, .stride_b = T * 3 * C, .tb = true,
            .c = rp, .ldc = T, .stride_c = T * T,
            .m = T, .k = hs, .n = T, .batch = B, .alpha = 1.0f, .beta = 0.0f};
        STRIX_TRY(strix_gemm_batched(be, &gp));
        STRIX_TRY(strix_mul(be, att, rp, rp, tt));
        // g_v = Pᵀ · w_h (times v below)
        strix_gemm_batch gv = {
            .a = att, .lda = T, .stride_a = T * T, .ta = true,
            .b = w + off, .ldb = C, .stride_b = T * C, .tb = false,
            .c = g + 2 * C + off, .ldc = 3 * C, .stride_c = T * 3 * C,
            .m = T, .k = T, .n = hs, .batch = B, .alpha = 1.0f, .beta = 0.0f,
            .skip = STRIX_GEMM_A_UPPER};
        STRIX_TRY(strix_gemm_batched(be, &gv));
        // the softmax's input, recomputed: s = q_h·k_hᵀ, x = scale·s, -inf above the diagonal
        strix_gemm_batch gs = {
            .a = qkv + off, .lda = 3 * C, .stride_a = T * 3 * C, .ta = false,
            .b = qkv + C + off, .ldb = 3 * C, .stride_b = T * 3 * C, .tb = true,
            .c = s, .ldc = T, .stride_c = T * T,
            .m = T, .k = hs, .n = T, .batch = B, .alpha = 1.0f, .beta = 0.0f};
        STRIX_TRY(strix_gemm_batched(be, &gs));
        STRIX_TRY(strix_axpby(be, head_scale((int)hs), s, 0.0f, NULL, x, tt));
        STRIX_TRY(strix_attention_mask_fill(be, x, m->work->keep, B, 1, T, T, true, 0, 0,
                                            -INFINITY));
        // softmax rule r_x = x·(r_P − P·Σr_P) in place; the scale passes relevance on
        float sum_p = 0.0f, sum_x = 0.0f;
        STRIX_TRY(strix_sum(be, rp, tt, &sum_p));
        STRIX_TRY(strix_lrp_softmax_rows(be, x, att, rp, rp, B * T, T));
        STRIX_TRY(strix_sum(be, rp, tt, &sum_x));
        m->work->lrp_softmax_gap += (double)sum_p - (double)sum_x;
        // w_s = r_x/stab(2·s), 0 above the diagonal; g_q = w_s·k_h, g_k = w_sᵀ·q_h
        STRIX_TRY(strix_axpby(be, 2.0f, s, 0.0f, NULL, s, tt));
        STRIX_TRY(strix_lrp_stabilized_divide(be, rp, s, NULL, rp, tt, eps, STRIX_LRP_GATE_NONE));
        strix_gemm_batch gq = {
            .a = rp, .lda = T, .stride_a = T * T, .ta = false,
            .b = qkv + C + off, .ldb = 3 * C, .stride_b = T * 3 * C, .tb = false,
            .c = g + off, .ldc = 3 * C, .stride_c = T * 3 * C,
            .m = T, .k = T, .n = hs, .batch = B, .alpha = 1.0f, .beta = 0.0f,
            .skip = STRIX_GEMM_A_LOWER};
        STRIX_TRY(strix_gemm_batched(be, &gq));
        strix_gemm_batch gk = {
            .a = rp, .lda = T, .stride_a = T * T, .ta = true,
            .b = qkv + off, .ldb = 3 * C, .stride_b = T * 3 * C, .tb = false,
            .c = g + C + off, .ldc = 3 * C, .stride_c = T * 3 * C,
            .m = T, .k = T, .n = hs, .batch = B, .alpha = 1.0f, .beta = 0.0f,
            .skip = STRIX_GEMM_A_UPPER};
        STRIX_TRY(strix_gemm_batched(be, &gk));
    }
    // relevance of q|k|v = the gradient-like terms times the operands
    STRIX_TRY(strix_mul(be, g, qkv, g, 3 * n));
    if (!m->rope) return sub_relevance(&m->c_attn->base, &m->work->lrp_qkv, r_in);
    STRIX_TRY(rope_relevance(m, g, eps));
    /* c_attn's output was rotated in place by the forward; its rule takes the pre-rotation
     * output, which rope_relevance recomputed bit for bit into lrp_raw, as its z. */
    strix_linear *l = m->c_attn;
    return lrp_linear_relevance_ex(l, NULL, l->weight->data, l->bias ? l->bias->data : NULL,
                                   m->work->lrp_raw.data, &m->work->lrp_qkv, r_in);
}

// ---- KV-cache decoding -------------------------------------------------------------------------

/* One decode step on the cache `kv_cache` (block_size, 3C) with scores scratch dec_att. */
static strix_status decode_step(strix_attention *m, strix_tensor *kv_cache, strix_tensor *dec_att,
                                const strix_tensor *x, int pos, const strix_tensor **y) {
    if (strix_tensor_numel(x) != m->C || x->shape[x->ndim - 1] != m->C)
        return strix_error(STRIX_ERR_SHAPE, "attention decode: input must be (1, %d)", m->C);
    if (pos < 0 || pos >= m->block_size)
        return strix_error(STRIX_ERR_ARG, "attention decode: position %d outside [0, %d)", pos,
                           m->block_size);
    strix_backend *be = m->base.be;
    m->work->B = 0; /* the step overwrites the forward's buffers: no backward until the next
                     * forward */
    m->work->dropped = false;
    size_t C = (size_t)m->C, n = (size_t)pos + 1, bs = (size_t)m->block_size;
    const strix_tensor *qkv_t;
    STRIX_TRY(strix_linear_forward(m->c_attn, x, &qkv_t));
    float *qkv = qkv_t->data;
    if (m->rope) STRIX_TRY(rope_qk(m, qkv, 1, 1, (size_t)pos, false));
    int64_t cache_shape[2] = {(int64_t)bs, (int64_t)(3 * C)};
    int64_t att_shape[2] = {m->NH, (int64_t)bs};
    STRIX_TRY(strix_tensor_ensure(be, kv_cache, 2, cache_shape));
    STRIX_TRY(strix_tensor_ensure(be, dec_att, 2, att_shape));
    STRIX_TRY(nn_ensure_like(be, &m->work->y, x, (int64_t)C));
    float *cache = kv_cache->data;
    STRIX_TRY(strix_copy(be, cache + (size_t)pos * 3 * C, qkv, 3 * C * sizeof(float),
                         STRIX_COPY_D2D));
    for (int h = 0; h < m->NH; h++) {
        size_t hs = (size_t)m->head_size[h], off = (size_t)m->head_off[h];
        float *att = dec_att->data + (size_t)h * bs;
        // scores (1,n) = scale · q_h · K_hᵀ over cached rows 0..pos
        strix_gemm_batch s = {
            .a = qkv + off, .lda = 3 * C, .stride_a = 0, .ta = false,
            .b = cache + C + off, .ldb = 3 * C, .stride_b = 0, .tb = true,
            .c = att, .ldc = n, .stride_c = 0,
            .m = 1, .k = hs, .n = n, .batch = 1, .alpha = head_scale((int)hs), .beta = 0.0f};
        STRIX_TRY(strix_gemm_batched(be, &s));
        STRIX_TRY(strix_softmax_rows(be, att, att, 1, n));
        strix_gemm_batch o = {
            .a = att, .lda = n, .stride_a = 0, .ta = false,
            .b = cache + 2 * C + off, .ldb = 3 * C, .stride_b = 0, .tb = false,
            .c = m->work->y.data + off, .ldc = C, .stride_c = 0,
            .m = 1, .k = n, .n = hs, .batch = 1, .alpha = 1.0f, .beta = 0.0f};
        STRIX_TRY(strix_gemm_batched(be, &o));
    }
    return strix_linear_forward(m->c_proj, &m->work->y, y);
}

strix_status strix_attention_decode(strix_attention *m, const strix_tensor *x, int pos,
                                    const strix_tensor **y) {
    return decode_step(m, &m->work->kv_cache, &m->work->dec_att, x, pos, y);
}

// ---- the general form: a KV-cache state per sequence -------------------------------------------

/* A KV cache of its own (strix_module_state): rows of rotated q|k|v and the decode scores. */
typedef struct attn_state {
    strix_module_state base;
    strix_tensor kv_cache, dec_att;
} attn_state;

static strix_status vt_state_new(strix_module *m, strix_module_state **out) {
    attn_state *st = calloc(1, sizeof *st);
    if (!st) return NN_ALLOC_FAIL("attention state");
    st->base.owner = m;
    *out = &st->base;
    return STRIX_OK;
}

static void vt_state_free(strix_module *m, strix_module_state *s) {
    attn_state *st = (attn_state *)s;
    strix_tensor_free(&st->kv_cache);
    strix_tensor_free(&st->dec_att);
    free(st);
}

static strix_status vt_forward_ex(strix_module *mod, strix_module_io *io) {
    strix_attention *m = (strix_attention *)mod;
    if (io->n_in != 1 || !io->in[0] || io->ids)
        return strix_error(STRIX_ERR_UNSUPPORTED, "attention takes one float input (B,T,C)");
    if (io->mask && io->state)
        return strix_error(STRIX_ERR_UNSUPPORTED, "attention: a key mask with a decode state is "
                           "not supported");
    const strix_tensor *y;
    if (io->state) {
        if (io->state->owner != mod)
            return strix_error(STRIX_ERR_ARG, "attention: the state belongs to another module");
        attn_state *st = (attn_state *)io->state;
        STRIX_TRY(decode_step(m, &st->kv_cache, &st->dec_att, io->in[0], io->pos, &y));
    } else {
        STRIX_TRY(strix_attention_forward_masked(m, io->in[0], io->mask, &y));
    }
    io->n_out = 1;
    io->out[0] = y;
    return STRIX_OK;
}

// ---- accessors ---------------------------------------------------------------------------------

const strix_tensor *strix_attention_relevance_qkv(const strix_attention *m) {
    return &m->work->lrp_qkv;
}

double strix_attention_softmax_gap(const strix_attention *m) { return m->work->lrp_softmax_gap; }
