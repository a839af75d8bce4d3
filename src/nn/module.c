/*
 * module.c - the generic module vtable calls (strix/nn.h). Dispatch only: each module's own file
 * holds its math. Modules without a float->float form (Embedding) leave the slots NULL and
 * report STRIX_ERR_UNSUPPORTED here; a NULL set_training slot means "no mode", a no-op.
 */
#include "nn_internal.h"

strix_status strix_module_forward(strix_module *m, const strix_tensor *x, const strix_tensor **y) {
    STRIX_ASSERT(m && x, "module forward: NULL argument");
    if (!m->vt->forward)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s has no float->float forward", m->vt->type);
    return m->vt->forward(m, x, y);
}

strix_status strix_module_backward(strix_module *m, const strix_tensor *dy,
                                   const strix_tensor **dx) {
    STRIX_ASSERT(m && dy, "module backward: NULL argument");
    if (!m->vt->backward)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s has no float->float backward", m->vt->type);
    return m->vt->backward(m, dy, dx);
}

void strix_module_free(strix_module *m) {
    if (m) m->vt->destroy(m);
}

void strix_module_set_training(strix_module *m, bool training) {
    STRIX_ASSERT(m, "module set_training: NULL module");
    if (m->vt->set_training) m->vt->set_training(m, training);
}

strix_status strix_module_relevance(strix_module *m, const strix_tensor *r_out,
                                    const strix_tensor **r_in) {
    STRIX_ASSERT(m && r_out, "module relevance: NULL argument");
    if (!m->vt->relevance)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s has no relevance rule", m->vt->type);
    return m->vt->relevance(m, r_out, r_in);
}
