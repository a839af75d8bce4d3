/*
 * strix/recurrent.h - the recurrent modules of torch.nn: RNN (tanh or relu), LSTM (with optional
 * projections) and GRU, with PyTorch's semantics, defaults and parameter names, so a state dict
 * of torch.nn.LSTM/GRU/RNN loads unchanged (strix/state_dict.h) and gives PyTorch's outputs.
 *
 * One module type, strix_rnn, covers them (torch's RNNBase); strix_rnn_config says which.
 * With Hr = proj_size if set (LSTM only), else H, per layer l and direction (suffix "" forward,
 * "_reverse" backward in time) it declares
 *   <prefix>.weight_ih_l<l>[_reverse]  (G·H, I_l)   I_0 = input_size, I_l = dirs·Hr above
 *   <prefix>.weight_hh_l<l>[_reverse]  (G·H, Hr)
 *   <prefix>.bias_ih_l<l>[_reverse]    (G·H)        only with bias
 *   <prefix>.bias_hh_l<l>[_reverse]    (G·H)
 *   <prefix>.weight_hr_l<l>[_reverse]  (Hr, H)      only with proj_size
 * in torch's order, G = 1 (RNN), 4 (LSTM, gate rows i,f,g,o), 3 (GRU, rows r,z,n); all drawn
 * U(−1/sqrt(H), 1/sqrt(H)) by strix_params_init (H = hidden_size, also for weight_hr), torch's
 * reset_parameters distribution (the values differ from torch's, the distribution is the same).
 * Weights get weight decay, biases not.
 *   RNN   h_t = tanh(x_t·W_ihᵀ + b_ih + h_{t−1}·W_hhᵀ + b_hh)  (relu instead of tanh with
 *         mode STRIX_RNN_RELU, torch's nonlinearity='relu')
 *   LSTM  i,f,o = σ(.), g = tanh(.) of x_t·W_ihᵀ + b_ih + h_{t−1}·W_hhᵀ + b_hh (per gate rows),
 *         c_t = f·c_{t−1} + i·g, h_t = o·tanh(c_t); with proj_size h_t = (o·tanh(c_t))·W_hrᵀ
 *         (Sak et al. 2014, "LSTM recurrent neural network architectures for large scale
 *         acoustic modeling"; torch.nn.LSTM's proj_size), c_t stays (B, H)
 *   GRU   r,z = σ(x_t·W_i{r,z}ᵀ + b_i{r,z} + h_{t−1}·W_h{r,z}ᵀ + b_h{r,z}),
 *         n = tanh(x_t·W_inᵀ + b_in + r·(h_{t−1}·W_hnᵀ + b_hn)), h_t = (1 − z)·n + z·h_{t−1}
 * (torch.nn.RNN/LSTM/GRU docs). Layer l > 0 reads the concatenated outputs of layer l − 1;
 * the reverse direction runs t = T−1 .. 0 on the same input.
 *
 * Layout: with batch_first (strix_rnn_config_default sets it, the strix layout (B,T,·) used
 * everywhere in the library) x is (B,T,I) and y is (B,T,dirs·Hr); without it (PyTorch's default,
 * batch_first=False) x is (T,B,I) and y (T,B,dirs·Hr). h0/h_n are (L·dirs, B, Hr) and c0/c_n
 * (L·dirs, B, H) in either layout, index l·dirs + d, as in torch. Computation runs time-major on
 * backend primitives (GEMMs, strix_recurrent_cell of strix/ops/recurrent.h).
 *
 * Module contracts as strix/nn.h: forward keeps a pointer to x (leave it unchanged until
 * backward) and returns buffers the module owns (valid until its next forward); backward adds
 * parameter grads (`+=`, none for frozen parameters) and sets the input gradients (`=`).
 * General form (strix_module_io): forward_ex takes in[0] = x and optionally in[1] = h0, in[2] =
 * c0 (LSTM), or a state (strix_module_state_new: h, c start at zeros and carry h_n, c_n from
 * one call to the next: for a unidirectional module T calls on (B,1,I) slices give the one
 * call's y, h_n, c_n bit for bit on the "cpu" backend, to rounding where the GEMM blocks by
 * row count (cpu-blas), at O(1) cost per step; a reverse direction runs over each call's slice
 * alone, as torch does given that slice and h0; the batch B is fixed by the state's first call, another B is
 * STRIX_ERR_SHAPE); it sets out[0] = y, out[1] = h_n, out[2] = c_n (LSTM). backward_ex
 * takes in[0] = dy, in[1] = dh_n, in[2] = dc_n (NULL: zero) and sets out[0] = dx, and out[1] =
 * dh0, out[2] = dc0 when the forward took h0/c0 as inputs. The one-tensor forward is
 * forward_ex with x alone (zero initial state), y its output.
 *
 * Errors: constructors STRIX_ERR_ARG (sizes < 1, an unknown mode, dropout outside [0, 1],
 * proj_size < 0, >= hidden_size or given to RNN/GRU), STRIX_ERR_ALLOC; forward STRIX_ERR_SHAPE
 * for an x that is not 3-D with last dim I or has B or T = 0, an h0 that is not (L·dirs, B, Hr)
 * or c0 not (L·dirs, B, H), STRIX_ERR_ARG for a c0 given to RNN/GRU;
 * backward STRIX_ERR_SHAPE for a dy / dh_n / dc_n of another shape than the forward's outputs,
 * STRIX_ERR_ARG before any forward.
 *
 * Dropout (torch's `dropout` argument): in training mode, the output of every layer but the last
 * goes through inverted dropout with p = dropout before the next layer reads it, element i of
 * the k-th site dropped iff U(seed, offset_k + i) < p (the counter RNG of strix/layers.h's
 * Dropout; i over the time-major (T, B, dirs·H) buffer, so masks differ from torch's); offset
 * advances by that size after each site, backward re-applies the same masks. Eval mode
 * (strix_module_set_training(m, false)) or dropout 0 use no masks. Modules start in training
 * mode, as in torch.
 *
 */
