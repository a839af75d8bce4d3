/*
 * trainer.c - the training step and loop of strix/train.h: micro-batches, gradient shards summed
 * through the communicator, clipping, the non-finite skip, the schedule, the optimizer step;
 * evaluation, checkpoints, stop flag and stop requests (agreed across ranks), resume from the
 * state's step. Knows no model: everything model-shaped comes through strix_train_model. Does not
 * print, read clocks or handle signals.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "strix/train.h"

strix_status strix_train_optimizer(strix_params *ps, const strix_train_config *cfg,
                                   strix_optimizer **out) {
    strix_adamw_config adam = {.beta1 = cfg->adam_beta1, .beta2 = cfg->adam_beta2,
                               .eps = cfg->adam_eps, .weight_decay = cfg->weight_decay};
    return strix_optimizer_adamw_split(ps, &adam, out);
}

// ---- the step ----------------------------------------------------------------------------------

/* The plain step's gradient: the k micro-batches added in place into the grads. */
static strix_status plain_grads(strix_train_model *model, int64_t step, int k, float *loss) {
    STRIX_TRY(strix_params_zero_grad(model->params));
    // micro-batches: grads += (1/k)·∂loss_i, so after the last one they are the mean's
    strix_train_slice sl = {.step = step, .shard = 0, .shards = 1,
                            .grad_scale = strix_grad_accum_scale(1, (size_t)k)};
    float sum = 0.0f;
    for (sl.micro = 0; sl.micro < k; sl.micro++) {
        float l = NAN;
        STRIX_TRY(model->loss_step(model->ctx, &sl, &l));
        sum += l;
    }
    *loss = k == 1 ? sum : sum / (float)k;
    return STRIX_OK;
}

/* The sharded step's gradient (strix/train.h): this rank's S/N shards of every micro-batch, each
 * from zeroed grads into its row, micro-batches added in order; then the communicator's tree sum
 * of all S rows into the grads, and the tree sum of the S shard losses. The rows live in the
 * backend's memory when the communicator can add there (strix_dist_use_device), else in host
 * memory (a GPU without NCCL): the same additions either way. */
static strix_status sharded_grads(strix_train_model *model, strix_dist *d, int64_t step, int k,
                                  int S, float *loss) {
    strix_params *ps = model->params;
    strix_backend *be = ps->be;
    size_t P = ps->total, bytes = P * sizeof(float);
    int N = strix_dist_size(d), L = S / N, first = strix_dist_rank(d) * L;
    bool on = strix_dist_use_device(d, be);
    float *rows = on ? strix_dist_scratch_on(d, be, (size_t)L * bytes)
                     : strix_dist_scratch(d, ((size_t)L + 2) * bytes);
    float *losses = malloc(((size_t)L + (size_t)S) * sizeof *losses);
    if (!rows || !losses) {
        free(losses);
        return strix_error(STRIX_ERR_ALLOC, "train: out of memory for %d gradient shards", L);
    }
    float *part = on ? NULL : rows + (size_t)L * P, *sum = on ? NULL : part + P, *all = losses + L;
    strix_train_slice sl = {.step = step, .shards = S,
                            .grad_scale = strix_grad_accum_scale(1, (size_t)k * (size_t)S)};
    strix_status s = STRIX_OK;
    for (sl.micro = 0; sl.micro < k && s == STRIX_OK; sl.micro++) {
        for (int l = 0; l < L && s == STRIX_OK; l++) {
            float *row = rows + (size_t)l * P, lo = NAN;
            sl.shard = first + l;
            s = strix_params_zero_grad(ps);
            if (s == STRIX_OK) s = model->loss_step(model->ctx, &sl, &lo);
            if (s != STRIX_OK) break;
            losses[l] = sl.micro == 0 ? lo : losses[l] + lo;
            if (on && sl.micro == 0) s = strix_copy(be, row, ps->grad, bytes, STRIX_COPY_D2D);
            else if (on) s = strix_add(be, row, ps->grad, row, P);
            else if (sl.micro == 0) s = strix_copy(be, row, ps->grad, bytes, STRIX_COPY_D2H);
            else if ((s = strix_copy(be, part, ps->grad, bytes, STRIX_COPY_D2H)) == STRIX_OK)
                for (size_t i = 0; i < P; i++) row[i] += part[i];
        }
    }
    if (k > 1)
        for (int l = 0; l < L; l++) losses[l] /= (float)k;
    if (s == STRIX_OK && on) s = strix_dist_sum_shards_on(d, be, rows, L, P, ps->grad);
    if (s == STRIX_OK && !on && (s = strix_dist_sum_shards(d, rows, L, P, sum)) == STRIX_OK)
        s = strix_copy(be, ps->grad, sum, bytes, STRIX_COPY_H2D);
    if (s == STRIX_OK) s = strix_dist_allgather_floats(d, losses, (size_t)L, all);
    if (s == STRIX_OK) {
        strix_dist_tree(all, S, 1);
        *loss = all[0] / (float)S;
    }
    free(losses);
    return s;
}

