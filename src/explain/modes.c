/*
 * modes.c - saves and restores the training flags of a model's moded modules (those with a
 * get_training slot: BatchNorm, Dropout), so an explainer can run in eval mode and leave the
 * model as it found it. Only the module interface is used (no module internals).
 */
#include <stdlib.h>
#include <string.h>

#include "explain/explain_internal.h"

static strix_status collect(strix_module *m, lrp_modes *l, int depth) {
    if (depth > 64) return strix_error(STRIX_ERR_ARG, "LRP: modules nested over 64 deep");
    if (strix_module_has_mode(m)) {
        if (l->count == l->cap) {
            int cap = l->cap ? 2 * l->cap : 16;
            strix_module **mods = realloc(l->mods, (size_t)cap * sizeof *mods);
            if (!mods) return strix_error(STRIX_ERR_ALLOC, "LRP: out of memory");
            l->mods = mods;
            bool *flags = realloc(l->training, (size_t)cap * sizeof *flags);
            if (!flags) return strix_error(STRIX_ERR_ALLOC, "LRP: out of memory");
            l->training = flags;
            l->cap = cap;
        }
        l->mods[l->count] = m;
        l->training[l->count] = strix_module_training(m);
        l->count++;
    }
    if (m->vt->child)
        for (int i = 0;; i++) {
            strix_module *c = m->vt->child(m, i);
            if (!c) break;
            STRIX_TRY(collect(c, l, depth + 1));
        }
    return STRIX_OK;
}

strix_status lrp_modes_save(strix_module *model, lrp_modes *l) {
    strix_status s = collect(model, l, 0);
    if (s != STRIX_OK) lrp_modes_restore(l);
    return s;
}

void lrp_modes_restore(lrp_modes *l) {
    for (int i = 0; i < l->count; i++) strix_module_set_training(l->mods[i], l->training[i]);
    free(l->mods);
    free(l->training);
    memset(l, 0, sizeof *l);
}
