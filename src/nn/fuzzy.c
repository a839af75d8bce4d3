/*
 * fuzzy.c - the fuzzy-logic modules of strix/fuzzy.h: connectives (Not, And, Or, Implies, Equiv)
 * and quantifiers (Forall, Exists), on strix_logic_pointwise and the aggregator primitives.
 *
 * A binary connective is one pointwise op (CONJ, DISJ or IMPL under a norm) on operands that an
 * affine map t = mul·x + add made from a and b first: the stable maps pi_0 and pi_1, and the
 * negation of an S-implication's antecedent (Reichenbach and Kleene-Dienes are Or(Not a, b)).
 * So the backward is the op's backward times mul, and relevance passes the maps unchanged.
 * Equiv owns two Implies and one And. Not is its own small case.
 */
#include <math.h>
#include <stdlib.h>

#include "layers_internal.h"
#include "nn/rules_internal.h"
#include "strix/fuzzy.h"

strix_fuzzy strix_fuzzy_default(void) {
    return (strix_fuzzy){.and_norm = STRIX_LOGIC_PRODUCT, .or_norm = STRIX_LOGIC_PRODUCT,
                         .implies = STRIX_IMPLIES_REICHENBACH, .stable = true, .p_forall = 2.0f,
                         .p_exists = 2.0f};
}

static bool norm_ok(strix_logic_norm n) {
    return n == STRIX_LOGIC_PRODUCT || n == STRIX_LOGIC_LUKASIEWICZ || n == STRIX_LOGIC_GODEL;
}

strix_status strix_fuzzy_check(const strix_fuzzy *sem) {
    if (!sem) return strix_error(STRIX_ERR_ARG, "fuzzy semantics: NULL");
    if (!norm_ok(sem->and_norm))
        return strix_error(STRIX_ERR_ARG, "fuzzy semantics: and_norm %d", (int)sem->and_norm);
    if (!norm_ok(sem->or_norm))
        return strix_error(STRIX_ERR_ARG, "fuzzy semantics: or_norm %d", (int)sem->or_norm);
    if ((int)sem->implies < STRIX_IMPLIES_REICHENBACH || sem->implies > STRIX_IMPLIES_GODEL)
        return strix_error(STRIX_ERR_ARG, "fuzzy semantics: implies %d", (int)sem->implies);
    if (!(sem->p_forall > 0.0f) || !isfinite(sem->p_forall))
        return strix_error(STRIX_ERR_ARG, "fuzzy semantics: p_forall %g must be a finite p > 0",
                           (double)sem->p_forall);
    if (!(sem->p_exists > 0.0f) || !isfinite(sem->p_exists))
        return strix_error(STRIX_ERR_ARG, "fuzzy semantics: p_exists %g must be a finite p > 0",
                           (double)sem->p_exists);
    return STRIX_OK;
}

// ---- shared helpers ----------------------------------------------------------------------------

/* out = mul·x + add over n (out must not alias x unless add == 0). */
static strix_status affine(strix_backend *be, const float *x, float mul, float add, float *out,
                           size_t n) {
    if (n == 0) return STRIX_OK;
    if (add == 0.0f) return strix_axpby(be, mul, x, 0.0f, NULL, out, n);
    STRIX_TRY(strix_fill(be, out, add, n));
    return strix_axpby(be, mul, x, 1.0f, out, out, n);
}

/* STRIX_ERR_ARG unless every x[i] (backend memory) is a truth value in [0, 1]; host and cap are the
 * caller's growing host buffer for the download. */
static strix_status check_truth(strix_backend *be, const char *who, const float *x, size_t n,
                                float **host, size_t *cap) {
    if (n == 0) return STRIX_OK;
    if (n > *cap) {
        float *grown = realloc(*host, n * sizeof(float));
        if (!grown) return NN_ALLOC_FAIL(who);
        *host = grown;
        *cap = n;
    }
    STRIX_TRY(strix_copy(be, *host, x, n * sizeof(float), STRIX_COPY_D2H));
    for (size_t i = 0; i < n; i++)
        if (!((*host)[i] >= 0.0f && (*host)[i] <= 1.0f))
            return strix_error(STRIX_ERR_ARG, "%s: truth value %g at element %zu is outside "
                               "[0, 1]", who, (double)(*host)[i], i);
    return STRIX_OK;
}

/* An affine operand map t = mul·x + add; the identity is (1, 0). */
typedef struct operand_map {
    float mul, add;
} operand_map;

