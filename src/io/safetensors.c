/*
 * safetensors.c - reader and writer of the safetensors format for F32 tensors (format spec:
 * huggingface/safetensors, docs "Format"; see strix/checkpoint.h). The header is parsed with cJSON;
 * every size and offset is validated before any data is used, so a malformed or lying file gives
 * STRIX_ERR_FORMAT, never a crash.
 *
 * F32 and, for PyTorch's int64 buffers (BatchNorm's num_batches_tracked), I64: I64 tensors are
 * converted to float in place when read and from float when written (strix/state_dict.h).
 * Does not memory-map, does not read other dtypes, and assumes a little-endian host.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "strix/checkpoint.h"
#include "strix/state_dict.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host (the format stores little-endian data)"
#endif

#define HEADER_MAX (100u * 1024u * 1024u) /* the reference implementation's limit */
#define EXACT_INT_MAX 9007199254740992.0  /* 2^53: larger JSON numbers are not exact */

struct strix_safetensors {
    int count;
    strix_st_tensor *tensors;  /* in data-offset order; names and data point into the blocks */
    strix_st_dtype *dtypes;    /* the file's dtype of each tensor (data is float for all) */
    char **names;
    float *data;               /* the whole data section */
    int meta_count;
    strix_st_meta *meta;
    char **meta_strings;       /* 2·meta_count owned strings */
};

// ---- writing -----------------------------------------------------------------------------------

