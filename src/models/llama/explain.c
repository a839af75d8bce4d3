/*
 * explain.c - AttnLRP of a Llama-family prediction (strix_llama_explain; Achtibat et al. 2024)
 * as LXT 2.1's `lxt.efficient` computes it for LlamaForCausalLM, Qwen2 and Qwen3: one modified
 * gradient pass whose Input×Gradient is the relevance (Arras et al. 2025). The rules, as the
 * gradient of each step (lxt/efficient/patches.py and rules.py):
 *   RMSNorm  y = w·x·r with r = 1/rms held constant (identity rule): g_x = w·g_y·r;
 *            strix_rms_norm_backward with x = 0 is exactly that (its variance term vanishes)
 *   SiLU     identity rule: g_x = (silu(x)/(x + 1e-10))·g_y (strix_lrp_stabilized_divide)
 *   a ⊙ b    gate·up: uniform rule, g_a = b·g/2, g_b = a·g/2
 *   attention divide_gradient on q and k by 4 and on v by 2 around softmax(q·kᵀ·s)·v: the
 *            uniform rule for both products (the 4 because the probabilities keep their full
 *            share); the softmax by its own gradient (AttnLRP's softmax rule, x·(r − y·Σr))
 *   Linear   its gradient Wᵀ·g (the epsilon rule with the bias in the denominator, eps -> 0)
 *   RoPE, residual sums, the embedding lookup: their gradients.
 * Seed: 1 at the target's logit of the last position (-1 at the contrast's), so the output
 * relevance is the explained logit (difference); relevance per token = Σ_d x0·g at the token
 * embeddings, in double with d ascending.
 *
 * Memory: the residual stream before every layer is kept ((L+1)·n·C floats); walking back,
 * each layer's forward is recomputed from its input (its intermediates, K/V cache rows
 * identical), then its gradient formed; attention one head at a time ((n, n) probabilities
 * recomputed there). Not here: the plain forward (forward.c), rendering (the strix command).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama_internal.h"

/* The scratch of one explanation (backend memory, one block). */
typedef struct explain_work {
    float *block;
    float *X;        /* (L+1, n, C): the residual stream before each layer, and after the last */
    float *xt;       /* (n, C): a layer's recomputation */
    float *gx, *gt, *gxn;     /* (n, C) */
    float *gh, *ga, *gu;      /* (n, I) */
    float *gq, *gattn;        /* (n, H·D) */
    float *gk, *gv;           /* (n, KV·D) */
    float *P, *gP;            /* (n, n): one head */
    float *zeros;             /* (n·max(C, H·D)) */
    float *seed;              /* (C) */
    float *wbuf;              /* (largest matrix): a block-held weight decoded (llama_mat_dense) */
    float *stage;             /* host (largest matrix) on a GPU backend, else NULL */
} explain_work;

/* The floats of the largest layer matrix. */
static size_t largest_matrix(const strix_llama_config *c) {
    size_t C = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    size_t HD = (size_t)c->num_heads * (size_t)c->head_dim;
    size_t big = I * C > HD * C ? I * C : HD * C;
    return big;
}

/* gout (+)= gin (n, rows) · W (rows, cols): a Linear's input gradient, W float32 or decoded. */
static strix_status linear_back(strix_llama *m, explain_work *e, const float *gin,
                                const llama_mat *w, float *gout, size_t n, float beta) {
    const float *W;
    STRIX_TRY(llama_mat_dense(m, w, e->wbuf, e->stage, &W));
    return strix_gemm_ex(m->be, gin, false, W, false, gout, n, w->rows, w->cols, beta);
}

static strix_status explain_work_alloc(strix_llama *m, size_t n, explain_work *e) {
    const strix_llama_config *c = &m->cfg;
    size_t C = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    size_t HD = (size_t)c->num_heads * (size_t)c->head_dim;
    size_t KD = (size_t)c->num_kv_heads * (size_t)c->head_dim, L = (size_t)c->num_layers;
    bool blocks = m->embed.f == NULL;
    size_t W = blocks ? largest_matrix(c) : 0;
    size_t sizes[] = {(L + 1) * n * C, n * C, n * C, n * C, n * C, n * I, n * I, n * I,
                      n * HD, n * HD, n * KD, n * KD, n * n, n * n, n * (C > HD ? C : HD), C, W};
    float **views[] = {&e->X, &e->xt, &e->gx, &e->gt, &e->gxn, &e->gh, &e->ga, &e->gu,
                       &e->gq, &e->gattn, &e->gk, &e->gv, &e->P, &e->gP, &e->zeros, &e->seed,
                       &e->wbuf};
    if (blocks && strix_backend_device(m->be) != STRIX_DEVICE_CPU) {
        e->stage = malloc(W * sizeof(float));
        if (!e->stage) return strix_error(STRIX_ERR_ALLOC, "llama explain: out of memory");
    }
    size_t count = sizeof sizes / sizeof sizes[0], total = 0;
    for (size_t i = 0; i < count; i++) total += (sizes[i] + 15) & ~(size_t)15;
    STRIX_TRY(strix_alloc(m->be, total * sizeof(float), (void **)&e->block));
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        *views[i] = e->block + at;
        at += (sizes[i] + 15) & ~(size_t)15;
    }
    return strix_fill(m->be, e->zeros, 0.0f, sizes[14]);
}