static const operand_map IDENTITY = {1.0f, 0.0f};
static const operand_map PI_0 = {1.0f - STRIX_FUZZY_EPS, STRIX_FUZZY_EPS};
static const operand_map PI_1 = {1.0f - STRIX_FUZZY_EPS, 0.0f};
static const operand_map NOT = {-1.0f, 1.0f};
/* 1 − pi_0(x) = −(1 − ε)x + (1 − ε) and 1 − pi_1(x) = −(1 − ε)x + 1. */
static const operand_map NOT_PI_0 = {-(1.0f - STRIX_FUZZY_EPS), 1.0f - STRIX_FUZZY_EPS};
static const operand_map NOT_PI_1 = {-(1.0f - STRIX_FUZZY_EPS), 1.0f};

static bool is_identity(operand_map m) { return m.mul == 1.0f && m.add == 0.0f; }

// ---- connectives -------------------------------------------------------------------------------

/* What a binary connective computes: the pointwise op family (its FORWARD value), the norm, and
 * the maps of a and b. */
typedef struct conn_plan {
    strix_logic_op forward;
    strix_logic_norm norm;
    operand_map map_a, map_b;
} conn_plan;

typedef struct conn_work {
    strix_tensor ta, tb;        /* the operands the op saw (views of a, b when unmapped) */
    strix_tensor ta_buf, tb_buf;
    strix_tensor out, da, db;
    float *host;                /* truth-value checks */
    size_t host_cap;
} conn_work;

typedef struct fuzzy_connective {
    strix_module base;
    strix_connective kind;
    strix_fuzzy sem;
    conn_plan plan;
    strix_module *impl_ab, *impl_ba, *both; /* Equiv's parts */
    conn_work *work;
} fuzzy_connective;

static const char *conn_name(strix_connective k) {
    static const char *names[] = {"Not", "And", "Or", "Implies", "Equiv"};
    return names[k];
}

static conn_plan plan_of(strix_connective kind, const strix_fuzzy *sem) {
    bool st = sem->stable;
    conn_plan p = {STRIX_LOGIC_CONJ_FORWARD, sem->and_norm, IDENTITY, IDENTITY};
    if (kind == STRIX_CONNECTIVE_AND) {
        if (st && sem->and_norm == STRIX_LOGIC_PRODUCT) p.map_a = p.map_b = PI_0;
    } else if (kind == STRIX_CONNECTIVE_OR) {
        p.forward = STRIX_LOGIC_DISJ_FORWARD;
        p.norm = sem->or_norm;
        if (st && sem->or_norm == STRIX_LOGIC_PRODUCT) p.map_a = p.map_b = PI_1;
    } else if (kind == STRIX_CONNECTIVE_IMPLIES) {
        switch (sem->implies) {
        case STRIX_IMPLIES_REICHENBACH: /* 1 − a' + a'b' = Or_product(1 − a', b') */
            p = (conn_plan){STRIX_LOGIC_DISJ_FORWARD, STRIX_LOGIC_PRODUCT, st ? NOT_PI_0 : NOT,
                            st ? PI_1 : IDENTITY};
            break;
        case STRIX_IMPLIES_KLEENE_DIENES: /* max(1 − a, b) */
            p = (conn_plan){STRIX_LOGIC_DISJ_FORWARD, STRIX_LOGIC_GODEL, NOT, IDENTITY};
            break;
        case STRIX_IMPLIES_GOGUEN:
            p = (conn_plan){STRIX_LOGIC_IMPL_FORWARD, STRIX_LOGIC_PRODUCT, st ? PI_0 : IDENTITY,
                            IDENTITY};
            break;
        case STRIX_IMPLIES_LUKASIEWICZ:
            p = (conn_plan){STRIX_LOGIC_IMPL_FORWARD, STRIX_LOGIC_LUKASIEWICZ, IDENTITY,
                            IDENTITY};
            break;
        case STRIX_IMPLIES_GODEL:
            p = (conn_plan){STRIX_LOGIC_IMPL_FORWARD, STRIX_LOGIC_GODEL, IDENTITY, IDENTITY};
            break;
        }
    }
    return p;
}