static int64_t numel_of(const strix_st_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

/* Adds a raw decimal integer (exact for every uint64, unlike a double). */
static bool add_raw_u64(cJSON *array, uint64_t v) {
    char text[32];
    snprintf(text, sizeof text, "%" PRIu64, v);
    cJSON *raw = cJSON_CreateRaw(text);
    return raw && cJSON_AddItemToArray(array, raw);
}

/* Bytes per element of a dtype. */
static size_t dtype_size(strix_st_dtype d) { return d == STRIX_ST_I64 ? 8 : 4; }

/* The JSON header of tensors/meta (dtypes NULL: all F32), padded with spaces to a multiple of 8
 * bytes after the 8-byte length; *len gets the padded length. NULL on out-of-memory. */
static char *build_header(const strix_st_tensor *tensors, const strix_st_dtype *dtypes, int n,
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
        strix_st_dtype dt = dtypes ? dtypes[i] : STRIX_ST_F32;
        cJSON *t = cJSON_AddObjectToObject(root, tensors[i].name);
        cJSON *shape = t ? cJSON_AddArrayToObject(t, "shape") : NULL;
        ok = t && cJSON_AddStringToObject(t, "dtype", dt == STRIX_ST_I64 ? "I64" : "F32") &&
             shape;
        for (int d = 0; ok && d < tensors[i].ndim; d++)
            ok = add_raw_u64(shape, (uint64_t)tensors[i].shape[d]);
        cJSON *offsets = ok ? cJSON_AddArrayToObject(t, "data_offsets") : NULL;
        uint64_t bytes = (uint64_t)numel_of(&tensors[i]) * dtype_size(dt);
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

strix_status strix_safetensors_write(const char *path, const strix_st_tensor *tensors, int n,
                                     const strix_st_meta *meta, int n_meta) {
    return strix_safetensors_write_typed(path, tensors, NULL, n, meta, n_meta);
}

/* A malloc'ed int64 copy of an I64 tensor's float values (NULL with a status on failure). */
static int64_t *to_i64(const strix_st_tensor *t, strix_status *s) {
    int64_t n = numel_of(t);
    int64_t *out = malloc((size_t)(n ? n : 1) * sizeof *out);
    if (!out) {
        *s = strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        double v = t->data[i];
        if (!(fabs(v) <= EXACT_INT_MAX) || v != floor(v)) {
            free(out);
            *s = strix_error(STRIX_ERR_ARG, "safetensors: I64 tensor '%s' holds %g, not a whole "
                             "number", t->name, v);
            return NULL;
        }
        out[i] = (int64_t)v;
    }
    *s = STRIX_OK;
    return out;
}

strix_status strix_safetensors_write_typed(const char *path, const strix_st_tensor *tensors,
                                           const strix_st_dtype *dtypes, int n,
                                           const strix_st_meta *meta, int n_meta) {
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
        if (numel_of(t) > 0 && !t->data)
            return strix_error(STRIX_ERR_ARG, "safetensors: tensor '%s' has no data", t->name);
        if (dtypes && dtypes[i] != STRIX_ST_F32 && dtypes[i] != STRIX_ST_I64)
            return strix_error(STRIX_ERR_ARG, "safetensors: tensor '%s' has an unknown dtype %d",
                               t->name, (int)dtypes[i]);
        for (int j = 0; j < i; j++)
            if (strcmp(tensors[j].name, t->name) == 0)
                return strix_error(STRIX_ERR_ARG, "safetensors: duplicate tensor name '%s'",
                                   t->name);
    }
    for (int i = 0; i < n_meta; i++)
        if (!meta[i].key || !meta[i].value)
            return strix_error(STRIX_ERR_ARG, "safetensors: metadata entry %d is NULL", i);

    size_t header_len = 0;
    char *header = build_header(tensors, dtypes, n, meta, n_meta, &header_len);
    if (!header) return strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory for the header");
    unsigned char len_bytes[8];
    for (int b = 0; b < 8; b++) len_bytes[b] = (unsigned char)((uint64_t)header_len >> (8 * b));

    int chunks = n + 2;
    const void **ptrs = malloc((size_t)chunks * sizeof *ptrs);
    size_t *sizes = malloc((size_t)chunks * sizeof *sizes);
    int64_t **ints = calloc((size_t)(n ? n : 1), sizeof *ints); /* I64 copies */
    strix_status s = STRIX_OK;
    if (!ptrs || !sizes || !ints) {
        s = strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
    } else {
        ptrs[0] = len_bytes, sizes[0] = 8;
        ptrs[1] = header, sizes[1] = header_len;
        for (int i = 0; i < n && s == STRIX_OK; i++) {
            strix_st_dtype dt = dtypes ? dtypes[i] : STRIX_ST_F32;
            if (dt == STRIX_ST_I64) ints[i] = to_i64(&tensors[i], &s);
            ptrs[i + 2] = dt == STRIX_ST_I64 ? (const void *)ints[i]
                                             : (const void *)tensors[i].data;
            sizes[i + 2] = (size_t)numel_of(&tensors[i]) * dtype_size(dt);
        }
        if (s == STRIX_OK)
            s = strix_write_file_atomic(path, (const void *const *)ptrs, sizes, chunks);
    }
    for (int i = 0; ints && i < n; i++) free(ints[i]);
    free(ints);
    free(ptrs);
    free(sizes);
    free(header);
    return s;
}

// ---- reading -----------------------------------------------------------------------------------

/* One header entry while validating. */
typedef struct entry {
    const char *name;
    strix_st_dtype dtype;
    int ndim;
    int64_t shape[STRIX_MAX_DIMS];
    uint64_t begin, end;
} entry;

static strix_status bad(const char *fmt, const char *name) {
    return strix_error(STRIX_ERR_FORMAT, fmt, name);
}

/* A JSON number that is an exact non-negative integer. */
static bool json_uint(const cJSON *item, uint64_t *out) {
    if (!cJSON_IsNumber(item)) return false;
    double v = item->valuedouble;
    if (!(v >= 0.0 && v <= EXACT_INT_MAX) || v != floor(v)) return false;
    *out = (uint64_t)v;
    return true;
}

static strix_status parse_entry(const cJSON *item, entry *e) {
    e->name = item->string;
    if (!cJSON_IsObject(item))
        return bad("safetensors: header entry '%s' is not an object", e->name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dtype) || !cJSON_IsArray(shape) || !cJSON_IsArray(offsets))
        return bad("safetensors: tensor '%s' lacks a string dtype, a shape array or a "
                   "data_offsets array", e->name);
    if (strcmp(dtype->valuestring, "F32") == 0)
        e->dtype = STRIX_ST_F32;
    else if (strcmp(dtype->valuestring, "I64") == 0)
        e->dtype = STRIX_ST_I64;
    else
        return strix_error(STRIX_ERR_FORMAT,
                           "safetensors: tensor '%s' has dtype '%.16s'; strix reads only F32 "
                           "and I64", e->name, dtype->valuestring);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > STRIX_MAX_DIMS)
        return strix_error(STRIX_ERR_FORMAT, "safetensors: tensor '%s' has %d dims (at most %d)",
                           e->name, ndim, STRIX_MAX_DIMS);
    e->ndim = ndim;
    uint64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        uint64_t dim;
        if (!json_uint(cJSON_GetArrayItem(shape, d), &dim) || dim > (1ull << 40))
            return bad("safetensors: tensor '%s' has a shape entry that is not a valid size",
                       e->name);
        e->shape[d] = (int64_t)dim;
        if (dim && numel > (1ull << 60) / dim)
            return bad("safetensors: tensor '%s' has an impossibly large shape", e->name);
        numel *= dim;
    }
    if (cJSON_GetArraySize(offsets) != 2 ||
        !json_uint(cJSON_GetArrayItem(offsets, 0), &e->begin) ||
        !json_uint(cJSON_GetArrayItem(offsets, 1), &e->end))
        return bad("safetensors: tensor '%s' needs data_offsets [begin, end] of two integers",
                   e->name);
    if (e->end < e->begin)
        return bad("safetensors: tensor '%s' has data_offsets with end before begin", e->name);
    uint64_t elem = dtype_size(e->dtype);
    if (e->end - e->begin != numel * elem)
        return strix_error(STRIX_ERR_FORMAT,
                           "safetensors: tensor '%s' spans %" PRIu64 " bytes but its shape needs "
                           "%" PRIu64 " (numel x %" PRIu64 ")", e->name, e->end - e->begin,
                           numel * elem, elem);
    return STRIX_OK;
}

