/*
 * ltn.c - knowledge bases of Logic Tensor Networks (strix/logic.h): variables over groundings,
 * predicates (modules or truth tables), formulas as a graph of nodes in creation order (so a
 * node's children come before it), satisfaction, its gradient and relevance.
 *
 * Each node holds the truth values of its grid: row-major over its free variables in order of
 * first appearance. Broadcasting and quantifying are data movement on the backend: a connective
 * gathers each operand onto its grid through an index map (and its backward scatter-adds back,
 * summing over the broadcast axes); a quantifier gathers its operand into (n_x, rest) with the
 * quantified variable leading, then runs its strix/fuzzy.h module. An atom gathers the
 * groundings of its arguments side by side into the predicate module's input. The maps are
 * built on the host when a node is made; buffers are allocated at the first forward.
 * A predicate module may serve several atoms: backward and relevance run its forward again on
 * the atom's input first, so its caches belong to that atom. Forward evaluates every node (queries
 * too); backward and relevance visit only the nodes under an axiom.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strix/logic.h"
#include "strix/lrp.h"

#define NAME_MAX_LEN 48

typedef struct ltn_variable {
    char name[NAME_MAX_LEN];
    strix_tensor groundings; /* view of the caller's (rows, features) */
    float *grad;             /* the caller's, or NULL */
    int row;                 /* a constant's row; -1: every row */
    size_t n, features;
    strix_tensor rel;        /* (n, features), from strix_ltn_explain */
} ltn_variable;

typedef struct ltn_predicate {
    char name[NAME_MAX_LEN];
    strix_module *m;         /* NULL: a table */
    strix_tensor table;      /* view of the caller's truth table */
    float *table_grad;
    int arity;
} ltn_predicate;

typedef enum node_kind { NODE_ATOM, NODE_CONNECTIVE, NODE_QUANTIFIER } node_kind;

typedef struct ltn_node {
    node_kind kind;
    int nvars, vars[STRIX_LTN_MAX_FREE]; /* variable indices, order of first appearance */
    size_t size;                         /* grid size: the product of their sizes */
    int child[2], nchild;
    /* atom */
    int pred, arity, args[STRIX_LTN_MAX_FREE];
    int32_t *rows[STRIX_LTN_MAX_FREE];   /* per argument: the groundings row of each grid cell */
    int32_t *cells;                      /* table predicates: the table cell of each grid cell */
    strix_tensor input, slice;           /* the module's (size, F) input; one argument's part */
    /* connective and quantifier */
    strix_module *op;
    int32_t *map[2];                     /* operand k's cell for each cell (NULL: the same) */
    strix_tensor operand[2];
    size_t map_count;                    /* quantifier: the map covers n_x · rest cells */
    strix_tensor mask;                   /* quantifier guard (n_x), or empty */
    strix_tensor value, grad, rel;
    bool in_axiom;                       /* under some axiom: backward and relevance visit it */
} ltn_node;

struct strix_ltn {
    strix_backend *be;
    strix_fuzzy sem;
    strix_status error;
    ltn_variable *vars;
    int nvars, cap_vars;
    ltn_predicate *preds;
    int npreds, cap_preds;
    ltn_node *nodes;
    int nnodes, cap_nodes;
    int *axioms;
    int naxioms, cap_axioms;
    strix_module *sat_agg;               /* Forall over the axioms' truth values */
    strix_tensor axiom_values, axiom_grads, one;
    bool ready, forwarded, explained;
    float seed;
    float *host;                         /* truth-value checks */
    size_t host_cap;
};

// ---- errors and handles ------------------------------------------------------------------------

/* A NULL knowledge base is a contract violation (strix/core.h's STRIX_ASSERT). */
#define KB_ASSERT(kb) STRIX_ASSERT((kb) != NULL, "ltn: NULL knowledge base")

/* Latches the first error (its message stays in strix_last_error()). */
static void latch(strix_ltn *kb, strix_status s) {
    if (kb->error == STRIX_OK) kb->error = s;
}

static strix_ltn_expr bad_expr(strix_ltn *kb, strix_status s) {
    latch(kb, s);
    return (strix_ltn_expr){0};
}

static bool var_ok(const strix_ltn *kb, strix_ltn_var x) { return x.id >= 1 && x.id <= kb->nvars; }
static bool pred_ok(const strix_ltn *kb, strix_ltn_pred p) {
    return p.id >= 1 && p.id <= kb->npreds;
}
static bool expr_ok(const strix_ltn *kb, strix_ltn_expr e) {
    return e.id >= 1 && e.id <= kb->nnodes;
}

/* Grows *items (count *n, capacity *cap) by one zeroed element; its index, or -1. */
static int grow(void **items, int *n, int *cap, size_t size) {
    if (*n == *cap) {
        int next = *cap ? 2 * *cap : 8;
        void *grown = realloc(*items, (size_t)next * size);
        if (!grown) return -1;
        *items = grown;
        *cap = next;
    }
    memset((char *)*items + (size_t)*n * size, 0, size);
    return (*n)++;
}

/* grow() for a builder: -1 with the out-of-memory error latched. */
static int grow_latched(strix_ltn *kb, void **items, int *n, int *cap, size_t size) {
    int i = grow(items, n, cap, size);
    if (i < 0) latch(kb, strix_error(STRIX_ERR_ALLOC, "ltn: out of memory"));
    return i;
}

static void copy_name(char dst[NAME_MAX_LEN], const char *name) {
    snprintf(dst, NAME_MAX_LEN, "%s", name ? name : "?");
}

// ---- knowledge base ----------------------------------------------------------------------------

strix_status strix_ltn_new(strix_backend *be, const strix_fuzzy *sem, strix_ltn **out) {
    *out = NULL;
    STRIX_ASSERT(be != NULL, "ltn: NULL backend");
    strix_fuzzy defaults = strix_fuzzy_default();
    if (!sem) sem = &defaults;
    STRIX_TRY(strix_fuzzy_check(sem));
    strix_ltn *kb = calloc(1, sizeof *kb);
    if (!kb) return strix_error(STRIX_ERR_ALLOC, "ltn: out of memory");
    kb->be = be;
    kb->sem = *sem;
    strix_status s = strix_quantifier_new(be, STRIX_FORALL, sem, &kb->sat_agg);
    if (s != STRIX_OK) {
        free(kb);
        return s;
    }
    *out = kb;
    return STRIX_OK;
}

