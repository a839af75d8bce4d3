/*
 * strix/backend.h - the device backend: a handle, its memory, and the primitives.
 *
 * Every primitive is a thin checked call into the backend's vtable (src/core/backend_impl.h). A
 * backend without a primitive returns STRIX_ERR_UNSUPPORTED, it is never routed elsewhere.
 * Semantics, layouts and reduction orders follow docs/SEMANTICS.md (the reference rules); the few
 * extensions (leading dimensions, int32 indices, the fused attention and cross-entropy kernels)
 * are marked "strix:" below. All matrices are float32, row-major. Pointers are backend memory.
 * Outputs are overwritten (`=`) unless the comment says `+=`. Sizes are elements, not bytes.
 *
 * Every function returns STRIX_OK, STRIX_ERR_UNSUPPORTED (no such slot), or, on GPU backends,
 * STRIX_ERR_DEVICE with the failing call named in strix_last_error(). The GEMMs may also return
 * STRIX_ERR_ALLOC: the CPU backends keep a packing workspace per thread that grows on first use
 * (and when k or the thread count grows), so a training step allocates only in its first step.
 */
#ifndef STRIX_BACKEND_H
#define STRIX_BACKEND_H

#include "strix/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- handle and memory -------------------------------------------------------------------------

/* Creates a backend by name: "cpu" (reference: plain loops and our own blocked GEMM),
 * "cpu-blas" (the reference with its GEMM slots on OpenBLAS), "cuda" / "cuda:N" (NVIDIA GPU N,
 * default 0) or "hip" / "hip:N" (AMD GPU N). STRIX_ERR_UNSUPPORTED when the build lacks that
 * backend (no OpenBLAS, CUDA or HIP), STRIX_ERR_DEVICE when no such GPU is present, STRIX_ERR_ARG
 * for an unknown name or a malformed index. */
STRIX_API strix_status strix_backend_init(const char *name, strix_backend **out);

/* The GEMM engine of a GPU backend: DEFAULT is the vendor BLAS where the build has one (cuBLAS,
 * hipBLAS), else our own tiled SGEMM; OWN always uses our kernel (bit-identical to the "cpu"
 * backend's own GEMM). Append-only. */
typedef enum strix_gpu_gemm {
    STRIX_GPU_GEMM_DEFAULT = 0,
    STRIX_GPU_GEMM_BLAS,
    STRIX_GPU_GEMM_OWN,
} strix_gpu_gemm;

/* Options of strix_backend_init_ex. A zero-initialised struct (or NULL) gives the defaults, which
 * are strix_backend_init's. The library reads no environment variable; the strix command maps
 * STRIX_CUDA_GEMM=own, STRIX_CUDA_TF32=1, STRIX_CUDA_REDUCE=exact and STRIX_PLUGIN_DIR onto
 * these fields. */
typedef struct strix_backend_options {
    strix_gpu_gemm gpu_gemm; /* GPU backends' GEMM engine (CPU backends ignore it) */
    bool tf32;               /* cuda: let cuBLAS use TF32 tensor cores (default: FP32 math) */
    const char *plugin_dir;  /* a folder searched first for the GPU plugins libstrix-cuda.so and
                                libstrix-hip.so (NULL: the default search, registry.c); only the
                                first load of a plugin looks at it */
    bool gpu_exact_reductions; /* GPU backends: the reductions (softmax, logsumexp, LayerNorm,
                                  RMSNorm, causal attention softmax, cross-entropy, column sums,
                                  sum of squares, BatchNorm) in the CPU's order, one thread per
                                  row or column: the CPU's bits, slow. Default (false): blocks
                                  with fixed-tree sums, deterministic, the CPU's results to
                                  rounding (docs/BACKENDS.md) */
} strix_backend_options;

/* strix_backend_init with options (NULL = defaults). The same names and statuses, plus
 * STRIX_ERR_ARG for an out-of-range option. A GPU backend comes from its run-time plugin, loaded
 * on the first request: STRIX_ERR_UNSUPPORTED when the plugin is not found or is of another
 * strix version, STRIX_ERR_DEVICE when it cannot be loaded (its GPU runtime missing), as well as
 * when no driver or device is there. src/core/registry.c. */
