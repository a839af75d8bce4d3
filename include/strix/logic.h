/*
 * strix/logic.h - Logic Tensor Networks (Badreddine, Garcez, Serafini & Spranger, "Logic Tensor
 * Networks", Artificial Intelligence 303, 2022) on the device backend: fuzzy connectives,
 * quantifiers, knowledge bases of axioms over neural predicates, their satisfaction, its
 * gradient, and relevance (LRP) from the satisfaction of an axiom down to the groundings.
 *
 * The semantics are LTNtorch 1.0's (ltn.fuzzy_ops): Not 1 − x; And/Or under the product,
 * Łukasiewicz or Gödel norms; S-implications (Reichenbach, Kleene-Dienes) and R-implications
 * (Goguen, Łukasiewicz, Gödel); Equiv = And(a → b, b → a); Forall = p-mean error 1 − (mean
 * (1 − x)^p)^(1/p), Exists = p-mean (mean x^p)^(1/p), optionally guarded by a mask; "stable"
 * product operators map truth values into ]0, 1] (pi_0(x) = (1 − ε)x + ε) or [0, 1[ (pi_1(x) =
 * (1 − ε)x), ε = 1e-4, as LTNtorch does. Broadcasting follows LTN: an expression is a grid of
 * truth values, one axis per free variable (in order of first appearance); a connective of two
 * expressions spans the union of their variables; a quantifier removes its variable's axis.
 *
 * Formulas are built in code on a knowledge base (strix_ltn) and name their parts by small
 * handles. A builder call given a bad argument returns an invalid handle and keeps the first
 * error in the knowledge base (like cairo's error status), so formulas nest without checks:
 *
 *     strix_ltn_expr ax = strix_ltn_forall(kb, x, strix_ltn_implies(kb,
 *         strix_ltn_atom1(kb, A, x), strix_ltn_not(kb, strix_ltn_atom1(kb, B, x))));
 *     STRIX_TRY(strix_ltn_axiom(kb, ax)); // returns the first error of the builders, if any
 *
 * A step: strix_ltn_forward (satisfaction SatAgg of all axioms, p-mean error), then
 * strix_ltn_backward (the gradient of the loss 1 − SatAgg, `+=` into the predicates' parameters
 * and the variables' grounding gradients), then the optimizer. Relevance: strix_ltn_explain.
 * Everything runs on the knowledge base's backend; truth values of predicates are checked to lie
 * in [0, 1] (one small download per atom). No allocation after the first forward.
 * Source of the LRP rules of the connectives: strix/ops/logic.h; the rest is stated below.
 */
#ifndef STRIX_LOGIC_H
#define STRIX_LOGIC_H

#include "strix/fuzzy.h"
#include "strix/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most free variables of one expression. */
#define STRIX_LTN_MAX_FREE 4

/* Handles (index + 1; 0 is invalid). */
typedef struct { int id; } strix_ltn_var;
typedef struct { int id; } strix_ltn_pred;
typedef struct { int id; } strix_ltn_expr;

typedef struct strix_ltn strix_ltn;

/* A knowledge base on backend be with the semantics `sem` (NULL: strix_fuzzy_default()).
 * STRIX_ERR_ARG for bad semantics (p <= 0, a norm or implication out of range), ERR_ALLOC. */
STRIX_API strix_status strix_ltn_new(strix_backend *be, const strix_fuzzy *sem, strix_ltn **out);
/* Frees the knowledge base (not the modules, tensors and gradients it was given), before its
 * backend. NULL: no-op. Handles belong to the knowledge base that made them: one of another
 * knowledge base is not detected. */
STRIX_API void strix_ltn_free(strix_ltn *kb);
/* The semantics of the connectives and quantifiers built from now on (each node keeps the
 * semantics it was built with). STRIX_ERR_ARG as strix_ltn_new. */
STRIX_API strix_status strix_ltn_set_semantics(strix_ltn *kb, const strix_fuzzy *sem);
/* The first error of a builder call (STRIX_OK if none), with its message in strix_last_error()
 * at the time it happened; the knowledge base refuses axioms, forward and backward once set. */
STRIX_API strix_status strix_ltn_status(const strix_ltn *kb);

// ---- terms --------------------------------------------------------------------------------------

/* A variable ranging over the rows of `groundings` (n, features) (backend memory, kept as a view:
 * the caller keeps it alive and may change its values between steps, e.g. a trained embedding).
 * grad: NULL, or (n, features) floats where strix_ltn_backward adds (`+=`) the gradient of the
 * loss with respect to the groundings (a learnable embedding's gradient). n >= 1. */
STRIX_API strix_ltn_var strix_ltn_variable(strix_ltn *kb, const char *name,
                                           const strix_tensor *groundings, float *grad);
