/*
 * conv.c - CPU backend: im2col, col2im_add, add_channel_vector and the fused Conv2d forward and
 * backward (include/strix/ops/cnn.h).
 *
 * The math is kernels/cnn.h (and the own GEMM of gemm.c); here threads split independent outputs
 * only: im2col and col2im by image planes (each plane owns its pixels and adds their taps in the
 * documented order), add_channel_vector by (example, channel) rows, the fused forward by
 * examples, the fused backward by fixed groups of STRIX_CONV_GROUP examples (each group's weight
 * and bias sums go to their own buffer; they are added in group order at the end). The fused
 * paths never store a batch-sized col: the GEMM packing takes the patches straight from the
 * image (a cpu_gemm_source), and dx is folded back plane by plane from one example's dcol in
 * the thread's scratch, so the working set of an example stays in L2. Results do not depend on
 * the thread count.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/cnn.h"
#include "kernels/norm.h"

#include <string.h>

/* Operands of im2col and col2im_add over image planes: planes (h, w) of the image, each with
 * its taps·oh·ow elements of col. */
typedef struct planes_args {
    const float *src;
    float *dst;
    size_t h, w, oh, ow;
    const strix_conv_geom *g;
} planes_args;

/* Planes [p0, p1) of im2col: src the image, dst col. */
static void im2col_range(void *args, size_t p0, size_t p1) {
    const planes_args *a = args;
    const strix_conv_geom *g = a->g;
    size_t h = a->h, w = a->w, oh = a->oh, ow = a->ow, taps = g->kh * g->kw;
    for (size_t p = p0; p < p1; p++)
        strix_im2col_example(a->src + p * h * w, a->dst + p * taps * oh * ow, 1, h, w, oh, ow, g);
}

strix_status cpu_im2col(strix_backend *be, const float *in, float *col, size_t n, size_t c,
                        size_t h, size_t w, const strix_conv_geom *g) {
    (void)be;
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    size_t taps = g->kh * g->kw, planes = n * c; /* rows of col: (example, channel, tap) */
    if (oh == 0 || ow == 0) return STRIX_OK;
    planes_args a = {in, col, h, w, oh, ow, g};
    cpu_parallel_for(planes, planes > 1 && CPU_WORTH(planes * taps * oh * ow), im2col_range, &a);
    return STRIX_OK;
}

/* Planes [p0, p1) of col2im_add: src col, dst the image. */
static void col2im_range(void *args, size_t p0, size_t p1) {
    const planes_args *a = args;
    const strix_conv_geom *g = a->g;
    size_t h = a->h, w = a->w, oh = a->oh, ow = a->ow, taps = g->kh * g->kw;
    for (size_t p = p0; p < p1; p++)
        strix_col2im_plane(a->src + p * taps * oh * ow, a->dst + p * h * w, h, w, oh, ow, g);
}

strix_status cpu_col2im_add(strix_backend *be, const float *col, float *out, size_t n, size_t c,
                            size_t h, size_t w, const strix_conv_geom *g) {
    (void)be;
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    size_t planes = n * c;
    if (oh == 0 || ow == 0) return STRIX_OK;
    planes_args a = {col, out, h, w, oh, ow, g};
    cpu_parallel_for(planes, planes > 1 && CPU_WORTH(planes * h * w * g->kh * g->kw),
                     col2im_range, &a);
    return STRIX_OK;
}

typedef struct channel_vector_args {
    const float *in, *vec;
    float *out;
    size_t c, inner;
} channel_vector_args;

/* (example, channel) rows [r0, r1) of add_channel_vector. */
static void channel_vector_range(void *args, size_t r0, size_t r1) {
    const channel_vector_args *a = args;
    const float *in = a->in, *vec = a->vec;
    float *out = a->out;
    size_t c = a->c, inner = a->inner;
    for (size_t r = r0; r < r1; r++) {
        float v = vec[r % c];
        const float *x = in + r * inner;
        float *y = out + r * inner;
        for (size_t k = 0; k < inner; k++) y[k] = x[k] + v;
    }
}