/* The operand t of x under map m: a view of x, or m(x) in buf. */
static strix_status map_operand(strix_backend *be, const strix_tensor *x, operand_map m,
                                strix_tensor *buf, strix_tensor *t) {
    if (is_identity(m)) {
        *t = nn_view_of(x);
        return STRIX_OK;
    }
    STRIX_TRY(nn_ensure_same(be, buf, x));
    STRIX_TRY(affine(be, x->data, m.mul, m.add, buf->data, (size_t)strix_tensor_numel(x)));
    *t = nn_view_of(buf);
    return STRIX_OK;
}

static strix_status conn_forward_ex(strix_module *mod, strix_module_io *io) {
    fuzzy_connective *m = (fuzzy_connective *)mod;
    conn_work *w = m->work;
    strix_backend *be = mod->be;
    const char *who = conn_name(m->kind);
    int want = m->kind == STRIX_CONNECTIVE_NOT ? 1 : 2;
    if (io->n_in != want || !io->in[0] || (want == 2 && !io->in[1]) || io->ids || io->mask)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s takes %d float input%s", who, want,
                           want == 1 ? "" : "s");
    const strix_tensor *a = io->in[0], *b = want == 2 ? io->in[1] : NULL;
    if (b && (a->ndim != b->ndim || strix_tensor_numel(a) != strix_tensor_numel(b)))
        return strix_error(STRIX_ERR_SHAPE, "%s: operands of %lld and %lld values", who,
                           (long long)strix_tensor_numel(a), (long long)strix_tensor_numel(b));
    size_t n = (size_t)strix_tensor_numel(a);
    STRIX_TRY(check_truth(be, who, a->data, n, &w->host, &w->host_cap));
    if (b) STRIX_TRY(check_truth(be, who, b->data, n, &w->host, &w->host_cap));
    STRIX_TRY(nn_ensure_same(be, &w->out, a));
    io->n_out = 1;
    io->out[0] = &w->out;
    if (m->kind == STRIX_CONNECTIVE_NOT) return affine(be, a->data, -1.0f, 1.0f, w->out.data, n);
    if (m->kind == STRIX_CONNECTIVE_EQUIV) {
        strix_module_io ab = {.n_in = 2, .in = {a, b}}, ba = {.n_in = 2, .in = {b, a}};
        STRIX_TRY(strix_module_forward_ex(m->impl_ab, &ab));
        STRIX_TRY(strix_module_forward_ex(m->impl_ba, &ba));
        strix_module_io both = {.n_in = 2, .in = {ab.out[0], ba.out[0]}};
        STRIX_TRY(strix_module_forward_ex(m->both, &both));
        if (n > 0) STRIX_TRY(strix_copy(be, w->out.data, both.out[0]->data, n * sizeof(float),
                                        STRIX_COPY_D2D));
        return STRIX_OK;
    }
    STRIX_TRY(map_operand(be, a, m->plan.map_a, &w->ta_buf, &w->ta));
    STRIX_TRY(map_operand(be, b, m->plan.map_b, &w->tb_buf, &w->tb));
    if (n == 0) return STRIX_OK;
    return strix_logic_pointwise(be, m->plan.forward, m->plan.norm, w->ta.data, w->tb.data, NULL,
                                 NULL, w->out.data, NULL, n, 0.0f);
}

