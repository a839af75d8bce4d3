/*
 * gguf_load.c - a Llama-family model from a GGUF file (llama.cpp's convert_hf_to_gguf.py naming):
 * the hyperparameters from `<arch>.*` metadata, the tensors dequantized to float32 by
 * strix/gguf.h (as ggml and gguf-py do), llama.cpp's Q/K row permutation of arch "llama" undone
 * (transformers' modeling_gguf_pytorch_utils.py LlamaTensorProcessor does the same), the
 * tokenizer from tokenizer.ggml.* and the chat template from tokenizer.chat_template.
 *
 * Architectures: "llama" (Llama, SmolLM2), "qwen2" (q/k/v biases), "qwen3" (QK-norm). Tensor
 * names: token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm,
 * attn_k_norm, ffn_norm, ffn_gate, ffn_up, ffn_down}, output_norm, output (absent: tied),
 * rope_freqs (llama.cpp's llama3 frequency factors). A 2-D weight (out, in) has ggml ne = {in,
 * out}. Biases are taken where the file has them (Qwen2's q/k/v biases are required). Refused by
 * name: other architectures, experts, logit soft-capping, RoPE scaling other than none/linear,
 * partial rotary dimensions, tensors the model does not use. Not here: the GGUF format itself.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama_internal.h"
#include "strix/gguf.h"

/* `<arch>.<suffix>` into buf. */
static const char *akey(char *buf, size_t cap, const char *arch, const char *suffix) {
    snprintf(buf, cap, "%s.%s", arch, suffix);
    return buf;
}

/* A required positive integer `<arch>.<suffix>`. */
static strix_status need_int(const char *who, const strix_gguf *g, const char *arch,
                             const char *suffix, int64_t hi, int *out) {
    char key[128];
    int64_t v;
    if (!strix_gguf_get_int(g, akey(key, sizeof key, arch, suffix), &v))
        return strix_error(STRIX_ERR_FORMAT, "%s: missing integer metadata %s", who, key);
    if (v <= 0 || v > hi)
        return strix_error(STRIX_ERR_FORMAT, "%s: %s = %lld is out of range", who, key,
                           (long long)v);
    *out = (int)v;
    return STRIX_OK;
}

