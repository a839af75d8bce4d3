/*
 * ssm.c - CPU backend: the state-space passes (Mamba, RWKV, RetNet, stabilised divide,
 * reverse-time sum).
 *
 * Each op runs its kernels/ssm.h lane function over every lane; a sequence lane walks time
 * itself, so the worker pool only splits independent lanes and results do not depend on the
 * thread count.
 * The RWKV passes of a training step (token shift and its backward, the stable WKV forward and
 * backward) and the reverse-time sum run in row order instead: the same per-step functions for
 * many lanes side by side, each lane's arithmetic in its own order (below).
 */
#include "backends/cpu/cpu_internal.h"
#include "kernels/ssm.h"

/* Defines `name`, a range function that runs lane (or task) function `fn` over items
 * [i0, i1). */
#define SSM_RANGE(name, fn)                                                                    \
    static void name(void *p, size_t i0, size_t i1) {                                          \
        const strix_ssm_args *args = p;                                                        \
        for (size_t i = i0; i < i1; i++) fn(args, i);                                          \
    }

// ---- RWKV in row order -------------------------------------------------------------------------
/* The RWKV ops of the training step run here over rows of channels instead of one lane at a
 * time: the same per-element and per-step functions of kernels/ssm.h in the same order per
 * lane, so the bits are those of the lane loops (and of the GPU), but the inner loop walks
 * contiguous channels and vectorises. A task is (b, a block of RWKV_CH channels); threads split
 * tasks only, each lane stays on one thread. */
#define RWKV_CH 64

/* Tasks of a (n, ·, d) op split into channel blocks. */
static size_t rwkv_tasks(const strix_ssm_args *a) {
    return a->n * ((a->d + RWKV_CH - 1) / RWKV_CH);
}

/* The mixes of one row of the token shift (x_prev NULL: zeros). */
static void rwkv_mix_row(float *restrict out, const float *restrict mu, const float *restrict x,
                         const float *restrict x_prev, size_t D) {
    if (x_prev)
        for (size_t e = 0; e < D; e++) out[e] = strix_rwkv_mix(mu[e], x[e], x_prev[e]);
    else
        for (size_t e = 0; e < D; e++) out[e] = strix_rwkv_mix(mu[e], x[e], 0.0f);
}

/* Row (b, t) of STRIX_SSM_RWKV_TOKEN_SHIFT. */
static void rwkv_token_shift_row(const strix_ssm_args *a, size_t row) {
    size_t L = a->l, D = a->d, b = row / L, t = row % L;
    const float *x = a->in[0] + row * D;
    const float *x_prev = t > 0 ? x - D : (a->in[4] ? a->in[4] + b * D : NULL);
    for (int m = 0; m < 3; m++)
        if (a->in[1 + m]) rwkv_mix_row(a->out[m] + row * D, a->in[1 + m], x, x_prev, D);
}

/* The dx and the mix terms of one row of the shift backward; n_* the gradients of the next row
 * (next false: none), three false: g_v, n_v, mu_v and terms_v unused. */
static void rwkv_shift_backward_row(float *restrict dx, float *restrict terms_r,
                                    float *restrict terms_k, float *restrict terms_v,
                                    const float *restrict x, const float *restrict x_prev,
                                    const float *restrict g_r, const float *restrict g_k,
                                    const float *restrict g_v, const float *restrict mu_r,
                                    const float *restrict mu_k, const float *restrict mu_v,
                                    size_t D, bool three, bool next) {
    const float *n_r = next ? g_r + D : g_r, *n_k = next ? g_k + D : g_k;
    const float *n_v = three && next ? g_v + D : g_v;
    if (three && next)
        for (size_t e = 0; e < D; e++)
            dx[e] = strix_rwkv_shift_dx(g_r[e], g_k[e], g_v[e], n_r[e], n_k[e], n_v[e], mu_r[e],
                                        mu_k[e], mu_v[e], true, true);
    else if (three)
        for (size_t e = 0; e < D; e++)
            dx[e] = strix_rwkv_shift_dx(g_r[e], g_k[e], g_v[e], 0.0f, 0.0f, 0.0f, mu_r[e],
                                        mu_k[e], mu_v[e], true, false);
    else if (next)
        for (size_t e = 0; e < D; e++)
            dx[e] = strix_rwkv_shift_dx(g_r[e], g_k[e], 0.0f, n_r[e], n_k[e], 0.0f, mu_r[e],
                                        mu_k[e], 0.0f, false, true);
    else
        for (size_t e = 0; e < D; e++)
            dx[e] = strix_rwkv_shift_dx(g_r[e], g_k[e], 0.0f, 0.0f, 0.0f, 0.0f, mu_r[e], mu_k[e],
                                        0.0f, false, false);
    for (size_t e = 0; e < D; e++) {
        float diff = x[e] - (x_prev ? x_prev[e] : 0.0f);
        terms_r[e] = g_r[e] * diff;
        terms_k[e] = g_k[e] * diff;
        if (three) terms_v[e] = g_v[e] * diff;
    }
}