void strix_ltn_free(strix_ltn *kb) {
    if (!kb) return;
    strix_backend *be = kb->be;
    for (int i = 0; i < kb->nvars; i++) strix_tensor_free(&kb->vars[i].rel);
    for (int i = 0; i < kb->nnodes; i++) {
        ltn_node *n = &kb->nodes[i];
        for (int k = 0; k < STRIX_LTN_MAX_FREE; k++) strix_free(be, n->rows[k]);
        strix_free(be, n->cells);
        strix_free(be, n->map[0]);
        strix_free(be, n->map[1]);
        strix_module_free(n->op);
        strix_tensor *t[] = {&n->input, &n->slice, &n->operand[0], &n->operand[1], &n->mask,
                             &n->value, &n->grad, &n->rel};
        for (size_t j = 0; j < sizeof t / sizeof t[0]; j++) strix_tensor_free(t[j]);
    }
    strix_module_free(kb->sat_agg);
    strix_tensor_free(&kb->axiom_values);
    strix_tensor_free(&kb->axiom_grads);
    strix_tensor_free(&kb->one);
    free(kb->vars);
    free(kb->preds);
    free(kb->nodes);
    free(kb->axioms);
    free(kb->host);
    free(kb);
}

strix_status strix_ltn_set_semantics(strix_ltn *kb, const strix_fuzzy *sem) {
    KB_ASSERT(kb);
    strix_fuzzy defaults = strix_fuzzy_default();
    if (!sem) sem = &defaults;
    STRIX_TRY(strix_fuzzy_check(sem));
    kb->sem = *sem;
    return STRIX_OK;
}

strix_status strix_ltn_status(const strix_ltn *kb) {
    KB_ASSERT(kb);
    return kb->error;
}

// ---- terms -------------------------------------------------------------------------------------

static strix_ltn_var add_variable(strix_ltn *kb, const char *name, const strix_tensor *g,
                                  float *grad, int row) {
    if (kb->error) return (strix_ltn_var){0};
    if (!g || g->ndim < 1 || g->ndim > 2 || g->shape[0] < 1 || (g->ndim == 2 && g->shape[1] < 1)) {
        latch(kb, strix_error(STRIX_ERR_ARG, "ltn: variable %s needs (n >= 1, features) "
                              "groundings", name ? name : "?"));
        return (strix_ltn_var){0};
    }
    if (row >= 0 && row >= g->shape[0]) {
        latch(kb, strix_error(STRIX_ERR_ARG, "ltn: constant %s: row %d of %lld", name ? name : "?",
                              row, (long long)g->shape[0]));
        return (strix_ltn_var){0};
    }
    int i = grow_latched(kb, (void **)&kb->vars, &kb->nvars, &kb->cap_vars, sizeof *kb->vars);
    if (i < 0) return (strix_ltn_var){0};
    ltn_variable *v = &kb->vars[i];
    copy_name(v->name, name);
    v->groundings = strix_tensor_view(g->data, g->device, g->ndim, g->shape);
    v->grad = grad;
    v->row = row;
    v->n = row >= 0 ? 1 : (size_t)g->shape[0];
    v->features = g->ndim == 2 ? (size_t)g->shape[1] : 1;
    return (strix_ltn_var){i + 1};
}

strix_ltn_var strix_ltn_variable(strix_ltn *kb, const char *name, const strix_tensor *groundings,
                                 float *grad) {
    KB_ASSERT(kb);
    return add_variable(kb, name, groundings, grad, -1);
}

strix_ltn_var strix_ltn_constant(strix_ltn *kb, const char *name, const strix_tensor *groundings,
                                 float *grad, int row) {
    KB_ASSERT(kb);
    if (row < 0) {
        latch(kb, strix_error(STRIX_ERR_ARG, "ltn: constant %s: row %d", name ? name : "?", row));
        return (strix_ltn_var){0};
    }
    return add_variable(kb, name, groundings, grad, row);
}

int strix_ltn_variable_size(const strix_ltn *kb, strix_ltn_var x) {
    KB_ASSERT(kb);
    return var_ok(kb, x) ? (int)kb->vars[x.id - 1].n : 0;
}

static strix_ltn_pred add_predicate(strix_ltn *kb, const char *name, strix_module *m,
                                    const strix_tensor *table, float *grad, int arity) {
    if (kb->error) return (strix_ltn_pred){0};
    int i = grow_latched(kb, (void **)&kb->preds, &kb->npreds, &kb->cap_preds, sizeof *kb->preds);
    if (i < 0) return (strix_ltn_pred){0};
    ltn_predicate *p = &kb->preds[i];
    copy_name(p->name, name);
    p->m = m;
    if (table) p->table = strix_tensor_view(table->data, table->device, table->ndim, table->shape);
    p->table_grad = grad;
    p->arity = arity;
    return (strix_ltn_pred){i + 1};
}

strix_ltn_pred strix_ltn_predicate(strix_ltn *kb, const char *name, strix_module *m, int arity) {
    KB_ASSERT(kb);
    if (!m || arity < 1 || arity > STRIX_LTN_MAX_FREE) {
        latch(kb, strix_error(STRIX_ERR_ARG, "ltn: predicate %s: %s", name ? name : "?",
                              m ? "arity out of 1..4" : "NULL module"));
        return (strix_ltn_pred){0};
    }
    return add_predicate(kb, name, m, NULL, NULL, arity);
}

strix_ltn_pred strix_ltn_predicate_table(strix_ltn *kb, const char *name,
                                         const strix_tensor *truth, float *grad) {
    KB_ASSERT(kb);
    if (!truth || truth->ndim < 1 || truth->ndim > STRIX_LTN_MAX_FREE ||
        strix_tensor_numel(truth) < 1) {
        latch(kb, strix_error(STRIX_ERR_ARG, "ltn: table predicate %s needs a truth table of 1 "
                              "to 4 axes", name ? name : "?"));
        return (strix_ltn_pred){0};
    }
    return add_predicate(kb, name, NULL, truth, grad, truth->ndim);
}

// ---- nodes -------------------------------------------------------------------------------------

/* A new node of `kind`; NULL (error latched) when out of memory. */
static ltn_node *new_node(strix_ltn *kb, node_kind kind, int *index) {
    int i = grow_latched(kb, (void **)&kb->nodes, &kb->nnodes, &kb->cap_nodes, sizeof *kb->nodes);
    if (i < 0) return NULL;
    kb->nodes[i].kind = kind;
    kb->ready = kb->forwarded = kb->explained = false; /* the next forward sizes the new node */
    *index = i;
    return &kb->nodes[i];
}

