/*
 * cases_recurrent.c - op-test cases of the recurrent-cell and state-space primitives
 * (include/strix/ops/recurrent.h, include/strix/ops/ssm.h; harness: tests/ops/op_harness.h).
 * Goldens: tools/ref/ops_recurrent_ref.py (float64 torch transcriptions of each recurrence, autograd for
 * every gradient, LSTM/GRU forward checked there against torch.nn.LSTMCell/GRUCell).
 *
 * The golden cases feed each op the golden values of its inputs, so every op is checked on its
 * own. The extra tests check: optional (NULL) slots read as zeros and outputs that alias inputs
 * (bit for bit); the exact edges (stab at 0 and -0, the reverse-time sum's order, gamma^(t-u) by
 * repeated multiplication, softplus's linear branch, unknown ops, empty sizes); conservation of
 * every LRP rule that conserves; and every backward family (RNN, LSTM, GRU, Mamba, RWKV WKV and
 * token shift, RetNet) against central differences of the backend's own forward.
 */
#include "ops/op_harness.h"
#include "kernels/ssm.h" /* the lane functions, for the row-order check */

// ---- golden runners ----------------------------------------------------------------------------

static void cell(op_run *run, strix_cell_op op, strix_cell_args *a, size_t n) {
    OK(strix_recurrent_cell(run->be, op, a, n));
}

static void run_rnn_lstm(op_run *run) {
    size_t n = count_of(run, "rnn_g");
    float eps = scalar(run, "eps");
    strix_cell_args a = {0};
    /* Elman RNN backward */
    float *dz = output(run, n);
    a = (strix_cell_args){{input(run, "rnn_g"), input(run, "rnn_dh_next"), input(run, "rnn_h")},
                          {dz}, 0.0f};
    cell(run, STRIX_CELL_RNN_BACKWARD, &a, n);
    collect(run, "rnn dz", "rnn_dz", dz, n, false);
    /* LSTM forward */
    float *i = input(run, "lstm_i"), *f = input(run, "lstm_f"), *g = input(run, "lstm_g");
    float *o = input(run, "lstm_o"), *c_prev = input(run, "lstm_c_prev");
    float *c = output(run, n), *tc = output(run, n), *h = output(run, n);
    a = (strix_cell_args){{i, f, g, o, c_prev}, {c, tc, h}, 0.0f};
    cell(run, STRIX_CELL_LSTM_FORWARD, &a, n);
    collect(run, "lstm c", "lstm_c", c, n, false);
    collect(run, "lstm tanh(c)", "lstm_tanh_c", tc, n, false);
    collect(run, "lstm h", "lstm_h", h, n, false);
    /* LSTM backward from the golden tanh(c) */
    float *d[5];
    for (int k = 0; k < 5; k++) d[k] = output(run, n);
    a = (strix_cell_args){{input(run, "lstm_g_h"), input(run, "lstm_dh_next"),
                           input(run, "lstm_dc_next"), i, f, g, o, input(run, "lstm_tanh_c"),
                           c_prev},
                          {d[0], d[1], d[2], d[3], d[4]},
                          0.0f};
    cell(run, STRIX_CELL_LSTM_BACKWARD, &a, n);
    static const char *const dnames[] = {"lstm_dz_i", "lstm_dz_f", "lstm_dz_g", "lstm_dz_o",
                                         "lstm_dc_prev"};
    for (int k = 0; k < 5; k++) collect(run, dnames[k], dnames[k], d[k], n, false);
    /* LSTM LRP from the golden c */
    float *r_g = output(run, n), *r_cp = output(run, n);
    a = (strix_cell_args){{input(run, "lstm_r"), input(run, "lstm_rh_next"),
                           input(run, "lstm_rc_next"), i, f, g, c_prev, input(run, "lstm_c")},
                          {r_g, r_cp},
                          eps};
    cell(run, STRIX_CELL_LSTM_LRP, &a, n);
    collect(run, "lstm R_g", "lstm_r_g", r_g, n, false);
    collect(run, "lstm R_c_prev", "lstm_r_c_prev", r_cp, n, false);
}

static void run_rnn_gru(op_run *run) {
    const tl_array *hp = need(run, "gru_h_prev");
    size_t rows = (size_t)hp->shape[0], hidden = (size_t)hp->shape[1], n = hp->count;
    float eps = scalar(run, "eps");
    float *z = input(run, "gru_z"), *r = input(run, "gru_r"), *hn = input(run, "gru_hn");
    float *h_prev = input(run, "gru_h_prev");
    /* forward */
    float *n_pre = output(run, n), *nn = output(run, n), *h = output(run, n);
    strix_cell_args a = {{z, r, input(run, "gru_n_x"), hn, h_prev}, {n_pre, nn, h}, 0.0f};
    cell(run, STRIX_CELL_GRU_FORWARD, &a, n);
    collect(run, "gru n_pre", "gru_n_pre", n_pre, n, false);
    collect(run, "gru n", "gru_n", nn, n, false);
    collect(run, "gru h", "gru_h", h, n, false);
    /* backward from the golden n */
    float *d[5];
    for (int k = 0; k < 5; k++) d[k] = output(run, n);
    a = (strix_cell_args){{input(run, "gru_g_h"), input(run, "gru_dh_next"), z, r,
                           input(run, "gru_n"), hn, h_prev},
                          {d[0], d[1], d[2], d[3], d[4]},
                          0.0f};
    cell(run, STRIX_CELL_GRU_BACKWARD, &a, n);
    static const char *const dnames[] = {"gru_dh_prev", "gru_dz_pre", "gru_dn_pre", "gru_dr_pre",
                                         "gru_dhn"};
    for (int k = 0; k < 5; k++) collect(run, dnames[k], dnames[k], d[k], n, false);
    /* LRP from the float32 forward values */
    float *direct = output(run, n), *r_n = output(run, n), *r_tb = output(run, n);
    a = (strix_cell_args){{input(run, "gru_lrp_r"), input(run, "gru_rh_next"), z, r,
                           input(run, "gru_n32"), hn, h_prev, input(run, "gru_h32"),
                           input(run, "gru_npre32")},
                          {direct, r_n, r_tb},
                          eps};
    cell(run, STRIX_CELL_GRU_LRP, &a, n);
    collect(run, "gru R_hprev direct", "gru_r_direct", direct, n, false);
    collect(run, "gru R_n", "gru_r_n", r_n, n, false);
    collect(run, "gru R_term_b", "gru_r_tb", r_tb, n, false);
    float *r_hprev = output(run, n);
    OK(strix_gru_lrp_hprev(run->be, h_prev, input(run, "gru_w_hn"), hn, input(run, "gru_rtb32"),
                           input(run, "gru_d32"), r_hprev, rows, hidden, eps));
    collect(run, "gru_lrp_hprev", "gru_r_hprev", r_hprev, n, false);
}

static strix_ssm_args ssm_dims(op_run *run, const char *seq, const char *state) {
    const tl_array *x = need(run, seq);
    strix_ssm_args a = {0};
    a.n = (size_t)x->shape[0], a.l = (size_t)x->shape[1], a.d = (size_t)x->shape[2];
    a.s = state ? (size_t)need(run, state)->shape[2] : 0;
    a.eps = scalar(run, "eps");
    return a;
}

static void ssm(op_run *run, strix_ssm_op op, const strix_ssm_args *a) {
    OK(strix_ssm_pass(run->be, op, a));
}

/* A malloc'ed host copy of n backend floats. */
static float *host_copy_of(op_run *run, const float *device, size_t n) {
    float *h = malloc(n * sizeof(float));
    assert_non_null(h);
    OK(strix_copy(run->be, h, device, n * sizeof(float), STRIX_COPY_D2H));
    return h;
}

static void run_ssm_mamba(op_run *run) {
    strix_ssm_args a = ssm_dims(run, "x", "B");
    size_t nld = a.n * a.l * a.d, nls = a.n * a.l * a.s, seq_s = nld * a.s;
    size_t st_n = a.n * (a.l + 1) * a.d * a.s;
    float *x = input(run, "x"), *z = input(run, "z"), *B = input(run, "B"), *C = input(run, "C");
    float *A = input(run, "A"), *Dv = input(run, "D");
    float *delta = output(run, nld), *abar = output(run, seq_s), *bbar = output(run, seq_s);
    float *states = output(run, st_n), *y = output(run, nld);
    strix_ssm_args f = a;
    f.in[0] = x, f.in[1] = z, f.in[2] = B, f.in[3] = C, f.in[4] = A, f.in[5] = Dv;
    f.out[0] = delta, f.out[1] = abar, f.out[2] = bbar, f.out[3] = states, f.out[4] = y;
    ssm(run, STRIX_SSM_MAMBA_FORWARD, &f);
    collect(run, "mamba delta", "delta", delta, nld, false);
    collect(run, "mamba Abar", "abar", abar, seq_s, false);
    collect(run, "mamba Bbar", "bbar", bbar, seq_s, false);
    collect(run, "mamba states", "states", states, st_n, false);
    collect(run, "mamba y", "y", y, nld, false);
    /* the optional h0 (in[6]): steps l1.. started from the state this backend wrote at l1 give
     * the same bits as the whole pass (first l1 steps of y2 copied from y) */
    {
        size_t l1 = a.l / 2, l2 = a.l - l1, ds = a.d * a.s;
        float *h0 = output(run, a.n * ds), *y2 = output(run, nld);
        float *part[4], *src[4] = {x, z, B, C};
        size_t w[4] = {a.d, a.d, a.s, a.s};
        OK(strix_copy_2d(run->be, h0, ds, states + l1 * ds, (a.l + 1) * ds, a.n, ds));
        for (int k = 0; k < 4; k++) {
            part[k] = output(run, a.n * l2 * w[k]);
            OK(strix_copy_2d(run->be, part[k], l2 * w[k], src[k] + l1 * w[k], a.l * w[k], a.n,
                             l2 * w[k]));
        }
        float *delta2 = output(run, a.n * l2 * a.d), *ab2 = output(run, a.n * l2 * ds);
        float *bb2 = output(run, a.n * l2 * ds), *st2 = output(run, a.n * (l2 + 1) * ds);
        float *yp = output(run, a.n * l2 * a.d);
        strix_ssm_args c = a;
        c.l = l2;
        c.in[0] = part[0], c.in[1] = part[1], c.in[2] = part[2], c.in[3] = part[3];
        c.in[4] = A, c.in[5] = Dv, c.in[6] = h0;
        c.out[0] = delta2, c.out[1] = ab2, c.out[2] = bb2, c.out[3] = st2, c.out[4] = yp;
        ssm(run, STRIX_SSM_MAMBA_FORWARD, &c);
        OK(strix_copy_2d(run->be, y2, a.l * a.d, y, a.l * a.d, a.n, l1 * a.d));
        OK(strix_copy_2d(run->be, y2 + l1 * a.d, a.l * a.d, yp, l2 * a.d, a.n, l2 * a.d));
        collect(run, "mamba y from h0 (chunked)", "y", y2, nld, false);
        float *yh = host_copy_of(run, y, nld), *y2h = host_copy_of(run, y2, nld);
        assert_memory_equal(yh, y2h, nld * sizeof(float));
        free(yh);
        free(y2h);
    }
    /* backward from the golden forward values */
    float *gy = input(run, "gy"), *g_delta = input(run, "delta"), *g_states = input(run, "states");
    float *g_abar = input(run, "abar"), *g_bbar = input(run, "bbar");
    float *dx = output(run, nld), *dz = output(run, nld), *dh = output(run, seq_s);
    float *a_terms = output(run, seq_s);
    strix_ssm_args b = a;
    const float *bin[] = {gy, x, g_delta, z, g_states, g_abar, g_bbar, B, C, A, Dv};
    for (int k = 0; k < 11; k++) b.in[k] = bin[k];
    b.out[0] = dx, b.out[1] = dz, b.out[2] = dh, b.out[3] = a_terms;
    ssm(run, STRIX_SSM_MAMBA_BACKWARD, &b);
    collect(run, "mamba dx_direct", "dx", dx, nld, false);
    collect(run, "mamba dz_delta", "dz", dz, nld, false);
    collect(run, "mamba dh", "dh", dh, seq_s, false);
    collect(run, "mamba A_terms", "a_terms", a_terms, seq_s, false);
    float *dA = output(run, a.d * a.s);
    strix_ssm_args rts = {0};
    rts.n = a.n, rts.l = a.l, rts.d = a.d * a.s, rts.in[0] = a_terms, rts.out[0] = dA;
    ssm(run, STRIX_SSM_REVERSE_TIME_SUM, &rts);
    collect(run, "mamba dA (reverse-time sum)", "dA", dA, a.d * a.s, false);
    float *dB = output(run, nls), *dC = output(run, nls);
    strix_ssm_args bc = a;
    bc.in[0] = gy, bc.in[1] = x, bc.in[2] = g_delta, bc.in[3] = g_states;
    bc.in[4] = input(run, "dh");
    bc.out[0] = dB, bc.out[1] = dC;
    ssm(run, STRIX_SSM_MAMBA_GRAD_BC, &bc);
    collect(run, "mamba dB", "dB", dB, nls, false);
    collect(run, "mamba dC", "dC", dC, nls, false);
    /* MambaLRP with R_y = y */
    float *g_y = input(run, "y"), *rx = output(run, nld), *rh = output(run, seq_s);
    strix_ssm_args r = a;
    const float *rin[] = {x, g_y, g_y, g_states, g_abar, g_bbar, C, Dv};
    for (int k = 0; k < 8; k++) r.in[k] = rin[k];
    r.out[0] = rx, r.out[1] = rh;
    ssm(run, STRIX_SSM_MAMBA_LRP, &r);
    collect(run, "mamba R_x", "r_x", rx, nld, false);
    collect(run, "mamba R_h", "r_h", rh, seq_s, false);
}