STRIX_API strix_status strix_backend_init_ex(const char *name, const strix_backend_options *opt,
                                             strix_backend **out);

/* Frees the handle. NULL is a no-op. Memory still allocated from it must be freed first. */
STRIX_API void strix_backend_free(strix_backend *be);

/* The name the backend was created with, and its device. */
STRIX_API const char *strix_backend_name(const strix_backend *be);
STRIX_API strix_device strix_backend_device(const strix_backend *be);

/* Sets the number of threads the CPU backends use (one process-wide pool: the calling thread and
 * n - 1 workers that spin briefly, then sleep, between parallel loops); OpenBLAS's own pool stays
 * at one thread. n <= 0 means the CPUs this process may run on (its affinity mask), which is also
 * the default unless OMP_NUM_THREADS is set. Results never depend on it. */
STRIX_API void strix_set_num_threads(int n);
/* The CPU backends' thread count (above). */
STRIX_API int strix_get_num_threads(void);
/* The vector level the CPU backends' kernels run on this CPU, chosen at run time from cpuid,
 * whatever the build's -march: "avx512" (AVX-512 F/BW/DQ/VL), "avx2" (AVX2 + FMA + F16C) or
 * "scalar". Every level gives the same bits. */
STRIX_API const char *strix_cpu_isa(void);

/* Allocates `bytes` of backend memory (bytes == 0 gives NULL and STRIX_OK). STRIX_ERR_ALLOC on
 * failure, never a NULL with STRIX_OK for bytes > 0. */
STRIX_API strix_status strix_alloc(strix_backend *be, size_t bytes, void **out);

/* Frees backend memory. NULL is a no-op. */
STRIX_API void strix_free(strix_backend *be, void *p);

typedef enum strix_copy_dir {
    STRIX_COPY_H2D, STRIX_COPY_D2H, STRIX_COPY_D2D, STRIX_COPY_H2H
} strix_copy_dir;

/* Copies `bytes` between buffers in direction `dir` (CPU backends ignore it). Finished on return
 * for D2H. */
STRIX_API strix_status strix_copy(strix_backend *be, void *dst, const void *src, size_t bytes,
                                  strix_copy_dir dir);

/* p[0..n) = value. */
STRIX_API strix_status strix_fill(strix_backend *be, float *p, float value, size_t n);

/* Waits until all queued work on the backend is done. */
STRIX_API strix_status strix_sync(strix_backend *be);

// ---- GEMM --------------------------------------------------------------------------------------

/* out (m,n) = op(A)·op(B) + beta·out. A is stored (m,k), or (k,m) if ta; B is stored (k,n), or
 * (n,k) if tb. beta == 0 never reads out (NaN there does not leak); k == 0 gives
 * beta·out (beta 0: +0). out must not alias a or b.
 * Each output element sums its k products in ascending k from 0 (own kernel); the BLAS path
 * matches only to rounding. */
STRIX_API strix_status strix_gemm_ex(strix_backend *be, const float *a, bool ta, const float *b,
                                     bool tb, float *out, size_t m, size_t k, size_t n,
                                     float beta);

/* out (m,n) = A (m,k) · B (k,n); pulsatrix's plain gemm: strix_gemm_ex without transposes and
 * with beta = 0 (out is never read). */
STRIX_API strix_status strix_gemm(strix_backend *be, const float *a, const float *b, float *out,
                                  size_t m, size_t k, size_t n);

/* strix: zero structure of causal attention's products that a backend may use to skip work
 * (`skip`; the zero value FULL means none). The caller guarantees the zeros. Skipped terms are
 * exact zeros of the ascending sum, so the own kernel gives the same bits as without the hint
 * (unless B holds inf/NaN facing those zeros); backends may ignore it. Row/column indices are
 * those of the whole item (i < m, p < k, j < n):
 *   OUT_LOWER  only C[i][j] with j <= i is wanted; C above the diagonal is unspecified on return.
 *   A_LOWER    op(A)[i][p] == 0 for p > i (P·V, dS·K with causal P, dS).
 *   A_UPPER    op(A)[i][p] == 0 for p < i (Pᵀ·dY, dSᵀ·Q). */
