/*
 * bench_seqlm.c - times training steps (strix_train_step: batch, forward, backward, clip, AdamW)
 * and decoding of a sequence-model character LM (strix/seqlm.h) on one backend, and prints one
 * line in the format of bench/torch_seqlm.py, for bench/seqlm_train.sh to put side by side.
 * A benchmark, never a test: it asserts nothing.
 *
 * Usage: bench_seqlm --arch rnn|lstm|gru|mamba|rwkv|retnet [--backend cpu|cpu-blas]
 *                    [--data PATH] [--steps 20] [--warmup-steps 3] [--threads 2] [--batch 16]
 *                    [--block 64] [--layers 2] [--d-model 128] [--hidden H] [--d-state N]
 *                    [--d-conv K] [--expand E] [--heads NH] [--d-ff F] [--decode 500]
 * Decoding: --decode steps of strix_seqlm_decode_step (batch 1, one token each, the logits copied
 * to the host), timed as characters per second.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "strix/data.h"
#include "strix/lm.h"
#include "strix/train.h"

#include "bench_util.h"

static int die(const char *what) {
    fprintf(stderr, "bench_seqlm: %s: %s\n", what, strix_last_error());
    return 1;
}

int main(int argc, char **argv) {
    const char *backend = "cpu", *data = "../shared/data/tinyshakespeare.txt", *arch = "lstm";
    int steps = 20, warmup = 3, threads = 2, B = 16, decode = 500;
    strix_seqlm_config cfg = strix_seqlm_config_default(STRIX_ARCH_LSTM);
    cfg.block_size = 64;
    int hidden = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--arch")) arch = v;
        else if (!strcmp(k, "--backend")) backend = v;
        else if (!strcmp(k, "--data")) data = v;
        else if (!strcmp(k, "--steps")) steps = atoi(v);
        else if (!strcmp(k, "--warmup-steps")) warmup = atoi(v);
        else if (!strcmp(k, "--threads")) threads = atoi(v);
        else if (!strcmp(k, "--batch")) B = atoi(v);
        else if (!strcmp(k, "--block")) cfg.block_size = atoi(v);
        else if (!strcmp(k, "--layers")) cfg.n_layer = atoi(v);
        else if (!strcmp(k, "--d-model")) cfg.d_model = atoi(v);
        else if (!strcmp(k, "--hidden")) hidden = atoi(v);
        else if (!strcmp(k, "--d-state")) cfg.d_state = atoi(v);
        else if (!strcmp(k, "--d-conv")) cfg.d_conv = atoi(v);
        else if (!strcmp(k, "--expand")) cfg.expand = atoi(v);
        else if (!strcmp(k, "--heads")) cfg.n_head = atoi(v);
        else if (!strcmp(k, "--d-ff")) cfg.d_ff = atoi(v);
        else if (!strcmp(k, "--decode")) decode = atoi(v);
        else { fprintf(stderr, "bench_seqlm: unknown flag %s\n", k); return 2; }
    }
    strix_arch a;
    if (strix_arch_from_name(arch, &a) != STRIX_OK || a == STRIX_ARCH_GPT) {
        fprintf(stderr, "bench_seqlm: --arch takes a sequence architecture (got %s)\n", arch);
        return 2;
    }
    strix_seqlm_config def = strix_seqlm_config_default(a);
    cfg.arch = a;
    cfg.tie_weights = def.tie_weights;
    cfg.hidden = hidden > 0 ? hidden : cfg.d_model;
    if (steps < 1) steps = 1;
    strix_set_num_threads(threads);

    strix_corpus corpus;
    if (strix_corpus_load(data, &corpus) != STRIX_OK) return die("corpus");
    if (strix_corpus_split(&corpus, 0.1) != STRIX_OK) return die("split");
    cfg.vocab_size = corpus.vocab.size;
    const int T = cfg.block_size;

    strix_backend *be;
    strix_lm *lm;
    strix_lm_config lc = strix_lm_config_of_seq(&cfg);
    if (strix_backend_init(backend, &be) != STRIX_OK) return die("backend");
    if (strix_lm_new(be, &lc, &lm) != STRIX_OK) return die("model");
    if (strix_lm_init_weights(lm, 1337) != STRIX_OK) return die("init");
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
    if (strix_lm_train_model(lm, &d, &model) != STRIX_OK) return die("trainer");
    if (strix_train_optimizer(model.params, &run, &opt) != STRIX_OK) return die("optimizer");

    double *times = malloc(sizeof(double) * (size_t)(steps > decode ? steps : decode + 1));
    float loss = 0.0f;
    for (int step = 0; step < warmup + steps; step++) {
        double t0 = bench_now_s();
        strix_train_step_result r;
        if (strix_train_step(&run, &model, opt, NULL, step, &r) || strix_sync(be))
            return die("step");
        loss = r.loss;
        if (step >= warmup) times[step - warmup] = bench_now_s() - t0;
    }
    double ms = 1e3 * bench_median(times, steps);
    /* decoding: one token per step from the state */
    float *logits = malloc(sizeof(float) * (size_t)cfg.vocab_size);
    double t0 = bench_now_s();
    if (strix_lm_decode_reset(lm)) return die("decode");
    for (int i = 0; i < decode; i++)
        if (strix_lm_decode_step(lm, corpus.ids[i] % cfg.vocab_size, logits)) return die("decode");
    double dec_s = bench_now_s() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("strix %s/%s threads %d params %zu ms/step %.1f tok/s %.0f decode_chars/s %.0f "
           "maxrss_mb %.0f loss %.4f\n", arch, backend, strix_get_num_threads(),
           strix_lm_params(lm)->total, ms, (double)B * T / (ms / 1e3),
           decode > 0 ? decode / dec_s : 0.0, (double)ru.ru_maxrss / 1024.0, loss);
    free(logits);
    free(times);
    strix_optimizer_free(opt);
    strix_lm_train_model_free(&model);
    strix_lm_free(lm);
    strix_backend_free(be);
    strix_corpus_free(&corpus);
    return 0;
}
