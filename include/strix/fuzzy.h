/*
 * strix/fuzzy.h - fuzzy-logic modules: the connectives Not, And, Or, Implies, Equiv and the
 * quantifiers Forall and Exists, each a strix_module with forward, backward and relevance (LRP),
 * on the primitives of strix/ops/logic.h. The semantics are LTNtorch 1.0's (ltn.fuzzy_ops), the
 * operators of Logic Tensor Networks (Badreddine et al., Artificial Intelligence 303, 2022);
 * strix/logic.h builds knowledge bases from them.
 *
 * Truth values lie in [0, 1]; a connective refuses an input outside it (STRIX_ERR_ARG naming the
 * value; the check downloads its inputs). The "stable" product operators first map truth values
 * into ]0, 1] with pi_0(x) = (1 − ε)x + ε or into [0, 1[ with pi_1(x) = (1 − ε)x, ε =
 * STRIX_FUZZY_EPS (LTNtorch: AndProd and Implies' antecedent pi_0, OrProbSum and Implies'
 * consequent pi_1, Goguen's antecedent pi_0, Exists pi_0, Forall pi_1).
 *
 * Numbers are float32, as LTNtorch's: without the stable maps, Exists over truth values 0 and
 * Forall over 1 have NaN gradients (a p-mean's derivative at 0), and a p far above 10 underflows
 * (x^p of a truth value below 1); the stable operators and a moderate p avoid both.
 */
#ifndef STRIX_FUZZY_H
#define STRIX_FUZZY_H

#include "strix/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ε of the stable operators (LTNtorch's fuzzy_ops.eps). */
#define STRIX_FUZZY_EPS 1e-4f

/* Implications: the S-implications Reichenbach 1 − a + ab (LTN ImpliesReichenbach) and
 * Kleene-Dienes max(1 − a, b), and the R-implications (residua of the t-norms) Goguen (a <= b ?
 * 1 : b/a), Łukasiewicz min(1, 1 − a + b) and Gödel (a <= b ? 1 : b). */
typedef enum strix_implication {
    STRIX_IMPLIES_REICHENBACH = 0,
    STRIX_IMPLIES_KLEENE_DIENES,
    STRIX_IMPLIES_GOGUEN,
    STRIX_IMPLIES_LUKASIEWICZ,
    STRIX_IMPLIES_GODEL,
} strix_implication;

/* The operators of a connective or quantifier. The zero-initialised struct is not the default:
 * start from strix_fuzzy_default(). */
typedef struct strix_fuzzy {
    strix_logic_norm and_norm;   /* And: PRODUCT (LTN AndProd), LUKASIEWICZ (AndLuk), GODEL */
    strix_logic_norm or_norm;    /* Or: PRODUCT (OrProbSum), LUKASIEWICZ (OrLuk), GODEL (OrMax) */
    strix_implication implies;   /* Implies, and Equiv's two implications */
    bool stable;                 /* the stable product operators (LTNtorch's default: true) */
    float p_forall, p_exists;    /* p of the p-mean error (Forall) and the p-mean (Exists), > 0 */
} strix_fuzzy;

/* LTNtorch's defaults: AndProd, OrProbSum, ImpliesReichenbach, stable; Forall p = 2 (LTN's
 * AggregPMeanError default), Exists p = 2 (AggregPMean). */
STRIX_API strix_fuzzy strix_fuzzy_default(void);
/* STRIX_OK, or STRIX_ERR_ARG naming the field: a norm or implication out of range, p <= 0 or not
 * finite. */
STRIX_API strix_status strix_fuzzy_check(const strix_fuzzy *sem);

typedef enum strix_connective {
    STRIX_CONNECTIVE_NOT = 0, /* 1 − a */
    STRIX_CONNECTIVE_AND,     /* sem.and_norm */
    STRIX_CONNECTIVE_OR,      /* sem.or_norm */
    STRIX_CONNECTIVE_IMPLIES, /* sem.implies */
    STRIX_CONNECTIVE_EQUIV,   /* And(Implies(a, b), Implies(b, a)) (LTN Equiv) */
} strix_connective;

/* A connective module on be. Forward: io.in[0] = a and (binary ones) io.in[1] = b, tensors of
 * one shape, truth values in [0, 1] -> io.out[0] = y of that shape (the one-tensor call serves
 * Not). Backward: io.in[0] = dy -> io.out[0] = da, io.out[1] = db (`=`). Relevance: io.in[0] = r
 * -> io.out[0] = r_a, io.out[1] = r_b, stabiliser m->rule.epsilon: Not and the stable maps pass
 * relevance on unchanged; And, Or and the R-implications use strix_logic_pointwise's LRP rules
 * (CONJ, DISJ, IMPL), Reichenbach and Kleene-Dienes are Or(Not a, b) (product and Gödel DISJ
 * rules), Equiv adds its parts' shares. Outputs are the module's, valid until its next call of
 * the same kind. STRIX_ERR_ARG for bad semantics or truth values, STRIX_ERR_SHAPE for operands
 * of two shapes, ERR_ALLOC. */
STRIX_API strix_status strix_connective_new(strix_backend *be, strix_connective kind,
                                            const strix_fuzzy *sem, strix_module **out);

typedef enum strix_quantifier { STRIX_FORALL = 0, STRIX_EXISTS } strix_quantifier;

/* A quantifier module on be, aggregating over the leading axis. Forward: x (n, cols) (or (n))
 * truth values, and optionally io.mask (backend memory, != 0 takes part; a guarded quantifier):
 * (n) one guard per row, or (n, cols) one per cell (each column over its own cells) -> (cols)
 * truth values: Exists the p-mean (mean x'^p)^(1/p), x' = pi_0(x) when
 * stable; Forall the p-mean error 1 − (mean (1 − x')^p)^(1/p), x' = pi_1(x) when stable; over
 * the kept rows (cells) only; none kept: Forall 1, Exists 0 (LTNtorch's rule) with gradient 0. Backward
 * (`=`, dropped rows 0) and relevance likewise: Exists splits r by strix_aggregator_lrp over x';
 * Forall by the epsilon rule of the plain mean, x'_i/stab(Σ x'), exact conservation for p = 1.
 * STRIX_ERR_ARG for n == 0, bad semantics or truth values; ERR_SHAPE; ERR_ALLOC. */
STRIX_API strix_status strix_quantifier_new(strix_backend *be, strix_quantifier kind,
                                            const strix_fuzzy *sem, strix_module **out);

#ifdef __cplusplus
}
#endif
#endif
