/*
 * kernels/ssm.h - per-lane math of the state-space passes: the Mamba selective scan (forward,
 * BPTT, dB/dC, MambaLRP), RWKV (token shift, the WKV recurrence in the plain and the stable
 * running-maximum form, BPTT, detached-quotient LRP) and RetNet (recurrent form, state gradient,
 * dQ/dK/dV, parallel scores and readout, input LRP), plus the stabilised divide and the
 * reverse-time parameter sum (MambaLRP: Jafari et al. 2024).
 *
 * Slot meanings, shapes and orders are documented at strix_ssm_op
 * (include/strix/ops/ssm.h). One function per op handles one lane: a sequence lane walks
 * time itself (ascending forward, descending backward) and keeps its carries in locals or
 * recomputes them from what it already wrote, so no scratch buffer and no atomics are needed.
 * Exponentials use strix_kernel_expf (kernels/mathf.h), so every backend gets the same float.
 */
#ifndef STRIX_KERNELS_SSM_H
#define STRIX_KERNELS_SSM_H

#include "kernels/common.h"
#include "kernels/mathf.h"
#include "kernels/recurrent.h" /* strix_lrp_stab, strix_rec_opt */

/* softplus(z) = z for z > 20, else log1p(e^z). */
STRIX_HD static inline float strix_ssm_softplus(float z) {
    return z > 20.0f ? z : log1pf(strix_kernel_expf(z));
}

/* 1/(1 + e^-z). */
STRIX_HD static inline float strix_ssm_sigmoid(float z) {
    return 1.0f / (1.0f + strix_kernel_expf(-z));
}

// ---- Mamba -------------------------------------------------------------------------------------

/* Index of state (b, t, c, j) in a (n, l+1, C, S) states buffer. */
STRIX_HD static inline size_t strix_ssm_state_at(size_t b, size_t t, size_t c, size_t j,
                                                 size_t l, size_t C, size_t S) {
    return ((b * (l + 1) + t) * C + c) * S + j;
}

STRIX_HD static inline void strix_mamba_forward_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, S = a->s, b = lane / D, c = lane % D;
    const float *x = a->in[0], *z = a->in[1], *B = a->in[2], *C = a->in[3];
    const float *A = a->in[4] + c * S, *Dv = a->in[5];
    float *delta_out = a->out[0], *abar_out = a->out[1], *bbar_out = a->out[2];
    float *h = a->out[3], *y_out = a->out[4];
    const float *h0 = a->in[6]; /* optional initial state (n, d, s); NULL: zeros */
    for (size_t j = 0; j < S; j++)
        h[strix_ssm_state_at(b, 0, c, j, L, D, S)] = h0 ? h0[(b * D + c) * S + j] : 0.0f;
    for (size_t t = 0; t < L; t++) {
        size_t idx = (b * L + t) * D + c, row = (b * L + t) * S;
        float delta = strix_ssm_softplus(z[idx]);
        float xv = x[idx];
        float y = Dv[c] * xv;
        delta_out[idx] = delta;
        for (size_t j = 0; j < S; j++) {
            float abar = strix_kernel_expf(delta * A[j]);
            float bbar = delta * B[row + j];
            float h_prev = h[strix_ssm_state_at(b, t, c, j, L, D, S)];
            float ht = abar * h_prev + bbar * xv;
            abar_out[idx * S + j] = abar;
            bbar_out[idx * S + j] = bbar;
            h[strix_ssm_state_at(b, t + 1, c, j, L, D, S)] = ht;
            y += C[row + j] * ht;
        }
        y_out[idx] = y;
    }
}

/* The carry into step t, dh_{t+1}·Abar_{t+1}, is recomputed from out[2] (written at step t+1),
 * the same product a running carry would hold. */
