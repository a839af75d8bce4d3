/*
 * lrp_fold.c - BatchNorm merged into the preceding Conv2d or Linear for an explanation, as Zennit's
 * SequentialMergeBatchNorm canonizer does before its composites: the pair is explained as one
 * affine layer with W' = s·W and b' = s·(b − running_mean) + β, s = γ/sqrt(running_var + eps),
 * under the Conv2d's/Linear's rule. W' and b' are computed by the BatchNorm eval primitive
 * exactly as strix_batchnorm_fold computes them, into scratch: the model is never changed.
 * Sequential's relevance calls it for adjacent (Conv2d|Linear, eval BatchNorm) children.
 */
#include <string.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"

static bool is_type(const strix_module *m, const char *type) {
    return strcmp(m->vt->type, type) == 0;
}

bool lrp_can_merge(strix_module *prev, strix_module *mod) {
    if (!is_type(mod, "BatchNorm2d") && !is_type(mod, "BatchNorm1d")) return false;
    strix_batchnorm *bn = (strix_batchnorm *)mod;
    if (bn->folded || bn->work->last_training || !bn->work->x.data) return false;
    if (is_type(prev, "Conv2d")) {
        strix_conv2d *c = (strix_conv2d *)prev;
        return bn->in_ndim == 4 && c->cfg.out_channels == bn->num_features &&
               c->work->out.data == bn->work->x.data;
    }
    if (is_type(prev, "Linear")) {
        strix_linear *l = (strix_linear *)prev;
        return bn->work->x.ndim == 2 && l->work->out.ndim == 2 &&
               l->out_features == bn->num_features && l->work->out.data == bn->work->x.data;
    }
    return false;
}

strix_status lrp_merged_relevance(strix_module *prev, strix_module *mod, const strix_tensor *r,
                                  const strix_tensor **r_in) {
    STRIX_ASSERT(lrp_can_merge(prev, mod), "LRP: %s and %s cannot be merged", prev->vt->type,
                 mod->vt->type);
    strix_batchnorm *bn = (strix_batchnorm *)mod;
    strix_backend *be = bn->base.be;
    bool conv = is_type(prev, "Conv2d");
    strix_param *w = conv ? ((strix_conv2d *)prev)->weight : ((strix_linear *)prev)->weight;
    strix_param *b = conv ? ((strix_conv2d *)prev)->bias : ((strix_linear *)prev)->bias;
    size_t C = (size_t)bn->num_features, inner = w->numel / C;
    // scratch: W' and its xhat (C·inner each), b', its xhat, std, zeros (C each)
    float *block;
    STRIX_TRY(lrp_scratch(be, 2 * C * inner + 4 * C, &block));
    float *wm = block, *wxhat = wm + C * inner, *bm = wxhat + C * inner, *bxhat = bm + C;
    float *std = bxhat + C, *zeros = std + C;
    strix_status s = strix_fill(be, zeros, 0.0f, C);
    // b' = γ·(b − running_mean)/std + β: the eval BatchNorm of b (or of 0) seen as (1, C, 1)
    if (s == STRIX_OK)
        s = strix_batch_norm_eval_forward(be, b ? b->data : zeros, bn->weight->data,
                                          bn->bias->data, bn->running_mean->data,
                                          bn->running_var->data, bxhat, bm, std, 1, C, 1,
                                          bn->eps);
    // W' = γ·(W − 0)/std + 0: the eval BatchNorm of W seen as (1, C, inner)
    if (s == STRIX_OK)
        s = strix_batch_norm_eval_forward(be, w->data, bn->weight->data, zeros, zeros,
                                          bn->running_var->data, wxhat, wm, std, 1, C, inner,
                                          bn->eps);
    if (s == STRIX_OK)
        s = conv ? lrp_conv2d_relevance((strix_conv2d *)prev, wm, bm, r, r_in)
                 : lrp_linear_relevance((strix_linear *)prev, wm, bm, r, r_in);
    strix_free(be, block);
    return s;
}