static void run_ssm_rwkv_shift(op_run *run) {
    strix_ssm_args a = ssm_dims(run, "x", NULL);
    size_t nld = a.n * a.l * a.d;
    float *x = input(run, "x"), *mr = input(run, "mu_r"), *mk = input(run, "mu_k");
    float *mv = input(run, "mu_v");
    float *mix[3] = {output(run, nld), output(run, nld), output(run, nld)};
    strix_ssm_args s = a;
    s.in[0] = x, s.in[1] = mr, s.in[2] = mk, s.in[3] = mv;
    s.out[0] = mix[0], s.out[1] = mix[1], s.out[2] = mix[2];
    ssm(run, STRIX_SSM_RWKV_TOKEN_SHIFT, &s);
    collect(run, "rwkv xr", "xr", mix[0], nld, false);
    collect(run, "rwkv xk", "xk", mix[1], nld, false);
    collect(run, "rwkv xv", "xv", mix[2], nld, false);
    float *dx = output(run, nld), *t[3] = {output(run, nld), output(run, nld), output(run, nld)};
    strix_ssm_args b = a;
    const float *bin[] = {x, input(run, "g_xr"), input(run, "g_xk"), input(run, "g_xv"),
                          mr, mk, mv};
    for (int k = 0; k < 7; k++) b.in[k] = bin[k];
    b.out[0] = dx, b.out[1] = t[0], b.out[2] = t[1], b.out[3] = t[2];
    ssm(run, STRIX_SSM_RWKV_SHIFT_BACKWARD, &b);
    collect(run, "rwkv shift dx", "shift_dx", dx, nld, false);
    collect(run, "rwkv mu_r terms", "mu_r_terms", t[0], nld, false);
    collect(run, "rwkv mu_k terms", "mu_k_terms", t[1], nld, false);
    collect(run, "rwkv mu_v terms", "mu_v_terms", t[2], nld, false);
    float *r_x = output(run, nld);
    strix_ssm_args l = a;
    l.in[0] = x, l.in[1] = input(run, "xv"), l.in[2] = input(run, "shift_r_m"), l.in[3] = mv;
    l.out[0] = r_x;
    ssm(run, STRIX_SSM_RWKV_SHIFT_LRP, &l);
    collect(run, "rwkv shift R_x", "shift_r_x", r_x, nld, false);
}

static void run_ssm_rwkv_wkv(op_run *run) {
    strix_ssm_args a = ssm_dims(run, "zr", NULL);
    size_t nld = a.n * a.l * a.d, st_n = a.n * (a.l + 1) * a.d;
    float *v = input(run, "v"), *w = input(run, "w");
    static const char *const fnames[] = {"r", "e", "den", "wkv", "kk", "a_states", "b_states",
                                         "gated"};
    float *fo[8];
    strix_ssm_args f = a;
    f.in[0] = input(run, "zr"), f.in[1] = input(run, "k"), f.in[2] = v;
    f.in[3] = input(run, "u"), f.in[4] = w;
    for (int k = 0; k < 8; k++) f.out[k] = fo[k] = output(run, k == 5 || k == 6 ? st_n : nld);
    ssm(run, STRIX_SSM_RWKV_WKV_FORWARD, &f);
    for (int k = 0; k < 8; k++)
        collect(run, fnames[k], fnames[k], fo[k], k == 5 || k == 6 ? st_n : nld, false);
    /* BPTT from the golden forward values */
    float *g_as = input(run, "a_states"), *g_den = input(run, "den"), *g_e = input(run, "e");
    float *g_wkv = input(run, "wkv"), *g_kk = input(run, "kk");
    static const char *const bnames[] = {"dzr", "dk", "dv", "u_terms", "w_terms"};
    float *bo[5];
    strix_ssm_args b = a;
    const float *bin[] = {input(run, "g"), input(run, "r"), v, g_e, g_kk, g_den, g_as,
                          input(run, "b_states"), g_wkv, w};
    for (int k = 0; k < 10; k++) b.in[k] = bin[k];
    for (int k = 0; k < 5; k++) b.out[k] = bo[k] = output(run, nld);
    ssm(run, STRIX_SSM_RWKV_WKV_BACKWARD, &b);
    for (int k = 0; k < 5; k++) collect(run, bnames[k], bnames[k], bo[k], nld, false);
    for (int k = 0; k < 2; k++) {
        float *sum = output(run, a.d);
        strix_ssm_args rts = {0};
        rts.n = a.n, rts.l = a.l, rts.d = a.d, rts.in[0] = bo[3 + k], rts.out[0] = sum;
        ssm(run, STRIX_SSM_REVERSE_TIME_SUM, &rts);
        collect(run, k ? "dw (reverse-time sum)" : "du (reverse-time sum)", k ? "dw" : "du", sum,
                a.d, false);
    }
    float *r_v = output(run, nld);
    strix_ssm_args l = a;
    const float *lin[] = {input(run, "r_wkv"), g_as, g_den, g_e, v, g_wkv, g_kk, w};
    for (int k = 0; k < 8; k++) l.in[k] = lin[k];
    l.out[0] = r_v;
    ssm(run, STRIX_SSM_RWKV_WKV_LRP, &l);
    collect(run, "wkv R_v", "r_v", r_v, nld, false);
}

static void run_ssm_retnet(op_run *run) {
    strix_ssm_args a = ssm_dims(run, "v", "q");
    a.gamma = scalar(run, "gamma");
    size_t nld = a.n * a.l * a.d, nls = a.n * a.l * a.s, nll = a.n * a.l * a.l;
    size_t st_n = a.n * (a.l + 1) * a.s * a.d, ds_n = nls * a.d;
    float *q = input(run, "q"), *k = input(run, "k"), *v = input(run, "v"), *gy = input(run, "gy");
    float *states = output(run, st_n), *y = output(run, nld);
    strix_ssm_args f = a;
    f.in[0] = q, f.in[1] = k, f.in[2] = v, f.out[0] = states, f.out[1] = y;
    ssm(run, STRIX_SSM_RETNET_FORWARD, &f);
    collect(run, "retnet states", "states", states, st_n, false);
    collect(run, "retnet y", "y", y, nld, false);
    float *ds = output(run, ds_n);
    strix_ssm_args sg = a;
    sg.in[0] = gy, sg.in[1] = q, sg.out[0] = ds;
    ssm(run, STRIX_SSM_RETNET_STATE_GRAD, &sg);
    collect(run, "retnet dS", "dS", ds, ds_n, false);
    float *g_ds = input(run, "dS"), *dq = output(run, nls), *dk = output(run, nls);
    strix_ssm_args qk = a;
    qk.in[0] = gy, qk.in[1] = input(run, "states"), qk.in[2] = g_ds, qk.in[3] = v;
    qk.out[0] = dq, qk.out[1] = dk;
    ssm(run, STRIX_SSM_RETNET_GRAD_QK, &qk);
    collect(run, "retnet dq", "dq", dq, nls, false);
    collect(run, "retnet dk", "dk", dk, nls, false);
    float *dv = output(run, nld);
    strix_ssm_args gv = a;
    gv.in[0] = g_ds, gv.in[1] = k, gv.out[0] = dv;
    ssm(run, STRIX_SSM_RETNET_GRAD_V, &gv);
    collect(run, "retnet dv", "dv", dv, nld, false);
    float *qk_out = output(run, nll), *g_out = output(run, nll);
    strix_ssm_args sc = a;
    sc.in[0] = q, sc.in[1] = k, sc.out[0] = qk_out, sc.out[1] = g_out;
    ssm(run, STRIX_SSM_RETNET_SCORES, &sc);
    collect(run, "retnet QK", "qk", qk_out, nll, false);
    collect(run, "retnet G", "g", g_out, nll, false);
    float *y_par = output(run, nld);
    strix_ssm_args ro = a;
    ro.in[0] = input(run, "g"), ro.in[1] = v, ro.out[0] = y_par;
    ssm(run, STRIX_SSM_RETNET_READOUT, &ro);
    collect(run, "retnet y (parallel readout)", "y", y_par, nld, false);
    float *r_x = output(run, nld);
    strix_ssm_args li = a;
    const float *lin[] = {input(run, "x"), input(run, "w_q"), input(run, "w_k"), input(run, "w_v"),
                          q, k, v, input(run, "r_q"), input(run, "r_k"), input(run, "r_v")};
    for (int j = 0; j < 10; j++) li.in[j] = lin[j];
    li.out[0] = r_x;
    ssm(run, STRIX_SSM_RETNET_LRP_INPUT, &li);
    collect(run, "retnet R_x", "r_x", r_x, nld, false);
    float *div_r = input(run, "div_r"), *div = output(run, nld);
    strix_ssm_args sd = a;
    sd.in[0] = div_r, sd.in[1] = input(run, "div_z"), sd.out[0] = div;
    ssm(run, STRIX_SSM_STABILIZED_DIV, &sd);
    collect(run, "stabilized div", "div_out", div, nld, false);
    sd.out[0] = div_r; /* in place over r */
    ssm(run, STRIX_SSM_STABILIZED_DIV, &sd);
    collect(run, "stabilized div (out == r)", "div_out", div_r, nld, false);
}