#ifndef STRIX_RECURRENT_H
#define STRIX_RECURRENT_H

#include "strix/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which recurrence, torch's RNNBase modes: torch.nn.RNN with tanh ('RNN_TANH', the default
 * nonlinearity), torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN(nonlinearity='relu') ('RNN_RELU').
 * Append-only. */
typedef enum strix_rnn_mode {
    STRIX_RNN_TANH,
    STRIX_RNN_LSTM,
    STRIX_RNN_GRU,
    STRIX_RNN_RELU
} strix_rnn_mode;

/* torch.nn.RNN/LSTM/GRU's constructor arguments. */
typedef struct strix_rnn_config {
    strix_rnn_mode mode;
    int input_size, hidden_size;
    int num_layers;     /* torch default 1 */
    bool bias;          /* torch default true */
    bool batch_first;   /* torch default false; strix_rnn_config_default sets true: (B,T,I) */
    bool bidirectional; /* torch default false */
    float dropout;      /* torch default 0; between layers in training mode, 0 <= p <= 1 */
    int proj_size;      /* LSTM only, torch default 0 (off); 0 < proj_size < hidden_size: h is
                         * projected to proj_size by weight_hr */
} strix_rnn_config;

/* A recurrent module (torch's RNNBase). Parameter handles in torch's order, indexed
 * [l·dirs + d]; bias handles NULL without bias. */
typedef struct strix_rnn {
    strix_module base;
    strix_rnn_config cfg;
    int dirs;                          /* 2 if bidirectional, else 1 */
    int gates;                         /* G: 1 RNN, 4 LSTM, 3 GRU */
    int out_size;                      /* Hr: proj_size if set, else hidden_size */
    bool training;                     /* read it with strix_module_training */
    uint64_t seed, offset;             /* dropout: the next site uses (seed, offset); both 0 at
                                        * construction, both may be set */
    strix_param **weight_ih, **weight_hh, **bias_ih, **bias_hh;
    strix_param **weight_hr;           /* [l·dirs + d], all NULL without proj_size */
    /* Opaque: the caches and scratch of the last calls (src/nn/recurrent_internal.h). */
    struct strix_rnn_work *work;
} strix_rnn;

/* torch's defaults for mode with these sizes: num_layers 1, bias, unidirectional, dropout 0,
 * proj_size 0, and batch_first = true (strix's (B,T,I); torch's default is false). */
STRIX_API strix_rnn_config strix_rnn_config_default(strix_rnn_mode mode, int input_size,
                                                    int hidden_size);

/* Declares the parameters under <prefix> (names above, U(−1/sqrt(H), 1/sqrt(H)) when
 * strix_params_init draws the block) and builds the module. STRIX_ERR_ARG for sizes or
 * num_layers < 1, an unknown mode, dropout outside [0, 1], a bad proj_size; STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_rnn_new(strix_params *ps, const char *prefix,
                                     const strix_rnn_config *cfg, strix_rnn **out);

/* torch's RNNBase.reset_parameters: redraws every parameter of this module (the k-th in torch's
 * order from the stream strix_seed_derive(seed, k) of strix/core.h) from U(−1/sqrt(H),
 * 1/sqrt(H)), H = hidden_size, the same distribution as strix_params_init gives them (the
 * values differ from torch's). Other parameters of the block are left alone. The block must be
 * allocated (strix_params_alloc). STRIX_ERR_ALLOC, or the copy's status. */
