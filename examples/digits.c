/*
 * digits.c - the layer zoo on real data, end to end: the UCI handwritten digits (1,797 8x8 images
 * of 64 pixels 0..16) classified by an MLP and by a small CNN, trained with AdamW and
 * cross-entropy, evaluated in eval mode on a fixed held-out fifth.
 *
 *   MLP: Linear(64,128) ReLU Linear(128,64) ReLU Linear(64,10)                      (30 epochs)
 *   CNN: Conv2d(1,16,3,p1) BatchNorm2d ReLU MaxPool2d(2) -> Conv2d(16,32,3,p1) BatchNorm2d ReLU
 *        MaxPool2d(2) -> Flatten -> Linear(32*2*2,10), on 1x8x8 images               (20 epochs)
 *
 * Data: ../shared/data/digits.csv, one image per line: 64 comma-separated pixels, then the label.
 * Pixels are scaled to [0,1] (/16). Split: the row indices 0..n-1 are shuffled by Fisher-Yates
 * (i from n-1 down to 1, j = strix_rng_below(rng, i + 1), swap) with a strix_rng seeded with
 * SPLIT_SEED; the first n*4/5 rows of that order train (1,437), the rest test (360). The split
 * does not depend on --seed, which picks the initial weights and the batch order: each epoch
 * shuffles the training rows the same way, with one stream per model (strix_seed_derive(seed,
 * model), model 0 = MLP, 1 = CNN) that runs on across epochs; batches of 32, the last one short.
 * Optimizer: AdamW, lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01 on every parameter
 * (torch.optim.AdamW's defaults), constant learning rate; mean cross-entropy.
 * tools/ref/digits_torch.py trains the same models on the same split and batches in PyTorch.
 *
 * It prints each epoch's mean training loss, each model's test accuracy, and a checksum (FNV-1a 64
 * of the trained parameter blocks, buffers included): same seed and backend => same checksum,
 * whatever the thread count. Exit status: 0; 1 if the MLP's test accuracy is below 0.95 or the
 * CNN's below 0.97 (unless --no-gate) or the --deletion check fails; 2 for bad options, data or
 * a failing call.
 *
 * Explaining the CNN (LRP, strix/lrp.h) after training:
 *   --explain DIR  relevance of every pixel of the first 16 test digits for the predicted class,
 *                  with the Zennit composite of --composite (epsilon-plus, the default: z-plus on
 *                  both convs, epsilon 1e-6 on the Linear, BatchNorm folded into its conv; or
 *                  epsilon-gamma-box: z-box with the pixel bounds [0, 1] on the first conv,
 *                  gamma 0.25 on the second), written as SVG heatmaps: DIR/digits_lrp.svg (a
 *                  4x4 grid) and DIR/digit_00.svg ... digit_15.svg, each written atomically (a
 *                  full disk leaves the old file or none, never a partial one, and the error
 *                  names the reason). epsilon-plus gives positive
 *                  maps shaped like the strokes and the larger drop in the deletion check;
 *                  epsilon-gamma-box also marks evidence against the class (blue), spread wider.
 *   --deletion     a sanity check of the explanations (Samek et al. 2017, "pixel flipping"):
 *                  for every test digit, set its k most relevant pixels to 0 (k = 0..10) and
 *                  record the logit of the predicted class; the same with k random pixels.
 *                  Prints both mean curves and their areas (trapezoid over k); exits 1 unless
 *                  the relevance-ordered deletion lowers the logit more than random at k = 10.
 *
 * Usage (from the repository root):
 *   ./build/digits [--data PATH] [--epochs N] [--seed S] [--model mlp|cnn|both]
 *                  [--backend cpu|cpu-blas] [--threads N] [--save PATH] [--no-gate]
 *                  [--explain DIR] [--deletion] [--composite epsilon-plus|epsilon-gamma-box]
 * --epochs sets both models' epochs; --save writes the trained CNN's state dict (safetensors,
 * PyTorch names "0.weight" ... "9.bias"), which digits_torch.py --load-cnn evaluates in PyTorch.
 */
#define _POSIX_C_SOURCE 200809L // mkdir, clock_gettime

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "strix.h"
#include "strix/layers.h"
#include "strix/loss.h"
#include "strix/lrp.h"
#include "strix/state_dict.h"

// The colour map and SVG writer of the strix command's pictures (header-only, stdio).
#include "../tools/strix/explain/heatmap.h"