STRIX_HD static inline void strix_mamba_backward_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, S = a->s, b = lane / D, c = lane % D;
    const float *gy = a->in[0], *x = a->in[1], *delta_in = a->in[2], *z = a->in[3];
    const float *h = a->in[4], *abar = a->in[5], *bbar = a->in[6], *B = a->in[7], *C = a->in[8];
    const float *A = a->in[9] + c * S, *Dv = a->in[10];
    float *dx_out = a->out[0], *dz_out = a->out[1], *dh_out = a->out[2], *a_terms = a->out[3];
    for (size_t t = L; t-- > 0;) {
        size_t idx = (b * L + t) * D + c, row = (b * L + t) * S;
        size_t next = idx + D; /* (b, t+1, c) */
        float g = gy[idx], xv = x[idx], delta = delta_in[idx];
        float dx = g * Dv[c];
        float ddelta = 0.0f;
        for (size_t j = 0; j < S; j++) {
            size_t at = idx * S + j;
            float carry = t + 1 < L ? dh_out[next * S + j] * abar[next * S + j] : 0.0f;
            float dh = g * C[row + j] + carry;
            float h_prev = h[strix_ssm_state_at(b, t, c, j, L, D, S)];
            dh_out[at] = dh;
            dx += dh * bbar[at];
            ddelta += dh * xv * B[row + j];
            ddelta += dh * h_prev * abar[at] * A[j];
            a_terms[at] = dh * h_prev * abar[at] * delta;
        }
        dz_out[idx] = ddelta * strix_ssm_sigmoid(z[idx]);
        dx_out[idx] = dx;
    }
}

/* Lane (b, t, j): dB and dC summed over the channels. */
STRIX_HD static inline void strix_mamba_grad_bc_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, S = a->s;
    size_t bt = lane / S, j = lane % S, b = bt / L, t = bt % L;
    const float *gy = a->in[0], *x = a->in[1], *delta = a->in[2], *h = a->in[3], *dh = a->in[4];
    float db = 0.0f, dc = 0.0f;
    for (size_t c = 0; c < D; c++) {
        size_t idx = bt * D + c;
        db += dh[idx * S + j] * x[idx] * delta[idx];
        dc += gy[idx] * h[strix_ssm_state_at(b, t + 1, c, j, L, D, S)];
    }
    a->out[0][lane] = db;
    a->out[1][lane] = dc;
}

/* The carry into step t, (Abar_{t+1}·h_t / stab h_{t+1})·R_h,t+1, is recomputed from out[1]. */
STRIX_HD static inline void strix_mamba_lrp_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, S = a->s, b = lane / D, c = lane % D;
    float eps = a->eps;
    const float *x = a->in[0], *y = a->in[1], *ry = a->in[2], *h = a->in[3];
    const float *abar = a->in[4], *bbar = a->in[5], *C = a->in[6], *Dv = a->in[7];
    float *rx_out = a->out[0], *rh_out = a->out[1];
    for (size_t t = L; t-- > 0;) {
        size_t idx = (b * L + t) * D + c, row = (b * L + t) * S, next = idx + D;
        float xv = x[idx], sy = strix_lrp_stab(y[idx], eps), r = ry[idx];
        float rx = (Dv[c] * xv / sy) * r;
        for (size_t j = 0; j < S; j++) {
            size_t at = idx * S + j;
            float ht = h[strix_ssm_state_at(b, t + 1, c, j, L, D, S)];
            float carry = 0.0f;
            if (t + 1 < L) {
                float sh_next = strix_lrp_stab(h[strix_ssm_state_at(b, t + 2, c, j, L, D, S)], eps);
                carry = (abar[next * S + j] * ht / sh_next) * rh_out[next * S + j];
            }
            float rh = (C[row + j] * ht / sy) * r + carry;
            rh_out[at] = rh;
            rx += (bbar[at] * xv / strix_lrp_stab(ht, eps)) * rh;
        }
        rx_out[idx] = rx;
    }
}

// ---- RWKV --------------------------------------------------------------------------------------

/* x_{t-1} of element i = (b, t, e): the row before, or at t = 0 the state row x_prev (n,d) (NULL:
 * zeros). */
STRIX_HD static inline float strix_rwkv_x_prev(const float *x, const float *x_prev, size_t i,
                                               size_t t, size_t L, size_t D) {
    if (t > 0) return x[i - D];
    return x_prev ? x_prev[(i / (L * D)) * D + i % D] : 0.0f;
}

/* One mix of the token shift: mu·x_t + (1 - mu)·x_{t-1}. */
STRIX_HD static inline float strix_rwkv_mix(float mu, float x, float x_prev) {
    return mu * x + (1.0f - mu) * x_prev;
}

/* Element i = (b, t, e). */
STRIX_HD static inline void strix_rwkv_token_shift_element(const strix_ssm_args *a, size_t i) {
    size_t L = a->l, D = a->d, t = (i / D) % L, e = i % D;
    float x = a->in[0][i], x_prev = strix_rwkv_x_prev(a->in[0], a->in[4], i, t, L, D);
    for (int m = 0; m < 3; m++) {
        if (!a->in[1 + m]) continue; /* mu_v NULL: two mixes */
        a->out[m][i] = strix_rwkv_mix(a->in[1 + m][e], x, x_prev);
    }
}

