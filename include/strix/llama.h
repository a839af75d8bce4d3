/*
 * strix/llama.h - Llama-family causal language models for inference and explanation: Llama
 * (SmolLM2, Llama 2/3), Qwen2/2.5 and Qwen3, loaded from a Hugging Face folder (config.json +
 * safetensors) or a GGUF file, run in float32 on a strix backend.
 *
 * The model (transformers 4.57 modeling_llama.py, modeling_qwen2.py, modeling_qwen3.py): token
 * embedding; per layer x += o(attn(rmsnorm(x))), x += down(silu(gate(h))·up(h)) with
 * h = rmsnorm(x); a final RMSNorm and the lm_head (the embedding when tied). Attention is
 * grouped-query (num_heads query heads share num_kv_heads K/V heads), causal, scaled by
 * head_dim^-1/2, with RoPE in the Hugging Face rotate-half layout (pairs (i, i + head_dim/2))
 * and optional q/k/v (and o) biases and Qwen3's QK-norm (RMSNorm over head_dim on q and k before
 * RoPE). RoPE tables are computed in double and rounded to float32 (inv_freq as transformers'
 * modeling_rope_utils.py: default, "linear", "llama3"; GGUF's rope_freqs factors).
 *
 * A Hugging Face folder's weights are upcast exactly to float32 at load (F16, BF16) into one
 * backend block. A GGUF file's weight matrices stay in the file's block format (memory-mapped; a
 * GPU backend gets a copy) and are multiplied by strix_matmul_blocks, which decodes each block
 * exactly as ggml dequantizes it: the float32 model's arithmetic on 4-8x fewer bytes; its norms
 * and biases are float32. The KV cache holds max_context positions per layer
 * at the K/V-head count, after QK-norm and RoPE; it is allocated at load. Logits and relevances
 * are returned in host memory. Not here: tokenization (strix/tokenizer.h), sampling and chat
 * (the strix command), training, batches of several sequences, MoE, sliding-window attention,
 * logit soft-capping, YaRN/dynamic/longrope RoPE (refused by name at load).
 */
#ifndef STRIX_LLAMA_H
#define STRIX_LLAMA_H

#include "strix/backend.h"
#include "strix/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* RoPE frequency scaling (strix_llama_config.rope_scaling). Append-only. */
enum {
    STRIX_LLAMA_ROPE_NONE = 0,   /* inv_freq_i = theta^(-2i/head_dim) */
    STRIX_LLAMA_ROPE_LINEAR = 1, /* inv_freq / factor */
    STRIX_LLAMA_ROPE_LLAMA3 = 2, /* Llama 3.1: low/high frequency bands, smooth in between */
    STRIX_LLAMA_ROPE_FACTORS = 3 /* GGUF's rope_freqs.weight: inv_freq_i / factor_i (llama.cpp's
                                    form of llama3 scaling) */
};

#define STRIX_LLAMA_MAX_EOS 4

/* Hyperparameters, from config.json (+ generation_config.json) or the GGUF metadata. */
typedef struct strix_llama_config {
    char architecture[32];       /* "llama", "qwen2", "qwen3" (model_type / general.architecture) */
    int vocab_size, hidden_size, intermediate_size, num_layers, num_heads, num_kv_heads, head_dim;
    int max_position_embeddings;
    float rms_norm_eps, rope_theta;
    int rope_scaling;            /* STRIX_LLAMA_ROPE_* */
    float rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_max_positions;
    bool tie_word_embeddings;
    bool attention_bias;         /* q, k and v projections have biases (Qwen2 always) */
    bool o_bias;                 /* the o projection has a bias (Llama/Qwen3 attention_bias) */
    bool qk_norm;                /* Qwen3 */
    int32_t bos_token_id;        /* -1 when unknown */
    int32_t eos_token_ids[STRIX_LLAMA_MAX_EOS];
    int n_eos;
} strix_llama_config;

typedef struct strix_llama strix_llama;

/* Load options; a zeroed struct (or NULL) gives the defaults. */
typedef struct strix_llama_options {
    const char *backend;         /* strix_backend_init name; NULL: "cpu" */
    int max_context;             /* KV-cache positions; 0: max_position_embeddings capped at 4096;
                                    larger than max_position_embeddings is refused */
    bool dequantize;             /* GGUF: hold every weight matrix as float32 instead of the file's
                                    blocks (4-8x the memory of Q8_0/Q4 weights; the same results
                                    bit for bit, since both are multiplied in one summation order) */
} strix_llama_options;

/* Loads a model. path: a folder with config.json and model.safetensors or a sharded
 * model.safetensors.index.json (+ optional generation_config.json for the EOS ids, tokenizer.json
 * for the tokenizer, tokenizer_config.json's "chat_template" or chat_template.jinja), or a .gguf
 * file (hyperparameters, tensors, tokenizer.ggml.* and tokenizer.chat_template from its metadata;
 * llama.cpp's Q/K row permutation of arch "llama" undone). Every expected tensor is checked for
 * presence and shape; an unexpected tensor is refused by name.
 * STRIX_ERR_IO (a file cannot be read), STRIX_ERR_FORMAT (malformed config/weights/metadata,
 * missing, unexpected, misshapen or non-float tensors), STRIX_ERR_UNSUPPORTED (an architecture or
 * feature named in the message), STRIX_ERR_ARG (bad options), STRIX_ERR_ALLOC, the backend's
 * statuses; one line in strix_last_error() naming the file. *out is NULL on failure. */