/* The size of a grid over vars. */
static size_t grid_size(const strix_ltn *kb, int nvars, const int *vars) {
    size_t size = 1;
    for (int i = 0; i < nvars; i++) size *= kb->vars[vars[i]].n;
    return size;
}

/* Position of variable v in vars, or -1. */
static int find_var(int nvars, const int *vars, int v) {
    for (int i = 0; i < nvars; i++)
        if (vars[i] == v) return i;
    return -1;
}

/* coords (per variable of the grid) of cell g. */
static void cell_coords(const strix_ltn *kb, int nvars, const int *vars, size_t g,
                        size_t *coords) {
    for (int i = nvars - 1; i >= 0; i--) {
        size_t d = kb->vars[vars[i]].n;
        coords[i] = g % d;
        g /= d;
    }
}

/* The cell of a grid over sub_vars (each also in vars) at the coords of a cell of vars. */
static size_t sub_cell(const strix_ltn *kb, int nvars, const int *vars, const size_t *coords,
                       int sub_n, const int *sub_vars) {
    size_t cell = 0;
    for (int j = 0; j < sub_n; j++) {
        int at = find_var(nvars, vars, sub_vars[j]);
        cell = cell * kb->vars[sub_vars[j]].n + coords[at];
    }
    return cell;
}

/* Uploads host int32 values as a new backend buffer *out. */
static strix_status upload_i32(strix_backend *be, const int32_t *host, size_t n, int32_t **out) {
    STRIX_TRY(strix_alloc(be, (n ? n : 1) * sizeof(int32_t), (void **)out));
    if (n == 0) return STRIX_OK;
    return strix_copy(be, *out, host, n * sizeof(int32_t), STRIX_COPY_H2D);
}

/* Index map of the grid (nvars, vars) onto the grid of a child (its cells), uploaded; NULL when
 * the child's grid is the same (same variables in the same order). */
static strix_status child_map(strix_ltn *kb, const ltn_node *node, const ltn_node *child,
                              int32_t **out) {
    *out = NULL;
    bool same = child->nvars == node->nvars;
    for (int i = 0; same && i < node->nvars; i++) same = child->vars[i] == node->vars[i];
    if (same) return STRIX_OK;
    int32_t *host = malloc((node->size ? node->size : 1) * sizeof(int32_t));
    if (!host) return strix_error(STRIX_ERR_ALLOC, "ltn: out of memory");
    size_t coords[STRIX_LTN_MAX_FREE];
    for (size_t g = 0; g < node->size; g++) {
        cell_coords(kb, node->nvars, node->vars, g, coords);
        host[g] = (int32_t)sub_cell(kb, node->nvars, node->vars, coords, child->nvars,
                                    child->vars);
    }
    strix_status s = upload_i32(kb->be, host, node->size, out);
    free(host);
    return s;
}

strix_ltn_expr strix_ltn_atom(strix_ltn *kb, strix_ltn_pred p, int arity,
                              const strix_ltn_var *args) {
    KB_ASSERT(kb);
    if (kb->error) return (strix_ltn_expr){0};
    if (!pred_ok(kb, p)) return bad_expr(kb, strix_error(STRIX_ERR_ARG, "ltn: atom of a bad "
                                                         "predicate handle"));
    const ltn_predicate *pr = &kb->preds[p.id - 1];
    if (arity != pr->arity)
        return bad_expr(kb, strix_error(STRIX_ERR_ARG, "ltn: predicate %s takes %d argument%s, "
                                        "given %d", pr->name, pr->arity,
                                        pr->arity == 1 ? "" : "s", arity));
    for (int j = 0; j < arity; j++)
        if (!var_ok(kb, args[j]))
            return bad_expr(kb, strix_error(STRIX_ERR_ARG, "ltn: %s: argument %d is a bad "
                                            "variable handle", pr->name, j + 1));
    if (!pr->m) { /* a table's axes must match its arguments' groundings */
        for (int j = 0; j < arity; j++) {
            const ltn_variable *v = &kb->vars[args[j].id - 1];
            if (pr->table.shape[j] != v->groundings.shape[0])
                return bad_expr(kb, strix_error(STRIX_ERR_SHAPE, "ltn: table %s: axis %d has "
                                                "%lld cells, %s has %lld groundings", pr->name,
                                                j, (long long)pr->table.shape[j], v->name,
                                                (long long)v->groundings.shape[0]));
        }
    }
    int index;
    ltn_node *n = new_node(kb, NODE_ATOM, &index);
    if (!n) return (strix_ltn_expr){0};
    n->pred = p.id - 1;
    n->arity = arity;
    for (int j = 0; j < arity; j++) {
        n->args[j] = args[j].id - 1;
        if (find_var(n->nvars, n->vars, n->args[j]) < 0) n->vars[n->nvars++] = n->args[j];
    }
    n->size = grid_size(kb, n->nvars, n->vars);
    /* Per argument, the groundings row of each cell; for a table, the table cell. */
    int32_t *host = malloc((size_t)(arity + 1) * n->size * sizeof(int32_t));
    if (!host) return bad_expr(kb, strix_error(STRIX_ERR_ALLOC, "ltn: out of memory"));
    size_t coords[STRIX_LTN_MAX_FREE];
    int32_t *cells = host + (size_t)arity * n->size;
    for (size_t g = 0; g < n->size; g++) {
        cell_coords(kb, n->nvars, n->vars, g, coords);
        size_t cell = 0;
        for (int j = 0; j < arity; j++) {
            const ltn_variable *v = &kb->vars[n->args[j]];
            size_t at = coords[find_var(n->nvars, n->vars, n->args[j])];
            size_t row = v->row >= 0 ? (size_t)v->row : at;
            host[(size_t)j * n->size + g] = (int32_t)row;
            cell = cell * (size_t)v->groundings.shape[0] + row;
        }
        cells[g] = (int32_t)cell;
    }
    strix_status s = STRIX_OK;
    if (pr->m) {
        for (int j = 0; j < arity && s == STRIX_OK; j++)
            s = upload_i32(kb->be, host + (size_t)j * n->size, n->size, &n->rows[j]);
    } else {
        s = upload_i32(kb->be, cells, n->size, &n->cells);
    }
    free(host);
    if (s != STRIX_OK) return bad_expr(kb, s);
    return (strix_ltn_expr){index + 1};
}

strix_ltn_expr strix_ltn_atom1(strix_ltn *kb, strix_ltn_pred p, strix_ltn_var x) {
    return strix_ltn_atom(kb, p, 1, &x);
}

