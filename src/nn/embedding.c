/*
 * embedding.c - Embedding (PyTorch nn.Embedding): a row gather forward, a scatter-add backward.
 *
 * Ids are int32 in backend memory; range checks are the caller's (the GPT checks its host ids
 * before uploading them). Relevance sums each output row into its id's position. The module's
 * generic form is strix_module_io with ids (forward_ex/backward_ex/relevance_ex). No padding_idx,
 * max_norm or sparse gradients.
 */
#include <stdlib.h>

#include "nn/rules_internal.h"
#include "nn_internal.h"

static void vt_destroy(strix_module *m) {
    strix_embedding *e = (strix_embedding *)m;
    strix_tensor_free(&e->work->out);
    strix_tensor_free(&e->work->rel);
    strix_tensor_free(&e->work->ones);
    free(e);
}
static strix_status vt_relevance(strix_module *m, const strix_tensor *r, const strix_tensor **ri) {
    return strix_embedding_relevance((strix_embedding *)m, r, ri);
}
static strix_status vt_forward_ex(strix_module *m, strix_module_io *io) {
    if (!io->ids || io->n_in != 0 || io->mask || io->state)
        return strix_error(STRIX_ERR_UNSUPPORTED, "Embedding takes int32 ids only (io.ids, no "
                           "float input, mask or state)");
    const strix_tensor *y;
    STRIX_TRY(strix_embedding_forward((strix_embedding *)m, io->ids, io->ids_ndim, io->ids_shape,
                                      &y));
    io->n_out = 1;
    io->out[0] = y;
    return STRIX_OK;
}
static strix_status vt_backward_ex(strix_module *m, strix_module_io *io) {
    if (io->n_in != 1 || !io->in[0])
        return strix_error(STRIX_ERR_ARG, "Embedding backward: needs the one output gradient");
    STRIX_TRY(strix_embedding_backward((strix_embedding *)m, io->in[0]));
    io->n_out = 1;
    io->out[0] = NULL; /* ids have no gradient */
    return STRIX_OK;
}
static strix_status vt_relevance_ex(strix_module *m, strix_module_io *io) {
    if (io->n_in != 1 || !io->in[0])
        return strix_error(STRIX_ERR_ARG, "Embedding relevance: needs the one output relevance");
    const strix_tensor *r_in;
    STRIX_TRY(strix_embedding_relevance((strix_embedding *)m, io->in[0], &r_in));
    io->n_out = 1;
    io->out[0] = r_in; /* the ids' entry: no float inputs come before it */
    return STRIX_OK;
}
/* No weights take part in the relevance: every rule kind is the same sum. The one-tensor slots
 * stay NULL (there is no float input); the relevance shorthand is the per-id sum. */
static const strix_module_i embedding_vt = {
    .type = "Embedding", .destroy = vt_destroy, .relevance = vt_relevance,
    .supports_rule = lrp_supports_all, .forward_ex = vt_forward_ex, .backward_ex = vt_backward_ex,
    .relevance_ex = vt_relevance_ex};

strix_status strix_embedding_new(strix_params *ps, const char *prefix, int num_embeddings,
                                 int dim, float init_std, strix_embedding **out) {
    *out = NULL;
    if (num_embeddings <= 0 || dim <= 0)
        return strix_error(STRIX_ERR_ARG, "Embedding %s: sizes (%d, %d) must be positive", prefix,
                           num_embeddings, dim);
    char name[STRIX_PARAM_NAME_MAX];
    STRIX_TRY(nn_name(name, prefix, "weight"));
    strix_embedding *m = NULL;
    NN_CALLOC_WITH_WORK(m);
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
    STRIX_TRY(strix_tensor_ensure(m->base.be, &m->work->out, ndim + 1, oshape));
    if (count > 0)
        STRIX_TRY(strix_gather_rows(m->base.be, m->weight->data, ids, m->work->out.data, count,
                                    (size_t)m->dim));
    m->work->ids = ids;
    m->work->count = count;
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

strix_status strix_embedding_backward(strix_embedding *m, const strix_tensor *dy) {
    STRIX_TRY(nn_check_same("Embedding", dy, &m->work->out));
    if (m->work->count == 0) return STRIX_OK;
    return strix_scatter_add_rows(m->base.be, dy->data, m->work->ids, m->weight->grad,
                                  m->work->count, (size_t)m->dim);
}

strix_status strix_embedding_relevance(strix_embedding *m, const strix_tensor *r_out,
                                       const strix_tensor **r_in) {
    STRIX_TRY(nn_check_same("Embedding relevance", r_out, &m->work->out));
    strix_backend *be = m->base.be;
    int64_t one[1] = {m->dim};
    STRIX_TRY(strix_tensor_ensure(be, &m->work->rel, m->work->out.ndim - 1, m->work->out.shape));
    STRIX_TRY(strix_tensor_ensure(be, &m->work->ones, 1, one));
    if (m->work->count > 0) {
        STRIX_TRY(strix_fill(be, m->work->ones.data, 1.0f, (size_t)m->dim));
        // r_in (count, 1) = r_out (count, dim) · ones (dim, 1): each sum d ascending
        STRIX_TRY(strix_gemm_ex(be, r_out->data, false, m->work->ones.data, false,
                                m->work->rel.data, m->work->count, (size_t)m->dim, 1, 0.0f));
    }
    if (r_in) *r_in = &m->work->rel;
    return STRIX_OK;
}
