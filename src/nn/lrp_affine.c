/*
 * lrp_affine.c - the LRP rules of affine modules (epsilon, gamma, alpha-beta, z-box), shared by
 * Linear and Conv2d, built as Zennit 1.0.0 builds them (zennit/rules.py): forward passes of the
 * module's map with modified inputs and weights, the stabilised divide (lrp_stabilized_divide),
 * then the transposed map (a gradient) times the modified input. The module supplies the map as
 * callbacks (rules_internal.h); nothing here knows Linear or Conv2d.
 *
 * The examples are independent, so the batch runs in chunks of a.chunk examples: the scratch
 * (modified inputs, outputs, the module's own im2col buffer) stays small and in cache. Every
 * primitive's per-element order does not depend on the chunk, so neither does the result (on the
 * own GEMM kernel; BLAS matches to rounding). Scratch is allocated per call and freed before
 * returning. Does not: choose rules (lrp.h composites) or merge BatchNorm (lrp_fold.c).
 */
#include <math.h>

#include "nn/rules_internal.h"

strix_status lrp_scratch(strix_backend *be, size_t n, float **out) {
    *out = NULL;
    return strix_alloc(be, (n ? n : 1) * sizeof(float), (void **)out);
}

/* Scratch of one rule evaluation, carved from one allocation. */
typedef struct affine_work {
    float *xp, *xn, *g, *acc; /* chunk inputs each: x⁺, x⁻ (or the z-box bounds), a gradient,
                               * a partial sum */
    float *z, *s, *o;         /* chunk outputs each: a denominator, its ratio, the gate */
    float *wa, *wb;           /* w_n each: modified weights */
    float *ba, *bb;           /* b_n each: modified biases */
    float *block;
} affine_work;

/* One chunk: items [first, first + count), pointers already offset. */
typedef struct affine_chunk {
    size_t count, in_n, out_n;
    const float *x, *r, *z_pre, *z_full;
    float *r_in;
} affine_chunk;

static strix_status work_alloc(const lrp_affine *a, size_t chunk, affine_work *wk) {
    size_t in_n = chunk * a->in_item, out_n = chunk * a->out_item;
    size_t total = 4 * in_n + 3 * out_n + 2 * a->w_n + 2 * a->b_n;
    STRIX_TRY(lrp_scratch(a->be, total, &wk->block));
    float *at = wk->block;
    wk->xp = at, at += in_n;
    wk->xn = at, at += in_n;
    wk->g = at, at += in_n;
    wk->acc = at, at += in_n;
    wk->z = at, at += out_n;
    wk->s = at, at += out_n;
    wk->o = at, at += out_n;
    wk->wa = at, at += a->w_n;
    wk->wb = at, at += a->w_n;
    wk->ba = at, at += a->b_n;
    wk->bb = at;
    return STRIX_OK;
}

static strix_status positive_part(strix_backend *be, const float *in, float *out, size_t n) {
    return strix_clamp(be, in, 0.0f, INFINITY, out, n);
}

static strix_status negative_part(strix_backend *be, const float *in, float *out, size_t n) {
    return strix_clamp(be, in, -INFINITY, 0.0f, out, n);
}

/* out = in⊙map^T(s; w) when first, else out += in⊙map^T(s; w); g is scratch. */
static strix_status add_term(const lrp_affine *a, const affine_chunk *c, const float *in,
                             const float *s, const float *w, float *g, float *out, bool first) {
    STRIX_TRY(a->backward(a->ctx, c->count, s, w, g));
    if (first) return strix_mul(a->be, in, g, out, c->in_n);
    STRIX_TRY(strix_mul(a->be, in, g, g, c->in_n));
    return strix_add(a->be, out, g, out, c->in_n);
}

/* Splits the chunk's input into x⁺ and x⁻; *has_neg is false when x⁻ is all zeros (inputs from
 * a ReLU), whose terms are then skipped: they are exact zeros (0·w = 0 added to z, 0·g = 0 added
 * to R) unless a gradient is inf or NaN. A NaN input keeps them. */
