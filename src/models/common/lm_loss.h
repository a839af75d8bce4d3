/*
 * lm_loss.h - the batch checks and the next-token loss every character LM shares (the GPT in
 * src/models/gpt, the sequence models in src/models/seqlm). Internal.
 */
#ifndef STRIX_LM_LOSS_H
#define STRIX_LM_LOSS_H

#include "strix/tensor.h"

/* Checks n host ids in [0, V) and, when targets is not NULL, n host targets below V (a negative
 * target is an ignored position, PyTorch's ignore_index; nanoGPT uses -1): STRIX_ERR_ARG naming
 * `who`, the value and its flat position. *valid = the targets that count (0 without targets). */
strix_status lm_check_batch(const char *who, const int32_t *ids, const int32_t *targets, size_t n,
                            int V, size_t *valid);

/* The mean cross-entropy of logits (n rows of V) against targets (backend int32, n; negative:
 * ignored) over the `valid` counted rows: losses (n) and dlogits (logits' shape) grown as needed,
 * dlogits = (softmax − one-hot)/valid (0 rows where ignored), *loss = the mean (0 when valid is
 * 0; loss may be NULL). Backend errors. */
strix_status lm_cross_entropy(strix_backend *be, const strix_tensor *logits,
                              const int32_t *targets, size_t valid, strix_tensor *losses,
                              strix_tensor *dlogits, float *loss);

#endif