strix_ltn_expr strix_ltn_atom2(strix_ltn *kb, strix_ltn_pred p, strix_ltn_var x,
                               strix_ltn_var y) {
    strix_ltn_var args[2] = {x, y};
    return strix_ltn_atom(kb, p, 2, args);
}

/* A connective node over children a (and b). */
static strix_ltn_expr connective(strix_ltn *kb, strix_connective kind, strix_ltn_expr a,
                                 strix_ltn_expr b) {
    static const char *names[] = {"not", "and", "or", "implies", "equiv"};
    bool binary = kind != STRIX_CONNECTIVE_NOT;
    if (kb->error) return (strix_ltn_expr){0};
    if (!expr_ok(kb, a) || (binary && !expr_ok(kb, b)))
        return bad_expr(kb, strix_error(STRIX_ERR_ARG, "ltn: %s of a bad expression handle",
                                        names[kind]));
    int index;
    ltn_node *n = new_node(kb, NODE_CONNECTIVE, &index);
    if (!n) return (strix_ltn_expr){0};
    n->nchild = binary ? 2 : 1;
    n->child[0] = a.id - 1;
    n->child[1] = binary ? b.id - 1 : -1;
    for (int k = 0; k < n->nchild; k++) {
        const ltn_node *c = &kb->nodes[n->child[k]];
        for (int i = 0; i < c->nvars; i++) {
            if (find_var(n->nvars, n->vars, c->vars[i]) >= 0) continue;
            if (n->nvars == STRIX_LTN_MAX_FREE)
                return bad_expr(kb, strix_error(STRIX_ERR_ARG, "ltn: %s over more than %d free "
                                                "variables", names[kind], STRIX_LTN_MAX_FREE));
            n->vars[n->nvars++] = c->vars[i];
        }
    }
    n->size = grid_size(kb, n->nvars, n->vars);
    strix_status s = strix_connective_new(kb->be, kind, &kb->sem, &n->op);
    for (int k = 0; k < n->nchild && s == STRIX_OK; k++)
        s = child_map(kb, n, &kb->nodes[n->child[k]], &n->map[k]);
    if (s != STRIX_OK) return bad_expr(kb, s);
    return (strix_ltn_expr){index + 1};
}

strix_ltn_expr strix_ltn_not(strix_ltn *kb, strix_ltn_expr a) {
    KB_ASSERT(kb);
    return connective(kb, STRIX_CONNECTIVE_NOT, a, (strix_ltn_expr){0});
}
strix_ltn_expr strix_ltn_and(strix_ltn *kb, strix_ltn_expr a, strix_ltn_expr b) {
    KB_ASSERT(kb);
    return connective(kb, STRIX_CONNECTIVE_AND, a, b);
}
strix_ltn_expr strix_ltn_or(strix_ltn *kb, strix_ltn_expr a, strix_ltn_expr b) {
    KB_ASSERT(kb);
    return connective(kb, STRIX_CONNECTIVE_OR, a, b);
}
strix_ltn_expr strix_ltn_implies(strix_ltn *kb, strix_ltn_expr a, strix_ltn_expr b) {
    KB_ASSERT(kb);
    return connective(kb, STRIX_CONNECTIVE_IMPLIES, a, b);
}
strix_ltn_expr strix_ltn_equiv(strix_ltn *kb, strix_ltn_expr a, strix_ltn_expr b) {
    KB_ASSERT(kb);
    return connective(kb, STRIX_CONNECTIVE_EQUIV, a, b);
}

/* The (n_x, rest) guard of a quantifier node from a guard callback (host floats, 1 keeps). */
static strix_status guard_cells(strix_ltn *kb, const int *order, int count, size_t cells,
                                strix_ltn_guard guard, void *user, strix_tensor *mask) {
    float *host = malloc(cells * sizeof(float));
    if (!host) return strix_error(STRIX_ERR_ALLOC, "ltn: out of memory");
    strix_ltn_var vars[STRIX_LTN_MAX_FREE + 1];
    for (int i = 0; i < count; i++) vars[i] = (strix_ltn_var){order[i] + 1};
    size_t coords[STRIX_LTN_MAX_FREE + 1];
    int rows[STRIX_LTN_MAX_FREE + 1];
    for (size_t g = 0; g < cells; g++) {
        cell_coords(kb, count, order, g, coords);
        for (int i = 0; i < count; i++) rows[i] = (int)coords[i];
        host[g] = guard(vars, rows, count, user) ? 1.0f : 0.0f;
    }
    size_t n_x = kb->vars[order[0]].n;
    strix_status s = strix_tensor_new(kb->be, 2, (int64_t[]){(int64_t)n_x,
                                                            (int64_t)(cells / n_x)}, mask);
    if (s == STRIX_OK)
        s = strix_copy(kb->be, mask->data, host, cells * sizeof(float), STRIX_COPY_H2D);
    free(host);
    return s;
}

/* A quantifier node over variable x of a, guarded by keep (host, x's size), by a guard callback
 * over the cells, or not at all. */
