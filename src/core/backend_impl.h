/*
 * backend_impl.h - the backend vtable (internal). One slot per primitive; each slot has the
 * signature of its public wrapper in include/strix/backend.h. A NULL slot means "unsupported": the
 * wrapper reports STRIX_ERR_UNSUPPORTED and never falls back to another backend. The wrappers
 * (src/core/backend.c, src/core/ops_*.c) make the argument checks every backend relies on (bad
 * op -> STRIX_ERR_ARG, contract violations -> STRIX_ASSERT) before the call; slots do not repeat
 * them. Checks that read the data (RL actions) stay with the backend that holds it.
 *
 * The primitive slots are generated from ONE list, src/core/primitives.def (which also generates
 * the backends' prototypes and tables and the plain entry points); the lifecycle and memory slots
 * are written here. To add a backend: fill a `struct strix_backend_i` with designated initializers
 * (generated from the list), register its name in src/core/backend.c, and pass tests/test_ops.c
 * with a column for it (docs/BACKENDS.md).
 */
#ifndef STRIX_BACKEND_IMPL_H
#define STRIX_BACKEND_IMPL_H

#include "strix/backend.h"

#ifdef __cplusplus
extern "C" { /* the GPU backends' .cu files are C++ */
#endif

/* (a, b, c) -> a, b, c: unwraps the parameter and argument lists of src/core/primitives.def. */
#define STRIX_UNPAREN(...) __VA_ARGS__

/* Slot indices: STRIX_PRIM_<name>, in list order; STRIX_PRIMITIVE_COUNT of them. */
enum strix_primitive_id {
#define STRIX_PRIMITIVE(header, name, params, args) STRIX_PRIM_##name,
#include "core/primitives.def"
    STRIX_PRIMITIVE_COUNT
};

struct strix_backend_i {
    // lifecycle and memory
    void (*destroy)(strix_backend *be);
    strix_status (*sync)(strix_backend *be);
    strix_status (*alloc)(strix_backend *be, size_t bytes, void **out);
    void (*free_buffer)(strix_backend *be, void *p);
    strix_status (*copy)(strix_backend *be, void *dst, const void *src, size_t bytes,
                         strix_copy_dir dir);
    strix_status (*fill)(strix_backend *be, float *p, float value, size_t n);

    // one slot per primitive, in the order of src/core/primitives.def
#define STRIX_PRIMITIVE(header, name, params, args)                                           \
    strix_status (*name)(strix_backend *be, STRIX_UNPAREN params);
#include "core/primitives.def"
};

struct strix_backend {
    const struct strix_backend_i *vt;
    const char *name;
    strix_device device;
    void *ctx;  /* backend-private state */
};

/* What src/core/primitives.def says of primitive `id` (< STRIX_PRIMITIVE_COUNT): its slot name
 * ("softmax_rows") and the public header that declares strix_<name> ("strix/backend.h",
 * "strix/ops/cnn.h", ...). src/core/ops_dispatch.c. */
const char *strix_primitive_name(int id);
const char *strix_primitive_header(int id);
/* Whether table vt fills the slot of primitive `id` (< STRIX_PRIMITIVE_COUNT). */
bool strix_backend_i_has(const struct strix_backend_i *vt, int id);

/* STRIX_ERR_UNSUPPORTED naming the backend and the primitive (src/core/backend.c). */
strix_status strix_backend_unsupported(const strix_backend *be, const char *op);

/* The body of a public primitive: checks the handle, then returns the slot's result, or
 * STRIX_ERR_UNSUPPORTED for a NULL slot (never another backend). */
#define STRIX_DISPATCH(be, slot, ...)                                                          \
    do {                                                                                       \
        STRIX_ASSERT((be) != NULL, "NULL backend in " #slot);                                  \
        if ((be)->vt->slot == NULL) return strix_backend_unsupported((be), #slot);             \
        return (be)->vt->slot((be), __VA_ARGS__);                                              \
    } while (0)

/* Argument checks the wrappers make before dispatch (the backends rely on them): asserts that
 * args->in[k] is non-NULL for every bit k of `in_mask` (k < n_in), and likewise args->out[k] for
 * `out_mask` (k < n_out); `name` and `op` go into the message. */
#define STRIX_ASSERT_SLOTS(name, op, args, in_mask, n_in, out_mask, n_out)                     \
    do {                                                                                       \
        for (int k_ = 0; k_ < (n_in); k_++)                                                    \
            STRIX_ASSERT(!((in_mask) >> k_ & 1u) || (args)->in[k_] != NULL,                    \
                         "%s op %d: in[%d] is NULL", (name), (int)(op), k_);                   \
        for (int k_ = 0; k_ < (n_out); k_++)                                                   \
            STRIX_ASSERT(!((out_mask) >> k_ & 1u) || (args)->out[k_] != NULL,                  \
                         "%s op %d: out[%d] is NULL", (name), (int)(op), k_);                  \
    } while (0)

/* STRIX_OK if every action actions[k] (host memory, k < count; the actions of rows row0 + k) is a
 * whole number in [0, cols), else STRIX_ERR_ARG naming the first bad row (src/core/ops_rl.c).
 * The backends call it before they write anything: the CPU on in[1], a GPU on chunks it copied
 * down. */
strix_status strix_rl_check_actions(const float *actions, size_t count, size_t row0, size_t cols);

/* Constructors of the built-in backends (src/backends/<name>/). */
strix_status strix_cpu_backend_create(bool use_blas, strix_backend **out);

/* The GPU backends (src/backends/cuda/, compiled by nvcc for CUDA and by hipcc for HIP; C
 * linkage), each built into its run-time plugin (src/core/plugin.h, plugin.c) and in tests/gpu_emu.
 * `device` is the device index; `hip` says which vendor the caller asks for and must match the
 * build of the function (strix_cuda_: false, strix_hip_: true), else STRIX_ERR_UNSUPPORTED; `opt`
 * the init options (NULL = defaults). STRIX_ERR_DEVICE when the machine has no such GPU or its
 * runtime fails, STRIX_ERR_ARG for a device index out of range, STRIX_ERR_ALLOC. */
strix_status strix_cuda_backend_create(int device, bool hip, const strix_backend_options *opt,
                                       strix_backend **out);
strix_status strix_hip_backend_create(int device, bool hip, const strix_backend_options *opt,
                                      strix_backend **out);

/* What a GPU backend's caching allocator holds: bytes taken from the device (reserved), bytes
 * handed out (in_use), device allocations made so far (device_mallocs; it stops growing once a
 * training step has run); and the kernel launches queued so far (launches: each own kernel and
 * each cuBLAS/hipBLAS call counts one). */
typedef struct strix_gpu_memstats {
    size_t reserved_bytes, in_use_bytes, device_mallocs, launches;
} strix_gpu_memstats;
void strix_cuda_memory_stats(const strix_backend *be, strix_gpu_memstats *out);
void strix_hip_memory_stats(const strix_backend *be, strix_gpu_memstats *out);
/* The stats of any backend: false (and zeros) for a CPU backend and for a GPU backend that did
 * not come from a plugin (src/core/registry.c). */
bool strix_gpu_memory_stats(const strix_backend *be, strix_gpu_memstats *out);

#ifdef STRIX_HAVE_BLAS
/* The CPU backend's thread pool (src/backends/cpu/workers.c): set its count (n <= 0: the CPUs
 * this process may use) and read it. */
void strix_cpu_set_threads(int n);
int strix_cpu_threads(void);
/* Holds OpenBLAS's own thread pool at one thread (cpu-blas threads its GEMMs on strix's pool). */
void strix_cpu_blas_hold_one_thread(void);
#endif

#ifdef __cplusplus
}
#endif

#endif
