/*
 * tiny_gpt.c - strix as a library, start to finish: build a character-level GPT, train it on a
 * text file with AdamW, then sample from it with the KV cache. What `strix train` and
 * `strix sample` do, without checkpoints, evaluation or signal handling.
 *
 * Build: it is built with the project (build/tiny_gpt). Run from the repository root:
 *   ./build/tiny_gpt [TEXT_FILE] [STEPS]      (default ../shared/data/tinyshakespeare.txt, 300)
 * Exits 1 if the final training loss is not below the first one.
 */
#include <stdio.h>
#include <stdlib.h>

#include "strix.h"

/* Every strix call returns a status; on failure the message is in strix_last_error(). */
#define CHECK(call)                                                                            \
    do {                                                                                       \
        strix_status s_ = (call);                                                              \
        if (s_ != STRIX_OK) {                                                                  \
            fprintf(stderr, "tiny_gpt: %s: %s\n", #call, strix_last_error());                  \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "../shared/data/tinyshakespeare.txt";
    int steps = argc > 2 ? atoi(argv[2]) : 300;
    enum { B = 16, T = 32 };

    // 1. Data: bytes are tokens; the vocabulary is the sorted set of bytes in the text.
    strix_corpus corpus;
    CHECK(strix_corpus_load(path, &corpus));
    CHECK(strix_corpus_split(&corpus, 0.1)); // last 10% held out

    // 2. A backend ("cpu" is the reference; "cpu-blas" uses OpenBLAS for GEMM).
    strix_backend *be;
    CHECK(strix_backend_init("cpu", &be));

    // 3. The model: start from the defaults (config A) and shrink it.
    strix_gpt_config cfg = strix_gpt_config_default();
    cfg.vocab_size = corpus.vocab.size;
    cfg.block_size = T;
    cfg.n_layer = 2;
    cfg.d_model = 64;
    strix_gpt *gpt;
    CHECK(strix_gpt_new(be, &cfg, &gpt));
    CHECK(strix_gpt_init_weights(gpt, 1337)); // nanoGPT's initialisation, from a seed

    // 4. Training: zero grads, forward with targets (mean cross-entropy), backward, clip, AdamW.
    strix_params *params = strix_gpt_params(gpt); // one block each: values, grads, m, v
    strix_adamw_config adamw = strix_adamw_defaults(0.1f);
    strix_rng data_rng;
    strix_rng_seed(&data_rng, 42);
    int32_t ids[B * T], targets[B * T];
    float first_loss = 0.0f, loss = 0.0f;
    for (int step = 0; step < steps; step++) {
        CHECK(strix_corpus_batch_random(&corpus, STRIX_SPLIT_TRAIN, &data_rng, B, T, ids,
                                        targets));
        CHECK(strix_params_zero_grad(params));
        CHECK(strix_gpt_forward(gpt, ids, targets, B, T, &loss));
        CHECK(strix_gpt_backward(gpt));
        double grad_norm;
        CHECK(strix_clip_grad_norm(params, 1.0f, &grad_norm));
        float lr = strix_lr_warmup_cosine(step, 30, steps, 3e-3f, 3e-4f);
        CHECK(strix_adamw_step(params, &adamw, lr, step + 1));
        if (step == 0) first_loss = loss;
        if (step % 50 == 0 || step == steps - 1) printf("step %4d  loss %.4f\n", step, loss);
    }

    // 5. Sampling: prime the KV cache with a prompt, then draw tokens one position at a time.
    const char *prompt = "\n";
    int32_t prompt_id;
    CHECK(strix_vocab_encode(&corpus.vocab, (const unsigned char *)prompt, 1, &prompt_id));
    strix_gpt_generator *gen;
    CHECK(strix_gpt_generator_new(gpt, &gen));
    CHECK(strix_gpt_generator_prime(gen, &prompt_id, 1));
    strix_sampler_config sampling = strix_sampler_config_default();
    sampling.temperature = 0.8f;
    strix_rng sample_rng;
    strix_rng_seed(&sample_rng, 7);
    for (int i = 0; i < 200; i++) {
        int32_t token;
        unsigned char byte;
        CHECK(strix_gpt_generator_next(gen, &sampling, &sample_rng, &token));
        CHECK(strix_vocab_decode(&corpus.vocab, &token, 1, &byte));
        putchar(byte);
    }
    putchar('\n');

    // 6. Everything is freed by its creator; free(NULL)-style calls are no-ops.
    strix_gpt_generator_free(gen);
    strix_gpt_free(gpt);
    strix_backend_free(be);
    strix_corpus_free(&corpus);
    return loss < first_loss ? 0 : 1;
}
