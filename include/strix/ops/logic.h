/*
 * strix/ops/logic.h - fuzzy-logic primitives of the device backend: t-norm / t-conorm passes
 * (forward, backward, LRP) and the power-mean aggregator (included by strix/backend.h; same
 * conventions: backend pointers, row-major float32, `=`, every call returns STRIX_OK or
 * STRIX_ERR_UNSUPPORTED; a bad op or norm is a contract violation, STRIX_ASSERT).
 *
 * The LRP rules use the stabiliser of strix/ops/lrp.h: stab(z) = z + eps·sign(z), sign(0) = +1.
 * Kernels: src/kernels/logic.h; backends: src/backends/{cpu,cuda}/logic.*.
 */
#ifndef STRIX_OPS_LOGIC_H
#define STRIX_OPS_LOGIC_H

#include "strix/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Operation of strix_logic_pointwise: conjunction (t-norm), disjunction (t-conorm) or
 * implication (the norm's residuum), and which pass. Append-only. */
typedef enum strix_logic_op {
    STRIX_LOGIC_CONJ_FORWARD, STRIX_LOGIC_CONJ_BACKWARD, STRIX_LOGIC_CONJ_LRP,
    STRIX_LOGIC_DISJ_FORWARD, STRIX_LOGIC_DISJ_BACKWARD, STRIX_LOGIC_DISJ_LRP,
    STRIX_LOGIC_IMPL_FORWARD, STRIX_LOGIC_IMPL_BACKWARD, STRIX_LOGIC_IMPL_LRP
} strix_logic_op;

typedef enum strix_logic_norm {
    STRIX_LOGIC_PRODUCT, STRIX_LOGIC_LUKASIEWICZ, STRIX_LOGIC_GODEL
} strix_logic_norm;

/* One elementwise pass over a, b (n), truth values usually in [0, 1]:
 *   FORWARD  out_a = y: conj ab | max(a+b−1, 0) | min; disj a+b−ab | min(a+b, 1) | max (Gödel
 *            ties go to a). g_or_r, y, out_b unused (may be NULL).
 *   BACKWARD g_or_r = dy: out_a = dy/da, out_b = dy/db (Product conj b·g, a·g; disj (1−b)g,
 *            (1−a)g; Łukasiewicz g to both while the clamp is inactive, else 0; Gödel g to the
 *            winner, 0 to the other). y unused.
 *   LRP      g_or_r = r, y = forward output (read by Product only): Product conj both
 *            (ab/(2y + eps·sign y))·r; Product disj za = a(2−b)/2, zb = b(2−a)/2 (za + zb = y),
 *            each (z/stab(y))·r; Łukasiewicz (a/stab(a+b))·r, (b/stab(a+b))·r while inactive
 *            (the −1 of conj is a bias, out of the denominator), else 0; Gödel all of r to the
 *            winner.
 * Łukasiewicz's clamp is inactive when a+b−1 > 0 (conj) or a+b < 1 (disj), strictly: on the
 * boundary gradient and relevance are 0. Outputs may alias inputs (elementwise). Source:
 * pulsatrix's LogicOp (docs/SEMANTICS.md); t-norms as in Klement, Mesiar & Pap, "Triangular
 * Norms" (2000).
 * IMPL (strix: not in pulsatrix) is the residuum a → b of the norm (Klement, Mesiar & Pap 2000;
 * formulas as LTNtorch 1.0's fuzzy_ops ImpliesGodel, ImpliesGoguen with stable=False (the
 * caller applies LTN's a' = (1−1e-4)a + 1e-4), ImpliesLuk), a the antecedent, b the consequent:
 *   FORWARD  Gödel a <= b ? 1 : b; Product (Goguen) a <= b ? 1 : b/a; Łukasiewicz
 *            v = (1 − a) + b, v < 1 ? v : 1.
 *   BACKWARD Gödel 0, (a <= b ? 0 : g); Goguen 0, 0 if a <= b, else ((−b/a)/a)·g, g/a;
 *            Łukasiewicz −g, g while v < 1 (strictly), else 0, 0.
 *   LRP      Gödel and Goguen: out_a = 0, out_b = r (strix's choice: y is b, b scaled by 1/a, or
 *            the constant 1 reached because b >= a). Łukasiewicz while v < 1: the epsilon rule
 *            on za = −a, zb = b with the constant 1 a bias out of the denominator,
 *            (−a/stab(b−a))·r, (b/stab(b−a))·r (sum r up to eps), else 0, 0. y unused. */
STRIX_API strix_status strix_logic_pointwise(strix_backend *be, strix_logic_op op,
                                             strix_logic_norm norm, const float *a,
                                             const float *b, const float *g_or_r, const float *y,
                                             float *out_a, float *out_b, size_t n, float eps);
/* Power mean over the leading axis of x (n, cols), per column (p != 0): mean_pow[j] =
 * (Σ_i x[i][j]^p)/n (i ascending), out[j] = mean_pow[j]^(1/p) (1/p rounded to float). x^p is
 * powf: negative x with a non-integer p gives NaN. */
STRIX_API strix_status strix_aggregator_forward(strix_backend *be, const float *x,
                                                float *mean_pow, float *out, size_t n,
                                                size_t cols, float p);
/* grad_in[i][j] = ((grad_out[j]·mean_pow[j]^(1/p − 1))·x[i][j]^(p−1))/n (`=`; grad_in may alias
 * x). */
STRIX_API strix_status strix_aggregator_backward(strix_backend *be, const float *x,
                                                 const float *mean_pow, const float *grad_out,
                                                 float *grad_in, size_t n, size_t cols, float p);
/* Epsilon rule: r_in[i][j] = (x[i][j]^p/stab(n·mean_pow[j]))·r_out[j] (r_in may alias x);
 * conserves Σ_i r_in[i][j] = r_out[j] up to eps and rounding. */
STRIX_API strix_status strix_aggregator_lrp(strix_backend *be, const float *x,
                                            const float *mean_pow, const float *r_out,
                                            float *r_in, size_t n, size_t cols, float p,
                                            float eps);

#ifdef __cplusplus
}
#endif
#endif
