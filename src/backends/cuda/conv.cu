/*
 * conv.cu - CUDA/HIP backend: im2col, col2im_add, add_channel_vector and the fused Conv2d forward
 * and backward (include/strix/ops/cnn.h). One GPU thread per lane of the functions of
 * kernels/cnn.h and kernels/norm.h that the CPU loops call:
 *   im2col              one thread per element of col (a one-column strix_im2col_tap_range:
 *                       a copy, bit-exact);
 *   col2im_add          a gather, one thread per pixel (strix_col2im_pixel: taps i descending,
 *                       then j descending, onto the pixel's value: the CPU's bits);
 *   add_channel_vector  one thread per element (bit-exact).
 * The fused Conv2d runs over chunks of examples whose col fits CONV_CHUNK_FLOATS (at least one
 * example, in the backward one group), in a buffer of the caching allocator: im2col of the
 * chunk, then the backend's strided-batched GEMM slot (cuBLAS, or the own tiled kernel) with the
 * weight shared by every item (stride 0):
 *   forward   z_e = W·col_e, then out = z + bias (add_channel_vector's kernel);
 *   backward  dweight: the sum S_g of each group of STRIX_CONV_GROUP examples as one GEMM
 *             whose k runs over the group's (example, q) (col and dy copied into a layout that
 *             puts the group's examples side by side; all full groups in one batched call),
 *             then one thread per weight adds the groups in order (S_0 + S_1) + ... and that
 *             total into dweight, as the CPU does;
 *             dbias: one thread per output channel, each group's 16-lane sum in group order
 *             (bit-exact); dx: dcol_e = Wᵀ·dy_e, then the col2im gather from 0.0f.
 * Inside a GEMM the sum order is the GEMM's: cuBLAS's own, so z, dweight and dx match the CPU to
 * rounding (1e-4 relative); with the own kernel (STRIX_CUDA_GEMM=own), which sums k ascending
 * from 0.0f, they are the bits of the "cpu" backend (own GEMM). Everything else is the CPU's
 * order. Results repeat from run to run: cuBLAS runs without
 * atomics, and nothing here uses any.
 */
#include "backends/cuda/cuda_internal.h"
#include "kernels/cnn.h"
#include "kernels/norm.h"

/* Floats of col per chunk of examples of the fused Conv2d (64 MiB). */
#define CONV_CHUNK_FLOATS ((size_t)16 << 20)

// ---- kernels -----------------------------------------------------------------------------------

/* col (planes, kh·kw, oh·ow) from planes (h, w): element idx of col per thread. */
static __global__ void im2col_kernel(const float *in, float *col, size_t total, size_t h, size_t w,
                                     size_t oh, size_t ow, strix_conv_geom g) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    size_t q_n = oh * ow, taps = g.kh * g.kw;
    size_t q = idx % q_n, row = idx / q_n, tap = row % taps, p = row / taps;
    strix_im2col_tap_range(in + p * h * w, col + idx, tap / g.kw, tap % g.kw, h, w, oh, ow, q,
                           q + 1, &g);
}

/* out (planes, h, w) from col (planes, kh·kw, oh·ow): one pixel per thread, from its value in out
 * (`+=`) or from 0.0f (`=`, from_zero). */
static __global__ void col2im_kernel(const float *col, float *out, size_t total, size_t h, size_t w,
                                     size_t oh, size_t ow, strix_conv_geom g, bool from_zero) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    size_t pix = idx % (h * w), p = idx / (h * w);
    const float *col_ch = col + p * g.kh * g.kw * oh * ow;
    float acc = from_zero ? 0.0f : out[idx];
    out[idx] = strix_col2im_pixel(col_ch, acc, pix / w, pix % w, oh, ow, &g);
}

/* out = in + vec[channel] over (rows = n·c, inner): one element per thread. */
static __global__ void add_channel_vector_kernel(const float *in, const float *vec, float *out,
                                                 size_t total, size_t c, size_t inner) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    out[idx] = in[idx] + vec[(idx / inner) % c];
}

