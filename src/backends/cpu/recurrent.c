/*
 * recurrent.c - CPU backend: the recurrent-cell passes (Elman RNN, LSTM, GRU) and the GRU
 * recurrent relevance sum.
 *
 * One lane per element (cells) or per output (gru_lrp_hprev); each lane runs the
 * kernels/recurrent.h function every backend shares, and OpenMP only splits independent lanes, so
 * results do not depend on the thread count.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/recurrent.h"

/* Runs element function `fn` over i < n. */
#define CELL_LOOP(fn)                                                                          \
    do {                                                                                       \
        CPU_PARALLEL_FOR_IF(CPU_BIG(8 * n))                                                    \
        for (size_t i = 0; i < n; i++) fn(args, i);                                            \
    } while (0)

strix_status cpu_recurrent_cell(strix_backend *be, strix_cell_op op, const strix_cell_args *args,
                                size_t n) {
    (void)be;
    if (n == 0) return STRIX_OK; /* op and slots: checked by strix_recurrent_cell */
    switch (op) {
    case STRIX_CELL_RNN_BACKWARD: CELL_LOOP(strix_rnn_backward_element); break;
    case STRIX_CELL_LSTM_FORWARD: CELL_LOOP(strix_lstm_forward_element); break;
    case STRIX_CELL_LSTM_BACKWARD: CELL_LOOP(strix_lstm_backward_element); break;
    case STRIX_CELL_LSTM_LRP: CELL_LOOP(strix_lstm_lrp_element); break;
    case STRIX_CELL_GRU_FORWARD: CELL_LOOP(strix_gru_forward_element); break;
    case STRIX_CELL_GRU_BACKWARD: CELL_LOOP(strix_gru_backward_element); break;
    case STRIX_CELL_GRU_LRP: CELL_LOOP(strix_gru_lrp_element); break;
    case STRIX_CELL_RNN_RELU_BACKWARD: CELL_LOOP(strix_rnn_relu_backward_element); break;
    }
    return STRIX_OK;
}

strix_status cpu_gru_lrp_hprev(strix_backend *be, const float *h_prev, const float *w_hn,
                               const float *hn, const float *r_term_b, const float *direct,
                               float *r_hprev, size_t rows, size_t hidden, float eps) {
    (void)be;
    size_t total = rows * hidden;
    if (total == 0) return STRIX_OK;
    CPU_PARALLEL_FOR_IF(CPU_BIG(total * hidden))
    for (size_t o = 0; o < total; o++) {
        size_t r = o / hidden, kk = o % hidden, row = r * hidden;
        r_hprev[o] = strix_gru_lrp_hprev_element(h_prev + row, w_hn, hn + row, r_term_b + row,
                                                 direct ? direct + row : NULL, kk, hidden, eps);
    }
    return STRIX_OK;
}
