/*
 * rl.c - CPU backend: reinforcement-learning rows (strix_rl_rows) and SAC's tanh-Gaussian policy.
 *
 * Loops over the per-row functions of kernels/rl.h. OpenMP splits rows (elements for the Polyak
 * blend), each computed whole by one thread, so results do not depend on the thread count. Batch
 * sums of the per-row terms are the caller's (column_sums). Actions are checked on the host
 * before any output is written (strix_rl_check_actions); op and slots by strix_rl_rows.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/rl.h"

strix_status cpu_rl_rows(strix_backend *be, strix_rl_op op, const strix_rl_args *args) {
    (void)be;
    size_t rows = args->rows, cols = args->cols; /* op and slots: checked by strix_rl_rows */
    if (rows == 0 || cols == 0) return STRIX_OK;
    if (op == STRIX_RL_POLYAK_BLEND) {
        size_t n = rows * cols;
        CPU_PARALLEL_FOR_IF(CPU_BIG(n))
        for (size_t i = 0; i < n; i++) strix_rl_polyak_elem(args, i);
        return STRIX_OK;
    }
    if (op != STRIX_RL_DQN_TARGET) /* every other op reads actions from in[1] */
        STRIX_TRY(strix_rl_check_actions(args->in[1], rows, 0, cols));
    CPU_PARALLEL_FOR_IF(rows > 1 && CPU_BIG(rows * cols))
    for (size_t r = 0; r < rows; r++) strix_rl_row(op, args, r);
    return STRIX_OK;
}

strix_status cpu_tanh_gaussian_forward(strix_backend *be, const float *mean, const float *log_std,
                                       const float *eps, float *action, float *std_cache,
                                       float *log_prob, size_t rows, size_t cols,
                                       float stabilizer) {
    (void)be;
    CPU_PARALLEL_FOR_IF(rows > 1 && CPU_BIG(4 * rows * cols))
    for (size_t r = 0; r < rows; r++) {
        size_t at = r * cols;
        log_prob[r] = strix_tanh_gaussian_row_forward(mean + at, log_std + at, eps + at,
                                                      action + at, std_cache + at, cols,
                                                      stabilizer);
    }
    return STRIX_OK;
}

strix_status cpu_tanh_gaussian_backward(strix_backend *be, const float *action,
                                        const float *std_cache, const float *eps,
                                        const float *grad_action, const float *grad_log_prob,
                                        float *grad_mean, float *grad_log_std, size_t rows,
                                        size_t cols, float stabilizer) {
    (void)be;
    CPU_PARALLEL_FOR_IF(rows > 1 && CPU_BIG(rows * cols))
    for (size_t r = 0; r < rows; r++) {
        float glp = grad_log_prob[r];
        for (size_t j = r * cols; j < (r + 1) * cols; j++)
            strix_tanh_gaussian_elem_backward(action[j], std_cache[j], eps[j], grad_action[j],
                                              glp, stabilizer, grad_mean + j, grad_log_std + j);
    }
    return STRIX_OK;
}