#define SPLIT_SEED 1337
#define PIXELS 64
#define CLASSES 10
#define BATCH 32
#define EXPLAINED 16   /* test digits drawn by --explain */
#define DELETE_MAX 10  /* pixels deleted by --deletion */

// Every strix call returns a status; on failure the message is in strix_last_error(). CHECK
// returns it to the caller, which reports it once (run_model, main).
#define CHECK(call) STRIX_TRY(call)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ---- data --------------------------------------------------------------------------------------

typedef struct dataset {
    int n;
    float *x;   /* (n, 64), pixels / 16 */
    int32_t *y; /* (n), labels 0..9 */
} dataset;

/* Reads the CSV (one image per line) into d. Returns 0, or 1 with a message on stderr. */
static int load_digits(const char *path, dataset *d) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "digits: cannot open %s: %s (run from the repository root, or pass "
                "--data PATH)\n", path, strerror(errno));
        return 1;
    }
    int cap = 0, bad = 0, line_no = 0;
    char line[1024];
    d->n = 0;
    while (!bad && fgets(line, sizeof line, f)) {
        line_no++;
        if (line[0] == '\n') continue;
        if (d->n == cap) {
            cap = cap ? 2 * cap : 2048;
            float *nx = realloc(d->x, sizeof(float) * PIXELS * (size_t)cap);
            if (nx) d->x = nx;
            int32_t *ny = realloc(d->y, sizeof(int32_t) * (size_t)cap);
            if (ny) d->y = ny;
            if (!nx || !ny) {
                fprintf(stderr, "digits: out of memory\n");
                bad = 1;
                break;
            }
        }
        const char *p = line;
        for (int k = 0; k <= PIXELS && !bad; k++) {
            char *end;
            long v = strtol(p, &end, 10);
            bool sep_ok = k < PIXELS ? *end == ',' : (*end == '\n' || *end == '\r' || !*end);
            if (end == p || !sep_ok || v < 0 || v > (k < PIXELS ? 16 : CLASSES - 1)) {
                fprintf(stderr, "digits: %s:%d: expected 64 pixels 0..16 and a label 0..9\n",
                        path, line_no);
                bad = 1;
            } else if (k < PIXELS) {
                d->x[(size_t)d->n * PIXELS + (size_t)k] = (float)v / 16.0f;
            } else {
                d->y[d->n] = (int32_t)v;
            }
            p = end + 1;
        }
        if (!bad) d->n++;
    }
    fclose(f);
    if (!bad && d->n < 10) {
        fprintf(stderr, "digits: %s: only %d images\n", path, d->n);
        bad = 1;
    }
    if (bad) {
        free(d->x);
        free(d->y);
        d->x = NULL;
        d->y = NULL;
    }
    return bad;
}

/* Fisher-Yates shuffle of perm[0..n) with `rng` (i from n-1 down to 1, j = below(i + 1)). */
static void shuffle(int *perm, int n, strix_rng *rng) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)strix_rng_below(rng, (uint64_t)i + 1);
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

// ---- models ------------------------------------------------------------------------------------

typedef enum model_kind { MODEL_MLP = 0, MODEL_CNN = 1 } model_kind;

/* A model: its parameter block and its Sequential (children "0", "1", ... as in PyTorch). */
typedef struct model {
    model_kind kind;
    strix_params ps;
    strix_sequential *net;
} model;

static strix_status build_mlp(model *md) {
    const int sizes[4] = {PIXELS, 128, 64, CLASSES};
    char name[STRIX_PARAM_NAME_MAX];
    for (int i = 0; i < 3; i++) {
        strix_linear *lin = NULL;
        CHECK(strix_sequential_child_name(md->net, name));
        CHECK(strix_linear_new_default(&md->ps, name, sizes[i], sizes[i + 1], true, &lin));
        CHECK(strix_sequential_add(md->net, &lin->base));
        if (i == 0) lin->need_input_grad = false; // nothing needs d(loss)/d(pixels)
        if (i == 2) break;
        strix_activation *relu = NULL;
        CHECK(strix_activation_new(md->ps.be, STRIX_ACT_RELU, &relu));
        CHECK(strix_sequential_add(md->net, &relu->base));
    }
    return STRIX_OK;
}

