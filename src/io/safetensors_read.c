/*
 * safetensors_read.c - the safetensors reader (strix/safetensors.h; format spec: huggingface/
 * safetensors, docs "Format"). The header is parsed with cJSON; every size and offset is validated
 * before any data is used, so a malformed or lying file gives STRIX_ERR_FORMAT, never a crash.
 *
 * The file's bytes are mapped read-only (or read, or copied by parse) and stay as they are: raw
 * points into them, F32 tensors that lie 4-byte aligned are read in place, and the others are
 * converted to float32 into one block (up front, or not at all when opened lazily: then the caller
 * converts per tensor with strix_safetensors_to_f32). Does not write; see safetensors_write.c.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "st_internal.h"

struct strix_safetensors {
    int count;
    strix_st_tensor *tensors;  /* in data-offset order */
    int *by_name;              /* tensor indices in strcmp order of names */
    char **names;
    const unsigned char *bytes; /* the whole file: `map` or `owned` */
    size_t size;
    void *map;                 /* mmap'ed file (size bytes) or NULL */
    unsigned char *owned;      /* malloc'ed copy of the file or NULL */
    float *converted;          /* float32 values of the tensors not read in place */
    int meta_count;
    strix_st_meta *meta;
    char **meta_strings;       /* 2·meta_count owned strings */
};

// ---- dtypes ------------------------------------------------------------------------------------

static const struct {
    const char *name;
    size_t size;
} dtype_table[STRIX_ST_DTYPE_COUNT] = {
    [STRIX_ST_F32] = {"F32", 4}, [STRIX_ST_I64] = {"I64", 8}, [STRIX_ST_F16] = {"F16", 2},
    [STRIX_ST_BF16] = {"BF16", 2}, [STRIX_ST_I32] = {"I32", 4}, [STRIX_ST_U8] = {"U8", 1},
};

const char *strix_st_dtype_name(strix_st_dtype d) {
    return (unsigned)d < STRIX_ST_DTYPE_COUNT ? dtype_table[d].name : "?";
}

size_t strix_st_dtype_size(strix_st_dtype d) {
    return (unsigned)d < STRIX_ST_DTYPE_COUNT ? dtype_table[d].size : 0;
}

int64_t strix_st_numel(const strix_st_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

void strix_st_convert_to_f32(strix_st_dtype d, const void *src, int64_t n, float *dst) {
    const unsigned char *p = src;
    switch (d) {
    case STRIX_ST_F32:
        if (n > 0) memcpy(dst, p, (size_t)n * 4);
        return;
    case STRIX_ST_F16:
    case STRIX_ST_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            uint32_t bits = d == STRIX_ST_F16 ? st_half_to_float_bits(h) : (uint32_t)h << 16;
            memcpy(&dst[i], &bits, 4);
        }
        return;
    case STRIX_ST_I64:
        for (int64_t i = 0; i < n; i++) {
            int64_t v;
            memcpy(&v, p + 8 * i, 8);
            dst[i] = (float)v; /* nearest float, ties to even */
        }
        return;
    case STRIX_ST_I32:
        for (int64_t i = 0; i < n; i++) {
            int32_t v;
            memcpy(&v, p + 4 * i, 4);
            dst[i] = (float)v;
        }
        return;
    case STRIX_ST_U8:
        for (int64_t i = 0; i < n; i++) dst[i] = (float)p[i];
        return;
    default:
        STRIX_ASSERT(false, "safetensors: unknown dtype %d", (int)d);
    }
}

// ---- header validation -------------------------------------------------------------------------

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
    if (!(v >= 0.0 && v <= ST_EXACT_INT_MAX) || v != floor(v)) return false;
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
    int found = -1;
    for (int d = 0; d < STRIX_ST_DTYPE_COUNT && found < 0; d++)
        if (strcmp(dtype->valuestring, dtype_table[d].name) == 0) found = d;
    if (found < 0)
        return strix_error(STRIX_ERR_FORMAT,
                           "safetensors: tensor '%s' has dtype '%.16s'; strix reads only F32, "
                           "F16, BF16, I64, I32 and U8", e->name, dtype->valuestring);
    e->dtype = (strix_st_dtype)found;
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
    uint64_t elem = dtype_table[e->dtype].size;
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

