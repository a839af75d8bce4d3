/*
 * rules.c - LRP rule presets and their validation (strix/lrp.h), and the supports_rule slot
 * shared by the modules. Host-side values only; the rules' math is in affine.c and the modules'
 * relevance functions.
 */
#include <math.h>

#include "lrp/lrp_internal.h"

static strix_lrp_rule base_rule(strix_lrp_kind kind) {
    return (strix_lrp_rule){.kind = kind, .epsilon = 1e-6f, .gamma = 0.25f, .alpha = 1.0f,
                            .beta = 0.0f, .low = 0.0f, .high = 1.0f,
                            .bias_in_denominator = false, .layer_norm_detach_std = false};
}

strix_lrp_rule strix_lrp_epsilon(float eps) {
    strix_lrp_rule r = base_rule(STRIX_LRP_EPSILON);
    r.epsilon = eps;
    return r;
}

strix_lrp_rule strix_lrp_gamma(float gamma) {
    strix_lrp_rule r = base_rule(STRIX_LRP_GAMMA);
    r.gamma = gamma;
    return r;
}

strix_lrp_rule strix_lrp_alpha_beta(float alpha, float beta) {
    strix_lrp_rule r = base_rule(STRIX_LRP_ALPHA_BETA);
    r.alpha = alpha;
    r.beta = beta;
    return r;
}

strix_lrp_rule strix_lrp_zplus(void) { return strix_lrp_alpha_beta(1.0f, 0.0f); }

strix_lrp_rule strix_lrp_zbox(float low, float high) {
    strix_lrp_rule r = base_rule(STRIX_LRP_ZBOX);
    r.low = low;
    r.high = high;
    return r;
}

const char *lrp_kind_name(strix_lrp_kind k) {
    switch (k) {
    case STRIX_LRP_EPSILON: return "epsilon";
    case STRIX_LRP_GAMMA: return "gamma";
    case STRIX_LRP_ALPHA_BETA: return "alpha-beta";
    case STRIX_LRP_ZBOX: return "z-box";
    }
    return "unknown";
}

strix_status lrp_rule_check(const strix_lrp_rule *r, const char *who) {
    if (!(r->epsilon >= 0.0f) || isinf(r->epsilon))
        return strix_error(STRIX_ERR_ARG, "LRP %s: epsilon %g must be finite and >= 0", who,
                           (double)r->epsilon);
    switch (r->kind) {
    case STRIX_LRP_EPSILON: return STRIX_OK;
    case STRIX_LRP_GAMMA:
        if (!(r->gamma >= 0.0f) || isinf(r->gamma))
            return strix_error(STRIX_ERR_ARG, "LRP %s: gamma %g must be finite and >= 0", who,
                               (double)r->gamma);
        return STRIX_OK;
    case STRIX_LRP_ALPHA_BETA:
        // Zennit's AlphaBeta check: both >= 0 and alpha − beta == 1 exactly
        if (!(r->alpha >= 0.0f) || !(r->beta >= 0.0f) || isinf(r->alpha) ||
            r->alpha - r->beta != 1.0f)
            return strix_error(STRIX_ERR_ARG, "LRP %s: alpha %g and beta %g must be >= 0 with "
                               "alpha - beta = 1", who, (double)r->alpha, (double)r->beta);
        return STRIX_OK;
    case STRIX_LRP_ZBOX:
        if (!isfinite(r->low) || !isfinite(r->high) || r->low > r->high)
            return strix_error(STRIX_ERR_ARG, "LRP %s: z-box bounds [%g, %g] must be finite with "
                               "low <= high", who, (double)r->low, (double)r->high);
        return STRIX_OK;
    }
    return strix_error(STRIX_ERR_ARG, "LRP %s: unknown rule kind %d", who, (int)r->kind);
}

bool lrp_supports_all(const strix_module *m, strix_lrp_kind k) {
    (void)m;
    return k == STRIX_LRP_EPSILON || k == STRIX_LRP_GAMMA || k == STRIX_LRP_ALPHA_BETA ||
           k == STRIX_LRP_ZBOX;
}
