/*
 * plugin.c - the entry of a GPU backend plugin (libstrix-cuda.so, or libstrix-hip.so when built
 * with -DSTRIX_PLUGIN_HIP) and the core services its .cu files call, forwarded to the host table
 * the loading libstrix passes in (src/core/plugin.h).
 *
 * Compiled only into the plugins, never into libstrix: the definitions of strix_error & co. below
 * are local to the shared object (its version script exports STRIX_PLUGIN_ENTRY alone), so they
 * neither clash with nor interpose on the core's. Holds no backend logic (cuda_backend.cu).
 */
#include <stdarg.h>
#include <stdio.h>

#include "core/plugin.h"

#if defined(STRIX_HAVE_NCCL) && !defined(STRIX_PLUGIN_HIP)
extern const strix_plugin_collectives strix_cuda_nccl; /* nccl.cu */
#define PLUGIN_COLLECTIVES (&strix_cuda_nccl)
#else
#define PLUGIN_COLLECTIVES NULL
#endif

#ifdef STRIX_PLUGIN_HIP
#define PLUGIN_KIND "hip"
#define PLUGIN_CREATE strix_hip_backend_create
#define PLUGIN_STATS strix_hip_memory_stats
#else
#define PLUGIN_KIND "cuda"
#define PLUGIN_CREATE strix_cuda_backend_create
#define PLUGIN_STATS strix_cuda_memory_stats
#endif

static const strix_plugin_host *host;

// ---- core services, forwarded ------------------------------------------------------------------

strix_status strix_error(strix_status s, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return host->error(s, "%s", msg);
}

void strix_assert_fail(const char *file, int line, const char *cond, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    host->assert_fail(file, line, cond, "%s", msg);
    for (;;) { /* the host's assert_fail aborts; never return into broken state */
    }
}

void strix_log(strix_log_level level, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    host->log(level, "%s", msg);
}

strix_status strix_rl_check_actions(const float *actions, size_t count, size_t row0,
                                    size_t cols) {
    return host->rl_check_actions(actions, count, row0, cols);
}

size_t strix_conv_out_h(const strix_conv_geom *g, size_t h) { return host->conv_out_h(g, h); }

size_t strix_conv_out_w(const strix_conv_geom *g, size_t w) { return host->conv_out_w(g, w); }

// ---- entry -------------------------------------------------------------------------------------

static const strix_plugin plugin = {
    .abi = STRIX_PLUGIN_ABI,
    .vtable_size = (uint32_t)sizeof(struct strix_backend_i),
    .backend_size = (uint32_t)sizeof(strix_backend),
    .options_size = (uint32_t)sizeof(strix_backend_options),
    .kind = PLUGIN_KIND,
    .create = PLUGIN_CREATE,
    .memory_stats = PLUGIN_STATS,
    .collectives = PLUGIN_COLLECTIVES,
};

/* The plugin's one exported symbol (STRIX_PLUGIN_ENTRY): keeps `h` and returns the table, or
 * NULL when `h` comes from a core of another ABI. */
__attribute__((visibility("default"))) const strix_plugin *strix_plugin_entry(
    const strix_plugin_host *h) {
    if (h == NULL || h->abi != STRIX_PLUGIN_ABI || h->size < sizeof *h) return NULL;
    host = h;
    return &plugin;
}
