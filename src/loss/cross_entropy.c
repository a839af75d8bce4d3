/*
 * cross_entropy.c - cross-entropy over class indices with ignored rows and label smoothing
 * (torch.nn.CrossEntropyLoss, strix/loss.h), on the backend primitives.
 *
 * Without smoothing it is strix_softmax_cross_entropy plus an ascending sum. With smoothing ε the
 * row loss is (1 − ε)·(lse − x_t) + (ε/C)·Σ_c (lse − x_c): the first part comes from the same
 * primitive; Σ_c (lse − x_c) = −Σ_c logp_c with logp = x − lse formed exactly (one rounding) by
 * a rank-1 GEMM update, then summed ascending. The gradient (1 − ε)(p − onehot) + ε(p − 1/C) is
 * the primitive's gradient plus ε·(softmax − 1/C). Ignored rows are first gathered out (and the
 * gradient scattered back) when smoothing is on; the primitive handles them itself otherwise.
 */
#include <math.h>
#include <string.h>

#include "loss/loss_internal.h"

/* Smoothed cross-entropy of M counted rows (no ignored ones): *ce_sum = Σ (lse − x_t),
 * *smooth_sum = Σ_rows Σ_c (lse − x_c); if g, g = (1 − ε)·sg·(p − onehot) + ε·sg·(p − 1/C).
 * work holds 2M + C + M·C floats. g may alias x. */
static strix_status smoothed_rows(strix_backend *be, const float *x, const int32_t *t, size_t M,
                                  size_t C, float eps, float *g, float sg, float *work,
                                  float *ce_sum, float *smooth_sum) {
    float *rowloss = work, *neg_lse = work + M, *vec = neg_lse + M, *mat = vec + C;
    size_t n = M * C;
    /* logp = x + (−lse)·1ᵀ: a (M,1)·(1,C) product added to a copy of x (beta = 1) */
    STRIX_TRY(strix_logsumexp_rows(be, x, neg_lse, M, C));
    STRIX_TRY(strix_axpby(be, -1.0f, neg_lse, 0.0f, NULL, neg_lse, M));
    STRIX_TRY(strix_fill(be, vec, 1.0f, C));
    STRIX_TRY(strix_copy(be, mat, x, n * sizeof(float), STRIX_COPY_D2D));
    STRIX_TRY(strix_gemm_ex(be, neg_lse, false, vec, false, mat, M, 1, C, 1.0f));
    float logp_sum = 0.0f;
    STRIX_TRY(strix_sum(be, mat, n, &logp_sum));
    *smooth_sum = -logp_sum;
    if (g) { /* mat = softmax(x) − 1/C, before g (which may alias x) is written */
        STRIX_TRY(strix_softmax_rows(be, x, mat, M, C));
        STRIX_TRY(strix_fill(be, vec, (float)(-1.0 / (double)C), C));
        STRIX_TRY(strix_add_row_vector(be, mat, vec, mat, M, C));
    }
    STRIX_TRY(strix_softmax_cross_entropy(be, x, t, rowloss, g, M, C, (1.0f - eps) * sg));
    STRIX_TRY(strix_sum(be, rowloss, M, ce_sum));
    if (g) STRIX_TRY(strix_axpby(be, 1.0f, g, eps * sg, mat, g, n));
    return STRIX_OK;
}

strix_status strix_cross_entropy_loss(strix_loss_workspace *ws, const float *logits,
                                      const int32_t *targets, size_t rows, size_t classes,
                                      strix_reduction reduction, float label_smoothing,
                                      float *grad, float grad_scale, float *loss) {
    const float eps = label_smoothing;
    if (!(eps >= 0.0f && eps <= 1.0f))
        return strix_error(STRIX_ERR_ARG, "cross_entropy_loss: label_smoothing %g outside [0, 1]",
                           eps);
    if (classes == 0 || classes > INT32_MAX)
        return strix_error(STRIX_ERR_ARG, "cross_entropy_loss: %zu classes", classes);
    strix_backend *be = ws->be;
    size_t N = rows, C = classes;

    /* Targets to the host: check them and count the rows that take part. */
    int32_t *host = NULL;
    STRIX_TRY(loss_host_scratch(ws, (N ? N : 1) * 2 * sizeof(int32_t), (void **)&host));
    if (N) STRIX_TRY(strix_copy(be, host, targets, N * sizeof(int32_t), STRIX_COPY_D2H));
    size_t M = 0;
    for (size_t i = 0; i < N; i++) {
        if (host[i] >= (int32_t)C)
            return strix_error(STRIX_ERR_ARG,
                               "cross_entropy_loss: target %d of row %zu is not below %zu classes",
                               host[i], i, C);
        if (host[i] >= 0) M++;
    }
    double den;
    STRIX_TRY(loss_divisor("cross_entropy_loss", reduction, M, N, false, &den));
    if (M == 0) { /* nothing counts: the sum is 0, the mean NaN (PyTorch) */
        *loss = reduction == STRIX_REDUCTION_MEAN ? NAN : 0.0f;
        if (grad && N) STRIX_TRY(strix_fill(be, grad, 0.0f, N * C));
        return STRIX_OK;
    }
    float sg = (float)(grad_scale / den);

    if (eps == 0.0f) {
        float *rowloss = NULL, total = 0.0f;
        STRIX_TRY(loss_dev_scratch(ws, N, &rowloss));
        STRIX_TRY(strix_softmax_cross_entropy(be, logits, targets, rowloss, grad, N, C, sg));
        STRIX_TRY(strix_sum(be, rowloss, N, &total));
        *loss = (float)((double)total / den);
        return STRIX_OK;
    }

    /* Scratch sized by N, not M, so a loop whose ignored rows vary never regrows it:
     * [idx N][targets N][gathered logits N·C][their gradient N·C][smoothed_rows 2N + C + N·C]. */
    float ce_sum = 0.0f, smooth_sum = 0.0f, *work = NULL;
    STRIX_TRY(loss_dev_scratch(ws, 4 * N + C + 3 * N * C, &work));
    if (M == N) {
        STRIX_TRY(smoothed_rows(be, logits, targets, N, C, eps, grad, sg, work, &ce_sum,
                                &smooth_sum));
    } else {
        /* Gather the counted rows: idx (M), their targets (M), their logits and gradient (M,C). */
        int32_t *idx = (int32_t *)(void *)work, *tv = idx + N;
        float *xv = work + 2 * N, *gv = xv + N * C, *rest = gv + N * C;
        int32_t *host_idx = host + N;
        size_t k = 0;
        for (size_t i = 0; i < N; i++)
            if (host[i] >= 0) host_idx[k] = (int32_t)i, host[k++] = host[i];
        STRIX_TRY(strix_copy(be, idx, host_idx, M * sizeof(int32_t), STRIX_COPY_H2D));
        STRIX_TRY(strix_copy(be, tv, host, M * sizeof(int32_t), STRIX_COPY_H2D));
        STRIX_TRY(strix_gather_rows(be, logits, idx, xv, M, C));
        STRIX_TRY(smoothed_rows(be, xv, tv, M, C, eps, grad ? gv : NULL, sg, rest, &ce_sum,
                                &smooth_sum));
        if (grad) {
            STRIX_TRY(strix_fill(be, grad, 0.0f, N * C));
            STRIX_TRY(strix_scatter_add_rows(be, gv, idx, grad, M, C));
        }
    }
    double total = (1.0 - eps) * (double)ce_sum + (double)eps / (double)C * (double)smooth_sum;
    *loss = (float)(total / den);
    return STRIX_OK;
}
