/*
 * strix/ops/ssm.h - state-space passes (Mamba, RWKV, RetNet) of the device backend (included by
 * strix/backend.h; same conventions).
 *
 * Each fused pass takes an op and an argument struct of input and output slots; the slot layout
 * of every op is documented at its enum value. Elementwise passes run one lane per element;
 * sequence passes run one lane per (example, channel[, state]) with time ascending (forward) or
 * descending (backward), and every sum has the order written at its op, so every backend visits
 * the same terms in the same order (no atomics). All outputs are overwritten (=), never added to;
 * parameter gradients come out as per-step terms that the caller reduces (REVERSE_TIME_SUM,
 * column_sums) and adds to its gradient buffers.
 *
 * stab(z) = z + eps·(z >= 0 ? 1 : -1) is the LRP epsilon stabiliser (docs/SEMANTICS.md).
 * Errors: an unknown op returns STRIX_ERR_ARG; a NULL slot the op needs is a contract violation
 * (STRIX_ASSERT).
 * Kernels: src/kernels/ssm.h; backends: src/backends/{cpu,cuda}/ssm.*.
 */
#ifndef STRIX_OPS_SSM_H
#define STRIX_OPS_SSM_H

#include "strix/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ops of strix_ssm_pass (docs/SEMANTICS.md). Dims: n batch, l length, d channels (d_model),
 * s state size (Mamba) or key size (RetNet). Sequences (n, l, X) row-major; states
 * (n, l+1, ...) with state 0 = all zeros, which the forward ops write themselves. "Lanes" is the
 * parallel unit; inside a lane time runs as stated and sums run ascending from 0.0f unless said.
 * No slot may alias another, except where an op says so. */
