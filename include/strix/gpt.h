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

#include "strix/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STRIX_GPT_MAX_HEADS 64

typedef struct strix_gpt_config {
    int vocab_size;      /* V */
    int block_size;      /* maximum context T */
    int n_layer;         /* L */
    int n_head;          /* NH (uniform heads of d_model/n_head), or the count of head_sizes */
    int d_model;         /* C */
    int head_sizes[STRIX_GPT_MAX_HEADS]; /* heterogeneous heads when head_sizes[0] > 0; sum = C */
    int d_ff;            /* MLP hidden size; 0 means 4·C */
    strix_act mlp_act;   /* STRIX_ACT_GELU (erf form) or STRIX_ACT_RELU; "gelu"/"relu" in
                          * checkpoints */
    bool rope;           /* RoPE on q,k (adjacent pairs) instead of learned positions */
    float rope_base;     /* 10000 */
    bool tie_weights;    /* lm_head shares the token embedding */
    bool bias;           /* Linear and LayerNorm biases (true, as nanoGPT's CPU config) */
    float ln_eps;        /* 1e-5 */
    float dropout;       /* p in [0, 1) (nanoGPT GPTConfig.dropout; 0, the default: none): on
                          * the sum of token and position embeddings, the attention
                          * probabilities, and the attention and MLP outputs before each
                          * residual add; only in training forwards with targets (see
                          * strix_gpt_set_training). "dropout" in checkpoints (missing: 0) */
} strix_gpt_config;

/* Defaults: config A of DESIGN.md with vocab_size 0 (set it from the data). */
STRIX_API strix_gpt_config strix_gpt_config_default(void);

/* Validates a configuration: positive sizes, heads dividing d_model (or head sizes summing to
 * it), even head size with RoPE, dropout in [0, 1). Returns STRIX_ERR_ARG with a message naming the bad field. */
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
 * Logits (B,T,V) stay in backend memory: strix_gpt_logits(). STRIX_ERR_ARG for bad ids/sizes.
 * Dropout applies iff config dropout > 0, the model is in training mode and targets != NULL: the
 * masks of this forward derive from (dropout key, forwards since the key was set, site), see
 * strix_gpt_set_dropout_key; backward follows them. Otherwise (p = 0, eval mode, no targets, and
 * always for decoding and explanations) nothing is dropped and no extra kernel runs. */
STRIX_API strix_status strix_gpt_forward(strix_gpt *g, const int32_t *ids, const int32_t *targets,
                                         int B, int T, float *loss);
STRIX_API const float *strix_gpt_logits(const strix_gpt *g);

/* PyTorch's model.train() (true, the mode a new GPT starts in) / model.eval() (false): only
 * dropout depends on it; evaluation of a val loss with dropout > 0 needs eval mode. */
STRIX_API void strix_gpt_set_training(strix_gpt *g, bool training);
STRIX_API bool strix_gpt_training(const strix_gpt *g);
/* Selects the dropout masks of the next training forwards: the k-th dropping forward after this
 * call (k = 0, 1, ...) uses seed s = strix_seed_derive(key, k); the embedding site then uses
 * strix_seed_derive(s, 0) and block l strix_seed_derive(s, 1 + l) (its sites: see
 * strix_block_set_dropout_seed), each at element offset 0. So a mask is a pure function of
 * (key, k, layer, site, element): the trainer adapter sets key = derive(derive(run seed, step),
 * micro-batch), which makes resumed runs and any thread count bit-identical. A new GPT has key 0. */
STRIX_API void strix_gpt_set_dropout_key(strix_gpt *g, uint64_t key);

/* Backward of the last forward with targets: parameter grads `+=` (call zero_grad first).
 * Shorthand for strix_gpt_backward_scaled(g, 1) (bit-identical). */
STRIX_API strix_status strix_gpt_backward(strix_gpt *g);