strix_status cpu_add_channel_vector(strix_backend *be, const float *in, const float *vec,
                                    float *out, size_t n, size_t c, size_t inner) {
    (void)be;
    size_t rows = n * c;
    channel_vector_args a = {in, vec, out, c, inner};
    cpu_parallel_for(rows, rows > 1 && CPU_WORTH(rows * inner), channel_vector_range, &a);
    return STRIX_OK;
}

// ---- fused Conv2d ------------------------------------------------------------------------------

/* The col (P, Q) of one example as a GEMM source: the packing asks for pieces of its rows and
 * gets them straight from the image (kernels/cnn.h), so no col is stored. Rows come mostly in
 * ascending order; the tap of the last row is kept to step to the next without a division. */
typedef struct conv_patches {
    const float *in_e; /* (c, h, w) */
    size_t h, w, oh, ow;
    const strix_conv_geom *g;
    size_t row, ci, i, j; /* the last row asked for and its tap */
} conv_patches;

static void conv_patch_row(const void *ctx, size_t r, size_t c0, size_t count, float *dst) {
    conv_patches *cp = (conv_patches *)ctx; /* one per thread: its cursor may move */
    const strix_conv_geom *g = cp->g;
    if (r == cp->row + 1) {
        if (++cp->j == g->kw) {
            cp->j = 0;
            if (++cp->i == g->kh) cp->i = 0, cp->ci++;
        }
    } else if (r != cp->row) {
        size_t tap = r % (g->kh * g->kw);
        cp->ci = r / (g->kh * g->kw), cp->i = tap / g->kw, cp->j = tap % g->kw;
    }
    cp->row = r;
    strix_im2col_tap_range(cp->in_e + cp->ci * cp->h * cp->w, dst, cp->i, cp->j, cp->h, cp->w,
                           cp->oh, cp->ow, c0, c0 + count, g);
}

/* A source of the patches of example in_e (its cursor before row 0). */
static conv_patches conv_patches_of(const float *in_e, size_t h, size_t w, size_t oh, size_t ow,
                                    const strix_conv_geom *g) {
    return (conv_patches){.in_e = in_e, .h = h, .w = w, .oh = oh, .ow = ow, .g = g,
                          .row = (size_t)-1, .ci = 0, .i = 0, .j = (size_t)-1};
}

/* One example's forward on the calling thread: z_e = W·col (W packed once for all examples, col
 * produced while packing), out_e = z_e + bias. */
static void conv_forward_example(cpu_gemm_workspace *ws, const float *in_e, const float *packed_w,
                                 const float *bias, float *z_e, float *out_e, size_t c, size_t h,
                                 size_t w, size_t oc, size_t oh, size_t ow,
                                 const strix_conv_geom *g) {
    size_t P = c * g->kh * g->kw, Q = oh * ow;
    conv_patches cp = conv_patches_of(in_e, h, w, oh, ow, g);
    cpu_gemm_source col = {conv_patch_row, &cp};
    cpu_gemm_run(ws, &(cpu_gemm_args){.packed_a = packed_w, .b_src = &col, .ldb = Q, .c = z_e,
                                      .ldc = Q, .m = oc, .k = P, .n = Q});
    if (bias)
        for (size_t o = 0; o < oc; o++) {
            const float *x = z_e + o * Q;
            float *y = out_e + o * Q, v = bias[o];
            for (size_t k = 0; k < Q; k++) y[k] = x[k] + v;
        }
}

typedef struct conv_forward_args {
    cpu_context *ctx;
    const float *in, *packed_w, *bias;
    float *z, *out;
    size_t c, h, w, oc, oh, ow;
    const strix_conv_geom *g;
} conv_forward_args;

