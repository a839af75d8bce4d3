/*
 * bench_gpu_gemm.c - GFLOP/s of the GEMMs of one nanoGPT-Shakespeare training step (B 64, T 256,
 * d_model 384, 6 heads, vocab 65: B·T = 16384 rows) through strix on a GPU backend, for
 * bench/torch_gpu_gemm.py to put beside the vendor BLAS called alone (torch.mm / torch.bmm, TF32
 * off) at the same shapes and transposes. A benchmark, never a test.
 *
 * Usage: bench_gpu_gemm [--device cuda[:N]|hip[:N]] [--repeats 50]. Prints one line per shape,
 * "label m k n batch ta tb gflops", timing `repeats` back-to-back calls between two strix_sync
 * after 5 warm-up calls. STRIX_CUDA_GEMM=own times the own tiled kernel instead of cuBLAS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strix/backend.h"

#include "bench_util.h"

/* One GEMM of the step: Linear forward x·Wᵀ (tb), weight gradient dyᵀ·x (ta), input gradient
 * dy·W; attention's per-head products over B·NH = 384 items. The list is the same in
 * bench/torch_gpu_gemm.py. */
typedef struct gpu_gemm_shape {
    const char *label;
    size_t m, k, n, batch;
    bool ta, tb;
} gpu_gemm_shape;

static const gpu_gemm_shape shapes[] = {
    {"qkv_fwd", 16384, 384, 1152, 1, false, true},
    {"qkv_dW", 1152, 16384, 384, 1, true, false},
    {"qkv_dx", 16384, 1152, 384, 1, false, false},
    {"fc_fwd", 16384, 384, 1536, 1, false, true},
    {"fc_dW", 1536, 16384, 384, 1, true, false},
    {"mlp_proj_fwd", 16384, 1536, 384, 1, false, true},
    {"mlp_proj_dx", 16384, 384, 1536, 1, false, false},
    {"attn_proj_fwd", 16384, 384, 384, 1, false, true},
    {"head_fwd", 16384, 384, 65, 1, false, true},
    {"head_dx", 16384, 65, 384, 1, false, false},
    {"att_qk", 256, 64, 256, 384, false, true},
    {"att_pv", 256, 256, 64, 384, false, false},
    {"square_4096", 4096, 4096, 4096, 1, false, false},
};

static int die(const char *what) {
    fprintf(stderr, "bench_gpu_gemm: %s: %s\n", what, strix_last_error());
    return 1;
}

int main(int argc, char **argv) {
    const char *device = "cuda";
    int repeats = 50;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--device")) device = argv[i + 1];
        else if (!strcmp(argv[i], "--repeats")) repeats = atoi(argv[i + 1]);
        else { fprintf(stderr, "bench_gpu_gemm: unknown flag %s\n", argv[i]); return 2; }
    }
    if (repeats < 1) repeats = 1;
    strix_backend_options opt = {0}; /* the library reads no environment: the bench does */
    const char *gemm = getenv("STRIX_CUDA_GEMM");
    if (gemm && strcmp(gemm, "own") == 0) opt.gpu_gemm = STRIX_GPU_GEMM_OWN;
    strix_backend *be;
    if (strix_backend_init_ex(device, &opt, &be) != STRIX_OK) return die(device);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const gpu_gemm_shape *sh = &shapes[s];
        size_t na = sh->m * sh->k * sh->batch, nb = sh->k * sh->n * sh->batch;
        size_t nc = sh->m * sh->n * sh->batch;
        float *a, *b, *c;
        if (strix_alloc(be, na * sizeof(float), (void **)&a) ||
            strix_alloc(be, nb * sizeof(float), (void **)&b) ||
            strix_alloc(be, nc * sizeof(float), (void **)&c))
            return die("alloc");
        if (strix_fill(be, a, 0.5f, na) || strix_fill(be, b, 0.25f, nb)) return die("fill");
        strix_gemm_batch g = {
            .a = a, .lda = sh->ta ? sh->m : sh->k, .stride_a = sh->m * sh->k, .ta = sh->ta,
            .b = b, .ldb = sh->tb ? sh->k : sh->n, .stride_b = sh->k * sh->n, .tb = sh->tb,
            .c = c, .ldc = sh->n, .stride_c = sh->m * sh->n,
            .m = sh->m, .k = sh->k, .n = sh->n, .batch = sh->batch, .alpha = 1.0f,
        };
        double t0 = 0.0;
        for (int r = -5; r < repeats; r++) {
            if (r == 0) {
                if (strix_sync(be)) return die("sync");
                t0 = bench_now_s();
            }
            strix_status st = sh->batch > 1 ? strix_gemm_batched(be, &g)
                                            : strix_gemm_ex(be, a, sh->ta, b, sh->tb, c, sh->m,
                                                            sh->k, sh->n, 0.0f);
            if (st != STRIX_OK) return die(sh->label);
        }
        if (strix_sync(be)) return die("sync");
        double seconds = (bench_now_s() - t0) / repeats;
        double flops = 2.0 * (double)sh->m * (double)sh->k * (double)sh->n * (double)sh->batch;
        printf("%s %zu %zu %zu %zu %d %d %.1f\n", sh->label, sh->m, sh->k, sh->n, sh->batch,
               sh->ta, sh->tb, flops / seconds * 1e-9);
        strix_free(be, a), strix_free(be, b), strix_free(be, c);
    }
    strix_backend_free(be);
    return 0;
}
