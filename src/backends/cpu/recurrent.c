/*
 * recurrent.c - CPU backend: the recurrent-cell passes (Elman RNN, LSTM, GRU) and the GRU
 * recurrent relevance sum.
 *
 * One lane per element (cells) or per output (gru_lrp_hprev); each lane runs the
 * kernels/recurrent.h function every backend shares, and the worker pool only splits independent
 * lanes, so results do not depend on the thread count.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/recurrent.h"

/* Defines `name`, a range function that runs element function `fn` over elements [i0, i1). */
#define CELL_RANGE(name, fn)                                                                   \
    static void name(void *p, size_t i0, size_t i1) {                                          \
        const strix_cell_args *args = p;                                                       \
        for (size_t i = i0; i < i1; i++) fn(args, i);                                          \
    }

CELL_RANGE(rnn_backward_range, strix_rnn_backward_element)
CELL_RANGE(lstm_forward_range, strix_lstm_forward_element)
CELL_RANGE(lstm_backward_range, strix_lstm_backward_element)
CELL_RANGE(lstm_lrp_range, strix_lstm_lrp_element)
CELL_RANGE(gru_forward_range, strix_gru_forward_element)
CELL_RANGE(gru_backward_range, strix_gru_backward_element)
CELL_RANGE(gru_lrp_range, strix_gru_lrp_element)
CELL_RANGE(rnn_relu_backward_range, strix_rnn_relu_backward_element)

/* Runs range function `range` over elements i < n. */
#define CELL_LOOP(range) cpu_parallel_for(n, CPU_BIG(8 * n), range, (void *)args)

strix_status cpu_recurrent_cell(strix_backend *be, strix_cell_op op, const strix_cell_args *args,
                                size_t n) {
    (void)be;
    if (n == 0) return STRIX_OK; /* op and slots: checked by strix_recurrent_cell */
    switch (op) {
    case STRIX_CELL_RNN_BACKWARD: CELL_LOOP(rnn_backward_range); break;
    case STRIX_CELL_LSTM_FORWARD: CELL_LOOP(lstm_forward_range); break;
    case STRIX_CELL_LSTM_BACKWARD: CELL_LOOP(lstm_backward_range); break;
    case STRIX_CELL_LSTM_LRP: CELL_LOOP(lstm_lrp_range); break;
    case STRIX_CELL_GRU_FORWARD: CELL_LOOP(gru_forward_range); break;
    case STRIX_CELL_GRU_BACKWARD: CELL_LOOP(gru_backward_range); break;
    case STRIX_CELL_GRU_LRP: CELL_LOOP(gru_lrp_range); break;
    case STRIX_CELL_RNN_RELU_BACKWARD: CELL_LOOP(rnn_relu_backward_range); break;
    }
    return STRIX_OK;
}

typedef struct hprev_args {
    const float *h_prev, *w_hn, *hn, *r_term_b, *direct;
    float *r_hprev;
    size_t hidden;
    float eps;
} hprev_args;

/* Outputs [o0, o1) of gru_lrp_hprev, (row, unit) each. */
static void gru_lrp_hprev_range(void *p, size_t o0, size_t o1) {
    const hprev_args *a = p;
    const float *h_prev = a->h_prev, *w_hn = a->w_hn, *hn = a->hn, *r_term_b = a->r_term_b;
    const float *direct = a->direct;
    float *r_hprev = a->r_hprev, eps = a->eps;
    size_t hidden = a->hidden;
    for (size_t o = o0; o < o1; o++) {
        size_t r = o / hidden, kk = o % hidden, row = r * hidden;
        r_hprev[o] = strix_gru_lrp_hprev_element(h_prev + row, w_hn, hn + row, r_term_b + row,
                                                 direct ? direct + row : NULL, kk, hidden, eps);
    }
}

strix_status cpu_gru_lrp_hprev(strix_backend *be, const float *h_prev, const float *w_hn,
                               const float *hn, const float *r_term_b, const float *direct,
                               float *r_hprev, size_t rows, size_t hidden, float eps) {
    (void)be;
    size_t total = rows * hidden;
    if (total == 0) return STRIX_OK;
    hprev_args a = {h_prev, w_hn, hn, r_term_b, direct, r_hprev, hidden, eps};
    cpu_parallel_for(total, CPU_BIG(total * hidden), gru_lrp_hprev_range, &a);
    return STRIX_OK;
}
