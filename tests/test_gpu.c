/*
 * test_gpu.c - the GPU backends ("cuda", "hip") as a whole: memory, GEMM engines, errors, and a
 * GPT trained on the GPU against the CPU. Label "gpu". Exits 77 ("skipped", never "passed")
 * when no GPU backend opens: the build has none, or the machine has no such device. Runs every
 * test once per GPU backend that opens.
 *
 *  - memory: the caching allocator hands a freed block back for the next request of its class,
 *    free(NULL) is a no-op, copies in all four directions and fill round-trip exactly;
 *  - GEMM, own tiled kernel (init option STRIX_GPU_GEMM_OWN): bit-identical to the "cpu" backend's
 *    own kernel (both sum k ascending from 0, multiply then add) over odd shapes, all transposes,
 *    beta 0 (a NaN-filled C must not leak), beta != 0, k == 0, and the strided batched form with
 *    alpha and padded leading dimensions;
 *  - GEMM, vendor BLAS (default): the CPU's result to 1e-5 abs + 1e-4 rel, beta 0 never reads C;
 *  - device names: cuda:99 / hip:99 and malformed names are STRIX_ERR_ARG;
 *  - GPT (config A with 2 layers on tinyshakespeare, B 16, T 64, AdamW lr 1e-3, clip 1): 10 steps
 *    on the GPU give the CPU's losses within 1e-4, two GPU runs are bit-identical, and the
 *    allocator makes no device allocation after step 1;
 *  - a checkpoint saved on the GPU after step 5 and resumed on the CPU continues the same curve
 *    (steps 6..10 within 1e-4 of the GPU's and the CPU's uninterrupted runs).
 */
#define _POSIX_C_SOURCE 200809L /* getpid */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/backend_impl.h"
#include "strix/checkpoint.h"
#include "strix/data.h"
#include "strix/gpt.h"
#include "strix/gpt_train.h"
#include "strix/train.h"
#include "testlib.h"

#define OK(expr) assert_int_equal((expr), STRIX_OK)

static const char *const gpu_names[] = {"cuda", "hip"};

/* cmocka state: the name of the GPU backend under test. */
static const char *name_of(void **state) { return (const char *)*state; }

static strix_backend *open_named(const char *name) {
    strix_backend *be = NULL;
    strix_status s = strix_backend_init(name, &be);
    if (s != STRIX_OK) fprintf(stderr, "open %s: %s\n", name, strix_last_error());
    assert_int_equal(s, STRIX_OK);
    return be;
}

/* Opens the GPU backend with its GEMM slots on our own tiled kernel (init option). */
static strix_backend *open_own_gemm(const char *name) {
    strix_backend *be = NULL;
    strix_backend_options opt = {.gpu_gemm = STRIX_GPU_GEMM_OWN};
    strix_status s = strix_backend_init_ex(name, &opt, &be);
    if (s != STRIX_OK) fprintf(stderr, "open %s (own GEMM): %s\n", name, strix_last_error());
    assert_int_equal(s, STRIX_OK);
    return be;
}

// ---- memory ------------------------------------------------------------------------------------

static void test_memory(void **state) {
    strix_backend *be = open_named(name_of(state));
    strix_gpu_memstats st0, st1;
    assert_true(strix_gpu_memory_stats(be, &st0));
    void *a = NULL, *b = NULL;
    OK(strix_alloc(be, 1000 * sizeof(float), &a));
    strix_free(be, a);
    OK(strix_alloc(be, 999 * sizeof(float), &b)); /* same size class: the same block back */
    assert_ptr_equal(a, b);
    assert_true(strix_gpu_memory_stats(be, &st1));
    assert_int_equal(st1.device_mallocs, st0.device_mallocs + 1);
    assert_true(st1.in_use_bytes >= 1000 * sizeof(float));
    strix_free(be, NULL);

    enum { N = 4099 };
    float host[N], back[N], twice[N];
    tl_fill_uniform(host, N, 3, -2.0f, 2.0f);
    float *d1 = b, *d2 = NULL;
    float *d3 = tl_device_alloc(be, N * sizeof(float));
    OK(strix_alloc(be, N * sizeof(float), (void **)&d2));
    OK(strix_copy(be, d3, host, N * sizeof(float), STRIX_COPY_H2D));
    OK(strix_copy(be, d2, d3, N * sizeof(float), STRIX_COPY_D2D));
    OK(strix_copy(be, back, d2, N * sizeof(float), STRIX_COPY_D2H));
    assert_true(tl_check_bits("H2D, D2D, D2H", back, host, N));
    OK(strix_copy(be, twice, back, N * sizeof(float), STRIX_COPY_H2H));
    assert_true(tl_check_bits("H2H", twice, host, N));
    OK(strix_fill(be, d1, -0.25f, 999));
    OK(strix_copy(be, back, d1, 999 * sizeof(float), STRIX_COPY_D2H));
    for (int i = 0; i < 999; i++) assert_true(back[i] == -0.25f);
    OK(strix_sync(be));
    strix_free(be, d1);
    strix_free(be, d2);
    strix_free(be, d3);
    assert_true(strix_gpu_memory_stats(be, &st1));
    assert_int_equal(st1.in_use_bytes, 0);
    strix_backend_free(be);
}