/* Backward of scale·loss: parameter grads `+=` scale·∂loss/∂θ, PyTorch's `(loss /
 * accum).backward()` for gradient accumulation (scale = strix_grad_accum_scale(1, accum)). The
 * scale multiplies the loss's seed gradient dlogits once, before the backward (scale 1 skips it:
 * the path of strix_gpt_backward); a scale other than 1 consumes the forward (another backward
 * needs a new forward). STRIX_ERR_ARG without a forward with targets or for a non-finite
 * scale; backend errors. */
STRIX_API strix_status strix_gpt_backward_scaled(strix_gpt *g, float scale);

/* Incremental decoding with a KV cache (batch 1): strix_gpt_decode_reset() empties the cache;
 * strix_gpt_decode_step() appends one token at the next position (< block_size) and writes the
 * next-token logits (V floats) to host memory `logits`. Each step costs one position. */
STRIX_API strix_status strix_gpt_decode_reset(strix_gpt *g);
STRIX_API strix_status strix_gpt_decode_step(strix_gpt *g, int32_t token, float *logits);
/* Positions currently in the cache. */
STRIX_API int strix_gpt_decode_pos(const strix_gpt *g);

// ---- explanations (AttnLRP and gradient methods) -----------------------------------------------

/* How strix_gpt_explain attributes the prediction to the input positions.
 *   LRP                   AttnLRP (the default; cfg->rule picks the rules)
 *   GRADIENT_X_INPUT      e ⊙ ∂f/∂e (Captum InputXGradient)
 *   INTEGRATED_GRADIENTS  (Σ_k w_k·∂f/∂e at alpha_k·e) ⊙ e, Gauss-Legendre points (Captum
 *                         IntegratedGradients' default method) over ig_steps, baseline e' = 0
 *   SALIENCY              |∂f/∂e| (Captum Saliency, abs=True)
 * where e (T,C) are the token embeddings wte[id] of the explained positions (the position
 * embeddings are held fixed, as Captum's layer attributions on transformer.wte do), f is the
 * explained output (the target logit, minus the contrast's logit), and each position's value is
 * the sum over d_model of its row (for saliency: the L1 norm of the gradient row). */
typedef enum strix_gpt_explain_method {
    STRIX_GPT_EXPLAIN_LRP,
    STRIX_GPT_EXPLAIN_GRADIENT_X_INPUT,
    STRIX_GPT_EXPLAIN_INTEGRATED_GRADIENTS,
    STRIX_GPT_EXPLAIN_SALIENCY
} strix_gpt_explain_method;

/* What strix_gpt_explain explains and with which rules. */
typedef struct strix_gpt_explain_config {
    strix_gpt_explain_method method; /* default LRP */
    int ig_steps;         /* INTEGRATED_GRADIENTS: points of the integral, >= 1 (default 50, as
                           * Captum's n_steps) */
    strix_lrp_rule rule;  /* rule.kind is the rule of every Linear (c_attn, c_proj, c_fc, mlp's
                           * c_proj, lm_head); rule.epsilon also stabilises the residual splits,
                           * the bilinear and RoPE rules; layer_norm_detach_std picks LayerNorm's
                           * rule. Default: LXT's AttnLRP config, epsilon 1e-6 with the bias in
                           * the denominator and the std of LayerNorm held constant */
    bool one_hot_seed;    /* LRP only. false (default): the relevance at the output is the
                           * target logit; true: 1 (the Zennit/LXT convention) */
    int32_t target;       /* token whose next-token logit is explained; -1: the predicted one */
    int32_t contrast;     /* -1: none; else explain logit[target] − logit[contrast] (seeded with
                           * minus its logit, or −1 with one_hot_seed) */
} strix_gpt_explain_config;

