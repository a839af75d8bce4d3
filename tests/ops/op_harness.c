/*
 * op_harness.c - the plumbing and the golden harness of the op tests (tests/ops/op_harness.h).
 */
#include "ops/op_harness.h"
#include "backends/cpu/cpu_internal.h" /* cpu_set_parallel_min_work: force loops parallel */

#define GOLDEN_DIR "tests/golden/ops/"

// ---- runner plumbing ---------------------------------------------------------------------------

void *keep(op_run *run, void *device) {
    assert_true(run->buffer_count < MAX_BUFFERS);
    run->buffers[run->buffer_count++] = device;
    return device;
}

const tl_array *need(op_run *run, const char *name) {
    const tl_array *a = tl_golden_get(run->g, name);
    assert_non_null(a);
    return a;
}

size_t count_of(op_run *run, const char *name) { return need(run, name)->count; }

float scalar(op_run *run, const char *name) { return need(run, name)->data[0]; }

/* Golden array `name` uploaded to the backend. */
float *input(op_run *run, const char *name) {
    const tl_array *a = need(run, name);
    return keep(run, tl_upload(run->be, a->data, a->count * sizeof(float)));
}

/* Golden array `name` (exact floats) uploaded as int32. */
int32_t *input_i32(op_run *run, const char *name) {
    const tl_array *a = need(run, name);
    int32_t *host = malloc((a->count ? a->count : 1) * sizeof *host);
    for (size_t i = 0; i < a->count; i++) host[i] = (int32_t)a->data[i];
    int32_t *device = keep(run, tl_upload(run->be, host, a->count * sizeof *host));
    free(host);
    return device;
}

/* n floats of backend memory pre-filled with NaN, so an unwritten element shows. */
float *output(op_run *run, size_t n) {
    float *device = keep(run, tl_device_alloc(run->be, n * sizeof(float)));
    assert_int_equal(strix_fill(run->be, device, NAN, n), STRIX_OK);
    return device;
}

void collect(op_run *run, const char *label, const char *golden, const float *device,
                    size_t n, bool exact) {
    assert_true(run->count < MAX_OUTPUTS);
    op_output *o = &run->out[run->count++];
    snprintf(o->label, sizeof o->label, "%s", label);
    o->golden = golden;
    o->count = n;
    o->exact = exact;
    o->host = tl_malloc_floats(n);
    assert_int_equal(strix_sync(run->be), STRIX_OK);
    tl_download(run->be, o->host, device, n * sizeof(float));
}

void collect_i32(op_run *run, const char *label, const char *golden,
                        const int32_t *device, size_t n) {
    int32_t *host = malloc((n ? n : 1) * sizeof *host);
    tl_download(run->be, host, device, n * sizeof *host);
    float *as_float = tl_malloc_floats(n);
    for (size_t i = 0; i < n; i++) as_float[i] = (float)host[i];
    free(host);
    assert_true(run->count < MAX_OUTPUTS);
    op_output *o = &run->out[run->count++];
    snprintf(o->label, sizeof o->label, "%s", label);
    o->golden = golden;
    o->count = n;
    o->exact = true;
    o->host = as_float;
}

void run_release(op_run *run) {
    for (int i = 0; i < run->buffer_count; i++) strix_free(run->be, run->buffers[i]);
    for (int i = 0; i < run->count; i++) free(run->out[i].host);
    run->buffer_count = run->count = 0;
}


// ---- slot counters -----------------------------------------------------------------------------

unsigned long op_slot_hits[TL_BACKEND_COUNT][STRIX_PRIMITIVE_COUNT];
const char *op_backend_opened[TL_BACKEND_COUNT];

/* A backend's table with counting slots (vt first: a counted table is reached from be->vt). */
typedef struct counted_table {
    struct strix_backend_i vt;
    const struct strix_backend_i *own;
    size_t index;
} counted_table;
static counted_table counted[TL_BACKEND_COUNT];

/* count_<name>: counts the call, then runs the backend's own slot. */
#define STRIX_PRIMITIVE(header, name, params, args)                                           \
    static strix_status count_##name(strix_backend *be, STRIX_UNPAREN params) {                \
        const counted_table *counted_ = (const counted_table *)be->vt;                         \
        op_slot_hits[counted_->index][STRIX_PRIM_##name]++;                                    \
        return counted_->own->name(be, STRIX_UNPAREN args);                                    \
    }
#include "core/primitives.def"

strix_backend *op_backend_open(size_t index) {
    assert_true(index < TL_BACKEND_COUNT);
    strix_backend *be = tl_backend_open(tl_backend_names[index]);
    if (!be) return NULL;
    op_backend_opened[index] = strix_backend_name(be);
    counted_table *t = &counted[index];
    t->vt = *be->vt;
    t->own = be->vt;
    t->index = index;
    /* An empty slot stays empty (the wrapper then reports STRIX_ERR_UNSUPPORTED). */
#define STRIX_PRIMITIVE(header, name, params, args)                                           \
    t->vt.name = t->own->name ? count_##name : NULL;
#include "core/primitives.def"
    be->vt = &t->vt;
    return be;
}

const struct strix_backend_i *op_backend_table(const strix_backend *be) {
    for (size_t i = 0; i < TL_BACKEND_COUNT; i++)
        if (be->vt == &counted[i].vt) return counted[i].own;
    return be->vt;
}

void op_backend_close(strix_backend *be) {
    if (!be) return;
    be->vt = op_backend_table(be);
    strix_backend_free(be);
}