typedef enum strix_ssm_op {
    /* Mamba selective scan, lanes (b, d), t ascending, s ascending.
     * in[0] x (n,l,d), in[1] z_delta (n,l,d) (bias included), in[2] B (n,l,s), in[3] C (n,l,s),
     * in[4] A (d,s), in[5] D (d) -> out[0] delta = softplus(z_delta) (n,l,d),
     * out[1] Abar = e^(delta·A) (n,l,d,s), out[2] Bbar = delta·B (n,l,d,s),
     * out[3] states h (n,l+1,d,s), h_t = Abar·h_{t-1} + Bbar·x, out[4] y (n,l,d) = D·x, then
     * += C·h_t for s ascending. softplus(z) = z for z > 20, else log1p(e^z).
     * Optional in[6] h0 (n,d,s): the initial state copied into state 0 (NULL: zeros), so a
     * sequence split in chunks, each started from the last state of the one before, gives the
     * bits of one pass over the whole (the Mamba block's decode steps). The passes below read
     * state 0 from the states buffer like any other. */
    STRIX_SSM_MAMBA_FORWARD,
    /* Mamba BPTT, lanes (b, d), t descending, s ascending. in[0] gy (n,l,d), in[1] x, in[2] delta,
     * in[3] z_delta, in[4] states (n,l+1,d,s), in[5] Abar, in[6] Bbar, in[7] B, in[8] C, in[9] A,
     * in[10] D -> out[0] dx_direct (n,l,d) = gy·D, then += dh·Bbar (s ascending; the x path only,
     * the caller adds the projections' shares), out[1] dz_delta (n,l,d) = ddelta·sigmoid(z_delta)
     * where ddelta adds, for s ascending, dh·x·B and then dh·h_prev·Abar·A, out[2] dh (n,l,d,s) =
     * gy·C + dh_{t+1}·Abar_{t+1} (the total state gradient), out[3] A_terms (n,l,d,s) =
     * dh·h_prev·Abar·delta (A's per-step terms: REVERSE_TIME_SUM with d = d·s sums them). */
    STRIX_SSM_MAMBA_BACKWARD,
    /* Mamba dB, dC, lanes (b, t, s), sums over d ascending. in[0] gy, in[1] x, in[2] delta,
     * in[3] states, in[4] dh (MAMBA_BACKWARD's out[2]) -> out[0] dB (n,l,s) = Σ_d dh·x·delta,
     * out[1] dC (n,l,s) = Σ_d gy·h_t. */
    STRIX_SSM_MAMBA_GRAD_BC,
    /* MambaLRP (Abar, Bbar, C, A, D detached), lanes (b, d), t descending, s ascending.
     * in[0] x, in[1] y, in[2] R_y (n,l,d), in[3] states, in[4] Abar, in[5] Bbar, in[6] C, in[7] D
     * -> out[1] R_h (n,l,d,s) = (C·h_t / stab y)·R_y + (Abar_{t+1}·h_t / stab h_{t+1})·R_h,t+1
     * (the relevance reaching each state), out[0] R_x (n,l,d) = (D·x / stab y)·R_y, then
     * += (Bbar·x / stab h_t)·R_h for s ascending. With h_0 = 0, Σ R_x = Σ R_y up to eps.
     * Uses eps. */
    STRIX_SSM_MAMBA_LRP,
    /* RWKV token shift, lanes (b, t, d). in[0] x (n,l,d), in[1] mu_r, in[2] mu_k, in[3] mu_v (d)
     * -> out[0] xr, out[1] xk, out[2] xv (n,l,d), each mu·x_t + (1 - mu)·x_{t-1}. x_{-1} is
     * in[4] x_prev (n,d), the last row of the previous chunk, or 0 when in[4] is NULL. in[3] may
     * be NULL (two mixes, RWKV's channel-mix): then out[2] is NULL too and not written. */
    STRIX_SSM_RWKV_TOKEN_SHIFT,
    /* Token-shift backward, lanes (b, t, d). in[0] x, in[1] g_xr, in[2] g_xk, in[3] g_xv
     * (n,l,d), in[4] mu_r, in[5] mu_k, in[6] mu_v (d), in[7] x_prev (n,d) or NULL (zeros) ->
     * out[0] dx = (g_xr·mu_r + g_xk·mu_k + g_xv·mu_v), then + (g_xr'·(1 - mu_r) + g_xk'·(1 -
     * mu_k) + g_xv'·(1 - mu_v)) from step t+1 (if any); out[1..3] mu_r/mu_k/mu_v terms
     * g_x·(x_t - x_{t-1}) (n,l,d) for REVERSE_TIME_SUM. g_xv, mu_v and out[3] may all be NULL
     * (two mixes). No gradient of x_prev is formed. */
    STRIX_SSM_RWKV_SHIFT_BACKWARD,
    /* Token-shift epsilon rule for one mix m = mu·x_t + (1 - mu)·x_{t-1}, lanes (b, t, d).
     * in[0] x, in[1] m (n,l,d), in[2] R_m (n,l,d), in[3] mu (d) -> out[0] R_x =
     * (mu·x_t / stab m_t)·R_m,t, then + ((1 - mu)·x_t / stab m_{t+1})·R_m,t+1 (if any).
     * Uses eps. */
    STRIX_SSM_RWKV_SHIFT_LRP,
    /* RWKV WKV recurrence, lanes (b, d), t ascending. in[0] z_r, in[1] k, in[2] v (n,l,d),
     * in[3] u (d, bonus), in[4] w (d, decay e^-w) -> out[0] r = sigmoid(z_r), out[1] e = e^(u+k),
     * out[2] den = b_{t-1} + e, out[3] wkv = (a_{t-1} + e·v)/den, out[4] kk = e^k (all (n,l,d)),
     * out[5] a states, out[6] b states (n,l+1,d) with a_t = e^-w·a_{t-1} + kk·v,
     * b_t = e^-w·b_{t-1} + kk, out[7] gated = r·wkv (n,l,d). */
    STRIX_SSM_RWKV_WKV_FORWARD,
    /* WKV BPTT, lanes (b, d), t descending, carries ga = dL/da_t, gb = dL/db_t (0 at t = l-1).
     * in[0] g_gated, in[1] r, in[2] v, in[3] e, in[4] kk, in[5] den, in[6] a states,
     * in[7] b states, in[8] wkv, in[9] w -> with dnum = g·r/den, dden = -(dnum·wkv),
     * de = dnum·v + dden: out[0] dz_r = g·wkv·r(1 - r), out[1] dk = de·e + (ga·v + gb)·kk,
     * out[2] dv = dnum·e + ga·kk, out[3] u_terms = de·e, out[4] w_terms =
     * -e^-w·(ga·a_{t-1} + gb·b_{t-1}) (n,l,d; REVERSE_TIME_SUM sums them); then
     * ga = dnum + ga·e^-w, gb = dden + gb·e^-w. */
    STRIX_SSM_RWKV_WKV_BACKWARD,
    /* WKV epsilon rule with the quotient detached (den, e, kk, e^-w are constants), lanes (b, d),
     * t descending, carry R_a = relevance of a_t (0 at t = l-1). in[0] R_wkv (n,l,d: the
     * relevance of r·wkv, the gate r takes none), in[1] a states, in[2] den, in[3] e, in[4] v,
     * in[5] wkv, in[6] kk, in[7] w -> out[0] R_v = ((e·v/den) / stab wkv)·R_wkv +
     * (kk·v / stab a_t)·R_a; next R_a = ((a_{t-1}/den) / stab wkv)·R_wkv +
     * (e^-w·a_{t-1} / stab a_t)·R_a. With a_0 = 0, Σ R_v = Σ R_wkv up to eps. Uses eps. */
    STRIX_SSM_RWKV_WKV_LRP,
    /* RetNet recurrence, lanes (b, j), t ascending, i ascending. in[0] q, in[1] k (n,l,s),
     * in[2] v (n,l,d) -> out[0] states (n,l+1,s,d),
     * S_t[i][j] = gamma·S_{t-1}[i][j] + k_t[i]·v_t[j], out[1] y (n,l,d),
     * y_t[j] = Σ_i q_t[i]·S_t[i][j]. Uses gamma. */
    STRIX_SSM_RETNET_FORWARD,
    /* RetNet total state gradient, lanes (b, i, j), t descending. in[0] gy (n,l,d), in[1] q
     * -> out[0] dS (n,l,s,d) = gy_t[j]·q_t[i] + gamma·dS_{t+1}. Uses gamma. */
    STRIX_SSM_RETNET_STATE_GRAD,
    /* RetNet dQ, dK, lanes (b, t, i), sums over j ascending. in[0] gy, in[1] states, in[2] dS,
     * in[3] v -> out[0] dq (n,l,s) = Σ_j gy_t[j]·S_t[i][j],
     * out[1] dk (n,l,s) = Σ_j dS_t[i][j]·v_t[j]. */
    STRIX_SSM_RETNET_GRAD_QK,
    /* RetNet dV, lanes (b, t, j), sum over i ascending. in[0] dS, in[1] k
     * -> out[0] dv (n,l,d) = Σ_i dS_t[i][j]·k_t[i]. */
    STRIX_SSM_RETNET_GRAD_V,
    /* RetNet parallel scores, lanes (b, t, u). in[0] q, in[1] k -> out[0] QK (n,l,l) =
     * Σ_i q_t[i]·k_u[i], out[1] G (n,l,l) = gamma^(t-u)·QK, both 0 for u > t. gamma^(t-u) is
     * 1.0f multiplied by gamma t-u times (no powf), so it is the same float on every backend. */
    STRIX_SSM_RETNET_SCORES,
    /* RetNet parallel readout, lanes (b, t, j). in[0] G (n,l,l), in[1] v (n,l,d)
     * -> out[0] Y (n,l,d) = Σ_{u <= t} G[t][u]·v_u[j], u ascending (equals RETNET_FORWARD's y up
     * to rounding). */
    STRIX_SSM_RETNET_READOUT,
    /* Epsilon rule of the three bias-free projections q = x·W_q, k = x·W_k, v = x·W_v into x,
     * lanes (b, t, e). in[0] x (n,l,d), in[1] W_q (d,s), in[2] W_k (d,s), in[3] W_v (d,d), in[4] q,
     * in[5] k (n,l,s), in[6] v (n,l,d), in[7] R_q, in[8] R_k (n,l,s), in[9] R_v (n,l,d)
     * -> out[0] R_x (n,l,d) = Σ_i (x·W_q[e][i] / stab q_i)·R_q,i, then the same for k, then
     * Σ_j (x·W_v[e][j] / stab v_j)·R_v,j (i, j ascending). Uses eps. */
    STRIX_SSM_RETNET_LRP_INPUT,
    /* Elementwise over n·l·d: in[0] r, in[1] z -> out[0] r / stab(z). out may alias in[0] or
     * in[1]. Uses eps. */
    STRIX_SSM_STABILIZED_DIV,
    /* Per-step parameter-gradient terms reduced, lanes c < d (d = the channel count C).
     * in[0] terms (n,l,C) -> out[0] (C) = Σ over t descending, then b ascending, from 0.0f. */
    STRIX_SSM_REVERSE_TIME_SUM,
    /* RWKV-4 WKV in the numerically stable form with a running maximum (the RWKV-v4 form of
     * transformers' rwkv_linear_attention_cpu; the plain RWKV_WKV_* ops overflow for large keys
     * or long sequences). Lanes (b, d), t ascending. A state (p, q, o) = (num, den, max) stands
     * for the plain sums a = p·e^o, b = q·e^o; w = -e^(time_decay). Per step, key k, value v:
     *   mo = max(o, u + k), e1 = e^(o - mo), e2 = e^(u + k - mo), den' = e1·q + e2,
     *   wkv = (e1·p + e2·v) / den',
     *   ms = max(o + w, k), f1 = e^((o + w) - ms), f2 = e^(k - ms),
     *   p <- f1·p + f2·v, q <- f1·q + f2, o <- ms.
     * Every exponent is <= 0. in[0] z_r, in[1] k, in[2] v (n,l,d), in[3] u = time_first (d),
     * in[4] time_decay (d), in[5] p_0, in[6] q_0, in[7] o_0 (n,d): the initial state, or NULL
     * (fresh: 0, 0, -1e38) -> out[0] r = sigmoid(z_r), out[1] wkv, out[2] gated = r·wkv
     * (n,l,d), out[3] p, out[4] q, out[5] o states (n,l+1,d), state 0 = the initial one. */
    STRIX_SSM_RWKV_STABLE_FORWARD,
    /* Its BPTT, lanes (b, d), t descending, carries ga = dL/dp_t, gb = dL/dq_t at fixed o_t
     * (e^(o_t) times the plain form's gradients, so bounded; 0 after the last step). in[0]
     * g_gated, in[1] r, in[2] k, in[3] v, in[4] wkv (n,l,d), in[5] p, in[6] q, in[7] o states
     * (n,l+1,d), in[8] u, in[9] time_decay (d) -> with e1, e2, den', f1, f2 recomputed from the
     * states as in the forward, dnum = g·r/den', du = dnum·e2·(v - wkv):
     * out[0] dz_r = g·wkv·r(1 - r), out[1] dk = du + (ga·v + gb)·f2, out[2] dv = dnum·e2 +
     * ga·f2, out[3] u_terms = du, out[4] time_decay terms = w·(f1·(ga·p_{t-1} + gb·q_{t-1}))
     * (n,l,d; REVERSE_TIME_SUM sums them); then ga = dnum·e1 + ga·f1,
     * gb = -(dnum·wkv)·e1 + gb·f1. The initial state gets no gradient. */
    STRIX_SSM_RWKV_STABLE_BACKWARD,
    /* Its epsilon rule with the quotient detached (den', e1, e2, f1, f2 constants: the keys get
     * no relevance), lanes (b, d), t descending, carry R_p = relevance of p_t (0 after the
     * last step). in[0] R_wkv (n,l,d: the relevance of r·wkv, the gate r takes none), in[1] k,
     * in[2] v, in[3] wkv (n,l,d), in[4] p, in[5] q, in[6] o states (n,l+1,d), in[7] u,
     * in[8] time_decay (d) -> out[0] R_v = ((e2·v/den') / stab wkv)·R_wkv + (f2·v / stab p_t)·R_p,
     * next R_p = ((e1·p_{t-1}/den') / stab wkv)·R_wkv + (f1·p_{t-1} / stab p_t)·R_p; out[1]
     * (n,d) or NULL: the relevance left on the initial state p_0. The plain rule's quotients
     * (RWKV_WKV_LRP) scaled by e^-mo or e^-o_t, the same numbers; the stabiliser acts on the
     * scaled p_t (eps relative to the scaled state). Σ R_v + Σ out[1] = Σ R_wkv up to eps.
     * Uses eps. */
    STRIX_SSM_RWKV_STABLE_LRP
} strix_ssm_op;

/* Sequences are (n, l, X); states are (n, l+1, ...) with state 0 all zeros (MAMBA_FORWARD: or
 * its optional h0). */
typedef struct strix_ssm_args {
    const float *in[12];
    float *out[10];
    size_t n, l, d, s; /* batch, length, channels, state size */
    float eps, gamma;  /* LRP stabiliser; RetNet decay */
} strix_ssm_args;

/* One fused Mamba / RWKV / RetNet pass; slots per op above. STRIX_OK, or STRIX_ERR_ARG for an
 * unknown op. Zero-sized dims do nothing. */
STRIX_API strix_status strix_ssm_pass(strix_backend *be, strix_ssm_op op,
                                      const strix_ssm_args *args);

#ifdef __cplusplus
}
#endif
#endif