/* g_in = gamma·g_out/rms per row (the identity rule's RMSNorm gradient), rows of cols. */
static strix_status norm_back(strix_llama *m, const explain_work *e, const float *g_out,
                              const float *gamma, const float *rms, float *g_in, size_t rows,
                              size_t cols) {
    return strix_rms_norm_backward(m->be, g_out, gamma, e->zeros, rms, g_in, NULL, rows, cols);
}

/* The MLP half of layer l backward: gx (the gradient at the layer output) += its branch. */
static strix_status mlp_back(strix_llama *m, int l, size_t n, const llama_work *w,
                             explain_work *e) {
    const llama_layer *L = &m->layers[l];
    strix_backend *be = m->be;
    size_t C = (size_t)m->cfg.hidden_size, I = (size_t)m->cfg.intermediate_size, nI = n * I;
    STRIX_TRY(linear_back(m, e, e->gx, &L->wd, e->gh, n, 0.0f));
    // uniform rule on act ⊙ up
    STRIX_TRY(strix_mul(be, w->up, e->gh, e->ga, nI));
    STRIX_TRY(strix_axpby(be, 0.5f, e->ga, 0.0f, NULL, e->ga, nI));
    STRIX_TRY(strix_mul(be, w->act, e->gh, e->gu, nI));
    STRIX_TRY(strix_axpby(be, 0.5f, e->gu, 0.0f, NULL, e->gu, nI));
    // identity rule through SiLU: the ratio silu(x)/(x + eps) (into gh, no longer needed)
    STRIX_TRY(strix_lrp_stabilized_divide(be, w->act, w->gate, NULL, e->gh, nI, 1e-10f,
                                          STRIX_LRP_GATE_NONE));
    STRIX_TRY(strix_mul(be, e->gh, e->ga, e->ga, nI));
    STRIX_TRY(linear_back(m, e, e->ga, &L->wg, e->gxn, n, 0.0f));
    STRIX_TRY(linear_back(m, e, e->gu, &L->wu, e->gxn, n, 1.0f));
    STRIX_TRY(norm_back(m, e, e->gxn, L->ffn_norm, w->rms2, e->gt, n, C));
    return strix_add(be, e->gx, e->gt, e->gx, n * C);
}

/* The attention half of layer l backward: gx (the gradient after the attention residual) +=
 * its branch. */
