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
        m->work->out = nn_view_of(x);
        if (y) *y = &m->work->out;
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
        m->work->dx = nn_view_of(dy);
        if (dx) *dx = &m->work->dx;
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

/* The general form: the io goes to the first child (ids, mask, state, several inputs), its
 * out[0] on through the others as one tensor; the Sequential's outputs are the last child's
 * (all of them when there is one child). Backward and relevance run in reverse, the first child
 * in the general form. A plain io takes the one-tensor path (BatchNorm merging included). */
static bool io_plain(const strix_module_io *io) {
    return io->n_in == 1 && io->in[0] && !io->ids && !io->mask && !io->state;
}

static strix_status seq_forward_ex(strix_module *mod, strix_module_io *io) {
    strix_sequential *m = (strix_sequential *)mod;
    if (io_plain(io)) {
        io->n_out = 1;
        return seq_forward(mod, io->in[0], &io->out[0]);
    }
    if (m->count == 0)
        return strix_error(STRIX_ERR_UNSUPPORTED, "Sequential: an empty Sequential takes one "
                           "float input only");
    STRIX_TRY(strix_module_forward_ex(m->children[0], io));
    if (m->count == 1) return STRIX_OK;
    const strix_tensor *cur = io->n_out > 0 ? io->out[0] : NULL;
    if (!cur || io->n_out != 1)
        return strix_error(STRIX_ERR_UNSUPPORTED, "Sequential: child 0 (%s) has %d outputs; "
                           "only the last child may have several", m->children[0]->vt->type,
                           io->n_out);
    for (int i = 1; i < m->count; i++) STRIX_TRY(strix_module_forward(m->children[i], cur, &cur));
    io->n_out = 1;
    io->out[0] = cur;
    return STRIX_OK;
}

/* Runs children count-1 .. 1 one-tensor style on `cur` (backward, or relevance with BatchNorm
 * merging among them), then child 0 in the general form with in[0] = the result. */
static strix_status seq_reverse_ex(strix_sequential *m, strix_module_io *io, bool relevance) {
    if (m->count == 1)
        return relevance ? strix_module_relevance_ex(m->children[0], io)
                         : strix_module_backward_ex(m->children[0], io);
    if (io->n_in != 1 || !io->in[0])
        return strix_error(STRIX_ERR_ARG, "Sequential: %s needs the one output's tensor",
                           relevance ? "relevance" : "backward");
    const strix_tensor *cur = io->in[0];
    for (int i = m->count - 1; i >= 1; i--) {
        if (!cur)
            return strix_error(STRIX_ERR_ARG, "Sequential: child %d computes no input gradient "
                               "but child %d needs one", i + 1, i);
        if (relevance && i >= 2 && lrp_can_merge(m->children[i - 1], m->children[i])) {
            STRIX_TRY(lrp_merged_relevance(m->children[i - 1], m->children[i], cur, &cur));
            i--;
        } else if (relevance) {
            STRIX_TRY(strix_module_relevance(m->children[i], cur, &cur));
        } else {
            STRIX_TRY(strix_module_backward(m->children[i], cur, &cur));
        }
    }
    strix_module_io first = *io;
    first.n_in = 1;
    first.in[0] = cur;
    STRIX_TRY(relevance ? strix_module_relevance_ex(m->children[0], &first)
                        : strix_module_backward_ex(m->children[0], &first));
    io->n_out = first.n_out;
    for (int k = 0; k < first.n_out; k++) io->out[k] = first.out[k];
    return STRIX_OK;
}

/* The backward (relevance false) or relevance pass of a general io: a plain one-tensor io, or
 * an empty Sequential, goes through the shorthand. */
static strix_status seq_reverse_io(strix_module *mod, strix_module_io *io, bool relevance) {
    strix_sequential *m = (strix_sequential *)mod;
    if (io_plain(io) || m->count == 0) {
        if (!io_plain(io))
            return strix_error(STRIX_ERR_UNSUPPORTED, "Sequential: an empty Sequential takes one "
                               "float input only");
        io->n_out = 1;
        return relevance ? seq_relevance(mod, io->in[0], &io->out[0])
                         : seq_backward(mod, io->in[0], &io->out[0]);
    }
    return seq_reverse_ex(m, io, relevance);
}

static strix_status seq_backward_ex(strix_module *mod, strix_module_io *io) {
    return seq_reverse_io(mod, io, false);
}

static strix_status seq_relevance_ex(strix_module *mod, strix_module_io *io) {
    return seq_reverse_io(mod, io, true);
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
    .supports_rule = lrp_supports_all, .child = seq_child, .forward_ex = seq_forward_ex,
    .backward_ex = seq_backward_ex, .relevance_ex = seq_relevance_ex};

strix_status strix_sequential_new(strix_backend *be, const char *prefix, strix_sequential **out) {
    *out = NULL;
    if (!prefix) prefix = "";
    if (strlen(prefix) + 1 >= STRIX_PARAM_NAME_MAX)
        return strix_error(STRIX_ERR_ARG, "Sequential: prefix too long: %s", prefix);
    strix_sequential *m = NULL;
    NN_CALLOC_WITH_WORK(m);
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