/* Backward (pass 1) or relevance (pass 2) of the last forward: io.in[0] = dy or r. */
static strix_status conn_reverse(fuzzy_connective *m, strix_module_io *io, int pass) {
    conn_work *w = m->work;
    strix_backend *be = m->base.be;
    const char *who = conn_name(m->kind);
    if (io->n_in != 1 || !io->in[0])
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s: one upstream tensor", who);
    const strix_tensor *g = io->in[0];
    STRIX_TRY(nn_check_same(who, g, &w->out));
    size_t n = (size_t)strix_tensor_numel(g);
    STRIX_TRY(nn_ensure_same(be, &w->da, g));
    io->out[0] = &w->da;
    if (m->kind == STRIX_CONNECTIVE_NOT) { /* d(1 − a) = −dy; relevance passes on */
        io->n_out = 1;
        return affine(be, g->data, pass == 1 ? -1.0f : 1.0f, 0.0f, w->da.data, n);
    }
    STRIX_TRY(nn_ensure_same(be, &w->db, g));
    io->n_out = 2;
    io->out[1] = &w->db;
    if (m->kind == STRIX_CONNECTIVE_EQUIV) { /* y = And(i_ab, i_ba) */
        strix_module_io both = {.n_in = 1, .in = {g}};
        strix_module_io ab = {.n_in = 1}, ba = {.n_in = 1};
        if (pass == 1) {
            STRIX_TRY(strix_module_backward_ex(m->both, &both));
            ab.in[0] = both.out[0], ba.in[0] = both.out[1];
            STRIX_TRY(strix_module_backward_ex(m->impl_ab, &ab));
            STRIX_TRY(strix_module_backward_ex(m->impl_ba, &ba));
        } else {
            m->both->rule = m->impl_ab->rule = m->impl_ba->rule = m->base.rule;
            STRIX_TRY(strix_module_relevance_ex(m->both, &both));
            ab.in[0] = both.out[0], ba.in[0] = both.out[1];
            STRIX_TRY(strix_module_relevance_ex(m->impl_ab, &ab));
            STRIX_TRY(strix_module_relevance_ex(m->impl_ba, &ba));
        }
        if (n == 0) return STRIX_OK;
        /* a is the antecedent of i_ab and the consequent of i_ba; b the other way round. */
        STRIX_TRY(strix_add(be, ab.out[0]->data, ba.out[1]->data, w->da.data, n));
        return strix_add(be, ab.out[1]->data, ba.out[0]->data, w->db.data, n);
    }
    if (n == 0) return STRIX_OK;
    strix_logic_op op = (strix_logic_op)((int)m->plan.forward + pass);
    STRIX_TRY(strix_logic_pointwise(be, op, m->plan.norm, w->ta.data, w->tb.data, g->data,
                                    pass == 2 ? w->out.data : NULL, w->da.data, w->db.data, n,
                                    pass == 2 ? m->base.rule.epsilon : 0.0f));
    if (pass == 2) return STRIX_OK; /* relevance passes the maps unchanged */
    if (m->plan.map_a.mul != 1.0f)
        STRIX_TRY(affine(be, w->da.data, m->plan.map_a.mul, 0.0f, w->da.data, n));
    if (m->plan.map_b.mul != 1.0f)
        STRIX_TRY(affine(be, w->db.data, m->plan.map_b.mul, 0.0f, w->db.data, n));
    return STRIX_OK;
}

static strix_status conn_backward_ex(strix_module *mod, strix_module_io *io) {
    return conn_reverse((fuzzy_connective *)mod, io, 1);
}

static strix_status conn_relevance_ex(strix_module *mod, strix_module_io *io) {
    return conn_reverse((fuzzy_connective *)mod, io, 2);
}

static void conn_destroy(strix_module *mod) {
    fuzzy_connective *m = (fuzzy_connective *)mod;
    conn_work *w = m->work;
    strix_module_free(m->impl_ab);
    strix_module_free(m->impl_ba);
    strix_module_free(m->both);
    strix_tensor_free(&w->ta_buf);
    strix_tensor_free(&w->tb_buf);
    strix_tensor_free(&w->out);
    strix_tensor_free(&w->da);
    strix_tensor_free(&w->db);
    free(w->host);
    free(m);
}

static const strix_module_i connective_vt = {
    .type = "Connective", .destroy = conn_destroy, .supports_rule = lrp_supports_all,
    .forward_ex = conn_forward_ex, .backward_ex = conn_backward_ex,
    .relevance_ex = conn_relevance_ex};

strix_status strix_connective_new(strix_backend *be, strix_connective kind,
                                  const strix_fuzzy *sem, strix_module **out) {
    *out = NULL;
    STRIX_ASSERT(be != NULL, "connective: NULL backend");
    if ((int)kind < STRIX_CONNECTIVE_NOT || kind > STRIX_CONNECTIVE_EQUIV)
        return strix_error(STRIX_ERR_ARG, "connective: kind %d", (int)kind);
    strix_fuzzy defaults = strix_fuzzy_default();
    if (!sem) sem = &defaults;
    STRIX_TRY(strix_fuzzy_check(sem));
    fuzzy_connective *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("Connective");
    m->base.vt = &connective_vt;
    m->base.be = be;
    m->base.rule = (strix_lrp_rule){.kind = STRIX_LRP_EPSILON, .epsilon = 1e-6f};
    m->kind = kind;
    m->sem = *sem;
    m->plan = plan_of(kind, sem);
    if (kind == STRIX_CONNECTIVE_EQUIV) {
        strix_status s = strix_connective_new(be, STRIX_CONNECTIVE_IMPLIES, sem, &m->impl_ab);
        if (s == STRIX_OK) s = strix_connective_new(be, STRIX_CONNECTIVE_IMPLIES, sem, &m->impl_ba);
        if (s == STRIX_OK) s = strix_connective_new(be, STRIX_CONNECTIVE_AND, sem, &m->both);
        if (s != STRIX_OK) {
            conn_destroy(&m->base);
            return s;
        }
    }
    *out = &m->base;
    return STRIX_OK;
}