/* Sorts idx[0..n) by the names of the tensors they index (a merge sort: qsort's comparator could
 * reach the tensors only through a global); tmp has room for n. */
static void sort_by_name(const strix_st_tensor *t, int *idx, int *tmp, int n) {
    if (n < 2) return;
    int h = n / 2;
    sort_by_name(t, idx, tmp, h);
    sort_by_name(t, idx + h, tmp, n - h);
    int i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = strcmp(t[idx[j]].name, t[idx[i]].name) < 0 ? idx[j++] : idx[i++];
    while (i < h) tmp[k++] = idx[i++];
    while (j < n) tmp[k++] = idx[j++];
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
}

/* The metadata object into st (values already checked to be strings). */
static strix_status build_meta(const cJSON *meta, strix_safetensors *st) {
    int m = cJSON_GetArraySize(meta);
    st->meta = calloc((size_t)(m ? m : 1), sizeof *st->meta);
    st->meta_strings = calloc((size_t)(2 * m + 2), sizeof *st->meta_strings);
    if (!st->meta || !st->meta_strings)
        return strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
    for (const cJSON *e = meta->child; e; e = e->next) {
        for (int j = 0; j < st->meta_count; j++)
            if (strcmp(st->meta[j].key, e->string) == 0)
                return bad("safetensors: duplicate metadata key '%s'", e->string);
        char *key = dup_string(e->string), *value = dup_string(e->valuestring);
        st->meta_strings[2 * st->meta_count] = key;
        st->meta_strings[2 * st->meta_count + 1] = value;
        if (!key || !value) return strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
        st->meta[st->meta_count].key = key;
        st->meta[st->meta_count].value = value;
        st->meta_count++;
    }
    return STRIX_OK;
}

/* Validates the entries of header `root` against the data section (data, data_len bytes) and
 * fills st's tensors; lazy: convert nothing. */
static strix_status build(const cJSON *root, const unsigned char *data, uint64_t data_len,
                          bool lazy, strix_safetensors *st) {
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

    /* float32 values: in place when F32 and aligned, else a slot in the converted block */
    uint64_t convert = 0;
    for (int i = 0; i < n && s == STRIX_OK; i++) {
        const unsigned char *raw = data + entries[i].begin;
        bool in_place = entries[i].dtype == STRIX_ST_F32 && (uintptr_t)raw % sizeof(float) == 0;
        if (!in_place && !lazy) convert += (entries[i].end - entries[i].begin) /
                                           dtype_table[entries[i].dtype].size;
    }
    if (s == STRIX_OK) {
        st->count = n;
        st->tensors = calloc((size_t)(n ? n : 1), sizeof *st->tensors);
        st->by_name = calloc((size_t)(2 * n + 1), sizeof *st->by_name);
        st->names = calloc((size_t)(n ? n : 1), sizeof *st->names);
        st->converted = convert <= SIZE_MAX / sizeof(float) / 2
                            ? malloc((size_t)(convert ? convert : 1) * sizeof(float)) : NULL;
        if (!st->tensors || !st->by_name || !st->names || !st->converted)
            s = strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory (%" PRIu64 " floats)",
                            convert);
    }
    uint64_t next = 0;
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
        t->dtype = entries[i].dtype;
        t->raw = data + entries[i].begin;
        int64_t numel = (int64_t)((entries[i].end - entries[i].begin) /
                                  dtype_table[t->dtype].size);
        if (t->dtype == STRIX_ST_F32 && (uintptr_t)t->raw % sizeof(float) == 0) {
            t->data = (const float *)t->raw;
        } else if (!lazy) {
            strix_st_convert_to_f32(t->dtype, t->raw, numel, st->converted + next);
            t->data = st->converted + next;
            next += (uint64_t)numel;
        }
        st->by_name[i] = i;
    }
    if (s == STRIX_OK) sort_by_name(st->tensors, st->by_name, st->by_name + n, n);
    if (s == STRIX_OK && meta) s = build_meta(meta, st);
    free(entries);
    return s;
}

