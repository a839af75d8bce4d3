/*
 * strix/train.h - the trainer: the training step and loop for any model that exposes a loss step
 * (forward + backward into its parameter block's grads), its parameters, and optionally an
 * evaluation and a checkpoint writer. Used by `strix train`, examples/tiny_gpt.c, bench/bench_gpt.c
 * and the tests; the GPT's adapter is strix/gpt_train.h.
 *
 * One step (strix_train_step), as nanoGPT's train.py:
 *   zero_grad; for each of the k = grad_accum micro-batches: loss_step (forward + backward, the
 *   loss scaled by strix_grad_accum_scale(1, k) = 1/k, grads `+=`);
 *   clip by global norm (strix_clip_grad_norm, max_norm = clip; 0 = only measured);
 *   a non-finite gradient norm or loss skips the update (the step still counts: the schedule and
 *   the optimizer's bias corrections follow the step number, as the first-wave CLI did);
 *   lr = strix_lr_warmup_cosine(step, warmup, steps, lr, min_lr);
 *   one strix_optimizer_step (the optimizer object of strix/optim.h).
 * Data parallel (grad_shards = S > 1, or a communicator of N > 1 ranks, strix/dist.h): each
 * micro-batch of B sequences is cut into S equal gradient shards; shard s of every micro-batch is
 * computed by rank s / (S/N) from zeroed grads (loss scaled 1/(k·S)), its micro-batches added in
 * order into a host buffer, and the S shard gradients are summed by the communicator's fixed tree
 * (strix_dist_sum_shards) into every rank's grads before clipping; the step's loss is the tree
 * sum of the shard losses over S. The bits depend on (B, k, S), never on N: one process with the
 * same S reproduces N processes exactly. S = 1 on one process is the plain step above.
 * The loop (strix_train_run) adds: evaluation and checkpoint every eval_every steps and at the end,
 * a stop flag checked before each step (set by a signal handler: the loop finishes the step it is
 * in, saves and returns), progress events, stop requests from the event callback, resume from
 * state->step, and an error (no save) when the run stops making updates: STRIX_TRAIN_MAX_SKIPS
 * skipped steps in a row, every step of the run skipped, or a non-finite validation loss. With a
 * communicator the ranks agree on every decision: a stop flag or stop request on any rank stops
 * all at the same step, rank 0 alone evaluates and saves (its status and validation loss are
 * broadcast), every rank gets every event.
 *
 * Not here: data loading, signal handling, printing (events go to the caller), wall-clock limits
 * (the event callback decides), the checkpoint format (strix/checkpoint.h).
 */
#ifndef STRIX_TRAIN_H
#define STRIX_TRAIN_H

#include <signal.h>

#include "strix/data.h"
#include "strix/dist.h"
#include "strix/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- the run's configuration and position -----------------------------------------------------

/* The hyper-parameters of a training run: everything that decides its numbers. */
typedef struct strix_train_config {
    int64_t steps;            /* total optimizer steps: the LR schedule's horizon and the end */
    double time_limit;        /* seconds this invocation may train (0 = none); informational */
    float lr, min_lr;         /* peak and final learning rate (cosine) */
    int64_t warmup;           /* linear warmup steps */
    float weight_decay;       /* AdamW decoupled decay */
    float clip;               /* max global gradient norm (0 = off) */
    float adam_beta1, adam_beta2, adam_eps;
    int batch;                /* sequences per micro-batch (B) */
    uint64_t seed;            /* seed of the run: weights, data and evaluation streams */
    int64_t eval_every;       /* steps between evaluations and checkpoints (0 = only at the end) */
    int eval_batches;         /* validation batches averaged per evaluation */
    double val_fraction;      /* last fraction of the corpus held out */
    bool sequential;          /* sequential stride walk instead of random windows */
    int64_t stride;           /* the walk's stride */
    const char *data_path;    /* the corpus the run trains on (borrowed; NULL reads as "") */
    const char *backend;      /* backend the run trains on ("cpu", "cpu-blas", "cuda:0", ...;
                               * borrowed, NULL reads as ""); a resume keeps it unless told
                               * otherwise */
    int grad_accum;           /* micro-batches per step (0, 1: none); checkpoint key grad_accum */
    int grad_shards;          /* gradient shards per micro-batch (0, 1: none; data parallel: a
                               * multiple of the world size dividing batch); checkpoint key
                               * grad_shards */
} strix_train_config;