static strix_ltn_expr quantifier(strix_ltn *kb, strix_quantifier kind, strix_ltn_var x,
                                 strix_ltn_expr a, const float *keep, strix_ltn_guard guard,
                                 void *user) {
    const char *name = kind == STRIX_FORALL ? "forall" : "exists";
    if (kb->error) return (strix_ltn_expr){0};
    if (!var_ok(kb, x) || !expr_ok(kb, a))
        return bad_expr(kb, strix_error(STRIX_ERR_ARG, "ltn: %s of a bad handle", name));
    const ltn_node *c = &kb->nodes[a.id - 1];
    const ltn_variable *v = &kb->vars[x.id - 1];
    int at = find_var(c->nvars, c->vars, x.id - 1);
    if (at < 0)
        return bad_expr(kb, strix_error(STRIX_ERR_ARG, "ltn: %s %s: %s is not free in the "
                                        "formula", name, v->name, v->name));
    int index;
    ltn_node *n = new_node(kb, NODE_QUANTIFIER, &index);
    if (!n) return (strix_ltn_expr){0};
    c = &kb->nodes[a.id - 1]; /* new_node may have moved the nodes */
    n->nchild = 1;
    n->child[0] = a.id - 1;
    for (int i = 0; i < c->nvars; i++)
        if (i != at) n->vars[n->nvars++] = c->vars[i];
    n->size = grid_size(kb, n->nvars, n->vars);
    /* map: cell (i, j) of the (n_x, rest) operand -> the child's cell. */
    int order[STRIX_LTN_MAX_FREE + 1];
    order[0] = x.id - 1;
    for (int i = 0; i < n->nvars; i++) order[i + 1] = n->vars[i];
    n->map_count = v->n * n->size;
    int32_t *host = malloc(n->map_count * sizeof(int32_t));
    if (!host) return bad_expr(kb, strix_error(STRIX_ERR_ALLOC, "ltn: out of memory"));
    size_t coords[STRIX_LTN_MAX_FREE];
    for (size_t g = 0; g < n->map_count; g++) {
        cell_coords(kb, n->nvars + 1, order, g, coords);
        host[g] = (int32_t)sub_cell(kb, n->nvars + 1, order, coords, c->nvars, c->vars);
    }
    strix_status s = upload_i32(kb->be, host, n->map_count, &n->map[0]);
    free(host);
    if (s == STRIX_OK) s = strix_quantifier_new(kb->be, kind, &kb->sem, &n->op);
    if (s == STRIX_OK && keep) {
        int64_t len = (int64_t)v->n;
        s = strix_tensor_new(kb->be, 1, &len, &n->mask);
        if (s == STRIX_OK)
            s = strix_copy(kb->be, n->mask.data, keep, v->n * sizeof(float), STRIX_COPY_H2D);
    }
    if (s == STRIX_OK && guard)
        s = guard_cells(kb, order, n->nvars + 1, n->map_count, guard, user, &n->mask);
    if (s != STRIX_OK) return bad_expr(kb, s);
    return (strix_ltn_expr){index + 1};
}

strix_ltn_expr strix_ltn_forall(strix_ltn *kb, strix_ltn_var x, strix_ltn_expr a) {
    KB_ASSERT(kb);
    return quantifier(kb, STRIX_FORALL, x, a, NULL, NULL, NULL);
}
strix_ltn_expr strix_ltn_exists(strix_ltn *kb, strix_ltn_var x, strix_ltn_expr a) {
    KB_ASSERT(kb);
    return quantifier(kb, STRIX_EXISTS, x, a, NULL, NULL, NULL);
}
strix_ltn_expr strix_ltn_forall_where(strix_ltn *kb, strix_ltn_var x, strix_ltn_expr a,
                                      const float *keep) {
    KB_ASSERT(kb);
    if (!keep) return bad_expr(kb, strix_error(STRIX_ERR_ARG, "ltn: forall_where: NULL keep"));
    return quantifier(kb, STRIX_FORALL, x, a, keep, NULL, NULL);
}
strix_ltn_expr strix_ltn_exists_where(strix_ltn *kb, strix_ltn_var x, strix_ltn_expr a,
                                      const float *keep) {
    KB_ASSERT(kb);
    if (!keep) return bad_expr(kb, strix_error(STRIX_ERR_ARG, "ltn: exists_where: NULL keep"));
    return quantifier(kb, STRIX_EXISTS, x, a, keep, NULL, NULL);
}

strix_ltn_expr strix_ltn_forall_guarded(strix_ltn *kb, strix_ltn_var x, strix_ltn_expr a,
                                        strix_ltn_guard keep, void *user) {
    KB_ASSERT(kb);
    if (!keep) return bad_expr(kb, strix_error(STRIX_ERR_ARG, "ltn: forall_guarded: NULL guard"));
    return quantifier(kb, STRIX_FORALL, x, a, NULL, keep, user);
}
strix_ltn_expr strix_ltn_exists_guarded(strix_ltn *kb, strix_ltn_var x, strix_ltn_expr a,
                                        strix_ltn_guard keep, void *user) {
    KB_ASSERT(kb);
    if (!keep) return bad_expr(kb, strix_error(STRIX_ERR_ARG, "ltn: exists_guarded: NULL guard"));
    return quantifier(kb, STRIX_EXISTS, x, a, NULL, keep, user);
}

strix_status strix_ltn_axiom(strix_ltn *kb, strix_ltn_expr a) {
    KB_ASSERT(kb);
    if (kb->error) return kb->error;
    if (!expr_ok(kb, a)) return strix_error(STRIX_ERR_ARG, "ltn: axiom of a bad expression handle");
    const ltn_node *n = &kb->nodes[a.id - 1];
    for (int i = 0; i < n->nvars; i++) {
        const ltn_variable *v = &kb->vars[n->vars[i]];
        if (v->n != 1)
            return strix_error(STRIX_ERR_ARG, "ltn: an axiom must be closed, but %s is free with "
                               "%zu individuals (quantify it)", v->name, v->n);
    }
    int i = grow((void **)&kb->axioms, &kb->naxioms, &kb->cap_axioms, sizeof *kb->axioms);
    if (i < 0) return strix_error(STRIX_ERR_ALLOC, "ltn: out of memory");
    kb->axioms[i] = a.id - 1;
    kb->ready = kb->forwarded = kb->explained = false;
    return STRIX_OK;
}

// ---- evaluation --------------------------------------------------------------------------------

/* Marks the nodes under the axioms (children come before their parents: one backward sweep). */
static void mark_axiom_nodes(strix_ltn *kb) {
    for (int i = 0; i < kb->nnodes; i++) kb->nodes[i].in_axiom = false;
    for (int k = 0; k < kb->naxioms; k++) kb->nodes[kb->axioms[k]].in_axiom = true;
    for (int i = kb->nnodes - 1; i >= 0; i--) {
        const ltn_node *n = &kb->nodes[i];
        for (int c = 0; n->in_axiom && c < n->nchild; c++) kb->nodes[n->child[c]].in_axiom = true;
    }
}