static strix_status build_cnn(model *md) {
    const int chans[3] = {1, 16, 32};
    char name[STRIX_PARAM_NAME_MAX];
    for (int i = 0; i < 2; i++) {
        strix_conv2d_config cc = {.in_channels = chans[i], .out_channels = chans[i + 1],
                                  .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1,
                                  .bias = true};
        strix_conv2d *conv = NULL;
        CHECK(strix_sequential_child_name(md->net, name));
        CHECK(strix_conv2d_new(&md->ps, name, &cc, &conv));
        CHECK(strix_sequential_add(md->net, &conv->base));
        if (i == 0) conv->need_input_grad = false;
        strix_batchnorm *bn = NULL;
        CHECK(strix_sequential_child_name(md->net, name));
        CHECK(strix_batchnorm2d_new(&md->ps, name, chans[i + 1], 1e-5f, 0.1f, &bn));
        CHECK(strix_sequential_add(md->net, &bn->base));
        strix_activation *relu = NULL;
        CHECK(strix_activation_new(md->ps.be, STRIX_ACT_RELU, &relu));
        CHECK(strix_sequential_add(md->net, &relu->base));
        strix_pool2d_config pc = {.kernel_h = 2, .kernel_w = 2};
        strix_maxpool2d *pool = NULL;
        CHECK(strix_maxpool2d_new(md->ps.be, &pc, &pool));
        CHECK(strix_sequential_add(md->net, &pool->base));
    }
    strix_flatten *flat = NULL;
    CHECK(strix_flatten_new(md->ps.be, 1, -1, &flat));
    CHECK(strix_sequential_add(md->net, &flat->base));
    strix_linear *lin = NULL;
    CHECK(strix_sequential_child_name(md->net, name));
    CHECK(strix_linear_new_default(&md->ps, name, 32 * 2 * 2, CLASSES, true, &lin));
    CHECK(strix_sequential_add(md->net, &lin->base));
    return STRIX_OK;
}

/* Builds the model, lays out its parameter block and draws the initial weights from `seed`. */
static strix_status model_new(strix_backend *be, model_kind kind, uint64_t seed, model *md) {
    md->kind = kind;
    strix_params_init_empty(&md->ps, be);
    CHECK(strix_sequential_new(be, "", &md->net));
    CHECK(kind == MODEL_MLP ? build_mlp(md) : build_cnn(md));
    CHECK(strix_params_alloc(&md->ps));
    CHECK(strix_params_init(&md->ps, seed));
    return STRIX_OK;
}

static void model_free(model *md) {
    strix_module_free(md->net ? &md->net->base : NULL);
    strix_params_free(&md->ps);
}

// ---- training and evaluation -------------------------------------------------------------------

/* Device-side batch buffers, grown on first use. */
typedef struct batch_buf {
    strix_backend *be;
    strix_tensor x, dlogits;
    int32_t *y;   /* backend memory, `cap` labels */
    size_t cap;
    float *host_x;
    int32_t *host_y;
} batch_buf;

/* Uploads rows rows[0..b) of d as the input tensor (b, 64) or (b, 1, 8, 8), and their labels. */
static strix_status upload(batch_buf *bb, const dataset *d, const int *rows, int b,
                           model_kind kind, strix_tensor *x_view) {
    if ((size_t)b > bb->cap) {
        strix_free(bb->be, bb->y);
        bb->y = NULL;
        free(bb->host_x);
        free(bb->host_y);
        bb->host_x = malloc(sizeof(float) * PIXELS * (size_t)b);
        bb->host_y = malloc(sizeof(int32_t) * (size_t)b);
        bb->cap = 0;
        if (!bb->host_x || !bb->host_y) return strix_error(STRIX_ERR_ALLOC, "batch buffers");
        CHECK(strix_alloc(bb->be, sizeof(int32_t) * (size_t)b, (void **)&bb->y));
        bb->cap = (size_t)b;
    }
    for (int i = 0; i < b; i++) {
        memcpy(bb->host_x + (size_t)i * PIXELS, d->x + (size_t)rows[i] * PIXELS,
               sizeof(float) * PIXELS);
        bb->host_y[i] = d->y[rows[i]];
    }
    int64_t shape2[2] = {b, PIXELS};
    CHECK(strix_tensor_ensure(bb->be, &bb->x, 2, shape2));
    CHECK(strix_copy(bb->be, bb->x.data, bb->host_x, sizeof(float) * PIXELS * (size_t)b,
                     STRIX_COPY_H2D));
    CHECK(strix_copy(bb->be, bb->y, bb->host_y, sizeof(int32_t) * (size_t)b, STRIX_COPY_H2D));
    if (kind == MODEL_CNN) {
        int64_t shape4[4] = {b, 1, 8, 8};
        *x_view = strix_tensor_view(bb->x.data, bb->x.device, 4, shape4);
    } else {
        *x_view = strix_tensor_view(bb->x.data, bb->x.device, 2, shape2);
    }
    return STRIX_OK;
}

