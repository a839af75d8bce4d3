/*
 * cuda_backend.cu - the CUDA backend object (and, compiled by hipcc through vendor.h, the HIP
 * one): device and stream, the BLAS handle, a caching device allocator, scratch, status checks,
 * the memory slots and the vtable. Kernels of the primitives live in the other .cu files.
 *
 * Caching allocator: requests are rounded up to a size class (512 B, then four classes per
 * power of two: 2^l·{1.25, 1.5, 1.75, 2}); a freed block goes to its class's free list and the
 * next request of that class takes it back, so once a training step has run every buffer comes
 * from the cache and the step makes no cudaMalloc (DESIGN.md: no allocation inside a step). Reuse
 * is safe without events because all work goes on one stream: a kernel queued after the free
 * runs after every kernel queued before it. Blocks go back to the device only when cudaMalloc
 * fails (then the cache is emptied and the call retried) and in destroy.
 *
 * One host thread at a time may use a backend (as for the CPU backends).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_internal.h"

// ---- context -----------------------------------------------------------------------------------

#define CUDA_CLASSES 224 /* size classes up to 2^64 bytes */

/* One device block: in the live table while handed out, on its class's free list after. */
typedef struct cuda_block {
    void *ptr;
    size_t size;
    int cls;
    struct cuda_block *next;
} cuda_block;

struct cuda_context {
    int device;
    bool hip;
    char name[24];
    cudaStream_t stream;
#if STRIX_GPU_HAVE_BLAS
    cublasHandle_t blas;
#endif
    bool own_gemm;
    bool exact_reductions;
    cuda_block *free_list[CUDA_CLASSES];
    cuda_block **live; /* hash table of handed-out blocks, chained, keyed by ptr */
    size_t live_buckets, live_count;
    void *scratch;
    size_t scratch_bytes;
    strix_gpu_memstats stats;
};

static cuda_context *ctx_of(const strix_backend *be) { return (cuda_context *)be->ctx; }

// ---- status ------------------------------------------------------------------------------------

strix_status cuda_check(cudaError_t err, const char *call) {
    if (err == cudaSuccess) return STRIX_OK;
    strix_status s = err == cudaErrorMemoryAllocation ? STRIX_ERR_ALLOC : STRIX_ERR_DEVICE;
    return strix_error(s, STRIX_GPU_VENDOR " %s failed: %s (%s)", call, cudaGetErrorName(err),
                       cudaGetErrorString(err));
}

strix_status cuda_launched(const strix_backend *be, const char *what) {
    ctx_of(be)->stats.launches++;
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess) return STRIX_OK;
    return strix_error(STRIX_ERR_DEVICE, STRIX_GPU_VENDOR " kernel %s failed: %s (%s)", what,
                       cudaGetErrorName(err), cudaGetErrorString(err));
}

#if STRIX_GPU_HAVE_BLAS
strix_status cuda_blas_check(cublasStatus_t st, const char *call) {
    if (st == CUBLAS_STATUS_SUCCESS) return STRIX_OK;
#ifdef STRIX_HIP_BUILD
    return strix_error(STRIX_ERR_DEVICE, "hipBLAS %s failed: status %d", call, (int)st);
#else
    return strix_error(STRIX_ERR_DEVICE, "cuBLAS %s failed: %s", call, cublasGetStatusString(st));
#endif
}

cublasHandle_t cuda_blas(const strix_backend *be) { return ctx_of(be)->blas; }
#endif

bool cuda_own_gemm(const strix_backend *be) { return ctx_of(be)->own_gemm; }

bool cuda_exact_reductions(const strix_backend *be) { return ctx_of(be)->exact_reductions; }

cudaStream_t cuda_stream(const strix_backend *be) {
    cuda_context *ctx = ctx_of(be);
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess || current != ctx->device)
        (void)cudaSetDevice(ctx->device); /* a failure shows at the launch that follows */
    return ctx->stream;
}

// ---- caching allocator -------------------------------------------------------------------------

/* The size class of a request: its index (< CUDA_CLASSES) and rounded size; -1 if too large. */
static int size_class(size_t bytes, size_t *size) {
    if (bytes <= 512) {
        *size = 512;
        return 0;
    }
    if (bytes > ((size_t)1 << 62)) return -1;
    int l = 9;
    while (((size_t)1 << (l + 1)) < bytes) l++;
    size_t p = (size_t)1 << l, step = p / 4; /* p < bytes <= 2p */
    size_t j = (bytes - p + step - 1) / step; /* 1..4 */
    *size = p + j * step;
    return 1 + 4 * (l - 9) + (int)(j - 1);
}

