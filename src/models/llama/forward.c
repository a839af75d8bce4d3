/*
 * forward.c - the Llama-family forward on the backend's primitives: one layer over T tokens at
 * positions pos0.. with the KV cache (llama_layer_forward), the full forward and KV-cache
 * decoding of strix/llama.h (both run the sequence in chunks of m->chunk tokens, so the scratch
 * is bounded and a decode step is a chunk of one).
 *
 * A layer (transformers' LlamaDecoderLayer; Qwen2/Qwen3 the same with biases / QK-norm):
 *   xn = rmsnorm(x)·w_in;  q, k, v = xn·Wqᵀ (+bq), xn·Wkᵀ (+bk), xn·Wvᵀ (+bv)
 *   Qwen3: q, k = rmsnorm over head_dim·q_norm, k_norm;  q, k rotated (rotate-half RoPE)
 *   per head h (K/V head h / (H/KV)): p = softmax(mask(q_h·K_gᵀ / sqrt(D))); attn_h = p·V_g
 *   x += attn·Woᵀ (+bo);  xn = rmsnorm(x)·w_post;  x += (silu(xn·Wgᵀ) ⊙ xn·Wuᵀ)·Wdᵀ
 * Layouts: activations (T, features) row-major; q (T, H·D) with head h at columns h·D..; the
 * cache (max_ctx, KV·D) per layer, token-major, written after QK-norm and RoPE; attention one
 * head at a time through strided batched GEMMs (scores (T, ctx)). Not here: AttnLRP
 * (explain.c), loading (load.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama_internal.h"

// ---- scratch -----------------------------------------------------------------------------------

void llama_work_free(strix_llama *m, llama_work *w) {
    strix_free(m->be, w->block);
    memset(w, 0, sizeof *w);
}

strix_status llama_work_ensure(strix_llama *m, llama_work *w, size_t rows, size_t ctx) {
    if (w->block && rows <= w->rows && ctx <= w->ctx) return STRIX_OK;
    if (rows < w->rows) rows = w->rows;
    if (ctx < w->ctx) ctx = w->ctx;
    llama_work_free(m, w);
    const strix_llama_config *c = &m->cfg;
    size_t C = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    size_t HD = (size_t)c->num_heads * (size_t)c->head_dim;
    size_t KD = (size_t)c->num_kv_heads * (size_t)c->head_dim;
    size_t sizes[] = {rows * C, rows, rows, rows * HD, rows * KD, rows * KD,
                      rows * (size_t)c->num_heads, rows * (size_t)c->num_kv_heads, rows * ctx,
                      rows * HD, rows * C, rows * I, rows * I, rows * I, rows * I};
    float **views[] = {&w->xn, &w->rms, &w->rms2, &w->q, &w->k, &w->v, &w->qrms, &w->krms,
                       &w->scores, &w->attn, &w->o, &w->gate, &w->act, &w->up, &w->h};
    size_t n = sizeof sizes / sizeof sizes[0], total = 0;
    for (size_t i = 0; i < n; i++) total += (sizes[i] + 15) & ~(size_t)15;
    STRIX_TRY(strix_alloc(m->be, total * sizeof(float), (void **)&w->block));
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        *views[i] = w->block + at;
        at += (sizes[i] + 15) & ~(size_t)15;
    }
    w->rows = rows;
    w->ctx = ctx;
    return STRIX_OK;
}

// ---- pieces ------------------------------------------------------------------------------------

strix_status llama_linear(strix_backend *be, const float *x, const llama_mat *w, const float *b,
                          float *y, size_t T, size_t in, size_t out) {
    if (w->f) STRIX_TRY(strix_gemm_ex(be, x, false, w->f, true, y, T, in, out, 0.0f));
    else STRIX_TRY(strix_matmul_blocks(be, x, T, in, w->type, w->dev, out, y));
    if (b) STRIX_TRY(strix_add_row_vector(be, y, b, y, T, out));
    return STRIX_OK;
}

strix_status llama_mat_row(strix_llama *m, const llama_mat *w, size_t r, float *row) {
    if (w->f)
        return strix_copy(m->be, row, w->f + r * w->cols, w->cols * sizeof(float),
                          STRIX_COPY_D2H);
    size_t bytes = strix_gguf_row_bytes((strix_gguf_type)w->type, w->cols);
    return strix_gguf_dequantize((strix_gguf_type)w->type, (const char *)w->host + r * bytes,
                                 w->cols, row);
}

strix_status llama_mat_dense(strix_llama *m, const llama_mat *w, float *scratch, float *stage,
                             const float **out) {
    if (w->f) {
        *out = w->f;
        return STRIX_OK;
    }
    size_t n = w->rows * w->cols;
    bool cpu = strix_backend_device(m->be) == STRIX_DEVICE_CPU;
    STRIX_TRY(strix_gguf_dequantize((strix_gguf_type)w->type, w->host, n, cpu ? scratch : stage));
    if (!cpu) STRIX_TRY(strix_copy(m->be, scratch, stage, n * sizeof(float), STRIX_COPY_H2D));
    *out = scratch;
    return STRIX_OK;
}

strix_status llama_embed(strix_llama *m, const int32_t *ids, size_t n, float *x) {
    size_t C = (size_t)m->cfg.hidden_size;
    if (m->embed.f) {
        STRIX_TRY(strix_copy(m->be, m->ids_dev, ids, n * sizeof(int32_t), STRIX_COPY_H2D));
        return strix_gather_rows(m->be, m->embed.f, m->ids_dev, x, n, C);
    }
    bool cpu = strix_backend_device(m->be) == STRIX_DEVICE_CPU;
    float *host = cpu ? x : malloc(n * C * sizeof(float));
    if (!host) return strix_error(STRIX_ERR_ALLOC, "llama: out of memory (embedding rows)");
    strix_status s = STRIX_OK;
    for (size_t t = 0; t < n && s == STRIX_OK; t++)
        s = llama_mat_row(m, &m->embed, (size_t)ids[t], host + t * C);
    if (!cpu) {
        if (s == STRIX_OK) s = strix_copy(m->be, x, host, n * C * sizeof(float), STRIX_COPY_H2D);
        free(host);
    }
    return s;
}

strix_status llama_head_probs(strix_llama *m, int l, int head, const float *q, size_t T,
                              size_t pos0, float *probs) {
    const strix_llama_config *c = &m->cfg;
    size_t D = (size_t)c->head_dim, HD = (size_t)c->num_heads * D;
    size_t KD = (size_t)c->num_kv_heads * D, ctx = pos0 + T;
    size_t g = (size_t)head / (size_t)(c->num_heads / c->num_kv_heads);
    // scores (T, ctx) = scale·q_h (T, D; row stride H·D) · K_g (ctx, D; row stride KV·D)ᵀ
    strix_gemm_batch gb = {
        .a = q + (size_t)head * D, .lda = HD, .ta = false,
        .b = m->layers[l].k_cache + g * D, .ldb = KD, .tb = true,
        .c = probs, .ldc = ctx,
        .m = T, .k = D, .n = ctx, .batch = 1,
        .alpha = (float)(1.0 / sqrt((double)D)), .beta = 0.0f,
        .skip = pos0 == 0 ? STRIX_GEMM_OUT_LOWER : STRIX_GEMM_FULL};
    STRIX_TRY(strix_gemm_batched(m->be, &gb));
    STRIX_TRY(strix_attention_mask_fill(m->be, probs, NULL, 1, 1, T, ctx, true, pos0, 0,
                                        -INFINITY));
    return strix_softmax_rows(m->be, probs, probs, T, ctx);
}

/* RMSNorm over `rows` rows of `cols` with gamma (the cpu kernel's sqrt(Σx²/D + eps)). */
static strix_status rms_norm(strix_llama *m, const float *x, const float *gamma, float *y,
                             float *rms, size_t rows, size_t cols) {
    return strix_rms_norm_forward(m->be, x, gamma, y, rms, rows, cols, m->cfg.rms_norm_eps);
}

