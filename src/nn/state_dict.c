/*
 * state_dict.c - save/load a parameter block as a PyTorch state dict in safetensors
 * (strix/state_dict.h), on the reader and writer of strix/safetensors.h. Save copies the whole
 * value block to the host once and points the tensors into it; load validates every name, shape
 * and dtype first and copies only then (converting a lazily read tensor through one scratch
 * buffer), so a bad file changes nothing. Does not touch gradients or optimizer moments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strix/state_dict.h"

/* PyTorch keeps BatchNorm's batch counter as a 0-dim int64. */
static bool is_counter(const strix_param *p) {
    static const char suffix[] = "num_batches_tracked";
    size_t n = strlen(p->name), k = sizeof suffix - 1;
    return p->is_buffer && p->numel == 1 && n >= k && strcmp(p->name + n - k, suffix) == 0 &&
           (n == k || p->name[n - k - 1] == '.');
}

strix_status strix_state_dict_save(const strix_params *ps, const char *path) {
    STRIX_ASSERT(ps->data != NULL || ps->total == 0, "state_dict_save: parameters not allocated");
    float *host = malloc((ps->total ? ps->total : 1) * sizeof(float));
    strix_st_tensor *ts = calloc((size_t)(ps->count ? ps->count : 1), sizeof *ts);
    strix_st_dtype *dts = calloc((size_t)(ps->count ? ps->count : 1), sizeof *dts);
    strix_status s = STRIX_OK;
    if (!host || !ts || !dts) s = strix_error(STRIX_ERR_ALLOC, "state_dict: out of memory");
    if (s == STRIX_OK && ps->total)
        s = strix_copy(ps->be, host, ps->data, ps->total * sizeof(float), STRIX_COPY_D2H);
    int n = 0;
    for (int i = 0; i < ps->count && s == STRIX_OK; i++) {
        const strix_param *p = ps->items[i];
        if (p->tied_to) continue;
        strix_st_tensor *t = &ts[n];
        t->name = p->name;
        t->data = host + p->offset;
        if (is_counter(p)) {
            t->ndim = 0;
            dts[n] = STRIX_ST_I64;
        } else {
            t->ndim = p->ndim;
            for (int d = 0; d < p->ndim; d++) t->shape[d] = p->shape[d];
            dts[n] = STRIX_ST_F32;
        }
        n++;
    }
    strix_st_meta meta[1] = {{"format", "pt"}};
    if (s == STRIX_OK) s = strix_safetensors_write_typed(path, ts, dts, n, meta, 1);
    free(host);
    free(ts);
    free(dts);
    return s;
}

/* STRIX_OK if file tensor t fits parameter p (a 0-dim tensor fits shape (1)). */
static strix_status check_tensor(const strix_safetensors *st, const strix_st_tensor *t,
                                 const strix_param *p) {
    bool same = t->ndim == p->ndim;
    for (int d = 0; same && d < p->ndim; d++) same = t->shape[d] == p->shape[d];
    if (!same && t->ndim == 0 && p->ndim == 1 && p->shape[0] == 1) same = true;
    if (!same) {
        char want[96] = "", got[96] = "";
        for (int d = 0; d < p->ndim; d++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? ", " : "",
                     (long long)p->shape[d]);
        for (int d = 0; d < t->ndim; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "",
                     (long long)t->shape[d]);
        return strix_error(STRIX_ERR_SHAPE, "state_dict: '%s' has shape (%s) in the file, the "
                           "model has (%s)", p->name, got, want);
    }
    strix_st_dtype want = is_counter(p) ? STRIX_ST_I64 : STRIX_ST_F32;
    if (strix_safetensors_dtype(st, t) != want)
        return strix_error(STRIX_ERR_FORMAT, "state_dict: '%s' has dtype %s in the file, the "
                           "model expects %s", p->name,
                           strix_st_dtype_name(strix_safetensors_dtype(st, t)),
                           strix_st_dtype_name(want));
    return STRIX_OK;
}

strix_status strix_state_dict_apply(strix_params *ps, const strix_safetensors *st, bool strict) {
    STRIX_ASSERT(ps->data != NULL || ps->total == 0, "state_dict_apply: parameters not allocated");
    int count = strix_safetensors_count(st);
    // every file tensor must name a parameter (strict)
    for (int i = 0; strict && i < count; i++) {
        const strix_st_tensor *t = strix_safetensors_at(st, i);
        if (!strix_params_find(ps, t->name))
            return strix_error(STRIX_ERR_FORMAT, "state_dict: unexpected key '%s' (no such "
                               "parameter or buffer in the model)", t->name);
    }
    // every stored parameter must be present (strict) with its shape and dtype
    for (int i = 0; i < ps->count; i++) {
        const strix_param *p = ps->items[i];
        const strix_st_tensor *t = strix_safetensors_find(st, p->name);
        if (p->tied_to) {
            if (t) STRIX_TRY(check_tensor(st, t, p));
            continue;
        }
        if (!t) {
            if (strict)
                return strix_error(STRIX_ERR_FORMAT, "state_dict: missing key '%s'", p->name);
            continue;
        }
        STRIX_TRY(check_tensor(st, t, p));
    }
    float *scratch = NULL; /* the float32 values of a tensor read lazily */
    size_t scratch_cap = 0;
    strix_status s = STRIX_OK;
    for (int i = 0; i < ps->count && s == STRIX_OK; i++) {
        const strix_param *p = ps->items[i];
        const strix_st_tensor *t = strix_safetensors_find(st, p->name);
        if (p->tied_to || !t || p->numel == 0) continue;
        const float *values = t->data;
        if (!values) {
            if (scratch_cap < p->numel) {
                free(scratch);
                scratch_cap = p->numel;
                scratch = malloc(scratch_cap * sizeof *scratch);
                if (!scratch) {
                    s = strix_error(STRIX_ERR_ALLOC, "state_dict: out of memory");
                    break;
                }
            }
            s = strix_safetensors_to_f32(st, t, scratch, (int64_t)scratch_cap);
            values = scratch;
        }
        if (s == STRIX_OK)
            s = strix_copy(ps->be, p->data, values, p->numel * sizeof(float), STRIX_COPY_H2D);
    }
    free(scratch);
    return s;
}

strix_status strix_state_dict_load(strix_params *ps, const char *path, bool strict) {
    strix_safetensors *st;
    const strix_st_read_options lazy = {.lazy = true};
    STRIX_TRY(strix_safetensors_read_ex(path, &lazy, &st));
    strix_status s = strix_state_dict_apply(ps, st, strict);
    strix_safetensors_free(st);
    return s;
}
