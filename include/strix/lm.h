/*
 * strix/lm.h - one handle for a character language model of any architecture: the GPT
 * (strix/gpt.h) or a sequence model (strix/seqlm.h: RNN, LSTM, GRU, Mamba, RWKV, RetNet). What
 * the command, the trainer adapter, the generator and the checkpoints use, so none of them
 * branches on the architecture; each call forwards to the model's own function (whose
 * documentation holds).
 *
 * Not here: the models themselves, the checkpoint format (strix/checkpoint.h).
 */
#ifndef STRIX_LM_H
#define STRIX_LM_H

#include "strix/gpt.h"
#include "strix/gpt_train.h"
#include "strix/sample.h"
#include "strix/seqlm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The configuration of a model of any architecture: `gpt` when arch is STRIX_ARCH_GPT, else
 * `seq` (with seq.arch == arch). The other member is ignored. */
typedef struct strix_lm_config {
    strix_arch arch;
    strix_gpt_config gpt;
    strix_seqlm_config seq;
} strix_lm_config;

/* A GPT's configuration as an strix_lm_config (arch GPT), and a sequence model's (arch =
 * c->arch). */
STRIX_API strix_lm_config strix_lm_config_of_gpt(const strix_gpt_config *c);
STRIX_API strix_lm_config strix_lm_config_of_seq(const strix_seqlm_config *c);
/* strix_gpt_config_check or strix_seqlm_config_check by arch (STRIX_ERR_ARG for an unknown
 * arch). */
STRIX_API strix_status strix_lm_config_check(const strix_lm_config *c);
/* The vocabulary size V and block (training window) of the configuration. */
STRIX_API int strix_lm_config_vocab(const strix_lm_config *c);
STRIX_API int strix_lm_config_block(const strix_lm_config *c);
STRIX_API int strix_lm_config_layers(const strix_lm_config *c);
STRIX_API int strix_lm_config_d_model(const strix_lm_config *c);

/* The configuration as compact JSON (caller frees with free()): the GPT's is
 * strix_gpt_config_to_json's; a sequence model's holds every field of strix_seqlm_config but
 * arch (checkpoints store the arch's name beside it). from_json reads it back for `arch`:
 * STRIX_ERR_FORMAT for malformed JSON, missing fields or values outside their type. */
STRIX_API strix_status strix_lm_config_to_json(const strix_lm_config *c, char **json);
STRIX_API strix_status strix_lm_config_from_json(strix_arch arch, const char *json,
                                                 strix_lm_config *c);

typedef struct strix_lm strix_lm;

/* Builds the model of c on be (parameters zero, as strix_gpt_new / strix_seqlm_new). */
STRIX_API strix_status strix_lm_new(strix_backend *be, const strix_lm_config *c, strix_lm **out);
/* A handle over an existing GPT, borrowed: strix_lm_free frees the handle, not g. */
STRIX_API strix_status strix_lm_wrap_gpt(strix_gpt *g, strix_lm **out);
/* Frees the handle and the model it built (not a wrapped GPT). NULL is a no-op. */
STRIX_API void strix_lm_free(strix_lm *lm);

STRIX_API strix_arch strix_lm_arch(const strix_lm *lm);
/* The configuration (the model's, copied at construction; a model's config never changes). */
STRIX_API const strix_lm_config *strix_lm_config_get(const strix_lm *lm);
/* The model behind the handle: the GPT (NULL for another arch) or the sequence model. */
STRIX_API strix_gpt *strix_lm_gpt(strix_lm *lm);
STRIX_API strix_seqlm *strix_lm_seqlm(strix_lm *lm);
STRIX_API strix_params *strix_lm_params(strix_lm *lm);
STRIX_API strix_backend *strix_lm_backend(const strix_lm *lm);

STRIX_API strix_status strix_lm_init_weights(strix_lm *lm, uint64_t seed);
/* Forward over ids (B,T) with optional targets and the mean loss (the model's forward); the
 * logits (B,T,V) stay in backend memory (strix_lm_logits). */
