/*
 * kernels/logic.h - the math of the fuzzy-logic primitives (include/strix/ops/logic.h): t-norms,
 * t-conorms and their residual implications (Product, Łukasiewicz, Gödel) with derivatives and
 * LRP rules, one element per call, and the power-mean aggregator per element.
 *
 * Łukasiewicz's clamp is "inactive" (the output follows a + b) when a + b − 1 > 0 for the
 * conjunction, a + b < 1 for the disjunction and (1 − a) + b < 1 for the implication, all
 * strict; on the boundary derivative and relevance are 0. Gödel ties go to a. Powers use powf
 * (device libm: equal to rounding).
 */
#ifndef STRIX_KERNELS_LOGIC_H
#define STRIX_KERNELS_LOGIC_H

#include "strix/backend.h"
#include "kernels/common.h"
#include "kernels/lrp.h"

/* Whether op is a forward pass (it reads no g_or_r and writes no out_b). */
STRIX_HD static inline bool strix_logic_is_forward(strix_logic_op op) {
    return op == STRIX_LOGIC_CONJ_FORWARD || op == STRIX_LOGIC_DISJ_FORWARD ||
           op == STRIX_LOGIC_IMPL_FORWARD;
}

/* Whether op reads y (the forward output): the Product LRP of conj and disj only. */
STRIX_HD static inline bool strix_logic_reads_y(strix_logic_op op, strix_logic_norm norm) {
    return (op == STRIX_LOGIC_CONJ_LRP || op == STRIX_LOGIC_DISJ_LRP) &&
           norm == STRIX_LOGIC_PRODUCT;
}

/* The implication a → b (residuum of norm), one element, pass 0 forward, 1 backward, 2 LRP;
 * *out_b is written by backward and LRP only. */
STRIX_HD static inline void strix_logic_impl_element(int pass, strix_logic_norm norm, float a,
                                                     float b, float g_or_r, float eps,
                                                     float *out_a, float *out_b) {
    bool holds = a <= b; /* Gödel, Goguen: the output is the constant 1 */
    float v = (1.0f - a) + b; /* Łukasiewicz before the clamp */
    bool luk_linear = v < 1.0f; /* the clamp is inactive (then b < a, on [0, 1]) */
    float ra = 0.0f, rb = 0.0f;
    if (pass == 0) {
        if (norm == STRIX_LOGIC_GODEL)
            *out_a = holds ? 1.0f : b;
        else if (norm == STRIX_LOGIC_PRODUCT)
            *out_a = holds ? 1.0f : b / a;
        else
            *out_a = luk_linear ? v : 1.0f;
        return;
    }
    if (pass == 1) {
        float g = g_or_r;
        if (norm == STRIX_LOGIC_GODEL) {
            rb = holds ? 0.0f : g;
        } else if (norm == STRIX_LOGIC_PRODUCT) {
            ra = holds ? 0.0f : ((-b / a) / a) * g;
            rb = holds ? 0.0f : g / a;
        } else {
            ra = luk_linear ? -g : 0.0f;
            rb = luk_linear ? g : 0.0f;
        }
    } else if (norm == STRIX_LOGIC_LUKASIEWICZ) { /* LRP: za = −a, zb = b, bias 1 left out */
        float den = strix_lrp_stab(b - a, eps);
        ra = luk_linear ? (-a / den) * g_or_r : 0.0f;
        rb = luk_linear ? (b / den) * g_or_r : 0.0f;
    } else { /* LRP, Gödel and Goguen: all of r to the consequent */
        rb = g_or_r;
    }
    *out_a = ra;
    *out_b = rb;
}

/* One element of strix_logic_pointwise. Inputs: a, b, g_or_r (g or r), y (forward output; read
 * by the Product LRP of conj and disj only). Outputs *out_a and *out_b (FORWARD writes *out_a
 * only). Every input is read before anything is written. */
