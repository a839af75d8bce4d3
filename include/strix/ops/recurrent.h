/*
 * strix/ops/recurrent.h - recurrent-cell primitives (Elman RNN, LSTM, GRU) of the device backend
 * (included by strix/backend.h; same conventions). The state-space passes (Mamba, RWKV, RetNet)
 * are in strix/ops/ssm.h, which follows the same rules.
 *
 * Each fused pass takes an op and an argument struct of input and output slots; the slot layout
 * of every op is documented at its enum value. Elementwise passes run one lane per element, and
 * every sum has the order written at its op, so every backend visits the same terms in the same
 * order (no atomics). All outputs are overwritten (=), never added to;
 * parameter gradients come out as per-step terms that the caller reduces (REVERSE_TIME_SUM,
 * column_sums) and adds to its gradient buffers.
 *
 * stab(z) = z + eps·(z >= 0 ? 1 : -1) is the LRP epsilon stabiliser (docs/SEMANTICS.md).
 * Errors: an unknown op returns STRIX_ERR_ARG; a NULL slot the op needs is a contract violation
 * (STRIX_ASSERT).
 */
#ifndef STRIX_OPS_RECURRENT_H
#define STRIX_OPS_RECURRENT_H

#include "strix/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- recurrent cells (Elman RNN, LSTM, GRU) ----------------------------------------------------

/* Ops of strix_recurrent_cell (docs/SEMANTICS.md). One lane per element i < n; every
 * slot is n floats, read and written at index i only (per step, (rows, hidden) flattened).
 * Gates are given activated (i, f, o, z, r = sigmoid, g = tanh of their pre-activations).
 * Slots marked "NULL = 0" may be NULL and then read as zeros (the last / first time step).
 * Aliasing: an output may alias any input (each lane reads all its inputs before it writes);
 * outputs must not alias each other.
 * GRU follows PyTorch's torch.nn.GRUCell, h = (1 - z)·n + z·h_prev (pulsatrix writes the gate the
 * other way round, h = (1 - z)·h_prev + z·n; PyTorch's semantics win for our public API). */
typedef enum strix_cell_op {
    /* in[0] g (grad on h from above), in[1] dh_next (NULL = 0), in[2] h = tanh(z)
     * -> out[0] dz = (g + dh_next)·(1 - h²). */
    STRIX_CELL_RNN_BACKWARD,
    /* in[0] i, in[1] f, in[2] g, in[3] o, in[4] c_prev (NULL = 0)
     * -> out[0] c = f·c_prev + i·g, out[1] tanh(c), out[2] h = o·tanh(c). */
    STRIX_CELL_LSTM_FORWARD,
    /* in[0] g_h (grad on h from above), in[1] dh_next (NULL = 0), in[2] dc_next (NULL = 0),
     * in[3] i, in[4] f, in[5] g, in[6] o, in[7] tanh(c), in[8] c_prev (NULL = 0)
     * -> with dh = g_h + dh_next, dc = dh·o·(1 - tanh²c) + dc_next:
     * out[0] dz_i = dc·g·i(1 - i), out[1] dz_f = dc·c_prev·f(1 - f), out[2] dz_g = dc·i·(1 - g²),
     * out[3] dz_o = dh·tanh(c)·o(1 - o), out[4] dc_prev = dc·f (grads of the pre-activations). */
    STRIX_CELL_LSTM_BACKWARD,
    /* Arras et al. 2019 (gates get no relevance): in[0] r (relevance of h from above),
     * in[1] R_h_next (NULL = 0), in[2] R_c_next (NULL = 0), in[3] i, in[4] f, in[5] g,
     * in[6] c_prev (NULL = 0), in[7] c -> with Rc = r + R_h_next + R_c_next (h = o·tanh c hands
     * all of R_h to c): out[0] R_g = (i·g / stab c)·Rc, out[1] R_c_prev = (f·c_prev / stab c)·Rc.
     * Uses eps. */
    STRIX_CELL_LSTM_LRP,
    /* in[0] z, in[1] r, in[2] n_x = x·W_in + b_in, in[3] hn = h_prev·W_hn + b_hn,
     * in[4] h_prev (NULL = 0) -> out[0] n_pre = n_x + r·hn, out[1] n = tanh(n_pre),
     * out[2] h = (1 - z)·n + z·h_prev. */
    STRIX_CELL_GRU_FORWARD,
    /* in[0] g_h (grad on h from above), in[1] dh_next (NULL = 0), in[2] z, in[3] r, in[4] n,
     * in[5] hn, in[6] h_prev (NULL = 0) -> with dh = g_h + dh_next:
     * out[0] dh_prev_direct = dh·z (the z·h_prev path only; the caller adds dhn·W_hnᵀ etc.),
     * out[1] dz_pre = dh·(h_prev - n)·z(1 - z), out[2] dn_pre = dh·(1 - z)·(1 - n²),
     * out[3] dr_pre = dn_pre·hn·r(1 - r), out[4] dhn = dn_pre·r (grad of hn). */
    STRIX_CELL_GRU_BACKWARD,
    /* Arras et al. 2019: in[0] r (relevance of h from above), in[1] R_h_next (NULL = 0), in[2] z,
     * in[3] r_gate, in[4] n, in[5] hn, in[6] h_prev (NULL = 0), in[7] h, in[8] n_pre
     * -> with Rh = r + R_h_next: out[0] R_hprev_direct = (z·h_prev / stab h)·Rh,
     * out[1] R_n = ((1 - z)·n / stab h)·Rh, out[2] R_term_b = (r_gate·hn / stab n_pre)·R_n (the
     * relevance of r_gate·hn, all of it for hn; the rest of R_n belongs to n_x). Uses eps. */
    STRIX_CELL_GRU_LRP,
    /* torch.nn.RNN(nonlinearity='relu'): in[0] g (grad on h from above), in[1] dh_next
     * (NULL = 0), in[2] h = relu(z) -> out[0] dz = h > 0 ? g + dh_next : 0 (torch's
     * threshold_backward: no gradient at h = 0). */
    STRIX_CELL_RNN_RELU_BACKWARD
} strix_cell_op;

typedef struct strix_cell_args {
    const float *in[10];
    float *out[6];
    float eps; /* LRP stabiliser */
} strix_cell_args;

/* One fused elementwise recurrent-cell pass over n elements; slots per op above. STRIX_OK, or
 * STRIX_ERR_ARG for an unknown op. */
STRIX_API strix_status strix_recurrent_cell(strix_backend *be, strix_cell_op op,
                                            const strix_cell_args *args, size_t n);
/* GRU relevance of h_prev through W_hn (in, out) = (hidden, hidden), over (rows, hidden):
 * r_hprev[r][kk] = Σ_k (h_prev[r][kk]·W_hn[kk][k] / stab(hn[r][k]))·r_term_b[r][k], k ascending
 * from 0.0f, with direct[r][kk] (STRIX_CELL_GRU_LRP's out[0]; NULL = none) added just before the
 * k = kk term. One lane per output. r_hprev must not alias an input. */
STRIX_API strix_status strix_gru_lrp_hprev(strix_backend *be, const float *h_prev,
                                           const float *w_hn, const float *hn,
                                           const float *r_term_b, const float *direct,
                                           float *r_hprev, size_t rows, size_t hidden,
                                           float eps);

#ifdef __cplusplus
}
#endif
#endif