typedef enum strix_gemm_skip {
    STRIX_GEMM_FULL, STRIX_GEMM_OUT_LOWER, STRIX_GEMM_A_LOWER, STRIX_GEMM_A_UPPER
} strix_gemm_skip;

/* strix: a batch of GEMMs with leading dimensions and batch strides (in elements), like
 * cublasSgemmStridedBatched in row-major terms: for i < batch,
 *   C_i (m,n, row stride ldc) = alpha·op(A_i)·op(B_i) + beta·C_i,
 * A_i = a + i·stride_a with row stride lda (rows of the stored matrix), likewise B_i and C_i.
 * It lets attention read head slices of a (B,T,3C) buffer in place. Same order and beta rule as
 * strix_gemm_ex; `skip` (default FULL) describes causal zeros, above. alpha == 0 (or k == 0)
 * forms no product, as reference BLAS: C_i = beta·C_i exactly (beta 0 writes +0), A and B are
 * never read (NaN there does not leak), the same bits on every backend. */
typedef struct strix_gemm_batch {
    const float *a; size_t lda, stride_a; bool ta;
    const float *b; size_t ldb, stride_b; bool tb;
    float *c; size_t ldc, stride_c;
    size_t m, k, n, batch;
    float alpha, beta;
    strix_gemm_skip skip;
    const float *packed_b; /* NULL, or strix_gemm_pack_b's packing of exactly these B fields */
} strix_gemm_batch;
STRIX_API strix_status strix_gemm_batched(strix_backend *be, const strix_gemm_batch *g);

/* strix: B packed once for many strix_gemm_batched calls against the same B (a recurrent
 * layer's W_hh over its T steps). packed NULL: *floats = the floats the packing of g needs (0:
 * this backend packs nothing, cpu-blas and GPUs; pass packed_b NULL then). Else packs op(B_i) of
 * every item of g (reads b, ldb, stride_b, tb, k, n, batch only) into packed (strix_alloc
 * memory of *floats floats, also set); item i lies at packed + i·f, f the floats of a batch of 1.
 * A call with packed_b = packed (or its item i, with b + i·stride_b and fewer items) must have
 * those B fields and B unchanged since; it then gives the same bits as without packed_b. */
STRIX_API strix_status strix_gemm_pack_b(strix_backend *be, const strix_gemm_batch *g,
                                         float *packed, size_t *floats);

// ---- products with weights in block format (GGUF) -----------------------------------------------

/* strix: weight types of strix_matmul_blocks, ggml's block formats with ggml.h's enum ggml_type
 * numbers (the same numbers as strix_gguf_type of strix/gguf.h). Block layouts and values:
 * src/kernels/quant.h (values and bytes per block in brackets). */
typedef enum strix_block_type {
    STRIX_BLOCK_F32 = 0,  /* [1, 4] */
    STRIX_BLOCK_F16 = 1,  /* [1, 2] IEEE binary16 */
    STRIX_BLOCK_Q4_0 = 2, /* [32, 18] f16 d, 4-bit q; d·(q - 8) */
    STRIX_BLOCK_Q4_1 = 3, /* [32, 20] f16 d, f16 m, 4-bit q; d·q + m */
    STRIX_BLOCK_Q5_0 = 6, /* [32, 22] d·(q - 16), 5-bit q */
    STRIX_BLOCK_Q5_1 = 7, /* [32, 24] d·q + m, 5-bit q */
    STRIX_BLOCK_Q8_0 = 8, /* [32, 34] f16 d, int8 q; q·d */
    STRIX_BLOCK_Q4_K = 12, /* [256, 144] */
    STRIX_BLOCK_Q6_K = 14, /* [256, 210] */
    STRIX_BLOCK_BF16 = 30 /* [1, 2] bfloat16 */
} strix_block_type;

