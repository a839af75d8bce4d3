/*
 * workers.c - the CPU backend's threads: one process-wide pool of worker threads that share the
 * chunks of a parallel loop with the calling thread (cpu_parallel_for).
 *
 * Why not OpenMP: its regions end in a barrier that waits for every thread, and its idle threads
 * spin (libgomp's default) or always sleep (OMP_WAIT_POLICY=passive), a choice it reads from the
 * environment before main. On a core shared with another busy process, every region then waited
 * for the thread the scheduler had set aside: a training step ran 14x slower (issue 11).
 * Here a loop is cut into chunks that threads claim one at a time, the caller included, and the
 * caller waits only for chunks already claimed: a worker that has not woken up yet simply finds
 * nothing left. Idle workers spin for a short while (a loop usually follows soon), then sleep.
 *
 * Results never depend on which thread ran a chunk: every chunk writes its own outputs, and the
 * thread index only picks a scratch workspace.
 *
 * State of a loop: `state` packs the loop's generation (high 32 bits) and the next unclaimed chunk
 * (low 32 bits). A thread claims chunk c of generation g with one compare-and-swap from (g, c) to
 * (g, c + 1), so it can never run a chunk of a loop that has already ended; the loop's operands
 * are read before that swap and used only when it succeeds.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu/cpu_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define MAX_THREADS 256
/* How long an idle worker, or a caller waiting for a claimed chunk, spins before it sleeps:
 * long enough to bridge the gap between the loops of a training step, short enough to give a
 * shared core back at once. */
#define SPIN_NS 100000
/* Chunks per thread of a loop: one on an idle machine (2 and 4 made config A's step 7% and 13%
 * slower, issue 11), FINE_CHUNKS for FINE_LOOPS loops after the caller waited for the workers
 * longer than it worked itself (a worker on a core shared with another busy process runs at a
 * fraction of the speed: smaller chunks let the caller take more of the loop). */
#define FINE_CHUNKS 4
#define FINE_LOOPS 256
#define LATE_NS 20000 /* a shorter wait is an idle machine's imbalance */

typedef struct workers {
    int threads;        /* of a loop, the caller included; workers = threads - 1 */
    pthread_t tid[MAX_THREADS];
    _Atomic uint64_t state; /* generation << 32 | next chunk */
    _Atomic(cpu_range_fn *) fn;
    _Atomic(void *) args;
    _Atomic size_t n, chunks;
    _Atomic size_t done;  /* chunks finished in the current loop */
    _Atomic int sleepers; /* workers asleep on `wake` */
    _Atomic bool caller_asleep;
    _Atomic bool quit;
    _Atomic bool busy; /* a host thread is running a loop on the pool */
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a new loop, or quit */
    pthread_cond_t finished; /* the caller's last chunk came in */
} workers;

static workers pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
                       .finished = PTHREAD_COND_INITIALIZER};
static int wanted_threads; /* 0: not set, the CPUs this process may run on */
static _Atomic int fine_loops; /* loops left with FINE_CHUNKS chunks per thread, short spins */
static _Thread_local int thread_index;    /* 0: the caller; 1..: the workers */
static _Thread_local bool inside_loop;    /* nested loops run on their thread alone */

/* How long an idle worker spins: SPIN_NS, or SHORT_SPIN_NS while loops run late (fine_loops): a
 * sleeping worker leaves its core idle, so the scheduler can move the caller off a shared one. */
#define SHORT_SPIN_NS 2000
static uint64_t spin_ns(void) {
    return atomic_load_explicit(&fine_loops, memory_order_relaxed) > 0 ? SHORT_SPIN_NS : SPIN_NS;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The CPUs this process may run on (its affinity mask), or OMP_NUM_THREADS when set: the
 * conventional variable, which strix honoured when its loops were OpenMP's. */
static int default_threads(void) {
    const char *env = getenv("OMP_NUM_THREADS");
    if (env && atoi(env) > 0) return atoi(env);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

int cpu_workers_count(void) {
    if (!wanted_threads) wanted_threads = default_threads();
    return wanted_threads > MAX_THREADS ? MAX_THREADS : wanted_threads;
}

int cpu_max_threads(void) { return inside_loop ? 1 : cpu_workers_count(); }

int cpu_thread_index(void) { return thread_index; }

/* Claims and runs chunks of generation `gen` until none is left. */
static void run_chunks(uint32_t gen) {
    uint64_t seen = atomic_load(&pool.state);
    for (;;) {
        if ((uint32_t)(seen >> 32) != gen) return;
        cpu_range_fn *fn = atomic_load_explicit(&pool.fn, memory_order_relaxed);
        void *args = atomic_load_explicit(&pool.args, memory_order_relaxed);
        size_t n = atomic_load_explicit(&pool.n, memory_order_relaxed);
        size_t chunks = atomic_load_explicit(&pool.chunks, memory_order_relaxed);
        size_t chunk = (uint32_t)seen;
        if (chunk >= chunks) return;
        if (!atomic_compare_exchange_weak(&pool.state, &seen, seen + 1)) continue;
        /* chunk c covers [c·n/chunks, (c+1)·n/chunks): sizes differ by at most one item */
        size_t begin = chunk * n / chunks, end = (chunk + 1) * n / chunks;
        inside_loop = true;
        fn(args, begin, end);
        inside_loop = false;
        if (atomic_fetch_add(&pool.done, 1) + 1 == chunks && atomic_load(&pool.caller_asleep)) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&pool.finished);
            pthread_mutex_unlock(&pool.lock);
        }
        seen = atomic_load(&pool.state);
    }
}