static strix_status attention_back(strix_llama *m, int l, size_t n, const llama_work *w,
                                   explain_work *e) {
    const strix_llama_config *c = &m->cfg;
    const llama_layer *L = &m->layers[l];
    strix_backend *be = m->be;
    size_t C = (size_t)c->hidden_size, D = (size_t)c->head_dim, H = (size_t)c->num_heads;
    size_t KV = (size_t)c->num_kv_heads, HD = H * D, KD = KV * D, group = H / KV;
    float scale = (float)(1.0 / sqrt((double)D));
    STRIX_TRY(linear_back(m, e, e->gx, &L->wo, e->gattn, n, 0.0f));
    for (size_t h = 0; h < H; h++) {
        size_t g = h / group;
        float beta = h % group == 0 ? 0.0f : 1.0f; /* the group's heads sum into gk, gv */
        STRIX_TRY(llama_head_probs(m, l, (int)h, w->q, n, 0, e->P));
        // gP (n, n) = g_attn_h · V_gᵀ
        strix_gemm_batch gp = {.a = e->gattn + h * D, .lda = HD, .b = L->v_cache + g * D,
                               .ldb = KD, .tb = true, .c = e->gP, .ldc = n, .m = n, .k = D,
                               .n = n, .batch = 1, .alpha = 1.0f};
        STRIX_TRY(strix_gemm_batched(be, &gp));
        // g_v (+)= ½·Pᵀ · g_attn_h (LXT: value / 2)
        strix_gemm_batch gvb = {.a = e->P, .lda = n, .ta = true, .b = e->gattn + h * D,
                                .ldb = HD, .c = e->gv + g * D, .ldc = KD, .m = n, .k = n,
                                .n = D, .batch = 1, .alpha = 0.5f, .beta = beta};
        STRIX_TRY(strix_gemm_batched(be, &gvb));
        STRIX_TRY(strix_softmax_rows_backward(be, e->P, e->gP, e->gP, n, n));
        // g_q_h = (s/4)·gS·K_g, g_k (+)= (s/4)·gSᵀ·q_h (LXT: query and key / 4)
        strix_gemm_batch gqb = {.a = e->gP, .lda = n, .b = L->k_cache + g * D, .ldb = KD,
                                .c = e->gq + h * D, .ldc = HD, .m = n, .k = n, .n = D,
                                .batch = 1, .alpha = 0.25f * scale};
        STRIX_TRY(strix_gemm_batched(be, &gqb));
        strix_gemm_batch gkb = {.a = e->gP, .lda = n, .ta = true, .b = w->q + h * D, .ldb = HD,
                                .c = e->gk + g * D, .ldc = KD, .m = n, .k = n, .n = D,
                                .batch = 1, .alpha = 0.25f * scale, .beta = beta};
        STRIX_TRY(strix_gemm_batched(be, &gkb));
    }
    // RoPE back (the inverse rotation), QK-norm back, then the projections
    for (size_t h = 0; h < H; h++)
        STRIX_TRY(strix_rope_rotate_half(be, e->gq + h * D, HD, m->rope_cos, m->rope_sin,
                                         e->gq + h * D, HD, n, n, 0, D, true));
    for (size_t g = 0; g < KV; g++)
        STRIX_TRY(strix_rope_rotate_half(be, e->gk + g * D, KD, m->rope_cos, m->rope_sin,
                                         e->gk + g * D, KD, n, n, 0, D, true));
    if (c->qk_norm) {
        STRIX_TRY(norm_back(m, e, e->gq, L->q_norm, w->qrms, e->gq, n * H, D));
        STRIX_TRY(norm_back(m, e, e->gk, L->k_norm, w->krms, e->gk, n * KV, D));
    }
    STRIX_TRY(linear_back(m, e, e->gq, &L->wq, e->gxn, n, 0.0f));
    STRIX_TRY(linear_back(m, e, e->gk, &L->wk, e->gxn, n, 1.0f));
    STRIX_TRY(linear_back(m, e, e->gv, &L->wv, e->gxn, n, 1.0f));
    STRIX_TRY(norm_back(m, e, e->gxn, L->attn_norm, w->rms, e->gt, n, C));
    return strix_add(be, e->gx, e->gt, e->gx, n * C);
}

/* The argmax of host logits (V), ties to the lower id. */
static int32_t argmax(const float *logits, int V) {
    int32_t best = 0;
    for (int v = 1; v < V; v++)
        if (logits[v] > logits[best]) best = v;
    return best;
}

/* The forward over ids keeping every layer's input, the last position's logits into host
 * `logits` (V) and the final norm's rms of that row into w->rms[0]. */
static strix_status forward_keep(strix_llama *m, const int32_t *ids, size_t n, llama_work *w,
                                 explain_work *e, float *logits) {
    strix_backend *be = m->be;
    const strix_llama_config *c = &m->cfg;
    size_t C = (size_t)c->hidden_size, V = (size_t)c->vocab_size, nC = n * C;
    m->cached = 0;
    STRIX_TRY(llama_embed(m, ids, n, e->X));
    for (int l = 0; l < c->num_layers; l++) {
        float *next = e->X + (size_t)(l + 1) * nC;
        STRIX_TRY(strix_copy(be, next, e->X + (size_t)l * nC, nC * sizeof(float),
                             STRIX_COPY_D2D));
        STRIX_TRY(llama_layer_forward(m, l, next, n, 0, w));
    }
    m->cached = n;
    const float *last = e->X + (size_t)c->num_layers * nC + (n - 1) * C;
    STRIX_TRY(strix_rms_norm_forward(be, last, m->final_norm, w->xn, w->rms, 1, C,
                                     c->rms_norm_eps));
    STRIX_TRY(llama_linear(be, w->xn, m->lm_head, NULL, m->logits_dev, 1, C, V));
    STRIX_TRY(strix_copy(be, logits, m->logits_dev, V * sizeof(float), STRIX_COPY_D2H));
    for (size_t v = 0; v < V; v++)
        if (!isfinite(logits[v]))
            return strix_error(STRIX_ERR_NUMERIC, "llama explain: logit %zu is not finite", v);
    return STRIX_OK;
}