/* Test accuracy in eval mode: one forward over all `n` rows, argmax on the host (first max). */
static strix_status evaluate(model *md, batch_buf *bb, const dataset *d, const int *rows, int n,
                             int *correct) {
    strix_tensor x;
    strix_module_set_training(&md->net->base, false);
    CHECK(upload(bb, d, rows, n, md->kind, &x));
    const strix_tensor *logits;
    CHECK(strix_module_forward(&md->net->base, &x, &logits));
    float *host = malloc(sizeof(float) * CLASSES * (size_t)n);
    if (!host) return strix_error(STRIX_ERR_ALLOC, "logits");
    strix_status s = strix_copy(md->ps.be, host, logits->data,
                                sizeof(float) * CLASSES * (size_t)n, STRIX_COPY_D2H);
    *correct = 0;
    for (int i = 0; s == STRIX_OK && i < n; i++) {
        const float *row = host + (size_t)i * CLASSES;
        int best = 0;
        for (int c = 1; c < CLASSES; c++)
            if (row[c] > row[best]) best = c;
        *correct += best == d->y[rows[i]];
    }
    free(host);
    strix_module_set_training(&md->net->base, true);
    return s;
}

/* FNV-1a 64 of the whole parameter block (parameters and buffers), continuing from *h. */
static strix_status checksum(const strix_params *ps, uint64_t *h) {
    float *host = malloc(sizeof(float) * (ps->total ? ps->total : 1));
    if (!host) return strix_error(STRIX_ERR_ALLOC, "checksum");
    strix_status s = strix_copy(ps->be, host, ps->data, sizeof(float) * ps->total,
                                STRIX_COPY_D2H);
    if (s == STRIX_OK) *h = strix_fnv1a64(*h, host, sizeof(float) * ps->total);
    free(host);
    return s;
}

// ---- explanations (LRP) ------------------------------------------------------------------------

/* What to do with the trained CNN after its evaluation (--explain, --deletion). */
typedef struct explain_opts {
    const char *dir;                     /* --explain DIR, or NULL */
    bool deletion;                       /* --deletion */
    strix_lrp_composite_kind composite;  /* EPSILON_PLUS or EPSILON_GAMMA_BOX */
    const char *composite_name;
    uint64_t seed;                       /* the random deletion order derives from it */
    bool deletion_failed;                /* set when the deletion check fails */
} explain_opts;

/* logits (n, 10), host = CNN(host_x (n, 64) as (n, 1, 8, 8)) in eval mode. */
static strix_status forward_host(model *md, batch_buf *bb, const float *host_x, int n,
                                 float *logits) {
    int64_t shape2[2] = {n, PIXELS}, shape4[4] = {n, 1, 8, 8};
    CHECK(strix_tensor_ensure(bb->be, &bb->x, 2, shape2));
    CHECK(strix_copy(bb->be, bb->x.data, host_x, sizeof(float) * PIXELS * (size_t)n,
                     STRIX_COPY_H2D));
    strix_tensor x = strix_tensor_view(bb->x.data, bb->x.device, 4, shape4);
    const strix_tensor *out;
    strix_module_set_training(&md->net->base, false);
    strix_status s = strix_module_forward(&md->net->base, &x, &out);
    if (s == STRIX_OK)
        s = strix_copy(md->ps.be, logits, out->data, sizeof(float) * CLASSES * (size_t)n,
                       STRIX_COPY_D2H);
    strix_module_set_training(&md->net->base, true);
    return s;
}

/* Writes n digits beside their relevance maps to `path` (cols pairs per row): drawn into memory,
 * then written like a checkpoint (strix_write_file_atomic: temp file, fsync, rename), so a failed
 * write leaves no partial picture and its error says why ("No space left on device"). */
static strix_status write_svg(const char *path, const heatmap_item *items, int n, int cols,
                              const char *title) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) return strix_error(STRIX_ERR_ALLOC, "out of memory drawing %s", path);
    int bad = heatmap_svg_write(mem, items, n, 8, 8, 1.0f, cols, 14, title);
    bad |= fclose(mem) != 0;
    strix_status s = bad ? strix_error(STRIX_ERR_ALLOC, "out of memory drawing %s", path)
                         : STRIX_OK;
    if (s == STRIX_OK) {
        const void *chunks[1] = {buf};
        size_t sizes[1] = {len};
        s = strix_write_file_atomic(path, chunks, sizes, 1);
    }
    free(buf);
    return s;
}