static size_t live_slot(const cuda_context *ctx, const void *p) {
    uintptr_t h = (uintptr_t)p >> 8; /* device blocks are 256-byte aligned */
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 7) & (ctx->live_buckets - 1);
}

/* Doubles the live table when it gets crowded (a failed host malloc just keeps the old one). */
static void live_grow(cuda_context *ctx) {
    size_t nb = ctx->live_buckets ? ctx->live_buckets * 2 : 256;
    cuda_block **fresh = (cuda_block **)calloc(nb, sizeof *fresh);
    if (!fresh) return;
    cuda_block **old = ctx->live;
    size_t old_n = ctx->live_buckets;
    ctx->live = fresh;
    ctx->live_buckets = nb;
    for (size_t i = 0; i < old_n; i++) {
        for (cuda_block *b = old[i], *next; b; b = next) {
            next = b->next;
            size_t s = live_slot(ctx, b->ptr);
            b->next = fresh[s];
            fresh[s] = b;
        }
    }
    free(old);
}

/* Returns every cached (free) block to the device. */
static void release_cached(cuda_context *ctx) {
    for (int c = 0; c < CUDA_CLASSES; c++) {
        for (cuda_block *b = ctx->free_list[c], *next; b; b = next) {
            next = b->next;
            (void)cudaFree(b->ptr);
            ctx->stats.reserved_bytes -= b->size;
            free(b);
        }
        ctx->free_list[c] = NULL;
    }
}

strix_status cuda_alloc(strix_backend *be, size_t bytes, void **out) {
    cuda_context *ctx = ctx_of(be);
    *out = NULL;
    size_t size = 0;
    int cls = size_class(bytes, &size);
    if (cls < 0)
        return strix_error(STRIX_ERR_ALLOC, "%s: cannot allocate %zu bytes", ctx->name, bytes);
    if (ctx->live_count >= 2 * ctx->live_buckets) live_grow(ctx);
    if (ctx->live_buckets == 0)
        return strix_error(STRIX_ERR_ALLOC, "%s: no host memory for the block table", ctx->name);
    cuda_block *b = ctx->free_list[cls];
    if (b) {
        ctx->free_list[cls] = b->next;
    } else {
        b = (cuda_block *)calloc(1, sizeof *b);
        if (!b) return strix_error(STRIX_ERR_ALLOC, "%s: no host memory for a block", ctx->name);
        (void)cuda_stream(be); /* makes the device current */
        void *p = NULL;
        cudaError_t err = cudaMalloc(&p, size);
        if (err == cudaErrorMemoryAllocation) { /* empty the cache, then try once more */
            (void)cudaGetLastError();
            release_cached(ctx);
            err = cudaMalloc(&p, size);
        }
        if (err != cudaSuccess) {
            free(b);
            (void)cudaGetLastError();
            return strix_error(err == cudaErrorMemoryAllocation ? STRIX_ERR_ALLOC
                                                                : STRIX_ERR_DEVICE,
                               "%s: cudaMalloc of %zu bytes failed: %s", ctx->name, size,
                               cudaGetErrorString(err));
        }
        b->ptr = p;
        b->size = size;
        b->cls = cls;
        ctx->stats.reserved_bytes += size;
        ctx->stats.device_mallocs++;
    }
    size_t s = live_slot(ctx, b->ptr);
    b->next = ctx->live[s];
    ctx->live[s] = b;
    ctx->live_count++;
    ctx->stats.in_use_bytes += b->size;
    *out = b->ptr;
    return STRIX_OK;
}

void cuda_free_buffer(strix_backend *be, void *p) {
    if (p == NULL) return;
    cuda_context *ctx = ctx_of(be);
    cuda_block **link = ctx->live_buckets ? &ctx->live[live_slot(ctx, p)] : NULL;
    while (link && *link && (*link)->ptr != p) link = &(*link)->next;
    STRIX_ASSERT(link && *link, "%s: free of %p, which this backend did not allocate", ctx->name,
                 p);
    cuda_block *b = *link;
    *link = b->next;
    ctx->live_count--;
    ctx->stats.in_use_bytes -= b->size;
    b->next = ctx->free_list[b->cls];
    ctx->free_list[b->cls] = b;
}