/* The whole explanation, with the scratch allocated. */
static strix_status explain_run(strix_llama *m, const int32_t *ids, size_t n, int32_t target,
                                int32_t contrast, float *relevance,
                                strix_llama_explain_info *info, llama_work *w, explain_work *e) {
    strix_backend *be = m->be;
    const strix_llama_config *c = &m->cfg;
    size_t C = (size_t)c->hidden_size, V = (size_t)c->vocab_size, nC = n * C;
    size_t hn = V > 2 * nC ? V : 2 * nC;
    float *host = malloc((hn > 2 * C ? hn : 2 * C) * sizeof(float));
    if (!host) return strix_error(STRIX_ERR_ALLOC, "llama explain: out of memory");
    strix_status s = forward_keep(m, ids, n, w, e, host);
    if (s == STRIX_OK) {
        info->argmax = argmax(host, c->vocab_size);
        info->max_logit = host[info->argmax];
        info->target = target >= 0 ? target : info->argmax;
        info->target_logit = host[info->target];
        info->contrast = contrast;
        info->contrast_logit = contrast >= 0 ? host[contrast] : NAN;
        info->explained = contrast >= 0 ? (double)info->target_logit - (double)info->contrast_logit
                                        : (double)info->target_logit;
        info->relevance_out_sum = info->explained;
        if (contrast == info->target)
            s = strix_error(STRIX_ERR_ARG, "llama explain: the contrast is the target (%d)",
                            contrast);
    }
    // the seed: the lm_head row of the target (minus the contrast's) at the last position,
    // through the final norm; the other positions get no gradient
    if (s == STRIX_OK) s = strix_fill(be, e->gx, 0.0f, nC);
    if (s == STRIX_OK) s = llama_mat_row(m, m->lm_head, (size_t)info->target, host);
    if (s == STRIX_OK && contrast >= 0) s = llama_mat_row(m, m->lm_head, (size_t)contrast, host + C);
    for (size_t d = 0; s == STRIX_OK && contrast >= 0 && d < C; d++) host[d] -= host[C + d];
    if (s == STRIX_OK) s = strix_copy(be, e->seed, host, C * sizeof(float), STRIX_COPY_H2D);
    if (s == STRIX_OK)
        s = norm_back(m, e, e->seed, m->final_norm, w->rms, e->gx + (n - 1) * C, 1, C);
    for (int l = c->num_layers - 1; l >= 0 && s == STRIX_OK; l--) {
        s = strix_copy(be, e->xt, e->X + (size_t)l * nC, nC * sizeof(float), STRIX_COPY_D2D);
        if (s == STRIX_OK) s = llama_layer_forward(m, l, e->xt, n, 0, w);
        if (s == STRIX_OK) s = mlp_back(m, l, n, w, e);
        if (s == STRIX_OK) s = attention_back(m, l, n, w, e);
    }
    // relevance = x0·g summed over the hidden dimension
    if (s == STRIX_OK) s = strix_copy(be, host, e->X, nC * sizeof(float), STRIX_COPY_D2H);
    if (s == STRIX_OK) s = strix_copy(be, host + nC, e->gx, nC * sizeof(float), STRIX_COPY_D2H);
    double total = 0.0;
    for (size_t t = 0; t < n && s == STRIX_OK; t++) {
        double sum = 0.0;
        for (size_t d = 0; d < C; d++) sum += (double)host[t * C + d] * host[nC + t * C + d];
        relevance[t] = (float)sum;
        total += sum;
    }
    info->relevance_in_sum = total;
    free(host);
    return s;
}

strix_status strix_llama_explain(strix_llama *m, const int32_t *ids, size_t n, int32_t target,
                                 int32_t contrast, float *relevance,
                                 strix_llama_explain_info *info) {
    strix_llama_explain_info local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    info->contrast_logit = NAN;
    STRIX_TRY(llama_check_ids(m, "llama explain", ids, n, 0));
    int V = m->cfg.vocab_size;
    if (target < -1 || target >= V)
        return strix_error(STRIX_ERR_ARG, "llama explain: target %d outside [-1, %d)", target, V);
    if (contrast < -1 || contrast >= V)
        return strix_error(STRIX_ERR_ARG, "llama explain: contrast %d outside [-1, %d)",
                           contrast, V);
    if (contrast >= 0 && contrast == target)
        return strix_error(STRIX_ERR_ARG, "llama explain: the contrast is the target (%d)",
                           contrast);
    if (!relevance) return strix_error(STRIX_ERR_ARG, "llama explain: relevance is NULL");
    llama_work w = {0};
    explain_work e = {0};
    strix_status s = llama_work_ensure(m, &w, n, n);
    if (s == STRIX_OK) s = explain_work_alloc(m, n, &e);
    if (s == STRIX_OK) s = explain_run(m, ids, n, target, contrast, relevance, info, &w, &e);
    strix_free(m->be, e.block);
    free(e.stage);
    llama_work_free(m, &w);
    return s;
}
