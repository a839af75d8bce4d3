/*
 * llama_internal.h - the layout of struct strix_llama, shared by the files of src/models/llama:
 * config.c (config.json, validation, RoPE frequencies), load.c (allocation, safetensors, the
 * public accessors), gguf_load.c (GGUF files), forward.c (the layers, forward and KV-cache
 * decoding), explain.c (AttnLRP). Internal: not installed.
 */
#ifndef STRIX_LLAMA_INTERNAL_H
#define STRIX_LLAMA_INTERNAL_H

#include "strix/gguf.h"
#include "strix/llama.h"

/* A weight matrix (out, in): float32 in the parameter block (a Hugging Face folder), or the
 * blocks of a GGUF tensor as the file holds them (any block type, F32 included), multiplied by
 * strix_matmul_blocks: 4-6x fewer bytes per token than float32 for Q4/Q8 weights, and the same
 * bits as the float32 weights they dequantize to (strix_matmul_blocks sums in one order for
 * every type). */
typedef struct llama_mat {
    float *f;             /* (out, in) float32 view of the parameter block; NULL: blocks */
    const void *dev;      /* blocks in backend memory (a CPU backend: the file's mapping) */
    const void *host;     /* the same blocks in host memory (decoding rows) */
    void *own_dev;        /* backend memory of dev to free (a GPU copy, Q/K rows unpermuted) */
    void *own_host;       /* host memory of host to free (Q/K rows unpermuted) */
    int type;             /* strix_block_type of the blocks */
    size_t rows, cols;    /* out, in */
} llama_mat;

/* One layer's parameters (views into the model's block; absent ones NULL) and KV cache. */
typedef struct llama_layer {
    float *attn_norm;            /* (C) */
    llama_mat wq; float *bq;     /* (H·D, C), (H·D) */
    llama_mat wk; float *bk;     /* (KV·D, C), (KV·D) */
    llama_mat wv; float *bv;     /* (KV·D, C), (KV·D) */
    llama_mat wo; float *bo;     /* (C, H·D), (C) */
    float *q_norm, *k_norm;      /* (D) each, Qwen3 */
    float *ffn_norm;             /* (C) */
    llama_mat wg, wu, wd;        /* (I, C), (I, C), (C, I) */
    float *k_cache, *v_cache;    /* (max_ctx, KV·D) each: token-major, after QK-norm and RoPE */
} llama_layer;

/* Scratch of one pass over up to `rows` tokens attending to up to `ctx` positions (backend
 * memory, one block). The names are the forward's intermediates, left there for explain.c. */
typedef struct llama_work {
    size_t rows, ctx;
    float *block;
    float *xn, *rms, *rms2;      /* (rows, C), (rows), (rows): the two norms' inputs' rms */
    float *q, *k, *v;            /* (rows, H·D), (rows, KV·D) x2: after QK-norm and RoPE (q, k) */
    float *qrms, *krms;          /* (rows·H), (rows·KV): QK-norm rms */
    float *scores;               /* (rows, ctx): one head at a time */
    float *attn, *o;             /* (rows, H·D), (rows, C) */
    float *gate, *act, *up, *h;  /* (rows, I) each: gate pre-activation, silu(gate), up, act·up */
} llama_work;

struct strix_llama {
    strix_backend *be;
    strix_llama_config cfg;
    size_t max_ctx;
    float *params;               /* the parameter block (backend) */
    size_t n_params;
    llama_mat embed, head;       /* (V, C); head unused when tied */
    const llama_mat *lm_head;    /* &head, or &embed when tied */
    float *final_norm;
    strix_gguf *gguf;            /* a GGUF model's file, mapped while the model lives */
    llama_layer *layers;
    float *rope_freq_factors;    /* host (D/2) for STRIX_LLAMA_ROPE_FACTORS, else NULL */
    float *rope_cos, *rope_sin;  /* backend (max_ctx, D/2) */
    float *cache;                /* backend: every layer's K and V cache */
    size_t cached;
    llama_work work;             /* decode chunks */
    size_t chunk;                /* tokens per decode chunk */
    float *logits_dev;           /* (chunk, V) */
    float *x_dev;                /* (chunk, C): the residual stream of a chunk */
    int32_t *ids_dev;            /* (max_ctx) */
    strix_tokenizer *tok;
    char *chat_template;
};