/* Allocates every node's buffers (once per change of the graph). */
static strix_status prepare(strix_ltn *kb) {
    if (kb->ready) return STRIX_OK;
    strix_backend *be = kb->be;
    mark_axiom_nodes(kb);
    for (int i = 0; i < kb->nnodes; i++) {
        ltn_node *n = &kb->nodes[i];
        int64_t size = (int64_t)n->size;
        STRIX_TRY(strix_tensor_ensure(be, &n->value, 1, &size));
        STRIX_TRY(strix_tensor_ensure(be, &n->grad, 1, &size));
        STRIX_TRY(strix_tensor_ensure(be, &n->rel, 1, &size));
        if (n->kind == NODE_ATOM && kb->preds[n->pred].m) {
            int64_t width = 0, widest = 0;
            for (int j = 0; j < n->arity; j++) {
                int64_t f = (int64_t)kb->vars[n->args[j]].features;
                width += f;
                widest = f > widest ? f : widest;
            }
            STRIX_TRY(strix_tensor_ensure(be, &n->input, 2, (int64_t[]){size, width}));
            STRIX_TRY(strix_tensor_ensure(be, &n->slice, 2, (int64_t[]){size, widest}));
        } else if (n->kind == NODE_CONNECTIVE) {
            for (int k = 0; k < n->nchild; k++)
                if (n->map[k]) STRIX_TRY(strix_tensor_ensure(be, &n->operand[k], 1, &size));
        } else if (n->kind == NODE_QUANTIFIER) {
            int64_t rows = (int64_t)(n->map_count / (n->size ? n->size : 1));
            STRIX_TRY(strix_tensor_ensure(be, &n->operand[0], 2, (int64_t[]){rows, size}));
        }
    }
    int64_t k = kb->naxioms;
    STRIX_TRY(strix_tensor_ensure(be, &kb->axiom_values, 2, (int64_t[]){k, 1}));
    STRIX_TRY(strix_tensor_ensure(be, &kb->axiom_grads, 1, &k));
    STRIX_TRY(strix_tensor_ensure(be, &kb->one, 1, (int64_t[]){1}));
    kb->ready = true;
    return STRIX_OK;
}

/* STRIX_ERR_ARG unless the n truth values at x lie in [0, 1]; names predicate `who`. */
static strix_status check_atom(strix_ltn *kb, const char *who, const float *x, size_t n) {
    if (n > kb->host_cap) {
        float *grown = realloc(kb->host, n * sizeof(float));
        if (!grown) return strix_error(STRIX_ERR_ALLOC, "ltn: out of memory");
        kb->host = grown;
        kb->host_cap = n;
    }
    STRIX_TRY(strix_copy(kb->be, kb->host, x, n * sizeof(float), STRIX_COPY_D2H));
    for (size_t i = 0; i < n; i++)
        if (!(kb->host[i] >= 0.0f && kb->host[i] <= 1.0f))
            return strix_error(STRIX_ERR_ARG, "ltn: predicate %s gave the truth value %g (cell "
                               "%zu), outside [0, 1]", who, (double)kb->host[i], i);
    return STRIX_OK;
}

/* The atom's module input: its arguments' groundings side by side, one row per cell. */
static strix_status atom_input(strix_ltn *kb, ltn_node *n) {
    size_t off = 0, width = (size_t)n->input.shape[1];
    for (int j = 0; j < n->arity; j++) {
        const ltn_variable *v = &kb->vars[n->args[j]];
        float *part = n->arity == 1 ? n->input.data : n->slice.data;
        STRIX_TRY(strix_gather_rows(kb->be, v->groundings.data, n->rows[j], part, n->size,
                                    v->features));
        if (n->arity > 1)
            STRIX_TRY(strix_copy_2d(kb->be, n->input.data + off, width, part, v->features,
                                    n->size, v->features));
        off += v->features;
    }
    return STRIX_OK;
}

/* Runs the atom's predicate module forward on the atom's input; *y its output. */
static strix_status atom_module_forward(strix_ltn *kb, ltn_node *n, const strix_tensor **y) {
    const ltn_predicate *p = &kb->preds[n->pred];
    STRIX_TRY(atom_input(kb, n));
    STRIX_TRY(strix_module_forward(p->m, &n->input, y));
    if (strix_tensor_numel(*y) != (int64_t)n->size)
        return strix_error(STRIX_ERR_SHAPE, "ltn: predicate %s gave %lld values for %zu inputs",
                           p->name, (long long)strix_tensor_numel(*y), n->size);
    return STRIX_OK;
}

static strix_status atom_forward(strix_ltn *kb, ltn_node *n) {
    const ltn_predicate *p = &kb->preds[n->pred];
    if (!p->m) {
        STRIX_TRY(strix_gather_rows(kb->be, p->table.data, n->cells, n->value.data, n->size, 1));
    } else {
        const strix_tensor *y;
        STRIX_TRY(atom_module_forward(kb, n, &y));
        STRIX_TRY(strix_copy(kb->be, n->value.data, y->data, n->size * sizeof(float),
                             STRIX_COPY_D2D));
    }
    return check_atom(kb, p->name, n->value.data, n->size);
}

/* The operands of a connective on its grid (the children's values, gathered when broadcast). */
static strix_status connective_operands(strix_ltn *kb, ltn_node *n, strix_tensor *ops) {
    for (int k = 0; k < n->nchild; k++) {
        const ltn_node *c = &kb->nodes[n->child[k]];
        if (!n->map[k]) {
            ops[k] = strix_tensor_view(c->value.data, c->value.device, 1,
                                       (int64_t[]){(int64_t)n->size});
            continue;
        }
        STRIX_TRY(strix_gather_rows(kb->be, c->value.data, n->map[k], n->operand[k].data,
                                    n->size, 1));
        ops[k] = n->operand[k];
    }
    return STRIX_OK;
}

static strix_status node_forward(strix_ltn *kb, ltn_node *n) {
    if (n->kind == NODE_ATOM) return atom_forward(kb, n);
    strix_module_io io = {.n_in = n->nchild};
    strix_tensor ops[2];
    if (n->kind == NODE_CONNECTIVE) {
        STRIX_TRY(connective_operands(kb, n, ops));
    } else {
        STRIX_TRY(strix_gather_rows(kb->be, kb->nodes[n->child[0]].value.data, n->map[0],
                                    n->operand[0].data, n->map_count, 1));
        ops[0] = n->operand[0];
        if (n->mask.data) io.mask = &n->mask;
    }
    for (int k = 0; k < n->nchild; k++) io.in[k] = &ops[k];
    STRIX_TRY(strix_module_forward_ex(n->op, &io));
    return strix_copy(kb->be, n->value.data, io.out[0]->data, n->size * sizeof(float),
                      STRIX_COPY_D2D);
}

strix_status strix_ltn_forward(strix_ltn *kb, float *sat) {
    KB_ASSERT(kb);
    if (kb->error) return kb->error;
    if (kb->naxioms == 0) return strix_error(STRIX_ERR_ARG, "ltn: the knowledge base has no axiom");
    kb->forwarded = kb->explained = false; /* until this forward succeeds */
    STRIX_TRY(prepare(kb));
    for (int i = 0; i < kb->nnodes; i++) STRIX_TRY(node_forward(kb, &kb->nodes[i]));
    for (int k = 0; k < kb->naxioms; k++)
        STRIX_TRY(strix_copy(kb->be, kb->axiom_values.data + k,
                             kb->nodes[kb->axioms[k]].value.data, sizeof(float), STRIX_COPY_D2D));
    const strix_tensor *out;
    STRIX_TRY(strix_module_forward(kb->sat_agg, &kb->axiom_values, &out));
    STRIX_TRY(strix_copy(kb->be, &kb->seed, out->data, sizeof(float), STRIX_COPY_D2H));
    kb->forwarded = true;
    kb->explained = false;
    if (sat) *sat = kb->seed;
    return STRIX_OK;
}

