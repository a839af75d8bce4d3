/*
 * bench_qmatmul.c - strix_matmul_blocks (y = x·Wᵀ with W kept in GGUF blocks) at SmolLM2-135M's
 * shapes, beside the own f32 GEMM (strix_gemm_ex on the dequantized W) at the same shapes, on
 * the "cpu" backend at 1 and 2 threads.
 *
 * Shapes (in -> out): 576->576 (q, o), 576->192 (k, v), 576->1536 (gate, up), 1536->576 (down),
 * 576->49152 (the tied head, Q8_0 in the model file). Weights Q4_1, Q8_0 and F32, random blocks
 * with finite scales. rows = 1 (a generated token; memory-bound): GB/s of weight bytes read per
 * call (W's bytes in its format; the GEMM reads the f32 W). rows = 256 (a prompt): GFLOP/s,
 * 2·rows·in·out per call. Each figure is the median of `repeats` calls after one warm-up.
 *
 * Usage: bench_qmatmul [repeats] (default 15). A benchmark, never a test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strix/backend.h"
#include "strix/gguf.h"

#include "bench_util.h"

typedef struct qm_shape {
    const char *label;
    size_t in, out;
} qm_shape;

static uint64_t next_random(uint64_t *s) { /* SplitMix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A binary16 scale: random mantissa, exponent field `e` (value in [2^(e-15), 2^(e-14))), sign. */
static void put_half(unsigned char *p, uint64_t *s, unsigned e, bool negative) {
    uint16_t h = (uint16_t)((negative ? 0x8000u : 0u) | e << 10 | (next_random(s) & 0x3ffu));
    p[0] = (unsigned char)h;
    p[1] = (unsigned char)(h >> 8);
}

/* `out` rows of `in` values of type t (Q4_1, Q8_0 or F32): random quants, finite scales. */
static unsigned char *random_weights(strix_gguf_type t, size_t in, size_t out, size_t *nbytes) {
    size_t row = strix_gguf_row_bytes(t, in);
    *nbytes = row * out;
    unsigned char *w = malloc(*nbytes);
    uint64_t s = 42;
    if (t == STRIX_GGUF_F32) {
        for (size_t i = 0; i < in * out; i++) {
            float v = (float)((double)(next_random(&s) >> 11) * 0x1.0p-53) * 0.2f - 0.1f;
            memcpy(w + 4 * i, &v, 4);
        }
        return w;
    }
    for (size_t i = 0; i < *nbytes; i++) w[i] = (unsigned char)next_random(&s);
    size_t block_bytes = t == STRIX_GGUF_Q4_1 ? 20 : 34;
    for (size_t b = 0; b < *nbytes / block_bytes; b++) {
        unsigned char *p = w + b * block_bytes;
        put_half(p, &s, 7, false); /* d ~ 2^-8 */
        if (t == STRIX_GGUF_Q4_1) put_half(p + 2, &s, 9, true); /* m ~ -2^-6 */
    }
    return w;
}

static float *random_floats(size_t n, uint64_t seed) {
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((double)(next_random(&seed) >> 11) * 0x1.0p-53) * 2.0f - 1.0f;
    return x;
}

/* Median seconds of strix_matmul_blocks (gemm false) or of strix_gemm_ex on the f32 W. */
static double time_call(strix_backend *be, bool gemm, const float *x, size_t rows, size_t in,
                        strix_gguf_type t, const void *w, const float *wf, size_t out, float *y,
                        int repeats) {
    double *times = malloc((size_t)repeats * sizeof *times);
    for (int r = -1; r < repeats; r++) {
        double start = bench_now_s();
        strix_status st = gemm ? strix_gemm_ex(be, x, false, wf, true, y, rows, in, out, 0.0f)
                               : strix_matmul_blocks(be, x, rows, in, (int)t, w, out, y);
        if (st != STRIX_OK) {
            fprintf(stderr, "bench_qmatmul: %s\n", strix_last_error());
            exit(1);
        }
        if (r >= 0) times[r] = bench_now_s() - start;
    }
    double median = bench_median(times, repeats);
    free(times);
    return median;
}

int main(int argc, char **argv) {
    int repeats = argc > 1 ? atoi(argv[1]) : 15;
    if (repeats < 1) repeats = 1;
    const qm_shape shapes[] = {
        {"576->576 (q, o)", 576, 576},       {"576->192 (k, v)", 576, 192},
        {"576->1536 (gate, up)", 576, 1536}, {"1536->576 (down)", 1536, 576},
        {"576->49152 (head)", 576, 49152},
    };
    const strix_gguf_type types[] = {STRIX_GGUF_Q4_1, STRIX_GGUF_Q8_0, STRIX_GGUF_F32};
    const size_t row_counts[] = {1, 256};
    strix_backend *be = NULL;
    if (strix_backend_init("cpu", &be) != STRIX_OK) {
        fprintf(stderr, "bench_qmatmul: %s\n", strix_last_error());
        return 1;
    }
    printf("strix_matmul_blocks on \"cpu\", median of %d calls; rows 1: GB/s of W read (the f32 "
           "GEMM reads 4 bytes a value), rows 256: GFLOP/s\n", repeats);
    printf("%-22s %-5s %4s %7s | %10s %10s | %10s %10s\n", "shape in->out", "type", "rows",
           "unit", "blocks 1t", "blocks 2t", "f32 gemm 1t", "f32 gemm 2t");
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const qm_shape *sh = &shapes[si];
        float *x = random_floats(256 * sh->in, 7), *y = malloc(256 * sh->out * sizeof(float));
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            strix_gguf_type t = types[ti];
            size_t nbytes = 0;
            unsigned char *w = random_weights(t, sh->in, sh->out, &nbytes);
            float *wf = malloc(sh->in * sh->out * sizeof(float));
            if (strix_gguf_dequantize(t, w, sh->in * sh->out, wf) != STRIX_OK) return 1;
            for (size_t ri = 0; ri < 2; ri++) {
                size_t rows = row_counts[ri];
                double unit = rows == 1 ? (double)nbytes * 1e-9
                                        : 2.0 * (double)rows * (double)sh->in * (double)sh->out *
                                              1e-9;
                double unit_gemm = rows == 1 ? (double)sh->in * (double)sh->out * 4e-9 : unit;
                double fig[4];
                for (int threads = 1; threads <= 2; threads++) {
                    strix_set_num_threads(threads);
                    fig[threads - 1] = unit / time_call(be, false, x, rows, sh->in, t, w, wf,
                                                        sh->out, y, repeats);
                    fig[threads + 1] = unit_gemm / time_call(be, true, x, rows, sh->in, t, w, wf,
                                                             sh->out, y, repeats);
                }
                printf("%-22s %-5s %4zu %7s | %10.1f %10.1f | %10.1f %10.1f\n", sh->label,
                       strix_gguf_type_name((int)t), rows, rows == 1 ? "GB/s" : "GFLOP/s",
                       fig[0], fig[1], fig[2], fig[3]);
            }
            free(w), free(wf);
        }
        free(x), free(y);
    }
    strix_set_num_threads(0);
    strix_backend_free(be);
    return 0;
}