/* Row (b, t) of STRIX_SSM_RWKV_SHIFT_BACKWARD. */
static void rwkv_shift_backward_at_row(const strix_ssm_args *a, size_t row) {
    size_t L = a->l, D = a->d, b = row / L, t = row % L, at = row * D;
    const float *x = a->in[0] + at;
    const float *x_prev = t > 0 ? x - D : (a->in[7] ? a->in[7] + b * D : NULL);
    bool three = a->in[3] != NULL;
    rwkv_shift_backward_row(a->out[0] + at, a->out[1] + at, a->out[2] + at,
                            three ? a->out[3] + at : NULL, x, x_prev, a->in[1] + at,
                            a->in[2] + at, three ? a->in[3] + at : NULL, a->in[4], a->in[5],
                            three ? a->in[6] : NULL, D, three, t + 1 < L);
}

/* One time step of nc lanes of the stable WKV forward: the state (p, q, o) is carried in place
 * and also written to the state row (ps, qs, os) of step t+1. */
static void rwkv_stable_forward_row(float *restrict r_out, float *restrict wkv_out,
                                    float *restrict gated_out, float *restrict ps,
                                    float *restrict qs, float *restrict os, float *restrict p,
                                    float *restrict q, float *restrict o,
                                    const float *restrict zr, const float *restrict k,
                                    const float *restrict v, const float *restrict u,
                                    const float *restrict w, size_t nc) {
    for (size_t j = 0; j < nc; j++) {
        strix_rwkv_fwd f =
            strix_rwkv_stable_forward_step(zr[j], k[j], v[j], u[j], w[j], p[j], q[j], o[j]);
        r_out[j] = f.r, wkv_out[j] = f.wkv, gated_out[j] = f.gated;
        p[j] = f.p, q[j] = f.q, o[j] = f.o;
        ps[j] = f.p, qs[j] = f.q, os[j] = f.o;
    }
}

/* Task (b, channel block) of STRIX_SSM_RWKV_STABLE_FORWARD. */
static void rwkv_stable_forward_task(const strix_ssm_args *a, size_t task) {
    size_t L = a->l, D = a->d, blocks = (D + RWKV_CH - 1) / RWKV_CH;
    size_t b = task / blocks, c0 = (task % blocks) * RWKV_CH;
    size_t nc = D - c0 < RWKV_CH ? D - c0 : RWKV_CH;
    float p[RWKV_CH], q[RWKV_CH], o[RWKV_CH], w[RWKV_CH];
    for (size_t j = 0; j < nc; j++) {
        size_t lane = b * D + c0 + j;
        w[j] = -strix_kernel_expf(a->in[4][c0 + j]);
        p[j] = a->in[5] ? a->in[5][lane] : 0.0f;
        q[j] = a->in[6] ? a->in[6][lane] : 0.0f;
        o[j] = a->in[7] ? a->in[7][lane] : STRIX_RWKV_MAX0;
    }
    size_t s0 = b * (L + 1) * D + c0;
    for (size_t j = 0; j < nc; j++)
        a->out[3][s0 + j] = p[j], a->out[4][s0 + j] = q[j], a->out[5][s0 + j] = o[j];
    for (size_t t = 0; t < L; t++) {
        size_t idx = (b * L + t) * D + c0, st = s0 + (t + 1) * D;
        rwkv_stable_forward_row(a->out[0] + idx, a->out[1] + idx, a->out[2] + idx,
                                a->out[3] + st, a->out[4] + st, a->out[5] + st, p, q, o,
                                a->in[0] + idx, a->in[1] + idx, a->in[2] + idx, a->in[3] + c0,
                                w, nc);
    }
}

/* One time step (descending) of nc lanes of the stable WKV backward; the carries (ga, gb) in
 * place. */