/* Hyperparameters of the metadata. */
static strix_status gguf_config(const char *who, const strix_gguf *g, strix_llama_config *c,
                                bool *has_rope_freqs) {
    memset(c, 0, sizeof *c);
    size_t len;
    const char *arch = strix_gguf_get_string(g, "general.architecture", &len);
    if (!arch) return strix_error(STRIX_ERR_FORMAT, "%s: no general.architecture", who);
    if (len >= sizeof c->architecture) len = sizeof c->architecture - 1;
    memcpy(c->architecture, arch, len);
    c->architecture[len] = '\0';
    const char *a = c->architecture;
    if (strcmp(a, "llama") != 0 && strcmp(a, "qwen2") != 0 && strcmp(a, "qwen3") != 0)
        return strix_error(STRIX_ERR_UNSUPPORTED,
                           "%s: GGUF architecture \"%s\" is not supported (supported: llama, "
                           "qwen2, qwen3)", who, a);
    char key[128];
    int64_t iv;
    double fv;
    if (strix_gguf_get_int(g, akey(key, sizeof key, a, "expert_count"), &iv) && iv > 0)
        return strix_error(STRIX_ERR_UNSUPPORTED,
                           "%s: mixture-of-experts models are not supported (%s = %lld)", who,
                           key, (long long)iv);
    static const char *const caps[] = {"attn_logit_softcapping", "final_logit_softcapping"};
    for (int i = 0; i < 2; i++)
        if (strix_gguf_get_float(g, akey(key, sizeof key, a, caps[i]), &fv) && fv != 0.0)
            return strix_error(STRIX_ERR_UNSUPPORTED,
                               "%s: logit soft-capping (%s) is not supported", who, key);
    STRIX_TRY(need_int(who, g, a, "embedding_length", 1 << 20, &c->hidden_size));
    STRIX_TRY(need_int(who, g, a, "feed_forward_length", 1 << 20, &c->intermediate_size));
    STRIX_TRY(need_int(who, g, a, "block_count", 4096, &c->num_layers));
    STRIX_TRY(need_int(who, g, a, "attention.head_count", 4096, &c->num_heads));
    c->num_kv_heads = c->num_heads;
    if (strix_gguf_has_key(g, akey(key, sizeof key, a, "attention.head_count_kv")))
        STRIX_TRY(need_int(who, g, a, "attention.head_count_kv", 4096, &c->num_kv_heads));
    c->max_position_embeddings = 2048;
    if (strix_gguf_has_key(g, akey(key, sizeof key, a, "context_length")))
        STRIX_TRY(need_int(who, g, a, "context_length", 1 << 30, &c->max_position_embeddings));
    c->head_dim = c->hidden_size / c->num_heads;
    if (strix_gguf_has_key(g, akey(key, sizeof key, a, "attention.key_length")))
        STRIX_TRY(need_int(who, g, a, "attention.key_length", 1 << 20, &c->head_dim));
    int vdim = c->head_dim, rdim = c->head_dim;
    if (strix_gguf_has_key(g, akey(key, sizeof key, a, "attention.value_length")))
        STRIX_TRY(need_int(who, g, a, "attention.value_length", 1 << 20, &vdim));
    if (vdim != c->head_dim)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s: value head size %d differs from key "
                           "head size %d", who, vdim, c->head_dim);
    if (strix_gguf_has_key(g, akey(key, sizeof key, a, "rope.dimension_count")))
        STRIX_TRY(need_int(who, g, a, "rope.dimension_count", 1 << 20, &rdim));
    if (rdim != c->head_dim)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s: partial rotary embeddings (%d of %d "
                           "dimensions) are not supported", who, rdim, c->head_dim);
    if (!strix_gguf_get_float(g, akey(key, sizeof key, a, "attention.layer_norm_rms_epsilon"),
                              &fv))
        return strix_error(STRIX_ERR_FORMAT, "%s: missing %s", who, key);
    c->rms_norm_eps = (float)fv;
    c->rope_theta = 10000.0f;
    if (strix_gguf_get_float(g, akey(key, sizeof key, a, "rope.freq_base"), &fv))
        c->rope_theta = (float)fv;
    // RoPE scaling: rope.scaling.type (none, linear) + rope.scaling.factor, or the older
    // rope.scale_linear; llama3 arrives as the rope_freqs tensor
    c->rope_scaling = STRIX_LLAMA_ROPE_NONE;
    c->rope_factor = 1.0f;
    const char *type = strix_gguf_get_string(g, akey(key, sizeof key, a, "rope.scaling.type"),
                                             &len);
    if (type && !(len == 4 && memcmp(type, "none", 4) == 0)) {
        if (!(len == 6 && memcmp(type, "linear", 6) == 0))
            return strix_error(STRIX_ERR_UNSUPPORTED, "%s: RoPE scaling \"%.*s\" is not "
                               "supported (supported: none, linear)", who,
                               (int)(len > 32 ? 32 : len), type);
        if (!strix_gguf_get_float(g, akey(key, sizeof key, a, "rope.scaling.factor"), &fv))
            return strix_error(STRIX_ERR_FORMAT, "%s: linear RoPE scaling without %s", who, key);
        c->rope_scaling = STRIX_LLAMA_ROPE_LINEAR;
        c->rope_factor = (float)fv;
    } else if (!type && strix_gguf_get_float(g, akey(key, sizeof key, a, "rope.scale_linear"),
                                             &fv) && fv != 1.0) {
        c->rope_scaling = STRIX_LLAMA_ROPE_LINEAR;
        c->rope_factor = (float)fv;
    }
    *has_rope_freqs = strix_gguf_find_tensor(g, "rope_freqs.weight") != NULL;
    if (*has_rope_freqs) {
        if (c->rope_scaling != STRIX_LLAMA_ROPE_NONE)
            return strix_error(STRIX_ERR_FORMAT, "%s: both rope_freqs and RoPE scaling", who);
        c->rope_scaling = STRIX_LLAMA_ROPE_FACTORS;
    }
    // the vocabulary: token_embd's rows
    const strix_gguf_tensor *emb = strix_gguf_find_tensor(g, "token_embd.weight");
    if (!emb) return strix_error(STRIX_ERR_FORMAT, "%s: missing tensor token_embd.weight", who);
    if (emb->ndim != 2 || emb->ne[1] <= 0 || emb->ne[1] > (1 << 22))
        return strix_error(STRIX_ERR_FORMAT, "%s: token_embd.weight is not a (vocab, hidden) "
                           "matrix", who);
    c->vocab_size = (int)emb->ne[1];
    if (strix_gguf_get_int(g, akey(key, sizeof key, a, "vocab_size"), &iv) && iv != c->vocab_size)
        return strix_error(STRIX_ERR_FORMAT, "%s: %s = %lld but token_embd.weight has %d rows",
                           who, key, (long long)iv, c->vocab_size);
    c->tie_word_embeddings = strix_gguf_find_tensor(g, "output.weight") == NULL;
    c->attention_bias = strcmp(a, "qwen2") == 0 ||
                        strix_gguf_find_tensor(g, "blk.0.attn_q.bias") != NULL;
    c->o_bias = strix_gguf_find_tensor(g, "blk.0.attn_output.bias") != NULL;
    c->qk_norm = strcmp(a, "qwen3") == 0;
    c->bos_token_id = -1;
    if (strix_gguf_get_int(g, "tokenizer.ggml.bos_token_id", &iv) && iv >= 0 && iv < c->vocab_size)
        c->bos_token_id = (int32_t)iv;
    static const char *const eos_keys[] = {"tokenizer.ggml.eos_token_id",
                                           "tokenizer.ggml.eot_token_id",
                                           "tokenizer.ggml.eom_token_id"};
    for (int i = 0; i < 3; i++) {
        if (!strix_gguf_get_int(g, eos_keys[i], &iv) || iv < 0 || iv >= c->vocab_size) continue;
        bool seen = false;
        for (int j = 0; j < c->n_eos; j++) seen = seen || c->eos_token_ids[j] == iv;
        if (!seen && c->n_eos < STRIX_LLAMA_MAX_EOS) c->eos_token_ids[c->n_eos++] = (int32_t)iv;
    }
    return llama_config_check(who, c);
}

