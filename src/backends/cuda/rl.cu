/*
 * rl.cu - CUDA/HIP launchers of the reinforcement-learning rows (strix_rl_rows) and SAC's
 * tanh-Gaussian policy (CPU: src/backends/cpu/rl.c), over the per-row functions of kernels/rl.h.
 *
 * One thread per row (per element for the Polyak blend and the tanh-Gaussian backward), each
 * computed whole by one thread as on the CPU. Actions are checked on the host before any output
 * is written, as the CPU does: they are copied down in chunks of RL_CHECK_CHUNK floats into a
 * stack buffer (a synchronising copy; no host allocation).
 */
#include "backends/cuda/cuda_internal.h"
#include "kernels/rl.h"

/* Index of the calling thread in a 1-D launch of cuda_blocks(n) blocks of CUDA_BLOCK threads. */
static __device__ inline size_t lane_index(void) {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

/* Actions copied to the host per chunk when they are checked. */
#define RL_CHECK_CHUNK 256

/* strix_rl_check_actions over the actions in[1] (device memory, `rows` floats), copied down a
 * chunk at a time. */
static strix_status rl_check_actions(strix_backend *be, const float *actions, size_t rows,
                                     size_t cols) {
    float chunk[RL_CHECK_CHUNK];
    for (size_t r0 = 0; r0 < rows; r0 += RL_CHECK_CHUNK) {
        size_t count = rows - r0 < RL_CHECK_CHUNK ? rows - r0 : RL_CHECK_CHUNK;
        STRIX_TRY(cuda_download(be, chunk, actions + r0, count * sizeof(float)));
        STRIX_TRY(strix_rl_check_actions(chunk, count, r0, cols));
    }
    return STRIX_OK;
}

/* Lane r of n: row r of op (element r for POLYAK_BLEND). args holds device pointers. */
static __global__ void rl_rows_kernel(strix_rl_op op, strix_rl_args args, size_t n) {
    size_t r = lane_index();
    if (r < n) strix_rl_row(op, &args, r);
}

strix_status cuda_rl_rows(strix_backend *be, strix_rl_op op, const strix_rl_args *args) {
    size_t rows = args->rows, cols = args->cols; /* op and slots: checked by strix_rl_rows */
    if (rows == 0 || cols == 0) return STRIX_OK;
    size_t lanes = rows;
    if (op == STRIX_RL_POLYAK_BLEND)
        lanes = rows * cols;
    else if (op != STRIX_RL_DQN_TARGET) /* every other op reads actions from in[1] */
        STRIX_TRY(rl_check_actions(be, args->in[1], rows, cols));
    rl_rows_kernel<<<cuda_blocks(lanes), CUDA_BLOCK, 0, cuda_stream(be)>>>(op, *args, lanes);
    return cuda_launched(be, "rl_rows");
}

// ---- SAC tanh-Gaussian policy ------------------------------------------------------------------

/* One thread per row: its log-probability summed over the columns ascending, in double. */
static __global__ void tanh_gaussian_forward_kernel(const float *mean, const float *log_std,
                                                    const float *eps, float *action,
                                                    float *std_cache, float *log_prob,
                                                    size_t rows, size_t cols, float stabilizer) {
    size_t r = lane_index();
    if (r >= rows) return;
    size_t at = r * cols;
    log_prob[r] = strix_tanh_gaussian_row_forward(mean + at, log_std + at, eps + at, action + at,
                                                  std_cache + at, cols, stabilizer);
}

strix_status cuda_tanh_gaussian_forward(strix_backend *be, const float *mean, const float *log_std,
                                        const float *eps, float *action, float *std_cache,
                                        float *log_prob, size_t rows, size_t cols,
                                        float stabilizer) {
    if (rows == 0) return STRIX_OK;
    tanh_gaussian_forward_kernel<<<cuda_blocks(rows), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        mean, log_std, eps, action, std_cache, log_prob, rows, cols, stabilizer);
    return cuda_launched(be, "tanh_gaussian_forward");
}

/* One thread per element j of (rows, cols), with its row's grad_log_prob[j / cols]. */
static __global__ void tanh_gaussian_backward_kernel(const float *action, const float *std_cache,
                                                     const float *eps, const float *grad_action,
                                                     const float *grad_log_prob, float *grad_mean,
                                                     float *grad_log_std, size_t rows,
                                                     size_t cols, float stabilizer) {
    size_t j = lane_index();
    if (j >= rows * cols) return;
    strix_tanh_gaussian_elem_backward(action[j], std_cache[j], eps[j], grad_action[j],
                                      grad_log_prob[j / cols], stabilizer, grad_mean + j,
                                      grad_log_std + j);
}

strix_status cuda_tanh_gaussian_backward(strix_backend *be, const float *action,
                                         const float *std_cache, const float *eps,
                                         const float *grad_action, const float *grad_log_prob,
                                         float *grad_mean, float *grad_log_std, size_t rows,
                                         size_t cols, float stabilizer) {
    size_t n = rows * cols;
    if (n == 0) return STRIX_OK;
    tanh_gaussian_backward_kernel<<<cuda_blocks(n), CUDA_BLOCK, 0, cuda_stream(be)>>>(
        action, std_cache, eps, grad_action, grad_log_prob, grad_mean, grad_log_std, rows, cols,
        stabilizer);
    return cuda_launched(be, "tanh_gaussian_backward");
}