strix_status cuda_scratch(strix_backend *be, size_t bytes, void **out) {
    cuda_context *ctx = ctx_of(be);
    if (bytes > ctx->scratch_bytes || ctx->scratch == NULL) {
        cuda_free_buffer(be, ctx->scratch); /* queued kernels still using it run first */
        ctx->scratch = NULL;
        ctx->scratch_bytes = 0;
        STRIX_TRY(cuda_alloc(be, bytes ? bytes : 1, &ctx->scratch));
        ctx->scratch_bytes = bytes ? bytes : 1;
    }
    *out = ctx->scratch;
    return STRIX_OK;
}

extern "C" void strix_cuda_memory_stats(const strix_backend *be, strix_gpu_memstats *out) {
    *out = ctx_of(be)->stats;
}

// ---- lifecycle and memory slots ----------------------------------------------------------------

void cuda_destroy(strix_backend *be) {
    cuda_context *ctx = ctx_of(be);
    if (ctx->stream) {
        (void)cuda_stream(be);
        (void)cudaStreamSynchronize(ctx->stream);
    }
    ctx->scratch = NULL;
    for (size_t i = 0; i < ctx->live_buckets; i++) { /* blocks the caller never freed */
        for (cuda_block *b = ctx->live[i], *next; b; b = next) {
            next = b->next;
            (void)cudaFree(b->ptr);
            free(b);
        }
    }
    free(ctx->live);
    release_cached(ctx);
#if STRIX_GPU_HAVE_BLAS
    if (ctx->blas) (void)cublasDestroy(ctx->blas);
#endif
    if (ctx->stream) (void)cudaStreamDestroy(ctx->stream);
    (void)cudaGetLastError();
    free(ctx);
    free(be);
}

strix_status cuda_sync(strix_backend *be) {
    CUDA_TRY(cudaStreamSynchronize(cuda_stream(be)));
    return STRIX_OK;
}

strix_status cuda_download(strix_backend *be, void *host, const void *device, size_t bytes) {
    if (bytes == 0) return STRIX_OK;
    cudaStream_t st = cuda_stream(be);
    CUDA_TRY(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, st));
    CUDA_TRY(cudaStreamSynchronize(st));
    return STRIX_OK;
}

strix_status cuda_copy(strix_backend *be, void *dst, const void *src, size_t bytes,
                       strix_copy_dir dir) {
    if (bytes == 0) return STRIX_OK;
    cudaStream_t st = cuda_stream(be);
    switch (dir) {
    case STRIX_COPY_H2D: /* pageable source: staged before the call returns */
        CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st));
        return STRIX_OK;
    case STRIX_COPY_D2H:
        return cuda_download(be, dst, src, bytes);
    case STRIX_COPY_D2D:
        CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st));
        return STRIX_OK;
    case STRIX_COPY_H2H:
        memmove(dst, src, bytes);
        return STRIX_OK;
    }
    return strix_error(STRIX_ERR_ARG, "copy: bad direction %d", (int)dir);
}

static __global__ void k_fill(float *p, float value, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = value;
}

strix_status cuda_fill(strix_backend *be, float *p, float value, size_t n) {
    if (n == 0) return STRIX_OK;
    k_fill<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(p, value, n);
    return cuda_launched(be, "fill");
}

// ---- vtable and constructor --------------------------------------------------------------------

/* The lifecycle and memory slots, then cuda_<name> for every primitive of
 * src/core/primitives.def (in declaration order, as C++ designated initializers must be). */
#define STRIX_PRIMITIVE(header, name, params, args) .name = cuda_##name,
static const struct strix_backend_i cuda_vtable = {
    .destroy = cuda_destroy, .sync = cuda_sync, .alloc = cuda_alloc,
    .free_buffer = cuda_free_buffer, .copy = cuda_copy, .fill = cuda_fill,
#include "core/primitives.def"
};

/* The error of a machine where cudaGetDeviceCount fails or finds nothing. Without a driver the
 * CUDA runtime reports "CUDA driver version is insufficient for CUDA runtime version"
 * (cudaErrorInsufficientDriver, also given for an outdated driver) or cudaErrorNoDevice; both
 * read as what they mostly mean. The HIP runtime without the amdgpu driver (/dev/kfd) answers
 * with one of several codes, so every failure of the HIP build reads so. */
