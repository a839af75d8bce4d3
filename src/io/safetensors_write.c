/*
 * safetensors_write.c - the safetensors writer (strix/safetensors.h): the JSON header built with
 * cJSON in the order the tensors are given, padded with spaces so the data starts 8-byte aligned,
 * then each tensor's little-endian bytes, all written atomically (atomic.c).
 *
 * Tensors given as float32 are converted to their dtype here (F16/BF16 rounded to nearest even,
 * integers checked to be whole and in range); raw bytes are written as they are. Does not write
 * sharded sets.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "st_internal.h"

/* Adds a raw decimal integer (exact for every uint64, unlike a double). */
static bool add_raw_u64(cJSON *array, uint64_t v) {
    char text[32];
    snprintf(text, sizeof text, "%" PRIu64, v);
    cJSON *raw = cJSON_CreateRaw(text);
    return raw && cJSON_AddItemToArray(array, raw);
}

/* The JSON header of tensors/meta with dtypes dt, padded with spaces to a multiple of 8 bytes
 * after the 8-byte length; *len gets the padded length. NULL on out-of-memory. */
static char *build_header(const strix_st_tensor *tensors, const strix_st_dtype *dt, int n,
                          const strix_st_meta *meta, int n_meta, size_t *len) {
    cJSON *root = cJSON_CreateObject();
    bool ok = root != NULL;
    if (ok && n_meta > 0) {
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        ok = m != NULL;
        for (int i = 0; ok && i < n_meta; i++)
            ok = cJSON_AddStringToObject(m, meta[i].key, meta[i].value) != NULL;
    }
    uint64_t offset = 0;
    for (int i = 0; ok && i < n; i++) {
        cJSON *t = cJSON_AddObjectToObject(root, tensors[i].name);
        cJSON *shape = t ? cJSON_AddArrayToObject(t, "shape") : NULL;
        ok = t && cJSON_AddStringToObject(t, "dtype", strix_st_dtype_name(dt[i])) && shape;
        for (int d = 0; ok && d < tensors[i].ndim; d++)
            ok = add_raw_u64(shape, (uint64_t)tensors[i].shape[d]);
        cJSON *offsets = ok ? cJSON_AddArrayToObject(t, "data_offsets") : NULL;
        uint64_t bytes = (uint64_t)strix_st_numel(&tensors[i]) * strix_st_dtype_size(dt[i]);
        ok = offsets && add_raw_u64(offsets, offset) && add_raw_u64(offsets, offset + bytes);
        offset += bytes;
    }
    char *json = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!json) return NULL;
    size_t raw = strlen(json), padded = (raw + 7) / 8 * 8;
    char *out = realloc(json, padded + 1);
    if (!out) { free(json); return NULL; }
    memset(out + raw, ' ', padded - raw);
    out[padded] = '\0';
    *len = padded;
    return out;
}

/* The float32 values of t as dtype d into a malloc'ed buffer (NULL with a status on failure). */
static void *encode(const strix_st_tensor *t, strix_st_dtype d, strix_status *s) {
    int64_t n = strix_st_numel(t);
    size_t size = strix_st_dtype_size(d);
    unsigned char *out = malloc((size_t)(n ? n : 1) * size);
    if (!out) {
        *s = strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
        return NULL;
    }
    static const double lo[STRIX_ST_DTYPE_COUNT] = {
        [STRIX_ST_I64] = -ST_EXACT_INT_MAX, [STRIX_ST_I32] = -2147483648.0, [STRIX_ST_U8] = 0.0};
    static const double hi[STRIX_ST_DTYPE_COUNT] = {
        [STRIX_ST_I64] = ST_EXACT_INT_MAX, [STRIX_ST_I32] = 2147483647.0, [STRIX_ST_U8] = 255.0};
    for (int64_t i = 0; i < n; i++) {
        float f = t->data[i];
        uint32_t bits;
        memcpy(&bits, &f, 4);
        double v = f;
        if (d == STRIX_ST_F16 || d == STRIX_ST_BF16) {
            uint16_t h = d == STRIX_ST_F16 ? st_float_to_half_bits(bits)
                                           : st_float_to_bf16_bits(bits);
            memcpy(out + 2 * i, &h, 2);
            continue;
        }
        if (!(v >= lo[d] && v <= hi[d]) || v != floor(v)) {
            free(out);
            *s = strix_error(STRIX_ERR_ARG, "safetensors: %s tensor '%s' holds %g, not a whole "
                             "number in its range", strix_st_dtype_name(d), t->name, v);
            return NULL;
        }
        if (d == STRIX_ST_I64) {
            int64_t x = (int64_t)v;
            memcpy(out + 8 * i, &x, 8);
        } else if (d == STRIX_ST_I32) {
            int32_t x = (int32_t)v;
            memcpy(out + 4 * i, &x, 4);
        } else {
            out[i] = (unsigned char)v;
        }
    }
    *s = STRIX_OK;
    return out;
}