/* The first EXPLAINED test digits and their relevance: DIR/digits_lrp.svg (a 4x4 grid) and
 * DIR/digit_NN.svg (one each). */
static strix_status write_heatmaps(const explain_opts *o, const dataset *d, const int *test,
                                   int n_test, const strix_lrp_explanation *ex) {
    if (mkdir(o->dir, 0777) != 0 && errno != EEXIST)
        return strix_error(STRIX_ERR_IO, "cannot create %s: %s", o->dir, strerror(errno));
    int n = n_test < EXPLAINED ? n_test : EXPLAINED;
    heatmap_item items[EXPLAINED] = {{0}};
    char captions[EXPLAINED][64], path[4096], title[128];
    for (int k = 0; k < n; k++) {
        int label = d->y[test[k]], pred = ex->predicted[k];
        snprintf(captions[k], sizeof captions[k], "#%d: label %d, predicted %d%s", k, label, pred,
                 label == pred ? "" : " (wrong)");
        items[k] = (heatmap_item){d->x + (size_t)test[k] * PIXELS,
                                  ex->relevance + (size_t)k * PIXELS, captions[k]};
    }
    snprintf(title, sizeof title, "digits CNN, LRP %s: pixels | relevance for the predicted class",
             o->composite_name);
    snprintf(path, sizeof path, "%s/digits_lrp.svg", o->dir);
    CHECK(write_svg(path, items, n, 4, title));
    for (int k = 0; k < n; k++) {
        snprintf(path, sizeof path, "%s/digit_%02d.svg", o->dir, k);
        snprintf(title, sizeof title, "test image #%d, LRP %s", k, o->composite_name);
        CHECK(write_svg(path, &items[k], 1, 1, title));
    }
    printf("cnn: heatmaps of %d test digits written to %s/digits_lrp.svg and %s/digit_NN.svg\n",
           n, o->dir, o->dir);
    return STRIX_OK;
}

/* Pixel flipping: the mean logit of each digit's predicted class after setting its k most
 * relevant (curve 0) or k random (curve 1) pixels to 0, k = 0..DELETE_MAX. */
static strix_status deletion_check(model *md, batch_buf *bb, const dataset *d, const int *test,
                                   int n, const strix_lrp_explanation *ex, explain_opts *o) {
    size_t np = (size_t)n * PIXELS;
    float *xs[2] = {malloc(sizeof(float) * np), malloc(sizeof(float) * np)};
    int *orders[2] = {malloc(sizeof(int) * np), malloc(sizeof(int) * np)};
    float *logits = malloc(sizeof(float) * CLASSES * (size_t)n);
    strix_status s = xs[0] && xs[1] && orders[0] && orders[1] && logits
                         ? STRIX_OK
                         : strix_error(STRIX_ERR_ALLOC, "deletion buffers");
    double curve[2][DELETE_MAX + 1];
    strix_rng rng;
    strix_rng_seed(&rng, strix_seed_derive(o->seed, 7));
    for (int i = 0; s == STRIX_OK && i < n; i++) {
        const float *r = ex->relevance + (size_t)i * PIXELS;
        int *rel = orders[0] + (size_t)i * PIXELS, *rnd = orders[1] + (size_t)i * PIXELS;
        // insertion sort by descending relevance; ties keep the lower pixel index first
        for (int p = 0; p < PIXELS; p++) {
            int q = p;
            while (q > 0 && r[rel[q - 1]] < r[p]) {
                rel[q] = rel[q - 1];
                q--;
            }
            rel[q] = p;
            rnd[p] = p;
        }
        shuffle(rnd, PIXELS, &rng);
        for (int c = 0; c < 2; c++)
            memcpy(xs[c] + (size_t)i * PIXELS, d->x + (size_t)test[i] * PIXELS,
                   sizeof(float) * PIXELS);
    }
    for (int k = 0; s == STRIX_OK && k <= DELETE_MAX; k++) {
        for (int c = 0; s == STRIX_OK && c < 2; c++) {
            if (k > 0)
                for (int i = 0; i < n; i++)
                    xs[c][(size_t)i * PIXELS + (size_t)orders[c][(size_t)i * PIXELS + k - 1]] = 0;
            s = forward_host(md, bb, xs[c], n, logits);
            double sum = 0.0;
            for (int i = 0; i < n; i++) sum += logits[(size_t)i * CLASSES + ex->predicted[i]];
            curve[c][k] = sum / n;
        }
    }
    if (s == STRIX_OK) {
        printf("cnn: deletion of pixels (set to 0) over %d test digits: mean logit of the "
               "predicted class\n   k   most relevant first   random\n", n);
        double area[2] = {0.0, 0.0};
        for (int k = 0; k <= DELETE_MAX; k++) {
            printf("  %2d   %19.4f   %6.4f\n", k, curve[0][k], curve[1][k]);
            for (int c = 0; c < 2 && k > 0; c++) area[c] += 0.5 * (curve[c][k - 1] + curve[c][k]);
        }
        printf("cnn: deletion curve areas (trapezoid, k = 0..%d; lower = more faithful): "
               "relevance %.4f, random %.4f\n", DELETE_MAX, area[0], area[1]);
        o->deletion_failed = !(curve[0][DELETE_MAX] < curve[1][DELETE_MAX]);
        if (o->deletion_failed)
            fprintf(stderr, "digits: deleting the %d most relevant pixels lowered the logit less "
                            "than deleting %d random ones (%.4f vs %.4f)\n", DELETE_MAX,
                    DELETE_MAX, curve[0][DELETE_MAX], curve[1][DELETE_MAX]);
    }
    for (int c = 0; c < 2; c++) {
        free(xs[c]);
        free(orders[c]);
    }
    free(logits);
    return s;
}