/* Where a run stands. The trainer owns step and val_loss; the model's data stream owns the rest
 * (the GPT adapter advances data_rng / cursor in place). */
typedef struct strix_train_state {
    int64_t step;             /* optimizer steps completed */
    uint64_t data_rng;        /* state of the training batch stream (strix_rng.state) */
    strix_seq_cursor cursor;  /* the sequential walk's cursor */
    double val_loss;          /* last evaluation (NaN before the first) */
    uint64_t data_size;       /* corpus characters and FNV-1a hash: detects a changed corpus */
    uint64_t data_hash;
} strix_train_state;

// ---- the model as the trainer sees it ----------------------------------------------------------

/* The part of a step one loss step computes. */
typedef struct strix_train_slice {
    int64_t step;             /* 0-based optimizer step */
    int micro;                /* micro-batch of the step, 0..grad_accum-1 */
    int shard, shards;        /* gradient shard of the micro-batch, 0..shards-1: its sequences
                               * [shard·B/shards, (shard+1)·B/shards) of the micro-batch's B */
    float grad_scale;         /* grads += grad_scale·∂loss/∂θ */
} strix_train_slice;

typedef struct strix_train_model {
    void *ctx;                /* passed to every callback */
    strix_params *params;     /* the block the optimizer updates (grads filled by loss_step) */
    /* Required. Forward and backward of one slice: parameter grads `+=`
     * slice->grad_scale·∂loss/∂θ, *loss = the slice's (unscaled) mean loss. Calls come micro-
     * batch by micro-batch in order, a micro-batch's shards in order, so a data stream advances
     * once per micro-batch (every rank draws every micro-batch: the streams stay equal). A model
     * that cannot cut its batch returns STRIX_ERR_UNSUPPORTED for shards > 1. */
    strix_status (*loss_step)(void *ctx, const strix_train_slice *slice, float *loss);
    /* Optional (NULL: no evaluation). The validation loss; must not perturb training (its own
     * data stream). */
    strix_status (*eval)(void *ctx, double *val_loss);
    /* Optional (NULL: no checkpoints). Writes a checkpoint of the run at `state`. */
    strix_status (*save)(void *ctx, const strix_train_state *state);
} strix_train_model;

// ---- hooks and events --------------------------------------------------------------------------

typedef enum strix_train_event_kind {
    STRIX_TRAIN_EV_STEP,      /* a step ended (after its evaluation and save, if any) */
    STRIX_TRAIN_EV_SKIPPED,   /* a step's loss or gradient norm was not finite: no update */
    STRIX_TRAIN_EV_EVAL,      /* an evaluation ended (val_loss set); its save follows */
    STRIX_TRAIN_EV_LOOP_END   /* no more steps: what is left is the final evaluation and save */
} strix_train_event_kind;

typedef struct strix_train_event {
    strix_train_event_kind kind;
    int64_t step;             /* steps completed (STEP, EVAL, LOOP_END); SKIPPED: the 0-based
                               * index of the skipped step */
    float loss;               /* the step's loss, mean over its micro-batches (STEP, SKIPPED) */
    double grad_norm;         /* before clipping (STEP, SKIPPED) */
    float lr;                 /* the step's learning rate (STEP; a skipped step's, unused) */
    double val_loss;          /* EVAL */
} strix_train_event;

/* What the event callback asks for after a STEP event (ignored for the others). */
typedef enum strix_train_action {
    STRIX_TRAIN_CONTINUE = 0,
    STRIX_TRAIN_STOP,         /* stop now: save (unless this step just saved) and return */
    STRIX_TRAIN_STOP_EVAL     /* the same, evaluating first (unless this step just did) */
} strix_train_action;

typedef struct strix_train_hooks {
    /* The communicator of a data-parallel run (NULL: one process; the trainer then opens a
     * world of one for grad_shards > 1). Borrowed. */
    strix_dist *dist;
    /* Events (NULL: none); the return value counts only for STEP events. */
    strix_train_action (*on_event)(void *user, const strix_train_event *ev);
    void *user;
    /* Checked before each step (NULL: none); non-zero stops the run as STRIX_TRAIN_STOP does.
     * A signal handler may set it. */
    const volatile sig_atomic_t *stop;
} strix_train_hooks;

/* Consecutive skipped steps after which strix_train_run fails with STRIX_ERR_NUMERIC (the run
 * also fails when every one of its steps was skipped, however few). */
