/*
 * recurrent_internal.h - the private caches of strix_rnn (strix/recurrent.h): what the forward
 * keeps for backward (and for a relevance pass). Host-side declarations only.
 *
 * Everything is time-major. Per layer l and direction d (index l·dirs + d), with TB = T·B and
 * Hr the size of h (proj_size with LSTM projections, else H):
 *   P     (G, T, B, H)  gate pre-activations, then (in place) the activated gates: RNN the
 *                       pre-activation z (h = tanh z is in hs), LSTM i,f,g,o, GRU r,z,n (GRU's
 *                       n slot holds x·W_inᵀ + b_in before the cell overwrites it with n)
 *   hs    (T+1, B, Hr)  hidden states: forward direction h0 at slot 0 and h_t at t + 1, reverse
 *                       h_t at t and h0 at slot T, so h_prev of step t is slot t (forward) or
 *                       t + 1 (reverse) and the TB rows from slot 0 (forward) / 1 (reverse) are
 *                       the h_prev of t = 0 .. T−1
 *   cs    (T+1, B, H)   LSTM cell states, same slots; tc (T, B, H) tanh(c_t)
 *   hu    (T, B, H)     LSTM with projections: u_t = o·tanh(c_t) before W_hr (h_t = u_t·W_hrᵀ)
 *   hn    (T, B, H)     GRU h_prev·W_hnᵀ + b_hn; npre (T, B, H) GRU n's pre-activation
 *   dp    (G, T, B, H)  backward: gradients of the gate pre-activations; dhn (T, B, H) GRU's of hn
 *   gh    (T, B, Hr)    backward: this direction's slice of the output gradient (dirs 2)
 *   dhp   (T, B, Hr)    projections: backward the whole gradient of h_t (for W_hr's), relevance
 *                       the per-step relevance of h_t (scratch)
 * Per layer: y (T, B, dirs·Hr) its output, dx (T, B, I_l) the gradient of its input; yd, gd
 * the dropped output and the gradient of y when dropout ran after the layer.
 */
#ifndef STRIX_RECURRENT_INTERNAL_H
#define STRIX_RECURRENT_INTERNAL_H

#include "strix/recurrent.h"

typedef struct strix_rnn_dir_work {
    strix_tensor p, hs, cs, tc, hn, npre, dp, dhn, gh, hu, dhp;
} strix_rnn_dir_work;

typedef struct strix_rnn_layer_work {
    strix_tensor y, dx;
    strix_tensor yd, gd;         /* dropout after this layer: y dropped (the next layer's input)
                                  * and the gradient of y */
    bool dropped;                /* the last forward dropped this layer's output */
    uint64_t offset;             /* its counter-RNG offset */
} strix_rnn_layer_work;

struct strix_rnn_work {
    strix_rnn_dir_work *dir;     /* num_layers·dirs */
    strix_rnn_layer_work *layer; /* num_layers */
    strix_tensor x;              /* view of the input of the last forward */
    strix_tensor xtm;            /* batch_first: the input time-major (T, B, I) */
    strix_tensor out;            /* batch_first: y (B, T, dirs·H) */
    strix_tensor h_n, c_n;       /* (L·dirs, B, Hr), (L·dirs, B, H) */
    strix_tensor dytm;           /* batch_first: dy time-major */
    strix_tensor dx, dh0, dc0;   /* dx (B, T, I) with batch_first; dh0, dc0 as h_n, c_n */
    strix_tensor dh, dc;         /* (B, Hr), (B, H) running gradients of the backward */
    strix_tensor du;             /* (B, H) projections: the gradient (relevance) of u_t */
    strix_tensor wpack;          /* W_hh of the direction being walked, packed for the steps'
                                  * GEMMs (strix_gemm_pack_b; unused where a backend packs
                                  * nothing) */
    int64_t B, T;                /* of the last forward; T 0 before the first */
    int io_inputs;               /* float inputs of the last forward_ex (x, h0, c0) */
};

#endif
