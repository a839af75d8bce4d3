/*
 * gguf.c - the GGUF reader of strix/gguf.h (format: ggml docs/gguf.md, versions 2 and 3). Every
 * count, length and offset is checked against the bytes left before it is used or allocated for
 * (so a lying header is refused with STRIX_ERR_FORMAT, never read past, and never makes an
 * allocation larger than the file); keys and tensor names get sorted indices for lookups and
 * duplicate checks; string arrays get an offset per element so element i is found in O(1).
 *
 * The file is mapped read-only (or read, or copied by parse) and stays as it is: strings, arrays
 * and tensor data point into it. Dequantization is gguf_quant.c. Does not write GGUF.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "st_internal.h" /* st_open_regular, st_read_whole */
#include "strix/gguf.h"

#define GGUF_DEFAULT_ALIGNMENT 32
#define NAME_SHOWN 96 /* bytes of a key or tensor name an error message shows at most */

/* One metadata pair. */
typedef struct gguf_kv {
    const char *key;         /* NUL-terminated copy (in the names block) */
    strix_gguf_vtype type;
    strix_gguf_vtype elem;   /* ARRAY: the element type */
    uint64_t count;          /* ARRAY: elements; STRING: bytes */
    const unsigned char *at; /* the value (STRING: its first byte; ARRAY: its first element) */
    uint64_t *str_at;        /* STRING arrays: each element's length prefix, as a file offset */
} gguf_kv;

/* A name and what it names, for the sorted indices. */
typedef struct name_ref {
    const char *name;
    size_t index;
} name_ref;

struct strix_gguf {
    uint32_t version;
    size_t alignment, data_offset;
    size_t kv_count;
    gguf_kv *kv;               /* in file order */
    name_ref *kv_sorted;       /* by key */
    size_t tensor_count;
    strix_gguf_tensor *tensors; /* in file order */
    name_ref *tensor_sorted;   /* by name */
    char *names;               /* every key and tensor name, NUL-terminated, one block */
    const unsigned char *bytes; /* the whole file: `map` or `owned` */
    size_t size;
    void *map;                 /* mmap'ed file (size bytes) or NULL */
    unsigned char *owned;      /* malloc'ed copy or NULL */
};

/* Bytes of a scalar of each value type (0: STRING, ARRAY). */
static const size_t scalar_size[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static const char *const vtype_names[13] = {
    "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING", "ARRAY",
    "UINT64", "INT64", "FLOAT64",
};

const char *strix_gguf_vtype_name(int v) { return v >= 0 && v < 13 ? vtype_names[v] : NULL; }

// ---- reading bytes -----------------------------------------------------------------------------

/* A position in the n bytes at base. */
typedef struct reader {
    const unsigned char *base;
    size_t size, pos;
} reader;

static size_t left(const reader *r) { return r->size - r->pos; }

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--) v = v << 8 | p[b];
    return v;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool take_u32(reader *r, uint32_t *v) {
    if (left(r) < 4) return false;
    *v = le32(r->base + r->pos);
    r->pos += 4;
    return true;
}

static bool take_u64(reader *r, uint64_t *v) {
    if (left(r) < 8) return false;
    *v = le64(r->base + r->pos);
    r->pos += 8;
    return true;
}

/* "the N-byte file ends inside <what>['<name>']" (name NULL: none). */
static strix_status ends(const reader *r, const char *what, const char *name) {
    return strix_error(STRIX_ERR_FORMAT, "gguf: the %zu-byte file ends inside %s%s%s%s",
                       r->size, what, name ? " '" : "", name ? name : "", name ? "'" : "");
}

/* A string at r: its bytes (*s, *len) with the reader past it. false when it runs past the end. */
static bool take_string(reader *r, const char **s, uint64_t *len) {
    if (!take_u64(r, len) || *len > left(r)) return false;
    *s = (const char *)r->base + r->pos;
    r->pos += (size_t)*len;
    return true;
}