/* LRP of the trained CNN over the test set with the composite of `o`, then --explain and
 * --deletion. */
static strix_status explain_cnn(model *md, batch_buf *bb, const dataset *d, const int *test,
                                int n_test, explain_opts *o) {
    // z-box bounds: the pixels lie in [0, 1]; gamma 0.25 and epsilon 1e-6 as Zennit's defaults
    strix_lrp_rule rule = o->composite == STRIX_COMPOSITE_EPSILON_GAMMA_BOX
                              ? strix_lrp_zbox(0.0f, 1.0f)
                              : strix_lrp_epsilon(1e-6f);
    rule.epsilon = 1e-6f;
    rule.gamma = 0.25f;
    strix_lrp_composite comp = {.kind = o->composite, .rule = rule};
    CHECK(strix_lrp_assign(&md->net->base, &comp));
    strix_tensor x;
    CHECK(upload(bb, d, test, n_test, MODEL_CNN, &x));
    strix_lrp_explanation ex = {0};
    CHECK(strix_lrp_explain(&md->net->base, &x, NULL, &ex));
    printf("cnn: LRP (%s) of %d test digits, relevance of the predicted logits: output sum "
           "%.4f, input sum %.4f\n", o->composite_name, n_test, ex.relevance_out_sum,
           ex.relevance_in_sum);
    strix_status s = o->dir ? write_heatmaps(o, d, test, n_test, &ex) : STRIX_OK;
    if (s == STRIX_OK && o->deletion) s = deletion_check(md, bb, d, test, n_test, &ex, o);
    strix_lrp_explanation_free(&ex);
    return s;
}

/* Trains model `kind` for `epochs` epochs and evaluates it; *acc gets the test accuracy. With
 * `xo` (CNN only), explains the trained model afterwards. */
