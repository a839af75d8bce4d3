/*
 * trainer.c - the training step and loop of strix/train.h: micro-batches, the gradient hook,
 * clipping, the non-finite skip, the schedule, the optimizer step; evaluation, checkpoints, stop
 * flag and stop requests, resume from the state's step. Knows no model: everything model-shaped
 * comes through strix_train_model. Does not print, read clocks or handle signals.
 */
#include <math.h>
#include <stdio.h>

#include "strix/train.h"

strix_status strix_train_optimizer(strix_params *ps, const strix_train_config *cfg,
                                   strix_optimizer **out) {
    strix_adamw_config adam = {.beta1 = cfg->adam_beta1, .beta2 = cfg->adam_beta2,
                               .eps = cfg->adam_eps, .weight_decay = cfg->weight_decay};
    return strix_optimizer_adamw_split(ps, &adam, out);
}

// ---- the step ----------------------------------------------------------------------------------

strix_status strix_train_step(const strix_train_config *cfg, strix_train_model *model,
                              strix_optimizer *opt, const strix_train_hooks *hooks, int64_t step,
                              strix_train_step_result *out) {
    STRIX_ASSERT(model->loss_step && model->params, "train step: the model needs loss_step and "
                 "params");
    STRIX_ASSERT(step >= 0, "train step: negative step %lld", (long long)step);
    strix_params *ps = model->params;
    int k = cfg->grad_accum > 1 ? cfg->grad_accum : 1;
    *out = (strix_train_step_result){.loss = NAN, .grad_norm = 0.0, .lr = 0.0f};
    STRIX_TRY(strix_params_zero_grad(ps));
    // micro-batches: grads += (1/k)·∂loss_i, so after the last one they are the mean's
    float scale = strix_grad_accum_scale(1, (size_t)k), sum = 0.0f;
    for (int micro = 0; micro < k; micro++) {
        float loss = NAN;
        STRIX_TRY(model->loss_step(model->ctx, step, micro, scale, &loss));
        sum += loss;
    }
    out->loss = k == 1 ? sum : sum / (float)k;
    // THE GRADIENT HOOK: after the last backward, before clipping (multi-process all-reduce)
    if (hooks && hooks->all_reduce) STRIX_TRY(hooks->all_reduce(hooks->user, ps));
    strix_status s = strix_clip_grad_norm(ps, cfg->clip, &out->grad_norm);
    out->lr = strix_lr_warmup_cosine(step, cfg->warmup, cfg->steps, cfg->lr, cfg->min_lr);
    if (s == STRIX_ERR_NUMERIC || (s == STRIX_OK && !isfinite(out->loss))) {
        out->skipped = true; // the step counts for the schedule and the bias corrections
        strix_optimizer_set_steps(opt, step + 1);
        return STRIX_OK;
    }
    if (s != STRIX_OK) return s;
    return strix_optimizer_step(opt, out->lr);
}

// ---- the loop ----------------------------------------------------------------------------------

static strix_train_action emit(const strix_train_hooks *h, const strix_train_event *ev) {
    return h && h->on_event ? h->on_event(h->user, ev) : STRIX_TRAIN_CONTINUE;
}

/* Evaluates (if the model can) into state->val_loss and reports it; then saves (if it can). */
static strix_status eval_and_save(strix_train_model *model, strix_train_state *state,
                                  const strix_train_hooks *hooks, bool eval, int64_t *val_step) {
    if (eval && model->eval) {
        double val;
        STRIX_TRY(model->eval(model->ctx, &val));
        state->val_loss = val;
        *val_step = state->step;
        strix_train_event ev = {.kind = STRIX_TRAIN_EV_EVAL, .step = state->step,
                                .val_loss = val};
        emit(hooks, &ev);
        if (!isfinite(val)) // unusable weights never replace a checkpoint
            return strix_error(STRIX_ERR_NUMERIC, "training diverged: the validation loss at "
                               "step %lld is %g; not saved", (long long)state->step, val);
    }
    return model->save ? model->save(model->ctx, state) : STRIX_OK;
}