/* The attention half of layer l: x += o(attn(rmsnorm(x))). */
static strix_status attention(strix_llama *m, int l, float *x, size_t T, size_t pos0,
                              llama_work *w) {
    const strix_llama_config *c = &m->cfg;
    const llama_layer *L = &m->layers[l];
    strix_backend *be = m->be;
    size_t C = (size_t)c->hidden_size, D = (size_t)c->head_dim, H = (size_t)c->num_heads;
    size_t KV = (size_t)c->num_kv_heads, HD = H * D, KD = KV * D, ctx = pos0 + T;
    STRIX_TRY(rms_norm(m, x, L->attn_norm, w->xn, w->rms, T, C));
    STRIX_TRY(llama_linear(be, w->xn, &L->wq, L->bq, w->q, T, C, HD));
    STRIX_TRY(llama_linear(be, w->xn, &L->wk, L->bk, w->k, T, C, KD));
    STRIX_TRY(llama_linear(be, w->xn, &L->wv, L->bv, w->v, T, C, KD));
    if (c->qk_norm) { /* Qwen3: per head, before RoPE */
        STRIX_TRY(rms_norm(m, w->q, L->q_norm, w->q, w->qrms, T * H, D));
        STRIX_TRY(rms_norm(m, w->k, L->k_norm, w->k, w->krms, T * KV, D));
    }
    for (size_t h = 0; h < H; h++)
        STRIX_TRY(strix_rope_rotate_half(be, w->q + h * D, HD, m->rope_cos, m->rope_sin,
                                         w->q + h * D, HD, T, T, pos0, D, false));
    // k rotated straight into the cache, v copied there: positions pos0..pos0+T-1
    for (size_t g = 0; g < KV; g++)
        STRIX_TRY(strix_rope_rotate_half(be, w->k + g * D, KD, m->rope_cos, m->rope_sin,
                                         L->k_cache + pos0 * KD + g * D, KD, T, T, pos0, D,
                                         false));
    STRIX_TRY(strix_copy(be, L->v_cache + pos0 * KD, w->v, T * KD * sizeof(float),
                         STRIX_COPY_D2D));
    size_t group = H / KV;
    for (size_t h = 0; h < H; h++) {
        STRIX_TRY(llama_head_probs(m, l, (int)h, w->q, T, pos0, w->scores));
        // attn_h (T, D; row stride H·D) = probs (T, ctx) · V_g (ctx, D; row stride KV·D)
        strix_gemm_batch gb = {
            .a = w->scores, .lda = ctx, .ta = false,
            .b = L->v_cache + (h / group) * D, .ldb = KD, .tb = false,
            .c = w->attn + h * D, .ldc = HD,
            .m = T, .k = ctx, .n = D, .batch = 1, .alpha = 1.0f, .beta = 0.0f,
            .skip = pos0 == 0 ? STRIX_GEMM_A_LOWER : STRIX_GEMM_FULL};
        STRIX_TRY(strix_gemm_batched(be, &gb));
    }
    STRIX_TRY(llama_linear(be, w->attn, &L->wo, L->bo, w->o, T, HD, C));
    return strix_add(be, x, w->o, x, T * C);
}