// ---- quantifiers -------------------------------------------------------------------------------

typedef struct quant_work {
    size_t n, cols, kept;
    int32_t *rows;              /* backend: the kept rows, ascending (when some are dropped) */
    size_t rows_cap;
    int32_t *host_rows;
    size_t host_rows_cap;
    strix_tensor kept_x;        /* (kept, cols): the kept rows of x */
    strix_tensor t;             /* Exists: pi_0(x) or x; Forall: u = 1 − pi_1(x) or 1 − x */
    strix_tensor mean_pow, m, out, plain, mean1; /* (cols); plain: Forall's x' (kept, cols) */
    strix_tensor dt, dx;        /* (kept, cols), (n, cols) */
    float *host;
    size_t host_cap;
    /* A guard per cell (an (n, cols) mask): every row stays (kept == n), the aggregator runs over
     * all n with the dropped cells at 0 and its mean rescaled by n/c_j, c_j the column's count. */
    bool cells;
    strix_tensor keep, drop;    /* (n, cols): 1/0 and 0/1 of the guard */
    strix_tensor cell_scale;    /* (n, cols): keep·n/c_j (the backward's 1/c_j for its 1/n) */
    strix_tensor col_scale, col_root, col_empty; /* (cols): n/c_j, (n/c_j)^(1/p), c_j == 0 */
    strix_tensor mean_all;      /* (cols): the aggregator's Σ/n over the cells kept */
    strix_tensor tb;            /* (n, cols): t with the dropped cells at 1 (backward) */
} quant_work;

typedef struct fuzzy_quantifier {
    strix_module base;
    strix_quantifier kind;
    strix_fuzzy sem;
    quant_work *work;
} fuzzy_quantifier;

static const char *quant_name(const fuzzy_quantifier *m) {
    return m->kind == STRIX_FORALL ? "Forall" : "Exists";
}

/* Uploads n host floats into t, made (rows, cols). */
static strix_status upload_as(strix_backend *be, strix_tensor *t, size_t rows, size_t cols,
                              const float *host) {
    STRIX_TRY(strix_tensor_ensure(be, t, 2, (int64_t[]){(int64_t)rows, (int64_t)cols}));
    return strix_copy(be, t->data, host, rows * cols * sizeof(float), STRIX_COPY_H2D);
}

/* The tensors of a per-cell guard (w->host holds the (n, cols) mask); w->cells stays false when
 * every cell is kept. */
static strix_status quant_cells(fuzzy_quantifier *m) {
    quant_work *w = m->work;
    strix_backend *be = m->base.be;
    size_t n = w->n, cols = w->cols, all = n * cols;
    float *buf = malloc((3 * all + 3 * cols) * sizeof(float));
    if (!buf) return NN_ALLOC_FAIL(quant_name(m));
    float *keep = buf, *drop = buf + all, *scale = buf + 2 * all, *col = buf + 3 * all;
    float *root = col + cols, *empty = root + cols;
    float p = m->kind == STRIX_FORALL ? m->sem.p_forall : m->sem.p_exists;
    bool full = true;
    for (size_t j = 0; j < cols; j++) {
        size_t count = 0;
        for (size_t i = 0; i < n; i++) count += w->host[i * cols + j] != 0.0f;
        full = full && count == n;
        col[j] = count ? (float)n / (float)count : 0.0f;
        root[j] = count ? powf(col[j], 1.0f / p) : 0.0f;
        empty[j] = count ? 0.0f : 1.0f;
    }
    for (size_t k = 0; k < all; k++) {
        keep[k] = w->host[k] != 0.0f ? 1.0f : 0.0f;
        drop[k] = 1.0f - keep[k];
        scale[k] = keep[k] * col[k % cols];
    }
    strix_status s = STRIX_OK;
    w->cells = !full;
    if (w->cells) {
        s = upload_as(be, &w->keep, n, cols, keep);
        if (s == STRIX_OK) s = upload_as(be, &w->drop, n, cols, drop);
        if (s == STRIX_OK) s = upload_as(be, &w->cell_scale, n, cols, scale);
        if (s == STRIX_OK) s = upload_as(be, &w->col_scale, 1, cols, col);
        if (s == STRIX_OK) s = upload_as(be, &w->col_root, 1, cols, root);
        if (s == STRIX_OK) s = upload_as(be, &w->col_empty, 1, cols, empty);
    }
    free(buf);
    return s;
}