// ---- device names ------------------------------------------------------------------------------

static void test_device_errors(void **state) {
    const char *name = name_of(state);
    char bad[32];
    strix_backend *be = NULL;
    snprintf(bad, sizeof bad, "%s:99", name);
    assert_int_equal(strix_backend_init(bad, &be), STRIX_ERR_ARG);
    assert_null(be);
    printf("  %s: %s\n", bad, strix_last_error());
    snprintf(bad, sizeof bad, "%s:x", name);
    assert_int_equal(strix_backend_init(bad, &be), STRIX_ERR_ARG);
    snprintf(bad, sizeof bad, "%s:", name);
    assert_int_equal(strix_backend_init(bad, &be), STRIX_ERR_ARG);
    snprintf(bad, sizeof bad, "%s:0", name);
    OK(strix_backend_init(bad, &be));
    assert_int_equal(strix_backend_device(be),
                     strcmp(name, "hip") == 0 ? STRIX_DEVICE_HIP : STRIX_DEVICE_CUDA);
    strix_backend_free(be);
}

// ---- GEMM --------------------------------------------------------------------------------------

/* One batched problem: sizes, transposes, padding of the leading dimensions, batch, alpha, beta. */
typedef struct gemm_case {
    size_t m, k, n;
    bool ta, tb;
    size_t pad, batch;
    float alpha, beta;
} gemm_case;

/* Runs case `gc` on `gpu` and on the CPU ("cpu": own kernel) from the same inputs; compares bits
 * (exact) or to 1e-5 abs + 1e-4 rel. With beta == 0 C starts as NaN on both. */
static bool check_gemm(strix_backend *gpu, strix_backend *cpu, const gemm_case *gc, bool exact,
                       uint64_t seed) {
    size_t ar = gc->ta ? gc->k : gc->m, ac = gc->ta ? gc->m : gc->k;
    size_t br = gc->tb ? gc->n : gc->k, bc = gc->tb ? gc->k : gc->n;
    strix_gemm_batch g = {.lda = ac + gc->pad, .ta = gc->ta, .ldb = bc + gc->pad, .tb = gc->tb,
                          .ldc = gc->n + gc->pad, .m = gc->m, .k = gc->k, .n = gc->n,
                          .batch = gc->batch, .alpha = gc->alpha, .beta = gc->beta};
    g.stride_a = ar * g.lda + 3;
    g.stride_b = br * g.ldb + 5;
    g.stride_c = gc->m * g.ldc + 7;
    size_t na = g.stride_a * gc->batch, nb = g.stride_b * gc->batch, nc = g.stride_c * gc->batch;
    float *a = tl_malloc_floats(na), *b = tl_malloc_floats(nb), *c = tl_malloc_floats(nc);
    float *want = tl_malloc_floats(nc), *got = tl_malloc_floats(nc);
    tl_fill_uniform(a, na, seed, -1.0f, 1.0f);
    tl_fill_uniform(b, nb, seed + 1, -1.0f, 1.0f);
    tl_fill_uniform(c, nc, seed + 2, -1.0f, 1.0f);
    if (gc->beta == 0.0f)
        for (size_t i = 0; i < nc; i++) c[i] = NAN;
    float *da = tl_upload(gpu, a, na * 4), *db = tl_upload(gpu, b, nb * 4);
    float *dc = tl_upload(gpu, c, nc * 4);
    memcpy(want, c, nc * 4);
    strix_gemm_batch host = g;
    host.a = a, host.b = b, host.c = want;
    OK(strix_gemm_batched(cpu, &host));
    g.a = da, g.b = db, g.c = dc;
    if (gc->batch == 1 && gc->alpha == 1.0f && gc->pad == 0)
        OK(strix_gemm_ex(gpu, da, gc->ta, db, gc->tb, dc, gc->m, gc->k, gc->n, gc->beta));
    else
        OK(strix_gemm_batched(gpu, &g));
    tl_download(gpu, got, dc, nc * 4);
    char label[160];
    snprintf(label, sizeof label, "%s gemm %zux%zux%zu ta %d tb %d pad %zu batch %zu a %g b %g",
             strix_backend_name(gpu), gc->m, gc->k, gc->n, gc->ta, gc->tb, gc->pad, gc->batch,
             gc->alpha, gc->beta);
    bool ok = exact ? tl_check_bits(label, got, want, nc)
                    : tl_check_close(label, got, want, nc, 1e-5, 1e-4);
    strix_free(gpu, da), strix_free(gpu, db), strix_free(gpu, dc);
    free(a), free(b), free(c), free(want), free(got);
    return ok;
}