static strix_status run_model(strix_backend *be, model_kind kind, uint64_t seed, int epochs,
                              const dataset *d, const int *train, int n_train, const int *test,
                              int n_test, const char *save, explain_opts *xo, double *acc,
                              uint64_t *hash) {
    const char *label = kind == MODEL_MLP ? "mlp" : "cnn";
    double t0 = now_s();
    model md = {0};
    batch_buf bb = {.be = be};
    strix_loss_workspace ws;
    strix_loss_workspace_init(&ws, be);
    strix_optimizer *opt = NULL;
    int *order = malloc(sizeof(int) * (size_t)n_train);
    int *rows = malloc(sizeof(int) * BATCH);
    strix_status s = order && rows ? STRIX_OK : strix_error(STRIX_ERR_ALLOC, "batch order");
    if (s == STRIX_OK) s = model_new(be, kind, strix_seed_derive(seed, 100 + kind), &md);
    strix_adamw_config adamw = strix_adamw_defaults(0.01f);
    if (s == STRIX_OK) s = strix_optimizer_adamw(&md.ps, &adamw, &opt);
    strix_rng rng;
    strix_rng_seed(&rng, strix_seed_derive(seed, kind));
    for (int epoch = 0; s == STRIX_OK && epoch < epochs; epoch++) {
        for (int i = 0; i < n_train; i++) order[i] = i;
        shuffle(order, n_train, &rng);
        double loss_sum = 0.0;
        for (int b0 = 0; s == STRIX_OK && b0 < n_train; b0 += BATCH) {
            int b = n_train - b0 < BATCH ? n_train - b0 : BATCH;
            for (int i = 0; i < b; i++) rows[i] = train[order[b0 + i]];
            strix_tensor x;
            const strix_tensor *logits, *dx;
            int64_t gshape[2] = {b, CLASSES};
            float loss = 0.0f;
            s = upload(&bb, d, rows, b, kind, &x);
            if (s == STRIX_OK) s = strix_params_zero_grad(&md.ps);
            if (s == STRIX_OK) s = strix_module_forward(&md.net->base, &x, &logits);
            if (s == STRIX_OK) s = strix_tensor_ensure(be, &bb.dlogits, 2, gshape);
            if (s == STRIX_OK)
                s = strix_cross_entropy_loss(&ws, logits->data, bb.y, (size_t)b, CLASSES,
                                             STRIX_REDUCTION_MEAN, 0.0f, bb.dlogits.data, 1.0f,
                                             &loss);
            if (s == STRIX_OK) s = strix_module_backward(&md.net->base, &bb.dlogits, &dx);
            if (s == STRIX_OK) s = strix_optimizer_step(opt, 1e-3f);
            loss_sum += (double)loss * b;
        }
        if (s == STRIX_OK)
            printf("%s epoch %3d  train loss %.4f\n", label, epoch + 1, loss_sum / n_train);
    }
    int correct = 0;
    if (s == STRIX_OK) s = evaluate(&md, &bb, d, test, n_test, &correct);
    uint64_t h = STRIX_FNV1A_INIT;
    if (s == STRIX_OK) s = checksum(&md.ps, &h);
    if (s == STRIX_OK) {
        *acc = (double)correct / n_test;
        *hash = strix_fnv1a64(*hash, &h, sizeof h);
        printf("%s: test accuracy %.4f (%d/%d), %.1f s, parameters fnv %016llx\n", label, *acc,
               correct, n_test, now_s() - t0, (unsigned long long)h);
    }
    if (s == STRIX_OK && save) {
        s = strix_state_dict_save(&md.ps, save);
        if (s == STRIX_OK) printf("%s: state dict written to %s\n", label, save);
    }
    if (s == STRIX_OK && xo && (xo->dir || xo->deletion))
        s = explain_cnn(&md, &bb, d, test, n_test, xo);
    if (s != STRIX_OK) fprintf(stderr, "digits: %s: %s\n", label, strix_last_error());
    free(order);
    free(rows);
    strix_optimizer_free(opt);
    strix_loss_workspace_free(&ws);
    strix_tensor_free(&bb.x);
    strix_tensor_free(&bb.dlogits);
    strix_free(be, bb.y);
    free(bb.host_x);
    free(bb.host_y);
    model_free(&md);
    return s;
}

// ---- main --------------------------------------------------------------------------------------

#define USAGE                                                                                  \
    "usage: digits [--data PATH] [--epochs N] [--seed S] [--model mlp|cnn|both]\n"             \
    "              [--backend cpu|cpu-blas] [--threads N] [--save PATH] [--no-gate]\n"          \
    "              [--explain DIR] [--deletion] [--composite epsilon-plus|epsilon-gamma-box]\n" \
    "Trains an MLP (30 epochs) and a CNN (20 epochs) on the 8x8 digits, prints their test\n"    \
    "accuracy and exits 1 below 0.95 / 0.97 (--no-gate: never; shorter --epochs may miss\n"     \
    "the bars). --explain DIR draws LRP heatmaps of 16 test images (digits_lrp.svg and\n"      \
    "digit_00..15.svg); --deletion runs the pixel-deletion check.\n"

static int usage(const char *msg) {
    fprintf(stderr, "digits: %s (see digits --help)\n", msg);
    return 2;
}