static void rwkv_stable_backward_row(float *restrict dzr, float *restrict dk, float *restrict dv,
                                     float *restrict du, float *restrict dw, float *restrict ga,
                                     float *restrict gb, const float *restrict g,
                                     const float *restrict r, const float *restrict k,
                                     const float *restrict v, const float *restrict wkv,
                                     const float *restrict ps, const float *restrict qs,
                                     const float *restrict os, const float *restrict u,
                                     const float *restrict w, size_t nc) {
    for (size_t j = 0; j < nc; j++) {
        strix_rwkv_bwd d = strix_rwkv_stable_backward_step(g[j], r[j], k[j], v[j], wkv[j], ps[j],
                                                           qs[j], os[j], u[j], w[j], ga[j], gb[j]);
        dzr[j] = d.dzr, dk[j] = d.dk, dv[j] = d.dv, du[j] = d.du, dw[j] = d.dw;
        ga[j] = d.ga, gb[j] = d.gb;
    }
}

/* Task (b, channel block) of STRIX_SSM_RWKV_STABLE_BACKWARD. */
static void rwkv_stable_backward_task(const strix_ssm_args *a, size_t task) {
    size_t L = a->l, D = a->d, blocks = (D + RWKV_CH - 1) / RWKV_CH;
    size_t b = task / blocks, c0 = (task % blocks) * RWKV_CH;
    size_t nc = D - c0 < RWKV_CH ? D - c0 : RWKV_CH;
    float ga[RWKV_CH], gb[RWKV_CH], w[RWKV_CH];
    for (size_t j = 0; j < nc; j++) {
        w[j] = -strix_kernel_expf(a->in[9][c0 + j]);
        ga[j] = 0.0f, gb[j] = 0.0f;
    }
    size_t s0 = b * (L + 1) * D + c0;
    for (size_t t = L; t-- > 0;) {
        size_t idx = (b * L + t) * D + c0, st = s0 + t * D;
        rwkv_stable_backward_row(a->out[0] + idx, a->out[1] + idx, a->out[2] + idx,
                                 a->out[3] + idx, a->out[4] + idx, ga, gb, a->in[0] + idx,
                                 a->in[1] + idx, a->in[2] + idx, a->in[3] + idx, a->in[4] + idx,
                                 a->in[5] + st, a->in[6] + st, a->in[7] + st, a->in[8] + c0, w,
                                 nc);
    }
}

/* Channel block of STRIX_SSM_REVERSE_TIME_SUM: each channel's sum in the op's order (t
 * descending, then b ascending, from 0.0f), RWKV_CH channels side by side. */
static void reverse_time_sum_task(const strix_ssm_args *a, size_t task) {
    size_t N = a->n, L = a->l, C = a->d, c0 = task * RWKV_CH;
    size_t nc = C - c0 < RWKV_CH ? C - c0 : RWKV_CH;
    float acc[RWKV_CH];
    for (size_t j = 0; j < nc; j++) acc[j] = 0.0f;
    for (size_t t = L; t-- > 0;)
        for (size_t b = 0; b < N; b++) {
            const float *restrict in = a->in[0] + (b * L + t) * C + c0;
            for (size_t j = 0; j < nc; j++) acc[j] += in[j];
        }
    for (size_t j = 0; j < nc; j++) a->out[0][c0 + j] = acc[j];
}

/* The ops' range functions: the lane ops, then the row-order tasks above. */
SSM_RANGE(mamba_forward_range, strix_mamba_forward_lane)
SSM_RANGE(mamba_backward_range, strix_mamba_backward_lane)
SSM_RANGE(mamba_grad_bc_range, strix_mamba_grad_bc_lane)
SSM_RANGE(mamba_lrp_range, strix_mamba_lrp_lane)
SSM_RANGE(rwkv_shift_lrp_range, strix_rwkv_shift_lrp_element)
SSM_RANGE(rwkv_wkv_forward_range, strix_rwkv_wkv_forward_lane)
SSM_RANGE(rwkv_wkv_backward_range, strix_rwkv_wkv_backward_lane)
SSM_RANGE(rwkv_wkv_lrp_range, strix_rwkv_wkv_lrp_lane)
SSM_RANGE(retnet_forward_range, strix_retnet_forward_lane)
SSM_RANGE(retnet_state_grad_range, strix_retnet_state_grad_lane)
SSM_RANGE(retnet_grad_qk_range, strix_retnet_grad_qk_lane)
SSM_RANGE(retnet_grad_v_range, strix_retnet_grad_v_lane)
SSM_RANGE(retnet_scores_range, strix_retnet_scores_lane)
SSM_RANGE(retnet_readout_range, strix_retnet_readout_lane)
SSM_RANGE(retnet_lrp_input_range, strix_retnet_lrp_input_lane)
SSM_RANGE(ssm_stabilized_div_range, strix_ssm_stabilized_div_element)
SSM_RANGE(rwkv_stable_lrp_range, strix_rwkv_stable_lrp_lane)
SSM_RANGE(rwkv_token_shift_range, rwkv_token_shift_row)
SSM_RANGE(rwkv_shift_backward_range, rwkv_shift_backward_at_row)
SSM_RANGE(reverse_time_sum_range, reverse_time_sum_task)
SSM_RANGE(rwkv_stable_forward_range, rwkv_stable_forward_task)
SSM_RANGE(rwkv_stable_backward_range, rwkv_stable_backward_task)