static void *worker_main(void *arg) {
    thread_index = (int)(size_t)arg;
    uint32_t gen = (uint32_t)(atomic_load(&pool.state) >> 32);
    while (!atomic_load(&pool.quit)) {
        /* wait for the next generation: spin, then sleep */
        uint64_t start = now_ns();
        uint32_t next = gen;
        for (int spins = 0; (next = (uint32_t)(atomic_load(&pool.state) >> 32)) == gen; spins++) {
            CPU_RELAX();
            if ((spins & 63) == 63 && now_ns() - start > spin_ns()) break;
        }
        if (next == gen) {
            pthread_mutex_lock(&pool.lock);
            atomic_fetch_add(&pool.sleepers, 1);
            while ((uint32_t)(atomic_load(&pool.state) >> 32) == gen && !atomic_load(&pool.quit))
                pthread_cond_wait(&pool.wake, &pool.lock);
            atomic_fetch_sub(&pool.sleepers, 1);
            pthread_mutex_unlock(&pool.lock);
            continue;
        }
        gen = next;
        run_chunks(gen);
    }
    return NULL;
}

static void stop_workers(void) {
    if (pool.threads <= 1) return;
    pthread_mutex_lock(&pool.lock);
    atomic_store(&pool.quit, true);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    for (int t = 1; t < pool.threads; t++) pthread_join(pool.tid[t], NULL);
    atomic_store(&pool.quit, false);
    pool.threads = 1;
}

/* Makes the pool hold cpu_workers_count() - 1 workers; false when a thread cannot start (the
 * loops then run on the caller). */
static bool start_workers(void) {
    int want = cpu_workers_count();
    if (pool.threads == want) return true;
    stop_workers();
    pool.threads = 1;
    sigset_t all, previous; /* workers block every signal: the process's handlers run elsewhere */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    for (int t = 1; t < want; t++) {
        if (pthread_create(&pool.tid[t], NULL, worker_main, (void *)(size_t)t) != 0) break;
        pool.threads = t + 1;
    }
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    return pool.threads == want;
}

void cpu_workers_set_count(int n) {
    if (inside_loop) return;
    wanted_threads = n > 0 ? n : default_threads();
    bool idle = false;
    if (!atomic_compare_exchange_strong(&pool.busy, &idle, true)) return; /* resized later */
    if (pool.threads > 1 && pool.threads != cpu_workers_count()) stop_workers();
    atomic_store(&pool.busy, false);
}

void cpu_parallel_chunks(size_t n, size_t chunks, bool worth, cpu_range_fn *fn, void *args) {
    if (n == 0) return;
    if (chunks > n) chunks = n;
    if (!worth || chunks <= 1 || inside_loop || cpu_workers_count() <= 1) {
        fn(args, 0, n);
        return;
    }
    bool idle = false;
    if (!atomic_compare_exchange_strong(&pool.busy, &idle, true)) { /* another host thread's */
        fn(args, 0, n);
        return;
    }
    if (!start_workers() && pool.threads <= 1) {
        atomic_store(&pool.busy, false);
        fn(args, 0, n);
        return;
    }
    if (chunks > UINT32_MAX) chunks = UINT32_MAX;
    atomic_store_explicit(&pool.fn, fn, memory_order_relaxed);
    atomic_store_explicit(&pool.args, args, memory_order_relaxed);
    atomic_store_explicit(&pool.n, n, memory_order_relaxed);
    atomic_store_explicit(&pool.chunks, chunks, memory_order_relaxed);
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    uint32_t gen = (uint32_t)(atomic_load(&pool.state) >> 32) + 1;
    atomic_store(&pool.state, (uint64_t)gen << 32); /* publishes the loop (seq_cst) */
    if (atomic_load(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.lock);
    }
    uint64_t began = now_ns();
    run_chunks(gen);
    /* every chunk is claimed: wait for those other threads still run, spinning, then asleep */
    uint64_t start = now_ns();
    bool waited = false;
    for (int spins = 0; atomic_load(&pool.done) < chunks; spins++) {
        CPU_RELAX();
        if ((spins & 63) != 63 || now_ns() - start < SPIN_NS) continue;
        waited = true;
        pthread_mutex_lock(&pool.lock);
        atomic_store(&pool.caller_asleep, true);
        while (atomic_load(&pool.done) < chunks) pthread_cond_wait(&pool.finished, &pool.lock);
        atomic_store(&pool.caller_asleep, false);
        pthread_mutex_unlock(&pool.lock);
    }
    uint64_t end = now_ns();
    if (waited || (end - start > start - began && end - start > LATE_NS))
        fine_loops = FINE_LOOPS;
    else if (fine_loops > 0)
        fine_loops--;
    atomic_store(&pool.busy, false);
}

int cpu_chunks_per_thread(void) {
    return atomic_load_explicit(&fine_loops, memory_order_relaxed) > 0 ? FINE_CHUNKS : 1;
}

void cpu_parallel_for(size_t n, bool worth, cpu_range_fn *fn, void *args) {
    cpu_parallel_chunks(n, (size_t)cpu_max_threads() * (size_t)cpu_chunks_per_thread(), worth, fn,
                        args);
}

void strix_cpu_set_threads(int n) { cpu_workers_set_count(n); }

int strix_cpu_threads(void) { return cpu_workers_count(); }