#define STRIX_TRAIN_MAX_SKIPS 10

// ---- the step and the loop ---------------------------------------------------------------------

typedef struct strix_train_step_result {
    float loss;               /* mean over the micro-batches */
    double grad_norm;         /* global norm before clipping (0 if the step failed before) */
    float lr;                 /* learning rate of the step (a skipped step's too, unused) */
    bool skipped;             /* non-finite loss or norm: the parameters did not move */
} strix_train_step_result;

/* One optimizer step number `step` (0-based) as described at the top of this file. hooks may be
 * NULL. A skipped step is not an error: STRIX_OK with out->skipped, the optimizer's step counts
 * set to step + 1 (strix_optimizer_set_steps). Errors of the callbacks, the optimizer or the
 * backend are returned as they come (the block may then hold partial grads); STRIX_ERR_ARG for
 * shards that do not fit (as strix_train_run); the transport's errors (STRIX_ERR_IO). A sharded
 * step without a communicator in hooks opens a world of one for the call. */
STRIX_API strix_status strix_train_step(const strix_train_config *cfg, strix_train_model *model,
                                        strix_optimizer *opt, const strix_train_hooks *hooks,
                                        int64_t step, strix_train_step_result *out);

typedef enum strix_train_end {
    STRIX_TRAIN_FINISHED,     /* state->step reached cfg->steps */
    STRIX_TRAIN_INTERRUPTED,  /* the stop flag was set */
    STRIX_TRAIN_STOPPED       /* the event callback asked to stop */
} strix_train_end;

typedef struct strix_train_result {
    strix_train_end end;
    int64_t first_step;       /* state->step when the run began */
    float loss;               /* the last step's loss (NaN if no step ran) */
    int64_t val_step;         /* step of this run's last evaluation (-1: none) */
    int64_t skipped;          /* steps of this run skipped for a non-finite loss or norm */
    int64_t skip_since;       /* 0-based first step of the skipped steps that end the run so far
                               * (-1: its last step was not skipped) */
    bool shared_error;        /* the error is every rank's, met at the same point (the checks of
                               * the shards and the corpus, a diverged run, rank 0's evaluation or
                               * save): rank 0 reports it and every rank may end normally; false:
                               * only this rank met it (a multi-rank job must then be aborted) */
} strix_train_result;

/* Trains from state->step (0 for a new run, the checkpoint's step for a resumed one: the
 * optimizer's step counts are set to it, the model's data stream must already be where the
 * checkpoint left it) until cfg->steps, a stop flag or a stop request. With a communicator of
 * N > 1 ranks it first checks that every rank reads the same corpus (state's size and hash) and
 * copies rank 0's parameters, Adam moments and state to all. After every step that
 * completes a multiple of eval_every, and after the last step, it evaluates (model->eval; sets
 * state->val_loss, an EVAL event) and saves (model->save). A run that stops early saves once more
 * unless its last step just did. state->step counts completed steps. STRIX_ERR_ARG for
 * cfg->steps < 1, a negative eval_every, grad_shards not a multiple of the world size or a
 * batch they do not divide, ranks with different corpora. A run that stops making updates fails with
 * STRIX_ERR_NUMERIC ("training diverged: ... steps in a row (steps A to B) ...", 1-based) and
 * saves nothing more, so the last checkpoint saved stays the last good one: after
 * STRIX_TRAIN_MAX_SKIPS skipped steps in a row (at once), when every step of the run was skipped
 * (at its last step or at an early stop), and when an evaluation gives a non-finite validation
 * loss (after its EVAL event, before its save). Errors of the step, eval or save end the run at
 * once (no further save). result may be NULL; result->skipped / skip_since are set on errors
 * too. */
STRIX_API strix_status strix_train_run(const strix_train_config *cfg, strix_train_model *model,
                                       strix_optimizer *opt, strix_train_state *state,
                                       const strix_train_hooks *hooks, strix_train_result *result);

/* The trainer's optimizer for cfg: AdamW (betas, eps, weight decay of cfg) with nanoGPT's decay
 * split (strix_optimizer_adamw_split). Errors as strix_optimizer_adamw. */
STRIX_API strix_status strix_train_optimizer(strix_params *ps, const strix_train_config *cfg,
                                             strix_optimizer **out);

#ifdef __cplusplus
}
#endif
#endif