/* A constant: a variable over the one row `row` of groundings (its gradient goes to that row of
 * grad). An expression over constants only is a closed formula (a fact). */
STRIX_API strix_ltn_var strix_ltn_constant(strix_ltn *kb, const char *name,
                                           const strix_tensor *groundings, float *grad, int row);
/* Groundings of a variable: its number of individuals, and its feature count. */
STRIX_API int strix_ltn_variable_size(const strix_ltn *kb, strix_ltn_var x);

/* A predicate of `arity` (1..STRIX_LTN_MAX_FREE) arguments computed by module m: m maps (rows,
 * F) to (rows) or (rows, 1) truth values in [0, 1], F the sum of its arguments' feature counts
 * (their groundings side by side, in argument order), e.g. an MLP ending in a sigmoid. The
 * module is not owned; its parameter gradients are added to by strix_ltn_backward, and its
 * relevance rule (m->rule) is the caller's. */
STRIX_API strix_ltn_pred strix_ltn_predicate(strix_ltn *kb, const char *name, strix_module *m,
                                             int arity);
/* A predicate given as a table of truth values: truth has one axis per argument, indexed by the
 * rows of the arguments' groundings (a (n) table for arity 1, (n0, n1) for arity 2). Its values
 * are data or a learned parameter (grad: NULL, or the table's gradient, `+=`). */
STRIX_API strix_ltn_pred strix_ltn_predicate_table(strix_ltn *kb, const char *name,
                                                   const strix_tensor *truth, float *grad);

// ---- formulas -----------------------------------------------------------------------------------

/* P(args): an atom over the distinct variables of args (P(x, x) is the diagonal). */
STRIX_API strix_ltn_expr strix_ltn_atom(strix_ltn *kb, strix_ltn_pred p, int arity,
                                        const strix_ltn_var *args);
STRIX_API strix_ltn_expr strix_ltn_atom1(strix_ltn *kb, strix_ltn_pred p, strix_ltn_var x);
STRIX_API strix_ltn_expr strix_ltn_atom2(strix_ltn *kb, strix_ltn_pred p, strix_ltn_var x,
                                         strix_ltn_var y);
/* Connectives under the current semantics (strix_fuzzy). */
STRIX_API strix_ltn_expr strix_ltn_not(strix_ltn *kb, strix_ltn_expr a);
STRIX_API strix_ltn_expr strix_ltn_and(strix_ltn *kb, strix_ltn_expr a, strix_ltn_expr b);
STRIX_API strix_ltn_expr strix_ltn_or(strix_ltn *kb, strix_ltn_expr a, strix_ltn_expr b);
STRIX_API strix_ltn_expr strix_ltn_implies(strix_ltn *kb, strix_ltn_expr a, strix_ltn_expr b);
STRIX_API strix_ltn_expr strix_ltn_equiv(strix_ltn *kb, strix_ltn_expr a, strix_ltn_expr b);
/* Quantifiers over variable x, which must be free in a (else the builder error is set). */
STRIX_API strix_ltn_expr strix_ltn_forall(strix_ltn *kb, strix_ltn_var x, strix_ltn_expr a);
STRIX_API strix_ltn_expr strix_ltn_exists(strix_ltn *kb, strix_ltn_var x, strix_ltn_expr a);
/* Guarded quantifiers: only the groundings i of x with keep[i] != 0 (host array of x's size,
 * copied) take part. None kept: Forall gives 1, Exists 0 (LTNtorch's rule), gradient 0. */
STRIX_API strix_ltn_expr strix_ltn_forall_where(strix_ltn *kb, strix_ltn_var x, strix_ltn_expr a,
                                                const float *keep);
STRIX_API strix_ltn_expr strix_ltn_exists_where(strix_ltn *kb, strix_ltn_var x, strix_ltn_expr a,
                                                const float *keep);

/* A guard over several variables (LTN's guarded quantifier with a condition on variables):
 * called once per cell of the quantified formula's grid when the quantifier is built, with
 * vars[0..count) its free variables (the quantified one first, then the others in order) and
 * rows[i] the individual of vars[i] in that cell (0-based among the variable's groundings);
 * true keeps the cell, e.g. rows[0] != rows[1] for ∀y[y ≠ x]. A formula cell whose every cell
 * along the quantified variable is dropped gets Forall 1, Exists 0, as with keep. */
typedef bool (*strix_ltn_guard)(const strix_ltn_var *vars, const int *rows, int count,
                                void *user);
STRIX_API strix_ltn_expr strix_ltn_forall_guarded(strix_ltn *kb, strix_ltn_var x,
                                                  strix_ltn_expr a, strix_ltn_guard keep,
                                                  void *user);
