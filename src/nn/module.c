/*
 * module.c - the generic module calls (strix/nn.h): the one-tensor shorthand and the general
 * form (strix_module_io), each served by the module's own slots or converted to the other, plus
 * module state objects. Dispatch only: each module's own file holds its math. A NULL
 * set_training slot means "no mode", a no-op.
 */
#include "nn_internal.h"

strix_module_io strix_module_io_of(const strix_tensor *x) {
    strix_module_io io = {0};
    io.n_in = 1;
    io.in[0] = x;
    return io;
}

strix_module_io strix_module_io_of_ids(const int32_t *ids, int ndim, const int64_t *shape) {
    STRIX_ASSERT(ndim >= 1 && ndim < STRIX_MAX_DIMS, "module io: ids with %d dims", ndim);
    strix_module_io io = {0};
    io.ids = ids;
    io.ids_ndim = ndim;
    for (int d = 0; d < ndim; d++) io.ids_shape[d] = shape[d];
    return io;
}

/* Whether io is a one-tensor call: one float input and nothing else. */
static bool io_is_plain(const strix_module_io *io) {
    return io->n_in == 1 && io->in[0] && !io->ids && !io->mask && !io->state;
}

static strix_status not_plain(const strix_module *m, const char *what) {
    return strix_error(STRIX_ERR_UNSUPPORTED, "%s %s takes one float input only (no ids, mask "
                       "or state)", m->vt->type, what);
}

static void io_set_one(strix_module_io *io, const strix_tensor *t) {
    io->n_out = 1;
    io->out[0] = t;
}

strix_status strix_module_forward(strix_module *m, const strix_tensor *x, const strix_tensor **y) {
    STRIX_ASSERT(m && x, "module forward: NULL argument");
    if (m->vt->forward) return m->vt->forward(m, x, y);
    if (!m->vt->forward_ex)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s has no forward", m->vt->type);
    strix_module_io io = strix_module_io_of(x);
    STRIX_TRY(m->vt->forward_ex(m, &io));
    if (y) *y = io.n_out > 0 ? io.out[0] : NULL;
    return STRIX_OK;
}

strix_status strix_module_backward(strix_module *m, const strix_tensor *dy,
                                   const strix_tensor **dx) {
    STRIX_ASSERT(m && dy, "module backward: NULL argument");
    if (m->vt->backward) return m->vt->backward(m, dy, dx);
    if (!m->vt->backward_ex)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s has no backward", m->vt->type);
    strix_module_io io = strix_module_io_of(dy);
    STRIX_TRY(m->vt->backward_ex(m, &io));
    if (dx) *dx = io.n_out > 0 ? io.out[0] : NULL;
    return STRIX_OK;
}

strix_status strix_module_relevance(strix_module *m, const strix_tensor *r_out,
                                    const strix_tensor **r_in) {
    STRIX_ASSERT(m && r_out, "module relevance: NULL argument");
    if (m->vt->relevance) return m->vt->relevance(m, r_out, r_in);
    if (!m->vt->relevance_ex)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s has no relevance rule", m->vt->type);
    strix_module_io io = strix_module_io_of(r_out);
    STRIX_TRY(m->vt->relevance_ex(m, &io));
    if (r_in) *r_in = io.n_out > 0 ? io.out[0] : NULL;
    return STRIX_OK;
}

strix_status strix_module_forward_ex(strix_module *m, strix_module_io *io) {
    STRIX_ASSERT(m && io, "module forward_ex: NULL argument");
    STRIX_ASSERT(io->n_in >= 0 && io->n_in <= STRIX_MODULE_MAX_IO, "module forward_ex: %d inputs",
                 io->n_in);
    io->n_out = 0;
    if (m->vt->forward_ex) return m->vt->forward_ex(m, io);
    if (!io_is_plain(io)) return not_plain(m, "forward");
    const strix_tensor *y = NULL;
    STRIX_TRY(strix_module_forward(m, io->in[0], &y));
    io_set_one(io, y);
    return STRIX_OK;
}

strix_status strix_module_backward_ex(strix_module *m, strix_module_io *io) {
    STRIX_ASSERT(m && io, "module backward_ex: NULL argument");
    STRIX_ASSERT(io->n_in >= 0 && io->n_in <= STRIX_MODULE_MAX_IO,
                 "module backward_ex: %d gradients", io->n_in);
    io->n_out = 0;
    if (m->vt->backward_ex) return m->vt->backward_ex(m, io);
    if (!io_is_plain(io)) return not_plain(m, "backward");
    const strix_tensor *dx = NULL;
    STRIX_TRY(strix_module_backward(m, io->in[0], &dx));
    io_set_one(io, dx);
    return STRIX_OK;
}

strix_status strix_module_relevance_ex(strix_module *m, strix_module_io *io) {
    STRIX_ASSERT(m && io, "module relevance_ex: NULL argument");
    STRIX_ASSERT(io->n_in >= 0 && io->n_in <= STRIX_MODULE_MAX_IO,
                 "module relevance_ex: %d relevances", io->n_in);
    io->n_out = 0;
    if (m->vt->relevance_ex) return m->vt->relevance_ex(m, io);
    if (!io_is_plain(io)) return not_plain(m, "relevance");
    const strix_tensor *r_in = NULL;
    STRIX_TRY(strix_module_relevance(m, io->in[0], &r_in));
    io_set_one(io, r_in);
    return STRIX_OK;
}

strix_status strix_module_state_new(strix_module *m, strix_module_state **out) {
    STRIX_ASSERT(m && out, "module state_new: NULL argument");
    *out = NULL;
    if (!m->vt->state_new)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s has no state", m->vt->type);
    return m->vt->state_new(m, out);
}

void strix_module_state_free(strix_module *m, strix_module_state *st) {
    STRIX_ASSERT(m, "module state_free: NULL module");
    if (st && m->vt->state_free) m->vt->state_free(m, st);
}

void strix_module_free(strix_module *m) {
    if (m) m->vt->destroy(m);
}

bool strix_module_has_mode(const strix_module *m) {
    STRIX_ASSERT(m, "module has_mode: NULL module");
    return m->vt->get_training != NULL;
}

bool strix_module_training(const strix_module *m) {
    STRIX_ASSERT(m, "module training: NULL module");
    return m->vt->get_training ? m->vt->get_training(m) : true;
}

void strix_module_set_training(strix_module *m, bool training) {
    STRIX_ASSERT(m, "module set_training: NULL module");
    if (m->vt->set_training) m->vt->set_training(m, training);
}