/* dx of one element of the token shift from the gradients of its mixes at step t (g_*) and at
 * step t+1 (n_*; next false at the last step), three or two mixes (g_v, n_v, mu_v unused). */
STRIX_HD static inline float strix_rwkv_shift_dx(float g_r, float g_k, float g_v, float n_r,
                                                 float n_k, float n_v, float mu_r, float mu_k,
                                                 float mu_v, bool three, bool next) {
    float dx = g_r * mu_r + g_k * mu_k;
    if (three) dx += g_v * mu_v;
    if (next) {
        dx += n_r * (1.0f - mu_r) + n_k * (1.0f - mu_k);
        if (three) dx += n_v * (1.0f - mu_v);
    }
    return dx;
}

STRIX_HD static inline void strix_rwkv_shift_backward_element(const strix_ssm_args *a, size_t i) {
    size_t L = a->l, D = a->d, t = (i / D) % L, e = i % D;
    const float *g_r = a->in[1], *g_k = a->in[2], *g_v = a->in[3];
    bool three = g_v != NULL; /* g_xv and mu_v NULL: two mixes */
    bool next = t + 1 < L;
    float mu_r = a->in[4][e], mu_k = a->in[5][e], mu_v = three ? a->in[6][e] : 0.0f;
    float x = a->in[0][i], x_prev = strix_rwkv_x_prev(a->in[0], a->in[7], i, t, L, D);
    float diff = x - x_prev;
    size_t nx = next ? i + D : i;
    a->out[0][i] = strix_rwkv_shift_dx(g_r[i], g_k[i], three ? g_v[i] : 0.0f, g_r[nx], g_k[nx],
                                       three ? g_v[nx] : 0.0f, mu_r, mu_k, mu_v, three, next);
    a->out[1][i] = g_r[i] * diff;
    a->out[2][i] = g_k[i] * diff;
    if (three) a->out[3][i] = g_v[i] * diff;
}

STRIX_HD static inline void strix_rwkv_shift_lrp_element(const strix_ssm_args *a, size_t i) {
    size_t L = a->l, D = a->d, t = (i / D) % L, e = i % D;
    float eps = a->eps;
    const float *m = a->in[1], *rm = a->in[2];
    float x = a->in[0][i], mu = a->in[3][e];
    float r = (mu * x / strix_lrp_stab(m[i], eps)) * rm[i];
    if (t + 1 < L) r += ((1.0f - mu) * x / strix_lrp_stab(m[i + D], eps)) * rm[i + D];
    a->out[0][i] = r;
}

STRIX_HD static inline void strix_rwkv_wkv_forward_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, b = lane / D, c = lane % D;
    const float *zr = a->in[0], *k = a->in[1], *v = a->in[2];
    float u = a->in[3][c], decay = strix_kernel_expf(-a->in[4][c]);
    float *as = a->out[5], *bs = a->out[6];
    size_t s0 = b * (L + 1) * D + c; /* (b, 0, c) in an (n, l+1, d) state buffer */
    as[s0] = 0.0f;
    bs[s0] = 0.0f;
    for (size_t t = 0; t < L; t++) {
        size_t idx = (b * L + t) * D + c, st = s0 + t * D;
        float r = strix_ssm_sigmoid(zr[idx]);
        float kv = k[idx], vv = v[idx];
        float a_prev = as[st], b_prev = bs[st];
        float e = strix_kernel_expf(u + kv);
        float den = b_prev + e;
        float wkv = (a_prev + e * vv) / den;
        float kk = strix_kernel_expf(kv);
        a->out[0][idx] = r;
        a->out[1][idx] = e;
        a->out[2][idx] = den;
        a->out[3][idx] = wkv;
        a->out[4][idx] = kk;
        as[st + D] = decay * a_prev + kk * vv;
        bs[st + D] = decay * b_prev + kk;
        a->out[7][idx] = r * wkv;
    }
}

