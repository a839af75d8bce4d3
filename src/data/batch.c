/*
 * batch.c - the two batch samplers of the character corpus: random windows (nanoGPT get_batch)
 * and the sequential stride walk (microGPT's window trainer) (strix/data.h).
 *
 * Does not shuffle documents and allocates nothing: ids/targets are the caller's (B,T) buffers.
 */
#include "strix/data.h"

/* The ids of a split and its length. */
static const uint8_t *split_ids(const strix_corpus *c, strix_split split, size_t *n) {
    *n = strix_corpus_split_size(c, split);
    return split == STRIX_SPLIT_TRAIN ? c->ids : c->ids + c->n_train;
}

static strix_status check_sizes(size_t n, int B, int T) {
    if (B < 1 || T < 1) return strix_error(STRIX_ERR_ARG, "batch %d x %d must be positive", B, T);
    if (n < (size_t)T + 1)
        return strix_error(STRIX_ERR_ARG,
                           "split of %zu characters is shorter than one block of T+1 = %d", n,
                           T + 1);
    return STRIX_OK;
}

/* Row b of the batch from the window starting at `start`. */
static void copy_window(const uint8_t *text, size_t start, int b, int T, int32_t *ids,
                        int32_t *targets) {
    for (int t = 0; t < T; t++) {
        ids[(size_t)b * T + t] = text[start + t];
        targets[(size_t)b * T + t] = text[start + t + 1];
    }
}

strix_status strix_corpus_batch_random(const strix_corpus *c, strix_split split, strix_rng *rng,
                                       int B, int T, int32_t *ids, int32_t *targets) {
    size_t n;
    const uint8_t *text = split_ids(c, split, &n);
    STRIX_TRY(check_sizes(n, B, T));
    uint64_t starts = (uint64_t)(n - (size_t)T); /* s in [0, n − T − 1] */
    for (int b = 0; b < B; b++)
        copy_window(text, (size_t)strix_rng_below(rng, starts), b, T, ids, targets);
    return STRIX_OK;
}

strix_status strix_corpus_batch_sequential(const strix_corpus *c, strix_split split,
                                           strix_seq_cursor *cur, int B, int T, int32_t *ids,
                                           int32_t *targets) {
    size_t n;
    const uint8_t *text = split_ids(c, split, &n);
    STRIX_TRY(check_sizes(n, B, T));
    if (cur->stride == 0) return strix_error(STRIX_ERR_ARG, "sequential stride must be positive");
    for (int b = 0; b < B; b++) {
        if (cur->pos > (uint64_t)(n - (size_t)T - 1)) {
            cur->pos = 0;
            cur->epoch++;
        }
        copy_window(text, (size_t)cur->pos, b, T, ids, targets);
        cur->pos += cur->stride;
    }
    return STRIX_OK;
}
