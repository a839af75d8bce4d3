/*
 * strix/gpt.h - the character-level GPT (nanoGPT layout, microGPT options): token embedding,
 * learned positions or RoPE, pre-norm transformer blocks (causal multi-head attention with uniform
 * or heterogeneous head sizes, MLP 4x with GELU or ReLU), final LayerNorm, an untied (or tied)
 * output head. Built from the modules of strix/nn.h on one parameter block (strix/params.h).
 *
 * Not here: tokenisation and data (strix/data.h), checkpoints (strix/checkpoint.h), the training
 * loop (tools/strix).
 */
#ifndef STRIX_GPT_H
#define STRIX_GPT_H

#include "strix/params.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STRIX_GPT_MAX_HEADS 64

typedef enum strix_mlp_act { STRIX_MLP_GELU = 0, STRIX_MLP_RELU = 1 } strix_mlp_act;

typedef struct strix_gpt_config {
    int vocab_size;      /* V */
    int block_size;      /* maximum context T */
    int n_layer;         /* L */
    int n_head;          /* NH (uniform heads of d_model/n_head), or the count of head_sizes */
    int d_model;         /* C */
    int head_sizes[STRIX_GPT_MAX_HEADS]; /* heterogeneous heads when head_sizes[0] > 0; sum = C */
    int d_ff;            /* MLP hidden size; 0 means 4·C */
    strix_mlp_act mlp_act;
    bool rope;           /* RoPE on q,k (adjacent pairs) instead of learned positions */
    float rope_base;     /* 10000 */
    bool tie_weights;    /* lm_head shares the token embedding */
    bool bias;           /* Linear and LayerNorm biases (true, as nanoGPT's CPU config) */
    float ln_eps;        /* 1e-5 */
} strix_gpt_config;

/* Defaults: config A of DESIGN.md with vocab_size 0 (set it from the data). */
STRIX_API strix_gpt_config strix_gpt_config_default(void);

/* Validates a configuration: positive sizes, heads dividing d_model (or head sizes summing to
 * it), even head size with RoPE. Returns STRIX_ERR_ARG with a message naming the bad field. */
STRIX_API strix_status strix_gpt_config_check(const strix_gpt_config *c);

typedef struct strix_gpt strix_gpt;

/* Builds a GPT on backend `be` with parameters declared and allocated (all zero; call
 * strix_gpt_init_weights or load a checkpoint). Activations are allocated lazily for the largest
 * (B,T) seen. STRIX_ERR_ARG for a bad config, STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_gpt_new(strix_backend *be, const strix_gpt_config *c,
                                     strix_gpt **out);
STRIX_API void strix_gpt_free(strix_gpt *g);

STRIX_API const strix_gpt_config *strix_gpt_config_of(const strix_gpt *g);
/* The parameter block; names follow nanoGPT's state dict ("transformer.wte.weight", ...). */
STRIX_API strix_params *strix_gpt_params(strix_gpt *g);

/* nanoGPT initialisation: Linear/Embedding N(0, 0.02), residual projections (attn.c_proj,
 * mlp.c_proj) N(0, 0.02/sqrt(2L)), biases 0, LayerNorm weight 1, drawn from `seed`. */
STRIX_API strix_status strix_gpt_init_weights(strix_gpt *g, uint64_t seed);

/* Forward over ids (B,T) (host int32, each in [0,V)), T <= block_size. With targets (host int32
 * (B,T), or NULL) also computes the mean cross-entropy into *loss and keeps what backward needs.
 * Logits (B,T,V) stay in backend memory: strix_gpt_logits(). STRIX_ERR_ARG for bad ids/sizes. */
STRIX_API strix_status strix_gpt_forward(strix_gpt *g, const int32_t *ids, const int32_t *targets,
                                         int B, int T, float *loss);
STRIX_API const float *strix_gpt_logits(const strix_gpt *g);

/* Backward of the last forward with targets: parameter grads `+=` (call zero_grad first). */
STRIX_API strix_status strix_gpt_backward(strix_gpt *g);

/* Incremental decoding with a KV cache (batch 1): strix_gpt_decode_reset() empties the cache;
 * strix_gpt_decode_step() appends one token at the next position (< block_size) and writes the
 * next-token logits (V floats) to host memory `logits`. Each step costs one position. */
STRIX_API strix_status strix_gpt_decode_reset(strix_gpt *g);
STRIX_API strix_status strix_gpt_decode_step(strix_gpt *g, int32_t token, float *logits);
/* Positions currently in the cache. */
STRIX_API int strix_gpt_decode_pos(const strix_gpt *g);

#ifdef __cplusplus
}
#endif
#endif