STRIX_API strix_status strix_lm_forward(strix_lm *lm, const int32_t *ids, const int32_t *targets,
                                        int B, int T, float *loss);
STRIX_API const float *strix_lm_logits(const strix_lm *lm);
STRIX_API strix_status strix_lm_backward_scaled(strix_lm *lm, float scale);
STRIX_API void strix_lm_set_training(strix_lm *lm, bool training);
STRIX_API bool strix_lm_training(const strix_lm *lm);
/* The GPT's dropout key (strix_gpt_set_dropout_key); a no-op for models without dropout. */
STRIX_API void strix_lm_set_dropout_key(strix_lm *lm, uint64_t key);

/* Incremental decoding (batch 1): the GPT's KV cache (at most block_size positions) or the
 * sequence model's state (unbounded, O(1) per step). */
STRIX_API strix_status strix_lm_decode_reset(strix_lm *lm);
STRIX_API strix_status strix_lm_decode_step(strix_lm *lm, int32_t token, float *logits);
STRIX_API int strix_lm_decode_pos(const strix_lm *lm);
/* Whether decoding is bounded by the block (the GPT's cache) rather than carried by a state. */
STRIX_API bool strix_lm_decode_bounded(const strix_lm *lm);

/* strix_gpt_explain / strix_seqlm_explain and their explained output. */
STRIX_API strix_status strix_lm_explain(strix_lm *lm, const int32_t *ids, int n,
                                        const strix_gpt_explain_config *cfg,
                                        strix_gpt_explanation *out);
STRIX_API strix_status strix_lm_explain_output(strix_lm *lm, const int32_t *ids, int n,
                                               const strix_gpt_explain_config *cfg,
                                               double *value);

// ---- the trainer's view (strix/train.h) ---------------------------------------------------------

/* strix_gpt_train_model for a model of any architecture: the same data description
 * (strix/gpt_train.h: corpus or caller-fed batches, evaluation, dropout keys), the same stream
 * and bit-identical resumes. lm is borrowed. */
STRIX_API strix_status strix_lm_train_model(strix_lm *lm, const strix_gpt_train_data *data,
                                            strix_train_model *model);
/* Frees what strix_lm_train_model allocated and clears *model; NULL and cleared are no-ops. */
STRIX_API void strix_lm_train_model_free(strix_train_model *model);

// ---- generation ---------------------------------------------------------------------------------

/* A generator over any architecture: the GPT's (strix_gpt_generator, with its window rule) or,
 * for a sequence model, the prompt fed through the decode state in full (no block limit: the
 * state carries the whole context) and one decode step per new token. Same sampling contract
 * as strix_gpt_generator_next (one strix_sample_logits per token; the token is fed lazily). */
typedef struct strix_lm_generator strix_lm_generator;

STRIX_API strix_status strix_lm_generator_new(strix_lm *lm, strix_lm_generator **out);
STRIX_API void strix_lm_generator_free(strix_lm_generator *gen);
/* The GPT's window rule (strix_gpt_generator_set_window); ignored (STRIX_OK) by the sequence
 * models, whose state has no window. */
STRIX_API strix_status strix_lm_generator_set_window(strix_lm_generator *gen,
                                                     strix_gpt_window window);
/* Resets the model's decode state and feeds the prompt (the GPT: its last block_size tokens).
 * STRIX_ERR_ARG for n = 0 or a bad id; after an error next() refuses until a prime succeeds. */
STRIX_API strix_status strix_lm_generator_prime(strix_lm_generator *gen, const int32_t *prompt,
                                                size_t n);
STRIX_API strix_status strix_lm_generator_next(strix_lm_generator *gen,
                                               const strix_sampler_config *c, strix_rng *rng,
                                               int32_t *token);

#ifdef __cplusplus
}
#endif
#endif
