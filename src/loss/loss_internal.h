/*
 * loss_internal.h - what the loss files share: workspace growth and the reduction divisor.
 */
#ifndef STRIX_LOSS_INTERNAL_H
#define STRIX_LOSS_INTERNAL_H

#include "strix/loss.h"

/* At least `floats` floats of backend scratch (contents unspecified; int32 arrays may be carved
 * from it too). Grows (free + alloc) only when too small. */
strix_status loss_dev_scratch(strix_loss_workspace *ws, size_t floats, float **out);

/* At least `bytes` bytes of host scratch, same rules. */
strix_status loss_host_scratch(strix_loss_workspace *ws, size_t bytes, void **out);

/* Divisor of a reduction over `count` elements in `rows` rows: MEAN count, SUM 1, BATCHMEAN rows
 * (only if `batchmean_ok`). STRIX_ERR_ARG for a reduction the loss `name` does not take. */
strix_status loss_divisor(const char *name, strix_reduction r, size_t count, size_t rows,
                          bool batchmean_ok, double *out);

#endif