static strix_status split_input(const lrp_affine *a, const affine_chunk *c, affine_work *wk,
                                bool *has_neg) {
    STRIX_TRY(positive_part(a->be, c->x, wk->xp, c->in_n));
    STRIX_TRY(negative_part(a->be, c->x, wk->xn, c->in_n));
    double squares;
    STRIX_TRY(strix_sum_squares(a->be, wk->xn, c->in_n, &squares));
    *has_neg = !(squares == 0.0);
    return STRIX_OK;
}

/* One half of the alpha-beta and gamma rules: z = x⁺·wa (+ ba) + x⁻·wb, s = gated r/stab(z),
 * out = x⁺⊙wa^T s + x⁻⊙wb^T s (the x⁻ terms only when has_neg). */
static strix_status signed_half(const lrp_affine *a, const affine_chunk *c, affine_work *wk,
                                bool has_neg, const float *wa, const float *wb, const float *ba,
                                const float *gate, strix_lrp_gate mode, float eps, float *out) {
    STRIX_TRY(a->forward(a->ctx, c->count, wk->xp, wa, ba, wk->z, false));
    if (has_neg) STRIX_TRY(a->forward(a->ctx, c->count, wk->xn, wb, NULL, wk->z, true));
    STRIX_TRY(strix_lrp_stabilized_divide(a->be, c->r, wk->z, gate, wk->s, c->out_n, eps, mode));
    STRIX_TRY(add_term(a, c, wk->xp, wk->s, wa, wk->g, out, true));
    if (!has_neg) return STRIX_OK;
    return add_term(a, c, wk->xn, wk->s, wb, wk->g, out, false);
}

/* The unmodified map output, with the bias if `bias`: kept by the module, or recomputed into
 * scratch. */
static strix_status plain_output(const lrp_affine *a, const affine_chunk *c, bool bias,
                                 float *scratch, const float **z) {
    const float *kept = bias ? c->z_full : c->z_pre;
    if (kept) {
        *z = kept;
        return STRIX_OK;
    }
    *z = scratch;
    return a->forward(a->ctx, c->count, c->x, a->w, bias ? a->b : NULL, scratch, false);
}

static strix_status epsilon_rule(const lrp_affine *a, const affine_chunk *c, affine_work *wk,
                                 const strix_lrp_rule *rule) {
    const float *z;
    STRIX_TRY(plain_output(a, c, rule->bias_in_denominator && a->b, wk->z, &z));
    STRIX_TRY(strix_lrp_stabilized_divide(a->be, c->r, z, NULL, wk->s, c->out_n, rule->epsilon,
                                          STRIX_LRP_GATE_NONE));
    return add_term(a, c, c->x, wk->s, a->w, wk->g, c->r_in, true);
}

static strix_status alpha_beta_rule(const lrp_affine *a, const affine_chunk *c, affine_work *wk,
                                    const strix_lrp_rule *rule) {
    strix_backend *be = a->be;
    bool bias = rule->bias_in_denominator && a->b, has_neg;
    STRIX_TRY(split_input(a, c, wk, &has_neg));
    // positive half: x⁺W⁺ + b⁺ + x⁻W⁻
    STRIX_TRY(signed_half(a, c, wk, has_neg, wk->wa, wk->wb, bias ? wk->ba : NULL, NULL,
                          STRIX_LRP_GATE_NONE, rule->epsilon, wk->acc));
    if (rule->beta == 0.0f)
        return strix_axpby(be, rule->alpha, wk->acc, 0.0f, NULL, c->r_in, c->in_n);
    // negative half: x⁺W⁻ + b⁻ + x⁻W⁺; R = alpha·pos − beta·neg
    STRIX_TRY(signed_half(a, c, wk, has_neg, wk->wb, wk->wa, bias ? wk->bb : NULL, NULL,
                          STRIX_LRP_GATE_NONE, rule->epsilon, c->r_in));
    return strix_axpby(be, rule->alpha, wk->acc, -rule->beta, c->r_in, c->r_in, c->in_n);
}