// ---- tensors -----------------------------------------------------------------------------------

/* One tensor the model expects: GGUF name, (rows, cols) as (out, in) (cols 0: a vector), its
 * destination (a float32 vector, or a matrix held in blocks) and the head count of a Q/K
 * permutation to undo (0: none). */
typedef struct gexpected {
    char name[64];
    int64_t rows, cols;
    float *dst;
    llama_mat *mat;
    int perm_heads;
} gexpected;

static int gguf_expected(strix_llama *m, gexpected *list) {
    const strix_llama_config *c = &m->cfg;
    int64_t C = c->hidden_size, V = c->vocab_size, I = c->intermediate_size, D = c->head_dim;
    int64_t HD = (int64_t)c->num_heads * D, KD = (int64_t)c->num_kv_heads * D;
    bool llama = strcmp(c->architecture, "llama") == 0; /* the converter permutes Q and K */
    int qp = llama ? c->num_heads : 0, kp = llama ? c->num_kv_heads : 0;
    int n = 0;
#define GEXPECT_(dst_, mat_, r_, c_, perm_, ...)                                                \
    do {                                                                                       \
        if (list) {                                                                            \
            gexpected *e = &list[n];                                                           \
            snprintf(e->name, sizeof e->name, __VA_ARGS__);                                    \
            e->rows = (r_);                                                                    \
            e->cols = (c_);                                                                    \
            e->dst = (dst_);                                                                   \
            e->mat = (mat_);                                                                   \
            e->perm_heads = (perm_);                                                           \
        }                                                                                      \
        n++;                                                                                   \
    } while (0)
#define GEXPECT(dst_, r_, c_, perm_, ...) GEXPECT_(dst_, NULL, r_, c_, perm_, __VA_ARGS__)
#define GMAT(mat_, r_, c_, perm_, ...) GEXPECT_(NULL, mat_, r_, c_, perm_, __VA_ARGS__)
    GMAT(&m->embed, V, C, 0, "token_embd.weight");
    for (int l = 0; l < c->num_layers; l++) {
        llama_layer *L = &m->layers[l];
        GEXPECT(L->attn_norm, C, 0, 0, "blk.%d.attn_norm.weight", l);
        GMAT(&L->wq, HD, C, qp, "blk.%d.attn_q.weight", l);
        GMAT(&L->wk, KD, C, kp, "blk.%d.attn_k.weight", l);
        GMAT(&L->wv, KD, C, 0, "blk.%d.attn_v.weight", l);
        if (c->attention_bias) {
            GEXPECT(L->bq, HD, 0, qp, "blk.%d.attn_q.bias", l);
            GEXPECT(L->bk, KD, 0, kp, "blk.%d.attn_k.bias", l);
            GEXPECT(L->bv, KD, 0, 0, "blk.%d.attn_v.bias", l);
        }
        GMAT(&L->wo, C, HD, 0, "blk.%d.attn_output.weight", l);
        if (c->o_bias) GEXPECT(L->bo, C, 0, 0, "blk.%d.attn_output.bias", l);
        if (c->qk_norm) {
            GEXPECT(L->q_norm, D, 0, 0, "blk.%d.attn_q_norm.weight", l);
            GEXPECT(L->k_norm, D, 0, 0, "blk.%d.attn_k_norm.weight", l);
        }
        GEXPECT(L->ffn_norm, C, 0, 0, "blk.%d.ffn_norm.weight", l);
        GMAT(&L->wg, I, C, 0, "blk.%d.ffn_gate.weight", l);
        GMAT(&L->wu, I, C, 0, "blk.%d.ffn_up.weight", l);
        GMAT(&L->wd, C, I, 0, "blk.%d.ffn_down.weight", l);
    }
    GEXPECT(m->final_norm, C, 0, 0, "output_norm.weight");
    if (!c->tie_word_embeddings) GMAT(&m->head, V, C, 0, "output.weight");
#undef GMAT
#undef GEXPECT
#undef GEXPECT_
    return n;
}

