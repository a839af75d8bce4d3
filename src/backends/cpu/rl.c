/*
 * rl.c - CPU backend: reinforcement-learning rows (strix_rl_rows) and SAC's tanh-Gaussian policy.
 *
 * Loops over the per-row functions of kernels/rl.h. Threads split rows (elements for the Polyak
 * blend), each done whole by one thread, so results do not depend on the thread count. Batch
 * sums of the per-row terms are the caller's (column_sums). Actions are checked on the host
 * before any output is written (strix_rl_check_actions); op and slots by strix_rl_rows.
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/rl.h"

typedef struct rl_rows_args {
    strix_rl_op op;
    const strix_rl_args *args;
} rl_rows_args;

static void polyak_range(void *p, size_t i0, size_t i1) {
    strix_rl_args a = *((const rl_rows_args *)p)->args; /* a local copy, so that it vectorises */
    for (size_t i = i0; i < i1; i++) strix_rl_polyak_elem(&a, i);
}

static void rl_rows_range(void *p, size_t r0, size_t r1) {
    const rl_rows_args *ra = p;
    strix_rl_op op = ra->op;
    strix_rl_args a = *ra->args;
    for (size_t r = r0; r < r1; r++) strix_rl_row(op, &a, r);
}

strix_status cpu_rl_rows(strix_backend *be, strix_rl_op op, const strix_rl_args *args) {
    (void)be;
    size_t rows = args->rows, cols = args->cols; /* op and slots: checked by strix_rl_rows */
    if (rows == 0 || cols == 0) return STRIX_OK;
    rl_rows_args ra = {op, args};
    if (op == STRIX_RL_POLYAK_BLEND) {
        size_t n = rows * cols;
        cpu_parallel_for(n, CPU_BIG(n), polyak_range, &ra);
        return STRIX_OK;
    }
    if (op != STRIX_RL_DQN_TARGET) /* every other op reads actions from in[1] */
        STRIX_TRY(strix_rl_check_actions(args->in[1], rows, 0, cols));
    cpu_parallel_for(rows, rows > 1 && CPU_BIG(rows * cols), rl_rows_range, &ra);
    return STRIX_OK;
}

typedef struct tanh_gaussian_forward_args {
    const float *mean, *log_std, *eps;
    float *action, *std_cache, *log_prob;
    size_t cols;
    float stabilizer;
} tanh_gaussian_forward_args;

static void tanh_gaussian_forward_range(void *p, size_t r0, size_t r1) {
    const tanh_gaussian_forward_args *a = p;
    const float *mean = a->mean, *log_std = a->log_std, *eps = a->eps;
    float *action = a->action, *std_cache = a->std_cache, *log_prob = a->log_prob;
    size_t cols = a->cols;
    float stabilizer = a->stabilizer;
    for (size_t r = r0; r < r1; r++) {
        size_t at = r * cols;
        log_prob[r] = strix_tanh_gaussian_row_forward(mean + at, log_std + at, eps + at,
                                                      action + at, std_cache + at, cols,
                                                      stabilizer);
    }
}

strix_status cpu_tanh_gaussian_forward(strix_backend *be, const float *mean, const float *log_std,
                                       const float *eps, float *action, float *std_cache,
                                       float *log_prob, size_t rows, size_t cols,
                                       float stabilizer) {
    (void)be;
    tanh_gaussian_forward_args a = {mean, log_std, eps, action, std_cache, log_prob, cols,
                                    stabilizer};
    cpu_parallel_for(rows, rows > 1 && CPU_BIG(4 * rows * cols), tanh_gaussian_forward_range, &a);
    return STRIX_OK;
}

typedef struct tanh_gaussian_backward_args {
    const float *action, *std_cache, *eps, *grad_action, *grad_log_prob;
    float *grad_mean, *grad_log_std;
    size_t cols;
    float stabilizer;
} tanh_gaussian_backward_args;

static void tanh_gaussian_backward_range(void *p, size_t r0, size_t r1) {
    const tanh_gaussian_backward_args *a = p;
    const float *action = a->action, *std_cache = a->std_cache, *eps = a->eps;
    const float *grad_action = a->grad_action, *grad_log_prob = a->grad_log_prob;
    float *grad_mean = a->grad_mean, *grad_log_std = a->grad_log_std;
    size_t cols = a->cols;
    float stabilizer = a->stabilizer;
    for (size_t r = r0; r < r1; r++) {
        float glp = grad_log_prob[r];
        for (size_t j = r * cols; j < (r + 1) * cols; j++)
            strix_tanh_gaussian_elem_backward(action[j], std_cache[j], eps[j], grad_action[j],
                                              glp, stabilizer, grad_mean + j, grad_log_std + j);
    }
}

strix_status cpu_tanh_gaussian_backward(strix_backend *be, const float *action,
                                        const float *std_cache, const float *eps,
                                        const float *grad_action, const float *grad_log_prob,
                                        float *grad_mean, float *grad_log_std, size_t rows,
                                        size_t cols, float stabilizer) {
    (void)be;
    tanh_gaussian_backward_args a = {action, std_cache, eps, grad_action, grad_log_prob,
                                     grad_mean, grad_log_std, cols, stabilizer};
    cpu_parallel_for(rows, rows > 1 && CPU_BIG(rows * cols), tanh_gaussian_backward_range, &a);
    return STRIX_OK;
}
