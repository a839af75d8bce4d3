/*
 * registry.c - the backend registry: strix_backend_init[_ex] maps a name to a constructor, and
 * the GPU backends are found as run-time plugins (src/core/plugin.h).
 *
 * "cpu" and "cpu-blas" are built into libstrix. "cuda[:N]" and "hip[:N]" live in the shared
 * objects libstrix-cuda.so and libstrix-hip.so, which are dlopen()ed on the first request, so a
 * CPU run of a GPU-enabled build maps no CUDA or HIP library. Search order for a plugin file:
 * the options' plugin_dir, when set, and nothing else (a broken or missing plugin there is
 * reported, never passed over); else beside the file holding libstrix (libstrix.so, or the program that
 * linked libstrix.a) and beside the running program, each as <dir>/, <dir>/strix/,
 * <dir>/lib/strix/ and <dir>/../lib/strix/ (covers the build tree and an installed prefix); the
 * install folder STRIX_PLUGIN_INSTALL_DIR; last the dynamic loader's own search (LD_LIBRARY_PATH).
 * A plugin stays loaded until the process ends (its backends may outlive any caller). Every
 * failure is one line in strix_last_error(). This file reads no environment variable.
 */
#define _GNU_SOURCE /* dladdr */

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/plugin.h"

#ifndef STRIX_PLUGIN_INSTALL_DIR
#define STRIX_PLUGIN_INSTALL_DIR "/usr/local/lib/strix"
#endif

// ---- names -------------------------------------------------------------------------------------

/* Parses the device index of "cuda", "cuda:N" (likewise hip) after the prefix: 0 when absent, -1
 * when malformed. */
static int device_index(const char *rest) {
    if (*rest == '\0') return 0;
    if (*rest != ':' || rest[1] == '\0') return -1;
    long v = 0;
    for (const char *c = rest + 1; *c; c++) {
        if (*c < '0' || *c > '9' || v > 9999) return -1;
        v = v * 10 + (*c - '0');
    }
    return (int)v;
}

// ---- plugins -----------------------------------------------------------------------------------

/* The core services a plugin calls (plugin.h). */
static const strix_plugin_host plugin_host = {
    .abi = STRIX_PLUGIN_ABI,
    .size = (uint32_t)sizeof(strix_plugin_host),
    .error = strix_error,
    .assert_fail = strix_assert_fail,
    .log = strix_log,
    .rl_check_actions = strix_rl_check_actions,
    .conv_out_h = strix_conv_out_h,
    .conv_out_w = strix_conv_out_w,
};

static pthread_mutex_t plugin_lock = PTHREAD_MUTEX_INITIALIZER;
static const strix_plugin *plugins[2]; /* [hip]: loaded once, never unloaded */

/* Writes the folder of `path` (without the last '/') into dir; false if it has none. */
static bool folder_of(const char *path, char *dir, size_t size) {
    const char *slash = strrchr(path, '/');
    if (slash == NULL || (size_t)(slash - path) >= size) return false;
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = '\0';
    return true;
}

/* One plugin search: which vendor, what was found, the first failure (its message is set). */
typedef struct plugin_search {
    bool hip;
    const strix_plugin *found;
    strix_status failure; /* STRIX_OK until a file was there but unusable */
} plugin_search;

/* Tries one candidate: a path (skipped when no such file) or, with `bare`, a file name for the
 * dynamic loader's own search. True when it loaded into q->found. */
