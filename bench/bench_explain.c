/*
 * bench_explain.c - times explanations beside one forward+backward of the same model, in the same
 * run, and prints their ratio (target of issue 4: LRP <= 2x a forward+backward). A benchmark,
 * never a test: it asserts nothing.
 *
 *   mlp: the zoo MLP of bench_zoo.c, Linear(256,512) ReLU Linear(512,512) ReLU Linear(512,10),
 *        batch 64.
 *   cnn: the zoo CNN of bench_zoo.c, (Conv2d 3x3 p1, BatchNorm2d, ReLU, MaxPool2d 2) x2 (3->32->64
 *        channels), Flatten, Linear(4096,10), input 32x3x32x32.
 *   gpt: config A (strix_gpt_config_default, vocab 65), one next-token prediction after a prompt
 *        of 64 random ids (batch 1).
 * Reference pass ("fwd+bwd"): eval mode, forward, then backward from a one-hot seed at the
 * predicted class with every parameter gradient (`+=`) and no input gradient at the first layer,
 * as a training step has it (the GPT: strix_gpt_forward with targets + strix_gpt_backward at
 * B 1, T 64). Explanations: strix_lrp_explain with uniform epsilon (1e-6) and, on the CNN, the
 * EpsilonPlus composite; Integrated Gradients (Gauss-Legendre, --ig-steps points, zero baseline,
 * parameters frozen, --ig-rows rows per pass: 0 is the library default); Saliency; the GPT's strix_gpt_explain with its defaults (AttnLRP). Each
 * repetition runs the reference and every explainer once, alternating; figures are medians over
 * --reps repetitions after --warmup. Weights come from strix_params_init (seed 1337), inputs
 * are N(0,1) from a seeded stream.
 *
 * Usage: bench_explain [--backend cpu|cpu-blas] [--model mlp|cnn|gpt|all] [--reps 9]
 *                      [--warmup 2] [--threads 2] [--ig-steps 32] [--ig-rows 0]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strix.h"
#include "strix/attribution.h"
#include "strix/lrp.h"

#include "bench_util.h"

#define CLASSES BENCH_ZOO_CLASSES
#define MAX_KINDS 6

typedef struct opts {
    int reps, warmup, ig_steps, ig_rows;
} opts;

// ---- the zoo models (bench_util.h, as bench_zoo.c builds them) ---------------------------------

typedef struct zoo {
    strix_params ps;
    strix_sequential *net;
    strix_tensor x, dy;
} zoo;

static strix_status zoo_build(strix_backend *be, bool cnn, zoo *z) {
    memset(z, 0, sizeof *z);
    strix_params_init_empty(&z->ps, be);
    STRIX_TRY(strix_sequential_new(be, "", &z->net));
    STRIX_TRY(cnn ? bench_zoo_cnn(&z->ps, z->net) : bench_zoo_mlp(&z->ps, z->net));
    STRIX_TRY(strix_params_alloc(&z->ps));
    STRIX_TRY(strix_params_init(&z->ps, 1337));
    int64_t cnn_shape[4] = {32, 3, 32, 32}, mlp_shape[2] = {64, 256};
    STRIX_TRY(strix_tensor_new(be, cnn ? 4 : 2, cnn ? cnn_shape : mlp_shape, &z->x));
    size_t n = (size_t)strix_tensor_numel(&z->x);
    float *h = malloc(sizeof(float) * n);
    if (!h) return strix_error(STRIX_ERR_ALLOC, "inputs");
    strix_rng rng;
    strix_rng_seed(&rng, 1337);
    for (size_t i = 0; i < n; i++) h[i] = (float)strix_rng_normal(&rng);
    strix_status s = strix_copy(be, z->x.data, h, sizeof(float) * n, STRIX_COPY_H2D);
    free(h);
    STRIX_TRY(s);
    // eval mode (BatchNorm with its running statistics), as the explainers run
    strix_module_set_training(&z->net->base, false);
    // the reference backward's seed: one-hot at class (row mod 10)
    int64_t B = z->x.shape[0], dshape[2] = {B, CLASSES};
    STRIX_TRY(strix_tensor_new(be, 2, dshape, &z->dy));
    float *seed = calloc((size_t)(B * CLASSES), sizeof(float));
    if (!seed) return strix_error(STRIX_ERR_ALLOC, "seed");
    for (int64_t b = 0; b < B; b++) seed[b * CLASSES + b % CLASSES] = 1.0f;
    s = strix_copy(be, z->dy.data, seed, sizeof(float) * (size_t)(B * CLASSES), STRIX_COPY_H2D);
    free(seed);
    return s;
}

static void zoo_free(zoo *z) {
    strix_tensor_free(&z->x);
    strix_tensor_free(&z->dy);
    strix_module_free(z->net ? &z->net->base : NULL);
    strix_params_free(&z->ps);
}

// ---- timing ------------------------------------------------------------------------------------

enum { K_REF, K_LRP_EPS, K_LRP_PLUS, K_IG, K_SAL, K_N };
static const char *kind_names[K_N] = {"fwd+bwd", "lrp-epsilon", "lrp-epsilon-plus",
                                      "ig", "saliency"};

/* Untimed preparation of kind k: the LRP kinds assign their rules (a host walk). */
static strix_status zoo_prepare(zoo *z, int k) {
    if (k != K_LRP_EPS && k != K_LRP_PLUS) return STRIX_OK;
    strix_lrp_composite c = {.kind = k == K_LRP_EPS ? STRIX_COMPOSITE_UNIFORM
                                                      : STRIX_COMPOSITE_EPSILON_PLUS,
                             .rule = strix_lrp_epsilon(1e-6f)};
    return strix_lrp_assign(&z->net->base, &c);
}