/* The error of a run that stopped making updates: `n` skipped steps in a row from 0-based step
 * `since`; `all`: they are every step of the run. */
static strix_status skip_error(int64_t n, int64_t since, bool all) {
    char last[48] = "no update at all";
    if (since > 0) snprintf(last, sizeof last, "no update since step %lld", (long long)since);
    return strix_error(STRIX_ERR_NUMERIC, "training diverged: %s%lld step%s in a row (steps %lld "
                       "to %lld) had a non-finite loss or gradient norm; %s",
                       all ? "every step of the run: " : "", (long long)n, n == 1 ? "" : "s",
                       (long long)since + 1, (long long)(since + n), last);
}

strix_status strix_train_run(const strix_train_config *cfg, strix_train_model *model,
                             strix_optimizer *opt, strix_train_state *state,
                             const strix_train_hooks *hooks, strix_train_result *result) {
    if (cfg->steps < 1 || cfg->eval_every < 0)
        return strix_error(STRIX_ERR_ARG, "train: steps %lld must be >= 1 and eval_every %lld "
                           ">= 0", (long long)cfg->steps, (long long)cfg->eval_every);
    int64_t first = state->step, step = first;
    strix_train_result res = {.end = STRIX_TRAIN_FINISHED, .first_step = first, .loss = NAN,
                              .val_step = -1, .skipped = 0, .skip_since = -1};
    strix_optimizer_set_steps(opt, first); // a resumed run's moments are after `first` steps
    int64_t skipped_in_row = 0, skipped = 0;
    bool saved_here = false, eval_at_stop = false;
    strix_status s = STRIX_OK;
    while (step < cfg->steps) {
        if (hooks && hooks->stop && *hooks->stop) {
            res.end = STRIX_TRAIN_INTERRUPTED;
            break;
        }
        strix_train_step_result r;
        s = strix_train_step(cfg, model, opt, hooks, step, &r);
        if (s != STRIX_OK) break;
        res.loss = r.loss;
        if (r.skipped) {
            strix_train_event ev = {.kind = STRIX_TRAIN_EV_SKIPPED, .step = step, .loss = r.loss,
                                    .grad_norm = r.grad_norm};
            emit(hooks, &ev);
            skipped++;
            if (++skipped_in_row == 1) res.skip_since = step;
            res.skipped = skipped;
            // the rule: K in a row, or every step of a run that ends here, fail without a save
            bool all = skipped_in_row == step - first + 1 && step + 1 == cfg->steps;
            if (skipped_in_row >= STRIX_TRAIN_MAX_SKIPS || all) {
                s = skip_error(skipped_in_row, res.skip_since, all);
                break;
            }
        } else {
            skipped_in_row = 0;
            res.skip_since = -1;
        }
        step++;
        state->step = step;
        saved_here = false;
        if ((cfg->eval_every > 0 && step % cfg->eval_every == 0) || step == cfg->steps) {
            s = eval_and_save(model, state, hooks, true, &res.val_step);
            if (s != STRIX_OK) break;
            saved_here = true;
        }
        strix_train_event ev = {.kind = STRIX_TRAIN_EV_STEP, .step = step, .loss = r.loss,
                                .grad_norm = r.grad_norm, .lr = r.lr};
        strix_train_action a = emit(hooks, &ev);
        if (a != STRIX_TRAIN_CONTINUE) {
            res.end = STRIX_TRAIN_STOPPED;
            eval_at_stop = a == STRIX_TRAIN_STOP_EVAL;
            break;
        }
    }
    if (s == STRIX_OK && res.end != STRIX_TRAIN_FINISHED && skipped_in_row > 0 &&
        skipped_in_row == step - first) // stopped early, and no step of the run made an update
        s = skip_error(skipped_in_row, res.skip_since, true);
    strix_train_event end = {.kind = STRIX_TRAIN_EV_LOOP_END, .step = step, .loss = res.loss};
    emit(hooks, &end);
    if (s == STRIX_OK && !saved_here) // the stop's save; a time limit's stop evaluates first
        s = eval_and_save(model, state, hooks, eval_at_stop, &res.val_step);
    if (result) *result = res;
    return s;
}