static bool try_plugin(plugin_search *q, const char *path, bool bare) {
    if (!bare && access(path, F_OK) != 0) return false;
    const char *vendor = q->hip ? "HIP" : "CUDA";
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        if (bare) return false; /* not on the loader's path either */
        if (q->failure == STRIX_OK)
            q->failure = strix_error(STRIX_ERR_DEVICE, "cannot load the %s plugin %s: %s (is "
                                     "the %s runtime installed?)", vendor, path, dlerror(),
                                     vendor);
        return false;
    }
    strix_plugin_entry_fn entry;
    *(void **)&entry = dlsym(h, STRIX_PLUGIN_ENTRY); /* POSIX's way to a function pointer */
    const strix_plugin *p = entry ? entry(&plugin_host) : NULL;
    if (p == NULL || p->abi != STRIX_PLUGIN_ABI ||
        p->vtable_size != sizeof(struct strix_backend_i) ||
        p->backend_size != sizeof(strix_backend) ||
        p->options_size != sizeof(strix_backend_options) || p->create == NULL ||
        p->memory_stats == NULL || p->kind == NULL ||
        strcmp(p->kind, q->hip ? "hip" : "cuda") != 0) {
        if (q->failure == STRIX_OK)
            q->failure = strix_error(STRIX_ERR_UNSUPPORTED, "%s is not a %s plugin of this "
                                     "strix (plugin ABI %d, this strix %d: rebuild it with this "
                                     "libstrix)", path, vendor, p ? (int)p->abi : -1,
                                     STRIX_PLUGIN_ABI);
        dlclose(h);
        return false;
    }
    q->found = p;
    return true;
}

/* Tries the plugin file `file` in the usual places around folder `dir`. */
static bool try_around(plugin_search *q, const char *dir, const char *file) {
    static const char *const subdirs[] = {"", "/strix", "/lib/strix", "/../lib/strix"};
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
        int n = snprintf(path, sizeof path, "%s%s/%s", dir, subdirs[i], file);
        if (n > 0 && (size_t)n < sizeof path && try_plugin(q, path, false)) return true;
    }
    return false;
}

/* Finds, loads and checks the plugin of one vendor in the order of the file comment. */
static bool search_plugin(plugin_search *q, const strix_backend_options *opt, const char *file) {
    char dir[PATH_MAX];
    if (opt && opt->plugin_dir && opt->plugin_dir[0]) { /* named: the only place searched */
        if (try_around(q, opt->plugin_dir, file)) return true;
        if (q->failure == STRIX_OK)
            q->failure = strix_error(STRIX_ERR_UNSUPPORTED, "no %s plugin %s in plugin_dir %s "
                                     "(nor in its strix/, lib/strix/ or ../lib/strix/)",
                                     q->hip ? "HIP" : "CUDA", file, opt->plugin_dir);
        return false;
    }
    Dl_info info;
    if (dladdr((void *)(uintptr_t)&search_plugin, &info) && info.dli_fname &&
        folder_of(info.dli_fname, dir, sizeof dir) && try_around(q, dir, file))
        return true;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        if (folder_of(exe, dir, sizeof dir) && try_around(q, dir, file)) return true;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", STRIX_PLUGIN_INSTALL_DIR, file);
    if (try_plugin(q, path, false)) return true;
    return q->failure == STRIX_OK && try_plugin(q, file, true);
}

/* The plugin of one vendor, loaded on first use (then kept). */
static strix_status get_plugin(bool hip, const strix_backend_options *opt,
                               const strix_plugin **out) {
    pthread_mutex_lock(&plugin_lock);
    plugin_search q = {.hip = hip, .found = plugins[hip], .failure = STRIX_OK};
    const char *file = hip ? "libstrix-hip.so" : "libstrix-cuda.so";
    if (q.found == NULL && search_plugin(&q, opt, file)) plugins[hip] = q.found;
    pthread_mutex_unlock(&plugin_lock);
    *out = q.found;
    if (q.found) return STRIX_OK;
    if (q.failure != STRIX_OK) return q.failure;
    return strix_error(STRIX_ERR_UNSUPPORTED,
                       "strix was built with %s, but its plugin %s was not found beside "
                       "libstrix, beside the program or in %s (name its folder with "
                       "strix_backend_options.plugin_dir; the strix command reads "
                       "STRIX_PLUGIN_DIR)", hip ? "HIP" : "CUDA", file, STRIX_PLUGIN_INSTALL_DIR);
}

// ---- init --------------------------------------------------------------------------------------

