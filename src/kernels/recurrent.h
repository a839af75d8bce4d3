/*
 * kernels/recurrent.h - per-element math of the recurrent cells (Elman RNN, LSTM, GRU) and the
 * per-output GRU recurrent relevance sum (the slots of strix_cell_op;
 * LRP after Arras et al. 2019, "Explaining and interpreting LSTMs": gates get no relevance).
 *
 * Slot meanings are documented at strix_cell_op (include/strix/ops/recurrent.h). Each element
 * function handles lane i only and reads every input before writing any output, so an output
 * may alias an input. Optional slots (NULL) read as 0.
 */
#ifndef STRIX_KERNELS_RECURRENT_H
#define STRIX_KERNELS_RECURRENT_H

#include "strix/backend.h"
#include "kernels/common.h"
#include "kernels/lrp.h" /* strix_lrp_stab */

/* p[i], or 0 when the optional slot p is NULL. */
STRIX_HD static inline float strix_rec_opt(const float *p, size_t i) { return p ? p[i] : 0.0f; }

// ---- cells -------------------------------------------------------------------------------------

STRIX_HD static inline void strix_rnn_backward_element(const strix_cell_args *a, size_t i) {
    float h = a->in[2][i];
    float dh = a->in[0][i] + strix_rec_opt(a->in[1], i);
    a->out[0][i] = dh * (1.0f - h * h);
}

STRIX_HD static inline void strix_rnn_relu_backward_element(const strix_cell_args *a, size_t i) {
    float h = a->in[2][i];
    float dh = a->in[0][i] + strix_rec_opt(a->in[1], i);
    a->out[0][i] = h > 0.0f ? dh : 0.0f;
}

STRIX_HD static inline void strix_lstm_forward_element(const strix_cell_args *a, size_t i) {
    float ig = a->in[0][i], fg = a->in[1][i], gg = a->in[2][i], og = a->in[3][i];
    float c_prev = strix_rec_opt(a->in[4], i);
    float c = fg * c_prev + ig * gg;
    float tc = tanhf(c);
    a->out[0][i] = c;
    a->out[1][i] = tc;
    a->out[2][i] = og * tc;
}

STRIX_HD static inline void strix_lstm_backward_element(const strix_cell_args *a, size_t i) {
    float dh = a->in[0][i] + strix_rec_opt(a->in[1], i);
    float dc_next = strix_rec_opt(a->in[2], i);
    float ig = a->in[3][i], fg = a->in[4][i], gg = a->in[5][i], og = a->in[6][i];
    float tc = a->in[7][i], c_prev = strix_rec_opt(a->in[8], i);
    float dc = dh * og * (1.0f - tc * tc) + dc_next;
    a->out[0][i] = dc * gg * (ig * (1.0f - ig));
    a->out[1][i] = dc * c_prev * (fg * (1.0f - fg));
    a->out[2][i] = dc * ig * (1.0f - gg * gg);
    a->out[3][i] = dh * tc * (og * (1.0f - og));
    a->out[4][i] = dc * fg;
}

STRIX_HD static inline void strix_lstm_lrp_element(const strix_cell_args *a, size_t i) {
    float rc = (a->in[0][i] + strix_rec_opt(a->in[1], i)) + strix_rec_opt(a->in[2], i);
    float ig = a->in[3][i], fg = a->in[4][i], gg = a->in[5][i];
    float c_prev = strix_rec_opt(a->in[6], i);
    float sc = strix_lrp_stab(a->in[7][i], a->eps);
    a->out[0][i] = (ig * gg / sc) * rc;
    a->out[1][i] = (fg * c_prev / sc) * rc;
}

STRIX_HD static inline void strix_gru_forward_element(const strix_cell_args *a, size_t i) {
    float z = a->in[0][i], r = a->in[1][i], n_x = a->in[2][i], hn = a->in[3][i];
    float h_prev = strix_rec_opt(a->in[4], i);
    float n_pre = n_x + r * hn;
    float n = tanhf(n_pre);
    a->out[0][i] = n_pre;
    a->out[1][i] = n;
    a->out[2][i] = (1.0f - z) * n + z * h_prev;
}