/* STRIX_ERR_ARG unless S gradient shards fit the batch and the world of N ranks. */
static strix_status check_shards(const strix_train_config *cfg, int S, int N) {
    if (S % N != 0)
        return strix_error(STRIX_ERR_ARG, "train: %d gradient shard%s cannot be shared by %d "
                           "ranks (the shards must be a multiple of the ranks)", S,
                           S == 1 ? "" : "s", N);
    if (cfg->batch < 1 || cfg->batch % S != 0)
        return strix_error(STRIX_ERR_ARG, "train: the global batch %d is not divisible by %d "
                           "%s", cfg->batch, S, S == N ? "ranks" : "gradient shards");
    return STRIX_OK;
}

strix_status strix_train_step(const strix_train_config *cfg, strix_train_model *model,
                              strix_optimizer *opt, const strix_train_hooks *hooks, int64_t step,
                              strix_train_step_result *out) {
    STRIX_ASSERT(model->loss_step && model->params, "train step: the model needs loss_step and "
                 "params");
    STRIX_ASSERT(step >= 0, "train step: negative step %lld", (long long)step);
    strix_params *ps = model->params;
    int k = cfg->grad_accum > 1 ? cfg->grad_accum : 1;
    int S = cfg->grad_shards > 1 ? cfg->grad_shards : 1;
    strix_dist *d = hooks ? hooks->dist : NULL, *solo = NULL;
    *out = (strix_train_step_result){.loss = NAN, .grad_norm = 0.0, .lr = 0.0f};
    strix_status s;
    if (S == 1 && strix_dist_size(d) == 1) {
        s = plain_grads(model, step, k, &out->loss);
    } else {
        STRIX_TRY(check_shards(cfg, S, strix_dist_size(d)));
        if (!d) STRIX_TRY(strix_dist_open_solo(&solo));
        s = sharded_grads(model, d ? d : solo, step, k, S, &out->loss);
        strix_dist_close(solo);
    }
    STRIX_TRY(s);
    s = strix_clip_grad_norm(ps, cfg->clip, &out->grad_norm);
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
    return h->on_event ? h->on_event(h->user, ev) : STRIX_TRAIN_CONTINUE;
}

/* Rank 0's status (and *val) on every rank; `shared` set when it is an error. */
static strix_status from_root(strix_dist *d, strix_status s, double *val, bool *shared) {
    if (strix_dist_size(d) > 1) {
        struct { int64_t status; double val; } msg = {s, val ? *val : 0.0};
        STRIX_TRY(strix_dist_broadcast(d, &msg, sizeof msg, 0));
        if (val) *val = msg.val;
        if (strix_dist_rank(d) != 0 && msg.status != STRIX_OK)
            s = strix_error((strix_status)msg.status, "rank 0 failed to evaluate or save; every "
                            "rank stopped");
    }
    *shared = s != STRIX_OK;
    return s;
}

/* Evaluates (if the model can; rank 0 alone, the value broadcast) into state->val_loss and
 * reports it; then saves (if it can; rank 0 alone). */