int main(int argc, char **argv) {
    const char *data = "../shared/data/digits.csv", *backend = "cpu", *which = "both";
    const char *save = NULL, *composite = "epsilon-plus";
    int epochs = 0, threads = 0;
    bool epochs_given = false;
    unsigned long long seed = 0;
    bool gate = true;
    explain_opts xo = {0};
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i];
        if (!strcmp(k, "--help") || !strcmp(k, "-h")) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (!strcmp(k, "--no-gate") || !strcmp(k, "--deletion")) {
            if (!strcmp(k, "--no-gate")) gate = false;
            else xo.deletion = true;
            continue;
        }
        if (i + 1 >= argc) return usage("missing value or unknown flag");
        const char *v = argv[++i];
        char *end = NULL;
        if (!strcmp(k, "--data")) data = v;
        else if (!strcmp(k, "--backend")) backend = v;
        else if (!strcmp(k, "--model")) which = v;
        else if (!strcmp(k, "--save")) save = v;
        else if (!strcmp(k, "--explain")) xo.dir = v;
        else if (!strcmp(k, "--composite")) composite = v;
        else if (!strcmp(k, "--epochs")) epochs = (int)strtol(v, &end, 10), epochs_given = true;
        else if (!strcmp(k, "--threads")) threads = (int)strtol(v, &end, 10);
        else if (!strcmp(k, "--seed")) seed = strtoull(v, &end, 10);
        else return usage("unknown flag");
        if (end && (*end || end == v)) return usage("not a number");
    }
    bool run_mlp = !strcmp(which, "mlp") || !strcmp(which, "both");
    bool run_cnn = !strcmp(which, "cnn") || !strcmp(which, "both");
    if (!run_mlp && !run_cnn) return usage("--model takes mlp, cnn or both");
    if (epochs < 0 || threads < 0) return usage("--epochs and --threads take counts >= 0");
    if (epochs == 0 && epochs_given)
        return usage("--epochs must be at least 1");
    if (save && !run_cnn) return usage("--save writes the CNN: use --model cnn or both");
    if ((xo.dir || xo.deletion) && !run_cnn)
        return usage("--explain and --deletion explain the CNN: use --model cnn or both");
    if (xo.dir && !xo.dir[0]) return usage("--explain needs a directory");
    if (xo.dir && mkdir(xo.dir, 0777) != 0 && errno != EEXIST) { /* fail before training */
        fprintf(stderr, "digits: cannot create the --explain directory '%s': %s\n", xo.dir,
                strerror(errno));
        return 2;
    }
    if (!strcmp(composite, "epsilon-gamma-box"))
        xo.composite = STRIX_COMPOSITE_EPSILON_GAMMA_BOX;
    else if (!strcmp(composite, "epsilon-plus"))
        xo.composite = STRIX_COMPOSITE_EPSILON_PLUS;
    else
        return usage("--composite takes epsilon-plus or epsilon-gamma-box");
    xo.composite_name = composite;
    xo.seed = seed;
    if (threads > 0) strix_set_num_threads(threads);

    dataset d = {0};
    if (load_digits(data, &d)) return 2;
    int *perm = malloc(sizeof(int) * (size_t)d.n);
    if (!perm) return 2;
    for (int i = 0; i < d.n; i++) perm[i] = i;
    strix_rng split_rng;
    strix_rng_seed(&split_rng, SPLIT_SEED);
    shuffle(perm, d.n, &split_rng);
    int n_train = d.n * 4 / 5, n_test = d.n - n_train;
    printf("digits: %d images, %d train, %d test; backend %s, %d threads, seed %llu\n", d.n,
           n_train, n_test, backend, strix_get_num_threads(), seed);

    strix_backend *be = NULL;
    int rc = 0;
    if (strix_backend_init(backend, &be) != STRIX_OK) {
        fprintf(stderr, "digits: backend %s: %s\n", backend, strix_last_error());
        rc = 2;
    }
    double acc_mlp = 0.0, acc_cnn = 0.0;
    uint64_t hash = STRIX_FNV1A_INIT;
    if (rc == 0 && run_mlp &&
        run_model(be, MODEL_MLP, seed, epochs ? epochs : 30, &d, perm, n_train, perm + n_train,
                  n_test, NULL, NULL, &acc_mlp, &hash) != STRIX_OK)
        rc = 2;
    if (rc == 0 && run_cnn &&
        run_model(be, MODEL_CNN, seed, epochs ? epochs : 20, &d, perm, n_train, perm + n_train,
                  n_test, save, &xo, &acc_cnn, &hash) != STRIX_OK)
        rc = 2;
    if (rc == 0) {
        printf("checksum %016llx\n", (unsigned long long)hash);
        if (gate && run_mlp && acc_mlp < 0.95) {
            fprintf(stderr, "digits: MLP test accuracy %.4f is below 0.95\n", acc_mlp);
            rc = 1;
        }
        if (gate && run_cnn && acc_cnn < 0.97) {
            fprintf(stderr, "digits: CNN test accuracy %.4f is below 0.97\n", acc_cnn);
            rc = 1;
        }
        if (xo.deletion_failed) rc = 1; // the message was printed by deletion_check
    }
    strix_backend_free(be);
    free(perm);
    free(d.x);
    free(d.y);
    return rc;
}
