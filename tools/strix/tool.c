/*
 * tool.c - the helpers of tool.h that the subcommands share: the error line, the clock, the
 * backend options from the environment, and a checkpoint's model on a backend (sample, explain,
 * export).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strix/backend.h"
#include "tool.h"

int tool_fail(strix_status s) {
    const char *msg = strix_last_error();
    fprintf(stderr, "strix: %s\n", msg[0] ? msg : strix_status_str(s));
    return 1;
}

double tool_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

strix_status tool_backend_init(const char *name, strix_backend **out) {
    strix_backend_options opt = {0};
    const char *gemm = getenv("STRIX_CUDA_GEMM");
    if (gemm && strcmp(gemm, "own") == 0) opt.gpu_gemm = STRIX_GPU_GEMM_OWN;
    if (gemm && strcmp(gemm, "blas") == 0) opt.gpu_gemm = STRIX_GPU_GEMM_BLAS;
    const char *tf32 = getenv("STRIX_CUDA_TF32");
    opt.tf32 = tf32 && strcmp(tf32, "1") == 0;
    opt.plugin_dir = getenv("STRIX_PLUGIN_DIR");
    return strix_backend_init_ex(name, &opt, out);
}

strix_status tool_model_load(tool_model *m, const char *backend, int threads) {
    strix_set_num_threads(threads);
    strix_status s = tool_backend_init(backend, &m->be);
    if (s != STRIX_OK) { /* name the backend in the one-line error */
        char why[256];
        snprintf(why, sizeof why, "%s", strix_last_error());
        return strix_error(s, "backend %s: %s", backend, why);
    }
    STRIX_TRY(strix_gpt_new(m->be, &strix_checkpoint_info_of(m->ck)->model, &m->g));
    return strix_checkpoint_restore(m->ck, m->g, false);
}

void tool_model_free(tool_model *m) {
    strix_gpt_free(m->g);
    strix_backend_free(m->be);
    strix_checkpoint_close(m->ck);
    m->g = NULL, m->be = NULL, m->ck = NULL;
}