/* The MLP half of layer l: x += down(silu(gate(xn)) ⊙ up(xn)), xn = rmsnorm(x). */
static strix_status mlp(strix_llama *m, int l, float *x, size_t T, llama_work *w) {
    const llama_layer *L = &m->layers[l];
    strix_backend *be = m->be;
    size_t C = (size_t)m->cfg.hidden_size, I = (size_t)m->cfg.intermediate_size;
    STRIX_TRY(rms_norm(m, x, L->ffn_norm, w->xn, w->rms2, T, C));
    STRIX_TRY(llama_linear(be, w->xn, &L->wg, NULL, w->gate, T, C, I));
    STRIX_TRY(llama_linear(be, w->xn, &L->wu, NULL, w->up, T, C, I));
    STRIX_TRY(strix_elementwise(be, STRIX_ACT_SILU, w->gate, w->act, T * I));
    STRIX_TRY(strix_mul(be, w->act, w->up, w->h, T * I));
    STRIX_TRY(llama_linear(be, w->h, &L->wd, NULL, w->o, T, I, C));
    return strix_add(be, x, w->o, x, T * C);
}

strix_status llama_layer_forward(strix_llama *m, int l, float *x, size_t T, size_t pos0,
                                 llama_work *w) {
    STRIX_ASSERT(T <= w->rows && pos0 + T <= w->ctx && pos0 + T <= m->max_ctx,
                 "llama layer: %zu tokens at %zu exceed the scratch (%zu, %zu)", T, pos0,
                 w->rows, w->ctx);
    STRIX_TRY(attention(m, l, x, T, pos0, w));
    return mlp(m, l, x, T, w);
}