/* One explained prediction; the arrays are host memory owned by the struct. */
typedef struct strix_gpt_explanation {
    int T;                      /* positions explained: the last min(n, block_size) ids */
    int32_t predicted;          /* argmax of the next-token logits (ties: lower id) */
    float predicted_prob;       /* its softmax probability */
    int32_t target;             /* the explained token (== predicted when cfg target is -1) */
    float target_prob, target_logit;
    float *relevance;           /* (T): relevance of each input token: its share of
                                 * x0 = wte[id] + wpe[pos], summed over d_model */
    float *relevance_position;  /* (T): the share of the learned position embedding wpe[pos]
                                 * (summed over d_model); NULL with RoPE */
    double relevance_out_sum;   /* LRP: Σ relevance seeded at the output; gradient methods: the
                                 * explained output f(x) */
    double relevance_in_sum;    /* Σ relevance reaching the embeddings, tokens and positions
                                 * (conservation check) */
    double softmax_gap;         /* LRP: relevance the softmax rule did not conserve, summed
                                 * over layers and heads: with the bias out of the denominator and
                                 * a tiny epsilon, in_sum ≈ out_sum − softmax_gap; NaN for the
                                 * gradient methods */
    double baseline_output;     /* INTEGRATED_GRADIENTS: f at the baseline (zero token
                                 * embeddings); NaN for the other methods */
    double conserved_sum;       /* what relevance_in_sum equals when the method conserves: LRP
                                 * relevance_out_sum, INTEGRATED_GRADIENTS f(x) − f(baseline)
                                 * (completeness, approached as ig_steps grows); NaN for
                                 * GRADIENT_X_INPUT and SALIENCY, which promise no such sum */
} strix_gpt_explanation;

/* Defaults of the config above. */
STRIX_API strix_gpt_explain_config strix_gpt_explain_defaults(void);

/* Explains the next-token prediction after ids[0..n) (host int32; the last block_size ids are
 * used) with cfg->method. LRP: AttnLRP (Achtibat et al. 2024): an eval forward, then relevance
 * from the last position's target
 * logit back through lm_head, ln_f and the blocks (each: epsilon split of both residual sums,
 * MLP with the activation passing relevance through, attention with the softmax rule, the
 * bilinear rule for q·kᵀ and P·v, the RoPE rule, LayerNorm per cfg->rule) to x0 = wte[id] +
 * wpe[pos], split between the two by the epsilon rule and summed over d_model per position.
 * cfg NULL: the defaults. Sets the rule of every module of the model and overwrites its
 * activations (a later strix_gpt_backward needs a new forward). STRIX_ERR_ARG for n <= 0, bad
 * ids, a target or contrast outside [0, V) (other than -1), contrast == target, or a malformed
 * rule; STRIX_ERR_UNSUPPORTED for a rule kind a module does not implement (checked before
 * anything runs); STRIX_ERR_NUMERIC for a non-finite next-token logit; STRIX_ERR_ALLOC. On error
 * *out is zeroed.
 * The gradient methods (see strix_gpt_explain_method) run the library's explainers
 * (strix/attribution.h) on the model from the token embeddings to the last position's logits,
 * with every parameter frozen for the call (Linear layers then skip their parameter gradients;
 * LayerNorm's still accumulate, so zero the grads before training on); relevance_position is
 * NULL. STRIX_ERR_ARG also for an unknown method or ig_steps < 1. */
STRIX_API strix_status strix_gpt_explain(strix_gpt *g, const int32_t *ids, int n,
                                         const strix_gpt_explain_config *cfg,
                                         strix_gpt_explanation *out);
/* Frees the arrays of e and zeroes the struct. NULL is a no-op. */
STRIX_API void strix_gpt_explanation_free(strix_gpt_explanation *e);

/* The explained output f of cfg (NULL: the defaults) for the prompt ids[0..n) (host int32; the
 * last block_size ids are used), into *value: logit[target] − logit[contrast] (no contrast: the
 * target's logit; target -1: the predicted token's) of the next-token logits, from one eval
 * forward (overwrites the model's activations). What a deletion check recomputes after changing
 * the prompt. Statuses as strix_gpt_explain's argument checks; STRIX_ERR_NUMERIC for a
 * non-finite logit. */
STRIX_API strix_status strix_gpt_explain_output(strix_gpt *g, const int32_t *ids, int n,
                                                const strix_gpt_explain_config *cfg,
                                                double *value);

#ifdef __cplusplus
}
#endif
#endif