static const size_t gemm_shapes[][3] = {
    {1, 1, 1}, {17, 23, 11}, {64, 64, 64}, {65, 129, 67}, {130, 1, 70},
    {3, 1037, 5}, {7, 0, 9}, {200, 300, 100},
};

static void run_gemm_cases(strix_backend *gpu, bool exact) {
    strix_backend *cpu = open_named("cpu");
    uint64_t seed = 11;
    int checked = 0;
    for (size_t s = 0; s < sizeof gemm_shapes / sizeof gemm_shapes[0]; s++) {
        for (int t = 0; t < 8; t++, checked++) {
            gemm_case gc = {gemm_shapes[s][0], gemm_shapes[s][1], gemm_shapes[s][2],
                            (t & 1) != 0, (t & 2) != 0, 0, 1, 1.0f, (t & 4) ? 0.5f : 0.0f};
            assert_true(check_gemm(gpu, cpu, &gc, exact, seed += 3));
        }
    }
    static const gemm_case batched[] = {
        {17, 33, 29, false, false, 3, 5, -2.0f, 1.0f}, {17, 33, 29, true, true, 1, 5, 0.125f, 0.0f},
        {64, 32, 64, true, false, 0, 7, 1.0f, 0.0f},  {19, 64, 21, false, true, 13, 3, 0.5f, 0.5f},
    };
    for (size_t i = 0; i < sizeof batched / sizeof batched[0]; i++, checked++)
        assert_true(check_gemm(gpu, cpu, &batched[i], exact, seed += 3));
    printf("  %s: %d GEMM cases %s the CPU\n", strix_backend_name(gpu), checked,
           exact ? "bit-identical to" : "close to");
    strix_backend_free(cpu);
}

static void test_gemm_own_kernel(void **state) {
    strix_backend *gpu = open_own_gemm(name_of(state));
    run_gemm_cases(gpu, true);
    strix_backend_free(gpu);
}

static void test_gemm_default(void **state) {
    strix_backend *gpu = open_named(name_of(state));
    run_gemm_cases(gpu, false);
    strix_backend_free(gpu);
}

// ---- GPT training ------------------------------------------------------------------------------

enum { STEPS = 10, SAVE_AT = 5, B = 16, T = 64 };
#define LOSS_TOL 1e-4

/* The data of every run: STEPS random batches of tinyshakespeare, drawn once. */
typedef struct gpt_data {
    strix_corpus corpus;
    int32_t ids[STEPS][B * T], tg[STEPS][B * T];
} gpt_data;
static gpt_data *DATA;

static int data_setup(void) {
    DATA = calloc(1, sizeof *DATA);
    if (!DATA || strix_corpus_load("../shared/data/tinyshakespeare.txt", &DATA->corpus) != STRIX_OK)
        return -1;
    strix_rng rng;
    strix_rng_seed(&rng, 1337);
    for (int s = 0; s < STEPS; s++)
        if (strix_corpus_batch_random(&DATA->corpus, STRIX_SPLIT_TRAIN, &rng, B, T, DATA->ids[s],
                                      DATA->tg[s]) != STRIX_OK)
            return -1;
    return 0;
}

static strix_gpt_config gpt_config(void) {
    strix_gpt_config c = strix_gpt_config_default();
    c.vocab_size = DATA->corpus.vocab.size;
    c.n_layer = 2;
    return c;
}