/* dden = -dwkv·num/den² is computed as -(dnum·wkv). */
STRIX_HD static inline void strix_rwkv_wkv_backward_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, b = lane / D, c = lane % D;
    const float *gg = a->in[0], *rr = a->in[1], *v = a->in[2], *e_in = a->in[3];
    const float *kk_in = a->in[4], *den_in = a->in[5], *as = a->in[6], *bs = a->in[7];
    const float *wkv_in = a->in[8];
    float decay = strix_kernel_expf(-a->in[9][c]);
    size_t s0 = b * (L + 1) * D + c;
    float ga = 0.0f, gb = 0.0f; /* dL/da_t, dL/db_t from step t+1 */
    for (size_t t = L; t-- > 0;) {
        size_t idx = (b * L + t) * D + c, st = s0 + t * D;
        float g = gg[idx], r = rr[idx], vv = v[idx], e = e_in[idx], kk = kk_in[idx];
        float wkv = wkv_in[idx];
        float dnum = g * r / den_in[idx];
        float dden = -(dnum * wkv);
        float de = dnum * vv + dden;
        a->out[0][idx] = g * wkv * (r * (1.0f - r));
        a->out[1][idx] = de * e + (ga * vv + gb) * kk;
        a->out[2][idx] = dnum * e + ga * kk;
        a->out[3][idx] = de * e;
        a->out[4][idx] = -decay * (ga * as[st] + gb * bs[st]);
        ga = dnum + ga * decay;
        gb = dden + gb * decay;
    }
}

STRIX_HD static inline void strix_rwkv_wkv_lrp_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, b = lane / D, c = lane % D;
    float eps = a->eps;
    const float *rw = a->in[0], *as = a->in[1], *den_in = a->in[2], *e_in = a->in[3];
    const float *v = a->in[4], *wkv_in = a->in[5], *kk_in = a->in[6];
    float decay = strix_kernel_expf(-a->in[7][c]);
    size_t s0 = b * (L + 1) * D + c;
    float ra = 0.0f; /* relevance of a_t from step t+1 */
    for (size_t t = L; t-- > 0;) {
        size_t idx = (b * L + t) * D + c, st = s0 + t * D;
        float a_prev = as[st], den = den_in[idx], vv = v[idx];
        float sw = strix_lrp_stab(wkv_in[idx], eps), sa = strix_lrp_stab(as[st + D], eps);
        float r = rw[idx];
        float rv = ((e_in[idx] * vv / den) / sw) * r + (kk_in[idx] * vv / sa) * ra;
        ra = ((a_prev / den) / sw) * r + (decay * a_prev / sa) * ra;
        a->out[0][idx] = rv;
    }
}

// ---- RWKV-4 WKV, stable form (running maximum) -------------------------------------------------

/* The RWKV-4 WKV with the running maximum of transformers' rwkv_linear_attention_cpu: per lane a
 * state (p, q, o) = (num, den, max) stands for the sums A = p·e^o, B = q·e^o of the plain form.
 * w = -e^(time_decay). Step t with key k, value v:
 *   mo = max(o, u + k), e1 = e^(o - mo), e2 = e^(u + k - mo), den' = e1·q + e2,
 *   wkv = (e1·p + e2·v) / den';
 *   ms = max(o + w, k), f1 = e^((o + w) - ms), f2 = e^(k - ms),
 *   p' = f1·p + f2·v, q' = f1·q + f2, o' = ms.
 * Every exponent is <= 0, so nothing overflows for any key. */
typedef struct strix_rwkv_step {
    float e1, e2, den, f1, f2;
} strix_rwkv_step;

STRIX_HD static inline strix_rwkv_step strix_rwkv_stable_step(float o, float q, float u, float w,
                                                              float k) {
    strix_rwkv_step s;
    float uk = u + k;
    float mo = o > uk ? o : uk;
    s.e1 = strix_kernel_expf(o - mo);
    s.e2 = strix_kernel_expf(uk - mo);
    s.den = s.e1 * q + s.e2;
    float ow = o + w;
    float ms = ow > k ? ow : k;
    s.f1 = strix_kernel_expf(ow - ms);
    s.f2 = strix_kernel_expf(k - ms);
    return s;
}

/* The initial max of a fresh state (transformers: -1e38). */
#define STRIX_RWKV_MAX0 (-1e38f)

/* One forward step of a lane: z_r, key, value and the state (p, q, o) at step t in; the outputs
 * of step t and the state at t+1 out. */
typedef struct strix_rwkv_fwd {
    float r, wkv, gated, p, q, o;
} strix_rwkv_fwd;

