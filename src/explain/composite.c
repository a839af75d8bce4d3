/*
 * composite.c - composites (strix/lrp.h): which rule each module of a model gets, and the checks
 * that every module can run its rule, made before any propagation. The model is walked through
 * the `child` slot, a container before its children, children in forward order; leaves are
 * counted in that order (the index a custom composite sees). Nothing is changed when a check
 * fails.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain/explain_internal.h"

#define LRP_DEFAULT_STABILIZER 1e-6f

strix_lrp_composite strix_lrp_composite_uniform(strix_lrp_rule rule) {
    return (strix_lrp_composite){.kind = STRIX_COMPOSITE_UNIFORM, .rule = rule,
                                 .stabilizer = LRP_DEFAULT_STABILIZER};
}

strix_lrp_composite strix_lrp_composite_preset(strix_lrp_composite_kind kind) {
    return (strix_lrp_composite){.kind = kind, .rule = strix_lrp_epsilon(1e-6f),
                                 .stabilizer = LRP_DEFAULT_STABILIZER};
}

strix_lrp_composite strix_lrp_composite_custom(
    strix_lrp_rule (*fn)(int index, const strix_module *m, void *user), void *user) {
    return (strix_lrp_composite){.kind = STRIX_COMPOSITE_CUSTOM, .rule = strix_lrp_epsilon(1e-6f),
                                 .stabilizer = LRP_DEFAULT_STABILIZER, .custom = fn,
                                 .user = user};
}

// ---- walking -----------------------------------------------------------------------------------

/* Every module of a model in walk order, its parent (NULL for the root), whether it is a leaf. */
typedef struct module_list {
    strix_module **mods, **parent;
    bool *leaf;
    int count, cap;
} module_list;

static strix_status list_push(module_list *l, strix_module *m, strix_module *parent, bool leaf) {
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        strix_module **mods = realloc(l->mods, (size_t)cap * sizeof *mods);
        if (!mods) return strix_error(STRIX_ERR_ALLOC, "LRP: out of memory");
        l->mods = mods;
        strix_module **parents = realloc(l->parent, (size_t)cap * sizeof *parents);
        if (!parents) return strix_error(STRIX_ERR_ALLOC, "LRP: out of memory");
        l->parent = parents;
        bool *leaf_flags = realloc(l->leaf, (size_t)cap * sizeof *leaf_flags);
        if (!leaf_flags) return strix_error(STRIX_ERR_ALLOC, "LRP: out of memory");
        l->leaf = leaf_flags;
        l->cap = cap;
    }
    l->mods[l->count] = m;
    l->parent[l->count] = parent;
    l->leaf[l->count] = leaf;
    l->count++;
    return STRIX_OK;
}

static strix_status collect(strix_module *m, strix_module *parent, module_list *l, int depth) {
    if (depth > 64) return strix_error(STRIX_ERR_ARG, "LRP: modules nested over 64 deep");
    bool leaf = m->vt->child == NULL || m->vt->child(m, 0) == NULL;
    STRIX_TRY(list_push(l, m, parent, leaf));
    if (m->vt->child)
        for (int i = 0;; i++) {
            strix_module *c = m->vt->child(m, i);
            if (!c) break;
            STRIX_TRY(collect(c, m, l, depth + 1));
        }
    return STRIX_OK;
}

static void list_free(module_list *l) {
    free(l->mods);
    free(l->parent);
    free(l->leaf);
}

// ---- checks ------------------------------------------------------------------------------------

static bool is_type(const strix_module *m, const char *type) {
    return strcmp(m->vt->type, type) == 0;
}

/* Whether module m (walk position i) has a relevance slot that implements rule's kind. */
static strix_status check_support(strix_module *m, int i, const strix_lrp_rule *rule) {
    const char *type = m->vt->type;
    if (!m->vt->relevance)
        return strix_error(STRIX_ERR_UNSUPPORTED, "LRP: %s (module %d) has no relevance rule",
                           type, i);
    bool ok = m->vt->supports_rule ? m->vt->supports_rule(m, rule->kind)
                                   : rule->kind == STRIX_LRP_EPSILON;
    if (!ok)
        return strix_error(STRIX_ERR_UNSUPPORTED, "LRP: %s (module %d) does not support the %s "
                           "rule", type, i, lrp_kind_name(rule->kind));
    return STRIX_OK;
}

/* Whether `rule` of module m (walk position i) was assigned and is valid. */
static strix_status check_rule(strix_module *m, int i, const strix_lrp_rule *rule) {
    const char *type = m->vt->type;
    static const strix_lrp_rule unassigned; /* what a freshly built module holds */
    if (memcmp(rule, &unassigned, sizeof *rule) == 0)
        return strix_error(STRIX_ERR_ARG, "LRP: %s (module %d) has no rule: call "
                           "strix_lrp_assign first", type, i);
    char who[64];
    snprintf(who, sizeof who, "%s (module %d)", type, i);
    return lrp_rule_check(rule, who);
}

