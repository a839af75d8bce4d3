/*
 * optim_internal.h - what the optimizer files share: which parameters an update touches, and runs
 * of such parameters stored back to back in the block, so one primitive call covers many of them
 * (the whole block when everything trains).
 */
#ifndef STRIX_OPTIM_INTERNAL_H
#define STRIX_OPTIM_INTERNAL_H

#include "strix/optim.h"

/* A parameter an update touches: not a buffer, not frozen, not a tied alias (its storage is
 * updated through its target). */
static inline bool optim_trains(const strix_param *p) {
    return !p->tied_to && !p->is_buffer && p->requires_grad;
}

/* Class of item i for run building: < 0 skips it; items of equal class merge. */
typedef int64_t (*optim_class_fn)(const strix_params *ps, int i, void *user);

/* A run: items [begin, end) of class `cls` (skipped items may lie between them), covering block
 * floats [offset, offset + numel). */
typedef struct optim_run {
    int begin, end;
    int64_t cls;
    size_t offset, numel;
} optim_run;

/* The next run at or after item *at: the first item of class >= 0, then every following item of
 * the same class stored right after the previous one (skipped items in between are passed over).
 * Sets *at past the run. False when no item is left. */
static inline bool optim_next_run(const strix_params *ps, int *at, optim_class_fn cls, void *user,
                                  optim_run *run) {
    int i = *at;
    while (i < ps->count && cls(ps, i, user) < 0) i++;
    if (i >= ps->count) {
        *at = i;
        return false;
    }
    run->begin = i;
    run->cls = cls(ps, i, user);
    run->offset = ps->items[i]->offset;
    run->numel = ps->items[i]->numel;
    int end = i + 1;
    for (int j = i + 1; j < ps->count; j++) {
        int64_t c = cls(ps, j, user);
        if (c < 0) continue;
        if (c != run->cls || ps->items[j]->offset != run->offset + run->numel) break;
        run->numel += ps->items[j]->numel;
        end = j + 1;
    }
    run->end = end;
    *at = end;
    return true;
}

/* Class function of the plain "trainable" filter: 0 or -1. */
static inline int64_t optim_class_trains(const strix_params *ps, int i, void *user) {
    (void)user;
    return optim_trains(ps->items[i]) ? 0 : -1;
}

#endif