/* Examples [e0, e1) of the forward, each on the thread's workspace. */
static void conv_forward_range(void *args, size_t e0, size_t e1) {
    const conv_forward_args *a = args;
    size_t c = a->c, h = a->h, w = a->w, oc = a->oc, Q = a->oh * a->ow;
    cpu_gemm_workspace *ws = &a->ctx->workspaces[cpu_thread_index()];
    for (size_t e = e0; e < e1; e++)
        conv_forward_example(ws, a->in + e * c * h * w, a->packed_w, a->bias, a->z + e * oc * Q,
                             a->out + e * oc * Q, c, h, w, oc, a->oh, a->ow, a->g);
}

strix_status cpu_conv2d_forward(strix_backend *be, const float *in, const float *weight,
                                const float *bias, float *z, float *out, size_t n, size_t c,
                                size_t h, size_t w, size_t oc, const strix_conv_geom *g) {
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    size_t P = c * g->kh * g->kw, Q = oh * ow;
    if (n == 0 || oc == 0 || Q == 0) return STRIX_OK;
    cpu_context *ctx = be->ctx;
    int threads = cpu_max_threads();
    /* examples in parallel, one per thread at a time; a batch smaller than the thread count runs
     * its GEMMs threaded instead */
    bool big = CPU_WORTH(n * oc * P * Q / 8); /* multiply-adds / 8, as the GEMM */
    bool per_example = threads == 1 || n >= (size_t)threads || !big;
    STRIX_TRY(cpu_gemm_reserve(ctx, threads, P));
    size_t packed = cpu_gemm_packed_a_floats(oc, P);
    STRIX_TRY(cpu_scratch_reserve(ctx, 1, per_example ? packed : P * Q));
    if (per_example) { /* W packed once, in thread 0's scratch, for every thread */
        float *packed_w = ctx->workspaces[0].scratch;
        cpu_gemm_pack_a(weight, P, false, oc, P, packed_w);
        conv_forward_args a = {ctx, in, packed_w, bias, z, out, c, h, w, oc, oh, ow, g};
        cpu_parallel_for(n, threads > 1 && n > 1 && big, conv_forward_range, &a);
        return STRIX_OK;
    }
    float *col = ctx->workspaces[0].scratch;
    for (size_t e = 0; e < n; e++) {
        STRIX_TRY(cpu_im2col(be, in + e * c * h * w, col, 1, c, h, w, g));
        STRIX_TRY(cpu_gemm_ex(be, weight, false, col, false, z + e * oc * Q, oc, P, Q, 0.0f));
        if (bias)
            STRIX_TRY(cpu_add_channel_vector(be, z + e * oc * Q, bias, out + e * oc * Q, 1, oc,
                                             Q));
    }
    return STRIX_OK;
}

/* Where the backward's per-thread scratch puts things: col (P·Q, also dcol), the bias lanes
 * (16·oc), then the sums of each of the thread's groups (weight sums: oc·P, as dW or dWᵀ;
 * oc bias sums). */
typedef struct conv_back {
    const float *in, *weight, *dy;
    const float *packed_wt; /* Wᵀ (P, oc) packed once (dx only) */
    bool dweight, dbias;
    bool dw_t; /* the weight sums are kept as dWᵀ (P, oc) (when P > oc) */
    float *dx;
    size_t n, c, h, w, oc, oh, ow, P, Q, groups;
    const strix_conv_geom *g;
} conv_back;

static size_t conv_group_floats(const conv_back *cb) { return cb->oc * cb->P + cb->oc; }

/* First group of `part` of `parts` (contiguous ranges; the split changes only which thread runs
 * a group). */
static size_t conv_first_group(const conv_back *cb, size_t part, size_t parts) {
    return cb->groups * part / parts;
}

/* Groups [g0, g1) on the calling thread: their weight and bias sums into the thread's scratch,
 * and dx of their examples. */
