/*
 * hip/hip_runtime.h - a host stand-in for the HIP runtime, so that the real GPU backend sources
 * (the .cu files of src/backends/cuda, HIP build through vendor.h, no hipBLAS: the own tiled
 * SGEMM) compile with plain g++ for test_ops_gpu_emu, which runs the op-test tables (tests/ops)
 * on them as backend "hip" (tests/CMakeLists.txt).
 *
 * What it checks: the launchers' index logic (grid sizes, lane -> element mapping, grid-stride
 * loops, tails), that every output element is written (allocations start as NaN bytes), bounds
 * (host memory: ASan in STRIX_SANITIZE builds), shared-memory tiling and __syncthreads placement
 * as far as a barrier shows it, and the order of sums (host float math, -ffp-contract=off, like
 * the CPU build). What it cannot: device libm rounding (expf etc. here are the host's), cuBLAS /
 * hipBLAS, real concurrency (blocks run one after another, no warp scheduling, no memory-model
 * races), launch limits and device compilers' own errors.
 *
 * Device memory is host memory, the stream is a no-op (every call completes at once), and a
 * launch runs the grid's blocks one after another. In a file that calls __syncthreads (gen.cmake
 * sets EMU_THREADED) each of a block's threads is a real host thread (from a pool that lives for
 * the process) and __syncthreads a barrier;
 * elsewhere a block's threads run one after another. __shared__ is `static`: one copy, used by
 * one block at a time. gen.cmake rewrites launches: `k<<<grid, block, shmem, stream>>>(args)` ->
 * `EMU_LAUNCH(k, grid, block, shmem, stream)(args)`.
 */
#ifndef STRIX_GPU_EMU_HIP_RUNTIME_H
#define STRIX_GPU_EMU_HIP_RUNTIME_H

#include <barrier>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#ifndef EMU_THREADED
#define EMU_THREADED 0
#endif

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __launch_bounds__(n)

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
typedef dim3 uint3;

namespace emu {
extern thread_local dim3 thread_idx, block_idx, block_dim, grid_dim;
extern thread_local std::barrier<> *block_barrier; /* NULL outside a threaded launch */
extern long launches;
[[noreturn]] void fail(const char *what);
/* Runs job(t) on n pooled host threads t = 0..n-1 and returns when all have finished. The
 * threads live for the whole process (creating a block's threads per launch made threaded
 * launches slow). Launches come from one host thread at a time. */
void run_on_pool(unsigned n, const std::function<void(unsigned)> &job);

/* Runs kernel(args...) on every thread of every block of the grid (see the file comment). */
template <bool threaded> struct launcher {
    dim3 grid, block;
    template <typename... P> auto run(void (*kernel)(P...)) const {
        dim3 g = grid, b = block;
        return [=](P... args) { /* converted to the kernel's parameter types, as a launch does */
            launches++;
            size_t per_block = (size_t)b.x * b.y * b.z;
            if (per_block == 0 || per_block > 1024 || g.x == 0 || g.y == 0 || g.z == 0)
                fail("bad launch configuration");
            if constexpr (!threaded) {
                for (unsigned bz = 0; bz < g.z; bz++)
                    for (unsigned by = 0; by < g.y; by++)
                        for (unsigned bx = 0; bx < g.x; bx++)
                            for (size_t t = 0; t < per_block; t++) {
                                block_idx = dim3(bx, by, bz);
                                thread_idx = dim3((unsigned)(t % b.x),
                                                  (unsigned)(t / b.x % b.y),
                                                  (unsigned)(t / b.x / b.y));
                                block_dim = b;
                                grid_dim = g;
                                kernel(args...);
                            }
            } else {
                /* One pooled host thread per block thread, each walking the blocks in order; the
                 * barrier after each block keeps blocks apart (they share the static __shared__
                 * data). */
                std::barrier<> bar((std::ptrdiff_t)per_block);
                run_on_pool((unsigned)per_block, [&](unsigned t) {
                    dim3 ti(t % b.x, t / b.x % b.y, t / b.x / b.y);
                    block_barrier = &bar;
                    for (unsigned bz = 0; bz < g.z; bz++)
                        for (unsigned by = 0; by < g.y; by++)
                            for (unsigned bx = 0; bx < g.x; bx++) {
                                block_idx = dim3(bx, by, bz);
                                thread_idx = ti;
                                block_dim = b;
                                grid_dim = g;
                                kernel(args...);
                                bar.arrive_and_wait();
                            }
                    block_barrier = nullptr;
                });
            }
        };
    }
};
} // namespace emu

#define threadIdx (emu::thread_idx)
#define blockIdx (emu::block_idx)
#define blockDim (emu::block_dim)
#define gridDim (emu::grid_dim)

static inline void __syncthreads() {
    if (!emu::block_barrier) emu::fail("__syncthreads outside a threaded launch");
    emu::block_barrier->arrive_and_wait();
}

#define EMU_LAUNCH(kernel, grid, block, shmem, stream)                                         \
    (void)(stream), emu::launcher<EMU_THREADED>{dim3(grid), dim3(block)}.run(kernel)

// ---- runtime -----------------------------------------------------------------------------------

typedef enum hipError_t {
    hipSuccess = 0,
    hipErrorInvalidValue = 1,
    hipErrorOutOfMemory = 2,
    hipErrorNoDevice = 100,
    hipErrorInvalidDevice = 101,
    hipErrorInsufficientDriver = 35,
} hipError_t;
typedef struct emu_stream *hipStream_t;
typedef enum hipMemcpyKind {
    hipMemcpyHostToHost,
    hipMemcpyHostToDevice,
    hipMemcpyDeviceToHost,
    hipMemcpyDeviceToDevice,
    hipMemcpyDefault,
} hipMemcpyKind;
#define hipStreamNonBlocking 1u

hipError_t hipGetDeviceCount(int *count);
hipError_t hipGetDevice(int *device);
hipError_t hipSetDevice(int device);
hipError_t hipGetLastError(void);
const char *hipGetErrorName(hipError_t err);
const char *hipGetErrorString(hipError_t err);
hipError_t hipMalloc(void **p, size_t bytes);
hipError_t hipFree(void *p);
hipError_t hipMemcpyAsync(void *dst, const void *src, size_t bytes, hipMemcpyKind kind,
                          hipStream_t stream);
hipError_t hipMemsetAsync(void *p, int value, size_t bytes, hipStream_t stream);
hipError_t hipStreamCreateWithFlags(hipStream_t *stream, unsigned flags);
hipError_t hipStreamSynchronize(hipStream_t stream);
hipError_t hipStreamDestroy(hipStream_t stream);

#endif