/* Every output is O(1) and a handful of float roundings (plus the float32 rounding of the golden
 * inputs) away from the float64 reference, so the default 1e-5 + 1e-4·|want| holds. */
const op_case ops_recurrent_cases[] = {
    {"rnn_cells", run_rnn_lstm, ATOL, RTOL},
    {"rnn_cells", run_rnn_gru, ATOL, RTOL},
    {"ssm_mamba", run_ssm_mamba, ATOL, RTOL},
    {"ssm_rwkv", run_ssm_rwkv_shift, ATOL, RTOL},
    {"ssm_rwkv", run_ssm_rwkv_wkv, ATOL, RTOL},
    {"ssm_retnet", run_ssm_retnet, ATOL, RTOL},
};
const size_t ops_recurrent_case_count = sizeof ops_recurrent_cases / sizeof ops_recurrent_cases[0];

// ---- host helpers ------------------------------------------------------------------------------

static double host_sum(const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return s;
}

static double host_abs_sum(const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += fabs(x[i]);
    return s;
}

static double host_dot(const float *x, const float *y, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * y[i];
    return s;
}

static float host_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// ---- finite differences ------------------------------------------------------------------------

/* A scalar loss of host inputs, evaluated through the backend's forward. */
typedef double (*fd_loss)(strix_backend *be, void *ctx);

#define FD_STEP 1e-2
#define FD_RTOL 1e-2
#define FD_ATOL 2e-3

/* Checks analytic[0..n) against central differences of f over the host floats x[0..n). The
 * step is measured as stored (float(x+h) - float(x-h)); the loss is summed in double. */
static bool fd_check(const char *label, strix_backend *be, fd_loss f, void *ctx, float *x,
                     size_t n, const float *analytic) {
    size_t bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        float keep = x[i];
        float xp = (float)(keep + FD_STEP), xm = (float)(keep - FD_STEP);
        x[i] = xp;
        double lp = f(be, ctx);
        x[i] = xm;
        double lm = f(be, ctx);
        x[i] = keep;
        double fd = (lp - lm) / ((double)xp - (double)xm);
        double err = fabs(fd - analytic[i]);
        if (err > worst) worst = err;
        if (err > FD_ATOL + FD_RTOL * fabs(fd)) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: analytic %.7g, finite difference %.7g\n", label, i,
                        analytic[i], fd);
            bad++;
        }
    }
    if (bad) fprintf(stderr, "%s: %zu of %zu off (max error %.3g)\n", label, bad, n, worst);
    return bad == 0;
}

/* Runs one cell op on host arrays: uploads in[k] (n floats, NULL stays NULL), runs, downloads
 * every non-NULL out[k] into host_out[k]. */
static void cell_host(strix_backend *be, strix_cell_op op, const float *const *in, int n_in,
                      float **host_out, int n_out, size_t n, float eps) {
    strix_cell_args a = {0};
    a.eps = eps;
    for (int k = 0; k < n_in; k++) a.in[k] = in[k] ? up(be, in[k], n) : NULL;
    for (int k = 0; k < n_out; k++) a.out[k] = host_out[k] ? up(be, host_out[k], n) : NULL;
    OK(strix_recurrent_cell(be, op, &a, n));
    for (int k = 0; k < n_out; k++)
        if (host_out[k]) down(be, host_out[k], a.out[k], n);
    for (int k = 0; k < n_in; k++) strix_free(be, (void *)a.in[k]);
    for (int k = 0; k < n_out; k++) strix_free(be, a.out[k]);
}

/* The same for one ssm op: in[k] of in_n[k] floats, out[k] of out_n[k] floats. */
static void ssm_host(strix_backend *be, strix_ssm_op op, const strix_ssm_args *dims,
                     const float *const *in, const size_t *in_n, int n_in, float **host_out,
                     const size_t *out_n, int n_out) {
    strix_ssm_args a = *dims;
    for (int k = 0; k < 12; k++) a.in[k] = NULL;
    for (int k = 0; k < 10; k++) a.out[k] = NULL;
    for (int k = 0; k < n_in; k++) a.in[k] = up(be, in[k], in_n[k]);
    for (int k = 0; k < n_out; k++) a.out[k] = tl_device_alloc(be, out_n[k] * sizeof(float));
    OK(strix_ssm_pass(be, op, &a));
    for (int k = 0; k < n_out; k++) down(be, host_out[k], a.out[k], out_n[k]);
    for (int k = 0; k < n_in; k++) strix_free(be, (void *)a.in[k]);
    for (int k = 0; k < n_out; k++) strix_free(be, a.out[k]);
}

static void reverse_time_sum_host(strix_backend *be, const float *terms, float *out, size_t n,
                                  size_t l, size_t c) {
    strix_ssm_args a = {0};
    a.n = n, a.l = l, a.d = c;
    size_t in_n = n * l * c;
    ssm_host(be, STRIX_SSM_REVERSE_TIME_SUM, &a, &terms, &in_n, 1, &out, &c, 1);
}

// ---- cells: finite differences -----------------------------------------------------------------

#define CELL_N 12

typedef struct rnn_fd {
    float z[CELL_N], g[CELL_N];
    bool relu; /* relu instead of tanh */
} rnn_fd;

/* L = Σ tanh(z)·g (relu(z)·g with relu), on the backend (strix_elementwise). */
static double rnn_loss(strix_backend *be, void *ctx) {
    rnn_fd *c = ctx;
    float h[CELL_N];
    float *dz = up(be, c->z, CELL_N), *dh = up(be, c->z, CELL_N);
    OK(strix_elementwise(be, c->relu ? STRIX_ACT_RELU : STRIX_ACT_TANH, dz, dh, CELL_N));
    down(be, h, dh, CELL_N);
    strix_free(be, dz), strix_free(be, dh);
    return host_dot(h, c->g, CELL_N);
}

typedef struct lstm_fd {
    float zi[CELL_N], zf[CELL_N], zg[CELL_N], zo[CELL_N], c_prev[CELL_N];
    float gh[CELL_N], gc[CELL_N];
} lstm_fd;

static void lstm_gates(const lstm_fd *c, float *i, float *f, float *g, float *o) {
    for (size_t k = 0; k < CELL_N; k++) {
        i[k] = host_sigmoid(c->zi[k]), f[k] = host_sigmoid(c->zf[k]);
        g[k] = tanhf(c->zg[k]), o[k] = host_sigmoid(c->zo[k]);
    }
}

/* L = Σ h·gh + Σ c·gc through LSTM_FORWARD. */
static double lstm_loss(strix_backend *be, void *ctx) {
    lstm_fd *c = ctx;
    float i[CELL_N], f[CELL_N], g[CELL_N], o[CELL_N], cc[CELL_N], tc[CELL_N], h[CELL_N];
    lstm_gates(c, i, f, g, o);
    const float *in[] = {i, f, g, o, c->c_prev};
    float *out[] = {cc, tc, h};
    cell_host(be, STRIX_CELL_LSTM_FORWARD, in, 5, out, 3, CELL_N, 0.0f);
    return host_dot(h, c->gh, CELL_N) + host_dot(cc, c->gc, CELL_N);
}

typedef struct gru_fd {
    float zz[CELL_N], zr[CELL_N], n_x[CELL_N], hn[CELL_N], h_prev[CELL_N], gh[CELL_N];
} gru_fd;

/* L = Σ h·gh through GRU_FORWARD. */
static double gru_loss(strix_backend *be, void *ctx) {
    gru_fd *c = ctx;
    float z[CELL_N], r[CELL_N], n_pre[CELL_N], n[CELL_N], h[CELL_N];
    for (size_t k = 0; k < CELL_N; k++)
        z[k] = host_sigmoid(c->zz[k]), r[k] = host_sigmoid(c->zr[k]);
    const float *in[] = {z, r, c->n_x, c->hn, c->h_prev};
    float *out[] = {n_pre, n, h};
    cell_host(be, STRIX_CELL_GRU_FORWARD, in, 5, out, 3, CELL_N, 0.0f);
    return host_dot(h, c->gh, CELL_N);
}

static void test_cells_finite_differences(void **state) {
    (void)state;
    FOR_EACH_BACKEND(be) {
        /* Elman RNN */
        rnn_fd rc = {.relu = false};
        tl_fill_uniform(rc.z, CELL_N, 1, -1.5f, 1.5f);
        tl_fill_uniform(rc.g, CELL_N, 2, -1.0f, 1.0f);
        float h[CELL_N], dz[CELL_N];
        for (size_t k = 0; k < CELL_N; k++) h[k] = tanhf(rc.z[k]);
        const float *rin[] = {rc.g, NULL, h};
        float *rout[] = {dz};
        cell_host(be, STRIX_CELL_RNN_BACKWARD, rin, 3, rout, 1, CELL_N, 0.0f);
        assert_true(fd_check("rnn dz", be, rnn_loss, &rc, rc.z, CELL_N, dz));

        /* Elman RNN with ReLU: central differences (no z within 1e-2 of the kink), and the
         * exact values: dz = g + dh_next where h > 0, exactly 0 where h = 0 (torch's
         * threshold_backward) */
        rnn_fd rr;
        tl_fill_uniform(rr.z, CELL_N, 3, -1.5f, 1.5f);
        tl_fill_uniform(rr.g, CELL_N, 4, -1.0f, 1.0f);
        for (size_t k = 0; k < CELL_N; k++)
            if (fabsf(rr.z[k]) < 0.05f) rr.z[k] = 0.3f;
        rr.relu = true;
        float hr[CELL_N], dzr[CELL_N], dn[CELL_N];
        tl_fill_uniform(dn, CELL_N, 5, -1.0f, 1.0f);
        for (size_t k = 0; k < CELL_N; k++) hr[k] = rr.z[k] > 0.0f ? rr.z[k] : 0.0f;
        const float *rrin[] = {rr.g, NULL, hr};
        float *rrout[] = {dzr};
        cell_host(be, STRIX_CELL_RNN_RELU_BACKWARD, rrin, 3, rrout, 1, CELL_N, 0.0f);
        assert_true(fd_check("rnn relu dz", be, rnn_loss, &rr, rr.z, CELL_N, dzr));
        const float *rrin2[] = {rr.g, dn, hr};
        cell_host(be, STRIX_CELL_RNN_RELU_BACKWARD, rrin2, 3, rrout, 1, CELL_N, 0.0f);
        for (size_t k = 0; k < CELL_N; k++) {
            float want = hr[k] > 0.0f ? rr.g[k] + dn[k] : 0.0f;
            assert_true(dzr[k] == want);
        }

        /* LSTM: every pre-activation and c_prev */
        lstm_fd lc;
        float *fields[] = {lc.zi, lc.zf, lc.zg, lc.zo, lc.c_prev, lc.gh, lc.gc};
        for (int k = 0; k < 7; k++) tl_fill_uniform(fields[k], CELL_N, 10 + k, -1.5f, 1.5f);
        float i[CELL_N], f[CELL_N], g[CELL_N], o[CELL_N], c[CELL_N], tc[CELL_N], hh[CELL_N];
        lstm_gates(&lc, i, f, g, o);
        const float *fin[] = {i, f, g, o, lc.c_prev};
        float *fout[] = {c, tc, hh};
        cell_host(be, STRIX_CELL_LSTM_FORWARD, fin, 5, fout, 3, CELL_N, 0.0f);
        float d[5][CELL_N];
        const float *bin[] = {lc.gh, NULL, lc.gc, i, f, g, o, tc, lc.c_prev};
        float *bout[] = {d[0], d[1], d[2], d[3], d[4]};
        cell_host(be, STRIX_CELL_LSTM_BACKWARD, bin, 9, bout, 5, CELL_N, 0.0f);
        static const char *const lnames[] = {"lstm dz_i", "lstm dz_f", "lstm dz_g", "lstm dz_o",
                                             "lstm dc_prev"};
        for (int k = 0; k < 5; k++)
            assert_true(fd_check(lnames[k], be, lstm_loss, &lc, fields[k], CELL_N, d[k]));

        /* GRU: both gate pre-activations, n_x (= n_pre), hn and h_prev's direct path */
        gru_fd gc;
        float *gfields[] = {gc.zz, gc.zr, gc.n_x, gc.hn, gc.h_prev, gc.gh};
        for (int k = 0; k < 6; k++) tl_fill_uniform(gfields[k], CELL_N, 20 + k, -1.5f, 1.5f);
        float z[CELL_N], r[CELL_N], n_pre[CELL_N], n[CELL_N], hg[CELL_N];
        for (size_t k = 0; k < CELL_N; k++)
            z[k] = host_sigmoid(gc.zz[k]), r[k] = host_sigmoid(gc.zr[k]);
        const float *gin[] = {z, r, gc.n_x, gc.hn, gc.h_prev};
        float *gout[] = {n_pre, n, hg};
        cell_host(be, STRIX_CELL_GRU_FORWARD, gin, 5, gout, 3, CELL_N, 0.0f);
        float gd[5][CELL_N]; /* dh_prev, dz_pre, dn_pre, dr_pre, dhn */
        const float *gbin[] = {gc.gh, NULL, z, r, n, gc.hn, gc.h_prev};
        float *gbout[] = {gd[0], gd[1], gd[2], gd[3], gd[4]};
        cell_host(be, STRIX_CELL_GRU_BACKWARD, gbin, 7, gbout, 5, CELL_N, 0.0f);
        assert_true(fd_check("gru dh_prev", be, gru_loss, &gc, gc.h_prev, CELL_N, gd[0]));
        assert_true(fd_check("gru dz_pre", be, gru_loss, &gc, gc.zz, CELL_N, gd[1]));
        assert_true(fd_check("gru dn_pre", be, gru_loss, &gc, gc.n_x, CELL_N, gd[2]));
        assert_true(fd_check("gru dr_pre", be, gru_loss, &gc, gc.zr, CELL_N, gd[3]));
        assert_true(fd_check("gru dhn", be, gru_loss, &gc, gc.hn, CELL_N, gd[4]));
    }
}

