/*
 * tensor.c - allocation, views and shapes of strix_tensor. Memory comes from the owner backend.
 */
#include <stdint.h>
#include <string.h>

#include "strix/backend.h"

int64_t strix_tensor_numel(const strix_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

/* Sets the shape after checking it: dims >= 0, and a byte size that fits in size_t (so numel and
 * numel·4 never overflow anywhere downstream). */
static strix_status set_shape(strix_tensor *t, int ndim, const int64_t *shape) {
    if (ndim < 1 || ndim > STRIX_MAX_DIMS) return strix_error(STRIX_ERR_ARG, "tensor: %d dims", ndim);
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) return strix_error(STRIX_ERR_ARG, "tensor: negative dim %d", d);
        if (__builtin_mul_overflow(numel, shape[d], &numel) ||
            (uint64_t)numel > SIZE_MAX / sizeof(float))
            return strix_error(STRIX_ERR_ARG, "tensor: %d-dim shape too large to address", ndim);
    }
    t->ndim = ndim;
    for (int d = 0; d < STRIX_MAX_DIMS; d++) t->shape[d] = d < ndim ? shape[d] : 1;
    return STRIX_OK;
}

strix_status strix_tensor_ensure(strix_backend *be, strix_tensor *t, int ndim,
                                 const int64_t *shape) {
    strix_tensor want = {0};
    STRIX_TRY(set_shape(&want, ndim, shape));
    int64_t n = strix_tensor_numel(&want);
    if (t->owner == NULL && t->data != NULL)
        return strix_error(STRIX_ERR_ARG, "tensor: cannot grow a view");
    if (n > t->capacity) {
        void *p = NULL;
        STRIX_TRY(strix_alloc(be, (size_t)n * sizeof(float), &p));
        if (t->owner) strix_free(t->owner, t->data);
        t->data = p;
        t->owner = be;
        t->capacity = n;
        t->device = strix_backend_device(be);
    }
    memcpy(t->shape, want.shape, sizeof want.shape);
    t->ndim = want.ndim;
    return STRIX_OK;
}

strix_status strix_tensor_new(strix_backend *be, int ndim, const int64_t *shape,
                              strix_tensor *out) {
    memset(out, 0, sizeof *out);
    STRIX_TRY(strix_tensor_ensure(be, out, ndim, shape));
    strix_status s = strix_fill(be, out->data, 0.0f, (size_t)strix_tensor_numel(out));
    if (s != STRIX_OK) strix_tensor_free(out);
    return s;
}

strix_tensor strix_tensor_view(float *data, strix_device device, int ndim, const int64_t *shape) {
    strix_tensor t = {0};
    t.data = data;
    t.device = device;
    STRIX_ASSERT(set_shape(&t, ndim, shape) == STRIX_OK, "bad view shape");
    return t;
}

void strix_tensor_free(strix_tensor *t) {
    if (!t) return;
    if (t->owner) strix_free(t->owner, t->data);
    memset(t, 0, sizeof *t);
}