static strix_gpt *gpt_on(strix_backend *be) {
    strix_gpt_config c = gpt_config();
    strix_gpt *g = NULL;
    OK(strix_gpt_new(be, &c, &g));
    OK(strix_gpt_init_weights(g, 42));
    return g;
}

/* Batch `step` of the pre-drawn stream, as the trainer's caller-fed GPT batches. */
static strix_status data_next(void *user, int64_t step, int32_t *ids, int32_t *targets) {
    (void)user;
    memcpy(ids, DATA->ids[step], sizeof DATA->ids[step]);
    memcpy(targets, DATA->tg[step], sizeof DATA->tg[step]);
    return STRIX_OK;
}

/* Trainer steps [from, to) of the run (AdamW lr 1e-3, weight decay 0.1 with nanoGPT's groups,
 * clip 1, step t = s + 1), losses[s] for each. */
static void gpt_steps(strix_gpt *g, int from, int to, float *losses) {
    strix_train_config cfg = {.steps = STEPS, .lr = 1e-3f, .min_lr = 1e-3f,
                              .weight_decay = 0.1f, .clip = 1.0f, .adam_beta1 = 0.9f,
                              .adam_beta2 = 0.999f, .adam_eps = 1e-8f, .batch = B};
    strix_gpt_train_data d = {.batch = B, .seq_len = T, .next = data_next};
    strix_train_model model;
    strix_optimizer *opt;
    OK(strix_gpt_train_model(g, &d, &model));
    OK(strix_train_optimizer(model.params, &cfg, &opt));
    strix_optimizer_set_steps(opt, from); /* the moments are after `from` steps */
    for (int s = from; s < to; s++) {
        strix_train_step_result r;
        OK(strix_train_step(&cfg, &model, opt, NULL, s, &r));
        losses[s] = r.loss;
    }
    strix_optimizer_free(opt);
    strix_gpt_train_model_free(&model);
}

/* Uninterrupted run of STEPS steps on `be`; device_mallocs after step 1 and at the end. */
static void gpt_run(strix_backend *be, float *losses, size_t *mallocs_1, size_t *mallocs_end) {
    strix_gpt *g = gpt_on(be);
    strix_gpu_memstats st;
    gpt_steps(g, 0, 1, losses);
    strix_gpu_memory_stats(be, &st);
    *mallocs_1 = st.device_mallocs;
    gpt_steps(g, 1, STEPS, losses);
    strix_gpu_memory_stats(be, &st);
    *mallocs_end = st.device_mallocs;
    strix_gpt_free(g);
}

static void test_gpt_train(void **state) {
    strix_backend *gpu = open_named(name_of(state)), *cpu = open_named("cpu");
    float on_gpu[STEPS], again[STEPS], on_cpu[STEPS];
    size_t m1, m_end, unused;
    gpt_run(gpu, on_gpu, &m1, &m_end);
    gpt_run(gpu, again, &unused, &unused);
    gpt_run(cpu, on_cpu, &unused, &unused);
    for (int s = 0; s < STEPS; s++)
        printf("  step %2d  %s %.6f  cpu %.6f  diff %.2e\n", s + 1, strix_backend_name(gpu),
               on_gpu[s], on_cpu[s], fabs((double)on_gpu[s] - on_cpu[s]));
    printf("  device allocations: %zu after step 1, %zu after step %d\n", m1, m_end, STEPS);
    assert_true(tl_check_close("gpu vs cpu losses", on_gpu, on_cpu, STEPS, LOSS_TOL, 0.0));
    assert_true(tl_check_bits("two gpu runs", on_gpu, again, STEPS));
    assert_true(on_gpu[STEPS - 1] < on_gpu[0]);
    assert_int_equal(m_end, m1);
    strix_backend_free(cpu);
    strix_backend_free(gpu);
}

static strix_checkpoint_info info_for(const char *backend) {
    strix_checkpoint_info info;
    memset(&info, 0, sizeof info);
    strix_gpt_config c = gpt_config();
    info.model = strix_lm_config_of_gpt(&c);
    info.vocab = DATA->corpus.vocab;
    info.train.steps = STEPS;
    info.train.lr = 1e-3f;
    info.train.min_lr = 1e-3f;
    info.train.weight_decay = 0.1f;
    info.train.clip = 1.0f;
    info.train.adam_beta1 = 0.9f;
    info.train.adam_beta2 = 0.999f;
    info.train.adam_eps = 1e-8f;
    info.train.batch = B;
    info.train.seed = 1337;
    info.train.eval_every = SAVE_AT;
    info.train.eval_batches = 1;
    info.train.val_fraction = 0.1;
    info.train.stride = T;
    info.train.data_path = "../shared/data/tinyshakespeare.txt";
    info.train.backend = backend; /* borrowed: strix_backend_name's */
    info.state.step = SAVE_AT;
    info.state.val_loss = NAN;
    info.state.data_size = DATA->corpus.size;
    info.state.data_hash = DATA->corpus.hash;
    return info;
}

