/*
 * testlib.h - small shared helpers for strix tests (header-only; include after <cmocka.h> or
 * alone). Independent of cmocka: checks return bool and print what went wrong to stderr; the
 * test asserts on the result.
 *
 *   backends     tl_backend_names[] / tl_backend_open(): the backends every op test runs on
 *                (a new backend = one more name here); unsupported ones are skipped.
 *   random data  tl_fill_uniform(): deterministic uniform values from a seed.
 *   goldens      tl_golden_load() / tl_golden_get() / tl_golden_scalar() / tl_golden_free(): the
 *                files written by the tools/ref/ scripts (format below).
 *   comparing    tl_check_close() (atol + rtol per element, NaN/inf must agree),
 *                tl_check_bits() (bit-identical floats), tl_check_i32().
 *   device       tl_upload() / tl_download() / tl_device_alloc(): copies through the backend so
 *                the same test runs on GPU backends.
 *   timing       tl_seconds().
 *
 * Golden file format (little-endian): magic "STRXGLD1"; u32 note length + note bytes (generator
 * and library versions); u32 array count; per array: u32 name length + name bytes, u32 ndim,
 * i64 shape[ndim], f32 data[prod(shape)]. Integer arrays are stored as exact floats.
 * Does not: generate goldens, or know any op's semantics.
 */
#ifndef STRIX_TESTLIB_H
#define STRIX_TESTLIB_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strix/backend.h"

// ---- backends ----------------------------------------------------------------------------------

/* Every backend the op tests run on. A new backend is one more entry. The GPU columns ("cuda",
 * "hip") open only in a build with that backend on a machine with such a device; elsewhere
 * tl_backend_open skips them. */
static const char *const tl_backend_names[] = {"cpu", "cpu-blas", "cuda", "hip"};
#define TL_BACKEND_COUNT (sizeof tl_backend_names / sizeof tl_backend_names[0])

/* Opens backend `name`; NULL (after printing "SKIP", once per name) if this build or machine
 * lacks it. Any other failure prints the error and returns NULL too, so check the result. */
static inline strix_backend *tl_backend_open(const char *name) {
    static const char *said[16]; /* names already reported as skipped */
    static size_t said_count;
    strix_backend *be = NULL;
    strix_status s = strix_backend_init(name, &be);
    if (s == STRIX_ERR_UNSUPPORTED || s == STRIX_ERR_DEVICE) {
        bool again = false;
        for (size_t i = 0; i < said_count; i++) again = again || strcmp(said[i], name) == 0;
        if (!again) fprintf(stderr, "SKIP backend %s: %s\n", name, strix_last_error());
        if (!again && said_count < 16) said[said_count++] = name;
        return NULL;
    }
    if (s != STRIX_OK)
        fprintf(stderr, "backend %s failed: %s %s\n", name, strix_status_str(s),
                strix_last_error());
    return be;
}

// ---- random data -------------------------------------------------------------------------------

/* x[0..n) = uniform values in [lo, hi) drawn from a SplitMix64 stream seeded with `seed`. */
static inline void tl_fill_uniform(float *x, size_t n, uint64_t seed, float lo, float hi) {
    strix_rng rng;
    strix_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * (float)strix_rng_uniform(&rng);
}

/* Allocates n floats with malloc (aborts on failure: tests only). */
static inline float *tl_malloc_floats(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        fprintf(stderr, "testlib: out of memory (%zu floats)\n", n);
        abort();
    }
    return p;
}

// ---- goldens -----------------------------------------------------------------------------------

typedef struct tl_array {
    char name[64];
    int ndim;
    int64_t shape[8];
    size_t count; /* product of shape */
    float *data;  /* points into the golden's buffer */
} tl_array;

typedef struct tl_golden {
    char note[256]; /* generator and versions, NUL-terminated */
    int count;
    tl_array *arrays;
    unsigned char *buffer;
} tl_golden;

/* Reads little-endian fields from a bounded buffer; false when the buffer runs out. */
static inline bool tl_take(const unsigned char **at, const unsigned char *end, void *dst,
                           size_t bytes) {
    if ((size_t)(end - *at) < bytes) return false;
    memcpy(dst, *at, bytes);
    *at += bytes;
    return true;
}

