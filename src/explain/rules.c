/*
 * rules.c - the LRP rule presets of strix/lrp.h (epsilon, gamma, alpha-beta, z-plus, z-box), all
 * starting from the same defaults. Host values only; their validation is beside the modules
 * (src/nn/lrp_rules.c).
 */
#include "strix/lrp.h"

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