/* dbias[o] += (T_0 + T_1) + ...: T_g the 16-lane sum of rows dy_e[o][·] of group g (examples
 * ascending), as the CPU's conv_backward_groups. One output channel per thread. */
static __global__ void conv_dbias_kernel(const float *dy, float *dbias, size_t n, size_t oc,
                                         size_t q_n) {
    size_t o = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= oc) return;
    float total = 0.0f;
    for (size_t e0 = 0; e0 < n; e0 += STRIX_CONV_GROUP) {
        size_t e1 = e0 + STRIX_CONV_GROUP < n ? e0 + STRIX_CONV_GROUP : n;
        float lanes[STRIX_NORM_LANES];
        strix_norm_lanes_zero(lanes);
        for (size_t e = e0; e < e1; e++) strix_norm_lanes_add(lanes, dy + (e * oc + o) * q_n, q_n);
        float t = strix_norm_lanes_total(lanes);
        total = e0 == 0 ? t : total + t;
    }
    dbias[o] += total;
}

/* The group sums sums[g·len + k] (groups of one chunk) added in group order onto the running
 * total: acc = first ? S_0 : total[k]; acc += S_g for the other groups; then dweight[k] += acc
 * (the last chunk, dweight given) or total[k] = acc. One weight per thread. */
static __global__ void conv_fold_kernel(const float *sums, size_t groups, size_t len, float *total,
                                        bool first, float *dweight) {
    size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= len) return;
    float acc = first ? sums[k] : total[k];
    for (size_t g = first ? 1 : 0; g < groups; g++) acc += sums[g * len + k];
    if (dweight)
        dweight[k] += acc;
    else
        total[k] = acc;
}

/* Where element (example e, row r, column q) of a chunk goes in the grouped layout of the
 * backward's weight sums: group gi = e / G holds its examples side by side, (rows, width) with
 * width = (examples of the group)·q_n, example slot s at columns s·q_n... (groups before it are
 * full: rows·G·q_n each). ce: examples of the chunk. */
static __device__ size_t conv_grouped_at(size_t e, size_t r, size_t q, size_t rows, size_t q_n,
                                         size_t ce) {
    size_t gi = e / STRIX_CONV_GROUP, s = e % STRIX_CONV_GROUP, e_first = gi * STRIX_CONV_GROUP;
    size_t width = (ce - e_first < STRIX_CONV_GROUP ? ce - e_first : STRIX_CONV_GROUP) * q_n;
    return gi * rows * STRIX_CONV_GROUP * q_n + r * width + s * q_n + q;
}

/* im2col of ce examples (c planes each) into the grouped layout (rows P = c·kh·kw): one element
 * per thread, the value of im2col_kernel. */
static __global__ void im2col_grouped_kernel(const float *in, float *col, size_t total, size_t c,
                                             size_t h, size_t w, size_t oh, size_t ow,
                                             strix_conv_geom g, size_t ce) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    size_t q_n = oh * ow, taps = g.kh * g.kw, P = c * taps;
    size_t q = idx % q_n, p = idx / q_n % P, e = idx / q_n / P, tap = p % taps;
    float *dst = col + conv_grouped_at(e, p, q, P, q_n, ce);
    strix_im2col_tap_range(in + (e * c + p / taps) * h * w, dst, tap / g.kw, tap % g.kw, h, w, oh,
                           ow, q, q + 1, &g);
}

/* dy (ce, oc, q_n) copied into the grouped layout (rows oc): one element per thread. */
static __global__ void conv_group_dy_kernel(const float *dy, float *dy_grouped, size_t total,
                                            size_t oc, size_t q_n, size_t ce) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    size_t q = idx % q_n, o = idx / q_n % oc, e = idx / q_n / oc;
    dy_grouped[conv_grouped_at(e, o, q, oc, q_n, ce)] = dy[idx];
}

// ---- launchers ---------------------------------------------------------------------------------