// ---- backward and relevance: one reverse walk ---------------------------------------------------

/* child's buffer (grad or rel) += d over the node's grid (scatter through the map when
 * broadcast). */
static strix_status add_to_child(strix_ltn *kb, const int32_t *map, const float *d, size_t count,
                                 float *child) {
    if (count == 0) return STRIX_OK;
    if (map) return strix_scatter_add_rows(kb->be, d, map, child, count, 1);
    return strix_add(kb->be, child, d, child, count);
}

/* The atom's share to its arguments: the module input's gradient or relevance dx (size, F) split
 * per argument and added per grounding into the variables' `which` buffers (grad or rel). */
static strix_status atom_to_variables(strix_ltn *kb, ltn_node *n, const float *dx, bool rel) {
    size_t off = 0, width = (size_t)n->input.shape[1];
    for (int j = 0; j < n->arity; j++) {
        ltn_variable *v = &kb->vars[n->args[j]];
        float *target = rel ? v->rel.data : v->grad;
        int32_t *rows = n->rows[j];
        if (target) {
            if (rel && v->row >= 0) rows = NULL; /* a constant's relevance buffer has one row */
            STRIX_TRY(strix_copy_2d(kb->be, n->slice.data, v->features, dx + off, width, n->size,
                                    v->features));
            if (rows) {
                STRIX_TRY(strix_scatter_add_rows(kb->be, n->slice.data, rows, target, n->size,
                                                 v->features));
            } else {
                for (size_t g = 0; g < n->size; g++)
                    STRIX_TRY(strix_add(kb->be, target, n->slice.data + g * v->features, target,
                                        v->features));
            }
        }
        off += v->features;
    }
    return STRIX_OK;
}

static bool atom_needs_input_share(const strix_ltn *kb, const ltn_node *n, bool rel) {
    for (int j = 0; j < n->arity; j++)
        if (rel || kb->vars[n->args[j]].grad) return true;
    return false;
}

/* Backward (rel false) or relevance (rel true) of one atom from its grad/rel buffer. */
static strix_status atom_reverse(strix_ltn *kb, ltn_node *n, bool rel) {
    const ltn_predicate *p = &kb->preds[n->pred];
    const strix_tensor *d = rel ? &n->rel : &n->grad;
    if (!p->m) {
        if (!rel && p->table_grad)
            return strix_scatter_add_rows(kb->be, d->data, n->cells, p->table_grad, n->size, 1);
        return STRIX_OK;
    }
    const strix_tensor *y, *dx = NULL;
    STRIX_TRY(atom_module_forward(kb, n, &y));
    strix_tensor dy = strix_tensor_view(d->data, d->device, y->ndim, y->shape);
    if (rel) {
        STRIX_TRY(strix_module_relevance(p->m, &dy, &dx));
    } else {
        STRIX_TRY(strix_module_backward(p->m, &dy, &dx));
    }
    if (!atom_needs_input_share(kb, n, rel)) return STRIX_OK;
    if (!dx)
        return strix_error(STRIX_ERR_ARG, "ltn: predicate %s computes no input %s", p->name,
                           rel ? "relevance" : "gradient (its groundings have a gradient)");
    return atom_to_variables(kb, n, dx->data, rel);
}

/* One node's backward or relevance, from its own buffer into its children's. */
static strix_status node_reverse(strix_ltn *kb, ltn_node *n, bool rel, float eps) {
    if (n->kind == NODE_ATOM) return atom_reverse(kb, n, rel);
    const strix_tensor *d = rel ? &n->rel : &n->grad;
    strix_module_io io = {.n_in = 1, .in = {d}};
    if (rel) {
        n->op->rule.epsilon = eps;
        STRIX_TRY(strix_module_relevance_ex(n->op, &io));
    } else {
        STRIX_TRY(strix_module_backward_ex(n->op, &io));
    }
    size_t count = n->kind == NODE_QUANTIFIER ? n->map_count : n->size;
    for (int k = 0; k < n->nchild; k++) {
        ltn_node *c = &kb->nodes[n->child[k]];
        float *target = rel ? c->rel.data : c->grad.data;
        STRIX_TRY(add_to_child(kb, n->map[k], io.out[k]->data, count, target));
    }
    return STRIX_OK;
}

/* Zeroes every node's grad (rel false) or rel buffer. */
static strix_status zero_nodes(strix_ltn *kb, bool rel) {
    for (int i = 0; i < kb->nnodes; i++) {
        strix_tensor *t = rel ? &kb->nodes[i].rel : &kb->nodes[i].grad;
        if (t->data) STRIX_TRY(strix_fill(kb->be, t->data, 0.0f, kb->nodes[i].size));
    }
    return STRIX_OK;
}

/* Backward or relevance of every node under an axiom, parents first (a query's nodes carry no
 * gradient or relevance: they are skipped). */
static strix_status reverse_walk(strix_ltn *kb, bool rel, float eps) {
    for (int i = kb->nnodes - 1; i >= 0; i--)
        if (kb->nodes[i].in_axiom) STRIX_TRY(node_reverse(kb, &kb->nodes[i], rel, eps));
    return STRIX_OK;
}

strix_status strix_ltn_backward(strix_ltn *kb) { return strix_ltn_backward_scaled(kb, 1.0f); }

strix_status strix_ltn_backward_scaled(strix_ltn *kb, float scale) {
    KB_ASSERT(kb);
    if (kb->error) return kb->error;
    if (!kb->forwarded)
        return strix_error(STRIX_ERR_ARG, "ltn: backward needs a forward of the knowledge base as "
                           "it is now (none yet, a failed one, or nodes added since)");
    STRIX_TRY(zero_nodes(kb, false));
    /* loss = 1 − sat: d loss / d sat = −1 (times scale), through SatAgg to the axioms. */
    STRIX_TRY(strix_fill(kb->be, kb->one.data, -scale, 1));
    strix_module_io io = {.n_in = 1, .in = {&kb->one}};
    STRIX_TRY(strix_module_backward_ex(kb->sat_agg, &io));
    for (int k = 0; k < kb->naxioms; k++) {
        float *g = kb->nodes[kb->axioms[k]].grad.data;
        STRIX_TRY(strix_add(kb->be, g, io.out[0]->data + k, g, 1));
    }
    return reverse_walk(kb, false, 0.0f);
}