/* A key or tensor name (len bytes at p) as an error message shows it, so the message stays one
 * line: at most NAME_SHOWN bytes ("..." after a longer one), control bytes as \xNN. */
typedef struct label {
    char s[NAME_SHOWN * 4 + 4];
} label;

static label show(const char *p, uint64_t len) {
    label l;
    size_t k = 0;
    for (uint64_t i = 0; i < len && i < NAME_SHOWN; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x20 || c == 0x7f) k += (size_t)snprintf(l.s + k, 5, "\\x%02x", c);
        else l.s[k++] = (char)c;
    }
    if (len > NAME_SHOWN) memcpy(l.s + k, "...", 3), k += 3;
    l.s[k] = '\0';
    return l;
}

// ---- metadata ----------------------------------------------------------------------------------

/* The value of pair kv (key k as messages show it) at r. */
static strix_status parse_value(reader *r, gguf_kv *kv, const char *k) {
    uint32_t type;
    if (!take_u32(r, &type)) return ends(r, "the value type of key", k);
    if (type > STRIX_GGUF_FLOAT64)
        return strix_error(STRIX_ERR_FORMAT, "gguf: key '%s' has unknown value type %" PRIu32,
                           k, type);
    kv->type = (strix_gguf_vtype)type;
    if (type == STRIX_GGUF_STRING) {
        const char *s;
        if (!take_string(r, &s, &kv->count)) return ends(r, "the string value of key", k);
        kv->at = (const unsigned char *)s;
        return STRIX_OK;
    }
    if (type != STRIX_GGUF_ARRAY) {
        if (left(r) < scalar_size[type]) return ends(r, "the value of key", k);
        kv->at = r->base + r->pos;
        r->pos += scalar_size[type];
        return STRIX_OK;
    }
    uint32_t elem;
    if (!take_u32(r, &elem) || !take_u64(r, &kv->count))
        return ends(r, "the array header of key", k);
    if (elem == STRIX_GGUF_ARRAY)
        return strix_error(STRIX_ERR_FORMAT, "gguf: key '%s' is an array of arrays, which strix "
                           "does not read", k);
    if (elem > STRIX_GGUF_FLOAT64)
        return strix_error(STRIX_ERR_FORMAT, "gguf: array of key '%s' has unknown element type "
                           "%" PRIu32, k, elem);
    kv->elem = (strix_gguf_vtype)elem;
    kv->at = r->base + r->pos;
    if (elem != STRIX_GGUF_STRING) {
        if (kv->count > left(r) / scalar_size[elem])
            return strix_error(STRIX_ERR_FORMAT, "gguf: array of key '%s' claims %" PRIu64
                               " %s elements, more than the %zu bytes left in the file hold",
                               k, kv->count, vtype_names[elem], left(r));
        r->pos += (size_t)kv->count * scalar_size[elem];
        return STRIX_OK;
    }
    /* each string takes at least its 8-byte length: bounds the offsets' allocation */
    if (kv->count > left(r) / 8)
        return strix_error(STRIX_ERR_FORMAT, "gguf: array of key '%s' claims %" PRIu64
                           " strings, more than the %zu bytes left in the file hold", k,
                           kv->count, left(r));
    kv->str_at = malloc((size_t)(kv->count ? kv->count : 1) * sizeof *kv->str_at);
    if (!kv->str_at) return strix_error(STRIX_ERR_ALLOC, "gguf: out of memory");
    for (uint64_t i = 0; i < kv->count; i++) {
        kv->str_at[i] = r->pos;
        const char *s;
        uint64_t len;
        if (!take_string(r, &s, &len)) return ends(r, "a string of the array of key", k);
    }
    return STRIX_OK;
}