/* strix: y (rows, out) = x (rows, in) · Wᵀ for W in block format, never dequantized whole:
 * W is `out` rows of `in` values, row j (output feature j) being in / block consecutive blocks
 * of type wtype (a strix_block_type): exactly a GGUF 2-D weight of ne = {in, out}, row-major
 * bytes, any alignment. x and y are float32 row-major; y is overwritten and must not alias x or
 * w. Each y[r][j] is the dot product of x's row r with W's row j in the fixed order of
 * kernels/quant.h: 16 lane sums from 0.0f, value i (decoded exactly as ggml and
 * strix_gguf_dequantize) times x[r][i] rounded and added to lane i mod 16, i ascending, then the
 * lanes folded pairwise (s = 8, 4, 2, 1: lane k += lane k + s). So every backend, thread count
 * and `rows` (a token's y does not depend on its batch) gives the bits of strix_gguf_dot of that
 * row (GPU launchers: one thread per y element, the same function, no contraction).
 * The CPU backends give each thread a range of output features; up to 12 rows they decode W
 * block by block in registers (token generation), beyond that tiles of 16 W rows into a
 * per-thread scratch (STRIX_ERR_ALLOC when it cannot grow).
 * STRIX_ERR_UNSUPPORTED (naming the type) for a type not above; STRIX_ERR_ARG when in is not a
 * multiple of the type's block values; NULL x, w or y with rows·out > 0, or y aliasing x or w, is
 * a contract violation (STRIX_ASSERT). rows or out 0 writes nothing; in 0 gives y = 0.
 * Source: ggml's mul_mat of a quantized weight (llama.cpp), here with float32 activations. */
STRIX_API strix_status strix_matmul_blocks(strix_backend *be, const float *x, size_t rows,
                                           size_t in, int wtype, const void *w, size_t out,
                                           float *y);

// ---- elementwise and vector --------------------------------------------------------------------

/* Elementwise activations (pulsatrix's order; append-only). */
typedef enum strix_act {
    STRIX_ACT_RELU, STRIX_ACT_NEG, STRIX_ACT_TANH, STRIX_ACT_SIGMOID, STRIX_ACT_SILU,
    STRIX_ACT_EXP, STRIX_ACT_GELU_TANH, STRIX_ACT_GELU,
    STRIX_ACT_LOG /* strix: natural log (derivative 1/x), for losses such as KL divergence */
} strix_act;

/* out[i] = a[i] + b[i]; alias allowed. */
STRIX_API strix_status strix_add(strix_backend *be, const float *a, const float *b, float *out,
                                 size_t n);
/* out[i] = a[i] * b[i]; alias allowed. */
STRIX_API strix_status strix_mul(strix_backend *be, const float *a, const float *b, float *out,
                                 size_t n);
/* out[i] = alpha·x[i] + beta·y[i]; beta == 0 never reads y; out may alias x or y. */
STRIX_API strix_status strix_axpby(strix_backend *be, float alpha, const float *x, float beta,
                                   const float *y, float *out, size_t n);
/* strix: out[i] = min(max(in[i], lo), hi) (torch.clamp; NaN stays NaN); alias allowed. lo <= hi.
 * Used by gradient clipping by value. */
STRIX_API strix_status strix_clamp(strix_backend *be, const float *in, float lo, float hi,
                                   float *out, size_t n);
/* out[j] = beta·out[j] + Σ_i in[i][j], i ascending from 0.0f; (rows, cols); beta == 0 never reads
 * out; no alias. GPU backends sum in a fixed tree of row runs unless gpu_exact_reductions. */
STRIX_API strix_status strix_column_sums(strix_backend *be, const float *in, float *out,
                                         size_t rows, size_t cols, float beta);
/* out[i][j] = in[i][j] + row[j] over (rows, cols); out may alias in. */
STRIX_API strix_status strix_add_row_vector(strix_backend *be, const float *in, const float *row,
                                            float *out, size_t rows, size_t cols);
/* out[i] = f(in[i]) for activation op; alias allowed. GELU is the erf form, GELU_TANH the tanh
 * approximation (PyTorch approximate="tanh"). */
STRIX_API strix_status strix_elementwise(strix_backend *be, strix_act op, const float *in,
                                         float *out, size_t n);
/* grad_in[i] = grad_out[i]·f'(x[i]) at the forward INPUT x; RELU is a select (x > 0 ? g : 0).
 * grad_in may alias grad_out. */
STRIX_API strix_status strix_elementwise_backward(strix_backend *be, strix_act op, const float *x,
                                                  const float *grad_out, float *grad_in, size_t n);
