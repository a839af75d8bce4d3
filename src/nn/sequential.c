/*
 * sequential.c - Sequential (PyTorch nn.Sequential): an owning list of children run in order
 * forward and in reverse backward, with train/eval passed to each. Child names ("<prefix>.<i>")
 * are handed out by strix_sequential_child_name; the children declare their own parameters.
 * Relevance walks the children in reverse; an eval-mode BatchNorm right after a Conv2d or Linear
 * is explained merged into it (src/nn/lrp_fold.c, Zennit's SequentialMergeBatchNorm).
 */
#include <stdlib.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"

static strix_status seq_forward(strix_module *mod, const strix_tensor *x, const strix_tensor **y) {
    strix_sequential *m = (strix_sequential *)mod;
    if (m->count == 0) {
        m->out = nn_view_of(x);
        if (y) *y = &m->out;
        return STRIX_OK;
    }
    const strix_tensor *cur = x;
    for (int i = 0; i < m->count; i++) STRIX_TRY(strix_module_forward(m->children[i], cur, &cur));
    if (y) *y = cur;
    return STRIX_OK;
}

static strix_status seq_backward(strix_module *mod, const strix_tensor *dy,
                                 const strix_tensor **dx) {
    strix_sequential *m = (strix_sequential *)mod;
    if (m->count == 0) {
        m->dx = nn_view_of(dy);
        if (dx) *dx = &m->dx;
        return STRIX_OK;
    }
    const strix_tensor *cur = dy;
    for (int i = m->count - 1; i >= 0; i--) {
        if (!cur)
            return strix_error(STRIX_ERR_ARG, "Sequential: child %d computes no input gradient "
                               "but child %d needs one", i + 1, i);
        STRIX_TRY(strix_module_backward(m->children[i], cur, &cur));
    }
    if (dx) *dx = cur;
    return STRIX_OK;
}

static strix_status seq_relevance(strix_module *mod, const strix_tensor *r,
                                  const strix_tensor **r_in) {
    strix_sequential *m = (strix_sequential *)mod;
    const strix_tensor *cur = r;
    for (int i = m->count - 1; i >= 0; i--) {
        if (i >= 1 && lrp_can_merge(m->children[i - 1], m->children[i])) {
            STRIX_TRY(lrp_merged_relevance(m->children[i - 1], m->children[i], cur, &cur));
            i--;
        } else {
            STRIX_TRY(strix_module_relevance(m->children[i], cur, &cur));
        }
    }
    if (r_in) *r_in = cur;
    return STRIX_OK;
}

static strix_module *seq_child(strix_module *mod, int i) {
    strix_sequential *m = (strix_sequential *)mod;
    return i >= 0 && i < m->count ? m->children[i] : NULL;
}

static void seq_set_training(strix_module *mod, bool training) {
    strix_sequential *m = (strix_sequential *)mod;
    for (int i = 0; i < m->count; i++) strix_module_set_training(m->children[i], training);
}

static void seq_destroy(strix_module *mod) {
    strix_sequential *m = (strix_sequential *)mod;
    for (int i = 0; i < m->count; i++) strix_module_free(m->children[i]);
    free(m->children);
    free(m);
}

static const strix_module_i sequential_vt = {
    .type = "Sequential", .forward = seq_forward, .backward = seq_backward, .destroy = seq_destroy,
    .set_training = seq_set_training, .relevance = seq_relevance,
    .supports_rule = lrp_supports_all, .child = seq_child};

strix_status strix_sequential_new(strix_backend *be, const char *prefix, strix_sequential **out) {
    *out = NULL;
    if (!prefix) prefix = "";
    if (strlen(prefix) + 1 >= STRIX_PARAM_NAME_MAX)
        return strix_error(STRIX_ERR_ARG, "Sequential: prefix too long: %s", prefix);
    strix_sequential *m = calloc(1, sizeof *m);
    if (!m) return NN_ALLOC_FAIL("Sequential");
    m->base.vt = &sequential_vt;
    m->base.be = be;
    strcpy(m->prefix, prefix);
    *out = m;
    return STRIX_OK;
}

strix_status strix_sequential_child_name(const strix_sequential *s,
                                         char name[STRIX_PARAM_NAME_MAX]) {
    char index[16];
    snprintf(index, sizeof index, "%d", s->count);
    return nn_name(name, s->prefix, index);
}

strix_status strix_sequential_add(strix_sequential *s, strix_module *child) {
    STRIX_ASSERT(child != NULL, "Sequential: NULL child");
    STRIX_ASSERT(child->be == s->base.be, "Sequential: child on another backend");
    if (s->count == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        strix_module **c = realloc(s->children, (size_t)cap * sizeof *c);
        if (!c) {
            strix_module_free(child);
            return NN_ALLOC_FAIL("Sequential");
        }
        s->children = c;
        s->cap = cap;
    }
    s->children[s->count++] = child;
    return STRIX_OK;
}

strix_module *strix_sequential_at(const strix_sequential *s, int i) {
    STRIX_ASSERT(i >= 0 && i < s->count, "Sequential: child %d of %d", i, s->count);
    return s->children[i];
}
