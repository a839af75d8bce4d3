/*
 * lrp_rules.c - validation of a module's LRP rule (strix_lrp_rule, strix/nn.h), the rule kinds'
 * names and the supports_rule slot shared by the modules. Host-side values only; the rules' math
 * is in lrp_affine.c and the modules' relevance functions. The rule presets that explainers hand
 * out (strix_lrp_epsilon, ...) are in src/explain/rules.c.
 */
#include <math.h>

#include "nn/rules_internal.h"

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