/* Σ in[i], i ascending from 0.0f in float; result to the host (synchronises). */
STRIX_API strix_status strix_sum(strix_backend *be, const float *in, size_t n, float *out);
/* Σ a[i]·b[i], same order as strix_sum. */
STRIX_API strix_status strix_dot(strix_backend *be, const float *a, const float *b, size_t n,
                                 float *out);
/* strix: Σ in[i]², accumulated in double (gradient-norm clipping, docs/SEMANTICS.md), in a
 * fixed order that depends on n only: 32 lane sums, lane l over i ≡ l (mod 32) ascending from
 * 0.0, then folded in halves (lane l += lane l + 16 for l < 16, then + 8, + 4, + 2, + 1); lane 0
 * is the result. GPU backends sum over a fixed grid unless gpu_exact_reductions (to rounding). */
STRIX_API strix_status strix_sum_squares(strix_backend *be, const float *in, size_t n,
                                         double *out);

/* out[j] += in[i][j] over (rows, cols), row by row from i = 0 straight into out (`+=`; a different
 * association from column_sums with beta = 1). No alias. */
STRIX_API strix_status strix_accumulate_rows(strix_backend *be, const float *in, float *out,
                                             size_t rows, size_t cols);
/* Strided 2-D copy: `rows` rows of `cols` floats from src (row stride src_stride) to dst (row
 * stride dst_stride), e.g. one time step of an (N, L, D) sequence. Bit-exact; no overlap. */
STRIX_API strix_status strix_copy_2d(strix_backend *be, float *dst, size_t dst_stride,
                                     const float *src, size_t src_stride, size_t rows,
                                     size_t cols);
/* Binary cross-entropy with logits per element, the overflow-free form (PyTorch
 * BCEWithLogitsLoss, reduction='none'): out = max(x,0) − x·y + log1p(exp(−|x|)). out may alias
 * logits. At x = ±inf it gives the limit (0 when y agrees with the sign, docs/SEMANTICS.md). */
STRIX_API strix_status strix_bce_with_logits(strix_backend *be, const float *logits,
                                             const float *target, float *out, size_t n);
/* Its gradient: grad = (σ(x) − y)·scale, σ(x) = 1/(1+e^−x) for x >= 0, e^x/(1+e^x) otherwise.
 * grad may alias logits. */
STRIX_API strix_status strix_bce_with_logits_grad(strix_backend *be, const float *logits,
                                                  const float *target, float *grad, size_t n,
                                                  float scale);

// ---- rows: softmax, norms -----------------------------------------------------------------------
// The sums of a row run over its columns ascending from 0.0f on the CPU; GPU backends keep that
// order only with gpu_exact_reductions, and by default add a block's partials in a fixed tree
// (to rounding, docs/BACKENDS.md).

/* Row softmax of (rows, cols): subtract the row max, exponentiate, divide by the ascending sum.
 * An all -inf row gives all zeros (docs/SEMANTICS.md). out may alias in. */
STRIX_API strix_status strix_softmax_rows(strix_backend *be, const float *in, float *out,
                                          size_t rows, size_t cols);
/* dx = y ⊙ (dy − Σ_j y·dy) per row, from the softmax OUTPUT y. dx may alias dy. */
STRIX_API strix_status strix_softmax_rows_backward(strix_backend *be, const float *y,
                                                   const float *dy, float *dx, size_t rows,
                                                   size_t cols);
/* out[i] = max + log Σ_j exp(x − max) per row; an all -inf row gives -inf. out has `rows`. */
STRIX_API strix_status strix_logsumexp_rows(strix_backend *be, const float *in, float *out,
                                            size_t rows, size_t cols);
/* LayerNorm per row of (rows, cols): two-pass mean, biased variance, std = sqrt(var + eps),
 * xhat = (x − mean)/std, out = gamma·xhat + beta. Writes xhat (rows, cols) and row_std (rows).
 * gamma/beta may be NULL (1 and 0). (PyTorch nn.LayerNorm.) */
STRIX_API strix_status strix_layer_norm_forward(strix_backend *be, const float *in,
                                                const float *gamma, const float *beta,
                                                float *xhat, float *out, float *row_std,
                                                size_t rows, size_t cols, float eps);