/* Whether module m (walk position i, child of parent) can run `rule`. */
static strix_status check_one(strix_module *m, strix_module *parent, int i,
                              const strix_lrp_rule *rule) {
    (void)parent;
    STRIX_TRY(check_support(m, i, rule));
    return check_rule(m, i, rule);
}

strix_status strix_lrp_check(strix_module *model) {
    STRIX_ASSERT(model != NULL, "strix_lrp_check: NULL model");
    module_list l = {0};
    strix_status s = collect(model, NULL, &l, 0);
    // every slot first (a module that cannot be explained at all), then every rule
    for (int i = 0; s == STRIX_OK && i < l.count; i++)
        s = check_support(l.mods[i], i, &l.mods[i]->rule);
    for (int i = 0; s == STRIX_OK && i < l.count; i++)
        s = check_rule(l.mods[i], i, &l.mods[i]->rule);
    list_free(&l);
    return s;
}

// ---- assigning ---------------------------------------------------------------------------------

static float stabilizer_of(const strix_lrp_composite *c) {
    return c->stabilizer > 0.0f ? c->stabilizer : LRP_DEFAULT_STABILIZER;
}

/* The rule of a module without weights: epsilon = stabilizer, the flags of c->rule. */
static strix_lrp_rule weightless_rule(const strix_lrp_composite *c) {
    strix_lrp_rule r = strix_lrp_epsilon(stabilizer_of(c));
    r.bias_in_denominator = c->rule.bias_in_denominator;
    r.layer_norm_detach_std = c->rule.layer_norm_detach_std;
    return r;
}

/* The rule of leaf `index` under a preset or UNIFORM; *conv_seen tracks the first Conv2d. */
static strix_lrp_rule preset_rule(const strix_lrp_composite *c, const strix_module *m,
                                  bool *conv_seen) {
    bool linear = is_type(m, "Linear"), conv = is_type(m, "Conv2d");
    if (!linear && !conv) return weightless_rule(c);
    if (c->kind == STRIX_COMPOSITE_UNIFORM) return c->rule;
    strix_lrp_rule r;
    if (linear) {
        r = strix_lrp_epsilon(c->rule.epsilon);
    } else {
        switch (c->kind) {
        case STRIX_COMPOSITE_EPSILON_PLUS: r = strix_lrp_zplus(); break;
        case STRIX_COMPOSITE_EPSILON_ALPHA2_BETA1: r = strix_lrp_alpha_beta(2.0f, 1.0f); break;
        default: // EPSILON_GAMMA_BOX
            r = *conv_seen ? strix_lrp_gamma(c->rule.gamma)
                           : strix_lrp_zbox(c->rule.low, c->rule.high);
            break;
        }
        r.epsilon = stabilizer_of(c);
        *conv_seen = true;
    }
    r.bias_in_denominator = true;
    r.layer_norm_detach_std = c->rule.layer_norm_detach_std;
    return r;
}

strix_status strix_lrp_assign(strix_module *model, const strix_lrp_composite *c) {
    STRIX_ASSERT(model && c, "strix_lrp_assign: NULL argument");
    if ((int)c->kind < STRIX_COMPOSITE_UNIFORM || c->kind > STRIX_COMPOSITE_CUSTOM)
        return strix_error(STRIX_ERR_ARG, "LRP: unknown composite kind %d", (int)c->kind);
    if (c->kind == STRIX_COMPOSITE_CUSTOM && !c->custom)
        return strix_error(STRIX_ERR_ARG, "LRP: a custom composite needs its callback");
    module_list l = {0};
    strix_status s = collect(model, NULL, &l, 0);
    strix_lrp_rule *rules = NULL;
    if (s == STRIX_OK && !(rules = malloc((size_t)(l.count ? l.count : 1) * sizeof *rules)))
        s = strix_error(STRIX_ERR_ALLOC, "LRP: out of memory");
    bool conv_seen = false;
    for (int i = 0, leaf = 0; s == STRIX_OK && i < l.count; i++) {
        strix_module *m = l.mods[i];
        if (!l.leaf[i]) rules[i] = weightless_rule(c);
        else if (c->kind == STRIX_COMPOSITE_CUSTOM) rules[i] = c->custom(leaf, m, c->user);
        else rules[i] = preset_rule(c, m, &conv_seen);
        if (l.leaf[i]) leaf++;
        s = check_one(m, l.parent[i], i, &rules[i]);
    }
    for (int i = 0; s == STRIX_OK && i < l.count; i++) l.mods[i]->rule = rules[i];
    free(rules);
    list_free(&l);
    return s;
}
