/*
 * workspace.c - the losses' scratch memory (strix_loss_workspace) and the reduction divisor.
 */
#include <stdlib.h>

#include "loss/loss_internal.h"

void strix_loss_workspace_init(strix_loss_workspace *ws, strix_backend *be) {
    ws->be = be;
    ws->dev = NULL;
    ws->dev_bytes = 0;
    ws->host = NULL;
    ws->host_bytes = 0;
}

void strix_loss_workspace_free(strix_loss_workspace *ws) {
    if (!ws) return;
    if (ws->be) strix_free(ws->be, ws->dev);
    free(ws->host);
    strix_loss_workspace_init(ws, ws->be);
}

strix_status loss_dev_scratch(strix_loss_workspace *ws, size_t floats, float **out) {
    size_t bytes = (floats ? floats : 1) * sizeof(float);
    if (ws->dev_bytes < bytes) {
        strix_free(ws->be, ws->dev);
        ws->dev = NULL;
        ws->dev_bytes = 0;
        STRIX_TRY(strix_alloc(ws->be, bytes, &ws->dev));
        ws->dev_bytes = bytes;
    }
    *out = ws->dev;
    return STRIX_OK;
}

strix_status loss_host_scratch(strix_loss_workspace *ws, size_t bytes, void **out) {
    if (bytes == 0) bytes = 1;
    if (ws->host_bytes < bytes) {
        void *p = realloc(ws->host, bytes);
        if (!p) return strix_error(STRIX_ERR_ALLOC, "loss workspace: out of host memory");
        ws->host = p;
        ws->host_bytes = bytes;
    }
    *out = ws->host;
    return STRIX_OK;
}

strix_status loss_divisor(const char *name, strix_reduction r, size_t count, size_t rows,
                          bool batchmean_ok, double *out) {
    switch (r) {
    case STRIX_REDUCTION_MEAN: *out = (double)count; return STRIX_OK;
    case STRIX_REDUCTION_SUM: *out = 1.0; return STRIX_OK;
    case STRIX_REDUCTION_BATCHMEAN:
        if (!batchmean_ok) break;
        *out = (double)rows;
        return STRIX_OK;
    }
    return strix_error(STRIX_ERR_ARG, "%s: unsupported reduction %d", name, (int)r);
}