/* The guard io.mask: NULL (every row), (n) floats (the kept rows, uploaded as w->rows) or
 * (n, cols) floats (a guard per cell, quant_cells); != 0 keeps. */
static strix_status quant_rows(fuzzy_quantifier *m, const strix_tensor *mask) {
    quant_work *w = m->work;
    strix_backend *be = m->base.be;
    w->kept = w->n;
    w->cells = false;
    if (!mask) return STRIX_OK;
    size_t numel = (size_t)strix_tensor_numel(mask);
    bool per_cell = w->cols > 1 && numel == w->n * w->cols;
    if (numel != w->n && !per_cell)
        return strix_error(STRIX_ERR_SHAPE, "%s: a mask of %zu values for %zu rows of %zu",
                           quant_name(m), numel, w->n, w->cols);
    if (numel > w->host_cap) {
        float *grown = realloc(w->host, numel * sizeof(float));
        if (!grown) return NN_ALLOC_FAIL(quant_name(m));
        w->host = grown;
        w->host_cap = numel;
    }
    if (per_cell) {
        STRIX_TRY(strix_copy(be, w->host, mask->data, numel * sizeof(float), STRIX_COPY_D2H));
        return quant_cells(m);
    }
    if (w->n > w->host_rows_cap) {
        int32_t *grown = realloc(w->host_rows, w->n * sizeof(int32_t));
        if (!grown) return NN_ALLOC_FAIL(quant_name(m));
        w->host_rows = grown;
        w->host_rows_cap = w->n;
    }
    STRIX_TRY(strix_copy(be, w->host, mask->data, w->n * sizeof(float), STRIX_COPY_D2H));
    w->kept = 0;
    for (size_t i = 0; i < w->n; i++)
        if (w->host[i] != 0.0f) w->host_rows[w->kept++] = (int32_t)i;
    if (w->kept == w->n || w->kept == 0) return STRIX_OK;
    STRIX_TRY(nn_ensure_i32(be, &w->rows, &w->rows_cap, w->kept));
    return strix_copy(be, w->rows, w->host_rows, w->kept * sizeof(int32_t), STRIX_COPY_H2D);
}

static strix_status quant_forward_ex(strix_module *mod, strix_module_io *io) {
    fuzzy_quantifier *m = (fuzzy_quantifier *)mod;
    quant_work *w = m->work;
    strix_backend *be = mod->be;
    const char *who = quant_name(m);
    if (io->n_in != 1 || !io->in[0] || io->ids)
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s takes one float input (and a mask)", who);
    const strix_tensor *x = io->in[0];
    if (x->ndim > 2) return strix_error(STRIX_ERR_SHAPE, "%s: input of %d dims, not (n, cols)",
                                        who, x->ndim);
    w->n = (size_t)x->shape[0];
    w->cols = x->ndim == 2 ? (size_t)x->shape[1] : 1;
    if (w->n == 0) return strix_error(STRIX_ERR_ARG, "%s over an empty set of groundings", who);
    STRIX_TRY(check_truth(be, who, x->data, w->n * w->cols, &w->host, &w->host_cap));
    STRIX_TRY(quant_rows(m, io->mask));
    STRIX_TRY(nn_ensure1(be, &w->out, (int64_t)w->cols));
    io->n_out = 1;
    io->out[0] = &w->out;
    bool forall = m->kind == STRIX_FORALL;
    if (w->kept == 0) return strix_fill(be, w->out.data, forall ? 1.0f : 0.0f, w->cols);
    size_t count = w->kept * w->cols;
    const float *src = x->data;
    if (w->kept < w->n) {
        STRIX_TRY(strix_tensor_ensure(be, &w->kept_x, 2, (int64_t[]){(int64_t)w->kept,
                                                                      (int64_t)w->cols}));
        STRIX_TRY(strix_gather_rows(be, x->data, w->rows, w->kept_x.data, w->kept, w->cols));
        src = w->kept_x.data;
    }
    operand_map map = forall ? (m->sem.stable ? NOT_PI_1 : NOT) : (m->sem.stable ? PI_0
                                                                                  : IDENTITY);
    STRIX_TRY(strix_tensor_ensure(be, &w->t, 2, (int64_t[]){(int64_t)w->kept, (int64_t)w->cols}));
    STRIX_TRY(affine(be, src, map.mul, map.add, w->t.data, count));
    STRIX_TRY(nn_ensure1(be, &w->mean_pow, (int64_t)w->cols));
    float p = forall ? m->sem.p_forall : m->sem.p_exists;
    if (forall) STRIX_TRY(nn_ensure1(be, &w->m, (int64_t)w->cols));
    float *agg_out = forall ? w->m.data : w->out.data;
    if (!w->cells) {
        STRIX_TRY(strix_aggregator_forward(be, w->t.data, w->mean_pow.data, agg_out, w->kept,
                                           w->cols, p));
    } else { /* the dropped cells add 0; then the mean over c_j, not n */
        STRIX_TRY(strix_mul(be, w->t.data, w->keep.data, w->t.data, count));
        STRIX_TRY(nn_ensure1(be, &w->mean_all, (int64_t)w->cols));
        STRIX_TRY(strix_aggregator_forward(be, w->t.data, w->mean_all.data, agg_out, w->n,
                                           w->cols, p));
        STRIX_TRY(strix_mul(be, agg_out, w->col_root.data, agg_out, w->cols));
        /* the backward's mean: Σ/c_j, and 1 (any finite value) for an empty column */
        STRIX_TRY(strix_mul(be, w->mean_all.data, w->col_scale.data, w->mean_pow.data, w->cols));
        STRIX_TRY(strix_add(be, w->mean_pow.data, w->col_empty.data, w->mean_pow.data, w->cols));
    }
    if (!forall) return STRIX_OK;
    return affine(be, w->m.data, -1.0f, 1.0f, w->out.data, w->cols);
}

