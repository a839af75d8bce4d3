/*
 * embedding.c - Embedding (PyTorch nn.Embedding): a row gather forward, a scatter-add backward.
 *
 * Ids are int32 in backend memory; range checks are the caller's (the GPT checks its host ids
 * before uploading them). No padding_idx, max_norm or sparse gradients.
 */
#include <stdlib.h>

#include "nn_internal.h"

static void vt_destroy(strix_module *m) {
    strix_embedding *e = (strix_embedding *)m;
    strix_tensor_free(&e->out);
    free(e);
}
static const strix_module_i embedding_vt = {.type = "Embedding", .destroy = vt_destroy};

strix_status strix_embedding_new(strix_params *ps, const char *prefix, int num_embeddings,
                                 int dim, float init_std, strix_embedding **out) {
    *out = NULL;
    if (num_embeddings <= 0 || dim <= 0)
        return strix_error(STRIX_ERR_ARG, "Embedding %s: sizes (%d, %d) must be positive", prefix,
                           num_embeddings, dim);
    char name[STRIX_PARAM_NAME_MAX];
    STRIX_TRY(nn_name(name, prefix, "weight"));
    strix_embedding *m = calloc(1, sizeof *m);
    if (!m) return NN_ALLOC_FAIL("Embedding");
    m->base.vt = &embedding_vt;
    m->base.be = ps->be;
    m->num_embeddings = num_embeddings;
    m->dim = dim;
    int64_t shape[2] = {num_embeddings, dim};
    m->weight = strix_params_add(ps, name, 2, shape, STRIX_INIT_NORMAL, init_std, true);
    if (!m->weight) {
        free(m);
        return NN_ALLOC_FAIL("Embedding");
    }
    *out = m;
    return STRIX_OK;
}

strix_status strix_embedding_forward(strix_embedding *m, const int32_t *ids, int ndim,
                                     const int64_t *shape, const strix_tensor **y) {
    STRIX_ASSERT(m->weight->data != NULL, "Embedding: parameters not allocated");
    if (ndim < 1 || ndim >= STRIX_MAX_DIMS)
        return strix_error(STRIX_ERR_SHAPE, "Embedding: ids with %d dims", ndim);
    int64_t oshape[STRIX_MAX_DIMS];
    size_t count = 1;
    for (int d = 0; d < ndim; d++) {
        oshape[d] = shape[d];
        count *= (size_t)shape[d];
    }
    oshape[ndim] = m->dim;
    STRIX_TRY(strix_tensor_ensure(m->base.be, &m->out, ndim + 1, oshape));
    if (count > 0)
        STRIX_TRY(strix_gather_rows(m->base.be, m->weight->data, ids, m->out.data, count,
                                    (size_t)m->dim));
    m->ids = ids;
    m->count = count;
    if (y) *y = &m->out;
    return STRIX_OK;
}

strix_status strix_embedding_backward(strix_embedding *m, const strix_tensor *dy) {
    STRIX_TRY(nn_check_same("Embedding", dy, &m->out));
    if (m->count == 0) return STRIX_OK;
    return strix_scatter_add_rows(m->base.be, dy->data, m->ids, m->weight->grad, m->count,
                                  (size_t)m->dim);
}
