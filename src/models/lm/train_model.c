/*
 * train_model.c - the trainer adapter of every character LM (strix/lm.h, strix/gpt_train.h
 * for the GPT's shorthand): batches from a corpus or a
 * callback, forward + backward (the loss scaled by the trainer's grad_scale for accumulation) as
 * the loss step on a slice of the micro-batch (a gradient shard; dropout keyed by step, micro-batch
 * and shard), the validation mean in eval mode as the evaluation. Holds the host batch buffers;
 * allocates nothing per step.
 */
#include <stdlib.h>

#include "strix/lm.h"

typedef struct lm_trainee {
    strix_lm *lm;
    bool own_lm;            /* strix_gpt_train_model's wrapper */
    strix_gpt_train_data d;
    int T;
    int32_t *ids, *targets; /* B·T each: the micro-batch drawn last */
    int64_t drawn_step;     /* the (step, micro) whose batch ids holds (-1: none) */
    int drawn_micro;
} lm_trainee;

/* Draws the B sequences of micro-batch `micro` of step `step` from the stream into ids/targets. */
static strix_status draw(lm_trainee *t, int64_t step) {
    const strix_gpt_train_data *d = &t->d;
    int B = d->batch, T = t->T;
    if (d->corpus && d->sequential)
        return strix_corpus_batch_sequential(d->corpus, STRIX_SPLIT_TRAIN, &d->state->cursor, B,
                                             T, t->ids, t->targets);
    if (d->corpus) {
        strix_rng rng = {.state = d->state->data_rng};
        STRIX_TRY(strix_corpus_batch_random(d->corpus, STRIX_SPLIT_TRAIN, &rng, B, T, t->ids,
                                            t->targets));
        d->state->data_rng = rng.state;
        return STRIX_OK;
    }
    return d->next(d->user, step, t->ids, t->targets);
}

static strix_status loss_step(void *ctx, const strix_train_slice *sl, float *loss) {
    lm_trainee *t = ctx;
    const strix_gpt_train_data *d = &t->d;
    // a micro-batch is drawn once, at its first shard: the stream advances once per micro-batch
    // on every rank, whichever shards the rank computes
    if (sl->step != t->drawn_step || sl->micro != t->drawn_micro) {
        t->drawn_step = -1;
        STRIX_TRY(draw(t, sl->step));
        t->drawn_step = sl->step;
        t->drawn_micro = sl->micro;
    }
    int S = sl->shards > 1 ? sl->shards : 1, rows = d->batch / S, T = t->T;
    if (d->batch % S != 0 || sl->shard < 0 || sl->shard >= S)
        return strix_error(STRIX_ERR_ARG, "lm train: shard %d of %d of a batch of %d",
                           sl->shard, S, d->batch);
    uint64_t key = strix_seed_derive(strix_seed_derive(d->dropout_seed, (uint64_t)sl->step),
                                     (uint64_t)sl->micro);
    if (S > 1) key = strix_seed_derive(key, (uint64_t)sl->shard); // masks per shard, not rank
    strix_lm_set_dropout_key(t->lm, key);
    size_t off = (size_t)sl->shard * (size_t)rows * (size_t)T;
    STRIX_TRY(strix_lm_forward(t->lm, t->ids + off, t->targets + off, rows, T, loss));
    return strix_lm_backward_scaled(t->lm, sl->grad_scale);
}

static strix_status evaluate(void *ctx, double *val_loss) {
    lm_trainee *t = ctx;
    const strix_gpt_train_data *d = &t->d;
    strix_rng rng;
    strix_rng_seed(&rng, d->eval_seed);
    double sum = 0.0;
    t->drawn_step = -1; /* the buffers now hold validation batches */
    bool training = strix_lm_training(t->lm);
    strix_lm_set_training(t->lm, false); /* model.eval(): no dropout in the val loss */
    strix_status s = STRIX_OK;
    for (int b = 0; b < d->eval_batches && s == STRIX_OK; b++) {
        float l = 0.0f;
        s = strix_corpus_batch_random(d->corpus, STRIX_SPLIT_VAL, &rng, d->batch, t->T, t->ids,
                                      t->targets);
        if (s == STRIX_OK) s = strix_lm_forward(t->lm, t->ids, t->targets, d->batch, t->T, &l);
        sum += l;
    }
    strix_lm_set_training(t->lm, training);
    STRIX_TRY(s);
    *val_loss = sum / d->eval_batches;
    return STRIX_OK;
}

strix_status strix_lm_train_model(strix_lm *lm, const strix_gpt_train_data *data,
                                  strix_train_model *model) {
    *model = (strix_train_model){0};
    int block = strix_lm_config_block(strix_lm_config_get(lm));
    int T = data->seq_len > 0 ? data->seq_len : block;
    if (data->batch < 1 || T > block || data->eval_batches < 0)
        return strix_error(STRIX_ERR_ARG, "lm train: batch %d, seq_len %d (block %d), "
                           "eval_batches %d", data->batch, data->seq_len, block,
                           data->eval_batches);
    if (data->corpus ? !data->state : !data->next)
        return strix_error(STRIX_ERR_ARG, "lm train: needs a corpus and a state, or a batch "
                           "function");
    if (!data->corpus && data->eval_batches > 0)
        return strix_error(STRIX_ERR_ARG, "lm train: evaluation needs a corpus");
    lm_trainee *t = calloc(1, sizeof *t);
    size_t n = (size_t)data->batch * (size_t)T;
    if (t) t->ids = malloc(n * sizeof *t->ids);
    if (t) t->targets = malloc(n * sizeof *t->targets);
    if (!t || !t->ids || !t->targets) {
        if (t) free(t->ids);
        free(t);
        return strix_error(STRIX_ERR_ALLOC, "lm train: out of memory for a batch of %zu", n);
    }
    t->lm = lm;
    t->d = *data;
    t->drawn_step = -1;
    t->T = T;
    model->ctx = t;
    model->params = strix_lm_params(lm);
    model->loss_step = loss_step;
    model->eval = data->eval_batches > 0 ? evaluate : NULL;
    return STRIX_OK;
}

strix_status strix_gpt_train_model(strix_gpt *g, const strix_gpt_train_data *data,
                                   strix_train_model *model) {
    strix_lm *lm;
    STRIX_TRY(strix_lm_wrap_gpt(g, &lm));
    strix_status s = strix_lm_train_model(lm, data, model);
    if (s != STRIX_OK) {
        strix_lm_free(lm);
        return s;
    }
    ((lm_trainee *)model->ctx)->own_lm = true;
    return STRIX_OK;
}

void strix_gpt_train_model_free(strix_train_model *model) { strix_lm_train_model_free(model); }

void strix_lm_train_model_free(strix_train_model *model) {
    if (!model || !model->ctx) return;
    lm_trainee *t = model->ctx;
    if (t->own_lm) strix_lm_free(t->lm);
    free(t->ids);
    free(t->targets);
    free(t);
    *model = (strix_train_model){0};
}