static strix_status eval_and_save(strix_train_model *model, strix_train_state *state,
                                  const strix_train_hooks *hooks, bool eval, int64_t *val_step,
                                  bool *shared) {
    bool root = strix_dist_rank(hooks->dist) == 0;
    if (eval && model->eval) {
        double val = NAN;
        STRIX_TRY(from_root(hooks->dist, root ? model->eval(model->ctx, &val) : STRIX_OK, &val,
                            shared));
        state->val_loss = val;
        *val_step = state->step;
        strix_train_event ev = {.kind = STRIX_TRAIN_EV_EVAL, .step = state->step,
                                .val_loss = val};
        emit(hooks, &ev);
        *shared = !isfinite(val);
        if (!isfinite(val)) // unusable weights never replace a checkpoint
            return strix_error(STRIX_ERR_NUMERIC, "training diverged: the validation loss at "
                               "step %lld is %g; not saved", (long long)state->step, val);
    }
    if (!model->save) return STRIX_OK;
    return from_root(hooks->dist, root ? model->save(model->ctx, state) : STRIX_OK, NULL, shared);
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

/* Data parallel: rank 0's parameters, optimizer moments and stream state on every rank (the
 * block staged through host memory), after checking that every rank reads the same corpus. */
static strix_status sync_ranks(strix_dist *d, strix_params *ps, strix_train_state *state,
                              bool *shared) {
    int64_t size = (int64_t)state->data_size, hash = (int64_t)state->data_hash;
    int64_t v[4] = {size, ~size, hash, ~hash}, bad = 0;
    for (int i = 0; i < 4; i++) STRIX_TRY(strix_dist_max(d, &v[i]));
    bad = v[0] != size || v[1] != ~size || v[2] != hash || v[3] != ~hash;
    STRIX_TRY(strix_dist_max(d, &bad));
    *shared = bad != 0;
    if (bad)
        return strix_error(STRIX_ERR_ARG, "train: the ranks read different corpora (size or "
                           "hash differ); every rank needs the same file");
    size_t bytes = ps->total * sizeof(float);
    float *host = strix_dist_scratch(d, bytes);
    if (!host) return STRIX_ERR_ALLOC;
    float *roles[3] = {ps->data, ps->m, ps->v};
    for (int i = 0; i < 3; i++) {
        if (!roles[i]) continue;
        STRIX_TRY(strix_copy(ps->be, host, roles[i], bytes, STRIX_COPY_D2H));
        STRIX_TRY(strix_dist_broadcast(d, host, bytes, 0));
        STRIX_TRY(strix_copy(ps->be, roles[i], host, bytes, STRIX_COPY_H2D));
    }
    strix_train_state st = *state;
    STRIX_TRY(strix_dist_broadcast(d, &st, sizeof st, 0));
    *state = st;
    return STRIX_OK;
}

/* The loop proper; h->dist is set whenever the step is sharded. */
static strix_status run_loop(const strix_train_config *cfg, strix_train_model *model,
                             strix_optimizer *opt, strix_train_state *state,
                             const strix_train_hooks *h, strix_train_result *res) {
    int64_t first = state->step, step = first;
    bool many = strix_dist_size(h->dist) > 1;
    strix_optimizer_set_steps(opt, first); // a resumed run's moments are after `first` steps
    int64_t skipped_in_row = 0, skipped = 0;
    bool saved_here = false, eval_at_stop = false;
    strix_status s = STRIX_OK;
    while (step < cfg->steps) {
        int64_t stop = h->stop && *h->stop; // a signal on any rank stops all at this step
        if (many && (s = strix_dist_max(h->dist, &stop)) != STRIX_OK) break;
        if (stop) {
            res->end = STRIX_TRAIN_INTERRUPTED;
            break;
        }
        strix_train_step_result r;
        s = strix_train_step(cfg, model, opt, h, step, &r);
        if (s != STRIX_OK) break;
        res->loss = r.loss;
        if (r.skipped) {
            strix_train_event ev = {.kind = STRIX_TRAIN_EV_SKIPPED, .step = step, .loss = r.loss,
                                    .grad_norm = r.grad_norm};
            emit(h, &ev);
            skipped++;
            if (++skipped_in_row == 1) res->skip_since = step;
            res->skipped = skipped;
            // the rule: K in a row, or every step of a run that ends here, fail without a save
            bool all = skipped_in_row == step - first + 1 && step + 1 == cfg->steps;
            if (skipped_in_row >= STRIX_TRAIN_MAX_SKIPS || all) {
                s = skip_error(skipped_in_row, res->skip_since, all);
                res->shared_error = true;
                break;
            }
        } else {
            skipped_in_row = 0;
            res->skip_since = -1;
        }
        step++;
        state->step = step;
        saved_here = false;
        if ((cfg->eval_every > 0 && step % cfg->eval_every == 0) || step == cfg->steps) {
            s = eval_and_save(model, state, h, true, &res->val_step, &res->shared_error);
            if (s != STRIX_OK) break;
            saved_here = true;
        }
        strix_train_event ev = {.kind = STRIX_TRAIN_EV_STEP, .step = step, .loss = r.loss,
                                .grad_norm = r.grad_norm, .lr = r.lr};
        int64_t a = emit(h, &ev); // a stop request on any rank stops all
        if (many && (s = strix_dist_max(h->dist, &a)) != STRIX_OK) break;
        if (a != STRIX_TRAIN_CONTINUE) {
            res->end = STRIX_TRAIN_STOPPED;
            eval_at_stop = a == STRIX_TRAIN_STOP_EVAL;
            break;
        }
    }
    if (s == STRIX_OK && res->end != STRIX_TRAIN_FINISHED && skipped_in_row > 0 &&
        skipped_in_row == step - first) { // stopped early, and no step of the run made an update
        s = skip_error(skipped_in_row, res->skip_since, true);
        res->shared_error = true;
    }
    strix_train_event end = {.kind = STRIX_TRAIN_EV_LOOP_END, .step = step, .loss = res->loss};
    emit(h, &end);
    if (s == STRIX_OK && !saved_here) // the stop's save; a time limit's stop evaluates first
        s = eval_and_save(model, state, h, eval_at_stop, &res->val_step, &res->shared_error);
    return s;
}

strix_status strix_train_run(const strix_train_config *cfg, strix_train_model *model,
                             strix_optimizer *opt, strix_train_state *state,
                             const strix_train_hooks *hooks, strix_train_result *result) {
    strix_train_result res = {.end = STRIX_TRAIN_FINISHED, .first_step = state->step,
                              .loss = NAN, .val_step = -1, .skipped = 0, .skip_since = -1};
    if (result) *result = res;
    if (cfg->steps < 1 || cfg->eval_every < 0)
        return strix_error(STRIX_ERR_ARG, "train: steps %lld must be >= 1 and eval_every %lld "
                           ">= 0", (long long)cfg->steps, (long long)cfg->eval_every);
    strix_train_hooks h = hooks ? *hooks : (strix_train_hooks){0};
    int S = cfg->grad_shards > 1 ? cfg->grad_shards : 1, N = strix_dist_size(h.dist);
    strix_status s = S > 1 || N > 1 ? check_shards(cfg, S, N) : STRIX_OK;
    strix_dist *solo = NULL;
    if (s == STRIX_OK && !h.dist && S > 1) s = strix_dist_open_solo(&solo);
    if (solo) h.dist = solo;
    if (s == STRIX_OK && N > 1) s = sync_ranks(h.dist, model->params, state, &res.shared_error);
    if (s == STRIX_OK) {
        res.first_step = state->step;
        s = run_loop(cfg, model, opt, state, &h, &res);
    } else {
        res.shared_error |= s == STRIX_ERR_ARG; // the shards: every rank checks the same config
    }
    if (h.dist) strix_dist_use_device(h.dist, NULL); // before the caller frees the backend
    strix_dist_close(solo);
    if (result) *result = res;
    return s;
}