// ---- cells: optional slots, aliasing, conservation ---------------------------------------------

static void test_cells_optional_and_aliasing(void **state) {
    (void)state;
    enum { NN = 9 };
    float v[10][NN], zeros[NN] = {0};
    for (int k = 0; k < 10; k++) tl_fill_uniform(v[k], NN, 100 + k, 0.05f, 0.95f);
    struct {
        strix_cell_op op;
        int n_in, n_out;
        unsigned optional; /* slots that may be NULL */
    } ops[] = {
        {STRIX_CELL_RNN_BACKWARD, 3, 1, 0x2},   {STRIX_CELL_LSTM_FORWARD, 5, 3, 0x10},
        {STRIX_CELL_LSTM_BACKWARD, 9, 5, 0x106}, {STRIX_CELL_LSTM_LRP, 8, 2, 0x46},
        {STRIX_CELL_GRU_FORWARD, 5, 3, 0x10},   {STRIX_CELL_GRU_BACKWARD, 7, 5, 0x42},
        {STRIX_CELL_GRU_LRP, 9, 3, 0x42},       {STRIX_CELL_RNN_RELU_BACKWARD, 3, 1, 0x2},
    };
    FOR_EACH_BACKEND(be) {
        for (size_t c = 0; c < sizeof ops / sizeof ops[0]; c++) {
            int ni = ops[c].n_in, no = ops[c].n_out;
            float want[6][NN], got[6][NN], alias[6][NN];
            float *want_p[6], *got_p[6];
            const float *in_zero[10], *in_null[10];
            for (int k = 0; k < no; k++) want_p[k] = want[k], got_p[k] = got[k];
            for (int k = 0; k < ni; k++) {
                bool opt = ops[c].optional >> k & 1u;
                in_zero[k] = opt ? zeros : v[k];
                in_null[k] = opt ? NULL : v[k];
            }
            cell_host(be, ops[c].op, in_zero, ni, want_p, no, NN, 0.01f);
            cell_host(be, ops[c].op, in_null, ni, got_p, no, NN, 0.01f);
            for (int k = 0; k < no; k++)
                assert_true(tl_check_bits("NULL slot reads as 0", got[k], want[k], NN));
            /* every output written over the last inputs (out[k] == in[ni-1-k]) */
            strix_cell_args a = {0};
            a.eps = 0.01f;
            for (int k = 0; k < ni; k++) a.in[k] = up(be, in_zero[k], NN);
            for (int k = 0; k < no; k++) a.out[k] = (float *)a.in[ni - 1 - k];
            OK(strix_recurrent_cell(be, ops[c].op, &a, NN));
            for (int k = 0; k < no; k++) {
                down(be, alias[k], a.out[k], NN);
                assert_true(tl_check_bits("output aliasing an input", alias[k], want[k], NN));
            }
            for (int k = 0; k < ni; k++) strix_free(be, (void *)a.in[k]);
        }
    }
}

static void test_cells_lrp_conservation(void **state) {
    (void)state;
    enum { R = 3, H = 6, NN = R * H };
    const float eps = 1e-6f;
    FOR_EACH_BACKEND(be) {
        /* LSTM: R_g + R_c_prev = (r + R_h_next + R_c_next)·c/stab(c) */
        float gi[NN], gf[NN], gg[NN], cp[NN], r[NN], rhn[NN], rcn[NN];
        tl_fill_uniform(gi, NN, 1, 0.1f, 0.9f), tl_fill_uniform(gf, NN, 2, 0.1f, 0.9f);
        tl_fill_uniform(gg, NN, 3, 0.2f, 0.9f), tl_fill_uniform(cp, NN, 4, 0.2f, 1.0f);
        tl_fill_uniform(r, NN, 5, -1.0f, 1.0f), tl_fill_uniform(rhn, NN, 6, -1.0f, 1.0f);
        tl_fill_uniform(rcn, NN, 7, -1.0f, 1.0f);
        float c[NN], r_g[NN], r_cp[NN];
        for (int k = 0; k < NN; k++) c[k] = gf[k] * cp[k] + gi[k] * gg[k];
        const float *lin[] = {r, rhn, rcn, gi, gf, gg, cp, c};
        float *lout[] = {r_g, r_cp};
        cell_host(be, STRIX_CELL_LSTM_LRP, lin, 8, lout, 2, NN, eps);
        for (int k = 0; k < NN; k++) {
            double rc = (double)r[k] + rhn[k] + rcn[k];
            assert_true(fabs(r_g[k] + r_cp[k] - rc) <= 1e-4 * (fabs(rc) + 1e-3));
        }

        /* GRU with zero biases: Rh -> direct + R_n; R_n -> R_term_b + n_x's share; R_term_b
         * through h_prev·W_hn conserves row by row. */
        float h_prev[NN], w[H * H], z[NN], rr[NN], n_x[NN], hn[NN], n_pre[NN], n[NN], h[NN];
        tl_fill_uniform(h_prev, NN, 11, 0.2f, 1.0f), tl_fill_uniform(w, H * H, 12, 0.1f, 0.8f);
        tl_fill_uniform(z, NN, 13, 0.1f, 0.9f), tl_fill_uniform(rr, NN, 14, 0.1f, 0.9f);
        tl_fill_uniform(n_x, NN, 15, 0.1f, 0.5f);
        for (int row = 0; row < R; row++)
            for (int k = 0; k < H; k++) {
                float acc = 0.0f;
                for (int kk = 0; kk < H; kk++) acc += h_prev[row * H + kk] * w[kk * H + k];
                hn[row * H + k] = acc;
            }
        const float *fin[] = {z, rr, n_x, hn, h_prev};
        float *fout[] = {n_pre, n, h};
        cell_host(be, STRIX_CELL_GRU_FORWARD, fin, 5, fout, 3, NN, 0.0f);
        float direct[NN], r_n[NN], r_tb[NN];
        const float *gin[] = {r, rhn, z, rr, n, hn, h_prev, h, n_pre};
        float *gout[] = {direct, r_n, r_tb};
        cell_host(be, STRIX_CELL_GRU_LRP, gin, 9, gout, 3, NN, eps);
        for (int k = 0; k < NN; k++) {
            double rh = (double)r[k] + rhn[k];
            assert_true(fabs(direct[k] + r_n[k] - rh) <= 1e-4 * (fabs(rh) + 1e-3));
            double r_nx = (double)n_x[k] / n_pre[k] * r_n[k];
            assert_true(fabs(r_tb[k] + r_nx - r_n[k]) <= 1e-4 * (fabs(r_n[k]) + 1e-3));
        }
        float r_hprev[NN];
        float *dh = up(be, h_prev, NN), *dw = up(be, w, H * H), *dhn = up(be, hn, NN);
        float *dtb = up(be, r_tb, NN), *dout = up(be, r_tb, NN);
        OK(strix_gru_lrp_hprev(be, dh, dw, dhn, dtb, NULL, dout, R, H, eps));
        down(be, r_hprev, dout, NN);
        for (int row = 0; row < R; row++) {
            double got = host_sum(r_hprev + row * H, H), want = host_sum(r_tb + row * H, H);
            assert_true(fabs(got - want) <= 1e-4 * (host_abs_sum(r_tb + row * H, H) + 1e-3));
        }
        strix_free(be, dh), strix_free(be, dw), strix_free(be, dhn), strix_free(be, dtb);
        strix_free(be, dout);
    }
}

/* gru_lrp_hprev's documented order, bit for bit: k ascending from 0.0f, direct[kk] added just
 * before the k = kk term (large direct values make any other position round differently). */
static void test_gru_lrp_hprev_order(void **state) {
    (void)state;
    enum { R = 2, H = 9, NN = R * H };
    const float eps = 0.01f;
    float h_prev[NN], w[H * H], hn[NN], r_tb[NN], direct[NN], want[NN], got[NN];
    tl_fill_uniform(h_prev, NN, 81, -1.0f, 1.0f), tl_fill_uniform(w, H * H, 82, -1.0f, 1.0f);
    tl_fill_uniform(hn, NN, 83, -1.0f, 1.0f), tl_fill_uniform(r_tb, NN, 84, -1.0f, 1.0f);
    tl_fill_uniform(direct, NN, 85, 100.0f, 1000.0f);
    for (int row = 0; row < R; row++)
        for (int kk = 0; kk < H; kk++) {
            float acc = 0.0f;
            for (int k = 0; k < H; k++) {
                if (k == kk) acc += direct[row * H + kk];
                float den = hn[row * H + k] + (hn[row * H + k] >= 0.0f ? eps : -eps);
                acc += (h_prev[row * H + kk] * w[kk * H + k] / den) * r_tb[row * H + k];
            }
            want[row * H + kk] = acc;
        }
    FOR_EACH_BACKEND(be) {
        float *dh = up(be, h_prev, NN), *dw = up(be, w, H * H), *dhn = up(be, hn, NN);
        float *dtb = up(be, r_tb, NN), *dd = up(be, direct, NN), *dout = up(be, r_tb, NN);
        OK(strix_gru_lrp_hprev(be, dh, dw, dhn, dtb, dd, dout, R, H, eps));
        down(be, got, dout, NN);
        assert_true(tl_check_bits("gru_lrp_hprev order", got, want, NN));
        strix_free(be, dh), strix_free(be, dw), strix_free(be, dhn), strix_free(be, dtb);
        strix_free(be, dd), strix_free(be, dout);
    }
}

