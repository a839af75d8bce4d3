/*
 * bench_zoo.c - times layer-zoo training steps on one backend and prints one line per model in
 * the format of bench/torch_zoo.py, for bench/zoo_train.sh to put side by side. A benchmark,
 * never a test: it asserts nothing.
 *
 *   mlp: Linear(256,512) ReLU Linear(512,512) ReLU Linear(512,10), batch 64.
 *   cnn: Conv2d(3,32,3,p1) BatchNorm2d ReLU MaxPool2d(2) -> Conv2d(32,64,3,p1) BatchNorm2d ReLU
 *        MaxPool2d(2) -> Flatten -> Linear(64*8*8,10), input 32x3x32x32.
 * A step is zero_grad, forward, mean cross-entropy (with its gradient), backward and one AdamW step
 * (lr 1e-3, weight decay 0.01), then strix_sync; the figure is the median over --steps steps after
 * --warmup-steps. Inputs are fixed N(0,1) values and labels drawn once from a seeded stream.
 * With --profile it also prints, per model, the median time of each phase and of each child's
 * forward and backward (the step is then run child by child, which adds no work).
 *
 * Usage: bench_zoo [--backend cpu|cpu-blas] [--model mlp|cnn|both] [--steps 40]
 *                  [--warmup-steps 5] [--threads 2] [--profile]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "strix.h"
#include "strix/layers.h"
#include "strix/loss.h"

#include "bench_util.h"

#define CLASSES BENCH_ZOO_CLASSES
#define MAX_CHILDREN 16

typedef struct model {
    const char *name;
    strix_params ps;
    strix_sequential *net;
    int ndim;                   /* input shape */
    int64_t shape[4];
} model;