/* Validates the n bytes at p (which st then refers to) into st. */
static strix_status load(const unsigned char *p, size_t n, bool lazy, strix_safetensors *st) {
    if (n < 8)
        return strix_error(STRIX_ERR_FORMAT,
                           "safetensors: file of %zu bytes is shorter than the 8-byte header "
                           "length", n);
    uint64_t header_len = 0;
    for (int b = 0; b < 8; b++) header_len |= (uint64_t)p[b] << (8 * b);
    if (header_len > (uint64_t)(n - 8)) {
        /* A text or other file read as safetensors has a huge "length" made of its first bytes. */
        bool text = n >= 9 && p[8] != '{';
        return strix_error(STRIX_ERR_FORMAT,
                           "%ssafetensors: header length %" PRIu64 " runs past the end of the "
                           "%zu-byte file", text ? "not a safetensors file (strix writes its models, "
                           "checkpoints and agents as safetensors); " : "", header_len, n);
    }
    if (header_len > ST_HEADER_MAX)
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
    st->bytes = p;
    st->size = n;
    strix_status s = build(root, p + 8 + header_len, (uint64_t)(n - 8) - header_len, lazy, st);
    cJSON_Delete(root);
    return s;
}

// ---- opening -----------------------------------------------------------------------------------

strix_status strix_safetensors_parse(const void *bytes, size_t n, strix_safetensors **out) {
    *out = NULL;
    strix_safetensors *st = calloc(1, sizeof *st);
    if (!st) return strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
    st->owned = malloc(n ? n : 1);
    strix_status s = st->owned ? STRIX_OK
                               : strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
    if (s == STRIX_OK) {
        if (n) memcpy(st->owned, bytes, n);
        s = load(st->owned, n, false, st);
    }
    if (s != STRIX_OK) {
        strix_safetensors_free(st);
        return s;
    }
    *out = st;
    return STRIX_OK;
}

/* The whole regular file fd (size bytes) into a malloc'ed buffer. */
strix_status st_read_whole(int fd, const char *path, size_t size, unsigned char **buf) {
    *buf = malloc(size + 1);
    if (!*buf) return strix_error(STRIX_ERR_ALLOC, "out of memory reading '%s'", path);
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, *buf + got, size - got);
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (r <= 0)
            return strix_error(STRIX_ERR_IO, "cannot read '%s': %s", path,
                               r < 0 ? strerror(errno) : "the file shrank while being read");
        got += (size_t)r;
    }
    return STRIX_OK;
}

strix_status st_open_regular(const char *path, int *fd, uint64_t *size) {
    /* Only a regular file, read to its size: a FIFO would block (hence O_NONBLOCK for the open)
     * and /dev/zero never end. */
    *fd = open(path, O_RDONLY | O_NONBLOCK);
    if (*fd < 0) return strix_error(STRIX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(*fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(*fd);
        *fd = -1;
        return strix_error(STRIX_ERR_IO, "'%s' is not a regular file", path);
    }
    *size = (uint64_t)sb.st_size;
    return STRIX_OK;
}

strix_status strix_safetensors_read_ex(const char *path, const strix_st_read_options *opt,
                                       strix_safetensors **out) {
    *out = NULL;
    strix_st_read_options o = opt ? *opt : (strix_st_read_options){0};
    int fd;
    uint64_t file_size;
    strix_status opened = st_open_regular(path, &fd, &file_size);
    if (opened != STRIX_OK) return opened;
    if (file_size > SIZE_MAX / 2) {
        close(fd);
        return strix_error(STRIX_ERR_IO, "'%s' is too large to read", path);
    }
    size_t size = (size_t)file_size;
    strix_safetensors *st = calloc(1, sizeof *st);
    strix_status s = st ? STRIX_OK : strix_error(STRIX_ERR_ALLOC, "safetensors: out of memory");
    const unsigned char *bytes = NULL;
    if (s == STRIX_OK && !o.no_mmap && size > 0) {
        void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) st->map = map, st->size = size, bytes = map;
    }
    if (s == STRIX_OK && !bytes) {
        s = st_read_whole(fd, path, size, &st->owned);
        bytes = st->owned;
    }
    close(fd);
    if (s == STRIX_OK) {
        s = load(bytes, size, o.lazy, st);
        if (s != STRIX_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", strix_last_error());
            strix_error(s, "'%s': %s", path, msg);
        }
    }
    if (s != STRIX_OK) {
        strix_safetensors_free(st);
        return s;
    }
    *out = st;
    return STRIX_OK;
}

