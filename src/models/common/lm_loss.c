/*
 * lm_loss.c - batch checks and the next-token cross-entropy of the character LMs (lm_loss.h).
 */
#include "models/common/lm_loss.h"
#include "strix/backend.h"

strix_status lm_check_batch(const char *who, const int32_t *ids, const int32_t *targets, size_t n,
                            int V, size_t *valid) {
    *valid = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= V)
            return strix_error(STRIX_ERR_ARG, "%s: id %d at %zu outside [0, %d)", who, ids[i], i,
                               V);
        if (!targets) continue;
        if (targets[i] >= V)
            return strix_error(STRIX_ERR_ARG, "%s: target %d at %zu outside [0, %d)", who,
                               targets[i], i, V);
        if (targets[i] >= 0) (*valid)++;
    }
    return STRIX_OK;
}

strix_status lm_cross_entropy(strix_backend *be, const strix_tensor *logits,
                              const int32_t *targets, size_t valid, strix_tensor *losses,
                              strix_tensor *dlogits, float *loss) {
    size_t V = (size_t)logits->shape[logits->ndim - 1];
    size_t n = (size_t)strix_tensor_numel(logits) / V;
    int64_t lshape[1] = {(int64_t)n};
    STRIX_TRY(strix_tensor_ensure(be, losses, 1, lshape));
    STRIX_TRY(strix_tensor_ensure(be, dlogits, logits->ndim, logits->shape));
    float scale = valid > 0 ? 1.0f / (float)valid : 0.0f;
    STRIX_TRY(strix_softmax_cross_entropy(be, logits->data, targets, losses->data, dlogits->data,
                                          n, V, scale));
    float sum = 0.0f;
    STRIX_TRY(strix_sum(be, losses->data, n, &sum));
    if (loss) *loss = valid > 0 ? sum / (float)valid : 0.0f;
    return STRIX_OK;
}