// ---- Mamba -------------------------------------------------------------------------------------

enum { SN = 2, SL = 5, SD = 3, SS = 4 };
#define NLD (SN * SL * SD)
#define NLS (SN * SL * SS)
#define NLDS (NLD * SS)
#define MST (SN * (SL + 1) * SD * SS)

typedef struct mamba_host {
    float x[NLD], z[NLD], B[NLS], C[NLS], A[SD * SS], Dv[SD], gy[NLD];
    float delta[NLD], abar[NLDS], bbar[NLDS], states[MST], y[NLD];
} mamba_host;

static const strix_ssm_args mamba_dims = {.n = SN, .l = SL, .d = SD, .s = SS};

static void mamba_forward_host(strix_backend *be, mamba_host *m) {
    const float *in[] = {m->x, m->z, m->B, m->C, m->A, m->Dv};
    const size_t in_n[] = {NLD, NLD, NLS, NLS, SD * SS, SD};
    float *out[] = {m->delta, m->abar, m->bbar, m->states, m->y};
    const size_t out_n[] = {NLD, NLDS, NLDS, MST, NLD};
    ssm_host(be, STRIX_SSM_MAMBA_FORWARD, &mamba_dims, in, in_n, 6, out, out_n, 5);
}

static double mamba_loss(strix_backend *be, void *ctx) {
    mamba_host *m = ctx;
    mamba_forward_host(be, m);
    return host_dot(m->y, m->gy, NLD);
}

static void mamba_init(mamba_host *m) {
    tl_fill_uniform(m->x, NLD, 31, -1.0f, 1.0f), tl_fill_uniform(m->z, NLD, 32, -1.5f, 1.5f);
    tl_fill_uniform(m->B, NLS, 33, -1.0f, 1.0f), tl_fill_uniform(m->C, NLS, 34, -1.0f, 1.0f);
    tl_fill_uniform(m->A, SD * SS, 35, -1.5f, -0.2f), tl_fill_uniform(m->Dv, SD, 36, -1.0f, 1.0f);
    tl_fill_uniform(m->gy, NLD, 37, -1.0f, 1.0f);
}

static void test_mamba_finite_differences(void **state) {
    (void)state;
    mamba_host *m = malloc(sizeof *m);
    FOR_EACH_BACKEND(be) {
        mamba_init(m);
        mamba_forward_host(be, m);
        float dx[NLD], dz[NLD], dh[NLDS], a_terms[NLDS], dB[NLS], dC[NLS], dA[SD * SS];
        const float *bin[] = {m->gy, m->x, m->delta, m->z, m->states, m->abar, m->bbar,
                              m->B, m->C, m->A, m->Dv};
        const size_t bin_n[] = {NLD, NLD, NLD, NLD, MST, NLDS, NLDS, NLS, NLS, SD * SS, SD};
        float *bout[] = {dx, dz, dh, a_terms};
        const size_t bout_n[] = {NLD, NLD, NLDS, NLDS};
        ssm_host(be, STRIX_SSM_MAMBA_BACKWARD, &mamba_dims, bin, bin_n, 11, bout, bout_n, 4);
        const float *cin[] = {m->gy, m->x, m->delta, m->states, dh};
        const size_t cin_n[] = {NLD, NLD, NLD, MST, NLDS};
        float *cout[] = {dB, dC};
        const size_t cout_n[] = {NLS, NLS};
        ssm_host(be, STRIX_SSM_MAMBA_GRAD_BC, &mamba_dims, cin, cin_n, 5, cout, cout_n, 2);
        reverse_time_sum_host(be, a_terms, dA, SN, SL, SD * SS);
        assert_true(fd_check("mamba dx_direct", be, mamba_loss, m, m->x, NLD, dx));
        assert_true(fd_check("mamba dz_delta", be, mamba_loss, m, m->z, NLD, dz));
        assert_true(fd_check("mamba dB", be, mamba_loss, m, m->B, NLS, dB));
        assert_true(fd_check("mamba dC", be, mamba_loss, m, m->C, NLS, dC));
        assert_true(fd_check("mamba dA", be, mamba_loss, m, m->A, SD * SS, dA));
    }
    free(m);
}

static void test_mamba_lrp_conservation(void **state) {
    (void)state;
    mamba_host *m = malloc(sizeof *m);
    FOR_EACH_BACKEND(be) {
        mamba_init(m);
        mamba_forward_host(be, m);
        float rx[NLD], rh[NLDS];
        strix_ssm_args dims = mamba_dims;
        dims.eps = 1e-6f;
        const float *in[] = {m->x, m->y, m->y, m->states, m->abar, m->bbar, m->C, m->Dv};
        const size_t in_n[] = {NLD, NLD, NLD, MST, NLDS, NLDS, NLS, SD};
        float *out[] = {rx, rh};
        const size_t out_n[] = {NLD, NLDS};
        ssm_host(be, STRIX_SSM_MAMBA_LRP, &dims, in, in_n, 8, out, out_n, 2);
        double got = host_sum(rx, NLD), want = host_sum(m->y, NLD);
        printf("  MambaLRP (h0 = 0): sum R_x %.7g, sum R_y %.7g\n", got, want);
        assert_true(fabs(got - want) <= 1e-4 * host_abs_sum(m->y, NLD));
        /* softplus's linear branch gives delta = z exactly */
        m->z[7] = 25.0f;
        mamba_forward_host(be, m);
        assert_true(m->delta[7] == 25.0f);
    }
    free(m);
}

// ---- RWKV --------------------------------------------------------------------------------------

#define WST (SN * (SL + 1) * SD)

typedef struct rwkv_host {
    float zr[NLD], k[NLD], v[NLD], u[SD], w[SD], g[NLD];
    float r[NLD], e[NLD], den[NLD], wkv[NLD], kk[NLD], as[WST], bs[WST], gated[NLD];
    float x[NLD], mu[3][SD], gm[3][NLD], mix[3][NLD];
} rwkv_host;

static const strix_ssm_args rwkv_dims = {.n = SN, .l = SL, .d = SD};

static void wkv_forward_host(strix_backend *be, rwkv_host *h) {
    const float *in[] = {h->zr, h->k, h->v, h->u, h->w};
    const size_t in_n[] = {NLD, NLD, NLD, SD, SD};
    float *out[] = {h->r, h->e, h->den, h->wkv, h->kk, h->as, h->bs, h->gated};
    const size_t out_n[] = {NLD, NLD, NLD, NLD, NLD, WST, WST, NLD};
    ssm_host(be, STRIX_SSM_RWKV_WKV_FORWARD, &rwkv_dims, in, in_n, 5, out, out_n, 8);
}

static double wkv_loss(strix_backend *be, void *ctx) {
    rwkv_host *h = ctx;
    wkv_forward_host(be, h);
    return host_dot(h->gated, h->g, NLD);
}

static void shift_forward_host(strix_backend *be, rwkv_host *h) {
    const float *in[] = {h->x, h->mu[0], h->mu[1], h->mu[2]};
    const size_t in_n[] = {NLD, SD, SD, SD};
    float *out[] = {h->mix[0], h->mix[1], h->mix[2]};
    const size_t out_n[] = {NLD, NLD, NLD};
    ssm_host(be, STRIX_SSM_RWKV_TOKEN_SHIFT, &rwkv_dims, in, in_n, 4, out, out_n, 3);
}

static double shift_loss(strix_backend *be, void *ctx) {
    rwkv_host *h = ctx;
    shift_forward_host(be, h);
    double s = 0.0;
    for (int m = 0; m < 3; m++) s += host_dot(h->mix[m], h->gm[m], NLD);
    return s;
}

static void rwkv_init(rwkv_host *h) {
    tl_fill_uniform(h->zr, NLD, 41, -1.5f, 1.5f), tl_fill_uniform(h->k, NLD, 42, -1.0f, 1.0f);
    tl_fill_uniform(h->v, NLD, 43, -1.0f, 1.0f), tl_fill_uniform(h->u, SD, 44, -0.5f, 0.5f);
    tl_fill_uniform(h->w, SD, 45, -0.5f, 1.0f), tl_fill_uniform(h->g, NLD, 46, -1.0f, 1.0f);
    tl_fill_uniform(h->x, NLD, 47, -1.0f, 1.0f);
    for (int m = 0; m < 3; m++) {
        tl_fill_uniform(h->mu[m], SD, 48 + (uint64_t)m, 0.1f, 0.9f);
        tl_fill_uniform(h->gm[m], NLD, 51 + (uint64_t)m, -1.0f, 1.0f);
    }
}

static void test_rwkv_finite_differences(void **state) {
    (void)state;
    rwkv_host *h = malloc(sizeof *h);
    FOR_EACH_BACKEND(be) {
        rwkv_init(h);
        wkv_forward_host(be, h);
        float d[5][NLD], du[SD], dw[SD];
        const float *bin[] = {h->g, h->r, h->v, h->e, h->kk, h->den, h->as, h->bs, h->wkv, h->w};
        const size_t bin_n[] = {NLD, NLD, NLD, NLD, NLD, NLD, WST, WST, NLD, SD};
        float *bout[] = {d[0], d[1], d[2], d[3], d[4]};
        const size_t bout_n[] = {NLD, NLD, NLD, NLD, NLD};
        ssm_host(be, STRIX_SSM_RWKV_WKV_BACKWARD, &rwkv_dims, bin, bin_n, 10, bout, bout_n, 5);
        reverse_time_sum_host(be, d[3], du, SN, SL, SD);
        reverse_time_sum_host(be, d[4], dw, SN, SL, SD);
        assert_true(fd_check("wkv dz_r", be, wkv_loss, h, h->zr, NLD, d[0]));
        assert_true(fd_check("wkv dk", be, wkv_loss, h, h->k, NLD, d[1]));
        assert_true(fd_check("wkv dv", be, wkv_loss, h, h->v, NLD, d[2]));
        assert_true(fd_check("wkv du", be, wkv_loss, h, h->u, SD, du));
        assert_true(fd_check("wkv dw", be, wkv_loss, h, h->w, SD, dw));

        float dx[NLD], t[3][NLD], dmu[3][SD];
        const float *sin_[] = {h->x, h->gm[0], h->gm[1], h->gm[2], h->mu[0], h->mu[1], h->mu[2]};
        const size_t sin_n[] = {NLD, NLD, NLD, NLD, SD, SD, SD};
        float *sout[] = {dx, t[0], t[1], t[2]};
        const size_t sout_n[] = {NLD, NLD, NLD, NLD};
        ssm_host(be, STRIX_SSM_RWKV_SHIFT_BACKWARD, &rwkv_dims, sin_, sin_n, 7, sout, sout_n, 4);
        assert_true(fd_check("token shift dx", be, shift_loss, h, h->x, NLD, dx));
        for (int m = 0; m < 3; m++) {
            reverse_time_sum_host(be, t[m], dmu[m], SN, SL, SD);
            assert_true(fd_check("token shift dmu", be, shift_loss, h, h->mu[m], SD, dmu[m]));
        }
    }
    free(h);
}

