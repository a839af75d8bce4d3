/*
 * bench_recurrent.c - times LSTM and GRU training steps of strix_rnn (strix/recurrent.h) on one
 * backend and prints one line per module in the format of tools/ref/bench_torch_recurrent.py,
 * which times torch.nn.LSTM/GRU at the same size. A benchmark, never a test: it asserts nothing.
 *
 * A step is what a character LM's recurrent core does per batch: zero the gradients, forward of
 * x (B,T,I) -> y (B,T,H) from a zero state, backward of a fixed dy (B,T,H) to dx and every
 * parameter gradient (no optimizer, no embedding or head: the two scripts time the same work).
 * Default size (near a ~0.8M-parameter char LM): B 32, T 128, I = H = 256, 2 layers,
 * unidirectional, batch_first: LSTM 1.05M parameters, GRU 0.79M. tok/s = B·T / (median step);
 * cpu_ms/step is the median process CPU time of a step (all threads; on a loaded machine it
 * says more about the work than the wall clock does), fwd_ms the median forward's share.
 *
 * Measured (AMD EPYC, 2 threads, quiet machine, medians of 3 rounds of 6 steps, default size):
 *   strix cpu-blas  LSTM 297 ms/step 13.8k tok/s   GRU 229 ms 17.9k tok/s
 *   strix cpu       LSTM 374 ms      10.9k         GRU 285 ms 14.4k
 *   torch 1.13 (Debian python3-torch)  LSTM 1969 ms 2.1k   GRU 1483 ms 2.8k
 *   torch 2.x (pip wheel, MKL/oneDNN)  LSTM 224 ms 18.3k   GRU 317 ms 12.9k
 * About 78% of a step's CPU time is GEMM (perf, 1 thread, both backends); the input projections
 * and the weight gradients are already one GEMM per gate over all steps.
 *
 * Usage: bench_recurrent [--backend cpu|cpu-blas|cuda[:N]|hip[:N]] [--mode lstm|gru|both]
 *                        [--steps 10] [--warmup-steps 2] [--threads 2] [--batch 32] [--seq 128]
 *                        [--input 256] [--hidden 256] [--layers 2]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strix/recurrent.h"

#include "bench_util.h"

/* Process CPU time in seconds (all threads). */
static double bench_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int die(const char *what) {
    fprintf(stderr, "bench_recurrent: %s: %s\n", what, strix_last_error());
    return 1;
}

/* Times `steps` training steps (after `warmup`) of one module; prints its line. */
static int run_mode(strix_backend *be, const char *backend, strix_rnn_mode mode, int B, int T,
                    int I, int H, int L, int steps, int warmup) {
    strix_params ps;
    strix_params_init_empty(&ps, be);
    strix_rnn_config cfg = strix_rnn_config_default(mode, I, H);
    cfg.num_layers = L;
    strix_rnn *m;
    if (strix_rnn_new(&ps, "rnn", &cfg, &m) != STRIX_OK) return die("module");
    if (strix_params_alloc(&ps) != STRIX_OK || strix_params_init(&ps, 1337) != STRIX_OK)
        return die("parameters");
    size_t nx = (size_t)B * T * I, ny = (size_t)B * T * H;
    float *host = malloc((nx > ny ? nx : ny) * sizeof(float));
    strix_rng rng;
    strix_rng_seed(&rng, 7);
    int64_t sx[3] = {B, T, I}, sy[3] = {B, T, H};
    strix_tensor x, dy;
    for (size_t i = 0; i < nx; i++) host[i] = (float)(strix_rng_uniform(&rng) * 2.0 - 1.0);
    if (strix_tensor_new(be, 3, sx, &x) ||
        strix_copy(be, x.data, host, nx * sizeof(float), STRIX_COPY_H2D))
        return die("x");
    for (size_t i = 0; i < ny; i++) host[i] = (float)(strix_rng_uniform(&rng) * 2.0 - 1.0);
    if (strix_tensor_new(be, 3, sy, &dy) ||
        strix_copy(be, dy.data, host, ny * sizeof(float), STRIX_COPY_H2D))
        return die("dy");
    double *times = malloc(sizeof(double) * (size_t)steps);
    double *cpu = malloc(sizeof(double) * (size_t)steps);
    double *fwd = malloc(sizeof(double) * (size_t)steps);
    for (int step = 0; step < warmup + steps; step++) {
        double t0 = bench_now_s(), c0 = bench_cpu_s();
        const strix_tensor *y, *dx;
        if (strix_params_zero_grad(&ps) || strix_rnn_forward(m, &x, NULL, NULL, &y, NULL, NULL) ||
            strix_sync(be))
            return die("forward");
        double t1 = bench_now_s();
        if (strix_rnn_backward(m, &dy, NULL, NULL, &dx, NULL, NULL) || strix_sync(be))
            return die("backward");
        if (step >= warmup) {
            fwd[step - warmup] = t1 - t0;
            times[step - warmup] = bench_now_s() - t0;
            cpu[step - warmup] = bench_cpu_s() - c0;
        }
    }
    double ms = 1e3 * bench_median(times, steps), cpu_ms = 1e3 * bench_median(cpu, steps);
    double fwd_ms = 1e3 * bench_median(fwd, steps);
    printf("strix %s %s threads %d B %d T %d I %d H %d L %d params %zu ms/step %.1f tok/s %.0f "
           "cpu_ms/step %.1f fwd_ms %.1f\n",
           backend, mode == STRIX_RNN_LSTM ? "lstm" : "gru", strix_get_num_threads(), B, T, I, H,
           L, ps.total, ms, (double)B * T / (ms / 1e3), cpu_ms, fwd_ms);
    free(fwd);
    free(times);
    free(cpu);
    free(host);
    strix_tensor_free(&x);
    strix_tensor_free(&dy);
    strix_module_free(&m->base);
    strix_params_free(&ps);
    return 0;
}

int main(int argc, char **argv) {
    const char *backend = "cpu", *mode = "both";
    int steps = 10, warmup = 2, threads = 2, B = 32, T = 128, I = 256, H = 256, L = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--backend")) backend = v;
        else if (!strcmp(k, "--mode")) mode = v;
        else if (!strcmp(k, "--steps")) steps = atoi(v);
        else if (!strcmp(k, "--warmup-steps")) warmup = atoi(v);
        else if (!strcmp(k, "--threads")) threads = atoi(v);
        else if (!strcmp(k, "--batch")) B = atoi(v);
        else if (!strcmp(k, "--seq")) T = atoi(v);
        else if (!strcmp(k, "--input")) I = atoi(v);
        else if (!strcmp(k, "--hidden")) H = atoi(v);
        else if (!strcmp(k, "--layers")) L = atoi(v);
        else { fprintf(stderr, "bench_recurrent: unknown flag %s\n", k); return 2; }
    }
    if (steps < 1) steps = 1;
    strix_set_num_threads(threads);
    strix_backend *be;
    if (strix_backend_init(backend, &be) != STRIX_OK) return die("backend");
    int rc = 0;
    if (!strcmp(mode, "lstm") || !strcmp(mode, "both"))
        rc |= run_mode(be, backend, STRIX_RNN_LSTM, B, T, I, H, L, steps, warmup);
    if (!strcmp(mode, "gru") || !strcmp(mode, "both"))
        rc |= run_mode(be, backend, STRIX_RNN_GRU, B, T, I, H, L, steps, warmup);
    strix_backend_free(be);
    return rc;
}
