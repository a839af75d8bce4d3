/*
 * ops_rl.c - the public entry points of include/strix/ops/rl.h: the reinforcement-learning
 * primitives, each a checked call into the backend vtable (src/core/backend_impl.h). No math here.
 */
#include "core/backend_impl.h"

strix_status strix_rl_rows(strix_backend *be, strix_rl_op op, const strix_rl_args *args) {
    STRIX_DISPATCH(be, rl_rows, op, args);
}

strix_status strix_tanh_gaussian_forward(strix_backend *be, const float *mean,
                                         const float *log_std, const float *eps, float *action,
                                         float *std_cache, float *log_prob, size_t rows,
                                         size_t cols, float stabilizer) {
    STRIX_DISPATCH(be, tanh_gaussian_forward, mean, log_std, eps, action, std_cache, log_prob,
                   rows, cols, stabilizer);
}

strix_status strix_tanh_gaussian_backward(strix_backend *be, const float *action,
                                          const float *std_cache, const float *eps,
                                          const float *grad_action, const float *grad_log_prob,
                                          float *grad_mean, float *grad_log_std, size_t rows,
                                          size_t cols, float stabilizer) {
    STRIX_DISPATCH(be, tanh_gaussian_backward, action, std_cache, eps, grad_action,
                   grad_log_prob, grad_mean, grad_log_std, rows, cols, stabilizer);
}