STRIX_HD static inline strix_rwkv_fwd strix_rwkv_stable_forward_step(float zr, float kv, float vv,
                                                                     float u, float w, float p,
                                                                     float q, float o) {
    strix_rwkv_fwd f;
    strix_rwkv_step s = strix_rwkv_stable_step(o, q, u, w, kv);
    float wkv = (s.e1 * p + s.e2 * vv) / s.den;
    float r = strix_ssm_sigmoid(zr);
    f.r = r;
    f.wkv = wkv;
    f.gated = r * wkv;
    float ow = o + w;
    f.p = s.f1 * p + s.f2 * vv;
    f.q = s.f1 * q + s.f2;
    f.o = ow > kv ? ow : kv;
    return f;
}

STRIX_HD static inline void strix_rwkv_stable_forward_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, b = lane / D, c = lane % D;
    const float *zr = a->in[0], *k = a->in[1], *v = a->in[2];
    float u = a->in[3][c], w = -strix_kernel_expf(a->in[4][c]);
    float *ps = a->out[3], *qs = a->out[4], *os = a->out[5];
    size_t s0 = b * (L + 1) * D + c; /* (b, 0, c) in an (n, l+1, d) state buffer */
    float p = a->in[5] ? a->in[5][lane] : 0.0f, q = a->in[6] ? a->in[6][lane] : 0.0f;
    float o = a->in[7] ? a->in[7][lane] : STRIX_RWKV_MAX0;
    ps[s0] = p, qs[s0] = q, os[s0] = o;
    for (size_t t = 0; t < L; t++) {
        size_t idx = (b * L + t) * D + c, st = s0 + (t + 1) * D;
        strix_rwkv_fwd f = strix_rwkv_stable_forward_step(zr[idx], k[idx], v[idx], u, w, p, q, o);
        a->out[0][idx] = f.r;
        a->out[1][idx] = f.wkv;
        a->out[2][idx] = f.gated;
        p = f.p, q = f.q, o = f.o;
        ps[st] = p, qs[st] = q, os[st] = o;
    }
}

/* One backward step of a lane: the gradient g of gated, r, key, value, wkv, the state (p, q, o)
 * at step t and the carries (ga, gb) from step t+1 in; the step's five outputs and the carries
 * into step t-1 out. */
typedef struct strix_rwkv_bwd {
    float dzr, dk, dv, du, dw, ga, gb;
} strix_rwkv_bwd;

STRIX_HD static inline strix_rwkv_bwd strix_rwkv_stable_backward_step(float g, float r, float kv,
                                                                      float vv, float wkv,
                                                                      float p, float q, float o,
                                                                      float u, float w, float ga,
                                                                      float gb) {
    strix_rwkv_bwd d;
    strix_rwkv_step s = strix_rwkv_stable_step(o, q, u, w, kv);
    float dwkv = g * r;
    float dnum = dwkv / s.den;
    float du = dnum * s.e2 * (vv - wkv);
    d.dzr = g * wkv * (r * (1.0f - r));
    d.dk = du + (ga * vv + gb) * s.f2;
    d.dv = dnum * s.e2 + ga * s.f2;
    d.du = du;
    d.dw = w * (s.f1 * (ga * p + gb * q));
    d.ga = dnum * s.e1 + ga * s.f1;
    d.gb = -(dnum * wkv) * s.e1 + gb * s.f1;
    return d;
}

/* Carries ga = dL/dp_t, gb = dL/dq_t at fixed o_t (= e^(o_t)·dL/dA_t, bounded), 0 after the last
 * step. */
STRIX_HD static inline void strix_rwkv_stable_backward_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, b = lane / D, c = lane % D;
    const float *gg = a->in[0], *rr = a->in[1], *k = a->in[2], *v = a->in[3], *wkv_in = a->in[4];
    const float *ps = a->in[5], *qs = a->in[6], *os = a->in[7];
    float u = a->in[8][c], w = -strix_kernel_expf(a->in[9][c]);
    size_t s0 = b * (L + 1) * D + c;
    float ga = 0.0f, gb = 0.0f;
    for (size_t t = L; t-- > 0;) {
        size_t idx = (b * L + t) * D + c, st = s0 + t * D;
        strix_rwkv_bwd d = strix_rwkv_stable_backward_step(gg[idx], rr[idx], k[idx], v[idx],
                                                           wkv_in[idx], ps[st], qs[st], os[st],
                                                           u, w, ga, gb);
        a->out[0][idx] = d.dzr;
        a->out[1][idx] = d.dk;
        a->out[2][idx] = d.dv;
        a->out[3][idx] = d.du;
        a->out[4][idx] = d.dw;
        ga = d.ga, gb = d.gb;
    }
}