static void test_checkpoint_gpu_to_cpu(void **state) {
    strix_backend *gpu = open_named(name_of(state)), *cpu = open_named("cpu");
    float gpu_curve[STEPS], cpu_curve[STEPS], resumed[STEPS];
    size_t unused;
    gpt_run(gpu, gpu_curve, &unused, &unused);
    gpt_run(cpu, cpu_curve, &unused, &unused);

    char path[64];
    snprintf(path, sizeof path, "/tmp/strix_test_gpu_%d.safetensors", (int)getpid());
    strix_gpt *g = gpt_on(gpu);
    gpt_steps(g, 0, SAVE_AT, resumed);
    strix_checkpoint_info info = info_for(strix_backend_name(gpu));
    OK(strix_checkpoint_save(path, g, &info));
    strix_gpt_free(g);

    strix_checkpoint *ck = NULL;
    OK(strix_checkpoint_open(path, &ck));
    assert_int_equal(strix_checkpoint_info_of(ck)->state.step, SAVE_AT);
    strix_gpt *h = NULL;
    strix_gpt_config c = gpt_config();
    OK(strix_gpt_new(cpu, &c, &h));
    OK(strix_checkpoint_restore(ck, h, true));
    strix_checkpoint_close(ck);
    remove(path);
    gpt_steps(h, SAVE_AT, STEPS, resumed);
    strix_gpt_free(h);
    for (int s = SAVE_AT; s < STEPS; s++)
        printf("  step %2d  resumed on cpu %.6f  %s %.6f  cpu %.6f\n", s + 1, resumed[s],
               strix_backend_name(gpu), gpu_curve[s], cpu_curve[s]);
    assert_true(tl_check_bits("first steps before the save", resumed, gpu_curve, SAVE_AT));
    assert_true(tl_check_close("resumed vs gpu", resumed + SAVE_AT, gpu_curve + SAVE_AT,
                               STEPS - SAVE_AT, LOSS_TOL, 0.0));
    assert_true(tl_check_close("resumed vs cpu", resumed + SAVE_AT, cpu_curve + SAVE_AT,
                               STEPS - SAVE_AT, LOSS_TOL, 0.0));
    strix_backend_free(cpu);
    strix_backend_free(gpu);
}

// ---- main --------------------------------------------------------------------------------------

int main(void) {
    struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_device_errors),
        cmocka_unit_test(test_gemm_own_kernel),
        cmocka_unit_test(test_gemm_default),
        cmocka_unit_test(test_gpt_train),
        cmocka_unit_test(test_checkpoint_gpu_to_cpu),
    };
    size_t n = sizeof tests / sizeof tests[0];
    int opened = 0, failed = 0;
    for (size_t b = 0; b < sizeof gpu_names / sizeof gpu_names[0]; b++) {
        strix_backend *probe = NULL;
        if (strix_backend_init(gpu_names[b], &probe) != STRIX_OK) {
            printf("test_gpu: backend %s not available: %s\n", gpu_names[b], strix_last_error());
            continue;
        }
        strix_backend_free(probe);
        if (opened++ == 0 && data_setup() != 0) {
            fprintf(stderr, "test_gpu: cannot load ../shared/data/tinyshakespeare.txt (run from "
                            "the repository root)\n");
            return 1;
        }
        for (size_t i = 0; i < n; i++) tests[i].initial_state = (void *)gpu_names[b];
        char group[32];
        snprintf(group, sizeof group, "gpu on %s", gpu_names[b]);
        failed += _cmocka_run_group_tests(group, tests, n, NULL, NULL);
    }
    if (DATA) {
        strix_corpus_free(&DATA->corpus);
        free(DATA);
    }
    if (opened == 0) {
        printf("test_gpu: no GPU backend opened: skipped\n");
        return 77;
    }
    return failed ? 1 : 0;
}