// ---- forward and decoding ----------------------------------------------------------------------

strix_status llama_check_ids(const strix_llama *m, const char *who, const int32_t *ids,
                             size_t n, size_t start) {
    if (n == 0) return strix_error(STRIX_ERR_ARG, "%s: no tokens", who);
    if (!ids) return strix_error(STRIX_ERR_ARG, "%s: ids is NULL", who);
    if (start > m->max_ctx || n > m->max_ctx - start)
        return strix_error(STRIX_ERR_ARG,
                           "%s: %zu tokens after %zu cached exceed the context of %zu", who, n,
                           start, m->max_ctx);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->cfg.vocab_size)
            return strix_error(STRIX_ERR_ARG, "%s: token %d at %zu outside [0, %d)", who, ids[i],
                               i, m->cfg.vocab_size);
    return STRIX_OK;
}

/* Runs ids[0..n) at positions start.. through the model chunk by chunk, extending the cache;
 * logits: all rows (n, V) when `all`, else the last row (V), into host memory. */
static strix_status run(strix_llama *m, const int32_t *ids, size_t n, size_t start, bool all,
                        float *logits) {
    strix_backend *be = m->be;
    const strix_llama_config *c = &m->cfg;
    size_t C = (size_t)c->hidden_size, V = (size_t)c->vocab_size;
    llama_work *w = &m->work;
    float *x = m->x_dev;
    strix_status s = STRIX_OK;
    for (size_t done = 0; s == STRIX_OK && done < n;) {
        size_t T = n - done < m->chunk ? n - done : m->chunk, pos0 = start + done;
        s = llama_embed(m, ids + done, T, x);
        for (int l = 0; s == STRIX_OK && l < c->num_layers; l++)
            s = llama_layer_forward(m, l, x, T, pos0, w);
        m->cached = s == STRIX_OK ? pos0 + T : start;
        // the head: every row, or only the sequence's last
        size_t first = all ? 0 : T - 1, rows = all ? T : (done + T == n ? 1 : 0);
        if (s == STRIX_OK && rows > 0) {
            s = rms_norm(m, x + first * C, m->final_norm, w->xn, w->rms, rows, C);
            if (s == STRIX_OK)
                s = llama_linear(be, w->xn, m->lm_head, NULL, m->logits_dev, rows, C, V);
            float *dst = all ? logits + done * V : logits;
            if (s == STRIX_OK)
                s = strix_copy(be, dst, m->logits_dev, rows * V * sizeof(float), STRIX_COPY_D2H);
        }
        done += T;
    }
    if (s != STRIX_OK) m->cached = start;
    return s;
}

strix_status strix_llama_forward(strix_llama *m, const int32_t *ids, size_t n, float *logits) {
    STRIX_TRY(llama_check_ids(m, "llama forward", ids, n, 0));
    m->cached = 0;
    return run(m, ids, n, 0, true, logits);
}

strix_status strix_llama_decode(strix_llama *m, size_t keep, const int32_t *ids, size_t n,
                                float *logits) {
    if (keep > m->cached)
        return strix_error(STRIX_ERR_ARG, "llama decode: keep %zu exceeds the %zu cached "
                           "positions", keep, m->cached);
    STRIX_TRY(llama_check_ids(m, "llama decode", ids, n, keep));
    m->cached = keep;
    return run(m, ids, n, keep, false, logits);
}