/* Loads a golden file. Returns false (and prints why) when it is missing or malformed. */
static inline bool tl_golden_load(const char *path, tl_golden *g) {
    memset(g, 0, sizeof *g);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "golden %s: cannot open (run tests from the repository root)\n", path);
        return false;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    g->buffer = malloc(size > 0 ? (size_t)size : 1);
    bool ok = g->buffer && size > 0 && fread(g->buffer, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    const unsigned char *at = g->buffer, *end = g->buffer + (ok ? size : 0);
    char magic[8];
    uint32_t note_len = 0, count = 0;
    ok = ok && tl_take(&at, end, magic, 8) && memcmp(magic, "STRXGLD1", 8) == 0;
    ok = ok && tl_take(&at, end, &note_len, 4) && note_len <= (size_t)(end - at);
    if (ok) {
        size_t keep = note_len < sizeof g->note - 1 ? note_len : sizeof g->note - 1;
        memcpy(g->note, at, keep);
        at += note_len;
    }
    ok = ok && tl_take(&at, end, &count, 4) && count < 4096;
    if (ok) g->arrays = calloc(count ? count : 1, sizeof *g->arrays);
    ok = ok && g->arrays;
    for (uint32_t i = 0; ok && i < count; i++) {
        tl_array *a = &g->arrays[i];
        uint32_t name_len = 0, ndim = 0;
        ok = tl_take(&at, end, &name_len, 4) && name_len < sizeof a->name &&
             tl_take(&at, end, a->name, name_len) && tl_take(&at, end, &ndim, 4) && ndim <= 8;
        a->ndim = (int)ndim;
        a->count = 1;
        for (uint32_t d = 0; ok && d < ndim; d++) {
            ok = tl_take(&at, end, &a->shape[d], 8) && a->shape[d] >= 0 &&
                 a->shape[d] < ((int64_t)1 << 31);
            a->count *= ok ? (size_t)a->shape[d] : 0;
        }
        ok = ok && a->count <= (size_t)(end - at) / sizeof(float);
        if (ok) {
            a->data = (float *)(void *)at; /* see alignment copy below */
            at += a->count * sizeof(float);
        }
    }
    if (!ok) {
        fprintf(stderr, "golden %s: malformed file\n", path);
        free(g->arrays);
        free(g->buffer);
        memset(g, 0, sizeof *g);
        return false;
    }
    /* Arrays sit at arbitrary byte offsets: give each an aligned copy. */
    for (uint32_t i = 0; i < count; i++) {
        tl_array *a = &g->arrays[i];
        float *copy = tl_malloc_floats(a->count);
        memcpy(copy, a->data, a->count * sizeof(float));
        a->data = copy;
    }
    g->count = (int)count;
    return true;
}

/* The array called `name`, or NULL (printing the missing name). */
static inline const tl_array *tl_golden_get(const tl_golden *g, const char *name) {
    for (int i = 0; i < g->count; i++)
        if (strcmp(g->arrays[i].name, name) == 0) return &g->arrays[i];
    fprintf(stderr, "golden: no array '%s'\n", name);
    return NULL;
}

/* The first value of array `name` (scalars are stored as one-element arrays); NaN if missing. */
static inline float tl_golden_scalar(const tl_golden *g, const char *name) {
    const tl_array *a = tl_golden_get(g, name);
    return a && a->count ? a->data[0] : NAN;
}

/* Frees what tl_golden_load allocated. */
static inline void tl_golden_free(tl_golden *g) {
    for (int i = 0; i < g->count; i++) free(g->arrays[i].data);
    free(g->arrays);
    free(g->buffer);
    memset(g, 0, sizeof *g);
}

// ---- comparing ---------------------------------------------------------------------------------

/* True if every |got − want| <= atol + rtol·|want|; NaN must meet NaN and ±inf the same inf.
 * On failure prints `label`, the first 5 mismatches and the largest error. */