static int compare_offsets(const void *a, const void *b) {
    const entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Fills st from the parsed header root and the data section (data, data_len bytes). */
static strix_status build(const cJSON *root, const unsigned char *data, uint64_t data_len,
                          strix_safetensors *st) {
    int items = cJSON_GetArraySize(root);
    entry *entries = calloc((size_t)(items ? items : 1), sizeof *entries);
    if (!entries) return strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
    strix_status s = STRIX_OK;
    const cJSON *meta = NULL;
    int n = 0;
    for (const cJSON *item = root->child; item && s == STRIX_OK; item = item->next) {
        for (const cJSON *prev = root->child; prev != item; prev = prev->next)
            if (strcmp(prev->string, item->string) == 0) {
                s = bad("safetensors: duplicate name '%s' in the header", item->string);
                break;
            }
        if (s != STRIX_OK) break;
        if (strcmp(item->string, "__metadata__") == 0) {
            meta = item;
            if (!cJSON_IsObject(meta)) s = bad("safetensors: %s is not an object", item->string);
            for (const cJSON *m = meta->child; m && s == STRIX_OK; m = m->next)
                if (!cJSON_IsString(m))
                    s = bad("safetensors: metadata value of '%s' is not a string", m->string);
            continue;
        }
        s = parse_entry(item, &entries[n++]);
    }
    if (s == STRIX_OK) qsort(entries, (size_t)n, sizeof *entries, compare_offsets);
    uint64_t expect = 0;
    for (int i = 0; i < n && s == STRIX_OK; i++) {
        if (entries[i].end > data_len)
            s = strix_error(STRIX_ERR_FORMAT,
                            "safetensors: tensor '%s' has data_offsets [%" PRIu64 ", %" PRIu64
                            "] past the end of the %" PRIu64 "-byte data section",
                            entries[i].name, entries[i].begin, entries[i].end, data_len);
        else if (entries[i].begin < expect)
            s = strix_error(STRIX_ERR_FORMAT, "safetensors: tensors '%s' and '%s' overlap",
                            entries[i - 1].name, entries[i].name);
        else if (entries[i].begin > expect)
            s = strix_error(STRIX_ERR_FORMAT,
                            "safetensors: hole of %" PRIu64 " bytes before tensor '%s'",
                            entries[i].begin - expect, entries[i].name);
        expect = entries[i].end;
    }
    if (s == STRIX_OK && expect != data_len)
        s = strix_error(STRIX_ERR_FORMAT,
                        "safetensors: the data section has %" PRIu64 " bytes but the tensors "
                        "cover %" PRIu64, data_len, expect);

    if (s == STRIX_OK) {
        st->count = n;
        st->tensors = calloc((size_t)(n ? n : 1), sizeof *st->tensors);
        st->dtypes = calloc((size_t)(n ? n : 1), sizeof *st->dtypes);
        st->names = calloc((size_t)(n ? n : 1), sizeof *st->names);
        st->data = malloc(data_len ? data_len : 1);
        if (!st->tensors || !st->dtypes || !st->names || !st->data)
            s = strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory (%" PRIu64 " bytes)",
                            data_len);
    }
    for (int i = 0; i < n && s == STRIX_OK; i++) {
        st->names[i] = dup_string(entries[i].name);
        if (!st->names[i]) {
            s = strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
            break;
        }
        strix_st_tensor *t = &st->tensors[i];
        t->name = st->names[i];
        t->ndim = entries[i].ndim;
        for (int d = 0; d < STRIX_MAX_DIMS; d++)
            t->shape[d] = d < t->ndim ? entries[i].shape[d] : 1;
        t->data = st->data + entries[i].begin / sizeof(float);
        st->dtypes[i] = entries[i].dtype;
    }
    if (s == STRIX_OK && data_len) memcpy(st->data, data, data_len);
    /* I64 -> float in place: element k moves from byte 8k to byte 4k, read before written */
    for (int i = 0; i < n && s == STRIX_OK; i++) {
        if (entries[i].dtype != STRIX_ST_I64) continue;
        unsigned char *base = (unsigned char *)st->data + entries[i].begin;
        uint64_t count = (entries[i].end - entries[i].begin) / 8;
        for (uint64_t k = 0; k < count; k++) {
            int64_t v;
            memcpy(&v, base + 8 * k, sizeof v);
            float f = (float)v;
            memcpy(base + 4 * k, &f, sizeof f);
        }
    }
    if (s == STRIX_OK && meta) {
        int m = cJSON_GetArraySize(meta);
        st->meta = calloc((size_t)(m ? m : 1), sizeof *st->meta);
        st->meta_strings = calloc((size_t)(2 * m + 2), sizeof *st->meta_strings);
        if (!st->meta || !st->meta_strings)
            s = strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
        for (const cJSON *e = meta->child; e && s == STRIX_OK; e = e->next) {
            for (int j = 0; j < st->meta_count; j++)
                if (strcmp(st->meta[j].key, e->string) == 0)
                    s = bad("safetensors: duplicate metadata key '%s'", e->string);
            if (s != STRIX_OK) break;
            char *key = dup_string(e->string), *value = dup_string(e->valuestring);
            st->meta_strings[2 * st->meta_count] = key;
            st->meta_strings[2 * st->meta_count + 1] = value;
            if (!key || !value) {
                s = strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
                break;
            }
            st->meta[st->meta_count].key = key;
            st->meta[st->meta_count].value = value;
            st->meta_count++;
        }
    }
    free(entries);
    return s;
}