/* Carry rp = relevance of p_t, 0 after the last step. */
STRIX_HD static inline void strix_rwkv_stable_lrp_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, b = lane / D, c = lane % D;
    float eps = a->eps;
    const float *rw = a->in[0], *k = a->in[1], *v = a->in[2], *wkv_in = a->in[3];
    const float *ps = a->in[4], *qs = a->in[5], *os = a->in[6];
    float u = a->in[7][c], w = -strix_kernel_expf(a->in[8][c]);
    size_t s0 = b * (L + 1) * D + c;
    float rp = 0.0f;
    for (size_t t = L; t-- > 0;) {
        size_t idx = (b * L + t) * D + c, st = s0 + t * D;
        float p = ps[st], vv = v[idx];
        strix_rwkv_step s = strix_rwkv_stable_step(os[st], qs[st], u, w, k[idx]);
        float sw = strix_lrp_stab(wkv_in[idx], eps), sp = strix_lrp_stab(ps[st + D], eps);
        float r = rw[idx];
        a->out[0][idx] = ((s.e2 * vv / s.den) / sw) * r + (s.f2 * vv / sp) * rp;
        rp = ((s.e1 * p / s.den) / sw) * r + (s.f1 * p / sp) * rp;
    }
    if (a->out[1]) a->out[1][lane] = rp;
}

// ---- RetNet ------------------------------------------------------------------------------------

/* Lane (b, j); states (n, l+1, s, d). */
STRIX_HD static inline void strix_retnet_forward_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, K = a->s, b = lane / D, j = lane % D;
    const float *q = a->in[0], *k = a->in[1], *v = a->in[2];
    float *st = a->out[0], gamma = a->gamma;
    for (size_t i = 0; i < K; i++) st[strix_ssm_state_at(b, 0, i, j, L, K, D)] = 0.0f;
    for (size_t t = 0; t < L; t++) {
        size_t row = (b * L + t) * K;
        float vj = v[(b * L + t) * D + j];
        float y = 0.0f;
        for (size_t i = 0; i < K; i++) {
            float s_prev = st[strix_ssm_state_at(b, t, i, j, L, K, D)];
            float s = gamma * s_prev + k[row + i] * vj;
            st[strix_ssm_state_at(b, t + 1, i, j, L, K, D)] = s;
            y += q[row + i] * s;
        }
        a->out[1][(b * L + t) * D + j] = y;
    }
}

/* Lane (b, i, j); dS (n, l, s, d). */
STRIX_HD static inline void strix_retnet_state_grad_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, K = a->s;
    size_t bi = lane / D, j = lane % D, b = bi / K, i = bi % K;
    const float *gy = a->in[0], *q = a->in[1];
    float next = 0.0f;
    for (size_t t = L; t-- > 0;) {
        float ds = gy[(b * L + t) * D + j] * q[(b * L + t) * K + i] + a->gamma * next;
        a->out[0][((b * L + t) * K + i) * D + j] = ds;
        next = ds;
    }
}

/* Lane (b, t, i). */
STRIX_HD static inline void strix_retnet_grad_qk_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, K = a->s;
    size_t bt = lane / K, i = lane % K, b = bt / L, t = bt % L;
    const float *gy = a->in[0] + bt * D, *v = a->in[3] + bt * D;
    const float *s_row = a->in[1] + strix_ssm_state_at(b, t + 1, i, 0, L, K, D);
    const float *ds_row = a->in[2] + lane * D;
    float dq = 0.0f, dk = 0.0f;
    for (size_t j = 0; j < D; j++) dq += gy[j] * s_row[j];
    for (size_t j = 0; j < D; j++) dk += ds_row[j] * v[j];
    a->out[0][lane] = dq;
    a->out[1][lane] = dk;
}

/* Lane (b, t, j). */
STRIX_HD static inline void strix_retnet_grad_v_lane(const strix_ssm_args *a, size_t lane) {
    size_t D = a->d, K = a->s, bt = lane / D, j = lane % D;
    const float *ds = a->in[0] + bt * K * D, *k = a->in[1] + bt * K;
    float dv = 0.0f;
    for (size_t i = 0; i < K; i++) dv += ds[i * D + j] * k[i];
    a->out[0][lane] = dv;
}