static strix_status no_device_error(cudaError_t err) {
#ifdef STRIX_HIP_BUILD
    const char *what = "no AMD GPU driver / GPU found";
    const bool driver = err != cudaSuccess;
#else
    const char *what = "no NVIDIA driver / GPU found";
    const bool driver = err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver;
#endif
    if (err == cudaSuccess)
        return strix_error(STRIX_ERR_DEVICE, "%s (the " STRIX_GPU_VENDOR " runtime sees no "
                           "device)", what);
    if (err == cudaErrorInsufficientDriver)
        return strix_error(STRIX_ERR_DEVICE, "%s, or the driver is older than this build's "
                           STRIX_GPU_VENDOR " runtime (%s)", what, cudaGetErrorName(err));
    if (driver) {
        const char *name = cudaGetErrorName(err), *text = cudaGetErrorString(err);
        if (strcmp(name, text) == 0) /* HIP names some errors by their name alone */
            return strix_error(STRIX_ERR_DEVICE, "%s (%s)", what, name);
        return strix_error(STRIX_ERR_DEVICE, "%s (%s: %s)", what, name, text);
    }
    return strix_error(STRIX_ERR_DEVICE, "cannot open a " STRIX_GPU_VENDOR " device: %s (%s)",
                       cudaGetErrorString(err), cudaGetErrorName(err));
}

/* Creates the stream and BLAS handle of a fresh context on its device, with the GEMM engine and
 * math mode of the init options (never the environment: the command passes those on). */
static strix_status context_open(cuda_context *ctx, const strix_backend_options *opt) {
    CUDA_TRY(cudaSetDevice(ctx->device));
    CUDA_TRY(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    ctx->own_gemm = !STRIX_GPU_HAVE_BLAS || opt->gpu_gemm == STRIX_GPU_GEMM_OWN;
    ctx->exact_reductions = opt->gpu_exact_reductions;
#if STRIX_GPU_HAVE_BLAS
    STRIX_TRY(cuda_blas_check(cublasCreate(&ctx->blas), "cublasCreate"));
    STRIX_TRY(cuda_blas_check(cublasSetStream(ctx->blas, ctx->stream), "cublasSetStream"));
#ifndef STRIX_HIP_BUILD
    /* FP32 products and sums (TF32 only on request). */
    STRIX_TRY(cuda_blas_check(
        cublasSetMathMode(ctx->blas, opt->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
        "cublasSetMathMode"));
#endif
    /* No atomics in the BLAS either: results reproduce run to run. */
    STRIX_TRY(cuda_blas_check(cublasSetAtomicsMode(ctx->blas, CUBLAS_ATOMICS_NOT_ALLOWED),
                              "cublasSetAtomicsMode"));
#endif
    return STRIX_OK;
}

extern "C" strix_status strix_cuda_backend_create(int device, bool hip,
                                                  const strix_backend_options *opt,
                                                  strix_backend **out) {
    *out = NULL;
    const strix_backend_options defaults = {};
    if (opt == NULL) opt = &defaults;
#ifdef STRIX_HIP_BUILD
    const bool is_hip = true;
    const char *kind = "hip";
#else
    const bool is_hip = false;
    const char *kind = "cuda";
#endif
    if (hip != is_hip)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s backend asked of the %s build",
                           hip ? "hip" : "cuda", kind);
    if (opt->gpu_gemm == STRIX_GPU_GEMM_BLAS && !STRIX_GPU_HAVE_BLAS)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s: this build has no vendor BLAS (hipBLAS "
                           "was not found): its GEMM is our own kernel", kind);
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        return no_device_error(err);
    }
    if (device < 0 || device >= count)
        return strix_error(STRIX_ERR_ARG, "%s:%d: no such device (this machine has %d "
                           STRIX_GPU_VENDOR " device%s: %s:0..%d)", kind, device, count,
                           count == 1 ? "" : "s", kind, count - 1);
    strix_backend *be = (strix_backend *)calloc(1, sizeof *be);
    cuda_context *ctx = (cuda_context *)calloc(1, sizeof *ctx);
    if (!be || !ctx) {
        free(be);
        free(ctx);
        return strix_error(STRIX_ERR_ALLOC, "%s: cannot allocate the backend handle", kind);
    }
    ctx->device = device;
    ctx->hip = is_hip;
    if (device == 0)
        snprintf(ctx->name, sizeof ctx->name, "%s", kind);
    else
        snprintf(ctx->name, sizeof ctx->name, "%s:%d", kind, device);
    be->vt = &cuda_vtable;
    be->name = ctx->name;
    be->device = is_hip ? STRIX_DEVICE_HIP : STRIX_DEVICE_CUDA;
    be->ctx = ctx;
    live_grow(ctx);
    strix_status s = ctx->live ? context_open(ctx, opt)
                               : strix_error(STRIX_ERR_ALLOC, "%s: no host memory", kind);
    if (s != STRIX_OK) {
        cuda_destroy(be);
        return s;
    }
    *out = be;
    return STRIX_OK;
}