/* Whether t has e's shape in ggml order (ne = {cols, rows}, or {rows} for a vector). */
static bool gguf_shape_ok(const strix_gguf_tensor *t, const gexpected *e) {
    if (e->cols == 0) return t->ndim == 1 && t->ne[0] == e->rows;
    return t->ndim == 2 && t->ne[0] == e->cols && t->ne[1] == e->rows;
}

/* Undoes convert_hf_to_gguf.py's LlamaModel.permute over `rows` rows of `row_bytes` bytes
 * (whole blocks, or floats): the HF row h·D + s·D/2 + i was written as h·D + 2i + s (s in
 * {0, 1}, i < D/2). */
static void unpermute(const void *src, void *dst, size_t rows, size_t row_bytes, int heads) {
    size_t D = rows / (size_t)heads, half = D / 2;
    for (size_t h = 0; h < (size_t)heads; h++)
        for (size_t s = 0; s < 2; s++)
            for (size_t i = 0; i < half; i++)
                memcpy((char *)dst + (h * D + s * half + i) * row_bytes,
                       (const char *)src + (h * D + 2 * i + s) * row_bytes, row_bytes);
}

/* Matrix e held in blocks: the file's bytes (rows unpermuted into a copy where needed, or
 * dequantized to F32 blocks when `dequantize`), in backend memory (a CPU backend uses them in
 * place). */
