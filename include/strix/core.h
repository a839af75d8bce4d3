/*
 * strix/core.h - status codes, last-error message, logging, always-on asserts, the counter RNG.
 *
 * Everything here is host-only and has no dependency on a backend. The library never calls exit()
 * and never prints except through the log callback set with strix_set_log_callback().
 */
#ifndef STRIX_CORE_H
#define STRIX_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* STRIX_API marks the functions libstrix.so exports: the library is compiled with
 * -fvisibility=hidden, so everything else stays inside it (all exports are named strix_*). */
#if defined(__GNUC__)
#define STRIX_API __attribute__((visibility("default")))
#define STRIX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define STRIX_API
#define STRIX_PRINTF(f, a)
#endif

// ---- status ------------------------------------------------------------------------------------

/* Result of every call that can fail for reasons outside the caller's code. Append-only. */
typedef enum strix_status {
    STRIX_OK = 0,
    STRIX_ERR_ALLOC,       /* out of memory (host or device) */
    STRIX_ERR_IO,          /* a file could not be opened, read or written */
    STRIX_ERR_SHAPE,       /* shapes or sizes that do not fit together */
    STRIX_ERR_UNSUPPORTED, /* the backend has no such primitive, or the rule/option is not supported */
    STRIX_ERR_DEVICE,      /* a device or device-library call failed */
    STRIX_ERR_ARG,         /* an out-of-range or malformed argument or configuration */
    STRIX_ERR_FORMAT,      /* a file whose contents are malformed (bad header, lying sizes, ...) */
    STRIX_ERR_NUMERIC,     /* a non-finite value where a finite one is required */
} strix_status;

/* Short constant name of a status ("STRIX_ERR_IO"). Never NULL. */
STRIX_API const char *strix_status_str(strix_status s);

/* Message of the last error set on this thread ("" if none). Valid until the next error. */
STRIX_API const char *strix_last_error(void);

/* Records a formatted message as this thread's last error and returns `s` (for `return` chains). */
STRIX_API strix_status strix_error(strix_status s, const char *fmt, ...) STRIX_PRINTF(2, 3);

/* Clears this thread's last error message. */
STRIX_API void strix_clear_error(void);

/* Evaluates a strix_status expression and returns it from the enclosing function on failure. */
#define STRIX_TRY(expr)                                                                        \
    do {                                                                                       \
        strix_status strix_try_s_ = (expr);                                                    \
        if (strix_try_s_ != STRIX_OK) return strix_try_s_;                                     \
    } while (0)

// ---- logging -----------------------------------------------------------------------------------

typedef enum strix_log_level { STRIX_LOG_DEBUG, STRIX_LOG_INFO, STRIX_LOG_WARN, STRIX_LOG_ERROR } strix_log_level;

typedef void (*strix_log_fn)(strix_log_level level, const char *msg, void *user);

/* Installs the log sink (NULL restores the default, which drops DEBUG and writes the rest to
 * stderr). */
STRIX_API void strix_set_log_callback(strix_log_fn fn, void *user);

/* Formats and sends one message to the log sink. */
STRIX_API void strix_log(strix_log_level level, const char *fmt, ...) STRIX_PRINTF(2, 3);

// ---- asserts (programmer contract violations; never compiled out) -------------------------------

typedef void (*strix_abort_fn)(const char *file, int line, const char *msg);

/* Installs a hook called before abort() when a STRIX_ASSERT fails (NULL restores the default). */
STRIX_API void strix_set_abort_callback(strix_abort_fn fn);

/* Reports the failed contract through the hook, then aborts. Does not return. */
STRIX_API void strix_abort(const char *file, int line, const char *fmt, ...) STRIX_PRINTF(3, 4);

/* Used by STRIX_ASSERT: "assert(<cond>) <message>". The trailing arguments are a printf format
 * and its values, followed by one extra "" the macro appends (so a message is optional). */
STRIX_API void strix_assert_fail(const char *file, int line, const char *cond, const char *fmt,
                                 ...);

/* STRIX_ASSERT(cond) or STRIX_ASSERT(cond, "fmt", args...): never compiled out. */
#define STRIX_ASSERT(...) STRIX_ASSERT_(__VA_ARGS__, "")
#define STRIX_ASSERT_(cond, ...)                                                               \
    do {                                                                                       \
        if (!(cond)) strix_assert_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                \
    } while (0)

// ---- RNG ---------------------------------------------------------------------------------------

/* SplitMix64 finalizer (Steele et al. 2014): a bijective 64-bit mixer. */
static inline uint64_t strix_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Counter-based uniform in [0,1) with 24 bits: U(seed, k) of docs/SEMANTICS.md.
 * Used for dropout masks, so a mask depends only on (seed, element index). */
static inline float strix_uniform_counter(uint64_t seed, uint64_t k) {
    uint64_t z = strix_mix64(seed + (k + 1) * 0x9E3779B97F4A7C15ULL);
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

/* A sequential SplitMix64 stream. Its whole state is one counter, so it checkpoints exactly. */
typedef struct strix_rng {
    uint64_t state;
} strix_rng;

/* Seeds a stream (any value, 0 included). */
static inline void strix_rng_seed(strix_rng *r, uint64_t seed) { r->state = seed; }

/* Next 64 random bits. */
static inline uint64_t strix_rng_next(strix_rng *r) {
    r->state += 0x9E3779B97F4A7C15ULL;
    return strix_mix64(r->state);
}

/* Uniform double in (0,1): ((x>>11)+0.5)/2^53. */
static inline double strix_rng_uniform(strix_rng *r) {
    return ((double)(strix_rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n), n > 0 (Lemire-free modulo; bias < n/2^64, negligible here). */
static inline uint64_t strix_rng_below(strix_rng *r, uint64_t n) { return strix_rng_next(r) % n; }

/* Standard normal by Box-Muller (one value per call; the pair's sine half is discarded so the
 * stream position stays a pure function of the number of calls). */
STRIX_API double strix_rng_normal(strix_rng *r);

/* The global seed (default 0). Library objects that need randomness derive their streams from
 * it with strix_seed_derive(); nothing is seeded from the clock. */
STRIX_API void strix_set_seed(uint64_t seed);
STRIX_API uint64_t strix_get_seed(void);

/* A sub-seed for purpose `idx` of `seed`: finalizer(seed + golden*(idx+1)). */
static inline uint64_t strix_seed_derive(uint64_t seed, uint64_t idx) {
    return strix_mix64(seed + 0x9E3779B97F4A7C15ULL * (idx + 1));
}

#ifdef __cplusplus
}
#endif
#endif
