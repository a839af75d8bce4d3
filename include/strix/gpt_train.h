/*
 * strix/gpt_train.h - the GPT as a trainer model (strix/train.h): its loss step is strix_gpt
 * forward + backward on the next training batch, its evaluation the mean loss over validation
 * batches. Batches come from a corpus (random windows or the sequential walk, the stream's state
 * in a strix_train_state that checkpoints save) or from the caller (fixed batches in tests).
 *
 * Gradient accumulation (strix_train_config.grad_accum = k): each of the k micro-batches of a
 * step is a batch of its own, drawn in micro-batch order from the one stream (corpus mode: micro
 * 0's B windows first, then micro 1's, ...; caller-fed mode: k calls of `next` with the same
 * step; in corpus mode the k·B windows of a step are those one batch of k·B would draw), and
 * backpropagated with strix_gpt_backward_scaled(g, grad_scale). The stream's state is
 * saved only between steps, so a run resumed with the same k is bit-identical to an
 * uninterrupted one. Dropout masks are keyed by (dropout_seed, step, micro-batch), never by a
 * stream, so they resume bit for bit as well.
 *
 * Gradient shards (grad_shards = S > 1, data-parallel training): a loss step computes shard s of
 * its micro-batch, sequences [s·B/S, (s+1)·B/S) of the B the stream gave (drawn once per
 * micro-batch, at its first shard), with the dropout key derived once more by s.
 *
 * Not here: the checkpoint writer (the caller sets model->save, e.g. to strix_checkpoint_save).
 */
#ifndef STRIX_GPT_TRAIN_H
#define STRIX_GPT_TRAIN_H

#include "strix/gpt.h"
#include "strix/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the next batch of step `step` (B·T host ids and targets) for the caller-fed mode; called
 * once per micro-batch, in order (grad_accum times with the same step). */
typedef strix_status (*strix_gpt_batch_fn)(void *user, int64_t step, int32_t *ids,
                                           int32_t *targets);

typedef struct strix_gpt_train_data {
    int batch;                  /* B, sequences per batch (>= 1) */
    int seq_len;                /* T (1..block_size; 0 = block_size) */
    /* corpus mode: training batches from the corpus's train split, the stream in `state` */
    const strix_corpus *corpus; /* split already applied; NULL: caller-fed mode */
    strix_train_state *state;   /* data_rng (random windows) or cursor (sequential), advanced in
                                 * place after each batch */
    bool sequential;            /* strix_corpus_batch_sequential instead of _random */
    /* evaluation (corpus mode): the mean loss of eval_batches random validation batches (of B
     * sequences, whatever grad_accum), the stream re-seeded with eval_seed at every evaluation
     * (so it never perturbs training) */
    int eval_batches;           /* 0: no evaluation (model->eval stays NULL) */
    uint64_t eval_seed;
    /* dropout (config dropout > 0): micro-batch `micro` of step `step` sets the dropout key
     * strix_seed_derive(strix_seed_derive(dropout_seed, step), micro) (strix_gpt_set_dropout_key;
     * with gradient shards derived again by the shard), so masks depend on (seed, step, micro,
     * shard, layer, site) alone, never on the rank; evaluation runs in eval mode */
    uint64_t dropout_seed;
    /* caller-fed mode */
    strix_gpt_batch_fn next;
    void *user;
} strix_gpt_train_data;

/* Fills *model (ctx, params = strix_gpt_params(g), loss_step, eval; save NULL) for training g on
 * `data` (copied; corpus, state and user are borrowed and must outlive the model).
 * STRIX_ERR_ARG for bad sizes or neither a corpus nor a batch function; STRIX_ERR_ALLOC.
 * loss_step backpropagates grad_scale·loss (strix_gpt_backward_scaled). */
STRIX_API strix_status strix_gpt_train_model(strix_gpt *g, const strix_gpt_train_data *data,
                                             strix_train_model *model);

/* Frees what strix_gpt_train_model allocated (the ctx; not the GPT) and clears *model. NULL and
 * a cleared model are no-ops. */
STRIX_API void strix_gpt_train_model_free(strix_train_model *model);

#ifdef __cplusplus
}
#endif
#endif