strix_status strix_ltn_explain(strix_ltn *kb, int which, float eps) {
    KB_ASSERT(kb);
    if (kb->error) return kb->error;
    if (!kb->forwarded)
        return strix_error(STRIX_ERR_ARG, "ltn: explain needs a forward of the knowledge base as "
                           "it is now (none yet, a failed one, or nodes added since)");
    for (int i = 0; i < kb->npreds; i++) { /* the predicates' modules need their LRP rules */
        const ltn_predicate *p = &kb->preds[i];
        if (p->m && strix_lrp_check(p->m) != STRIX_OK)
            return strix_error(STRIX_ERR_ARG, "ltn: predicate %s: %s", p->name,
                               strix_last_error());
    }
    if (which < -1 || which >= kb->naxioms)
        return strix_error(STRIX_ERR_ARG, "ltn: explain axiom %d of %d", which, kb->naxioms);
    if (!(eps >= 0.0f) || !isfinite(eps))
        return strix_error(STRIX_ERR_ARG, "ltn: explain eps %g", (double)eps);
    STRIX_TRY(zero_nodes(kb, true));
    for (int i = 0; i < kb->nvars; i++) {
        ltn_variable *v = &kb->vars[i];
        STRIX_TRY(strix_tensor_ensure(kb->be, &v->rel, 2,
                                      (int64_t[]){(int64_t)v->n, (int64_t)v->features}));
        STRIX_TRY(strix_fill(kb->be, v->rel.data, 0.0f, v->n * v->features));
    }
    if (which >= 0) {
        const ltn_node *a = &kb->nodes[kb->axioms[which]];
        STRIX_TRY(strix_copy(kb->be, a->rel.data, a->value.data, sizeof(float), STRIX_COPY_D2D));
        STRIX_TRY(strix_copy(kb->be, &kb->seed, a->value.data, sizeof(float), STRIX_COPY_D2H));
    } else { /* the satisfaction itself, split over the axioms by SatAgg's rule */
        STRIX_TRY(strix_copy(kb->be, kb->one.data, &kb->seed, sizeof(float), STRIX_COPY_H2D));
        strix_module_io io = {.n_in = 1, .in = {&kb->one}};
        kb->sat_agg->rule.epsilon = eps;
        STRIX_TRY(strix_module_relevance_ex(kb->sat_agg, &io));
        for (int k = 0; k < kb->naxioms; k++) {
            float *r = kb->nodes[kb->axioms[k]].rel.data;
            STRIX_TRY(strix_add(kb->be, r, io.out[0]->data + k, r, 1));
        }
    }
    STRIX_TRY(reverse_walk(kb, true, eps));
    kb->explained = true;
    return STRIX_OK;
}

// ---- reading results ---------------------------------------------------------------------------

/* Copies node a's buffer t to the host. */
static strix_status read_node(strix_ltn *kb, strix_ltn_expr a, bool rel, float *out, size_t cap,
                              size_t *count) {
    if (!expr_ok(kb, a)) return strix_error(STRIX_ERR_ARG, "ltn: a bad expression handle");
    if (!kb->forwarded || (rel && !kb->explained))
        return strix_error(STRIX_ERR_ARG, "ltn: no %s of the knowledge base as it is now",
                           rel ? "explanation" : "forward");
    const ltn_node *n = &kb->nodes[a.id - 1];
    if (count) *count = n->size;
    if (cap < n->size)
        return strix_error(STRIX_ERR_ARG, "ltn: %zu values need room for %zu", n->size, cap);
    const strix_tensor *t = rel ? &n->rel : &n->value;
    return strix_copy(kb->be, out, t->data, n->size * sizeof(float), STRIX_COPY_D2H);
}

strix_status strix_ltn_truth(strix_ltn *kb, strix_ltn_expr a, float *out, size_t cap,
                             size_t *count) {
    KB_ASSERT(kb);
    return read_node(kb, a, false, out, cap, count);
}

strix_status strix_ltn_expr_relevance(strix_ltn *kb, strix_ltn_expr a, float *out, size_t cap,
                                      size_t *count) {
    KB_ASSERT(kb);
    return read_node(kb, a, true, out, cap, count);
}

strix_status strix_ltn_relevance(strix_ltn *kb, strix_ltn_var x, float *out, size_t cap,
                                 double *total) {
    KB_ASSERT(kb);
    if (!var_ok(kb, x)) return strix_error(STRIX_ERR_ARG, "ltn: a bad variable handle");
    if (!kb->explained)
        return strix_error(STRIX_ERR_ARG, "ltn: no explanation of the knowledge base as it is now");
    const ltn_variable *v = &kb->vars[x.id - 1];
    size_t n = v->n * v->features;
    if (cap < n) return strix_error(STRIX_ERR_ARG, "ltn: %zu values need room for %zu", n, cap);
    STRIX_TRY(strix_copy(kb->be, out, v->rel.data, n * sizeof(float), STRIX_COPY_D2H));
    if (total) {
        double sum = 0.0;
        for (size_t i = 0; i < n; i++) sum += out[i];
        *total = sum;
    }
    return STRIX_OK;
}

float strix_ltn_relevance_seed(const strix_ltn *kb) {
    KB_ASSERT(kb);
    return kb->seed;
}

// ---- the trainer's view ------------------------------------------------------------------------

static strix_status ltn_loss_step(void *ctx, const strix_train_slice *sl, float *loss) {
    if (sl->shards > 1) // the knowledge base is one whole: it has no batch to cut
        return strix_error(STRIX_ERR_UNSUPPORTED, "ltn: a knowledge base cannot be cut into "
                           "gradient shards (grad_shards %d)", sl->shards);
    strix_ltn *kb = ctx;
    float sat;
    STRIX_TRY(strix_ltn_forward(kb, &sat));
    *loss = 1.0f - sat;
    return strix_ltn_backward_scaled(kb, sl->grad_scale);
}

void strix_ltn_train_model(strix_ltn *kb, strix_params *ps, strix_train_model *out) {
    KB_ASSERT(kb);
    *out = (strix_train_model){.ctx = kb, .params = ps, .loss_step = ltn_loss_step};
}
