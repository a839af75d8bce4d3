/*
 * bench_dist.c - times the gradient exchange of data-parallel training (strix_dist_sum_shards:
 * all-to-all of chunks, the fixed tree, all-gather) at the gradient sizes of two GPT shapes, and
 * prints one line per shape for bench/dist_train.sh. Run it under mpirun; one process runs the
 * tree alone. A benchmark, never a test: it asserts nothing.
 *
 * Usage: [mpirun -np N] bench_dist [--shards S] [--reps 20] [--warmup 3]
 * S (default: the process count) must be a multiple of it: each rank holds S/N shards, as in
 * `strix train --grad-shards S`. The shapes, at vocabulary 65 (tinyshakespeare) with strix
 * train's defaults (learned positions, biases, MLP 4x, untied head):
 *   config-A   4 layers, 4 heads, d_model 128, block 64  (trained at B16 T64)
 *   nanogpt    6 layers, 6 heads, d_model 384, block 256 (nanoGPT Shakespeare, B8 T256 on a CPU)
 * Gradient floats are the model's parameter count (strix_gpt_params()->total), the floats the
 * trainer exchanges. A rep refills the shards, waits at a barrier and times one exchange; its
 * time is the slowest rank's; the line quotes the median of the reps after the warmup ones.
 * `sent` is what each rank sends per exchange, on average over the ranks, and receives as much:
 * (N-1)/N of the gradient for each of its S/N shards in the all-to-all plus (N-1)/N of it in the
 * all-gather; GB/s = sent / time (one direction). Rank 0 prints; the others stay quiet.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strix/dist.h"
#include "strix/gpt.h"

#include "bench_util.h"

typedef struct shape {
    const char *name;
    int layers, heads, d_model, block;
} shape;

static const shape SHAPES[] = {
    {"config-A", 4, 4, 128, 64},
    {"nanogpt", 6, 6, 384, 256},
};
#define VOCAB 65

/* The first "model name" of /proc/cpuinfo into buf ("unknown" when there is none). */
static void cpu_model(char *buf, size_t cap) {
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        snprintf(buf, cap, "%s", colon);
        buf[strcspn(buf, "\n")] = '\0';
        break;
    }
    fclose(f);
}

/* The parameter count of shape s: the GPT built on the cpu backend, as strix train builds it. */
static strix_status param_count(const shape *s, size_t *out) {
    strix_gpt_config cfg = strix_gpt_config_default();
    cfg.vocab_size = VOCAB;
    cfg.n_layer = s->layers;
    cfg.n_head = s->heads;
    cfg.d_model = s->d_model;
    cfg.block_size = s->block;
    strix_backend *be;
    strix_gpt *gpt;
    STRIX_TRY(strix_backend_init("cpu", &be));
    strix_status st = strix_gpt_new(be, &cfg, &gpt);
    if (st == STRIX_OK) {
        *out = strix_gpt_params(gpt)->total;
        strix_gpt_free(gpt);
    }
    strix_backend_free(be);
    return st;
}

/* Median milliseconds of one exchange of `local` shards of n floats (the slowest rank's time). */
static strix_status time_exchange(strix_dist *d, int local, size_t n, int warmup, int reps,
                                  double *ms) {
    size_t count = (size_t)local * n;
    float *fresh = malloc(count * sizeof(float)), *shards = malloc(count * sizeof(float));
    float *out = malloc(n * sizeof(float));
    double *times = malloc((size_t)reps * sizeof(double));
    strix_status s = STRIX_OK;
    if (!fresh || !shards || !out || !times) {
        s = strix_error(STRIX_ERR_ALLOC, "bench_dist: out of memory for %zu floats", count);
        goto done;
    }
    uint32_t x = 2463534242u + (uint32_t)strix_dist_rank(d); /* values in [-1, 1): no denormals */
    for (size_t i = 0; i < count; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        fresh[i] = (float)(x >> 8) * (1.0f / 8388608.0f) - 1.0f;
    }
    for (int r = 0; r < warmup + reps && s == STRIX_OK; r++) {
        memcpy(shards, fresh, count * sizeof(float)); /* the exchange may use them as scratch */
        if ((s = strix_dist_barrier(d)) != STRIX_OK) break;
        double t0 = bench_now_s();
        if ((s = strix_dist_sum_shards(d, shards, local, n, out)) != STRIX_OK) break;
        int64_t ns = (int64_t)((bench_now_s() - t0) * 1e9);
        if ((s = strix_dist_max(d, &ns)) != STRIX_OK) break;
        if (r >= warmup) times[r - warmup] = (double)ns * 1e-6;
    }
    if (s == STRIX_OK) *ms = bench_median(times, reps);
done:
    free(fresh);
    free(shards);
    free(out);
    free(times);
    return s;
}

int main(int argc, char **argv) {
    int shards = 0, reps = 20, warmup = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--shards")) shards = atoi(v);
        else if (!strcmp(k, "--reps")) reps = atoi(v);
        else if (!strcmp(k, "--warmup")) warmup = atoi(v);
        else { fprintf(stderr, "bench_dist: unknown flag %s\n", k); return 2; }
    }
    if (reps < 1) reps = 1;
    if (warmup < 0) warmup = 0;
    strix_dist *d;
    if (strix_dist_open(&d) != STRIX_OK) {
        fprintf(stderr, "bench_dist: %s\n", strix_last_error());
        return 1;
    }
    int N = strix_dist_size(d), rank = strix_dist_rank(d);
    if (shards == 0) shards = N;
    if (shards < N || shards % N != 0) {
        if (rank == 0)
            fprintf(stderr, "bench_dist: --shards %d is not a multiple of the %d processes\n",
                    shards, N);
        strix_dist_close(d);
        return 2;
    }
    int local = shards / N;
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        const shape *sh = &SHAPES[i];
        size_t n = 0;
        double ms = 0.0;
        if (param_count(sh, &n) != STRIX_OK ||
            time_exchange(d, local, n, warmup, reps, &ms) != STRIX_OK) {
            fprintf(stderr, "bench_dist: rank %d, %s: %s\n", rank, sh->name, strix_last_error());
            strix_dist_abort(d, 1);
            strix_dist_close(d);
            return 1;
        }
        double bytes = 4.0 * (double)n, sent = (double)(N - 1) / N * (local + 1) * bytes;
        char gbs[32] = "-";
        if (N > 1) snprintf(gbs, sizeof gbs, "%.2f", sent / (ms * 1e-3) / 1e9);
        if (rank == 0)
            printf("bench_dist %s L%d H%d C%d V%d ranks %d shards %d floats %zu bytes %.0f "
                   "sent %.0f ms %.3f GB/s %s cpu %s\n", sh->name, sh->layers, sh->heads,
                   sh->d_model, VOCAB, N, shards, n, bytes, sent, ms, gbs, cpu);
        fflush(stdout);
    }
    strix_dist_close(d);
    return 0;
}