static void test_rwkv_lrp_conservation(void **state) {
    (void)state;
    rwkv_host *h = malloc(sizeof *h);
    FOR_EACH_BACKEND(be) {
        rwkv_init(h);
        /* positive values keep every denominator away from 0 */
        for (int i = 0; i < NLD; i++) h->v[i] = fabsf(h->v[i]) + 0.1f;
        wkv_forward_host(be, h);
        float r_v[NLD];
        strix_ssm_args dims = rwkv_dims;
        dims.eps = 1e-6f;
        const float *in[] = {h->gated, h->as, h->den, h->e, h->v, h->wkv, h->kk, h->w};
        const size_t in_n[] = {NLD, WST, NLD, NLD, NLD, NLD, NLD, SD};
        float *out[] = {r_v};
        const size_t out_n[] = {NLD};
        ssm_host(be, STRIX_SSM_RWKV_WKV_LRP, &dims, in, in_n, 8, out, out_n, 1);
        double got = host_sum(r_v, NLD), want = host_sum(h->gated, NLD);
        printf("  WKV LRP (a_0 = 0): sum R_v %.7g, sum R_wkv %.7g\n", got, want);
        assert_true(fabs(got - want) <= 1e-4 * host_abs_sum(h->gated, NLD));

        /* token shift: Σ R_x = Σ R_m (x_{-1} = 0 takes nothing) */
        for (int i = 0; i < NLD; i++) h->x[i] = fabsf(h->x[i]) + 0.1f;
        shift_forward_host(be, h);
        float r_x[NLD];
        const float *sin_[] = {h->x, h->mix[2], h->gm[2], h->mu[2]};
        const size_t sin_n[] = {NLD, NLD, NLD, SD};
        float *sout[] = {r_x};
        ssm_host(be, STRIX_SSM_RWKV_SHIFT_LRP, &dims, sin_, sin_n, 4, sout, out_n, 1);
        got = host_sum(r_x, NLD), want = host_sum(h->gm[2], NLD);
        assert_true(fabs(got - want) <= 1e-4 * host_abs_sum(h->gm[2], NLD));
    }
    free(h);
}

// ---- RWKV, stable WKV and the token shift's state row ------------------------------------------

#define SST (SN * (SL + 1) * SD)

/* ssm_host with NULL inputs (optional slots) passed as NULL. */
static void ssm_host_opt(strix_backend *be, strix_ssm_op op, const strix_ssm_args *dims,
                         const float *const *in, const size_t *in_n, int n_in, float **host_out,
                         const size_t *out_n, int n_out) {
    strix_ssm_args a = *dims;
    for (int k = 0; k < 12; k++) a.in[k] = NULL;
    for (int k = 0; k < 10; k++) a.out[k] = NULL;
    for (int k = 0; k < n_in; k++) a.in[k] = in[k] ? up(be, in[k], in_n[k]) : NULL;
    for (int k = 0; k < n_out; k++)
        a.out[k] = host_out[k] ? tl_device_alloc(be, out_n[k] * sizeof(float)) : NULL;
    OK(strix_ssm_pass(be, op, &a));
    for (int k = 0; k < n_out; k++)
        if (host_out[k]) down(be, host_out[k], a.out[k], out_n[k]);
    for (int k = 0; k < n_in; k++) strix_free(be, (void *)a.in[k]);
    for (int k = 0; k < n_out; k++) strix_free(be, a.out[k]);
}

typedef struct stable_host {
    float zr[NLD], k[NLD], v[NLD], u[SD], td[SD], g[NLD], p0[SN * SD], q0[SN * SD], o0[SN * SD];
    float r[NLD], wkv[NLD], gated[NLD], P[SST], Q[SST], O[SST];
    bool with_state;
    /* token shift with a state row, two mixes */
    float x[NLD], x_prev[SN * SD], mu[2][SD], gm[2][NLD], mix[2][NLD];
} stable_host;

static void stable_forward_host(strix_backend *be, stable_host *h) {
    const float *in[] = {h->zr, h->k, h->v, h->u, h->td, h->with_state ? h->p0 : NULL,
                         h->with_state ? h->q0 : NULL, h->with_state ? h->o0 : NULL};
    const size_t in_n[] = {NLD, NLD, NLD, SD, SD, SN * SD, SN * SD, SN * SD};
    float *out[] = {h->r, h->wkv, h->gated, h->P, h->Q, h->O};
    const size_t out_n[] = {NLD, NLD, NLD, SST, SST, SST};
    ssm_host_opt(be, STRIX_SSM_RWKV_STABLE_FORWARD, &rwkv_dims, in, in_n, 8, out, out_n, 6);
}

static double stable_loss(strix_backend *be, void *ctx) {
    stable_host *h = ctx;
    stable_forward_host(be, h);
    return host_dot(h->gated, h->g, NLD);
}

static void shift2_forward_host(strix_backend *be, stable_host *h) {
    const float *in[] = {h->x, h->mu[0], h->mu[1], NULL, h->x_prev};
    const size_t in_n[] = {NLD, SD, SD, SD, SN * SD};
    float *out[] = {h->mix[0], h->mix[1], NULL};
    const size_t out_n[] = {NLD, NLD, NLD};
    ssm_host_opt(be, STRIX_SSM_RWKV_TOKEN_SHIFT, &rwkv_dims, in, in_n, 5, out, out_n, 3);
}

static double shift2_loss(strix_backend *be, void *ctx) {
    stable_host *h = ctx;
    shift2_forward_host(be, h);
    return host_dot(h->mix[0], h->gm[0], NLD) + host_dot(h->mix[1], h->gm[1], NLD);
}

static void stable_init(stable_host *h, bool with_state) {
    tl_fill_uniform(h->zr, NLD, 141, -1.5f, 1.5f), tl_fill_uniform(h->k, NLD, 142, -2.0f, 2.0f);
    tl_fill_uniform(h->v, NLD, 143, -1.0f, 1.0f), tl_fill_uniform(h->u, SD, 144, -0.5f, 0.5f);
    tl_fill_uniform(h->td, SD, 145, -1.0f, 0.5f), tl_fill_uniform(h->g, NLD, 146, -1.0f, 1.0f);
    /* a state as a previous chunk leaves it: q >= 1, |p| <= q, a finite max */
    tl_fill_uniform(h->q0, SN * SD, 147, 1.0f, 3.0f);
    tl_fill_uniform(h->p0, SN * SD, 148, -1.0f, 1.0f);
    tl_fill_uniform(h->o0, SN * SD, 149, -1.0f, 1.0f);
    h->with_state = with_state;
    tl_fill_uniform(h->x, NLD, 150, -1.0f, 1.0f);
    tl_fill_uniform(h->x_prev, SN * SD, 151, -1.0f, 1.0f);
    for (int m = 0; m < 2; m++) {
        tl_fill_uniform(h->mu[m], SD, 152 + (uint64_t)m, 0.1f, 0.9f);
        tl_fill_uniform(h->gm[m], NLD, 154 + (uint64_t)m, -1.0f, 1.0f);
    }
}

/* The stable WKV's BPTT (fresh and continued from a state) and the token shift with a state row
 * and two mixes against central differences of the backend's forward. */
static void test_rwkv_stable_finite_differences(void **state) {
    (void)state;
    stable_host *h = malloc(sizeof *h);
    FOR_EACH_BACKEND(be) {
        for (int with_state = 0; with_state < 2; with_state++) {
            stable_init(h, with_state);
            stable_forward_host(be, h);
            float d[5][NLD], du[SD], dtd[SD];
            const float *bin[] = {h->g, h->r, h->k, h->v, h->wkv, h->P, h->Q, h->O, h->u, h->td};
            const size_t bin_n[] = {NLD, NLD, NLD, NLD, NLD, SST, SST, SST, SD, SD};
            float *bout[] = {d[0], d[1], d[2], d[3], d[4]};
            const size_t bout_n[] = {NLD, NLD, NLD, NLD, NLD};
            ssm_host(be, STRIX_SSM_RWKV_STABLE_BACKWARD, &rwkv_dims, bin, bin_n, 10, bout, bout_n,
                     5);
            reverse_time_sum_host(be, d[3], du, SN, SL, SD);
            reverse_time_sum_host(be, d[4], dtd, SN, SL, SD);
            assert_true(fd_check("stable wkv dz_r", be, stable_loss, h, h->zr, NLD, d[0]));
            assert_true(fd_check("stable wkv dk", be, stable_loss, h, h->k, NLD, d[1]));
            assert_true(fd_check("stable wkv dv", be, stable_loss, h, h->v, NLD, d[2]));
            assert_true(fd_check("stable wkv du", be, stable_loss, h, h->u, SD, du));
            assert_true(fd_check("stable wkv dtime_decay", be, stable_loss, h, h->td, SD, dtd));
        }
        /* the token shift from a state row, two mixes: x_{-1} = x_prev, out[2] untouched */
        shift2_forward_host(be, h);
        for (int b = 0; b < SN; b++)
            for (int e = 0; e < SD; e++) {
                float mu = h->mu[1][e], x0 = h->x[b * SL * SD + e], xp = h->x_prev[b * SD + e];
                float want = mu * x0 + (1.0f - mu) * xp;
                assert_true(tl_check_bits("token shift at t = 0 from x_prev",
                                          &h->mix[1][b * SL * SD + e], &want, 1));
            }
        float dx[NLD], t[2][NLD], dmu[2][SD];
        const float *sin_[] = {h->x, h->gm[0], h->gm[1], NULL, h->mu[0], h->mu[1], NULL,
                               h->x_prev};
        const size_t sin_n[] = {NLD, NLD, NLD, NLD, SD, SD, SD, SN * SD};
        float *sout[] = {dx, t[0], t[1], NULL};
        const size_t sout_n[] = {NLD, NLD, NLD, NLD};
        ssm_host_opt(be, STRIX_SSM_RWKV_SHIFT_BACKWARD, &rwkv_dims, sin_, sin_n, 8, sout, sout_n,
                     4);
        assert_true(fd_check("token shift (x_prev, 2 mixes) dx", be, shift2_loss, h, h->x, NLD,
                             dx));
        for (int m = 0; m < 2; m++) {
            reverse_time_sum_host(be, t[m], dmu[m], SN, SL, SD);
            assert_true(fd_check("token shift (x_prev) dmu", be, shift2_loss, h, h->mu[m], SD,
                                 dmu[m]));
        }
    }
    free(h);
}

/* Every lane of `op` on the host with the kernels/ssm.h lane function (the order the GPU
 * launchers use); NULL slots stay NULL. */