strix_status strix_safetensors_read(const char *path, strix_safetensors **out) {
    return strix_safetensors_read_ex(path, NULL, out);
}

bool strix_safetensors_is_mapped(const strix_safetensors *st) { return st->map != NULL; }

// ---- access ------------------------------------------------------------------------------------

int strix_safetensors_count(const strix_safetensors *st) { return st->count; }

const strix_st_tensor *strix_safetensors_at(const strix_safetensors *st, int i) {
    STRIX_ASSERT(i >= 0 && i < st->count, "tensor index %d of %d", i, st->count);
    return &st->tensors[i];
}

const strix_st_tensor *strix_safetensors_find(const strix_safetensors *st, const char *name) {
    int lo = 0, hi = st->count;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(st->tensors[st->by_name[mid]].name, name);
        if (c == 0) return &st->tensors[st->by_name[mid]];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

strix_st_dtype strix_safetensors_dtype(const strix_safetensors *st, const strix_st_tensor *t) {
    STRIX_ASSERT(t >= st->tensors && t < st->tensors + st->count,
                 "safetensors_dtype: tensor not from this file");
    return t->dtype;
}

strix_status strix_safetensors_to_f32(const strix_safetensors *st, const strix_st_tensor *t,
                                      float *dst, int64_t cap) {
    STRIX_ASSERT(t >= st->tensors && t < st->tensors + st->count,
                 "safetensors_to_f32: tensor not from this file");
    int64_t n = strix_st_numel(t);
    if (cap < n)
        return strix_error(STRIX_ERR_ARG, "safetensors: tensor '%s' has %" PRId64 " values, the "
                           "buffer room for %" PRId64, t->name, n, cap);
    strix_st_convert_to_f32(t->dtype, t->raw, n, dst);
    return STRIX_OK;
}

const char *strix_safetensors_meta(const strix_safetensors *st, const char *key) {
    for (int i = 0; i < st->meta_count; i++)
        if (strcmp(st->meta[i].key, key) == 0) return st->meta[i].value;
    return NULL;
}

int strix_safetensors_meta_count(const strix_safetensors *st) { return st->meta_count; }

const strix_st_meta *strix_safetensors_meta_at(const strix_safetensors *st, int i) {
    STRIX_ASSERT(i >= 0 && i < st->meta_count, "metadata index %d of %d", i, st->meta_count);
    return &st->meta[i];
}

void strix_safetensors_free(strix_safetensors *st) {
    if (!st) return;
    if (st->names)
        for (int i = 0; i < st->count; i++) free(st->names[i]);
    if (st->meta_strings)
        for (int i = 0; i < 2 * st->meta_count + 2; i++) free(st->meta_strings[i]);
    if (st->map) munmap(st->map, st->size);
    free(st->owned);
    free(st->names);
    free(st->tensors);
    free(st->by_name);
    free(st->converted);
    free(st->meta);
    free(st->meta_strings);
    free(st);
}