static inline bool tl_check_close(const char *label, const float *got, const float *want,
                                  size_t n, double atol, double rtol) {
    size_t bad = 0;
    double worst = 0.0;
    size_t worst_at = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        bool ok;
        if (isnan(w) || isnan(g)) {
            ok = isnan(w) && isnan(g);
        } else if (isinf(w) || isinf(g)) {
            ok = g == w;
        } else {
            double err = fabs(g - w);
            if (err > worst) worst = err, worst_at = i;
            ok = err <= atol + rtol * fabs(w);
        }
        if (!ok) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: got %.9g want %.9g (diff %.3g)\n", label, i, g, w,
                        g - w);
            bad++;
        }
    }
    if (bad)
        fprintf(stderr, "%s: %zu of %zu outside atol %g + rtol %g; max abs error %.3g at %zu\n",
                label, bad, n, atol, rtol, worst, worst_at);
    return bad == 0;
}

/* True if got and want are bit-identical floats; prints the first 5 differences otherwise. */
static inline bool tl_check_bits(const char *label, const float *got, const float *want,
                                 size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: %.9g vs %.9g (bits differ)\n", label, i, got[i],
                        want[i]);
            bad++;
        }
    }
    if (bad) fprintf(stderr, "%s: %zu of %zu elements not bit-identical\n", label, bad, n);
    return bad == 0;
}

/* True if got[i] == want[i] for all i; prints the first 5 differences otherwise. */
static inline bool tl_check_i32(const char *label, const int32_t *got, const int32_t *want,
                                size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            if (bad < 5) fprintf(stderr, "  %s[%zu]: %d vs %d\n", label, i, got[i], want[i]);
            bad++;
        }
    }
    if (bad) fprintf(stderr, "%s: %zu of %zu differ\n", label, bad, n);
    return bad == 0;
}

// ---- device ------------------------------------------------------------------------------------

/* `bytes` of backend memory (aborts on failure: tests only). NULL for 0 bytes. */
static inline void *tl_device_alloc(strix_backend *be, size_t bytes) {
    void *p = NULL;
    if (strix_alloc(be, bytes, &p) != STRIX_OK) {
        fprintf(stderr, "testlib: strix_alloc(%zu) failed: %s\n", bytes, strix_last_error());
        abort();
    }
    return p;
}

/* A backend copy of `bytes` host bytes (aborts on failure). Free with strix_free. */
static inline void *tl_upload(strix_backend *be, const void *host, size_t bytes) {
    void *p = tl_device_alloc(be, bytes);
    if (bytes && strix_copy(be, p, host, bytes, STRIX_COPY_H2D) != STRIX_OK) abort();
    return p;
}

/* Copies `bytes` of backend memory to the host (aborts on failure). */
static inline void tl_download(strix_backend *be, void *host, const void *device, size_t bytes) {
    if (bytes && strix_copy(be, host, device, bytes, STRIX_COPY_D2H) != STRIX_OK) abort();
}

// ---- files -------------------------------------------------------------------------------------

/* The whole file at `path` in a malloc'ed buffer (one spare byte, for a NUL) and its size in *n;
 * NULL (and *n 0) when it cannot be opened or read. */
static inline unsigned char *tl_read_file(const char *path, size_t *n) {
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size >= 0 && fseek(f, 0, SEEK_SET) == 0) buf = malloc((size_t)size + 1);
    if (buf) *n = fread(buf, 1, (size_t)size, f);
    fclose(f);
    return buf;
}

/* Writes n bytes to `path` (created or truncated); false on any failure. */
static inline bool tl_write_file(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(bytes, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

// ---- a scratch folder --------------------------------------------------------------------------

/* The test program's scratch folder: its setup fills it (mkdtemp, which needs the test's
 * _POSIX_C_SOURCE), tl_tmp_remove removes it. */
static inline char *tl_tmp_dir(void) {
    static char dir[64];
    return dir;
}

/* Removes the scratch folder and everything in it; false on failure. */
static inline bool tl_tmp_remove(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tl_tmp_dir());
    return system(cmd) == 0;
}

/* "<scratch>/<name>" in one of four rotating buffers (so a call may take two or three paths). */
static inline const char *tl_tmp_path(const char *name) {
    static char path[4][256];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 256, "%s/%s", tl_tmp_dir(), name);
    return p;
}

// ---- timing ------------------------------------------------------------------------------------

/* Wall-clock seconds. */
static inline double tl_seconds(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC); /* C11; wall clock, fine for benchmarks of seconds */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