/* Runs range function `range` over every lane. */
#define LANE_LOOP(range) cpu_parallel_for(lanes, lanes > 1 && CPU_BIG(work), range, (void *)args)

/* Runs range function `range` over `tasks` tasks of `work` elements in all. */
#define TASK_LOOP(range, tasks, work)                                                          \
    do {                                                                                       \
        size_t n_tasks = (tasks);                                                              \
        cpu_parallel_for(n_tasks, n_tasks > 1 && CPU_BIG(work), range, (void *)args);          \
    } while (0)

strix_status cpu_ssm_pass(strix_backend *be, strix_ssm_op op, const strix_ssm_args *args) {
    (void)be;
    size_t work = 0, lanes = strix_ssm_lanes(op, args, &work);
    if (lanes == 0) return STRIX_OK; /* op and slots: checked by strix_ssm_pass */
    switch (op) {
    case STRIX_SSM_MAMBA_FORWARD: LANE_LOOP(mamba_forward_range); break;
    case STRIX_SSM_MAMBA_BACKWARD: LANE_LOOP(mamba_backward_range); break;
    case STRIX_SSM_MAMBA_GRAD_BC: LANE_LOOP(mamba_grad_bc_range); break;
    case STRIX_SSM_MAMBA_LRP: LANE_LOOP(mamba_lrp_range); break;
    case STRIX_SSM_RWKV_TOKEN_SHIFT:
        TASK_LOOP(rwkv_token_shift_range, args->n * args->l, work);
        break;
    case STRIX_SSM_RWKV_SHIFT_BACKWARD:
        TASK_LOOP(rwkv_shift_backward_range, args->n * args->l, work);
        break;
    case STRIX_SSM_RWKV_SHIFT_LRP: LANE_LOOP(rwkv_shift_lrp_range); break;
    case STRIX_SSM_RWKV_WKV_FORWARD: LANE_LOOP(rwkv_wkv_forward_range); break;
    case STRIX_SSM_RWKV_WKV_BACKWARD: LANE_LOOP(rwkv_wkv_backward_range); break;
    case STRIX_SSM_RWKV_WKV_LRP: LANE_LOOP(rwkv_wkv_lrp_range); break;
    case STRIX_SSM_RETNET_FORWARD: LANE_LOOP(retnet_forward_range); break;
    case STRIX_SSM_RETNET_STATE_GRAD: LANE_LOOP(retnet_state_grad_range); break;
    case STRIX_SSM_RETNET_GRAD_QK: LANE_LOOP(retnet_grad_qk_range); break;
    case STRIX_SSM_RETNET_GRAD_V: LANE_LOOP(retnet_grad_v_range); break;
    case STRIX_SSM_RETNET_SCORES: LANE_LOOP(retnet_scores_range); break;
    case STRIX_SSM_RETNET_READOUT: LANE_LOOP(retnet_readout_range); break;
    case STRIX_SSM_RETNET_LRP_INPUT: LANE_LOOP(retnet_lrp_input_range); break;
    case STRIX_SSM_STABILIZED_DIV: LANE_LOOP(ssm_stabilized_div_range); break;
    case STRIX_SSM_REVERSE_TIME_SUM:
        TASK_LOOP(reverse_time_sum_range, (args->d + RWKV_CH - 1) / RWKV_CH, work);
        break;
    case STRIX_SSM_RWKV_STABLE_FORWARD:
        TASK_LOOP(rwkv_stable_forward_range, rwkv_tasks(args), work);
        break;
    case STRIX_SSM_RWKV_STABLE_BACKWARD:
        TASK_LOOP(rwkv_stable_backward_range, rwkv_tasks(args), work);
        break;
    case STRIX_SSM_RWKV_STABLE_LRP: LANE_LOOP(rwkv_stable_lrp_range); break;
    }
    return STRIX_OK;
}
