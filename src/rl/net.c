/*
 * net.c - the agents' networks: MLPs in parameter blocks, their orthogonal initialisation, host
 * in/host out forward and backward, target blending and the optimizer step of a block.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rl/rl_internal.h"

rl_block *rl_block_add(strix_agent *a, const char *name) {
    STRIX_ASSERT(a->n_blocks < RL_MAX_BLOCKS, "too many blocks");
    rl_block *b = &a->blocks[a->n_blocks++];
    b->name = name;
    strix_params_init_empty(&b->ps, a->be);
    return b;
}

strix_status rl_net_add(strix_agent *a, rl_block *b, const char *prefix, int in, int out,
                        strix_act act, rl_net **out_net) {
    STRIX_ASSERT(a->n_nets < RL_MAX_NETS, "too many networks");
    rl_net *n = &a->nets[a->n_nets++];
    n->in = in;
    n->out = out;
    STRIX_TRY(strix_sequential_new(a->be, prefix, &n->seq));
    const int sizes[4] = {in, a->cfg.hidden[0], a->cfg.hidden[1], out};
    char name[STRIX_PARAM_NAME_MAX];
    for (int i = 0; i < 3; i++) {
        strix_linear *lin = NULL;
        STRIX_TRY(strix_sequential_child_name(n->seq, name));
        STRIX_TRY(strix_linear_new_default(&b->ps, name, sizes[i], sizes[i + 1], true, &lin));
        STRIX_TRY(strix_sequential_add(n->seq, &lin->base));
        if (i == 2) break;
        strix_activation *f = NULL;
        STRIX_TRY(strix_activation_new(a->be, act, &f));
        STRIX_TRY(strix_sequential_add(n->seq, &f->base));
    }
    if (out_net) *out_net = n;
    return STRIX_OK;
}

/* w (rows, cols) = gain·Q, Q with orthonormal rows or columns (whichever are fewer) from the
 * Gram-Schmidt orthonormalisation of a standard normal matrix: the distribution of
 * torch.nn.init.orthogonal_ (QR with the signs of R's diagonal made positive). */
static void orthogonal(double *w, int rows, int cols, double gain, strix_rng *rng) {
    bool tall = rows >= cols;
    int n = tall ? rows : cols, k = tall ? cols : rows; /* k vectors of length n */
    for (int i = 0; i < n * k; i++) w[i] = strix_rng_normal(rng);
    for (int j = 0; j < k; j++) { /* vector j: w[j*n .. j*n+n) */
        double *v = w + (size_t)j * (size_t)n;
        for (int p = 0; p < j; p++) {
            const double *u = w + (size_t)p * (size_t)n;
            double d = 0.0;
            for (int i = 0; i < n; i++) d += u[i] * v[i];
            for (int i = 0; i < n; i++) v[i] -= d * u[i];
        }
        double norm = 0.0;
        for (int i = 0; i < n; i++) norm += v[i] * v[i];
        norm = sqrt(norm);
        for (int i = 0; i < n; i++) v[i] /= norm;
    }
    /* vectors as columns of a tall matrix, or as rows of a wide one: transpose the tall case */
    if (tall) {
        double *t = malloc(sizeof(double) * (size_t)n * (size_t)k);
        STRIX_ASSERT(t != NULL, "out of memory");
        for (int j = 0; j < k; j++)
            for (int i = 0; i < n; i++) t[(size_t)i * (size_t)k + (size_t)j] = w[(size_t)j * (size_t)n + (size_t)i];
        memcpy(w, t, sizeof(double) * (size_t)n * (size_t)k);
        free(t);
    }
    for (int i = 0; i < n * k; i++) w[i] *= gain;
}

strix_status rl_net_init_orthogonal(strix_agent *a, rl_net *n, double gain, double last_gain) {
    strix_status st = STRIX_OK;
    for (int c = 0; c < n->seq->count && st == STRIX_OK; c++) {
        strix_module *m = strix_sequential_at(n->seq, c);
        if (strcmp(m->vt->type, "Linear") != 0) continue;
        strix_linear *lin = (strix_linear *)m;
        size_t numel = lin->weight->numel;
        double *w = malloc(sizeof(double) * numel);
        float *wf = malloc(sizeof(float) * numel);
        if (!w || !wf) {
            free(w);
            free(wf);
            return strix_error(STRIX_ERR_ALLOC, "out of memory");
        }
        bool last = c == n->seq->count - 1;
        orthogonal(w, lin->out_features, lin->in_features, last ? last_gain : gain, &a->rng);
        for (size_t i = 0; i < numel; i++) wf[i] = (float)w[i];
        st = strix_copy(a->be, lin->weight->data, wf, sizeof(float) * numel, STRIX_COPY_H2D);
        if (st == STRIX_OK && lin->bias)
            st = strix_fill(a->be, lin->bias->data, 0.0f, lin->bias->numel);
        free(w);
        free(wf);
    }
    return st;
}

strix_status rl_net_forward(strix_agent *a, rl_net *n, const float *x_host, int rows,
                            float *y_host) {
    int64_t shape[2] = {rows, n->in};
    STRIX_TRY(strix_tensor_ensure(a->be, &n->x, 2, shape));
    STRIX_TRY(strix_copy(a->be, n->x.data, x_host, sizeof(float) * (size_t)rows * (size_t)n->in,
                         STRIX_COPY_H2D));
    const strix_tensor *y = NULL;
    STRIX_TRY(strix_module_forward(&n->seq->base, &n->x, &y));
    return strix_copy(a->be, y_host, y->data, sizeof(float) * (size_t)rows * (size_t)n->out,
                      STRIX_COPY_D2H);
}

strix_status rl_net_backward(strix_agent *a, rl_net *n, const float *dy_host, int rows,
                             const strix_tensor **dx) {
    int64_t shape[2] = {rows, n->out};
    STRIX_TRY(strix_tensor_ensure(a->be, &n->dy, 2, shape));
    STRIX_TRY(strix_copy(a->be, n->dy.data, dy_host,
                         sizeof(float) * (size_t)rows * (size_t)n->out, STRIX_COPY_H2D));
    const strix_tensor *d = NULL;
    STRIX_TRY(strix_module_backward(&n->seq->base, &n->dy, &d));
    if (dx) *dx = d;
    return STRIX_OK;
}

strix_status rl_block_blend(strix_agent *a, rl_block *dst, const rl_block *src, float tau) {
    STRIX_ASSERT(dst->ps.total == src->ps.total, "blocks of different layouts");
    if (tau >= 1.0f)
        return strix_copy(a->be, dst->ps.data, src->ps.data, sizeof(float) * src->ps.total,
                          STRIX_COPY_D2D);
    strix_rl_args args = {.in = {src->ps.data, dst->ps.data}, .out = {dst->ps.data},
                          .rows = 1, .cols = src->ps.total, .tau = tau};
    return strix_rl_rows(a->be, STRIX_RL_POLYAK_BLEND, &args);
}

strix_status rl_block_zero_grad(rl_block *b) { return strix_params_zero_grad(&b->ps); }

strix_status rl_block_step(rl_block *b, float max_norm, float lr) {
    double norm = 0.0;
    STRIX_TRY(strix_clip_grad_norm(&b->ps, max_norm, &norm));
    return strix_optimizer_step(b->opt, lr);
}
