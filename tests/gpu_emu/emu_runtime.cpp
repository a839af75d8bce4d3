/*
 * emu_runtime.cpp - the host HIP runtime of hip/hip_runtime.h (one emulated device), and
 * emu_backend_init: strix_backend_init for the emulation test, with "hip" mapped to the
 * emulated backend (the GPU sources built by gen.cmake, named "hip-emu").
 */
#include "hip/hip_runtime.h"

#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "core/backend_impl.h"

namespace emu {
thread_local dim3 thread_idx, block_idx, block_dim, grid_dim;
thread_local std::barrier<> *block_barrier;
long launches;
void fail(const char *what) {
    fprintf(stderr, "gpu emulation: %s\n", what);
    abort();
}

/* The host threads of threaded launches: a job numbers the threads 0..active-1; thread id runs
 * it when a new generation starts and id < active. Never destroyed (threads blocked in a wait at
 * exit are harmless; joining them from a static destructor is not). */
namespace {
struct pool {
    std::mutex mu;
    std::condition_variable start, done;
    std::vector<std::thread> threads;
    const std::function<void(unsigned)> *job = nullptr;
    unsigned active = 0, remaining = 0;
    unsigned long generation = 0;

    void work(unsigned id) {
        unsigned long seen = 0;
        for (;;) {
            const std::function<void(unsigned)> *f;
            {
                std::unique_lock<std::mutex> lock(mu);
                start.wait(lock, [&] { return generation != seen && id < active; });
                seen = generation;
                f = job;
            }
            (*f)(id);
            std::lock_guard<std::mutex> lock(mu);
            if (--remaining == 0) done.notify_one();
        }
    }
};
pool *the_pool = new pool();
} // namespace

void run_on_pool(unsigned n, const std::function<void(unsigned)> &job) {
    pool &p = *the_pool;
    std::unique_lock<std::mutex> lock(p.mu);
    while (p.threads.size() < n) {
        unsigned id = (unsigned)p.threads.size();
        p.threads.emplace_back([id] { the_pool->work(id); });
        p.threads.back().detach();
    }
    p.job = &job;
    p.active = n;
    p.remaining = n;
    p.generation++;
    p.start.notify_all();
    p.done.wait(lock, [&] { return p.remaining == 0; });
    p.active = 0;
}
} // namespace emu

struct emu_stream {
    int unused;
};

hipError_t hipGetDeviceCount(int *count) {
    *count = 1;
    return hipSuccess;
}
hipError_t hipGetDevice(int *device) {
    *device = 0;
    return hipSuccess;
}
hipError_t hipSetDevice(int device) { return device == 0 ? hipSuccess : hipErrorInvalidDevice; }
hipError_t hipGetLastError(void) { return hipSuccess; }
const char *hipGetErrorName(hipError_t err) { return err == hipSuccess ? "hipSuccess" : "error"; }
const char *hipGetErrorString(hipError_t err) { return hipGetErrorName(err); }

hipError_t hipMalloc(void **p, size_t bytes) {
    /* 256-byte aligned like device blocks; filled with a NaN pattern so unwritten reads show. */
    size_t rounded = (bytes + 255) / 256 * 256;
    *p = aligned_alloc(256, rounded ? rounded : 256);
    if (!*p) return hipErrorOutOfMemory;
    memset(*p, 0xFF, rounded);
    return hipSuccess;
}
hipError_t hipFree(void *p) {
    free(p);
    return hipSuccess;
}
hipError_t hipMemcpyAsync(void *dst, const void *src, size_t bytes, hipMemcpyKind, hipStream_t) {
    memmove(dst, src, bytes);
    return hipSuccess;
}
hipError_t hipMemsetAsync(void *p, int value, size_t bytes, hipStream_t) {
    memset(p, value, bytes);
    return hipSuccess;
}
hipError_t hipStreamCreateWithFlags(hipStream_t *stream, unsigned) {
    *stream = new emu_stream();
    return hipSuccess;
}
hipError_t hipStreamSynchronize(hipStream_t) { return hipSuccess; }
hipError_t hipStreamDestroy(hipStream_t stream) {
    delete stream;
    return hipSuccess;
}

extern "C" strix_status strix_emu_backend_create(int device, bool hip,
                                                 const strix_backend_options *opt,
                                                 strix_backend **out);

/* strix_backend_init(_ex) with "hip" opening the emulated backend (test_ops is compiled with
 * -Dstrix_backend_init=emu_backend_init -Dstrix_backend_init_ex=emu_backend_init_ex). */
extern "C" strix_status emu_backend_init_ex(const char *name, const strix_backend_options *opt,
                                            strix_backend **out) {
    if (name && strcmp(name, "hip") == 0) {
        strix_status s = strix_emu_backend_create(0, true, opt, out);
        if (s == STRIX_OK) (*out)->name = "hip-emu";
        return s;
    }
    return strix_backend_init_ex(name, opt, out);
}

extern "C" strix_status emu_backend_init(const char *name, strix_backend **out) {
    return emu_backend_init_ex(name, NULL, out);
}
