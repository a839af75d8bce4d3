/*
 * cuda_internal.h - what the files of the CUDA backend share (compiled by nvcc, and by hipcc
 * through vendor.h for the HIP backend): the private context, launch helpers, status checks, and
 * the prototypes of every slot of its vtable. Kernels call the per-lane math of src/kernels/,
 * the same functions the CPU loops call, one GPU thread per lane.
 *
 * Kernels are `static __global__`, use no warp shuffles or warp-size assumptions and no atomics
 * in reductions (vendor.h says why). Launch pattern, one thread per lane:
 *     k_op<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(...);
 *     return cuda_launched(be, "op");
 *
 * Not a public header: modules reach these functions only through include/strix/backend.h.
 */
#ifndef STRIX_CUDA_INTERNAL_H
#define STRIX_CUDA_INTERNAL_H

#include "backends/cuda/vendor.h"
#include "core/backend_impl.h"

/* Threads per block of the one-thread-per-lane launches. */
#define CUDA_BLOCK 256

/* Blocks of CUDA_BLOCK threads that cover n lanes (at least 1). */
static inline unsigned cuda_blocks(size_t n) {
    size_t b = (n + CUDA_BLOCK - 1) / CUDA_BLOCK;
    return (unsigned)(b ? b : 1);
}

/* Private state of a CUDA/HIP backend (cuda_backend.cu): device, stream, BLAS handle, caching
 * allocator, a growing scratch workspace. */
typedef struct cuda_context cuda_context;

/* The backend's stream: every launch and copy goes on it (no per-op synchronisation). Also makes
 * the backend's device current on this host thread when another one was. */
cudaStream_t cuda_stream(const strix_backend *be);

/* STRIX_OK, or STRIX_ERR_DEVICE naming `what` and the runtime's message, for the last launch
 * (cudaGetLastError); counts the launch (strix_gpu_memstats.launches). Use after every kernel
 * launch: `return cuda_launched(be, "softmax_rows");` */
strix_status cuda_launched(const strix_backend *be, const char *what);

/* Checks a runtime call's result: STRIX_ERR_DEVICE naming the call (STRIX_ERR_ALLOC for out of
 * memory). */
strix_status cuda_check(cudaError_t err, const char *call);
#define CUDA_TRY(call)                                                                         \
    do {                                                                                       \
        strix_status cuda_try_s_ = cuda_check((call), #call);                                 \
        if (cuda_try_s_ != STRIX_OK) return cuda_try_s_;                                       \
    } while (0)

#if STRIX_GPU_HAVE_BLAS
/* The backend's cuBLAS (hipBLAS) handle, bound to its stream; FP32 math (TF32 only with
 * the init option tf32), atomics not allowed. */
cublasHandle_t cuda_blas(const strix_backend *be);

/* Checks a cuBLAS (hipBLAS) status: STRIX_ERR_DEVICE naming the call. */
strix_status cuda_blas_check(cublasStatus_t st, const char *call);
#endif

/* True when the GEMM slots use our own tiled kernel (gemm.cu) rather than the vendor BLAS: no
 * BLAS in this build (HIP without hipBLAS), or the init option gpu_gemm = STRIX_GPU_GEMM_OWN
 * (the strix command sets it for STRIX_CUDA_GEMM=own). */
bool cuda_own_gemm(const strix_backend *be);

/* True when the reductions run in the CPU's order, one thread per row or column (init option
 * gpu_exact_reductions; the strix command sets it for STRIX_CUDA_REDUCE=exact); false for the
 * block kernels with fixed-tree sums (block_reduce.h). */
bool cuda_exact_reductions(const strix_backend *be);

/* A device scratch buffer of at least `bytes`, owned by the backend and reused by the next call
 * that asks (one stream: kernels queued earlier finish first). Valid until the next
 * cuda_scratch call. STRIX_ERR_ALLOC / STRIX_ERR_DEVICE. */
strix_status cuda_scratch(strix_backend *be, size_t bytes, void **out);

/* Copies `bytes` device -> host on the stream and waits (for results that return to the host). */
strix_status cuda_download(strix_backend *be, void *host, const void *device, size_t bytes);

// ---- vtable slots (semantics: include/strix/backend.h and include/strix/ops/*.h) ---------------

void cuda_destroy(strix_backend *be);
strix_status cuda_sync(strix_backend *be);
strix_status cuda_alloc(strix_backend *be, size_t bytes, void **out);
void cuda_free_buffer(strix_backend *be, void *p);
strix_status cuda_copy(strix_backend *be, void *dst, const void *src, size_t bytes,
                       strix_copy_dir dir);
strix_status cuda_fill(strix_backend *be, float *p, float value, size_t n);
/* cuda_<name> for every primitive of src/core/primitives.def. */
#define STRIX_PRIMITIVE(header, name, params, args)                                           \
    strix_status cuda_##name(strix_backend *be, STRIX_UNPAREN params);
#include "core/primitives.def"

#endif