STRIX_HD static inline void strix_gru_backward_element(const strix_cell_args *a, size_t i) {
    float dh = a->in[0][i] + strix_rec_opt(a->in[1], i);
    float z = a->in[2][i], r = a->in[3][i], n = a->in[4][i], hn = a->in[5][i];
    float h_prev = strix_rec_opt(a->in[6], i);
    float dn_pre = dh * (1.0f - z) * (1.0f - n * n);
    a->out[0][i] = dh * z;
    a->out[1][i] = dh * (h_prev - n) * (z * (1.0f - z));
    a->out[2][i] = dn_pre;
    a->out[3][i] = dn_pre * hn * (r * (1.0f - r));
    a->out[4][i] = dn_pre * r;
}

STRIX_HD static inline void strix_gru_lrp_element(const strix_cell_args *a, size_t i) {
    float rh = a->in[0][i] + strix_rec_opt(a->in[1], i);
    float z = a->in[2][i], r = a->in[3][i], n = a->in[4][i], hn = a->in[5][i];
    float h_prev = strix_rec_opt(a->in[6], i);
    float sh = strix_lrp_stab(a->in[7][i], a->eps);
    float sn = strix_lrp_stab(a->in[8][i], a->eps);
    float r_n = ((1.0f - z) * n / sh) * rh;
    a->out[0][i] = (z * h_prev / sh) * rh;
    a->out[1][i] = r_n;
    a->out[2][i] = (r * hn / sn) * r_n;
}

/* r_hprev[row][kk] of strix_gru_lrp_hprev: k ascending from 0.0f, direct added before k = kk.
 * Rows are `hidden` floats; w_hn is (hidden, hidden) (in, out). */
STRIX_HD static inline float strix_gru_lrp_hprev_element(const float *h_prev_row,
                                                         const float *w_hn, const float *hn_row,
                                                         const float *r_term_b_row,
                                                         const float *direct_row, size_t kk,
                                                         size_t hidden, float eps) {
    float acc = 0.0f;
    float hp = h_prev_row[kk];
    const float *w_row = w_hn + kk * hidden;
    for (size_t k = 0; k < hidden; k++) {
        if (k == kk && direct_row) acc += direct_row[kk];
        acc += (hp * w_row[k] / strix_lrp_stab(hn_row[k], eps)) * r_term_b_row[k];
    }
    return acc;
}

// ---- slot table (host side: the argument checks of src/core/ops_recurrent.c) -------------------

/* Required slots of `op`: bit k of *in / *out set = in[k] / out[k] must be non-NULL. false for an
 * unknown op. */
static inline bool strix_cell_slots(strix_cell_op op, unsigned *in, unsigned *out) {
    switch (op) {
    case STRIX_CELL_RNN_BACKWARD: *in = 0x5, *out = 0x1; return true;            /* in 0,2 */
    case STRIX_CELL_LSTM_FORWARD: *in = 0xF, *out = 0x7; return true;            /* in 0-3 */
    case STRIX_CELL_LSTM_BACKWARD: *in = 0xF9, *out = 0x1F; return true;         /* in 0,3-7 */
    case STRIX_CELL_LSTM_LRP: *in = 0xB9, *out = 0x3; return true;               /* in 0,3-5,7 */
    case STRIX_CELL_GRU_FORWARD: *in = 0xF, *out = 0x7; return true;             /* in 0-3 */
    case STRIX_CELL_GRU_BACKWARD: *in = 0x3D, *out = 0x1F; return true;          /* in 0,2-5 */
    case STRIX_CELL_GRU_LRP: *in = 0x1BD, *out = 0x7; return true;               /* in 0,2-5,7,8 */
    case STRIX_CELL_RNN_RELU_BACKWARD: *in = 0x5, *out = 0x1; return true;       /* in 0,2 */
    }
    return false;
}

#endif