/* LayerNorm input gradient: g = grad_out·gamma; grad_in = (D·g − Σg − xhat·Σ(g·xhat))/(D·std).
 * gamma may be NULL. Parameter grads are the caller's (column_sums of grad_out·xhat and grad_out).
 */
STRIX_API strix_status strix_layer_norm_backward(strix_backend *be, const float *grad_out,
                                                 const float *gamma, const float *xhat,
                                                 const float *row_std, float *grad_in,
                                                 size_t rows, size_t cols);

/* RMSNorm per row of (rows, cols) (Zhang & Sennrich 2019; PyTorch nn.RMSNorm):
 * rms = sqrt(Σx²/D + eps) (ascending sum), out = gamma·x/rms; writes row_rms (rows). gamma may be
 * NULL (1); out may alias in. */
STRIX_API strix_status strix_rms_norm_forward(strix_backend *be, const float *in,
                                              const float *gamma, float *out, float *row_rms,
                                              size_t rows, size_t cols, float eps);
/* RMSNorm input gradient: t = Σ_j go·gamma·x; grad_in = go·gamma/rms − x·t/(D·rms³); and
 * gamma_terms (rows, cols) = go·x/rms, which the module reduces into gamma's gradient with
 * column_sums (gamma_terms may be NULL). gamma may be NULL; grad_in may alias grad_out. */
STRIX_API strix_status strix_rms_norm_backward(strix_backend *be, const float *grad_out,
                                               const float *gamma, const float *in,
                                               const float *row_rms, float *grad_in,
                                               float *gamma_terms, size_t rows, size_t cols);
/* Attention score masking over (B, H, Lq, Lk): scores[b,h,i,j] = value when
 *   causal and j > i + q_off; or causal, window > 0 and j + window <= i + q_off (the window
 *   applies only with causal);
 *   or keep != NULL and keep[b,j] == 0 (keep is (B, Lk) of 0/1 floats).
 * Other entries are untouched. The modules pass -inf (docs/SEMANTICS.md: fully masked rows give
 * 0). */
STRIX_API strix_status strix_attention_mask_fill(strix_backend *be, float *scores,
                                                 const float *keep, size_t B, size_t H,
                                                 size_t Lq, size_t Lk, bool causal, size_t q_off,
                                                 size_t window, float value);

// ---- positions, layout, embedding --------------------------------------------------------------

/* Rotary embedding over `rows` rows of head_dim values; row r is at position r mod seq_len + pos0.
 * strix: rows are read with row stride ld_in and written with ld_out (ld = head_dim is pulsatrix's
 * packed layout), so a head slice of a (B,T,3C) buffer rotates in place (out may alias in).
 * Tables cos/sin are (max_pos, head_dim/2); pair i is (2i, 2i+1):
 *   lo' = lo·c − hi·s, hi' = lo·s + hi·c; inverse uses −s (the transpose). head_dim even. */
STRIX_API strix_status strix_rope_rotate(strix_backend *be, const float *in, size_t ld_in,
                                         const float *cos_table, const float *sin_table,
                                         float *out, size_t ld_out, size_t rows, size_t seq_len,
                                         size_t pos0, size_t head_dim, bool inverse);
/* strix (Hugging Face Llama rotate-half layout): RoPE like strix_rope_rotate (same rows,
 * strides, positions and (max_pos, head_dim/2) tables; out may alias in) with pair i made of
 * (i, i + head_dim/2), i < head_dim/2:
 *   out[i] = x[i]·c − x[i+d/2]·s,  out[i+d/2] = x[i+d/2]·c + x[i]·s  (x·cos + rotate_half(x)·sin);
 * inverse uses −s (the transpose: the backward). head_dim even, ld_in/ld_out >= head_dim
 * (STRIX_ASSERT). STRIX_ERR_UNSUPPORTED for an empty slot. */
STRIX_API strix_status strix_rope_rotate_half(strix_backend *be, const float *in, size_t ld_in,
                                              const float *cos_table, const float *sin_table,
                                              float *out, size_t ld_out, size_t rows,
                                              size_t seq_len, size_t pos0, size_t head_dim,
                                              bool inverse);