/* im2col of `planes` planes (a launch; no checks). */
static void launch_im2col(strix_backend *be, const float *in, float *col, size_t planes, size_t h,
                          size_t w, size_t oh, size_t ow, const strix_conv_geom *g) {
    size_t total = planes * g->kh * g->kw * oh * ow;
    im2col_kernel<<<cuda_blocks(total), CUDA_BLOCK, 0, cuda_stream(be)>>>(in, col, total, h, w,
                                                                          oh, ow, *g);
}

/* col2im of `planes` planes (a launch; no checks). */
static void launch_col2im(strix_backend *be, const float *col, float *out, size_t planes,
                          size_t h, size_t w, size_t oh, size_t ow, const strix_conv_geom *g,
                          bool from_zero) {
    size_t total = planes * h * w;
    col2im_kernel<<<cuda_blocks(total), CUDA_BLOCK, 0, cuda_stream(be)>>>(col, out, total, h, w,
                                                                          oh, ow, *g, from_zero);
}

strix_status cuda_im2col(strix_backend *be, const float *in, float *col, size_t n, size_t c,
                         size_t h, size_t w, const strix_conv_geom *g) {
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    if (n * c * g->kh * g->kw * oh * ow == 0) return STRIX_OK;
    launch_im2col(be, in, col, n * c, h, w, oh, ow, g);
    return cuda_launched(be, "im2col");
}

strix_status cuda_col2im_add(strix_backend *be, const float *col, float *out, size_t n, size_t c,
                             size_t h, size_t w, const strix_conv_geom *g) {
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    if (oh == 0 || ow == 0 || n * c * h * w == 0) return STRIX_OK;
    launch_col2im(be, col, out, n * c, h, w, oh, ow, g, false);
    return cuda_launched(be, "col2im_add");
}

strix_status cuda_add_channel_vector(strix_backend *be, const float *in, const float *vec,
                                     float *out, size_t n, size_t c, size_t inner) {
    size_t total = n * c * inner;
    if (total == 0) return STRIX_OK;
    add_channel_vector_kernel<<<cuda_blocks(total), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        in, vec, out, total, c, inner);
    return cuda_launched(be, "add_channel_vector");
}

// ---- fused Conv2d ------------------------------------------------------------------------------

/* Examples per chunk whose col (P·Q floats each) fits CONV_CHUNK_FLOATS (>= 1, <= n). */
static size_t conv_chunk(size_t n, size_t col_floats) {
    size_t chunk = CONV_CHUNK_FLOATS / (col_floats ? col_floats : 1);
    if (chunk < 1) chunk = 1;
    return chunk < n ? chunk : n;
}

/* The batch description of a strided-batched GEMM: C_i = op(A_i)·op(B_i) + beta·C_i. */
static strix_gemm_batch conv_gemm(const float *a, size_t lda, size_t stride_a, bool ta,
                                  const float *b, size_t ldb, size_t stride_b, bool tb, float *c,
                                  size_t ldc, size_t stride_c, size_t m, size_t k, size_t n,
                                  size_t batch, float beta) {
    strix_gemm_batch gb = {};
    gb.a = a, gb.lda = lda, gb.stride_a = stride_a, gb.ta = ta;
    gb.b = b, gb.ldb = ldb, gb.stride_b = stride_b, gb.tb = tb;
    gb.c = c, gb.ldc = ldc, gb.stride_c = stride_c;
    gb.m = m, gb.k = k, gb.n = n, gb.batch = batch;
    gb.alpha = 1.0f, gb.beta = beta;
    gb.skip = STRIX_GEMM_FULL;
    return gb;
}