static void conv_backward_groups(cpu_gemm_workspace *ws, const conv_back *cb, size_t g0,
                                 size_t g1) {
    size_t P = cb->P, Q = cb->Q, oc = cb->oc, taps = cb->g->kh * cb->g->kw;
    size_t plane = cb->h * cb->w;
    float *col = ws->scratch, *lanes = col + P * Q, *sums = lanes + STRIX_NORM_LANES * oc;
    for (size_t grp = g0; grp < g1; grp++) {
        float *dw_sum = sums + (grp - g0) * conv_group_floats(cb), *db_sum = dw_sum + oc * P;
        if (cb->dweight)
            for (size_t k = 0; k < oc * P; k++) dw_sum[k] = 0.0f;
        if (cb->dbias)
            for (size_t o = 0; o < oc; o++) strix_norm_lanes_zero(lanes + o * STRIX_NORM_LANES);
        size_t e_end = (grp + 1) * STRIX_CONV_GROUP < cb->n ? (grp + 1) * STRIX_CONV_GROUP : cb->n;
        for (size_t e = grp * STRIX_CONV_GROUP; e < e_end; e++) {
            const float *dy_e = cb->dy + e * oc * Q;
            if (cb->dweight) { /* the group's sums continue over this example's q */
                conv_patches cp = conv_patches_of(cb->in + e * cb->c * plane, cb->h, cb->w,
                                                  cb->oh, cb->ow, cb->g);
                cpu_gemm_source patches = {conv_patch_row, &cp};
                if (cb->dw_t) /* dWᵀ (P, oc) += col·dy_eᵀ: the larger side as rows */
                    cpu_gemm_run(ws, &(cpu_gemm_args){.a_src = &patches, .lda = Q, .b = dy_e,
                                                      .ldb = Q, .tb = true, .c = dw_sum,
                                                      .ldc = oc, .m = P, .k = Q, .n = oc,
                                                      .chain = true});
                else /* dW (oc, P) += dy_e·colᵀ */
                    cpu_gemm_run(ws, &(cpu_gemm_args){.a = dy_e, .lda = Q, .b_src = &patches,
                                                      .ldb = Q, .tb = true, .c = dw_sum,
                                                      .ldc = P, .m = oc, .k = Q, .n = P,
                                                      .chain = true});
            }
            if (cb->dbias)
                for (size_t o = 0; o < oc; o++) { /* local lanes, so that the adds vectorise */
                    float row[STRIX_NORM_LANES];
                    memcpy(row, lanes + o * STRIX_NORM_LANES, sizeof row);
                    strix_norm_lanes_add(row, dy_e + o * Q, Q);
                    memcpy(lanes + o * STRIX_NORM_LANES, row, sizeof row);
                }
            if (cb->dx) { /* dcol = Wᵀ·dy_e, then each plane from 0 */
                cpu_gemm_run(ws, &(cpu_gemm_args){.packed_a = cb->packed_wt, .b = dy_e, .ldb = Q,
                                                  .c = col, .ldc = Q, .m = P, .k = oc, .n = Q});
                float *dx_e = cb->dx + e * cb->c * plane;
                for (size_t ci = 0; ci < cb->c; ci++) {
                    float *dst = dx_e + ci * plane;
                    for (size_t k = 0; k < plane; k++) dst[k] = 0.0f;
                    strix_col2im_plane(col + ci * taps * Q, dst, cb->h, cb->w, cb->oh, cb->ow,
                                       cb->g);
                }
            }
        }
        if (cb->dbias)
            for (size_t o = 0; o < oc; o++)
                db_sum[o] = strix_norm_lanes_total(lanes + o * STRIX_NORM_LANES);
    }
}

typedef struct conv_parts_args {
    cpu_context *ctx;
    const conv_back *cb;
    size_t parts;
} conv_parts_args;

/* Parts [t0, t1) of the backward: part t on workspace t (its groups' sums stay there). */
static void conv_backward_range(void *args, size_t t0, size_t t1) {
    const conv_parts_args *a = args;
    for (size_t t = t0; t < t1; t++)
        conv_backward_groups(&a->ctx->workspaces[t], a->cb, conv_first_group(a->cb, t, a->parts),
                             conv_first_group(a->cb, t + 1, a->parts));
}

