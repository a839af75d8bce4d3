/*
 * recurrent.cu - CUDA/HIP launchers of the recurrent-cell passes (Elman RNN, LSTM, GRU) and the
 * GRU recurrent relevance sum (include/strix/ops/recurrent.h); the math is
 * src/kernels/recurrent.h, as in src/backends/cpu/recurrent.c.
 *
 * One thread per element (cells) or per output (gru_lrp_hprev), running the element function
 * every backend shares. The argument struct travels by value as a kernel parameter (its slots
 * are device pointers). The op and its slots are checked by the public entry point
 * (src/core/ops_recurrent.c).
 */
#include "backends/cuda/cuda_internal.h"
#include "kernels/recurrent.h"

/* Global index of the calling thread (one lane each). */
static __device__ inline size_t rec_lane(void) {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

/* A kernel running element function `fn` on lane i < n. */
#define CELL_KERNEL(name, fn)                                                                  \
    static __global__ void name(strix_cell_args args, size_t n) {                              \
        size_t i = rec_lane();                                                                 \
        if (i < n) fn(&args, i);                                                               \
    }

CELL_KERNEL(rnn_backward_kernel, strix_rnn_backward_element)
CELL_KERNEL(lstm_forward_kernel, strix_lstm_forward_element)
CELL_KERNEL(lstm_backward_kernel, strix_lstm_backward_element)
CELL_KERNEL(lstm_lrp_kernel, strix_lstm_lrp_element)
CELL_KERNEL(gru_forward_kernel, strix_gru_forward_element)
CELL_KERNEL(gru_backward_kernel, strix_gru_backward_element)
CELL_KERNEL(gru_lrp_kernel, strix_gru_lrp_element)
CELL_KERNEL(rnn_relu_backward_kernel, strix_rnn_relu_backward_element)

/* Lane o = (row, kk) of (rows, hidden). */
static __global__ void gru_lrp_hprev_kernel(const float *h_prev, const float *w_hn,
                                            const float *hn, const float *r_term_b,
                                            const float *direct, float *r_hprev, size_t rows,
                                            size_t hidden, float eps) {
    size_t o = rec_lane();
    if (o >= rows * hidden) return;
    size_t row = (o / hidden) * hidden, kk = o % hidden;
    r_hprev[o] = strix_gru_lrp_hprev_element(h_prev + row, w_hn, hn + row, r_term_b + row,
                                             direct ? direct + row : NULL, kk, hidden, eps);
}

strix_status cuda_recurrent_cell(strix_backend *be, strix_cell_op op, const strix_cell_args *args,
                                 size_t n) {
    if (n == 0) return STRIX_OK; /* op and slots: checked by strix_recurrent_cell */
    unsigned blocks = cuda_blocks(n);
    cudaStream_t stream = cuda_stream(be);
    switch (op) {
    case STRIX_CELL_RNN_BACKWARD:
        rnn_backward_kernel<<<blocks, CUDA_BLOCK, 0, stream>>>(*args, n);
        break;
    case STRIX_CELL_LSTM_FORWARD:
        lstm_forward_kernel<<<blocks, CUDA_BLOCK, 0, stream>>>(*args, n);
        break;
    case STRIX_CELL_LSTM_BACKWARD:
        lstm_backward_kernel<<<blocks, CUDA_BLOCK, 0, stream>>>(*args, n);
        break;
    case STRIX_CELL_LSTM_LRP:
        lstm_lrp_kernel<<<blocks, CUDA_BLOCK, 0, stream>>>(*args, n);
        break;
    case STRIX_CELL_GRU_FORWARD:
        gru_forward_kernel<<<blocks, CUDA_BLOCK, 0, stream>>>(*args, n);
        break;
    case STRIX_CELL_GRU_BACKWARD:
        gru_backward_kernel<<<blocks, CUDA_BLOCK, 0, stream>>>(*args, n);
        break;
    case STRIX_CELL_GRU_LRP:
        gru_lrp_kernel<<<blocks, CUDA_BLOCK, 0, stream>>>(*args, n);
        break;
    case STRIX_CELL_RNN_RELU_BACKWARD:
        rnn_relu_backward_kernel<<<blocks, CUDA_BLOCK, 0, stream>>>(*args, n);
        break;
    }
    return cuda_launched(be, "recurrent_cell");
}

strix_status cuda_gru_lrp_hprev(strix_backend *be, const float *h_prev, const float *w_hn,
                                const float *hn, const float *r_term_b, const float *direct,
                                float *r_hprev, size_t rows, size_t hidden, float eps) {
    size_t total = rows * hidden;
    if (total == 0) return STRIX_OK;
    gru_lrp_hprev_kernel<<<cuda_blocks(total), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        h_prev, w_hn, hn, r_term_b, direct, r_hprev, rows, hidden, eps);
    return cuda_launched(be, "gru_lrp_hprev");
}