strix_status cuda_conv2d_forward(strix_backend *be, const float *in, const float *weight,
                                 const float *bias, float *z, float *out, size_t n, size_t c,
                                 size_t h, size_t w, size_t oc, const strix_conv_geom *g) {
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    size_t P = c * g->kh * g->kw, Q = oh * ow;
    if (n == 0 || oc == 0 || Q == 0) return STRIX_OK;
    if (P == 0) { /* no inputs: z = 0 */
        CUDA_TRY(cudaMemsetAsync(z, 0, n * oc * Q * sizeof(float), cuda_stream(be)));
    } else {
        size_t chunk = conv_chunk(n, P * Q);
        float *col = NULL;
        STRIX_TRY(cuda_alloc(be, chunk * P * Q * sizeof(float), (void **)&col));
        strix_status s = STRIX_OK;
        for (size_t e0 = 0; e0 < n && s == STRIX_OK; e0 += chunk) {
            size_t ce = n - e0 < chunk ? n - e0 : chunk;
            launch_im2col(be, in + e0 * c * h * w, col, ce * c, h, w, oh, ow, g);
            s = cuda_launched(be, "conv2d_forward (im2col)");
            if (s != STRIX_OK) break;
            /* z_e (oc, Q) = W (oc, P) · col_e (P, Q) */
            strix_gemm_batch gb = conv_gemm(weight, P, 0, false, col, Q, P * Q, false,
                                            z + e0 * oc * Q, Q, oc * Q, oc, P, Q, ce, 0.0f);
            s = cuda_gemm_batched(be, &gb);
        }
        cuda_free_buffer(be, col); /* one stream: the queued kernels run before any reuse */
        STRIX_TRY(s);
    }
    if (bias) STRIX_TRY(cuda_add_channel_vector(be, z, bias, out, n, oc, Q));
    return STRIX_OK;
}

/* What every chunk of the backward needs. */
typedef struct conv_back {
    const float *in, *weight, *dy;
    float *dweight, *dx;
    size_t n, c, h, w, oc, oh, ow, P, Q;
    const strix_conv_geom *g;
    float *col;   /* chunk·P·Q: the chunk's col (grouped layout), then its dcol (plain) */
    float *dy_g;  /* chunk·oc·Q: the chunk's dy in the grouped layout */
    float *sums;  /* (groups of a chunk, oc, P): the groups' weight sums */
    float *total; /* (oc, P): the groups' sum so far (several chunks only) */
} conv_back;

/* Examples [e0, e0 + ce) (e0 a multiple of STRIX_CONV_GROUP): their dweight group sums folded
 * onto the total (into dweight at the last chunk), and their dx. */
static strix_status conv_backward_chunk(strix_backend *be, const conv_back *cb, size_t e0,
                                        size_t ce) {
    size_t P = cb->P, Q = cb->Q, oc = cb->oc, plane = cb->h * cb->w;
    if (cb->dweight) {
        /* S_g (oc, P) = dy_g (oc, width) · col_gᵀ: the group's examples side by side along k,
         * so each sum runs over the group's (example, q) ascending, as the CPU's */
        size_t total = ce * P * Q, G = STRIX_CONV_GROUP;
        im2col_grouped_kernel<<<cuda_blocks(total), CUDA_BLOCK, 0, cuda_stream(be)>>>(
            cb->in + e0 * cb->c * plane, cb->col, total, cb->c, cb->h, cb->w, cb->oh, cb->ow,
            *cb->g, ce);
        STRIX_TRY(cuda_launched(be, "conv2d_backward (im2col)"));
        total = ce * oc * Q;
        conv_group_dy_kernel<<<cuda_blocks(total), CUDA_BLOCK, 0, cuda_stream(be)>>>(
            cb->dy + e0 * oc * Q, cb->dy_g, total, oc, Q, ce);
        STRIX_TRY(cuda_launched(be, "conv2d_backward (dy by groups)"));
        size_t full = ce / G, rest = ce % G;
        if (full > 0) { /* the full groups, k = G·Q */
            strix_gemm_batch gb = conv_gemm(cb->dy_g, G * Q, oc * G * Q, false, cb->col, G * Q,
                                            P * G * Q, true, cb->sums, P, oc * P, oc, G * Q, P,
                                            full, 0.0f);
            STRIX_TRY(cuda_gemm_batched(be, &gb));
        }
        if (rest > 0) { /* the last, smaller group, k = rest·Q */
            strix_gemm_batch gb = conv_gemm(cb->dy_g + full * oc * G * Q, rest * Q, 0, false,
                                            cb->col + full * P * G * Q, rest * Q, 0, true,
                                            cb->sums + full * oc * P, P, 0, oc, rest * Q, P, 1,
                                            0.0f);
            STRIX_TRY(cuda_gemm_batched(be, &gb));
        }
        size_t groups = (ce + STRIX_CONV_GROUP - 1) / STRIX_CONV_GROUP, len = oc * P;
        bool last = e0 + ce == cb->n;
        conv_fold_kernel<<<cuda_blocks(len), CUDA_BLOCK, 0, cuda_stream(be)>>>(
            cb->sums, groups, len, cb->total, e0 == 0, last ? cb->dweight : NULL);
        STRIX_TRY(cuda_launched(be, "conv2d_backward (dweight)"));
    }
    if (cb->dx) { /* dcol_e (P, Q) = Wᵀ (P, oc) · dy_e (oc, Q), then each pixel from 0.0f */
        strix_gemm_batch gb = conv_gemm(cb->weight, P, 0, true, cb->dy + e0 * oc * Q, Q, oc * Q,
                                        false, cb->col, Q, P * Q, P, oc, Q, ce, 0.0f);
        STRIX_TRY(cuda_gemm_batched(be, &gb));
        launch_col2im(be, cb->col, cb->dx + e0 * cb->c * plane, ce * cb->c, cb->h, cb->w, cb->oh,
                      cb->ow, cb->g, true);
        STRIX_TRY(cuda_launched(be, "conv2d_backward (dx)"));
    }
    return STRIX_OK;
}

