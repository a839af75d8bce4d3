/*
 * op_harness.h - the table-driven harness of tests/test_ops.c (ggml test-backend-ops style),
 * shared by the case files tests/ops/cases_<group>.c.
 *
 * A case is {golden file, runner, tolerance}: the runner uploads the golden inputs (input(),
 * input_i32()), allocates NaN-filled outputs (output()), calls the primitive(s) and hands each
 * result to collect()/collect_i32() under the name of the golden array it must match. The
 * harness runs every case on every backend of tl_backend_names[] twice - 1 thread, then 2 threads
 * with every CPU loop forced through the thread pool - and requires the golden match and bit-identical
 * runs; on a GPU backend it also runs the case with the init option gpu_exact_reductions and
 * holds the block reductions to those exact kernels (1e-5). Goldens: tests/golden/ops/<case>.bin,
 * written by tools/ref/ops*_ref.py.
 * A case file exports its table and its extra cmocka tests (edge cases, finite differences):
 *   const op_case ops_<group>_cases[];  const size_t ops_<group>_case_count;
 *   const struct CMUnitTest ops_<group>_tests[];  const size_t ops_<group>_test_count;
 */
#ifndef STRIX_TEST_OP_HARNESS_H
#define STRIX_TEST_OP_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/backend_impl.h" /* STRIX_PRIMITIVE_COUNT, the slots */
#include "testlib.h"

#define ATOL 1e-5
#define RTOL 1e-4
#define MAX_OUTPUTS 24
#define MAX_BUFFERS 64

/* One output of a run: what the backend produced, and the golden array it must match. */
typedef struct op_output {
    char label[64];
    const char *golden; /* name of the expected array */
    float *host;
    size_t count;
    bool exact; /* bit-identical to the golden (data movement, selection) */
} op_output;

typedef struct op_run {
    strix_backend *be;
    const tl_golden *g;
    op_output out[MAX_OUTPUTS];
    int count;
    void *buffers[MAX_BUFFERS]; /* backend memory freed after the run */
    int buffer_count;
} op_run;

typedef void (*op_runner)(op_run *run);

typedef struct op_case {
    const char *golden; /* tests/golden/ops/<golden>.bin */
    op_runner run;
    double atol, rtol;
} op_case;

/* Golden array `name` (must exist). */
const tl_array *need(op_run *run, const char *name);
size_t count_of(op_run *run, const char *name);
/* First value of golden array `name` (a stored scalar). */
float scalar(op_run *run, const char *name);
/* Golden array `name` uploaded to the backend (freed after the run). */
float *input(op_run *run, const char *name);
/* Golden array `name` (exact floats) uploaded as int32. */
int32_t *input_i32(op_run *run, const char *name);
/* n floats of backend memory pre-filled with NaN, so an unwritten element shows. */
float *output(op_run *run, size_t n);
/* Backend memory freed after the run. */
void *keep(op_run *run, void *device);
/* Downloads n floats of `device` as output `label`, to be compared with golden array `golden`
 * (exact: bit for bit). */
void collect(op_run *run, const char *label, const char *golden, const float *device, size_t n,
             bool exact);
/* The same for int32 outputs (always exact). */
void collect_i32(op_run *run, const char *label, const char *golden, const int32_t *device,
                 size_t n);

/* Runs every case of a table on every backend; returns the number of failed case x backend runs
 * (each printed). */
int run_op_cases(const op_case *cases, size_t count);

#define OK(call) assert_int_equal((call), STRIX_OK)

/* Contract checks (op_harness.c): assert_contract_broken(call, what) asserts that `call` fails a
 * STRIX_ASSERT whose message names `what` (the abort callback jumps back here). */
extern jmp_buf op_contract_jump;
extern char op_contract_message[256];
void op_contract_jump_out(const char *file, int line, const char *msg);
#define assert_contract_broken(call, what)                                                     \
    do {                                                                                       \
        strix_set_abort_callback(op_contract_jump_out);                                        \
        if (setjmp(op_contract_jump) == 0) {                                                   \
            (void)(call);                                                                      \
            strix_set_abort_callback(NULL);                                                    \
            fail_msg("%s returned instead of breaking its contract", #call);                   \
        }                                                                                      \
        strix_set_abort_callback(NULL);                                                        \
        assert_non_null(strstr(op_contract_message, (what)));                                  \
    } while (0)

/* Backend tl_backend_names[index] opened by tl_backend_open (NULL where this build or machine
 * lacks it), with every filled primitive slot routed through a counter: each call of slot `id`
 * adds 1 to op_slot_hits[index][id], then runs the backend's own slot. Close with
 * op_backend_close. All op tests open backends this way, so the counts say which primitives the
 * cases exercise on which backend (test_ops: coverage check and --support). */
strix_backend *op_backend_open(size_t index);
void op_backend_close(strix_backend *be);
extern unsigned long op_slot_hits[TL_BACKEND_COUNT][STRIX_PRIMITIVE_COUNT];
/* The backend's own table (behind the counters of op_backend_open), and whether
 * tl_backend_names[index] opened at least once, as which backend name (NULL if never). */
const struct strix_backend_i *op_backend_table(const strix_backend *be);
extern const char *op_backend_opened[TL_BACKEND_COUNT];

/* Runs the body once per available backend with `be` bound (opened by op_backend_open). */
#define FOR_EACH_BACKEND(be)                                                                   \
    for (size_t bi_ = 0; bi_ < TL_BACKEND_COUNT; bi_++)                                        \
        for (strix_backend *be = op_backend_open(bi_), *once_ = be; once_;                     \
             op_backend_close(be), once_ = NULL)

/* GPU backend tl_backend_names[index] opened with the init option gpu_exact_reductions (the CPU's
 * summation orders), or NULL for a CPU backend; free with strix_backend_free. */
strix_backend *op_exact_twin(size_t index);
/* Runs the body with `be` bound to `first`, then to `twin` when it is not NULL. */
#define FOR_BACKEND_AND_TWIN(be, first, twin)                                                  \
    for (strix_backend *be = (first); be; be = be == (first) ? (twin) : NULL)
/* A documented summation order's result: bit for bit where `bits` (a CPU backend, an exact
 * twin), else within 1e-5 abs + 1e-5 rel (a GPU's block reductions). */
bool op_check_order(const char *label, const float *got, const float *want, size_t n, bool bits);

/* Host <-> backend copies of n floats (up allocates). */
float *up(strix_backend *be, const float *host, size_t n);
void down(strix_backend *be, float *host, const float *device, size_t n);

/* The tables of the case files. */
#define OP_GROUP(g)                                                                            \
    extern const op_case ops_##g##_cases[];                                                    \
    extern const size_t ops_##g##_case_count;                                                  \
    extern const struct CMUnitTest ops_##g##_tests[];                                          \
    extern const size_t ops_##g##_test_count;
OP_GROUP(core)
OP_GROUP(extra)
OP_GROUP(cnn)
OP_GROUP(lrp)
OP_GROUP(recurrent)
#undef OP_GROUP
/* cases_quant.c (strix_matmul_blocks): tests only, no golden table. */
extern const struct CMUnitTest ops_quant_tests[];
extern const size_t ops_quant_test_count;

#endif