static strix_status gamma_rule(const lrp_affine *a, const affine_chunk *c, affine_work *wk,
                               const strix_lrp_rule *rule) {
    strix_backend *be = a->be;
    bool bias = rule->bias_in_denominator && a->b, has_neg;
    // the gate: the unmodified output (with the bias when it is in the denominator)
    const float *o;
    STRIX_TRY(plain_output(a, c, bias, wk->o, &o));
    STRIX_TRY(split_input(a, c, wk, &has_neg));
    // units with a positive output: x⁺W₊ + b₊ + x⁻W₋; negative: x⁺W₋ + b₋ + x⁻W₊
    STRIX_TRY(signed_half(a, c, wk, has_neg, wk->wa, wk->wb, bias ? wk->ba : NULL, o,
                          STRIX_LRP_GATE_POSITIVE, rule->epsilon, wk->acc));
    STRIX_TRY(signed_half(a, c, wk, has_neg, wk->wb, wk->wa, bias ? wk->bb : NULL, o,
                          STRIX_LRP_GATE_NEGATIVE, rule->epsilon, c->r_in));
    return strix_add(be, wk->acc, c->r_in, c->r_in, c->in_n);
}

static strix_status zbox_rule(const lrp_affine *a, const affine_chunk *c, affine_work *wk,
                              const strix_lrp_rule *rule) {
    strix_backend *be = a->be;
    STRIX_TRY(strix_fill(be, wk->xp, rule->low, c->in_n));
    STRIX_TRY(strix_fill(be, wk->xn, rule->high, c->in_n));
    // z = xW − L·W⁺ − H·W⁻ with wa = −W⁺, wb = −W⁻ (Zennit's biases b, b⁺, b⁻ cancel)
    STRIX_TRY(a->forward(a->ctx, c->count, c->x, a->w, NULL, wk->z, false));
    STRIX_TRY(a->forward(a->ctx, c->count, wk->xp, wk->wa, NULL, wk->z, true));
    STRIX_TRY(a->forward(a->ctx, c->count, wk->xn, wk->wb, NULL, wk->z, true));
    STRIX_TRY(strix_lrp_stabilized_divide(be, c->r, wk->z, NULL, wk->s, c->out_n, rule->epsilon,
                                          STRIX_LRP_GATE_NONE));
    STRIX_TRY(add_term(a, c, c->x, wk->s, a->w, wk->g, c->r_in, true));
    STRIX_TRY(add_term(a, c, wk->xp, wk->s, wk->wa, wk->g, c->r_in, false));
    return add_term(a, c, wk->xn, wk->s, wk->wb, wk->g, c->r_in, false);
}

