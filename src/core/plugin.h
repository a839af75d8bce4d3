/*
 * plugin.h - the binary interface between libstrix and a GPU backend plugin (libstrix-cuda.so,
 * libstrix-hip.so: the .cu files of src/backends/cuda as a shared object, entry in plugin.c).
 *
 * The registry (src/core/registry.c) dlopen()s a plugin, resolves its one exported symbol
 * STRIX_PLUGIN_ENTRY and calls it with a host table: the core services the plugin's code calls
 * (last error, asserts, log, the RL action check, convolution output sizes). The plugin
 * therefore needs no symbol from the program that loads it, which may have linked libstrix.a and
 * exports nothing (its link uses --no-undefined, so a new core call it makes fails to build
 * until it is added here). The entry returns the plugin's table, whose ABI version and struct
 * sizes the registry checks before any use.
 * Not a public header; plugins are built from this source tree only.
 */
#ifndef STRIX_CORE_PLUGIN_H
#define STRIX_CORE_PLUGIN_H

#include <stdint.h>

#include "core/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bump on any change to the structs below, struct strix_backend or strix_backend_options. */
#define STRIX_PLUGIN_ABI 2

/* The name of the entry symbol every plugin exports (and the only one). */
#define STRIX_PLUGIN_ENTRY "strix_plugin_entry"

/* What the core lends a plugin; the plugin keeps the pointer for its lifetime. */
typedef struct strix_plugin_host {
    uint32_t abi;  /* STRIX_PLUGIN_ABI of the core */
    uint32_t size; /* sizeof(strix_plugin_host) of the core */
    strix_status (*error)(strix_status s, const char *fmt, ...);
    void (*assert_fail)(const char *file, int line, const char *cond, const char *fmt, ...);
    void (*log)(strix_log_level level, const char *fmt, ...);
    strix_status (*rl_check_actions)(const float *actions, size_t count, size_t row0,
                                     size_t cols);
    size_t (*conv_out_h)(const strix_conv_geom *g, size_t h);
    size_t (*conv_out_w)(const strix_conv_geom *g, size_t w);
} strix_plugin_host;

/* Rank q's chunk of n floats in an exchange among `size` ranks: [lo(q), lo(q + 1)), the one rule
 * of src/dist and of every plugin's collectives. */
static inline size_t strix_dist_chunk_lo(size_t n, int q, int size) {
    return n * (size_t)q / (size_t)size;
}
static inline size_t strix_dist_chunk_len(size_t n, int q, int size) {
    return strix_dist_chunk_lo(n, q + 1, size) - strix_dist_chunk_lo(n, q, size);
}

/* A plugin's collectives on its device memory (the CUDA plugin's: NCCL), for src/dist. Every
 * call is collective: each rank of the communicator makes it, in the same order. */
typedef struct strix_plugin_collectives {
    const char *name;      /* "nccl" */
    uint32_t id_bytes;     /* size of the id rank 0 makes and every rank opens with */
    strix_status (*make_id)(void *id);
    /* Opens rank `rank` of `size` on be's device, from rank 0's id. */
    strix_status (*open)(strix_backend *be, const void *id, int rank, int size, void **comm);
    /* To every rank q: its chunk of each of this rank's `local` shards (rows of n floats at
     * shards); from every rank q: this rank's chunk of q's shards, at recv in global shard order
     * (row q·local + l of this rank's chunk length). Finished on return. */
    strix_status (*alltoall_chunks)(void *comm, strix_backend *be, const float *shards,
                                    int local, size_t n, float *recv);
    /* out[lo(q) .. lo(q + 1)) = rank q's chunk (this rank's at `chunk`), on every rank. */
    strix_status (*allgather_chunks)(void *comm, strix_backend *be, const float *chunk,
                                     size_t n, float *out);
    void (*close)(void *comm);
} strix_plugin_collectives;

/* What a plugin offers: its backend constructor and memory statistics (backend_impl.h). */
typedef struct strix_plugin {
    uint32_t abi;          /* STRIX_PLUGIN_ABI the plugin was built with */
    uint32_t vtable_size;  /* sizeof(struct strix_backend_i) the plugin was built with */
    uint32_t backend_size; /* sizeof(strix_backend) */
    uint32_t options_size; /* sizeof(strix_backend_options) */
    const char *kind;      /* "cuda" or "hip" */
    strix_status (*create)(int device, bool hip, const strix_backend_options *opt,
                           strix_backend **out);
    void (*memory_stats)(const strix_backend *be, strix_gpu_memstats *out);
    const strix_plugin_collectives *collectives; /* NULL: none (the host carries the exchange) */
} strix_plugin;

/* The collectives of the plugin that made `be` (registry.c); NULL for a CPU backend or a plugin
 * without any. */
const strix_plugin_collectives *strix_backend_collectives(const strix_backend *be);

/* The entry's type: NULL when the host table is unusable (other ABI, too small). */
typedef const strix_plugin *(*strix_plugin_entry_fn)(const strix_plugin_host *host);

#ifdef __cplusplus
}
#endif

#endif