// ---- config.c ----------------------------------------------------------------------------------

/* Parses config.json at `path` (and generation_config.json beside it when present) into *c.
 * STRIX_ERR_IO, STRIX_ERR_FORMAT, STRIX_ERR_UNSUPPORTED naming the file. */
strix_status llama_config_from_json(const char *path, const char *gen_path,
                                    strix_llama_config *c);

/* Range and consistency checks of a config from either source; `who` names the file. */
strix_status llama_config_check(const char *who, const strix_llama_config *c);

/* The RoPE inverse frequencies (D/2 doubles) of c, computed in double (transformers'
 * modeling_rope_utils formulas); factors: D/2 divisors for STRIX_LLAMA_ROPE_FACTORS. */
void llama_rope_inv_freq(const strix_llama_config *c, const float *factors, double *inv_freq);

// ---- load.c ------------------------------------------------------------------------------------

/* Allocates the model for config c on backend `be` (taken over): the parameter block with the
 * layer views, the RoPE tables, the KV cache and the decode scratch. max_ctx already chosen.
 * mats_in_blocks: the weight matrices get no float32 room (a GGUF model sets their blocks). */
strix_status llama_alloc(strix_backend *be, const strix_llama_config *c, size_t max_ctx,
                         const float *rope_factors, bool mats_in_blocks, strix_llama **out);

/* Copies n host floats to backend memory dst (a view of the parameter block). */
strix_status llama_upload(strix_llama *m, float *dst, const float *src, size_t n);

/* Reads a GGUF file into a model (gguf_load.c). */
strix_status llama_load_gguf(const char *path, const strix_llama_options *opt,
                             strix_llama **out);

/* Resolves the backend name and context of the options (shared by both loaders). */
strix_status llama_open_backend(const strix_llama_options *opt, strix_backend **be);
strix_status llama_choose_context(const char *who, const strix_llama_config *c,
                                  const strix_llama_options *opt, size_t *max_ctx);

// ---- forward.c ---------------------------------------------------------------------------------

/* Scratch for `rows` tokens and `ctx` positions (grown only). */
strix_status llama_work_ensure(strix_llama *m, llama_work *w, size_t rows, size_t ctx);
void llama_work_free(strix_llama *m, llama_work *w);

/* Layer l over x (T, C) in place, T <= w->rows, at positions pos0..pos0+T-1 (pos0 + T <=
 * w->ctx): writes the layer's K/V cache there and leaves the intermediates in w. */
strix_status llama_layer_forward(strix_llama *m, int l, float *x, size_t T, size_t pos0,
                                 llama_work *w);

/* One head's attention probabilities (T, ctx) into `probs` for T queries at pos0 over the
 * cache of layer l (q (T, H·D) as the forward left it): scale·q·kᵀ, causal mask, softmax. */
strix_status llama_head_probs(strix_llama *m, int l, int head, const float *q, size_t T,
                              size_t pos0, float *probs);

/* Checks ids[0..n) against the vocabulary and n against max_ctx - start. */
strix_status llama_check_ids(const strix_llama *m, const char *who, const int32_t *ids,
                             size_t n, size_t start);

/* y (T, out) = x (T, in) · Wᵀ (+ b): nn.Linear (W float32 or blocks). */
strix_status llama_linear(strix_backend *be, const float *x, const llama_mat *w, const float *b,
                          float *y, size_t T, size_t in, size_t out);

/* The embedding rows of ids[0..n) (host ids) into x (n, C) in backend memory. */
strix_status llama_embed(strix_llama *m, const int32_t *ids, size_t n, float *x);

/* W as float32 in backend memory: W's own view, or its blocks decoded into scratch (backend
 * memory, rows·cols floats) through the host staging buffer stage (rows·cols floats, or NULL on
 * a CPU backend, which decodes in place). */
strix_status llama_mat_dense(strix_llama *m, const llama_mat *w, float *scratch, float *stage,
                             const float **out);

/* Row r of W as float32 into host memory `row` (cols floats). */
strix_status llama_mat_row(strix_llama *m, const llama_mat *w, size_t r, float *row);

/* Frees what a matrix owns. */
void llama_mat_free(strix_llama *m, llama_mat *w);

#endif