// ---- the golden harness ------------------------------------------------------------------------

strix_backend *op_exact_twin(size_t index) {
    strix_backend *be = tl_backend_open(tl_backend_names[index]);
    bool gpu = be && strix_backend_device(be) != STRIX_DEVICE_CPU;
    strix_backend_free(be);
    if (!gpu) return NULL;
    strix_backend_options opt = {.gpu_exact_reductions = true};
    be = NULL;
    OK(strix_backend_init_ex(tl_backend_names[index], &opt, &be));
    return be;
}

bool op_check_order(const char *label, const float *got, const float *want, size_t n, bool bits) {
    return bits ? tl_check_bits(label, got, want, n) : tl_check_close(label, got, want, n, 1e-5,
                                                                      1e-5);
}

/* Atol and rtol between a GPU backend's block reductions and its exact ones (init option
 * gpu_exact_reductions: the CPU's order): the same sums in another order. */
#define FAST_VS_EXACT_TOL 1e-5

/* The outputs of case c on GPU backend `name` opened with gpu_exact_reductions (the reference of
 * the block reductions): each within FAST_VS_EXACT_TOL of `fast`, exact outputs bit for bit. */
static bool matches_exact_reductions(const op_case *c, const char *name, const op_run *fast,
                               const tl_golden *g) {
    strix_backend *exact_be = NULL;
    strix_backend_options opt = {.gpu_exact_reductions = true};
    if (strix_backend_init_ex(name, &opt, &exact_be) != STRIX_OK) {
        fprintf(stderr, "%s with gpu_exact_reductions: %s\n", name, strix_last_error());
        return false;
    }
    op_run exact = {.be = exact_be, .g = g};
    c->run(&exact);
    bool ok = exact.count == fast->count;
    for (int i = 0; ok && i < exact.count; i++) {
        const op_output *o = &fast->out[i];
        char label[200];
        snprintf(label, sizeof label, "%s/%s/%s (block vs exact reductions)", c->golden, name,
                 o->label);
        ok = o->exact ? tl_check_bits(label, o->host, exact.out[i].host, o->count)
                      : tl_check_close(label, o->host, exact.out[i].host, o->count,
                                       FAST_VS_EXACT_TOL, FAST_VS_EXACT_TOL);
    }
    run_release(&exact);
    strix_backend_free(exact_be);
    return ok;
}

/* Runs one case on backend `name` (opened as be) twice (1 thread; 2 threads with every loop
 * forced parallel), checks the second run against the golden and the two runs against each other
 * bit for bit; on a GPU backend, also against its exact-reductions twin (matches_exact_reductions).
 */
static bool check_case(const op_case *c, const char *name, strix_backend *be,
                       const tl_golden *g) {
    op_run serial = {.be = be, .g = g}, parallel = {.be = be, .g = g};
    strix_set_num_threads(1);
    c->run(&serial);
    strix_set_num_threads(2);
    size_t previous = cpu_set_parallel_min_work(1);
    c->run(&parallel);
    cpu_set_parallel_min_work(previous);
    strix_set_num_threads(0);

    bool ok = serial.count == parallel.count;
    for (int i = 0; ok && i < parallel.count; i++) {
        const op_output *o = &parallel.out[i];
        const tl_array *want = tl_golden_get(g, o->golden);
        char label[160];
        snprintf(label, sizeof label, "%s/%s/%s", c->golden, strix_backend_name(be), o->label);
        bool good = want && want->count == o->count;
        if (good && o->exact) good = tl_check_bits(label, o->host, want->data, o->count);
        if (good && !o->exact)
            good = tl_check_close(label, o->host, want->data, o->count, c->atol, c->rtol);
        char threads_label[200];
        snprintf(threads_label, sizeof threads_label, "%s (1 vs 2 threads)", label);
        good = good && tl_check_bits(threads_label, serial.out[i].host, o->host, o->count);
        ok = ok && good;
    }
    if (ok && strix_backend_device(be) != STRIX_DEVICE_CPU)
        ok = matches_exact_reductions(c, name, &parallel, g);
    run_release(&serial);
    run_release(&parallel);
    return ok;
}

int run_op_cases(const op_case *cases, size_t count) {
    int failures = 0;
    for (size_t ci = 0; ci < count; ci++) {
        const op_case *c = &cases[ci];
        char path[256];
        snprintf(path, sizeof path, GOLDEN_DIR "%s.bin", c->golden);
        tl_golden g;
        assert_true(tl_golden_load(path, &g));
        for (size_t bi = 0; bi < TL_BACKEND_COUNT; bi++) {
            strix_backend *be = op_backend_open(bi);
            if (!be) continue;
            bool ok = check_case(c, tl_backend_names[bi], be, &g);
            printf("  %-26s %-9s %s\n", c->golden, tl_backend_names[bi], ok ? "ok" : "FAIL");
            failures += !ok;
            op_backend_close(be);
        }
        tl_golden_free(&g);
    }
    return failures;
}

float *up(strix_backend *be, const float *host, size_t n) {
    return tl_upload(be, host, n * sizeof(float));
}

void down(strix_backend *be, float *host, const float *device, size_t n) {
    tl_download(be, host, device, n * sizeof(float));
}

jmp_buf op_contract_jump;
char op_contract_message[256];

void op_contract_jump_out(const char *file, int line, const char *msg) {
    (void)file, (void)line;
    snprintf(op_contract_message, sizeof op_contract_message, "%s", msg);
    longjmp(op_contract_jump, 1);
}