static strix_status gguf_matrix(strix_llama *m, const gexpected *e, const strix_gguf_tensor *t,
                                bool dequantize) {
    llama_mat *w = e->mat;
    size_t rows = (size_t)e->rows, cols = (size_t)e->cols, bytes = t->nbytes;
    w->type = (int)t->type;
    w->host = t->data;
    if (dequantize) {
        w->type = STRIX_BLOCK_F32;
        bytes = t->numel * sizeof(float);
        w->own_host = malloc(2 * bytes);
        if (!w->own_host) return strix_error(STRIX_ERR_ALLOC, "llama: out of memory");
        STRIX_TRY(strix_gguf_tensor_to_f32(t, w->own_host, t->numel));
        w->host = w->own_host;
    }
    if (e->perm_heads > 0) {
        void *copy = (char *)w->own_host + (dequantize ? bytes : 0);
        if (!dequantize && !(copy = w->own_host = malloc(bytes)))
            return strix_error(STRIX_ERR_ALLOC, "llama: out of memory");
        unpermute(w->host, copy, rows, bytes / rows, e->perm_heads);
        w->host = copy;
    }
    if (strix_backend_device(m->be) == STRIX_DEVICE_CPU) {
        w->dev = w->host;
        return STRIX_OK;
    }
    STRIX_TRY(strix_alloc(m->be, bytes, &w->own_dev));
    w->dev = w->own_dev;
    (void)cols;
    return strix_copy(m->be, w->own_dev, w->host, bytes, STRIX_COPY_H2D);
}

