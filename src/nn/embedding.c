/*
 * embedding.c - Embedding (PyTorch nn.Embedding): a row gather forward, a scatter-add backward.
 *
 * Ids are int32 in backend memory. Forward and backward check every id against [0, num) before
 * the table is touched (STRIX_ERR_ARG naming the id and its position): in place on a CPU backend,
 * on a host copy (one device-to-host copy per call, into a buffer that grows only) on a GPU
 * backend. Relevance sums each output row into its id's position. The module's
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
    free(e->work->host_ids);
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

/* STRIX_ERR_ARG for the first of ids[0..count) (backend memory) outside [0, num); `call` names
 * the call in the message. A GPU backend's ids are read through work->host_ids. */
static strix_status check_ids(strix_embedding *m, const int32_t *ids, size_t count,
                              const char *call) {
    struct strix_embedding_work *w = m->work;
    const int32_t *host = ids;
    if (count > 0 && strix_backend_device(m->base.be) != STRIX_DEVICE_CPU) {
        if (count > w->host_cap) {
            int32_t *grown = realloc(w->host_ids, count * sizeof *grown);
            if (!grown) return NN_ALLOC_FAIL("Embedding ids");
            w->host_ids = grown;
            w->host_cap = count;
        }
        STRIX_TRY(strix_copy(m->base.be, w->host_ids, ids, count * sizeof *ids,
                             STRIX_COPY_D2H));
        host = w->host_ids;
    }
    for (size_t i = 0; i < count; i++)
        if (host[i] < 0 || host[i] >= m->num_embeddings)
            return strix_error(STRIX_ERR_ARG, "Embedding %s: id %d at position %zu outside "
                               "[0, %d)", call, host[i], i, m->num_embeddings);
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
    /* recorded before the check, so a backward after a refused forward is refused alike */
    m->work->ids = ids;
    m->work->count = count;
    STRIX_TRY(check_ids(m, ids, count, "forward"));
    STRIX_TRY(strix_tensor_ensure(m->base.be, &m->work->out, ndim + 1, oshape));
    if (count > 0)
        STRIX_TRY(strix_gather_rows(m->base.be, m->weight->data, ids, m->work->out.data, count,
                                    (size_t)m->dim));
    if (y) *y = &m->work->out;
    return STRIX_OK;
}

strix_status strix_embedding_backward(strix_embedding *m, const strix_tensor *dy) {
    STRIX_TRY(nn_check_same("Embedding", dy, &m->work->out));
    if (m->work->count == 0) return STRIX_OK;
    STRIX_TRY(check_ids(m, m->work->ids, m->work->count, "backward")); /* they may have changed */
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