STRIX_API strix_status strix_llama_load(const char *path, const strix_llama_options *opt,
                                        strix_llama **out);

/* Frees the model, its backend and its tokenizer. NULL is a no-op. */
STRIX_API void strix_llama_free(strix_llama *m);

STRIX_API const strix_llama_config *strix_llama_get_config(const strix_llama *m);
/* The backend the model runs on (owned by the model). */
STRIX_API strix_backend *strix_llama_backend(const strix_llama *m);
/* The KV-cache capacity in positions (the longest sequence forward/decode/explain accept). */
STRIX_API size_t strix_llama_max_context(const strix_llama *m);
/* The tokenizer of the files (tokenizer.json or GGUF metadata); NULL when they have none. */
STRIX_API const strix_tokenizer *strix_llama_tokenizer(const strix_llama *m);
/* The chat template (Jinja source, NUL-terminated); NULL when none. */
STRIX_API const char *strix_llama_chat_template(const strix_llama *m);
/* Number of float32 parameters held (the tied head counted once). */
STRIX_API size_t strix_llama_parameter_count(const strix_llama *m);

/* Full forward of ids[0..n) from position 0: logits (n, vocab) row-major into host memory
 * `logits` (=). The KV cache is overwritten and then holds these n positions (decode may
 * continue from them). STRIX_ERR_ARG for n == 0, n > max_context or an id outside [0, vocab),
 * checked before anything runs (the cache is then unchanged); backend statuses. */
STRIX_API strix_status strix_llama_forward(strix_llama *m, const int32_t *ids, size_t n,
                                           float *logits);

/* KV-cache decoding: keeps the first `keep` cached positions (keep <= strix_llama_cached) and
 * appends ids[0..n) at positions keep..keep+n-1 (processed in chunks); writes the last
 * position's logits (vocab floats, host) into `logits` (=). The result equals the full forward's
 * last row up to rounding. STRIX_ERR_ARG for n == 0, keep > cached, keep + n > max_context or
 * an id out of range (checked first: the cache is then unchanged); on a backend failure the
 * cache holds `keep` positions. */
STRIX_API strix_status strix_llama_decode(strix_llama *m, size_t keep, const int32_t *ids,
                                          size_t n, float *logits);

/* Positions currently in the KV cache. */
STRIX_API size_t strix_llama_cached(const strix_llama *m);

/* What strix_llama_explain explained. */
typedef struct strix_llama_explain_info {
    int32_t argmax;             /* the last position's top token (ties: the lower id) */
    float max_logit;            /* its logit */
    int32_t target;             /* the explained token (argmax when asked for -1) */
    float target_logit;
    int32_t contrast;           /* -1 without */
    float contrast_logit;       /* NaN without */
    double explained;           /* target_logit - contrast_logit (or target_logit): the output
                                   relevance, relevance_out_sum */
    double relevance_out_sum;
    double relevance_in_sum;    /* Σ relevance over the tokens (double, ascending) */
} strix_llama_explain_info;

/* AttnLRP (Achtibat et al. 2024) of logit[target] (minus logit[contrast] when contrast >= 0) at
 * the last position of ids[0..n) back to the input tokens, with the rules of LXT 2.1's
 * `lxt.efficient` patches for Llama/Qwen2/Qwen3 in their Input×Gradient form (Arras et al.
 * 2025): the identity rule through every RMSNorm (its 1/rms held constant) and SiLU (the
 * ratio silu(x)/(x + 1e-10)), the uniform rule (half to each factor) for gate·up, q·kᵀ and
 * attention·v, the softmax's own gradient (AttnLRP's softmax rule), Linear layers by their
 * gradient (the epsilon rule with the bias in the denominator, eps -> 0), RoPE by its inverse
 * rotation. relevance[t] (n floats, host, =) = Σ_d x0[t,d]·g[t,d] at the token embeddings x0,
 * summed in double with d ascending; the output relevance is `explained` (gradient seed 1 at
 * target, -1 at contrast: LXT's `logits[0, -1, target].backward()`). target -1 explains the
 * argmax. The KV cache is overwritten and holds ids afterwards (as strix_llama_forward).
 * info may be NULL. STRIX_ERR_ARG for n == 0, n > max_context, ids or target/contrast out of
 * range, contrast == target; STRIX_ERR_NUMERIC for non-finite logits; STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_llama_explain(strix_llama *m, const int32_t *ids, size_t n,
                                           int32_t target, int32_t contrast, float *relevance,
                                           strix_llama_explain_info *info);

#ifdef __cplusplus
}
#endif
#endif