static strix_status gguf_tensors(const char *who, strix_llama *m, const strix_gguf *g,
                                 bool dequantize) {
    int n = gguf_expected(m, NULL);
    gexpected *list = calloc((size_t)n, sizeof *list);
    if (!list) return strix_error(STRIX_ERR_ALLOC, "llama: out of memory");
    gguf_expected(m, list);
    strix_status s = STRIX_OK;
    // every tensor of the file is one the model uses
    size_t count = strix_gguf_tensor_count(g);
    for (size_t i = 0; i < count && s == STRIX_OK; i++) {
        const char *name = strix_gguf_tensor_at(g, i)->name;
        bool known = strcmp(name, "rope_freqs.weight") == 0;
        for (int j = 0; j < n && !known; j++) known = strcmp(list[j].name, name) == 0;
        if (!known)
            s = strix_error(STRIX_ERR_FORMAT, "%s: unexpected tensor %s (not part of a %s model "
                            "with this metadata)", who, name, m->cfg.architecture);
    }
    size_t biggest = 0;
    for (int i = 0; i < n && s == STRIX_OK; i++) {
        const strix_gguf_tensor *t = strix_gguf_find_tensor(g, list[i].name);
        if (!t) {
            s = strix_error(STRIX_ERR_FORMAT, "%s: missing tensor %s", who, list[i].name);
        } else if (!gguf_shape_ok(t, &list[i])) {
            s = strix_error(STRIX_ERR_FORMAT, "%s: tensor %s has ne [%lld, %lld, %lld, %lld], "
                            "expected [%lld%s%lld]", who, list[i].name, (long long)t->ne[0],
                            (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                            (long long)(list[i].cols ? list[i].cols : list[i].rows),
                            list[i].cols ? ", " : "", (long long)(list[i].cols ? list[i].rows : 0));
        }
        if (t && !list[i].mat && t->numel > biggest) biggest = t->numel;
    }
    float *staging = s == STRIX_OK ? malloc(2 * biggest * sizeof(float)) : NULL;
    if (s == STRIX_OK && !staging) s = strix_error(STRIX_ERR_ALLOC, "llama: out of memory");
    for (int i = 0; i < n && s == STRIX_OK; i++) {
        const strix_gguf_tensor *t = strix_gguf_find_tensor(g, list[i].name);
        if (list[i].mat) {
            s = gguf_matrix(m, &list[i], t, dequantize);
            continue;
        }
        s = strix_gguf_tensor_to_f32(t, staging, biggest);
        const float *src = staging;
        if (s == STRIX_OK && list[i].perm_heads > 0) { /* a Q/K bias: rows of one float */
            unpermute(staging, staging + biggest, (size_t)list[i].rows, sizeof(float),
                      list[i].perm_heads);
            src = staging + biggest;
        }
        if (s == STRIX_OK) s = llama_upload(m, list[i].dst, src, t->numel);
    }
    free(staging);
    free(list);
    return s;
}

/* rope_freqs.weight: D/2 positive finite factors into host factors. */
static strix_status rope_factors(const char *who, const strix_gguf *g, int head_dim,
                                 float **out) {
    *out = NULL;
    const strix_gguf_tensor *t = strix_gguf_find_tensor(g, "rope_freqs.weight");
    if (t->ndim != 1 || t->ne[0] != head_dim / 2)
        return strix_error(STRIX_ERR_FORMAT, "%s: rope_freqs.weight has %lld values, expected %d",
                           who, (long long)t->ne[0], head_dim / 2);
    float *f = malloc(t->numel * sizeof(float));
    if (!f) return strix_error(STRIX_ERR_ALLOC, "llama: out of memory");
    strix_status s = strix_gguf_tensor_to_f32(t, f, t->numel);
    for (size_t i = 0; s == STRIX_OK && i < t->numel; i++)
        if (!(f[i] > 0.0f) || !isfinite(f[i]))
            s = strix_error(STRIX_ERR_FORMAT, "%s: rope_freqs.weight holds a non-positive "
                            "factor", who);
    if (s != STRIX_OK) {
        free(f);
        return s;
    }
    *out = f;
    return STRIX_OK;
}

// ---- tokenizer and chat template ---------------------------------------------------------------

static strix_status gguf_tokenizer(const char *who, strix_llama *m, const strix_gguf *g) {
    size_t model_len, pre_len = 0, n_tokens = 0, n_merges = 0;
    const char *model = strix_gguf_get_string(g, "tokenizer.ggml.model", &model_len);
    if (!model) return STRIX_OK; /* no tokenizer in the file */
    const char *pre = strix_gguf_get_string(g, "tokenizer.ggml.pre", &pre_len);
    strix_gguf_vtype et;
    if (!strix_gguf_get_array(g, "tokenizer.ggml.tokens", &et, &n_tokens) ||
        et != STRIX_GGUF_STRING)
        return strix_error(STRIX_ERR_FORMAT, "%s: tokenizer.ggml.tokens is not a string array",
                           who);
    bool has_merges = strix_gguf_get_array(g, "tokenizer.ggml.merges", &et, &n_merges);
    if (has_merges && et != STRIX_GGUF_STRING)
        return strix_error(STRIX_ERR_FORMAT, "%s: tokenizer.ggml.merges is not a string array",
                           who);
    size_t n_types = 0;
    bool has_types = strix_gguf_get_array(g, "tokenizer.ggml.token_type", &et, &n_types);
    if (has_types && n_types != n_tokens)
        return strix_error(STRIX_ERR_FORMAT, "%s: %zu token types for %zu tokens", who, n_types,
                           n_tokens);
    char *model_z = malloc(model_len + 1), *pre_z = malloc(pre_len + 1);
    const char **tokens = malloc((n_tokens + 1) * sizeof *tokens);
    size_t *token_lens = malloc((n_tokens + 1) * sizeof *token_lens);
    int32_t *types = has_types ? malloc((n_tokens + 1) * sizeof *types) : NULL;
    const char **merges = malloc((n_merges + 1) * sizeof *merges);
    size_t *merge_lens = malloc((n_merges + 1) * sizeof *merge_lens);
    strix_status s = STRIX_OK;
    if (!model_z || !pre_z || !tokens || !token_lens || (has_types && !types) || !merges ||
        !merge_lens)
        s = strix_error(STRIX_ERR_ALLOC, "llama: out of memory (tokenizer)");
    if (s == STRIX_OK) {
        memcpy(model_z, model, model_len);
        model_z[model_len] = '\0';
        if (pre) memcpy(pre_z, pre, pre_len);
        pre_z[pre_len] = '\0';
    }
    for (size_t i = 0; i < n_tokens && s == STRIX_OK; i++) {
        tokens[i] = strix_gguf_array_string(g, "tokenizer.ggml.tokens", i, &token_lens[i]);
        int64_t v = STRIX_TOKEN_NORMAL;
        if (types && !strix_gguf_array_int(g, "tokenizer.ggml.token_type", i, &v))
            s = strix_error(STRIX_ERR_FORMAT, "%s: tokenizer.ggml.token_type is not an integer "
                            "array", who);
        if (types) types[i] = (int32_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v);
    }
    for (size_t i = 0; i < n_merges && s == STRIX_OK; i++)
        merges[i] = strix_gguf_array_string(g, "tokenizer.ggml.merges", i, &merge_lens[i]);
    if (s == STRIX_OK) {
        int64_t v;
        strix_tokenizer_spec spec = {
            .model = model_z, .pre = pre ? pre_z : NULL, .n_tokens = n_tokens,
            .tokens = tokens, .token_lens = token_lens, .token_types = types,
            .n_merges = n_merges, .merges = merges, .merge_lens = merge_lens,
            .bos_id = -1, .eos_id = -1, .pad_id = -1, .unk_id = -1};
        if (strix_gguf_get_int(g, "tokenizer.ggml.bos_token_id", &v)) spec.bos_id = (int32_t)v;
        if (strix_gguf_get_int(g, "tokenizer.ggml.eos_token_id", &v)) spec.eos_id = (int32_t)v;
        if (strix_gguf_get_int(g, "tokenizer.ggml.padding_token_id", &v)) spec.pad_id = (int32_t)v;
        if (strix_gguf_get_int(g, "tokenizer.ggml.unknown_token_id", &v)) spec.unk_id = (int32_t)v;
        if (strix_gguf_get_int(g, "tokenizer.ggml.add_bos_token", &v)) spec.add_bos = v != 0;
        s = strix_tokenizer_from_spec(&spec, &m->tok);
        if (s != STRIX_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", strix_last_error());
            s = strix_error(s, "%s: tokenizer: %s", who, why);
        }
    }
    free(model_z);
    free(pre_z);
    free(tokens);
    free(token_lens);
    free(types);
    free(merges);
    free(merge_lens);
    return s;
}

static strix_status gguf_chat_template(const strix_gguf *g, char **out) {
    size_t len;
    const char *t = strix_gguf_get_string(g, "tokenizer.chat_template", &len);
    *out = NULL;
    if (!t) return STRIX_OK;
    *out = malloc(len + 1);
    if (!*out) return strix_error(STRIX_ERR_ALLOC, "llama: out of memory");
    memcpy(*out, t, len);
    (*out)[len] = '\0';
    return STRIX_OK;
}

strix_status llama_load_gguf(const char *path, const strix_llama_options *opt,
                             strix_llama **out) {
    *out = NULL;
    strix_gguf *g;
    STRIX_TRY(strix_gguf_open(path, &g));
    strix_llama_config c;
    bool has_factors = false;
    size_t max_ctx = 0;
    float *factors = NULL;
    strix_status s = gguf_config(path, g, &c, &has_factors);
    if (s == STRIX_OK) s = llama_choose_context(path, &c, opt, &max_ctx);
    if (s == STRIX_OK && has_factors) s = rope_factors(path, g, c.head_dim, &factors);
    strix_backend *be = NULL;
    strix_llama *m = NULL;
    if (s == STRIX_OK) s = llama_open_backend(opt, &be);
    if (s == STRIX_OK) s = llama_alloc(be, &c, max_ctx, factors, true, &m);
    free(factors);
    if (s == STRIX_OK) m->gguf = g; /* its mapping holds the weights; freed with the model */
    else strix_gguf_free(g);
    if (s == STRIX_OK) s = gguf_tensors(path, m, g, opt && opt->dequantize);
    if (s == STRIX_OK) s = gguf_tokenizer(path, m, g);
    if (s == STRIX_OK) s = gguf_chat_template(g, &m->chat_template);
    if (s != STRIX_OK) {
        strix_llama_free(m);
        return s;
    }
    *out = m;
    return STRIX_OK;
}