/* One timed run of kind k on the zoo model. */
static strix_status zoo_once(zoo *z, int k, const opts *o) {
    strix_module *net = &z->net->base;
    switch (k) {
    case K_REF: {
        const strix_tensor *y, *dx;
        STRIX_TRY(strix_module_forward(net, &z->x, &y));
        return strix_module_backward(net, &z->dy, &dx);
    }
    case K_LRP_EPS:
    case K_LRP_PLUS: {
        strix_lrp_explanation e;
        STRIX_TRY(strix_lrp_explain(net, &z->x, NULL, &e));
        strix_lrp_explanation_free(&e);
        return STRIX_OK;
    }
    case K_IG: {
        strix_attr_config cfg = {.params = &z->ps, .max_rows = o->ig_rows};
        strix_attribution a;
        STRIX_TRY(strix_attr_integrated_gradients(net, &z->x, NULL, o->ig_steps,
                                                  STRIX_IG_GAUSS_LEGENDRE, &cfg, &a));
        strix_attribution_free(&a);
        return STRIX_OK;
    }
    default: {
        strix_attr_config cfg = {.params = &z->ps};
        strix_attribution a;
        STRIX_TRY(strix_attr_saliency(net, &z->x, &cfg, true, &a));
        strix_attribution_free(&a);
        return STRIX_OK;
    }
    }
}

/* Prints one model's line: the reference and each explainer with its ratio. */
static void report(const char *backend, const char *model, const bool *on, double *t, int reps,
                   const opts *o) {
    double ref = bench_median(t + (size_t)K_REF * reps, reps);
    printf("explain %s %s threads %d  %s %.3f ms", backend, model, strix_get_num_threads(),
           kind_names[K_REF], 1e3 * ref);
    for (int k = 1; k < K_N; k++) {
        if (!on[k]) continue;
        double m = bench_median(t + (size_t)k * reps, reps);
        if (k == K_IG)
            printf(" | ig%d %.3f ms %.2fx", o->ig_steps, 1e3 * m, m / ref);
        else
            printf(" | %s %.3f ms %.2fx", kind_names[k], 1e3 * m, m / ref);
    }
    printf("\n");
    fflush(stdout);
}

static strix_status bench_zoo_model(strix_backend *be, const char *backend, bool cnn,
                                    const opts *o) {
    zoo z;
    strix_status s = zoo_build(be, cnn, &z);
    bool on[K_N] = {true, true, cnn, true, true};
    double *t = calloc((size_t)K_N * (size_t)o->reps, sizeof(double));
    if (s == STRIX_OK && !t) s = strix_error(STRIX_ERR_ALLOC, "times");
    for (int r = 0; s == STRIX_OK && r < o->warmup + o->reps; r++) {
        for (int k = 0; s == STRIX_OK && k < K_N; k++) {
            if (!on[k]) continue;
            s = zoo_prepare(&z, k);
            if (s != STRIX_OK) break;
            double t0 = bench_now_s();
            s = zoo_once(&z, k, o);
            if (s == STRIX_OK) s = strix_sync(be);
            if (r >= o->warmup)
                t[(size_t)k * o->reps + (size_t)(r - o->warmup)] = bench_now_s() - t0;
        }
    }
    if (s == STRIX_OK) report(backend, cnn ? "cnn" : "mlp", on, t, o->reps, o);
    free(t);
    zoo_free(&z);
    return s;
}

