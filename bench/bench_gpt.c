/*
 * bench_gpt.c - times GPT training steps (strix_train_step: batch, forward, backward, clip, AdamW)
 * on one backend and
 * prints one line in the format of bench/torch_gpt.py, for bench/gpt_train.sh to put side by side.
 * A benchmark, never a test: it asserts nothing.
 *
 * Usage: bench_gpt [--backend cpu|cpu-blas|cuda[:N]|hip[:N]] [--device cpu|cuda[:N]|hip[:N]]
 *                  [--data PATH] [--steps 30] [--warmup-steps 5] [--threads 2] [--batch 16]
 *                  [--block 64] [--layers 4] [--heads 4] [--d-model 128]
 * --device is the strix command's flag: a GPU device names the backend, cpu keeps --backend. Each
 * timed step ends with strix_sync, so GPU steps are timed to completion. The nanoGPT Shakespeare
 * config on a GPU: --device cuda --batch 64 --block 256 --layers 6 --heads 6 --d-model 384.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "strix/data.h"
#include "strix/gpt.h"
#include "strix/gpt_train.h"
#include "strix/train.h"
#include "core/backend_impl.h" /* strix_gpu_memory_stats: launches per step */

#include "bench_util.h"

static int die(const char *what) {
    fprintf(stderr, "bench_gpt: %s: %s\n", what, strix_last_error());
    return 1;
}

int main(int argc, char **argv) {
    const char *backend = "cpu", *device = "cpu", *data = "../shared/data/tinyshakespeare.txt";
    int steps = 30, warmup = 5, threads = 2;
    strix_gpt_config cfg = strix_gpt_config_default();
    int B = 16;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--backend")) backend = v;
        else if (!strcmp(k, "--device")) device = v;
        else if (!strcmp(k, "--data")) data = v;
        else if (!strcmp(k, "--steps")) steps = atoi(v);
        else if (!strcmp(k, "--warmup-steps")) warmup = atoi(v);
        else if (!strcmp(k, "--threads")) threads = atoi(v);
        else if (!strcmp(k, "--batch")) B = atoi(v);
        else if (!strcmp(k, "--block")) cfg.block_size = atoi(v);
        else if (!strcmp(k, "--layers")) cfg.n_layer = atoi(v);
        else if (!strcmp(k, "--heads")) cfg.n_head = atoi(v);
        else if (!strcmp(k, "--d-model")) cfg.d_model = atoi(v);
        else { fprintf(stderr, "bench_gpt: unknown flag %s\n", k); return 2; }
    }
    if (strcmp(device, "cpu") != 0) {
        if (strncmp(device, "cuda", 4) != 0 && strncmp(device, "hip", 3) != 0) {
            fprintf(stderr, "bench_gpt: --device takes cpu, cuda[:N] or hip[:N] (got %s)\n",
                    device);
            return 2;
        }
        backend = device; /* the registry checks the rest of the name */
    }
    if (steps < 1) steps = 1;
    strix_set_num_threads(threads);

    strix_corpus corpus;
    if (strix_corpus_load(data, &corpus) != STRIX_OK) return die("corpus");
    if (strix_corpus_split(&corpus, 0.1) != STRIX_OK) return die("split");
    cfg.vocab_size = corpus.vocab.size;
    const int T = cfg.block_size;

    strix_backend *be;
    strix_gpt *gpt;
    strix_backend_options bopt = {0}; /* the library reads no environment: the bench does */
    const char *gemm = getenv("STRIX_CUDA_GEMM");
    if (gemm && strcmp(gemm, "own") == 0) bopt.gpu_gemm = STRIX_GPU_GEMM_OWN;
    const char *reduce = getenv("STRIX_CUDA_REDUCE");
    bopt.gpu_exact_reductions = reduce && strcmp(reduce, "exact") == 0;
    if (strix_backend_init_ex(backend, &bopt, &be) != STRIX_OK) return die("backend");
    if (strix_gpt_new(be, &cfg, &gpt) != STRIX_OK) return die("gpt");
    if (strix_gpt_init_weights(gpt, 1337) != STRIX_OK) return die("init");
    /* constant lr 1e-3 (min_lr = lr, no warmup), clip 1, AdamW with weight decay 0.1 */
    strix_train_config run = {.steps = warmup + steps, .lr = 1e-3f, .min_lr = 1e-3f,
                              .weight_decay = 0.1f, .clip = 1.0f, .adam_beta1 = 0.9f,
                              .adam_beta2 = 0.999f, .adam_eps = 1e-8f, .batch = B};
    strix_rng rng;
    strix_rng_seed(&rng, 1337);
    strix_train_state where = {.data_rng = rng.state};
    strix_gpt_train_data d = {.batch = B, .seq_len = T, .corpus = &corpus, .state = &where};
    strix_train_model model;
    strix_optimizer *opt;
    if (strix_gpt_train_model(gpt, &d, &model) != STRIX_OK) return die("model");
    if (strix_train_optimizer(model.params, &run, &opt) != STRIX_OK) return die("optimizer");

    double *times = malloc(sizeof(double) * (size_t)steps);
    float loss = 0.0f;
    strix_gpu_memstats gpu_before = {0}, gpu_after = {0};
    for (int step = 0; step < warmup + steps; step++) {
        if (step == warmup) strix_gpu_memory_stats(be, &gpu_before);
        double t0 = bench_now_s();
        strix_train_step_result r;
        if (strix_train_step(&run, &model, opt, NULL, step, &r) || strix_sync(be))
            return die("step");
        if (r.skipped) { /* the trainer skips such steps; a benchmark must not time them */
            fprintf(stderr, "bench_gpt: step %d: loss %g, gradient norm %g\n", step,
                    (double)r.loss, r.grad_norm);
            return 1;
        }
        loss = r.loss;
        if (step >= warmup) times[step - warmup] = bench_now_s() - t0;
    }
    double ms = 1e3 * bench_median(times, steps);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    char launches[48] = "";
    if (strix_gpu_memory_stats(be, &gpu_after))
        snprintf(launches, sizeof launches, " launches/step %.0f",
                 (double)(gpu_after.launches - gpu_before.launches) / steps);
    printf("strix %s threads %d ms/step %.1f tok/s %.0f maxrss_mb %.0f loss %.4f%s\n", backend,
           strix_get_num_threads(), ms, (double)B * T / (ms / 1e3), (double)ru.ru_maxrss / 1024.0,
           loss, launches);
    free(times);
    strix_optimizer_free(opt);
    strix_gpt_train_model_free(&model);
    strix_gpt_free(gpt);
    strix_backend_free(be);
    strix_corpus_free(&corpus);
    return 0;
}