/* Times one model; prints its line (and the profile). Returns a status. */
static strix_status bench(strix_backend *be, const char *backend, bool cnn, int steps, int warmup,
                          bool profile) {
    model md = {.name = cnn ? "cnn" : "mlp"};
    if (cnn) {
        md.ndim = 4;
        md.shape[0] = 32, md.shape[1] = 3, md.shape[2] = 32, md.shape[3] = 32;
    } else {
        md.ndim = 2;
        md.shape[0] = 64, md.shape[1] = 256;
    }
    const size_t B = (size_t)md.shape[0];
    strix_params_init_empty(&md.ps, be);
    strix_status s = strix_sequential_new(be, "", &md.net);
    if (s == STRIX_OK) s = cnn ? bench_zoo_cnn(&md.ps, md.net) : bench_zoo_mlp(&md.ps, md.net);
    if (s == STRIX_OK) s = strix_params_alloc(&md.ps);
    if (s == STRIX_OK) s = strix_params_init(&md.ps, 1337);

    strix_tensor x = {0}, dlogits = {0};
    int32_t *labels = NULL;
    strix_optimizer *opt = NULL;
    strix_loss_workspace ws;
    strix_loss_workspace_init(&ws, be);
    int64_t gshape[2] = {(int64_t)B, CLASSES};
    if (s == STRIX_OK) s = strix_tensor_new(be, md.ndim, md.shape, &x);
    if (s == STRIX_OK) s = strix_tensor_new(be, 2, gshape, &dlogits);
    if (s == STRIX_OK) s = strix_alloc(be, sizeof(int32_t) * B, (void **)&labels);
    strix_adamw_config adamw = strix_adamw_defaults(0.01f);
    if (s == STRIX_OK) s = strix_optimizer_adamw(&md.ps, &adamw, &opt);
    size_t n_in = (size_t)strix_tensor_numel(&x);
    float *host = malloc(sizeof(float) * n_in);
    int32_t *host_y = malloc(sizeof(int32_t) * B);
    if (s == STRIX_OK && (!host || !host_y)) s = strix_error(STRIX_ERR_ALLOC, "inputs");
    if (s == STRIX_OK) {
        strix_rng rng;
        strix_rng_seed(&rng, 1337);
        for (size_t i = 0; i < n_in; i++) host[i] = (float)strix_rng_normal(&rng);
        for (size_t i = 0; i < B; i++) host_y[i] = (int32_t)strix_rng_below(&rng, CLASSES);
        s = strix_copy(be, x.data, host, sizeof(float) * n_in, STRIX_COPY_H2D);
        if (s == STRIX_OK)
            s = strix_copy(be, labels, host_y, sizeof(int32_t) * B, STRIX_COPY_H2D);
    }

    int nc = md.net ? md.net->count : 0;
    if (nc > MAX_CHILDREN) nc = MAX_CHILDREN;
    enum { PH_ZERO, PH_FWD, PH_LOSS, PH_BWD, PH_OPT, PH_N };
    double *times = calloc((size_t)steps, sizeof(double));
    double *phase = calloc((size_t)steps * PH_N, sizeof(double));
    double *child = calloc((size_t)steps * 2 * MAX_CHILDREN, sizeof(double));
    if (s == STRIX_OK && (!times || !phase || !child)) s = strix_error(STRIX_ERR_ALLOC, "times");
    float loss = 0.0f;
    for (int step = 0; s == STRIX_OK && step < warmup + steps; step++) {
        int k = step - warmup;
        double t[PH_N + 1];
        const strix_tensor *cur = &x;
        t[0] = bench_now_s();
        s = strix_params_zero_grad(&md.ps);
        if (profile && s == STRIX_OK) s = strix_sync(be);
        t[1] = bench_now_s();
        if (!profile) {
            if (s == STRIX_OK) s = strix_module_forward(&md.net->base, &x, &cur);
        } else {
            for (int i = 0; s == STRIX_OK && i < nc; i++) {
                double c0 = bench_now_s();
                s = strix_module_forward(strix_sequential_at(md.net, i), cur, &cur);
                if (s == STRIX_OK) s = strix_sync(be);
                if (k >= 0) child[((size_t)k * 2) * MAX_CHILDREN + (size_t)i] = bench_now_s() - c0;
            }
        }
        t[2] = bench_now_s();
        if (s == STRIX_OK)
            s = strix_cross_entropy_loss(&ws, cur->data, labels, B, CLASSES,
                                         STRIX_REDUCTION_MEAN, 0.0f, dlogits.data, 1.0f, &loss);
        t[3] = bench_now_s();
        const strix_tensor *g = &dlogits;
        if (!profile) {
            if (s == STRIX_OK) s = strix_module_backward(&md.net->base, &dlogits, &g);
        } else {
            for (int i = nc - 1; s == STRIX_OK && i >= 0; i--) {
                double c0 = bench_now_s();
                s = strix_module_backward(strix_sequential_at(md.net, i), g, &g);
                if (s == STRIX_OK) s = strix_sync(be);
                if (k >= 0)
                    child[((size_t)k * 2 + 1) * MAX_CHILDREN + (size_t)i] = bench_now_s() - c0;
            }
        }
        t[4] = bench_now_s();
        if (s == STRIX_OK) s = strix_optimizer_step(opt, 1e-3f);
        if (s == STRIX_OK) s = strix_sync(be);
        t[5] = bench_now_s();
        if (k >= 0) {
            times[k] = t[5] - t[0];
            for (int p = 0; p < PH_N; p++) phase[(size_t)p * steps + k] = t[p + 1] - t[p];
        }
    }
    if (s == STRIX_OK) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("strix %s %s threads %d ms/step %.3f maxrss_mb %.0f loss %.4f\n", backend,
               md.name, strix_get_num_threads(), 1e3 * bench_median(times, steps),
               (double)ru.ru_maxrss / 1024.0, loss);
        if (profile) {
            static const char *names[PH_N] = {"zero_grad", "forward", "loss", "backward",
                                              "optimizer"};
            for (int p = 0; p < PH_N; p++)
                printf("  %-10s %8.3f ms\n", names[p], 1e3 * bench_median(phase + (size_t)p * steps,
                                                                    steps));
            double *tmp = malloc(sizeof(double) * (size_t)steps);
            for (int i = 0; tmp && i < nc; i++) {
                double med[2];
                for (int dir = 0; dir < 2; dir++) {
                    for (int k = 0; k < steps; k++)
                        tmp[k] = child[((size_t)k * 2 + (size_t)dir) * MAX_CHILDREN + (size_t)i];
                    med[dir] = bench_median(tmp, steps);
                }
                printf("  child %2d %-12s forward %8.3f ms  backward %8.3f ms\n", i,
                       strix_sequential_at(md.net, i)->vt->type, 1e3 * med[0], 1e3 * med[1]);
            }
            free(tmp);
        }
        fflush(stdout);
    }
    free(times);
    free(phase);
    free(child);
    free(host);
    free(host_y);
    strix_optimizer_free(opt);
    strix_loss_workspace_free(&ws);
    strix_free(be, labels);
    strix_tensor_free(&x);
    strix_tensor_free(&dlogits);
    strix_module_free(md.net ? &md.net->base : NULL);
    strix_params_free(&md.ps);
    return s;
}

int main(int argc, char **argv) {
    const char *backend = "cpu", *which = "both";
    int steps = 40, warmup = 5, threads = 2;
    bool profile = false;
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "--profile")) {
            profile = true;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bench_zoo: %s needs a value\n", k);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(k, "--backend")) backend = v;
        else if (!strcmp(k, "--model")) which = v;
        else if (!strcmp(k, "--steps")) steps = atoi(v);
        else if (!strcmp(k, "--warmup-steps")) warmup = atoi(v);
        else if (!strcmp(k, "--threads")) threads = atoi(v);
        else { fprintf(stderr, "bench_zoo: unknown flag %s\n", k); return 2; }
    }
    if (steps < 1) steps = 1;
    if (warmup < 0) warmup = 0;
    strix_set_num_threads(threads);
    strix_backend *be;
    if (strix_backend_init(backend, &be) != STRIX_OK) {
        fprintf(stderr, "bench_zoo: backend %s: %s\n", backend, strix_last_error());
        return 1;
    }
    int rc = 0;
    for (int cnn = 0; cnn < 2 && rc == 0; cnn++) {
        if (strcmp(which, "both") && strcmp(which, cnn ? "cnn" : "mlp")) continue;
        if (bench(be, backend, cnn, steps, warmup, profile) != STRIX_OK) {
            fprintf(stderr, "bench_zoo: %s: %s\n", cnn ? "cnn" : "mlp", strix_last_error());
            rc = 1;
        }
    }
    strix_backend_free(be);
    return rc;
}