/* Lane (b, t, u). */
STRIX_HD static inline void strix_retnet_scores_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, K = a->s, bt = lane / L, u = lane % L, b = bt / L, t = bt % L;
    if (u > t) {
        a->out[0][lane] = 0.0f;
        a->out[1][lane] = 0.0f;
        return;
    }
    const float *q = a->in[0] + bt * K, *k = a->in[1] + (b * L + u) * K;
    float dot = 0.0f;
    for (size_t i = 0; i < K; i++) dot += q[i] * k[i];
    float decay = 1.0f;
    for (size_t step = u; step < t; step++) decay *= a->gamma;
    a->out[0][lane] = dot;
    a->out[1][lane] = decay * dot;
}

/* Lane (b, t, j). */
STRIX_HD static inline void strix_retnet_readout_lane(const strix_ssm_args *a, size_t lane) {
    size_t L = a->l, D = a->d, bt = lane / D, j = lane % D, b = bt / L, t = bt % L;
    const float *g = a->in[0] + bt * L, *v = a->in[1] + b * L * D + j;
    float y = 0.0f;
    for (size_t u = 0; u <= t; u++) y += g[u] * v[u * D];
    a->out[0][lane] = y;
}

/* Lane (b, t, e). */
STRIX_HD static inline void strix_retnet_lrp_input_lane(const strix_ssm_args *a, size_t lane) {
    size_t D = a->d, K = a->s, bt = lane / D, e = lane % D;
    float eps = a->eps, x = a->in[0][lane];
    const float *wq = a->in[1] + e * K, *wk = a->in[2] + e * K, *wv = a->in[3] + e * D;
    const float *q = a->in[4] + bt * K, *k = a->in[5] + bt * K, *v = a->in[6] + bt * D;
    const float *rq = a->in[7] + bt * K, *rk = a->in[8] + bt * K, *rv = a->in[9] + bt * D;
    float r = 0.0f;
    for (size_t i = 0; i < K; i++) r += (x * wq[i] / strix_lrp_stab(q[i], eps)) * rq[i];
    for (size_t i = 0; i < K; i++) r += (x * wk[i] / strix_lrp_stab(k[i], eps)) * rk[i];
    for (size_t j = 0; j < D; j++) r += (x * wv[j] / strix_lrp_stab(v[j], eps)) * rv[j];
    a->out[0][lane] = r;
}

// ---- shared ------------------------------------------------------------------------------------

STRIX_HD static inline void strix_ssm_stabilized_div_element(const strix_ssm_args *a, size_t i) {
    a->out[0][i] = a->in[0][i] / strix_lrp_stab(a->in[1][i], a->eps);
}

/* Lane c of a (n, l, C) buffer, C = a->d: t descending, then b ascending. */
STRIX_HD static inline void strix_ssm_reverse_time_sum_lane(const strix_ssm_args *a, size_t c) {
    size_t N = a->n, L = a->l, C = a->d;
    float acc = 0.0f;
    for (size_t t = L; t-- > 0;)
        for (size_t b = 0; b < N; b++) acc += a->in[0][(b * L + t) * C + c];
    a->out[0][c] = acc;
}

// ---- lanes and slots (host side) ---------------------------------------------------------------

/* Number of lanes of `op`, and in *work the floats it touches in all (for the CPU's threading
 * threshold). 0 for an unknown op. */