strix_status strix_safetensors_parse(const void *bytes, size_t n, strix_safetensors **out) {
    *out = NULL;
    const unsigned char *p = bytes;
    if (n < 8)
        return strix_error(STRIX_ERR_FORMAT,
                           "safetensors: file of %zu bytes is shorter than the 8-byte header "
                           "length", n);
    uint64_t header_len = 0;
    for (int b = 0; b < 8; b++) header_len |= (uint64_t)p[b] << (8 * b);
    if (header_len > (uint64_t)(n - 8))
        return strix_error(STRIX_ERR_FORMAT,
                           "safetensors: header length %" PRIu64 " runs past the end of the "
                           "%zu-byte file", header_len, n);
    if (header_len > HEADER_MAX)
        return strix_error(STRIX_ERR_FORMAT, "safetensors: header of %" PRIu64 " bytes is over "
                           "the 100 MB limit", header_len);
    const char *header = (const char *)p + 8;
    if (header_len < 2 || header[0] != '{')
        return strix_error(STRIX_ERR_FORMAT, "safetensors: header does not start with '{'");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(header, (size_t)header_len, &end, 0);
    if (!root) {
        size_t at = end && end >= header ? (size_t)(end - header) : 0;
        return strix_error(STRIX_ERR_FORMAT, "safetensors: malformed JSON header near byte %zu",
                           at);
    }
    for (const char *c = end; c < header + header_len; c++)
        if (*c != ' ' && *c != '\t' && *c != '\n' && *c != '\r') {
            cJSON_Delete(root);
            return strix_error(STRIX_ERR_FORMAT,
                               "safetensors: unexpected bytes after the JSON header");
        }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return strix_error(STRIX_ERR_FORMAT, "safetensors: header is not a JSON object");
    }
    strix_safetensors *st = calloc(1, sizeof *st);
    strix_status s = st ? STRIX_OK : strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
    if (s == STRIX_OK)
        s = build(root, p + 8 + header_len, (uint64_t)(n - 8) - header_len, st);
    cJSON_Delete(root);
    if (s != STRIX_OK) {
        strix_safetensors_free(st);
        return s;
    }
    *out = st;
    return STRIX_OK;
}