STRIX_API strix_status strix_rnn_reset_parameters(strix_rnn *m, uint64_t seed);

/* y, h_n, c_n = module(x, h0, c0) (torch's output, (h_n, c_n) for LSTM; output, h_n for RNN and
 * GRU). x (B,T,I) with batch_first, else (T,B,I); h0 (L·dirs, B, Hr), c0 (L·dirs, B, H) or
 * NULL (zeros); c0 only for LSTM. *y (B,T,dirs·Hr) or (T,B,dirs·Hr), *h_n (L·dirs, B, Hr), *c_n
 * (L·dirs, B, H; NULL unless LSTM) are the module's buffers; any out pointer may be NULL.
 * Errors as the header says. */
STRIX_API strix_status strix_rnn_forward(strix_rnn *m, const strix_tensor *x,
                                         const strix_tensor *h0, const strix_tensor *c0,
                                         const strix_tensor **y, const strix_tensor **h_n,
                                         const strix_tensor **c_n);

/* Backward of the last forward: dy (y's shape), dh_n (h_n's shape), dc_n (c_n's) or NULL
 * (zero). Parameter grads `+=`; *dx (x's shape), *dh0 (h_n's), *dc0 (c_n's; NULL unless LSTM)
 * `=`,
 * module buffers; any out pointer may be NULL. STRIX_ERR_SHAPE / STRIX_ERR_ARG as the header. */
STRIX_API strix_status strix_rnn_backward(strix_rnn *m, const strix_tensor *dy,
                                          const strix_tensor *dh_n, const strix_tensor *dc_n,
                                          const strix_tensor **dx, const strix_tensor **dh0,
                                          const strix_tensor **dc0);

/* LRP of the last forward (Arras et al. 2019, "Explaining and interpreting LSTMs"), the
 * module's relevance and relevance_ex slots, with its rule m->base.rule (EPSILON only, else
 * STRIX_ERR_UNSUPPORTED; eps = rule.epsilon). r_y has y's shape; r_h_n, r_c_n (h_n's, c_n's
 * shapes) the relevance of h_n, c_n, or NULL (zero). The rule, per direction, steps in reverse:
 *   gates (i, f, o; GRU's r, z) get no relevance; products gate·signal hand all to the signal;
 *   LSTM  R_c = R_h (+ R_c of the next step), R_g = (i·g/stab c)·R_c, R_c_prev = (f·c_prev/
 *         stab c)·R_c; g's pre-activation z = x·W_igᵀ + h_prev·W_hgᵀ (+ b_ig + b_hg with
 *         rule.bias_in_denominator) splits by the epsilon rule onto x and h_prev;
 *   GRU   R_h_prev += (z·h_prev/stab h)·R_h, R_n = ((1 − z)·n/stab h)·R_h; n's pre-activation
 *         n_pre = x·W_inᵀ + b_in + r·hn hands x (x·W_in/stab n_pre)·R_n and hn (r·hn/stab
 *         n_pre)·R_n, and hn = h_prev·W_hnᵀ + b_hn passes it to h_prev by the epsilon rule on
 *         hn; the GRU's denominators always include the biases (n_pre, hn as the forward has
 *         them);
 *   RNN   h = tanh z (or relu z) hands all of R_h to z, which splits as LSTM's z;
 *   LSTM with proj_size: h = u·W_hrᵀ, u = o·tanh c, hands R_h to u by the epsilon rule
 *         (no bias), then u hands all of it to c as above.
 * Layers run top down, each direction taking its H columns of the relevance of the layer
 * output; both directions' input relevance adds up. A dropped layer output (training-mode
 * dropout) passes relevance on unchanged (dropped units already got none). With eps -> 0 and
 * no bias (LSTM, RNN: or the default pre-bias denominators), Σ r_x + Σ r_h0 + Σ r_c0 = Σ r_y +
 * Σ r_h_n + Σ r_c_n up to rounding; GRU's biases absorb a share. *r_x (x's shape), *r_h0
 * (h_n's shape), *r_c0 (c_n's; the relevance absorbed by the initial state; NULL unless LSTM)
 * are module buffers shared with backward's dx, dh0, dc0 (valid until the next backward or
 * relevance); any out pointer may be NULL. STRIX_ERR_ARG before a forward, for a bad rule or
 * an r_c_n given to RNN/GRU, STRIX_ERR_SHAPE for a relevance of another shape than the
 * forward's outputs, STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_rnn_relevance(strix_rnn *m, const strix_tensor *r_y,
                                           const strix_tensor *r_h_n, const strix_tensor *r_c_n,
                                           const strix_tensor **r_x, const strix_tensor **r_h0,
                                           const strix_tensor **r_c0);

#ifdef __cplusplus
}
#endif
#endif