static void rwkv_lanes_host(strix_ssm_op op, const strix_ssm_args *dims, const float *const *in,
                            int n_in, float **out, int n_out) {
    strix_ssm_args a = *dims;
    for (int k = 0; k < 12; k++) a.in[k] = k < n_in ? in[k] : NULL;
    for (int k = 0; k < 10; k++) a.out[k] = k < n_out ? out[k] : NULL;
    size_t work = 0, lanes = strix_ssm_lanes(op, &a, &work);
    for (size_t lane = 0; lane < lanes; lane++) {
        switch (op) {
        case STRIX_SSM_RWKV_TOKEN_SHIFT: strix_rwkv_token_shift_element(&a, lane); break;
        case STRIX_SSM_RWKV_SHIFT_BACKWARD: strix_rwkv_shift_backward_element(&a, lane); break;
        case STRIX_SSM_RWKV_STABLE_FORWARD: strix_rwkv_stable_forward_lane(&a, lane); break;
        case STRIX_SSM_RWKV_STABLE_BACKWARD: strix_rwkv_stable_backward_lane(&a, lane); break;
        case STRIX_SSM_REVERSE_TIME_SUM: strix_ssm_reverse_time_sum_lane(&a, lane); break;
        default: fail_msg("rwkv_lanes_host: op %d", (int)op);
        }
    }
}

/* The CPU runs the RWKV passes of a training step (token shift and its backward, stable WKV
 * forward and backward) and the reverse-time sum in row order, many lanes side by side: every
 * backend gives the bits of the lane functions, with or without the optional slots, for d = 130
 * channels (the CPU's blocks of 64: two full, one partial). */
static void test_rwkv_rows_match_lanes(void **state) {
    (void)state;
    enum { RN = 3, RL = 7, RD = 130 };
    enum { RNLD = RN * RL * RD, RND = RN * RD, RST = RN * (RL + 1) * RD };
    const strix_ssm_args dims = {.n = RN, .l = RL, .d = RD};
    float *x = tl_malloc_floats(RNLD), *g[3], *mu[3], *zr = tl_malloc_floats(RNLD);
    float *k = tl_malloc_floats(RNLD), *v = tl_malloc_floats(RNLD);
    float *x_prev = tl_malloc_floats(RND);
    float *u = tl_malloc_floats(RD), *td = tl_malloc_floats(RD), *s0[3], *want[6], *got[6];
    for (int m = 0; m < 3; m++) {
        g[m] = tl_malloc_floats(RNLD), mu[m] = tl_malloc_floats(RD), s0[m] = tl_malloc_floats(RND);
        tl_fill_uniform(g[m], RNLD, 31 + m, -1.0f, 1.0f);
        tl_fill_uniform(mu[m], RD, 34 + m, 0.0f, 1.0f);
        tl_fill_uniform(s0[m], RND, 37 + m, m == 2 ? -3.0f : 0.1f, 2.0f);
    }
    for (int j = 0; j < 6; j++) want[j] = tl_malloc_floats(RST), got[j] = tl_malloc_floats(RST);
    tl_fill_uniform(x, RNLD, 21, -1.0f, 1.0f), tl_fill_uniform(x_prev, RND, 22, -1.0f, 1.0f);
    tl_fill_uniform(zr, RNLD, 23, -3.0f, 3.0f), tl_fill_uniform(k, RNLD, 24, -4.0f, 4.0f);
    tl_fill_uniform(v, RNLD, 25, -2.0f, 2.0f), tl_fill_uniform(u, RD, 26, -1.0f, 1.0f);
    tl_fill_uniform(td, RD, 27, -2.0f, 1.0f);
    FOR_EACH_BACKEND(be) {
        for (int variant = 0; variant < 2; variant++) {
            bool full = variant == 1; /* three mixes, x_prev, an initial state */
            /* token shift */
            const float *sin_[] = {x, mu[0], mu[1], full ? mu[2] : NULL, full ? x_prev : NULL};
            const size_t sin_n[] = {RNLD, RD, RD, RD, RND};
            const size_t nld3[] = {RNLD, RNLD, RNLD, RNLD, RNLD};
            float *sw[] = {want[0], want[1], full ? want[2] : NULL};
            float *sg[] = {got[0], got[1], full ? got[2] : NULL};
            rwkv_lanes_host(STRIX_SSM_RWKV_TOKEN_SHIFT, &dims, sin_, 5, sw, 3);
            ssm_host_opt(be, STRIX_SSM_RWKV_TOKEN_SHIFT, &dims, sin_, sin_n, 5, sg, nld3, 3);
            for (int m = 0; m < (full ? 3 : 2); m++)
                assert_true(tl_check_bits("token shift rows", got[m], want[m], RNLD));
            /* its backward */
            const float *bin[] = {x,     g[0],  g[1],  full ? g[2] : NULL,
                                  mu[0], mu[1], full ? mu[2] : NULL, full ? x_prev : NULL};
            const size_t bin_n[] = {RNLD, RNLD, RNLD, RNLD, RD, RD, RD, RND};
            float *bw[] = {want[0], want[1], want[2], full ? want[3] : NULL};
            float *bg[] = {got[0], got[1], got[2], full ? got[3] : NULL};
            rwkv_lanes_host(STRIX_SSM_RWKV_SHIFT_BACKWARD, &dims, bin, 8, bw, 4);
            ssm_host_opt(be, STRIX_SSM_RWKV_SHIFT_BACKWARD, &dims, bin, bin_n, 8, bg, nld3, 4);
            for (int m = 0; m < (full ? 4 : 3); m++)
                assert_true(tl_check_bits("shift backward rows", got[m], want[m], RNLD));
            /* stable WKV forward (fresh or from a state) */
            const float *fin[] = {zr, k, v, u, td, full ? s0[0] : NULL, full ? s0[1] : NULL,
                                  full ? s0[2] : NULL};
            const size_t fin_n[] = {RNLD, RNLD, RNLD, RD, RD, RND, RND, RND};
            const size_t fout_n[] = {RNLD, RNLD, RNLD, RST, RST, RST};
            rwkv_lanes_host(STRIX_SSM_RWKV_STABLE_FORWARD, &dims, fin, 8, want, 6);
            ssm_host_opt(be, STRIX_SSM_RWKV_STABLE_FORWARD, &dims, fin, fin_n, 8, got, fout_n, 6);
            for (int j = 0; j < 6; j++)
                assert_true(tl_check_bits("stable wkv forward rows", got[j], want[j],
                                          fout_n[j]));
            /* its backward, from the forward's r, wkv and states */
            float *r = tl_malloc_floats(RNLD), *wkv = tl_malloc_floats(RNLD);
            float *st[3] = {tl_malloc_floats(RST), tl_malloc_floats(RST), tl_malloc_floats(RST)};
            memcpy(r, want[0], RNLD * sizeof(float)), memcpy(wkv, want[1], RNLD * sizeof(float));
            for (int j = 0; j < 3; j++) memcpy(st[j], want[3 + j], RST * sizeof(float));
            const float *win[] = {g[0], r, k, v, wkv, st[0], st[1], st[2], u, td};
            const size_t win_n[] = {RNLD, RNLD, RNLD, RNLD, RNLD, RST, RST, RST, RD, RD};
            rwkv_lanes_host(STRIX_SSM_RWKV_STABLE_BACKWARD, &dims, win, 10, want, 5);
            ssm_host_opt(be, STRIX_SSM_RWKV_STABLE_BACKWARD, &dims, win, win_n, 10, got, nld3, 5);
            for (int j = 0; j < 5; j++)
                assert_true(tl_check_bits("stable wkv backward rows", got[j], want[j], RNLD));
            /* the reverse-time sum of its time_decay terms */
            const float *tin[] = {want[4]};
            const size_t tin_n[] = {RNLD}, tout_n[] = {RD};
            float *tw[] = {want[5]}, *tg[] = {got[5]};
            rwkv_lanes_host(STRIX_SSM_REVERSE_TIME_SUM, &dims, tin, 1, tw, 1);
            ssm_host_opt(be, STRIX_SSM_REVERSE_TIME_SUM, &dims, tin, tin_n, 1, tg, tout_n, 1);
            assert_true(tl_check_bits("reverse-time sum", got[5], want[5], RD));
            free(r), free(wkv);
            for (int j = 0; j < 3; j++) free(st[j]);
        }
    }
    for (int m = 0; m < 3; m++) free(g[m]), free(mu[m]), free(s0[m]);
    for (int j = 0; j < 6; j++) free(want[j]), free(got[j]);
    free(x), free(zr), free(k), free(v), free(x_prev), free(u), free(td);
}

/* The stable WKV's LRP conserves with the initial state's share: Σ R_v + Σ R_p0 = Σ R_wkv; a
 * fresh state takes none; huge keys keep every output finite. */
static void test_rwkv_stable_lrp_and_large_keys(void **state) {
    (void)state;
    stable_host *h = malloc(sizeof *h);
    FOR_EACH_BACKEND(be) {
        for (int with_state = 0; with_state < 2; with_state++) {
            stable_init(h, with_state);
            for (int i = 0; i < NLD; i++) h->v[i] = fabsf(h->v[i]) + 0.1f;
            for (int i = 0; i < SN * SD; i++) h->p0[i] = fabsf(h->p0[i]) + 0.1f;
            stable_forward_host(be, h);
            float r_v[NLD], r_p0[SN * SD];
            strix_ssm_args dims = rwkv_dims;
            dims.eps = 1e-6f;
            const float *in[] = {h->gated, h->k, h->v, h->wkv, h->P, h->Q, h->O, h->u, h->td};
            const size_t in_n[] = {NLD, NLD, NLD, NLD, SST, SST, SST, SD, SD};
            float *out[] = {r_v, r_p0};
            const size_t out_n[] = {NLD, SN * SD};
            ssm_host(be, STRIX_SSM_RWKV_STABLE_LRP, &dims, in, in_n, 9, out, out_n, 2);
            double got = host_sum(r_v, NLD) + host_sum(r_p0, SN * SD);
            double want = host_sum(h->gated, NLD);
            printf("  stable WKV LRP (%s): sum R_v %.7g + R_p0 %.7g, sum R_wkv %.7g\n",
                   with_state ? "from a state" : "fresh", host_sum(r_v, NLD),
                   host_sum(r_p0, SN * SD), want);
            assert_true(fabs(got - want) <= 1e-4 * host_abs_sum(h->gated, NLD));
            if (!with_state) assert_true(host_abs_sum(r_p0, SN * SD) == 0.0);
            else assert_true(host_abs_sum(r_p0, SN * SD) > 0.0);
        }
        /* keys of ±(60..100): e^k overflows float, the stable form does not */
        stable_init(h, false);
        tl_fill_uniform(h->k, NLD, 160, 60.0f, 100.0f);
        for (int i = 0; i < NLD; i += 2) h->k[i] = -h->k[i];
        stable_forward_host(be, h);
        float d[5][NLD];
        const float *bin[] = {h->g, h->r, h->k, h->v, h->wkv, h->P, h->Q, h->O, h->u, h->td};
        const size_t bin_n[] = {NLD, NLD, NLD, NLD, NLD, SST, SST, SST, SD, SD};
        float *bout[] = {d[0], d[1], d[2], d[3], d[4]};
        const size_t bout_n[] = {NLD, NLD, NLD, NLD, NLD};
        ssm_host(be, STRIX_SSM_RWKV_STABLE_BACKWARD, &rwkv_dims, bin, bin_n, 10, bout, bout_n, 5);
        for (int i = 0; i < NLD; i++) {
            assert_true(isfinite(h->gated[i]) && fabsf(h->wkv[i]) <= 1.0f + 1e-5f);
            for (int k = 0; k < 5; k++) assert_true(isfinite(d[k][i]));
        }
    }
    free(h);
}

