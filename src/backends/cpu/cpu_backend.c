/*
 * cpu_backend.c - the CPU backends' vtables, constructor and memory slots.
 *
 * "cpu" is the reference: plain deterministic loops over the kernel headers and our own blocked
 * GEMM. "cpu-blas" is the same table with the GEMM slots on OpenBLAS. Every slot is filled.
 * This file does not register names (src/core/backend.c does) and holds no math.
 */
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_internal.h"

#define CPU_PARALLEL_MIN_WORK_DEFAULT 32768
size_t cpu_parallel_min_work = CPU_PARALLEL_MIN_WORK_DEFAULT;

size_t cpu_set_parallel_min_work(size_t work) {
    size_t previous = cpu_parallel_min_work;
    cpu_parallel_min_work = work ? work : CPU_PARALLEL_MIN_WORK_DEFAULT;
    return previous;
}

void *cpu_aligned_alloc(size_t bytes) {
    if (bytes == 0) return NULL;
    size_t rounded = (bytes + 63) / 64 * 64;
    if (rounded < bytes) return NULL; /* overflow */
    return aligned_alloc(64, rounded);
}

// ---- lifecycle and memory ----------------------------------------------------------------------

static void cpu_destroy(strix_backend *be) {
    cpu_context *ctx = be->ctx;
    cpu_gemm_release(ctx);
    free(ctx);
    free(be);
}

static strix_status cpu_sync(strix_backend *be) {
    (void)be;
    return STRIX_OK;
}

static strix_status cpu_alloc(strix_backend *be, size_t bytes, void **out) {
    (void)be;
    *out = cpu_aligned_alloc(bytes);
    if (!*out) return strix_error(STRIX_ERR_ALLOC, "cpu: cannot allocate %zu bytes", bytes);
    return STRIX_OK;
}

static void cpu_free_buffer(strix_backend *be, void *p) {
    (void)be;
    free(p);
}

static strix_status cpu_copy(strix_backend *be, void *dst, const void *src, size_t bytes,
                             strix_copy_dir dir) {
    (void)be;
    (void)dir;
    if (bytes) memmove(dst, src, bytes);
    return STRIX_OK;
}

typedef struct fill_args {
    float *p;
    float value;
} fill_args;

static void fill_range(void *args, size_t i0, size_t i1) {
    const fill_args *f = args;
    float *p = f->p, value = f->value;
    for (size_t i = i0; i < i1; i++) p[i] = value;
}

static strix_status cpu_fill(strix_backend *be, float *p, float value, size_t n) {
    (void)be;
    cpu_parallel_for(n, CPU_BIG(n / 4), fill_range, &(fill_args){p, value});
    return STRIX_OK;
}

// ---- vtables -----------------------------------------------------------------------------------

/* The lifecycle and memory slots, then cpu_<name> for every primitive of
 * src/core/primitives.def. */
#define CPU_SLOTS                                                                              \
    .destroy = cpu_destroy, .sync = cpu_sync, .alloc = cpu_alloc,                              \
    .free_buffer = cpu_free_buffer, .copy = cpu_copy, .fill = cpu_fill,
#define STRIX_PRIMITIVE(header, name, params, args) .name = cpu_##name,

static const struct strix_backend_i cpu_vtable = {
    CPU_SLOTS
#include "core/primitives.def"
};

#ifdef STRIX_HAVE_BLAS
/* The cpu table with the GEMM slots on OpenBLAS, threaded by OpenMP (gemm_blas.c); small batched
 * items stay on the own kernel. The later initializer of a slot wins (C11 6.7.9p19). */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Winitializer-overrides"
#elif defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
#endif
#define STRIX_PRIMITIVE(header, name, params, args) .name = cpu_##name,
static const struct strix_backend_i cpu_blas_vtable = {
    CPU_SLOTS
#include "core/primitives.def"
    .gemm_ex = cpu_blas_gemm_ex,
    .gemm_batched = cpu_blas_gemm_batched,
    .gemm_pack_b = cpu_blas_gemm_pack_b,
};
#if defined(__clang__)
#pragma clang diagnostic pop
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif

strix_status strix_cpu_backend_create(bool use_blas, strix_backend **out) {
    *out = NULL;
#ifndef STRIX_HAVE_BLAS
    if (use_blas)
        return strix_error(STRIX_ERR_UNSUPPORTED, "cpu-blas: strix was built without OpenBLAS");
#endif
    strix_backend *be = calloc(1, sizeof *be);
    cpu_context *ctx = calloc(1, sizeof *ctx);
    if (!be || !ctx) {
        free(be);
        free(ctx);
        return strix_error(STRIX_ERR_ALLOC, "cpu: cannot allocate the backend handle");
    }
    be->vt = &cpu_vtable;
    be->name = "cpu";
#ifdef STRIX_HAVE_BLAS
    if (use_blas) {
        be->vt = &cpu_blas_vtable;
        be->name = "cpu-blas";
        strix_cpu_blas_hold_one_thread();
    }
#endif
    be->device = STRIX_DEVICE_CPU;
    be->ctx = ctx;
    *out = be;
    return STRIX_OK;
}