static inline size_t strix_ssm_lanes(strix_ssm_op op, const strix_ssm_args *a, size_t *work) {
    size_t n = a->n, l = a->l, d = a->d, s = a->s;
    size_t lanes = 0, per = 1;
    switch (op) {
    case STRIX_SSM_MAMBA_FORWARD:
    case STRIX_SSM_MAMBA_BACKWARD:
    case STRIX_SSM_MAMBA_LRP: lanes = n * d, per = l * (s + 1); break;
    case STRIX_SSM_MAMBA_GRAD_BC: lanes = n * l * s, per = d; break;
    case STRIX_SSM_RWKV_TOKEN_SHIFT:
    case STRIX_SSM_RWKV_SHIFT_BACKWARD:
    case STRIX_SSM_RWKV_SHIFT_LRP:
    case STRIX_SSM_STABILIZED_DIV: lanes = n * l * d, per = 1; break;
    case STRIX_SSM_RWKV_WKV_FORWARD:
    case STRIX_SSM_RWKV_WKV_BACKWARD:
    case STRIX_SSM_RWKV_WKV_LRP: lanes = n * d, per = l; break;
    case STRIX_SSM_RETNET_FORWARD: lanes = n * d, per = l * s; break;
    case STRIX_SSM_RETNET_STATE_GRAD: lanes = n * s * d, per = l; break;
    case STRIX_SSM_RETNET_GRAD_QK: lanes = n * l * s, per = 2 * d; break;
    case STRIX_SSM_RETNET_GRAD_V: lanes = n * l * d, per = s; break;
    case STRIX_SSM_RETNET_SCORES: lanes = n * l * l, per = s; break;
    case STRIX_SSM_RETNET_READOUT: lanes = n * l * d, per = l; break;
    case STRIX_SSM_RETNET_LRP_INPUT: lanes = n * l * d, per = 2 * s + d; break;
    case STRIX_SSM_REVERSE_TIME_SUM: lanes = d, per = n * l; break;
    case STRIX_SSM_RWKV_STABLE_FORWARD:
    case STRIX_SSM_RWKV_STABLE_BACKWARD:
    case STRIX_SSM_RWKV_STABLE_LRP: lanes = n * d, per = l; break;
    }
    *work = lanes * per;
    return lanes;
}

/* Required slots of `op`: bit k of *in / *out set = in[k] / out[k] must be non-NULL. false for an
 * unknown op. */
static inline bool strix_ssm_slots(strix_ssm_op op, unsigned *in, unsigned *out) {
    switch (op) {
    case STRIX_SSM_MAMBA_FORWARD: *in = 0x3F, *out = 0x1F; return true;
    case STRIX_SSM_MAMBA_BACKWARD: *in = 0x7FF, *out = 0xF; return true;
    case STRIX_SSM_MAMBA_GRAD_BC: *in = 0x1F, *out = 0x3; return true;
    case STRIX_SSM_MAMBA_LRP: *in = 0xFF, *out = 0x3; return true;
    case STRIX_SSM_RWKV_TOKEN_SHIFT:
        *in = 0x7, *out = 0x3; /* mu_v/out[2] and x_prev (in[4]) optional: ops_ssm.c */
        return true;
    case STRIX_SSM_RWKV_SHIFT_BACKWARD:
        *in = 0x37, *out = 0x7; /* g_xv, mu_v, out[3] and x_prev (in[7]) optional */
        return true;
    case STRIX_SSM_RWKV_SHIFT_LRP: *in = 0xF, *out = 0x1; return true;
    case STRIX_SSM_RWKV_WKV_FORWARD: *in = 0x1F, *out = 0xFF; return true;
    case STRIX_SSM_RWKV_WKV_BACKWARD: *in = 0x3FF, *out = 0x1F; return true;
    case STRIX_SSM_RWKV_WKV_LRP: *in = 0xFF, *out = 0x1; return true;
    case STRIX_SSM_RETNET_FORWARD: *in = 0x7, *out = 0x3; return true;
    case STRIX_SSM_RETNET_STATE_GRAD: *in = 0x3, *out = 0x1; return true;
    case STRIX_SSM_RETNET_GRAD_QK: *in = 0xF, *out = 0x3; return true;
    case STRIX_SSM_RETNET_GRAD_V: *in = 0x3, *out = 0x1; return true;
    case STRIX_SSM_RETNET_SCORES: *in = 0x3, *out = 0x3; return true;
    case STRIX_SSM_RETNET_READOUT: *in = 0x3, *out = 0x1; return true;
    case STRIX_SSM_RETNET_LRP_INPUT: *in = 0x3FF, *out = 0x1; return true;
    case STRIX_SSM_STABILIZED_DIV: *in = 0x3, *out = 0x1; return true;
    case STRIX_SSM_REVERSE_TIME_SUM: *in = 0x1, *out = 0x1; return true;
    case STRIX_SSM_RWKV_STABLE_FORWARD: *in = 0x1F, *out = 0x3F; return true;
    case STRIX_SSM_RWKV_STABLE_BACKWARD: *in = 0x3FF, *out = 0x1F; return true;
    case STRIX_SSM_RWKV_STABLE_LRP: *in = 0x1FF, *out = 0x1; return true;
    }
    return false;
}

#endif