/* "cuda[:N]" / "hip[:N]": the GPU backend of that vendor from its plugin when built, else why
 * not. */
static strix_status gpu_backend_init(const char *name, bool hip, const strix_backend_options *opt,
                                     strix_backend **out) {
    const char *kind = hip ? "hip" : "cuda";
    int device = device_index(name + strlen(kind));
    if (device < 0)
        return strix_error(STRIX_ERR_ARG, "bad backend name '%s' (use %s or %s:N)", name, kind,
                           kind);
#ifndef STRIX_HAVE_HIP
    if (hip)
        return strix_error(STRIX_ERR_UNSUPPORTED,
                           "strix was built without HIP (configure with -DSTRIX_HIP=ON where "
                           "hipcc is installed)");
#endif
#ifndef STRIX_HAVE_CUDA
    if (!hip)
        return strix_error(STRIX_ERR_UNSUPPORTED,
                           "strix was built without CUDA (configure with -DSTRIX_CUDA=ON where "
                           "nvcc is installed)");
#endif
    const strix_plugin *p = NULL;
    STRIX_TRY(get_plugin(hip, opt, &p));
    return p->create(device, hip, opt, out);
}

strix_status strix_backend_init_ex(const char *name, const strix_backend_options *opt,
                                   strix_backend **out) {
    STRIX_ASSERT(out != NULL, "backend_init: NULL out");
    *out = NULL;
    if (name == NULL) return strix_error(STRIX_ERR_ARG, "backend name is NULL");
    if (opt && (opt->gpu_gemm < STRIX_GPU_GEMM_DEFAULT || opt->gpu_gemm > STRIX_GPU_GEMM_OWN))
        return strix_error(STRIX_ERR_ARG, "backend options: bad gpu_gemm %d", (int)opt->gpu_gemm);
    if (strcmp(name, "cpu") == 0) return strix_cpu_backend_create(false, out);
    if (strcmp(name, "cpu-blas") == 0) {
#ifdef STRIX_HAVE_BLAS
        return strix_cpu_backend_create(true, out);
#else
        return strix_error(STRIX_ERR_UNSUPPORTED,
                           "backend cpu-blas: strix was built without OpenBLAS (STRIX_BLAS=OFF)");
#endif
    }
    if (strncmp(name, "cuda", 4) == 0 && (name[4] == '\0' || name[4] == ':'))
        return gpu_backend_init(name, false, opt, out);
    if (strncmp(name, "hip", 3) == 0 && (name[3] == '\0' || name[3] == ':'))
        return gpu_backend_init(name, true, opt, out);
    return strix_error(STRIX_ERR_ARG,
                       "unknown backend '%s' (known: cpu, cpu-blas, cuda[:N], hip[:N])", name);
}

strix_status strix_backend_init(const char *name, strix_backend **out) {
    return strix_backend_init_ex(name, NULL, out);
}

const strix_plugin_collectives *strix_backend_collectives(const strix_backend *be) {
    int hip = be->device == STRIX_DEVICE_HIP ? 1 : be->device == STRIX_DEVICE_CUDA ? 0 : -1;
    if (hip < 0) return NULL;
    pthread_mutex_lock(&plugin_lock);
    const strix_plugin *p = plugins[hip];
    pthread_mutex_unlock(&plugin_lock);
    return p ? p->collectives : NULL;
}

bool strix_gpu_memory_stats(const strix_backend *be, strix_gpu_memstats *out) {
    memset(out, 0, sizeof *out);
    int hip = be->device == STRIX_DEVICE_HIP ? 1 : be->device == STRIX_DEVICE_CUDA ? 0 : -1;
    if (hip < 0) return false;
    pthread_mutex_lock(&plugin_lock);
    const strix_plugin *p = plugins[hip];
    pthread_mutex_unlock(&plugin_lock);
    if (p == NULL) return false; /* a GPU backend made elsewhere (tests/gpu_emu) */
    p->memory_stats(be, out);
    return true;
}