/* The modified weights and biases a rule uses for every chunk. */
static strix_status modify_params(const lrp_affine *a, affine_work *wk,
                                  const strix_lrp_rule *rule) {
    strix_backend *be = a->be;
    bool bias = rule->bias_in_denominator && a->b;
    switch (rule->kind) {
    case STRIX_LRP_ALPHA_BETA:
        STRIX_TRY(positive_part(be, a->w, wk->wa, a->w_n));
        STRIX_TRY(negative_part(be, a->w, wk->wb, a->w_n));
        if (bias) {
            STRIX_TRY(positive_part(be, a->b, wk->ba, a->b_n));
            STRIX_TRY(negative_part(be, a->b, wk->bb, a->b_n));
        }
        return STRIX_OK;
    case STRIX_LRP_GAMMA: {
        // W + γW⁺ and W + γW⁻ (Zennit's GammaMod: param + gamma·param.clamp(...)), same for b
        float gamma = rule->gamma;
        STRIX_TRY(positive_part(be, a->w, wk->wa, a->w_n));
        STRIX_TRY(strix_axpby(be, 1.0f, a->w, gamma, wk->wa, wk->wa, a->w_n));
        STRIX_TRY(negative_part(be, a->w, wk->wb, a->w_n));
        STRIX_TRY(strix_axpby(be, 1.0f, a->w, gamma, wk->wb, wk->wb, a->w_n));
        if (bias) {
            STRIX_TRY(positive_part(be, a->b, wk->ba, a->b_n));
            STRIX_TRY(strix_axpby(be, 1.0f, a->b, gamma, wk->ba, wk->ba, a->b_n));
            STRIX_TRY(negative_part(be, a->b, wk->bb, a->b_n));
            STRIX_TRY(strix_axpby(be, 1.0f, a->b, gamma, wk->bb, wk->bb, a->b_n));
        }
        return STRIX_OK;
    }
    case STRIX_LRP_ZBOX:
        // −W⁺ and −W⁻ (negation is exact), so every z-box term is added
        STRIX_TRY(positive_part(be, a->w, wk->wa, a->w_n));
        STRIX_TRY(strix_axpby(be, -1.0f, wk->wa, 0.0f, NULL, wk->wa, a->w_n));
        STRIX_TRY(negative_part(be, a->w, wk->wb, a->w_n));
        return strix_axpby(be, -1.0f, wk->wb, 0.0f, NULL, wk->wb, a->w_n);
    default: return STRIX_OK;
    }
}

static strix_status run_chunks(const lrp_affine *a, affine_work *wk, const strix_lrp_rule *rule,
                               size_t chunk, const float *r, float *r_in) {
    STRIX_TRY(modify_params(a, wk, rule));
    for (size_t first = 0; first < a->items; first += chunk) {
        size_t count = a->items - first < chunk ? a->items - first : chunk;
        affine_chunk c = {.count = count, .in_n = count * a->in_item,
                          .out_n = count * a->out_item, .x = a->x + first * a->in_item,
                          .r = r + first * a->out_item, .r_in = r_in + first * a->in_item,
                          .z_pre = a->z_pre ? a->z_pre + first * a->out_item : NULL,
                          .z_full = a->z_full ? a->z_full + first * a->out_item : NULL};
        switch (rule->kind) {
        case STRIX_LRP_EPSILON: STRIX_TRY(epsilon_rule(a, &c, wk, rule)); break;
        case STRIX_LRP_GAMMA: STRIX_TRY(gamma_rule(a, &c, wk, rule)); break;
        case STRIX_LRP_ALPHA_BETA: STRIX_TRY(alpha_beta_rule(a, &c, wk, rule)); break;
        case STRIX_LRP_ZBOX: STRIX_TRY(zbox_rule(a, &c, wk, rule)); break;
        default: return strix_error(STRIX_ERR_ARG, "LRP: unknown rule kind %d", (int)rule->kind);
        }
    }
    return STRIX_OK;
}

strix_status lrp_affine_relevance(const lrp_affine *a, const strix_lrp_rule *rule,
                                  const float *r, float *r_in) {
    size_t in_n = a->items * a->in_item;
    if (in_n == 0) return STRIX_OK;
    if (a->out_item == 0) return strix_fill(a->be, r_in, 0.0f, in_n);
    size_t chunk = a->chunk && a->chunk < a->items ? a->chunk : a->items;
    affine_work wk;
    STRIX_TRY(work_alloc(a, chunk, &wk));
    strix_status s = run_chunks(a, &wk, rule, chunk, r, r_in);
    strix_free(a->be, wk.block);
    return s;
}

size_t lrp_chunk_items(size_t bytes_per_item) {
    // about 8 MiB of the largest per-item scratch, at least one item: large enough for the
    // primitives to run their examples in parallel, small enough to stay near the caches
    size_t budget = (size_t)1 << 23;
    return bytes_per_item >= budget ? 1 : budget / (bytes_per_item ? bytes_per_item : 1);
}