strix_status cpu_conv2d_backward(strix_backend *be, const float *in, const float *weight,
                                 const float *dy, float *dweight, float *dbias, float *dx, size_t n,
                                 size_t c, size_t h, size_t w, size_t oc,
                                 const strix_conv_geom *g) {
    size_t oh = strix_conv_out_h(g, h), ow = strix_conv_out_w(g, w);
    conv_back cb = {.in = in, .weight = weight, .dy = dy, .dweight = dweight != NULL,
                    .dbias = dbias != NULL, .dx = dx, .n = n, .c = c, .h = h, .w = w, .oc = oc,
                    .oh = oh, .ow = ow, .P = c * g->kh * g->kw, .Q = oh * ow,
                    .groups = (n + STRIX_CONV_GROUP - 1) / STRIX_CONV_GROUP, .g = g,
                    .dw_t = c * g->kh * g->kw > oc};
    if (n == 0 || (!dweight && !dbias && !dx)) return STRIX_OK;
    if (cb.Q == 0 || oc == 0) { /* no outputs: nothing reaches dx or the sums */
        if (dx)
            for (size_t k = 0; k < n * c * h * w; k++) dx[k] = 0.0f;
        return STRIX_OK;
    }
    cpu_context *ctx = be->ctx;
    int threads = cpu_max_threads();
    size_t parts = (size_t)threads < cb.groups ? (size_t)threads : cb.groups;
    if (parts > 1 && !CPU_WORTH(n * oc * cb.P * cb.Q / 8)) parts = 1;
    size_t most = 0; /* groups of the busiest part */
    for (size_t t = 0; t < parts; t++) {
        size_t count = conv_first_group(&cb, t + 1, parts) - conv_first_group(&cb, t, parts);
        if (count > most) most = count;
    }
    size_t k_max = cb.Q > oc ? cb.Q : oc;
    size_t own = cb.P * cb.Q + STRIX_NORM_LANES * oc + most * conv_group_floats(&cb);
    size_t packed = dx ? cpu_gemm_packed_a_floats(cb.P, oc) : 0;
    STRIX_TRY(cpu_gemm_reserve(ctx, (int)parts, k_max));
    STRIX_TRY(cpu_scratch_reserve(ctx, (int)parts, own + packed));
    if (dx) { /* Wᵀ packed once, after part 0's own scratch, for every part */
        float *packed_wt = ctx->workspaces[0].scratch + own;
        cpu_gemm_pack_a(weight, cb.P, true, cb.P, oc, packed_wt);
        cb.packed_wt = packed_wt;
    }
    conv_parts_args pa = {ctx, &cb, parts};
    cpu_parallel_chunks(parts, parts, parts > 1, conv_backward_range, &pa);
    /* the groups' sums added up in group order (in group 0's buffer), then into the grads */
    size_t floats = conv_group_floats(&cb);
    float *total = ctx->workspaces[0].scratch + cb.P * cb.Q + STRIX_NORM_LANES * oc;
    for (size_t t = 0, grp = 1; t < parts; t++) {
        const float *sums = ctx->workspaces[t].scratch + cb.P * cb.Q + STRIX_NORM_LANES * oc;
        for (; grp < conv_first_group(&cb, t + 1, parts); grp++) {
            const float *part = sums + (grp - conv_first_group(&cb, t, parts)) * floats;
            for (size_t k = 0; k < floats; k++) total[k] += part[k];
        }
    }
    if (dweight && cb.dw_t)
        for (size_t p = 0; p < cb.P; p++)
            for (size_t o = 0; o < oc; o++) dweight[o * cb.P + p] += total[p * oc + o];
    else if (dweight)
        for (size_t k = 0; k < oc * cb.P; k++) dweight[k] += total[k];
    if (dbias)
        for (size_t o = 0; o < oc; o++) dbias[o] += total[oc * cb.P + o];
    return STRIX_OK;
}