/* dx (n, cols) from the kept rows' dt: a copy, or zeros and a scatter. */
static strix_status quant_spread(fuzzy_quantifier *m, const float *kept_rows) {
    quant_work *w = m->work;
    strix_backend *be = m->base.be;
    size_t all = w->n * w->cols;
    if (w->kept == w->n)
        return strix_copy(be, w->dx.data, kept_rows, all * sizeof(float), STRIX_COPY_D2D);
    STRIX_TRY(strix_fill(be, w->dx.data, 0.0f, all));
    if (w->kept == 0) return STRIX_OK;
    return strix_scatter_add_rows(be, kept_rows, w->rows, w->dx.data, w->kept, w->cols);
}

static strix_status quant_reverse(fuzzy_quantifier *m, strix_module_io *io, int pass) {
    quant_work *w = m->work;
    strix_backend *be = m->base.be;
    if (io->n_in != 1 || !io->in[0])
        return strix_error(STRIX_ERR_UNSUPPORTED, "%s: one upstream tensor", quant_name(m));
    const strix_tensor *g = io->in[0];
    if (strix_tensor_numel(g) != (int64_t)w->cols)
        return strix_error(STRIX_ERR_SHAPE, "%s: upstream of %lld values for %zu columns",
                           quant_name(m), (long long)strix_tensor_numel(g), w->cols);
    STRIX_TRY(strix_tensor_ensure(be, &w->dx, 2, (int64_t[]){(int64_t)w->n, (int64_t)w->cols}));
    io->n_out = 1;
    io->out[0] = &w->dx;
    if (w->kept == 0) return quant_spread(m, NULL);
    bool forall = m->kind == STRIX_FORALL;
    size_t count = w->kept * w->cols;
    STRIX_TRY(strix_tensor_ensure(be, &w->dt, 2, (int64_t[]){(int64_t)w->kept, (int64_t)w->cols}));
    float p = forall ? m->sem.p_forall : m->sem.p_exists;
    if (pass == 1) {
        /* Exists: d/dx = (1 − ε or 1)·agg'(x'). Forall: out = 1 − agg(u), u = 1 − x': the two
         * minus signs cancel, the same form on u. */
        const float *t = w->t.data;
        if (w->cells) { /* the dropped cells at 1 (no 0^(p−1)), their gradient scaled to 0 */
            STRIX_TRY(strix_tensor_ensure(be, &w->tb, 2, (int64_t[]){(int64_t)w->n,
                                                                      (int64_t)w->cols}));
            STRIX_TRY(strix_add(be, w->t.data, w->drop.data, w->tb.data, count));
            t = w->tb.data;
        }
        STRIX_TRY(strix_aggregator_backward(be, t, w->mean_pow.data, g->data, w->dt.data,
                                            w->kept, w->cols, p));
        if (w->cells) STRIX_TRY(strix_mul(be, w->dt.data, w->cell_scale.data, w->dt.data, count));
        if (m->sem.stable)
            STRIX_TRY(affine(be, w->dt.data, 1.0f - STRIX_FUZZY_EPS, 0.0f, w->dt.data, count));
        return quant_spread(m, w->dt.data);
    }
    float eps = m->base.rule.epsilon;
    if (!forall) { /* with a per-cell guard, Σ/n over the kept cells: n·mean = their Σ */
        const float *mean = w->cells ? w->mean_all.data : w->mean_pow.data;
        STRIX_TRY(strix_aggregator_lrp(be, w->t.data, mean, g->data, w->dt.data, w->kept,
                                       w->cols, p, eps));
        return quant_spread(m, w->dt.data);
    }
    /* Forall: the epsilon rule of the plain mean over x' = 1 − u. */
    STRIX_TRY(strix_tensor_ensure(be, &w->plain, 2, (int64_t[]){(int64_t)w->kept,
                                                                 (int64_t)w->cols}));
    STRIX_TRY(affine(be, w->t.data, -1.0f, 1.0f, w->plain.data, count));
    if (w->cells) STRIX_TRY(strix_mul(be, w->plain.data, w->keep.data, w->plain.data, count));
    STRIX_TRY(nn_ensure1(be, &w->mean1, (int64_t)w->cols));
    STRIX_TRY(nn_ensure1(be, &w->m, (int64_t)w->cols));
    STRIX_TRY(strix_aggregator_forward(be, w->plain.data, w->mean1.data, w->m.data, w->kept,
                                       w->cols, 1.0f));
    STRIX_TRY(strix_aggregator_lrp(be, w->plain.data, w->mean1.data, g->data, w->dt.data,
                                   w->kept, w->cols, 1.0f, eps));
    return quant_spread(m, w->dt.data);
}

