/*
 * strix/tensor.h - the plain tensor: float32, row-major, contiguous, at most 4 dims, a device tag,
 * owned (allocated through a backend) or a view of memory someone else owns.
 *
 * Tensors carry shapes between modules; the backend primitives themselves take raw pointers and
 * sizes (docs/SEMANTICS.md), so a kernel never depends on this struct.
 */
#ifndef STRIX_TENSOR_H
#define STRIX_TENSOR_H

#include "strix/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STRIX_MAX_DIMS 4

typedef enum strix_device { STRIX_DEVICE_CPU = 0, STRIX_DEVICE_CUDA, STRIX_DEVICE_HIP } strix_device;

typedef struct strix_backend strix_backend;

typedef struct strix_tensor {
    float *data;                    /* backend memory; NULL iff numel == 0 */
    int64_t shape[STRIX_MAX_DIMS];  /* unused trailing dims are 1 */
    int ndim;
    strix_device device;
    strix_backend *owner;           /* backend that frees data; NULL for a view */
    int64_t capacity;               /* elements allocated (owned tensors) */
} strix_tensor;

/* Number of elements (product of the first ndim dims). */
STRIX_API int64_t strix_tensor_numel(const strix_tensor *t);

/* Allocates a zero-filled tensor of `ndim` dims on `be`. Returns STRIX_ERR_ARG for a bad shape,
 * STRIX_ERR_ALLOC when memory runs out. */
STRIX_API strix_status strix_tensor_new(strix_backend *be, int ndim, const int64_t *shape,
                                        strix_tensor *out);

/* Reallocates `t` on `be` only if it holds fewer than numel(shape) elements; then sets the shape.
 * Contents are unspecified afterwards. The no-allocation-in-a-step rule relies on this: after the
 * first step every call finds its buffer large enough. */
STRIX_API strix_status strix_tensor_ensure(strix_backend *be, strix_tensor *t, int ndim,
                                           const int64_t *shape);

/* A non-owning view of `data` with the given shape. */
STRIX_API strix_tensor strix_tensor_view(float *data, strix_device device, int ndim,
                                         const int64_t *shape);

/* Frees an owned tensor's memory and zeroes the struct; a view is only zeroed. NULL is a no-op. */
STRIX_API void strix_tensor_free(strix_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