// ---- the GPT -----------------------------------------------------------------------------------

static strix_status bench_gpt_model(strix_backend *be, const char *backend, const opts *o) {
    enum { T = 64 };
    strix_gpt_config cfg = strix_gpt_config_default();
    cfg.vocab_size = 65;
    strix_gpt *g = NULL;
    strix_status s = strix_gpt_new(be, &cfg, &g);
    if (s == STRIX_OK) s = strix_gpt_init_weights(g, 1337);
    int32_t ids[T + 1];
    strix_rng rng;
    strix_rng_seed(&rng, 1337);
    for (int i = 0; i <= T; i++) ids[i] = (int32_t)strix_rng_below(&rng, 65);
    strix_gpt_explain_config ec = strix_gpt_explain_defaults();
    double *t = calloc(2 * (size_t)o->reps, sizeof(double));
    if (s == STRIX_OK && !t) s = strix_error(STRIX_ERR_ALLOC, "times");
    for (int r = 0; s == STRIX_OK && r < o->warmup + o->reps; r++) {
        int k = r - o->warmup;
        double t0 = bench_now_s();
        float loss;
        s = strix_gpt_forward(g, ids, ids + 1, 1, T, &loss);
        if (s == STRIX_OK) s = strix_gpt_backward(g);
        if (s == STRIX_OK) s = strix_sync(be);
        double t1 = bench_now_s();
        strix_gpt_explanation e;
        if (s == STRIX_OK) s = strix_gpt_explain(g, ids, T, &ec, &e);
        if (s == STRIX_OK) strix_gpt_explanation_free(&e);
        if (s == STRIX_OK) s = strix_sync(be);
        double t2 = bench_now_s();
        if (k >= 0) t[k] = t1 - t0, t[o->reps + k] = t2 - t1;
    }
    if (s == STRIX_OK) {
        double ref = bench_median(t, o->reps), ex = bench_median(t + o->reps, o->reps);
        printf("explain %s gpt threads %d  fwd+bwd(B1,T%d) %.3f ms | attnlrp %.3f ms %.2fx\n",
               backend, strix_get_num_threads(), T, 1e3 * ref, 1e3 * ex, ex / ref);
        fflush(stdout);
    }
    free(t);
    strix_gpt_free(g);
    return s;
}

int main(int argc, char **argv) {
    const char *backend = "cpu", *which = "all";
    opts o = {.reps = 9, .warmup = 2, .ig_steps = 32, .ig_rows = 0};
    int threads = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--backend")) backend = v;
        else if (!strcmp(k, "--model")) which = v;
        else if (!strcmp(k, "--reps")) o.reps = atoi(v);
        else if (!strcmp(k, "--warmup")) o.warmup = atoi(v);
        else if (!strcmp(k, "--threads")) threads = atoi(v);
        else if (!strcmp(k, "--ig-steps")) o.ig_steps = atoi(v);
        else if (!strcmp(k, "--ig-rows")) o.ig_rows = atoi(v);
        else {
            fprintf(stderr, "bench_explain: unknown flag %s\n", k);
            return 2;
        }
    }
    if (argc % 2 == 0) {
        fprintf(stderr, "bench_explain: flag %s needs a value\n", argv[argc - 1]);
        return 2;
    }
    if (o.reps < 1) o.reps = 1;
    if (o.warmup < 0) o.warmup = 0;
    strix_set_num_threads(threads);
    strix_backend *be = NULL;
    if (strix_backend_init(backend, &be) != STRIX_OK) {
        fprintf(stderr, "bench_explain: backend %s: %s\n", backend, strix_last_error());
        return 1;
    }
    strix_status s = STRIX_OK;
    bool all = !strcmp(which, "all");
    if (all || !strcmp(which, "mlp")) s = bench_zoo_model(be, backend, false, &o);
    if (s == STRIX_OK && (all || !strcmp(which, "cnn")))
        s = bench_zoo_model(be, backend, true, &o);
    if (s == STRIX_OK && (all || !strcmp(which, "gpt"))) s = bench_gpt_model(be, backend, &o);
    if (s != STRIX_OK)
        fprintf(stderr, "bench_explain: %s: %s\n", strix_status_str(s), strix_last_error());
    strix_backend_free(be);
    return s == STRIX_OK ? 0 : 1;
}