STRIX_HD static inline void strix_logic_element(strix_logic_op op, strix_logic_norm norm, float a,
                                                float b, float g_or_r, float y, float eps,
                                                float *out_a, float *out_b) {
    int kind = (int)op / 3; /* 0 conj, 1 disj, 2 impl (the enum's order) */
    int pass = (int)op % 3; /* 0 forward, 1 backward, 2 LRP */
    if (kind == 2) {
        strix_logic_impl_element(pass, norm, a, b, g_or_r, eps, out_a, out_b);
        return;
    }
    bool disj = kind == 1;
    float sum = a + b;
    /* Łukasiewicz: the unclamped value and whether the clamp is inactive. */
    bool luk_linear = disj ? sum < 1.0f : sum - 1.0f > 0.0f;
    /* Gödel: does a win (min for conj, max for disj; ties go to a)? */
    bool a_wins = disj ? a >= b : a <= b;
    float ra = 0.0f, rb = 0.0f;
    if (pass == 0) {
        float out;
        if (norm == STRIX_LOGIC_PRODUCT)
            out = disj ? sum - a * b : a * b;
        else if (norm == STRIX_LOGIC_LUKASIEWICZ)
            out = disj ? (sum < 1.0f ? sum : 1.0f) : (sum - 1.0f > 0.0f ? sum - 1.0f : 0.0f);
        else
            out = a_wins ? a : b;
        *out_a = out;
        return;
    }
    if (pass == 1) {
        float g = g_or_r;
        if (norm == STRIX_LOGIC_PRODUCT) {
            ra = disj ? (1.0f - b) * g : b * g;
            rb = disj ? (1.0f - a) * g : a * g;
        } else if (norm == STRIX_LOGIC_LUKASIEWICZ) {
            ra = rb = luk_linear ? g : 0.0f;
        } else {
            ra = a_wins ? g : 0.0f;
            rb = a_wins ? 0.0f : g;
        }
    } else { /* LRP */
        float r = g_or_r;
        if (norm == STRIX_LOGIC_PRODUCT) {
            if (disj) {
                float den = strix_lrp_stab(y, eps);
                ra = ((a * (2.0f - b)) / 2.0f / den) * r;
                rb = ((b * (2.0f - a)) / 2.0f / den) * r;
            } else {
                ra = rb = ((a * b) / strix_lrp_stab(2.0f * y, eps)) * r;
            }
        } else if (norm == STRIX_LOGIC_LUKASIEWICZ) {
            float den = strix_lrp_stab(sum, eps);
            ra = luk_linear ? (a / den) * r : 0.0f;
            rb = luk_linear ? (b / den) * r : 0.0f;
        } else {
            ra = a_wins ? r : 0.0f;
            rb = a_wins ? 0.0f : r;
        }
    }
    *out_a = ra;
    *out_b = rb;
}

// ---- power-mean aggregator ---------------------------------------------------------------------

/* x^p as the aggregator computes it. */
STRIX_HD static inline float strix_aggregator_pow(float x, float p) { return powf(x, p); }

/* out = mean_pow^(1/p), with 1/p rounded to float first. */
STRIX_HD static inline float strix_aggregator_out(float mean_pow, float p) {
    return powf(mean_pow, 1.0f / p);
}

/* grad_in = ((grad_out·mean_pow^(1/p − 1))·x^(p − 1))/n. */
STRIX_HD static inline float strix_aggregator_grad(float x, float mean_pow, float grad_out,
                                                   float p, size_t n) {
    return ((grad_out * powf(mean_pow, 1.0f / p - 1.0f)) * powf(x, p - 1.0f)) / (float)n;
}

/* r_in = (x^p/stab(n·mean_pow))·r_out. */
STRIX_HD static inline float strix_aggregator_relevance(float x, float mean_pow, float r_out,
                                                        float p, size_t n, float eps) {
    return (powf(x, p) / strix_lrp_stab((float)n * mean_pow, eps)) * r_out;
}

#endif
