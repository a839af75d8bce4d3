/*
 * explain_internal.h - what the explainers of src/explain share (strix_lrp_explain, the gradient
 * explainers): saving and restoring the training flags of a model's moded modules. The rule
 * machinery they build on lives beside the modules (src/nn/rules_internal.h). Internal: not
 * installed, no public names.
 */
#ifndef STRIX_EXPLAIN_INTERNAL_H
#define STRIX_EXPLAIN_INTERNAL_H

#include "nn/rules_internal.h"
#include "strix/lrp.h"

/* The modules of a model with a mode (BatchNorm, Dropout) and their training flags. */
typedef struct lrp_modes {
    strix_module **mods;
    bool *training;
    int count, cap;
} lrp_modes;

/* Records the flags of every moded module under model (nothing held on failure). */
strix_status lrp_modes_save(strix_module *model, lrp_modes *l);
/* Sets every recorded module back to its flag and frees the list. */
void lrp_modes_restore(lrp_modes *l);

#endif
