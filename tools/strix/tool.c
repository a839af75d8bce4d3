/*
 * tool.c - the helpers of tool.h that the subcommands share: the error line, the clock, the
 * backend options from the environment, and a checkpoint's model on a backend (sample, explain,
 * export).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
    const char *reduce = getenv("STRIX_CUDA_REDUCE");
    opt.gpu_exact_reductions = reduce && strcmp(reduce, "exact") == 0;
    opt.plugin_dir = getenv("STRIX_PLUGIN_DIR");
    return strix_backend_init_ex(name, &opt, out);
}

bool tool_file_replaceable(const char *path, const char *marker) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char head[4097];
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    return n == 0 || strstr(head, marker) != NULL;
}

bool tool_warn_threads(int threads) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online <= 0 || threads <= online) return false;
    fprintf(stderr, "strix: warning: --threads %d exceeds the %ld online cores; oversubscribed "
                    "threads make every step much slower (keeping %d)\n", threads, online,
            threads);
    return true;
}

double tool_activation_bytes(const strix_gpt_config *m, int batch) {
    double C = m->d_model, T = m->block_size, L = m->n_layer, H = m->n_head;
    double F = m->d_ff > 0 ? m->d_ff : 4.0 * C, V = m->vocab_size;
    return 4.0 * batch * T * (L * (10.0 * C + 2.0 * F + H * T) + 2.0 * V);
}

/* A sequence model's floats kept per position and layer for backward, and its parameter count,
 * both lower estimates from the shapes its blocks declare (strix/seqlm.h). */
static void seq_estimate(const strix_seqlm_config *q, double *per_pos, double *params) {
    double C = q->d_model, L = q->n_layer, V = q->vocab_size, T = q->block_size;
    double out = C, act = 0, par = 0;
    switch (q->arch) {
    case STRIX_ARCH_MAMBA: { /* Abar, Bbar and the states (E·S each), the projections */
        double E = q->expand * C, S = q->d_state, R = ceil(C / 16.0);
        act = 3.0 * E * S + 10.0 * E + 4.0 * C;
        par = 2.0 * E * C + E * q->d_conv + E * (R + 2.0 * S) + R * E + E * S + E * C;
        break;
    }
    case STRIX_ARCH_RWKV: {
        double F = q->d_ff > 0 ? q->d_ff : 4.0 * C;
        act = 20.0 * C + 3.0 * F;
        par = 5.0 * C * C + 2.0 * C * F;
        break;
    }
    case STRIX_ARCH_RETNET: { /* the scores (heads × T) of the parallel form */
        double F = q->d_ff > 0 ? q->d_ff : 2.0 * C;
        act = 20.0 * C + 3.0 * F + 2.0 * q->n_head * T;
        par = 8.0 * C * C + 3.0 * C * F;
        break;
    }
    default: { /* RNN, LSTM, GRU: G gates of H */
        double H = q->hidden, G = q->arch == STRIX_ARCH_LSTM ? 4 : q->arch == STRIX_ARCH_GRU ? 3 : 1;
        act = 3.0 * G * H + 4.0 * H;
        par = G * H * (C + H) + (L - 1) * G * H * 2.0 * H;
        out = H;
        L = L > 0 ? L : 1;
        *per_pos = L * act + 2.0 * V;
        *params = par + V * C + out * V;
        return;
    }
    }
    *per_pos = L * act + 2.0 * V;
    *params = L * par + V * C + out * V;
}

double tool_training_bytes(const strix_lm_config *c, int batch) {
    if (c->arch == STRIX_ARCH_GPT) return tool_activation_bytes(&c->gpt, batch);
    double per_pos, params;
    seq_estimate(&c->seq, &per_pos, &params);
    /* activations, and the parameters with their gradients and two AdamW moments */
    return 4.0 * batch * c->seq.block_size * per_pos + 16.0 * params;
}

int tool_check_memory(const char *cmd, const strix_lm_config *c, int batch) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return 0; /* unknown: no limit to check against */
    double limit = (double)pages * (double)page, need = tool_training_bytes(c, batch);
    if (need <= limit) return 0;
    if (c->arch == STRIX_ARCH_GPT)
        fprintf(stderr, "strix %s: --batch %d needs about %.1f GiB of activations (B*T*(L*(10C + "
                        "2*d_ff + NH*T) + 2V) floats), more than the machine's %.1f GiB of "
                        "memory; give a smaller --batch (--grad-accum keeps the tokens per step)\n",
                cmd, batch, need / 1073741824.0, limit / 1073741824.0);
    else
        fprintf(stderr, "strix %s: this %s model needs about %.1f GiB for training at --batch %d "
                        "(parameters, gradients, AdamW moments and activations), more than the "
                        "machine's %.1f GiB of memory; give a smaller model or --batch\n", cmd,
                strix_arch_name(c->arch), need / 1073741824.0, batch, limit / 1073741824.0);
    return 2;
}

strix_status tool_model_load(tool_model *m, const char *backend, int threads) {
    tool_warn_threads(threads);
    strix_set_num_threads(threads);
    strix_status s = tool_backend_init(backend, &m->be);
    if (s != STRIX_OK) { /* name the backend in the one-line error */
        char why[256];
        snprintf(why, sizeof why, "%s", strix_last_error());
        return strix_error(s, "backend %s: %s", backend, why);
    }
    STRIX_TRY(strix_lm_new(m->be, &strix_checkpoint_info_of(m->ck)->model, &m->lm));
    return strix_checkpoint_restore_lm(m->ck, m->lm, false);
}

void tool_model_free(tool_model *m) {
    strix_lm_free(m->lm);
    strix_backend_free(m->be);
    strix_checkpoint_close(m->ck);
    m->lm = NULL, m->be = NULL, m->ck = NULL;
}