static strix_status quant_backward_ex(strix_module *mod, strix_module_io *io) {
    return quant_reverse((fuzzy_quantifier *)mod, io, 1);
}

static strix_status quant_relevance_ex(strix_module *mod, strix_module_io *io) {
    return quant_reverse((fuzzy_quantifier *)mod, io, 2);
}

static void quant_destroy(strix_module *mod) {
    fuzzy_quantifier *m = (fuzzy_quantifier *)mod;
    quant_work *w = m->work;
    strix_free(mod->be, w->rows);
    free(w->host_rows);
    free(w->host);
    strix_tensor *tensors[] = {&w->kept_x, &w->t, &w->mean_pow, &w->m, &w->out, &w->plain,
                               &w->mean1, &w->dt, &w->dx, &w->keep, &w->drop, &w->cell_scale,
                               &w->col_scale, &w->col_root, &w->col_empty, &w->mean_all,
                               &w->tb};
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) strix_tensor_free(tensors[i]);
    free(m);
}

static const strix_module_i quantifier_vt = {
    .type = "Quantifier", .destroy = quant_destroy, .supports_rule = lrp_supports_all,
    .forward_ex = quant_forward_ex, .backward_ex = quant_backward_ex,
    .relevance_ex = quant_relevance_ex};

strix_status strix_quantifier_new(strix_backend *be, strix_quantifier kind,
                                  const strix_fuzzy *sem, strix_module **out) {
    *out = NULL;
    STRIX_ASSERT(be != NULL, "quantifier: NULL backend");
    if (kind != STRIX_FORALL && kind != STRIX_EXISTS)
        return strix_error(STRIX_ERR_ARG, "quantifier: kind %d", (int)kind);
    strix_fuzzy defaults = strix_fuzzy_default();
    if (!sem) sem = &defaults;
    STRIX_TRY(strix_fuzzy_check(sem));
    fuzzy_quantifier *m = NULL;
    NN_CALLOC_WITH_WORK(m);
    if (!m) return NN_ALLOC_FAIL("Quantifier");
    m->base.vt = &quantifier_vt;
    m->base.be = be;
    m->base.rule = (strix_lrp_rule){.kind = STRIX_LRP_EPSILON, .epsilon = 1e-6f};
    m->kind = kind;
    m->sem = *sem;
    *out = &m->base;
    return STRIX_OK;
}