// ---- RetNet ------------------------------------------------------------------------------------

#define RST (SN * (SL + 1) * SS * SD)
#define RDS (NLS * SD)

typedef struct retnet_host {
    float q[NLS], k[NLS], v[NLD], gy[NLD], states[RST], y[NLD];
} retnet_host;

static const strix_ssm_args retnet_dims = {.n = SN, .l = SL, .d = SD, .s = SS, .gamma = 0.8f};

static void retnet_forward_host(strix_backend *be, retnet_host *h) {
    const float *in[] = {h->q, h->k, h->v};
    const size_t in_n[] = {NLS, NLS, NLD};
    float *out[] = {h->states, h->y};
    const size_t out_n[] = {RST, NLD};
    ssm_host(be, STRIX_SSM_RETNET_FORWARD, &retnet_dims, in, in_n, 3, out, out_n, 2);
}

static double retnet_loss(strix_backend *be, void *ctx) {
    retnet_host *h = ctx;
    retnet_forward_host(be, h);
    return host_dot(h->y, h->gy, NLD);
}

static void test_retnet_finite_differences(void **state) {
    (void)state;
    retnet_host *h = malloc(sizeof *h);
    FOR_EACH_BACKEND(be) {
        tl_fill_uniform(h->q, NLS, 61, -1.0f, 1.0f), tl_fill_uniform(h->k, NLS, 62, -1.0f, 1.0f);
        tl_fill_uniform(h->v, NLD, 63, -1.0f, 1.0f), tl_fill_uniform(h->gy, NLD, 64, -1.0f, 1.0f);
        retnet_forward_host(be, h);
        float ds[RDS], dq[NLS], dk[NLS], dv[NLD];
        const float *sin_[] = {h->gy, h->q};
        const size_t sin_n[] = {NLD, NLS}, ds_n = RDS;
        float *sout[] = {ds};
        ssm_host(be, STRIX_SSM_RETNET_STATE_GRAD, &retnet_dims, sin_, sin_n, 2, sout, &ds_n, 1);
        const float *qin[] = {h->gy, h->states, ds, h->v};
        const size_t qin_n[] = {NLD, RST, RDS, NLD}, qout_n[] = {NLS, NLS};
        float *qout[] = {dq, dk};
        ssm_host(be, STRIX_SSM_RETNET_GRAD_QK, &retnet_dims, qin, qin_n, 4, qout, qout_n, 2);
        const float *vin[] = {ds, h->k};
        const size_t vin_n[] = {RDS, NLS}, vout_n = NLD;
        float *vout[] = {dv};
        ssm_host(be, STRIX_SSM_RETNET_GRAD_V, &retnet_dims, vin, vin_n, 2, vout, &vout_n, 1);
        assert_true(fd_check("retnet dq", be, retnet_loss, h, h->q, NLS, dq));
        assert_true(fd_check("retnet dk", be, retnet_loss, h, h->k, NLS, dk));
        assert_true(fd_check("retnet dv", be, retnet_loss, h, h->v, NLD, dv));
    }
    free(h);
}

static void test_retnet_scores_and_lrp(void **state) {
    (void)state;
    enum { NLL = SN * SL * SL };
    FOR_EACH_BACKEND(be) {
        float q[NLS], k[NLS], qk[NLL], g[NLL];
        tl_fill_uniform(q, NLS, 71, -1.0f, 1.0f), tl_fill_uniform(k, NLS, 72, -1.0f, 1.0f);
        const float *in[] = {q, k};
        const size_t in_n[] = {NLS, NLS}, out_n[] = {NLL, NLL};
        float *out[] = {qk, g};
        ssm_host(be, STRIX_SSM_RETNET_SCORES, &retnet_dims, in, in_n, 2, out, out_n, 2);
        for (int b = 0; b < SN; b++)
            for (int t = 0; t < SL; t++)
                for (int u = 0; u < SL; u++) {
                    size_t at = ((size_t)b * SL + t) * SL + u;
                    float decay = 1.0f;
                    for (int step = u; step < t; step++) decay *= retnet_dims.gamma;
                    float want = u > t ? 0.0f : decay * qk[at];
                    assert_true(tl_check_bits("gamma^(t-u) by repeated multiplication", &g[at],
                                              &want, 1));
                    if (u > t) assert_true(qk[at] == 0.0f);
                }

        /* input LRP of bias-free projections conserves: Σ R_x = Σ R_q + Σ R_k + Σ R_v */
        float x[NLD], wq[SD * SS], wk[SD * SS], wv[SD * SD], pq[NLS], pk[NLS], pv[NLD];
        float rq[NLS], rk[NLS], rv[NLD], rx[NLD];
        tl_fill_uniform(x, NLD, 73, 0.1f, 1.0f), tl_fill_uniform(wq, SD * SS, 74, 0.1f, 1.0f);
        tl_fill_uniform(wk, SD * SS, 75, 0.1f, 1.0f), tl_fill_uniform(wv, SD * SD, 76, 0.1f, 1.0f);
        tl_fill_uniform(rq, NLS, 77, -1.0f, 1.0f), tl_fill_uniform(rk, NLS, 78, -1.0f, 1.0f);
        tl_fill_uniform(rv, NLD, 79, -1.0f, 1.0f);
        for (int row = 0; row < SN * SL; row++) {
            for (int i = 0; i < SS; i++) {
                float aq = 0.0f, ak = 0.0f;
                for (int e = 0; e < SD; e++)
                    aq += x[row * SD + e] * wq[e * SS + i], ak += x[row * SD + e] * wk[e * SS + i];
                pq[row * SS + i] = aq, pk[row * SS + i] = ak;
            }
            for (int j = 0; j < SD; j++) {
                float av = 0.0f;
                for (int e = 0; e < SD; e++) av += x[row * SD + e] * wv[e * SD + j];
                pv[row * SD + j] = av;
            }
        }
        strix_ssm_args dims = retnet_dims;
        dims.eps = 1e-6f;
        const float *lin[] = {x, wq, wk, wv, pq, pk, pv, rq, rk, rv};
        const size_t lin_n[] = {NLD, SD * SS, SD * SS, SD * SD, NLS, NLS, NLD, NLS, NLS, NLD};
        const size_t lout_n = NLD;
        float *lout[] = {rx};
        ssm_host(be, STRIX_SSM_RETNET_LRP_INPUT, &dims, lin, lin_n, 10, lout, &lout_n, 1);
        double want = host_sum(rq, NLS) + host_sum(rk, NLS) + host_sum(rv, NLD);
        double scale = host_abs_sum(rq, NLS) + host_abs_sum(rk, NLS) + host_abs_sum(rv, NLD);
        assert_true(fabs(host_sum(rx, NLD) - want) <= 1e-5 * scale);
    }
}

// ---- exact edges -------------------------------------------------------------------------------

static void test_ssm_exact_edges(void **state) {
    (void)state;
    FOR_EACH_BACKEND(be) {
        /* stab(z) = z + eps·sign(z), sign(0) = sign(-0) = +1 */
        const float r[] = {1.0f, 2.0f, 3.0f, -4.0f, 5.0f};
        const float z[] = {0.0f, -0.0f, -2.0f, 3.0f, 1e-30f};
        const float eps = 0.5f;
        float want[5], got[5];
        for (int i = 0; i < 5; i++) want[i] = r[i] / (z[i] + (z[i] >= 0.0f ? eps : -eps));
        assert_true(want[0] == 2.0f && want[1] == 4.0f && want[2] == 3.0f / -2.5f);
        strix_ssm_args a = {.n = 1, .l = 1, .d = 5, .eps = eps};
        float *dr = up(be, r, 5), *dz = up(be, z, 5), *dout = up(be, r, 5);
        a.in[0] = dr, a.in[1] = dz, a.out[0] = dout;
        OK(strix_ssm_pass(be, STRIX_SSM_STABILIZED_DIV, &a));
        down(be, got, dout, 5);
        assert_true(tl_check_bits("stabilized div", got, want, 5));
        a.out[0] = dz; /* in place over z */
        OK(strix_ssm_pass(be, STRIX_SSM_STABILIZED_DIV, &a));
        down(be, got, dz, 5);
        assert_true(tl_check_bits("stabilized div (out == z)", got, want, 5));

        /* reverse-time sum: t descending, then b ascending. (b,t) = (0,0) 1, (0,1) 1e8,
         * (1,0) -1e8, (1,1) 1: 1e8 + 1 + 1 - 1e8 = 0 in float (t ascending would give 1). */
        const float terms[] = {1.0f, 1e8f, -1e8f, 1.0f};
        float sum = NAN;
        reverse_time_sum_host(be, terms, &sum, 2, 2, 1);
        assert_true(sum == 0.0f);

        /* unknown ops and empty sizes */
        strix_ssm_args e = {0};
        assert_int_equal(strix_ssm_pass(be, (strix_ssm_op)99, &e), STRIX_ERR_ARG);
        strix_cell_args ce = {0};
        assert_int_equal(strix_recurrent_cell(be, (strix_cell_op)99, &ce, 4), STRIX_ERR_ARG);
        float sentinel = NAN;
        float *dsent = up(be, &sentinel, 1);
        e.n = 0, e.l = 5, e.d = 3, e.s = 4;
        for (int k = 0; k < 12; k++) e.in[k] = dsent;
        for (int k = 0; k < 10; k++) e.out[k] = dsent;
        for (int op = STRIX_SSM_MAMBA_FORWARD; op <= STRIX_SSM_REVERSE_TIME_SUM; op++)
            if (op != STRIX_SSM_REVERSE_TIME_SUM) OK(strix_ssm_pass(be, (strix_ssm_op)op, &e));
        for (int op = STRIX_SSM_RWKV_STABLE_FORWARD; op <= STRIX_SSM_RWKV_STABLE_LRP; op++)
            OK(strix_ssm_pass(be, (strix_ssm_op)op, &e));
        OK(strix_gru_lrp_hprev(be, dsent, dsent, dsent, dsent, NULL, dsent, 0, 7, 0.1f));
        down(be, &sentinel, dsent, 1);
        assert_true(isnan(sentinel));
        strix_free(be, dr), strix_free(be, dz), strix_free(be, dout), strix_free(be, dsent);
    }
}

const struct CMUnitTest ops_recurrent_tests[] = {
    cmocka_unit_test(test_cells_finite_differences),
    cmocka_unit_test(test_cells_optional_and_aliasing),
    cmocka_unit_test(test_cells_lrp_conservation),
    cmocka_unit_test(test_gru_lrp_hprev_order),
    cmocka_unit_test(test_mamba_finite_differences),
    cmocka_unit_test(test_mamba_lrp_conservation),
    cmocka_unit_test(test_rwkv_finite_differences),
    cmocka_unit_test(test_rwkv_lrp_conservation),
    cmocka_unit_test(test_rwkv_stable_finite_differences),
    cmocka_unit_test(test_rwkv_stable_lrp_and_large_keys),
    cmocka_unit_test(test_rwkv_rows_match_lanes),
    cmocka_unit_test(test_retnet_finite_differences),
    cmocka_unit_test(test_retnet_scores_and_lrp),
    cmocka_unit_test(test_ssm_exact_edges),
};
const size_t ops_recurrent_test_count = sizeof ops_recurrent_tests / sizeof ops_recurrent_tests[0];
