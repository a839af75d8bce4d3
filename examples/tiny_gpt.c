/*
 * tiny_gpt.c - strix as a library, start to finish: build a character-level GPT, train it on a
 * text file with the trainer (AdamW), then sample from it with the KV cache. What `strix train`
 * and `strix sample` do, without checkpoints, evaluation or signal handling.
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

/* The trainer's events: keeps the first and last loss and prints a line every 50 steps. */
typedef struct losses {
    int64_t steps;
    float first, last;
} losses;

static strix_train_action print_progress(void *user, const strix_train_event *ev) {
    losses *l = user;
    if (ev->kind != STRIX_TRAIN_EV_STEP) return STRIX_TRAIN_CONTINUE;
    int64_t step = ev->step - 1; // ev->step counts completed steps; this is the 0-based index
    if (step == 0) l->first = ev->loss;
    l->last = ev->loss;
    if (step % 50 == 0 || step == l->steps - 1)
        printf("step %4d  loss %.4f\n", (int)step, ev->loss);
    return STRIX_TRAIN_CONTINUE; // STRIX_TRAIN_STOP would end the run here
}

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

    // 4. Training with the trainer (strix/train.h): per step it zeroes the grads, runs the
    //    model's loss step (here the GPT adapter: the next random batch, forward with targets =
    //    mean cross-entropy, backward), clips the global gradient norm, takes the learning rate
    //    from warmup + cosine and steps the optimizer (AdamW, no decay on biases and LayerNorm).
    strix_train_config run = {.steps = steps, .lr = 3e-3f, .min_lr = 3e-4f, .warmup = 30,
                              .weight_decay = 0.1f, .clip = 1.0f, .adam_beta1 = 0.9f,
                              .adam_beta2 = 0.999f, .adam_eps = 1e-8f, .batch = B};
    strix_train_state where = {.step = 0}; // the batch stream's state lives here
    strix_rng data_rng;
    strix_rng_seed(&data_rng, 42);
    where.data_rng = data_rng.state;
    strix_gpt_train_data data = {.batch = B, .seq_len = T, .corpus = &corpus, .state = &where};
    strix_train_model model; // the GPT as the trainer sees it (no eval, no checkpoints here)
    CHECK(strix_gpt_train_model(gpt, &data, &model));
    strix_optimizer *adamw;
    CHECK(strix_train_optimizer(model.params, &run, &adamw));
    losses curve = {.steps = steps};
    strix_train_hooks hooks = {.on_event = print_progress, .user = &curve};
    CHECK(strix_train_run(&run, &model, adamw, &where, &hooks, NULL));
    strix_optimizer_free(adamw);
    strix_gpt_train_model_free(&model);

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
    return curve.last < curve.first ? 0 : 1;
}