STRIX_API strix_ltn_expr strix_ltn_exists_guarded(strix_ltn *kb, strix_ltn_var x,
                                                  strix_ltn_expr a, strix_ltn_guard keep,
                                                  void *user);

/* Adds a closed formula (every free variable of a has one individual, e.g. a quantified formula
 * or a fact on constants) to the knowledge base's axioms. STRIX_ERR_ARG for an open formula
 * (its variable named) or a bad handle; the first builder error if any. */
STRIX_API strix_status strix_ltn_axiom(strix_ltn *kb, strix_ltn_expr a);

// ---- evaluation ---------------------------------------------------------------------------------

/* Evaluates every node and the satisfaction *sat = SatAgg of the axioms (LTNtorch's SatAgg: the
 * p-mean error of their truth values, with the Forall of the semantics the knowledge base was
 * made with), computed on the backend and copied to the host. STRIX_ERR_ARG when a predicate gives a truth
 * value outside [0, 1] (named with the value) or there is no axiom; a module's own errors. */
STRIX_API strix_status strix_ltn_forward(strix_ltn *kb, float *sat);
/* Gradient of the loss 1 − sat of the last forward: `+=` into the predicates' module parameters,
 * the tables' and groundings' gradients given. Zero them first (strix_params_zero_grad). */
STRIX_API strix_status strix_ltn_backward(strix_ltn *kb);
/* The same, `+=` scale times the gradient (the trainer's gradient accumulation, a weight). */
STRIX_API strix_status strix_ltn_backward_scaled(strix_ltn *kb, float scale);
/* The knowledge base as a model of the trainer (strix/train.h): every micro-batch's loss step is
 * forward + backward of the loss 1 − sat (the groundings are the data: step and micro-batch
 * change nothing), ps the block of the predicates' parameters (its owner is the caller's); no
 * evaluation or checkpoint (set them in *out if wanted). kb must outlive the model. */
STRIX_API void strix_ltn_train_model(strix_ltn *kb, strix_params *ps, strix_train_model *out);
/* Truth values of any expression of the last forward (forward evaluates every expression built,
 * queries that are no axiom's part too; backward and explain visit only the axioms' parts),
 * copied to host `out` (its grid, row-major over its free variables in order); *count (may be
 * NULL) = the grid's size. STRIX_ERR_ARG when cap is too small. */
STRIX_API strix_status strix_ltn_truth(strix_ltn *kb, strix_ltn_expr a, float *out, size_t cap,
                                       size_t *count);

/* Relevance of the last forward: seeded with the truth value of axiom `which` (its index in the
 * order of strix_ltn_axiom), or of the satisfaction of the whole knowledge base (which = -1), and
 * passed down: Not, the stable maps and Equiv's parts pass it on; And/Or/Implies split it by the
 * rules of strix_logic_pointwise (S-implications as Or(Not a, b)); a broadcast operand gets the
 * sum over the axes it was broadcast along; Exists splits by strix_aggregator_lrp (x^p/stab(n·
 * mean x^p)), Forall and SatAgg by the epsilon rule of the plain mean (x_i/stab(Σx), exact
 * conservation for p = 1; the p-mean error is not a sum for p != 1; a guard that keeps nothing
 * passes nothing on); an atom's relevance goes
 * through its module's own rule (strix_module_relevance_ex) to the module's input, which is
 * split back to the arguments and added up per grounding. eps: the stabiliser of every logic
 * rule. STRIX_ERR_ARG before a forward of the knowledge base as it is, for which out of range, or
 * when a predicate's module has no LRP rule (assign one with strix_lrp_assign, strix/lrp.h).
 * After the call, strix_ltn_relevance reads the result. */
STRIX_API strix_status strix_ltn_explain(strix_ltn *kb, int which, float eps);
/* Relevance of the groundings of variable x: (n, features) floats to host `out` (cap floats).
 * Also *total (may be NULL) = the sum. STRIX_ERR_ARG before strix_ltn_explain or when cap is
 * too small. */
STRIX_API strix_status strix_ltn_relevance(strix_ltn *kb, strix_ltn_var x, float *out, size_t cap,
                                           double *total);
/* Relevance that reached expression a (its grid, as strix_ltn_truth), e.g. each atom's share. */
STRIX_API strix_status strix_ltn_expr_relevance(strix_ltn *kb, strix_ltn_expr a, float *out,
                                                size_t cap, size_t *count);
/* The seed of the last strix_ltn_explain (the explained truth value). */
STRIX_API float strix_ltn_relevance_seed(const strix_ltn *kb);

#ifdef __cplusplus
}
#endif
#endif