strix_status strix_safetensors_read(const char *path, strix_safetensors **out) {
    *out = NULL;
    /* Only a regular file, read to its size: a FIFO would block (hence O_NONBLOCK for the open)
     * and /dev/zero never end. */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) return strix_error(STRIX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return strix_error(STRIX_ERR_IO, "'%s' is not a regular file", path);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return strix_error(STRIX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    }
    if ((uint64_t)st.st_size > SIZE_MAX / 2) {
        fclose(f);
        return strix_error(STRIX_ERR_IO, "'%s' is too large to read", path);
    }
    size_t size = (size_t)st.st_size;
    unsigned char *buf = malloc(size ? size : 1);
    strix_status s = STRIX_OK;
    if (!buf) s = strix_error(STRIX_ERR_ALLOC, "out of memory reading '%s'", path);
    else if (fread(buf, 1, size, f) != size)
        s = strix_error(STRIX_ERR_IO, "cannot read '%s': %s", path,
                        ferror(f) ? strerror(errno) : "the file shrank while being read");
    fclose(f);
    if (s == STRIX_OK) {
        s = strix_safetensors_parse(buf, size, out);
        if (s != STRIX_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", strix_last_error());
            strix_error(s, "'%s': %s", path, msg);
        }
    }
    free(buf);
    return s;
}

int strix_safetensors_count(const strix_safetensors *st) { return st->count; }

const strix_st_tensor *strix_safetensors_at(const strix_safetensors *st, int i) {
    STRIX_ASSERT(i >= 0 && i < st->count, "tensor index %d of %d", i, st->count);
    return &st->tensors[i];
}

const strix_st_tensor *strix_safetensors_find(const strix_safetensors *st, const char *name) {
    for (int i = 0; i < st->count; i++)
        if (strcmp(st->tensors[i].name, name) == 0) return &st->tensors[i];
    return NULL;
}

strix_st_dtype strix_safetensors_dtype(const strix_safetensors *st, const strix_st_tensor *t) {
    STRIX_ASSERT(t >= st->tensors && t < st->tensors + st->count,
                 "safetensors_dtype: tensor not from this file");
    return st->dtypes[t - st->tensors];
}

const char *strix_safetensors_meta(const strix_safetensors *st, const char *key) {
    for (int i = 0; i < st->meta_count; i++)
        if (strcmp(st->meta[i].key, key) == 0) return st->meta[i].value;
    return NULL;
}

void strix_safetensors_free(strix_safetensors *st) {
    if (!st) return;
    if (st->names)
        for (int i = 0; i < st->count; i++) free(st->names[i]);
    if (st->meta_strings)
        for (int i = 0; i < 2 * st->meta_count + 2; i++) free(st->meta_strings[i]);
    free(st->names);
    free(st->tensors);
    free(st->dtypes);
    free(st->data);
    free(st->meta);
    free(st->meta_strings);
    free(st);
}