/* (d0,d1,d2,d3) -> (d0,d2,d1,d3). Bit-exact data movement; no alias. */
STRIX_API strix_status strix_permute_0213(strix_backend *be, const float *in, float *out,
                                          size_t d0, size_t d1, size_t d2, size_t d3);
/* out[i][:] = table[idx[i]][:] for count rows of width dim. strix: int32 indices (pulsatrix uses
 * floats); every idx must be in range (the caller checks). */
STRIX_API strix_status strix_gather_rows(strix_backend *be, const float *table,
                                         const int32_t *idx, float *out, size_t count,
                                         size_t dim);
/* table[idx[i]][:] += src[i][:] in ascending i (`+=`). int32 indices. */
STRIX_API strix_status strix_scatter_add_rows(strix_backend *be, const float *src,
                                              const int32_t *idx, float *table, size_t count,
                                              size_t dim);

// ---- fused kernels of the microGPT backend -----------------------------------------------------

/* strix (microGPT fused_attn_softmax): for `slices` square (T,T) score blocks, row i (the query
 * position) gets probs[i][j] = softmax_j(scale·scores[i][j]) over j <= i, and 0 for j > i.
 * probs may alias scores. */
STRIX_API strix_status strix_attn_softmax_causal(strix_backend *be, const float *scores,
                                                 float *probs, size_t slices, size_t T,
                                                 float scale);
/* Its backward: dscores = scale·p⊙(dp − Σ_j p·dp) (0 above the diagonal). dscores may alias dp.
 */
STRIX_API strix_status strix_attn_softmax_causal_backward(strix_backend *be, const float *probs,
                                                          const float *dprobs, float *dscores,
                                                          size_t slices, size_t T, float scale);
/* strix (microGPT fused_softmax_ce_grad): per row of logits (rows, V) with target t,
 * losses[r] = logsumexp(x) − x[t] and dlogits = (softmax(x) − onehot(t))·grad_scale (dlogits may
 * alias logits; NULL skips the gradient). -inf logits in non-target columns give a finite loss and
 * a gradient of exactly 0 there. Targets < 0 are ignored rows (loss 0, gradient 0). */
STRIX_API strix_status strix_softmax_cross_entropy(strix_backend *be, const float *logits,
                                                   const int32_t *targets, float *losses,
                                                   float *dlogits, size_t rows, size_t V,
                                                   float grad_scale);

// ---- optimizer, regularisation, selection ------------------------------------------------------

/* Adam over n parameters (Kingma & Ba 2015, Alg. 1): m = b1·m + (1−b1)·g; v = b2·v + (1−b2)·g²;
 * p −= lr·(m/bc1)/(sqrt(v/bc2) + eps), bc = 1 − beta^t computed by the caller. */
STRIX_API strix_status strix_adam_step(strix_backend *be, float *param, const float *grad,
                                       float *m, float *v, size_t n, float lr, float beta1,
                                       float beta2, float eps, float bias_correction1,
                                       float bias_correction2);
/* Inverted dropout with the counter RNG: element i is dropped iff U(seed, offset+i) < p;
 * out = keep ? in·scale : 0 (a select), mask = 1 or 0 (mask may be NULL). */
STRIX_API strix_status strix_dropout_forward(strix_backend *be, const float *in, float *out,
                                             float *mask, size_t n, float p, float scale,
                                             uint64_t seed, uint64_t offset);
/* Top-k per row of (rows, cols): vals/idx (rows, k) in rank order. NaN ranks above every number;
 * ties keep the lower column first; largest = false ranks the smallest first. 1 <= k <= cols. */
STRIX_API strix_status strix_top_k_rows(strix_backend *be, const float *in, float *vals,
                                        int32_t *idx, size_t rows, size_t cols, size_t k,
                                        bool largest);

#ifdef __cplusplus
}
#endif

/* The primitive groups beyond the GPT's (same rules as above). */
#include "strix/ops/cnn.h"
#include "strix/ops/lrp.h"
#include "strix/ops/logic.h"
#include "strix/ops/recurrent.h"
#include "strix/ops/ssm.h"
#include "strix/ops/rl.h"

#endif