strix_status cuda_conv2d_backward(strix_backend *be, const float *in, const float *weight,
                                  const float *dy, float *dweight, float *dbias, float *dx,
                                  size_t n, size_t c, size_t h, size_t w, size_t oc,
                                  const strix_conv_geom *g) {
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    size_t P = c * g->kh * g->kw, Q = oh * ow;
    if (n == 0 || (!dweight && !dbias && !dx)) return STRIX_OK;
    if (Q == 0 || oc == 0) { /* no outputs: nothing reaches dx or the sums */
        if (dx && c * h * w > 0)
            CUDA_TRY(cudaMemsetAsync(dx, 0, n * c * h * w * sizeof(float), cuda_stream(be)));
        return STRIX_OK;
    }
    if (dbias) {
        conv_dbias_kernel<<<cuda_blocks(oc), CUDA_BLOCK, 0, cuda_stream(be)>>>(dy, dbias, n, oc,
                                                                               Q);
        STRIX_TRY(cuda_launched(be, "conv2d_backward (dbias)"));
    }
    if (P == 0 || (!dweight && !dx)) return STRIX_OK; /* P == 0: no weights, no input pixels */
    /* chunks of whole groups (or all n examples) */
    size_t chunk = conv_chunk(n, P * Q) / STRIX_CONV_GROUP * STRIX_CONV_GROUP;
    if (chunk < STRIX_CONV_GROUP) chunk = STRIX_CONV_GROUP;
    if (chunk > n) chunk = n;
    size_t col_floats = chunk * P * Q, dy_floats = dweight ? chunk * oc * Q : 0;
    size_t sum_floats = dweight ? (chunk + STRIX_CONV_GROUP - 1) / STRIX_CONV_GROUP * oc * P : 0;
    size_t total_floats = dweight && chunk < n ? oc * P : 0;
    float *buf = NULL;
    STRIX_TRY(cuda_alloc(be, (col_floats + dy_floats + sum_floats + total_floats) * sizeof(float),
                         (void **)&buf));
    float *dy_g = buf + col_floats, *sums = dy_g + dy_floats;
    conv_back cb = {in, weight, dy, dweight, dx, n, c, h, w, oc, oh, ow, P, Q, g,
                    buf, dy_g, sums, sums + sum_floats};
    strix_status s = STRIX_OK;
    for (size_t e0 = 0; e0 < n && s == STRIX_OK; e0 += chunk)
        s = conv_backward_chunk(be, &cb, e0, n - e0 < chunk ? n - e0 : chunk);
    cuda_free_buffer(be, buf); /* one stream: the queued kernels run before any reuse */
    return s;
}