static int compare_refs(const void *a, const void *b) {
    const name_ref *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

static const name_ref *find_ref(const name_ref *refs, size_t n, const char *name) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(refs[mid].name, name);
        if (c == 0) return &refs[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static const gguf_kv *find_kv(const strix_gguf *g, const char *key) {
    const name_ref *ref = find_ref(g->kv_sorted, g->kv_count, key);
    return ref ? &g->kv[ref->index] : NULL;
}

// ---- tensor infos ------------------------------------------------------------------------------

/* One tensor info while validating. */
typedef struct info {
    const char *name; /* in the file */
    uint64_t name_len;
    int ndim;
    int64_t ne[4];
    strix_gguf_type type;
    uint64_t offset, nbytes, numel;
} info;

static strix_status parse_info(reader *r, info *t, size_t file_size) {
    if (!take_string(r, &t->name, &t->name_len)) return ends(r, "a tensor name", NULL);
    label shown = show(t->name, t->name_len);
    const char *nm = shown.s;
    if (memchr(t->name, 0, (size_t)t->name_len))
        return strix_error(STRIX_ERR_FORMAT, "gguf: tensor name '%s' holds a NUL byte", nm);
    uint32_t ndim;
    if (!take_u32(r, &ndim)) return ends(r, "the tensor info of", nm);
    if (ndim < 1 || ndim > 4)
        return strix_error(STRIX_ERR_FORMAT, "gguf: tensor '%s' has %" PRIu32 " dims (1 to 4 "
                           "are allowed)", nm, ndim);
    t->ndim = (int)ndim;
    uint64_t numel = 1;
    for (int d = 0; d < 4; d++) {
        uint64_t ne = 1;
        if (d < t->ndim && !take_u64(r, &ne)) return ends(r, "the shape of tensor", nm);
        if (ne > (uint64_t)INT64_MAX)
            return strix_error(STRIX_ERR_FORMAT, "gguf: tensor '%s' has a negative size in "
                               "dim %d", nm, d);
        if (ne && numel > (uint64_t)INT64_MAX / ne)
            return strix_error(STRIX_ERR_FORMAT, "gguf: tensor '%s' has an impossibly large "
                               "shape (its element count overflows)", nm);
        t->ne[d] = (int64_t)ne;
        numel *= ne;
    }
    t->numel = numel;
    uint32_t type;
    if (!take_u32(r, &type) || !take_u64(r, &t->offset))
        return ends(r, "the tensor info of", nm);
    size_t bv, bb;
    if (!strix_gguf_type_block((strix_gguf_type)type, &bv, &bb)) {
        const char *name = strix_gguf_type_name((int)(type > 1000 ? 1000 : type));
        if (name)
            return strix_error(STRIX_ERR_UNSUPPORTED, "gguf: tensor '%s' has type %s (type "
                               "%" PRIu32 "), which strix does not read (it reads F32, F16, BF16, "
                               "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K and Q6_K)", nm, name, type);
        return strix_error(STRIX_ERR_FORMAT, "gguf: tensor '%s' has unknown type %" PRIu32, nm,
                           type);
    }
    t->type = (strix_gguf_type)type;
    if ((uint64_t)t->ne[0] % bv != 0)
        return strix_error(STRIX_ERR_FORMAT, "gguf: tensor '%s' has rows of %" PRId64 " values, "
                           "not a multiple of the %s block of %zu", nm, t->ne[0],
                           strix_gguf_type_name((int)type), bv);
    uint64_t blocks = numel / bv;
    if (blocks > file_size / bb)
        return strix_error(STRIX_ERR_FORMAT, "gguf: tensor '%s' needs more bytes (%" PRIu64
                           " blocks of %zu) than the %zu-byte file holds", nm, blocks, bb,
                           file_size);
    t->nbytes = blocks * bb;
    return STRIX_OK;
}

static int compare_offsets(const void *a, const void *b) {
    const info *const *x = a, *const *y = b;
    if ((*x)->offset != (*y)->offset) return (*x)->offset < (*y)->offset ? -1 : 1;
    return *x < *y ? -1 : *x > *y;
}

/* Data ranges inside the data section (data_len bytes) and no two tensors overlapping. */
static strix_status check_ranges(info *infos, size_t n, uint64_t data_len, size_t alignment) {
    for (size_t i = 0; i < n; i++) {
        const info *t = &infos[i];
        label shown = show(t->name, t->name_len);
        const char *nm = shown.s;
        if (t->offset % alignment != 0)
            return strix_error(STRIX_ERR_FORMAT, "gguf: tensor '%s' has offset %" PRIu64 ", not "
                               "a multiple of the alignment %zu", nm, t->offset,
                               alignment);
        if (t->offset > data_len || t->nbytes > data_len - t->offset)
            return strix_error(STRIX_ERR_FORMAT, "gguf: tensor '%s' (bytes %" PRIu64 " to %"
                               PRIu64 " of the data section) runs past the end of the %" PRIu64
                               "-byte data section", nm, t->offset,
                               t->offset + t->nbytes, data_len);
    }
    const info **order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return strix_error(STRIX_ERR_ALLOC, "gguf: out of memory");
    for (size_t i = 0; i < n; i++) order[i] = &infos[i];
    qsort(order, n, sizeof *order, compare_offsets);
    strix_status s = STRIX_OK;
    const info *last = NULL; /* the nonempty tensor that ends last so far */
    for (size_t i = 0; i < n && s == STRIX_OK; i++) {
        const info *t = order[i];
        if (t->nbytes == 0) continue;
        if (last && last->offset + last->nbytes > t->offset)
            s = strix_error(STRIX_ERR_FORMAT, "gguf: the data of tensors '%s' and '%s' "
                            "overlap", show(last->name, last->name_len).s,
                            show(t->name, t->name_len).s);
        if (!last || t->offset + t->nbytes > last->offset + last->nbytes) last = t;
    }
    free(order);
    return s;
}

// ---- the whole file ----------------------------------------------------------------------------

/* Copies name (len bytes) and a NUL to *cursor and moves the cursor past them. */
static const char *copy_name(char **cursor, const char *name, uint64_t len) {
    char *at = *cursor;
    memcpy(at, name, (size_t)len);
    at[len] = '\0';
    *cursor += len + 1;
    return at;
}

/* A sorted index of n names; the first duplicate's name into *dup (NULL if none). */
static void sort_names(name_ref *refs, size_t n, const char **dup) {
    qsort(refs, n, sizeof *refs, compare_refs);
    *dup = NULL;
    for (size_t i = 1; i < n && !*dup; i++)
        if (strcmp(refs[i - 1].name, refs[i].name) == 0) *dup = refs[i].name;
}

static strix_status parse_header(reader *r, strix_gguf *g, uint64_t *n_tensors, uint64_t *n_kv) {
    if (r->size < 4 || memcmp(r->base, "GGUF", 4) != 0)
        return strix_error(STRIX_ERR_FORMAT, "gguf: not a GGUF file (it does not start with "
                           "\"GGUF\")");
    r->pos = 4;
    uint32_t version;
    if (!take_u32(r, &version)) return ends(r, "the header", NULL);
    if (version == 1)
        return strix_error(STRIX_ERR_FORMAT, "gguf: version 1 (32-bit counts) is not supported; "
                           "strix reads GGUF versions 2 and 3");
    if (version == 0x02000000u || version == 0x03000000u)
        return strix_error(STRIX_ERR_FORMAT, "gguf: a big-endian GGUF file is not supported");
    if (version != 2 && version != 3)
        return strix_error(STRIX_ERR_FORMAT, "gguf: unknown version %" PRIu32 "; strix reads "
                           "GGUF versions 2 and 3", version);
    g->version = version;
    if (!take_u64(r, n_tensors) || !take_u64(r, n_kv)) return ends(r, "the header", NULL);
    /* the least a pair takes: 8 (key length) + 4 (type) + 1 (a u8 value); a tensor info: 8
     * (name length) + 4 (n_dims) + 8 (one ne) + 4 (type) + 8 (offset) */
    if (*n_kv > left(r) / 13)
        return strix_error(STRIX_ERR_FORMAT, "gguf: the header claims %" PRIu64 " metadata pairs, "
                           "more than the %zu bytes after it hold", *n_kv, left(r));
    if (*n_tensors > left(r) / 32 || *n_tensors > (left(r) - *n_kv * 13) / 32)
        return strix_error(STRIX_ERR_FORMAT, "gguf: the header claims %" PRIu64 " tensors, more "
                           "than the %zu bytes after it hold", *n_tensors, left(r));
    return STRIX_OK;
}

/* The metadata pairs into g (keys still pointing into the file: key_at/key_len). */
static strix_status parse_kv(reader *r, strix_gguf *g, const char **key_at, uint64_t *key_len) {
    for (size_t i = 0; i < g->kv_count; i++) {
        if (!take_string(r, &key_at[i], &key_len[i])) return ends(r, "a metadata key", NULL);
        label shown = show(key_at[i], key_len[i]);
        if (memchr(key_at[i], 0, (size_t)key_len[i]))
            return strix_error(STRIX_ERR_FORMAT, "gguf: metadata key '%s' holds a NUL byte",
                               shown.s);
        STRIX_TRY(parse_value(r, &g->kv[i], shown.s));
    }
    return STRIX_OK;
}

static strix_status parse_alignment(strix_gguf *g) {
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = find_kv(g, "general.alignment");
    if (!kv) return STRIX_OK;
    if (kv->type != STRIX_GGUF_UINT32)
        return strix_error(STRIX_ERR_FORMAT, "gguf: general.alignment is a %s, not a UINT32",
                           vtype_names[kv->type]);
    uint32_t a = le32(kv->at);
    if (a == 0 || (a & (a - 1)) != 0)
        return strix_error(STRIX_ERR_FORMAT, "gguf: general.alignment %" PRIu32 " is not a "
                           "nonzero power of two", a);
    g->alignment = a;
    return STRIX_OK;
}

/* Validates the n bytes at p (which g then refers to) into g. */
static strix_status load(const unsigned char *p, size_t n, strix_gguf *g) {
    reader r = {p, n, 0};
    g->bytes = p;
    g->size = n;
    uint64_t n_tensors = 0, n_kv = 0;
    STRIX_TRY(parse_header(&r, g, &n_tensors, &n_kv));
    g->kv_count = (size_t)n_kv;
    g->tensor_count = (size_t)n_tensors;
    /* the counts are bounded by the file size above, so these allocations are too */
    g->kv = calloc(g->kv_count + 1, sizeof *g->kv);
    g->kv_sorted = calloc(g->kv_count + 1, sizeof *g->kv_sorted);
    g->tensors = calloc(g->tensor_count + 1, sizeof *g->tensors);
    g->tensor_sorted = calloc(g->tensor_count + 1, sizeof *g->tensor_sorted);
    const char **key_at = calloc(g->kv_count + 1, sizeof *key_at);
    uint64_t *key_len = calloc(g->kv_count + 1, sizeof *key_len);
    info *infos = calloc(g->tensor_count + 1, sizeof *infos);
    strix_status s = STRIX_OK;
    if (!g->kv || !g->kv_sorted || !g->tensors || !g->tensor_sorted || !key_at || !key_len ||
        !infos)
        s = strix_error(STRIX_ERR_ALLOC, "gguf: out of memory");
    if (s == STRIX_OK) s = parse_kv(&r, g, key_at, key_len);
    for (size_t i = 0; i < g->tensor_count && s == STRIX_OK; i++)
        s = parse_info(&r, &infos[i], n);

    /* one block for every key and name (each under the file size), then the sorted indices */
    size_t names_len = 1;
    for (size_t i = 0; i < g->kv_count && s == STRIX_OK; i++) names_len += key_len[i] + 1;
    for (size_t i = 0; i < g->tensor_count && s == STRIX_OK; i++)
        names_len += infos[i].name_len + 1;
    if (s == STRIX_OK && !(g->names = malloc(names_len)))
        s = strix_error(STRIX_ERR_ALLOC, "gguf: out of memory");
    const char *dup = NULL;
    if (s == STRIX_OK) {
        char *cursor = g->names;
        for (size_t i = 0; i < g->kv_count; i++) {
            g->kv[i].key = copy_name(&cursor, key_at[i], key_len[i]);
            g->kv_sorted[i] = (name_ref){g->kv[i].key, i};
        }
        for (size_t i = 0; i < g->tensor_count; i++) {
            g->tensors[i].name = copy_name(&cursor, infos[i].name, infos[i].name_len);
            g->tensor_sorted[i] = (name_ref){g->tensors[i].name, i};
        }
        sort_names(g->kv_sorted, g->kv_count, &dup);
        if (dup)
            s = strix_error(STRIX_ERR_FORMAT, "gguf: duplicate metadata key '%s'",
                            show(dup, strlen(dup)).s);
    }
    if (s == STRIX_OK) {
        sort_names(g->tensor_sorted, g->tensor_count, &dup);
        if (dup)
            s = strix_error(STRIX_ERR_FORMAT, "gguf: duplicate tensor name '%s'",
                            show(dup, strlen(dup)).s);
    }
    if (s == STRIX_OK) s = parse_alignment(g);

    /* the data section starts at the first multiple of the alignment after the tensor infos */
    uint64_t data_offset = 0;
    if (s == STRIX_OK)
        data_offset = ((uint64_t)r.pos + g->alignment - 1) / g->alignment * g->alignment;
    if (s == STRIX_OK && g->tensor_count > 0 && data_offset > n)
        s = strix_error(STRIX_ERR_FORMAT, "gguf: the data section would start at byte %" PRIu64
                        ", past the end of the %zu-byte file", data_offset, n);
    g->data_offset = (size_t)data_offset;
    if (s == STRIX_OK && g->tensor_count > 0)
        s = check_ranges(infos, g->tensor_count, n - data_offset, g->alignment);
    for (size_t i = 0; i < g->tensor_count && s == STRIX_OK; i++) {
        strix_gguf_tensor *t = &g->tensors[i];
        t->ndim = infos[i].ndim;
        memcpy(t->ne, infos[i].ne, sizeof t->ne);
        t->type = infos[i].type;
        t->data = p + data_offset + infos[i].offset;
        t->nbytes = (size_t)infos[i].nbytes;
        t->numel = (size_t)infos[i].numel;
    }
    free(key_at);
    free(key_len);
    free(infos);
    return s;
}

// ---- opening -----------------------------------------------------------------------------------

strix_status strix_gguf_parse(const void *bytes, size_t n, strix_gguf **out) {
    *out = NULL;
    strix_gguf *g = calloc(1, sizeof *g);
    if (!g) return strix_error(STRIX_ERR_ALLOC, "gguf: out of memory");
    g->owned = malloc(n ? n : 1);
    strix_status s = g->owned ? STRIX_OK : strix_error(STRIX_ERR_ALLOC, "gguf: out of memory");
    if (s == STRIX_OK) {
        if (n) memcpy(g->owned, bytes, n);
        s = load(g->owned, n, g);
    }
    if (s != STRIX_OK) {
        strix_gguf_free(g);
        return s;
    }
    *out = g;
    return STRIX_OK;
}

strix_status strix_gguf_open_ex(const char *path, const strix_gguf_options *opt,
                                strix_gguf **out) {
    *out = NULL;
    strix_gguf_options o = opt ? *opt : (strix_gguf_options){0};
    int fd;
    uint64_t file_size;
    STRIX_TRY(st_open_regular(path, &fd, &file_size));
    if (file_size > SIZE_MAX / 2) {
        close(fd);
        return strix_error(STRIX_ERR_IO, "'%s' is too large to read", path);
    }
    size_t size = (size_t)file_size;
    strix_gguf *g = calloc(1, sizeof *g);
    strix_status s = g ? STRIX_OK : strix_error(STRIX_ERR_ALLOC, "gguf: out of memory");
    const unsigned char *bytes = NULL;
    if (s == STRIX_OK && !o.no_mmap && size > 0) {
        void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) g->map = map, g->size = size, bytes = map;
    }
    if (s == STRIX_OK && !bytes) {
        s = st_read_whole(fd, path, size, &g->owned);
        bytes = g->owned;
    }
    close(fd);
    if (s == STRIX_OK) {
        s = load(bytes, size, g);
        if (s != STRIX_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", strix_last_error());
            strix_error(s, "'%s': %s", path, msg);
        }
    }
    if (s != STRIX_OK) {
        strix_gguf_free(g);
        return s;
    }
    *out = g;
    return STRIX_OK;
}

strix_status strix_gguf_open(const char *path, strix_gguf **out) {
    return strix_gguf_open_ex(path, NULL, out);
}

void strix_gguf_free(strix_gguf *g) {
    if (!g) return;
    if (g->kv)
        for (size_t i = 0; i < g->kv_count; i++) free(g->kv[i].str_at);
    if (g->map) munmap(g->map, g->size);
    free(g->owned);
    free(g->kv);
    free(g->kv_sorted);
    free(g->tensors);
    free(g->tensor_sorted);
    free(g->names);
    free(g);
}

uint32_t strix_gguf_version(const strix_gguf *g) { return g->version; }
bool strix_gguf_is_mapped(const strix_gguf *g) { return g->map != NULL; }
size_t strix_gguf_alignment(const strix_gguf *g) { return g->alignment; }
size_t strix_gguf_data_offset(const strix_gguf *g) { return g->data_offset; }

// ---- tensors -----------------------------------------------------------------------------------

size_t strix_gguf_tensor_count(const strix_gguf *g) { return g->tensor_count; }

const strix_gguf_tensor *strix_gguf_tensor_at(const strix_gguf *g, size_t i) {
    STRIX_ASSERT(i < g->tensor_count, "gguf tensor index %zu of %zu", i, g->tensor_count);
    return &g->tensors[i];
}

const strix_gguf_tensor *strix_gguf_find_tensor(const strix_gguf *g, const char *name) {
    const name_ref *ref = find_ref(g->tensor_sorted, g->tensor_count, name);
    return ref ? &g->tensors[ref->index] : NULL;
}

// ---- metadata access ---------------------------------------------------------------------------

size_t strix_gguf_kv_count(const strix_gguf *g) { return g->kv_count; }

const char *strix_gguf_kv_key(const strix_gguf *g, size_t i) {
    STRIX_ASSERT(i < g->kv_count, "gguf metadata index %zu of %zu", i, g->kv_count);
    return g->kv[i].key;
}

bool strix_gguf_has_key(const strix_gguf *g, const char *key) { return find_kv(g, key) != NULL; }

bool strix_gguf_get_type(const strix_gguf *g, const char *key, strix_gguf_vtype *type) {
    const gguf_kv *kv = find_kv(g, key);
    if (!kv) return false;
    *type = kv->type;
    return true;
}

/* The integer (or bool) of type t at p; false for other types and UINT64 over INT64_MAX. */
static bool int_at(strix_gguf_vtype t, const unsigned char *p, int64_t *out) {
    switch (t) {
    case STRIX_GGUF_UINT8: *out = p[0]; return true;
    case STRIX_GGUF_INT8: *out = (int8_t)p[0]; return true;
    case STRIX_GGUF_BOOL: *out = p[0] != 0; return true;
    case STRIX_GGUF_UINT16: *out = (uint16_t)(p[0] | p[1] << 8); return true;
    case STRIX_GGUF_INT16: *out = (int16_t)(uint16_t)(p[0] | p[1] << 8); return true;
    case STRIX_GGUF_UINT32: *out = le32(p); return true;
    case STRIX_GGUF_INT32: *out = (int32_t)le32(p); return true;
    case STRIX_GGUF_INT64: *out = (int64_t)le64(p); return true;
    case STRIX_GGUF_UINT64: {
        uint64_t v = le64(p);
        if (v > (uint64_t)INT64_MAX) return false;
        *out = (int64_t)v;
        return true;
    }
    default: return false;
    }
}

/* The number of type t at p as double (floats exactly, integers to the nearest); false for
 * bools, strings and arrays. */
static bool float_at(strix_gguf_vtype t, const unsigned char *p, double *out) {
    if (t == STRIX_GGUF_BOOL) return false;
    if (t == STRIX_GGUF_FLOAT32) {
        uint32_t bits = le32(p);
        float f;
        memcpy(&f, &bits, sizeof f);
        *out = f;
        return true;
    }
    if (t == STRIX_GGUF_FLOAT64) {
        uint64_t bits = le64(p);
        memcpy(out, &bits, sizeof *out);
        return true;
    }
    if (t == STRIX_GGUF_UINT64) {
        *out = (double)le64(p);
        return true;
    }
    int64_t v;
    if (!int_at(t, p, &v)) return false;
    *out = (double)v;
    return true;
}

bool strix_gguf_get_int(const strix_gguf *g, const char *key, int64_t *out) {
    const gguf_kv *kv = find_kv(g, key);
    return kv && int_at(kv->type, kv->at, out);
}

bool strix_gguf_get_float(const strix_gguf *g, const char *key, double *out) {
    const gguf_kv *kv = find_kv(g, key);
    return kv && float_at(kv->type, kv->at, out);
}

const char *strix_gguf_get_string(const strix_gguf *g, const char *key, size_t *len) {
    const gguf_kv *kv = find_kv(g, key);
    if (!kv || kv->type != STRIX_GGUF_STRING) return NULL;
    if (len) *len = (size_t)kv->count;
    return (const char *)kv->at;
}

bool strix_gguf_get_array(const strix_gguf *g, const char *key, strix_gguf_vtype *elem,
                          size_t *count) {
    const gguf_kv *kv = find_kv(g, key);
    if (!kv || kv->type != STRIX_GGUF_ARRAY) return false;
    if (elem) *elem = kv->elem;
    if (count) *count = (size_t)kv->count;
    return true;
}

const char *strix_gguf_array_string(const strix_gguf *g, const char *key, size_t i,
                                    size_t *len) {
    const gguf_kv *kv = find_kv(g, key);
    if (!kv || kv->type != STRIX_GGUF_ARRAY || kv->elem != STRIX_GGUF_STRING || i >= kv->count)
        return NULL;
    const unsigned char *at = g->bytes + kv->str_at[i];
    if (len) *len = (size_t)le64(at);
    return (const char *)at + 8;
}

/* The numeric array `key`'s element i, or NULL. */
static const unsigned char *element(const strix_gguf *g, const char *key, size_t i,
                                    strix_gguf_vtype *elem) {
    const gguf_kv *kv = find_kv(g, key);
    if (!kv || kv->type != STRIX_GGUF_ARRAY || kv->elem == STRIX_GGUF_STRING || i >= kv->count)
        return NULL;
    *elem = kv->elem;
    return kv->at + i * scalar_size[kv->elem];
}

bool strix_gguf_array_int(const strix_gguf *g, const char *key, size_t i, int64_t *out) {
    strix_gguf_vtype elem;
    const unsigned char *at = element(g, key, i, &elem);
    return at && int_at(elem, at, out);
}

bool strix_gguf_array_float(const strix_gguf *g, const char *key, size_t i, double *out) {
    strix_gguf_vtype elem;
    const unsigned char *at = element(g, key, i, &elem);
    return at && float_at(elem, at, out);
}

const void *strix_gguf_array_data(const strix_gguf *g, const char *key, strix_gguf_vtype *elem,
                                  size_t *count) {
    const gguf_kv *kv = find_kv(g, key);
    if (!kv || kv->type != STRIX_GGUF_ARRAY || kv->elem == STRIX_GGUF_STRING) return NULL;
    if (elem) *elem = kv->elem;
    if (count) *count = (size_t)kv->count;
    return kv->at;
}