static strix_status check_tensors(const strix_st_tensor *tensors, const strix_st_dtype *dt,
                                  const void *const *raw, int n, const strix_st_meta *meta,
                                  int n_meta) {
    for (int i = 0; i < n; i++) {
        const strix_st_tensor *t = &tensors[i];
        if (!t->name || !t->name[0] || strcmp(t->name, "__metadata__") == 0)
            return strix_error(STRIX_ERR_ARG, "safetensors: tensor %d has an invalid name", i);
        if (t->ndim < 0 || t->ndim > STRIX_MAX_DIMS)
            return strix_error(STRIX_ERR_ARG, "safetensors: tensor '%s' has %d dims", t->name,
                               t->ndim);
        for (int d = 0; d < t->ndim; d++)
            if (t->shape[d] < 0)
                return strix_error(STRIX_ERR_ARG, "safetensors: tensor '%s' has a negative dim",
                                   t->name);
        if ((unsigned)dt[i] >= STRIX_ST_DTYPE_COUNT)
            return strix_error(STRIX_ERR_ARG, "safetensors: tensor '%s' has an unknown dtype %d",
                               t->name, (int)dt[i]);
        if (strix_st_numel(t) > 0 && !t->data && !(raw && raw[i]))
            return strix_error(STRIX_ERR_ARG, "safetensors: tensor '%s' has no data", t->name);
        for (int j = 0; j < i; j++)
            if (strcmp(tensors[j].name, t->name) == 0)
                return strix_error(STRIX_ERR_ARG, "safetensors: duplicate tensor name '%s'",
                                   t->name);
    }
    for (int i = 0; i < n_meta; i++)
        if (!meta[i].key || !meta[i].value)
            return strix_error(STRIX_ERR_ARG, "safetensors: metadata entry %d is NULL", i);
    return STRIX_OK;
}

strix_status strix_safetensors_write(const char *path, const strix_st_tensor *tensors, int n,
                                     const strix_st_meta *meta, int n_meta) {
    return strix_safetensors_write_typed(path, tensors, NULL, n, meta, n_meta);
}

strix_status strix_safetensors_write_typed(const char *path, const strix_st_tensor *tensors,
                                           const strix_st_dtype *dtypes, int n,
                                           const strix_st_meta *meta, int n_meta) {
    return strix_safetensors_write_ex(path, tensors, dtypes, NULL, n, meta, n_meta);
}

strix_status strix_safetensors_write_ex(const char *path, const strix_st_tensor *tensors,
                                        const strix_st_dtype *dtypes, const void *const *raw,
                                        int n, const strix_st_meta *meta, int n_meta) {
    strix_st_dtype *dt = malloc((size_t)(n > 0 ? n : 1) * sizeof *dt);
    if (!dt) return strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
    for (int i = 0; i < n; i++) dt[i] = dtypes ? dtypes[i] : STRIX_ST_F32;
    strix_status s = check_tensors(tensors, dt, raw, n, meta, n_meta);
    if (s != STRIX_OK) {
        free(dt);
        return s;
    }

    size_t header_len = 0;
    char *header = build_header(tensors, dt, n, meta, n_meta, &header_len);
    unsigned char len_bytes[8];
    for (int b = 0; b < 8; b++) len_bytes[b] = (unsigned char)((uint64_t)header_len >> (8 * b));
    int chunks = n + 2;
    const void **ptrs = malloc((size_t)chunks * sizeof *ptrs);
    size_t *sizes = malloc((size_t)chunks * sizeof *sizes);
    void **encoded = calloc((size_t)(n ? n : 1), sizeof *encoded); /* converted copies */
    if (!header || !ptrs || !sizes || !encoded) {
        s = strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
    } else {
        ptrs[0] = len_bytes, sizes[0] = 8;
        ptrs[1] = header, sizes[1] = header_len;
        for (int i = 0; i < n && s == STRIX_OK; i++) {
            const strix_st_tensor *t = &tensors[i];
            sizes[i + 2] = (size_t)strix_st_numel(t) * strix_st_dtype_size(dt[i]);
            if (raw && raw[i]) ptrs[i + 2] = raw[i];
            else if (sizes[i + 2] == 0) ptrs[i + 2] = NULL;
            else if (dt[i] == STRIX_ST_F32) ptrs[i + 2] = t->data;
            else ptrs[i + 2] = encoded[i] = encode(t, dt[i], &s);
        }
        if (s == STRIX_OK)
            s = strix_write_file_atomic(path, (const void *const *)ptrs, sizes, chunks);
    }
    for (int i = 0; encoded && i < n; i++) free(encoded[i]);
    free(encoded);
    free(ptrs);
    free(sizes);
    free(header);
    free(dt);
    return s;
}
