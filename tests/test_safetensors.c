/*
 * test_safetensors.c - the typed, mapped and sharded parts of strix/safetensors.h: the PyTorch
 * reference files of tools/ref/safetensors_dtypes_ref.py (F16, BF16, I32, U8, I64 against torch's
 * float32 values, and a two-shard set with its index), mmap against in-memory reads, lazy
 * conversion, the writer's rounding against torch's and its round trip per dtype, and every error
 * of the index.
 *
 * The F32 reader and writer, corrupt files and atomic writes are tested in tests/test_checkpoint.c.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "strix/safetensors.h"
#include "testlib.h"

#define DTYPES "tests/golden/io/dtypes.st"
#define SHARDED "tests/golden/io/sharded/"

static const char *in_tmp(const char *name) { return tl_tmp_path(name); }

static int setup(void **state) {
    (void)state;
    snprintf(tl_tmp_dir(), 64, "/tmp/strix_test_st_XXXXXX");
    return mkdtemp(tl_tmp_dir()) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return tl_tmp_remove() ? 0 : -1;
}

static unsigned char *read_all(const char *path, size_t *n) { return tl_read_file(path, n); }

static void write_all(const char *path, const void *bytes, size_t n) {
    assert_true(tl_write_file(path, bytes, n));
}

static void write_text(const char *path, const char *text) { write_all(path, text, strlen(text)); }

static uint32_t bits_of(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static const strix_st_tensor *must_find(const strix_safetensors *st, const char *name) {
    const strix_st_tensor *t = strix_safetensors_find(st, name);
    if (!t) fail_msg("no tensor '%s'", name);
    return t;
}

/* Tensor `name`'s float32 view equals the F32 tensor `name`.f32 bit for bit. */
static void expect_same_as_f32(const strix_safetensors *st, const char *name) {
    char expect_name[64];
    snprintf(expect_name, sizeof expect_name, "%s.f32", name);
    const strix_st_tensor *t = must_find(st, name), *e = must_find(st, expect_name);
    assert_int_equal(e->dtype, STRIX_ST_F32);
    assert_int_equal(strix_st_numel(t), strix_st_numel(e));
    for (int64_t i = 0; i < strix_st_numel(t); i++)
        if (bits_of(t->data[i]) != bits_of(e->data[i]))
            fail_msg("%s[%lld]: strix %a (0x%08x), torch %a (0x%08x)", name, (long long)i,
                     (double)t->data[i], bits_of(t->data[i]), (double)e->data[i],
                     bits_of(e->data[i]));
}

// ---- dtypes against PyTorch --------------------------------------------------------------------

static void test_dtypes_match_torch(void **state) {
    (void)state;
    strix_safetensors *st;
    assert_int_equal(strix_safetensors_read(DTYPES, &st), STRIX_OK);
    assert_true(strix_safetensors_is_mapped(st));
    assert_int_equal(strix_safetensors_count(st), 13);
    const struct {
        const char *name;
        strix_st_dtype dtype;
        int ndim;
        int64_t rows;
    } want[] = {{"f16", STRIX_ST_F16, 2, 4}, {"bf16", STRIX_ST_BF16, 2, 2},
                {"i32", STRIX_ST_I32, 2, 2}, {"u8", STRIX_ST_U8, 2, 2},
                {"i64", STRIX_ST_I64, 1, 6}};
    for (int k = 0; k < 5; k++) {
        const strix_st_tensor *t = must_find(st, want[k].name);
        assert_int_equal(t->dtype, want[k].dtype);
        assert_int_equal(strix_safetensors_dtype(st, t), want[k].dtype);
        assert_int_equal(t->ndim, want[k].ndim);
        assert_int_equal(t->shape[0], want[k].rows);
        assert_non_null(t->raw);
        expect_same_as_f32(st, want[k].name);
    }
    /* a few values by hand, independent of torch */
    const strix_st_tensor *h = must_find(st, "f16");
    assert_true(h->data[2] == 65504.0f);
    assert_true(h->data[3] == 0x1p-24f);                 /* the smallest subnormal half */
    assert_true(h->data[4] == 0x1.998p-4f);              /* 0.1 in half precision */
    assert_true(h->data[5] == 0.0f && signbit(h->data[5]));
    assert_true(isinf(h->data[6]) && isnan(h->data[7]));
    uint16_t half_bits;
    memcpy(&half_bits, (const unsigned char *)h->raw + 2 * 2, 2);
    assert_int_equal(half_bits, 0x7bff);                  /* 65504 */
    const strix_st_tensor *b = must_find(st, "bf16");
    assert_true(b->data[0] == 1.0f && b->data[1] == -1.5f);
    assert_true(b->data[4] == 0x1.9ap-4f);               /* 0.1 in bfloat16 */
    const strix_st_tensor *i32 = must_find(st, "i32");
    assert_true(i32->data[2] == 2147483648.0f);          /* 2^31 - 1: nearest float */
    assert_true(i32->data[3] == -2147483648.0f);
    assert_true(i32->data[4] == 16777216.0f);            /* 2^24 + 1: a tie, to even */
    const strix_st_tensor *u8 = must_find(st, "u8");
    assert_true(u8->data[5] == 255.0f);
    const strix_st_tensor *i64 = must_find(st, "i64");
    assert_true(i64->data[1] == -3.0f);
    assert_true(i64->data[3] == 16777220.0f);            /* 2^24 + 3: a tie, to even */
    const strix_st_tensor *s = must_find(st, "scalar.f16");
    assert_int_equal(s->ndim, 0);
    assert_true(s->data[0] == -0.5f);
    assert_string_equal(strix_safetensors_meta(st, "format"), "pt");
    /* an F32 tensor after the 6-byte u8 tensor is not 4-byte aligned, yet reads the same */
    const strix_st_tensor *odd = must_find(st, "u8.f32");
    assert_true(((uintptr_t)odd->raw & 3) != 0);
    for (int i = 0; i < 6; i++) assert_true(odd->data[i] == u8->data[i]);
    strix_safetensors_free(st);
}

static void test_dtype_names(void **state) {
    (void)state;
    const char *names[] = {"F32", "I64", "F16", "BF16", "I32", "U8"};
    const size_t sizes[] = {4, 8, 2, 2, 4, 1};
    for (int d = 0; d < STRIX_ST_DTYPE_COUNT; d++) {
        assert_string_equal(strix_st_dtype_name((strix_st_dtype)d), names[d]);
        assert_int_equal(strix_st_dtype_size((strix_st_dtype)d), sizes[d]);
    }
    assert_string_equal(strix_st_dtype_name(STRIX_ST_DTYPE_COUNT), "?");
    assert_int_equal(strix_st_dtype_size(STRIX_ST_DTYPE_COUNT), 0);
    /* every half bit pattern converts to the float whose half rounding gives it back */
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t in = (uint16_t)h;
        float f;
        strix_st_convert_to_f32(STRIX_ST_F16, &in, 1, &f);
        if (isnan(f)) {
            assert_true((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0);
            continue;
        }
        /* value check: (-1)^s · 2^(e-15) · 1.m, or 2^-14 · 0.m for subnormals */
        int e = (int)((h >> 10) & 31), m = (int)(h & 1023);
        double v = e == 31 ? INFINITY : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
        if (h & 0x8000) v = -v;
        if ((double)f != v || (signbit(f) != 0) != (h >> 15))
            fail_msg("half 0x%04x -> %a", h, (double)f);
    }
}

/* Random byte flips in dtypes.st: any status is fine, a crash is not (run under ASan); every
 * tensor of a file that still parses is read in full, raw and as float32. */
static void test_random_corruption_typed(void **state) {
    (void)state;
    size_t n;
    unsigned char *orig = read_all(DTYPES, &n);
    assert_non_null(orig);
    unsigned char *buf = malloc(n);
    uint64_t x = 12345;
    int ok = 0;
    for (int trial = 0; trial < 2000; trial++) {
        memcpy(buf, orig, n);
        for (int f = 0; f < 1 + trial % 4; f++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull; /* an LCG */
            buf[(x >> 33) % n] = (unsigned char)(x >> 17);
        }
        strix_safetensors *st;
        strix_status s = strix_safetensors_parse(buf, n, &st);
        assert_true(s == STRIX_OK || s == STRIX_ERR_FORMAT);
        if (s != STRIX_OK) continue;
        ok++;
        volatile float sink = 0;
        for (int i = 0; i < strix_safetensors_count(st); i++) {
            const strix_st_tensor *t = strix_safetensors_at(st, i);
            int64_t numel = strix_st_numel(t);
            size_t bytes = (size_t)numel * strix_st_dtype_size(t->dtype);
            for (size_t b = 0; b < bytes; b++) sink += ((const unsigned char *)t->raw)[b];
            for (int64_t j = 0; j < numel; j++) sink += t->data[j];
        }
        (void)sink;
        strix_safetensors_free(st);
    }
    assert_true(ok > 0); /* flips in the data section keep the file valid */
    free(buf);
    free(orig);
}

// ---- mmap, in-memory, lazy ---------------------------------------------------------------------

static void expect_same_tensors(const strix_safetensors *a, const strix_safetensors *b) {
    assert_int_equal(strix_safetensors_count(a), strix_safetensors_count(b));
    for (int i = 0; i < strix_safetensors_count(a); i++) {
        const strix_st_tensor *x = strix_safetensors_at(a, i), *y = strix_safetensors_at(b, i);
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->dtype, y->dtype);
        assert_int_equal(x->ndim, y->ndim);
        assert_memory_equal(x->shape, y->shape, sizeof x->shape);
        int64_t n = strix_st_numel(x);
        assert_memory_equal(x->raw, y->raw, (size_t)n * strix_st_dtype_size(x->dtype));
        if (n) assert_memory_equal(x->data, y->data, (size_t)n * sizeof(float));
    }
}

static void test_mmap_read_and_parse_agree(void **state) {
    (void)state;
    const char *files[] = {DTYPES, "tests/golden/io/ref-f32.st",
                           SHARDED "model-00001-of-00002.st"};
    for (int f = 0; f < 3; f++) {
        strix_safetensors *mapped, *plain, *parsed;
        const strix_st_read_options no_mmap = {.no_mmap = true};
        assert_int_equal(strix_safetensors_read(files[f], &mapped), STRIX_OK);
        assert_int_equal(strix_safetensors_read_ex(files[f], &no_mmap, &plain), STRIX_OK);
        size_t n;
        unsigned char *bytes = read_all(files[f], &n);
        assert_int_equal(strix_safetensors_parse(bytes, n, &parsed), STRIX_OK);
        memset(bytes, 0, n); /* parse copied them */
        free(bytes);
        assert_true(strix_safetensors_is_mapped(mapped));
        assert_false(strix_safetensors_is_mapped(plain));
        assert_false(strix_safetensors_is_mapped(parsed));
        expect_same_tensors(mapped, plain);
        expect_same_tensors(mapped, parsed);
        strix_safetensors_free(mapped);
        strix_safetensors_free(plain);
        strix_safetensors_free(parsed);
    }
    /* an empty file cannot be mapped: the plain read runs and reports the format error */
    write_all(in_tmp("empty.st"), "", 0);
    strix_safetensors *st = (strix_safetensors *)1;
    assert_int_equal(strix_safetensors_read(in_tmp("empty.st"), &st), STRIX_ERR_FORMAT);
    assert_null(st);
    assert_non_null(strstr(strix_last_error(), "shorter than the 8-byte"));
    /* the map outlives the file's name (strix replaces files by rename) */
    size_t n;
    unsigned char *bytes = read_all(DTYPES, &n);
    write_all(in_tmp("gone.st"), bytes, n);
    free(bytes);
    assert_int_equal(strix_safetensors_read(in_tmp("gone.st"), &st), STRIX_OK);
    assert_int_equal(unlink(in_tmp("gone.st")), 0);
    expect_same_as_f32(st, "bf16");
    strix_safetensors_free(st);
}

static void test_lazy_converts_on_demand(void **state) {
    (void)state;
    /* every F32 tensor of dtypes.st lies 2 bytes off alignment; ref-f32.st's are aligned */
    const char *files[2] = {DTYPES, "tests/golden/io/ref-f32.st"};
    const int want_in_place[2] = {0, 5};
    for (int f = 0; f < 2; f++) {
        strix_safetensors *eager, *lazy;
        const strix_st_read_options opt = {.lazy = true};
        assert_int_equal(strix_safetensors_read(files[f], &eager), STRIX_OK);
        assert_int_equal(strix_safetensors_read_ex(files[f], &opt, &lazy), STRIX_OK);
        int in_place = 0;
        for (int i = 0; i < strix_safetensors_count(lazy); i++) {
            const strix_st_tensor *t = strix_safetensors_at(lazy, i);
            const strix_st_tensor *e = strix_safetensors_at(eager, i);
            bool aligned_f32 = t->dtype == STRIX_ST_F32 && ((uintptr_t)t->raw & 3) == 0;
            if (aligned_f32) {
                assert_ptr_equal(t->data, t->raw); /* read in place, no copy */
                assert_ptr_equal(e->data, e->raw);
                in_place++;
            } else {
                assert_null(t->data);
            }
            int64_t n = strix_st_numel(t);
            float *buf = malloc((size_t)(n + 1) * sizeof(float));
            assert_int_equal(strix_safetensors_to_f32(lazy, t, buf, n), STRIX_OK);
            if (n) assert_memory_equal(buf, e->data, (size_t)n * sizeof(float));
            if (n > 0) {
                assert_int_equal(strix_safetensors_to_f32(lazy, t, buf, n - 1), STRIX_ERR_ARG);
                assert_non_null(strstr(strix_last_error(), t->name));
            }
            free(buf);
        }
        assert_int_equal(in_place, want_in_place[f]);
        strix_safetensors_free(eager);
        strix_safetensors_free(lazy);
    }
}

// ---- writer ------------------------------------------------------------------------------------

/* Writing "<d>.src" as dtype d from float32 gives exactly torch's bytes of "<d>". */
static void test_writer_rounds_like_torch(void **state) {
    (void)state;
    strix_safetensors *ref;
    assert_int_equal(strix_safetensors_read(DTYPES, &ref), STRIX_OK);
    const char *names[2] = {"f16", "bf16"};
    const strix_st_dtype dts[2] = {STRIX_ST_F16, STRIX_ST_BF16};
    for (int k = 0; k < 2; k++) {
        char src_name[32];
        snprintf(src_name, sizeof src_name, "%s.src", names[k]);
        strix_st_tensor src = *must_find(ref, src_name);
        src.name = names[k];
        const char *path = in_tmp("rounded.st");
        assert_int_equal(strix_safetensors_write_typed(path, &src, &dts[k], 1, NULL, 0),
                         STRIX_OK);
        strix_safetensors *back;
        assert_int_equal(strix_safetensors_read(path, &back), STRIX_OK);
        const strix_st_tensor *got = must_find(back, names[k]), *want = must_find(ref, names[k]);
        assert_int_equal(got->dtype, dts[k]);
        int64_t n = strix_st_numel(want);
        for (int64_t i = 0; i < n; i++) {
            uint16_t g, w;
            memcpy(&g, (const unsigned char *)got->raw + 2 * i, 2);
            memcpy(&w, (const unsigned char *)want->raw + 2 * i, 2);
            if (g != w)
                fail_msg("%s[%lld] from %a: strix 0x%04x, torch 0x%04x", names[k],
                         (long long)i, (double)src.data[i], g, w);
        }
        strix_safetensors_free(back);
    }
    strix_safetensors_free(ref);
}

/* Every tensor of dtypes.st written back from its raw bytes and from its float32 values. */
static void test_writer_round_trip_per_dtype(void **state) {
    (void)state;
    strix_safetensors *ref;
    assert_int_equal(strix_safetensors_read(DTYPES, &ref), STRIX_OK);
    int n = strix_safetensors_count(ref);
    strix_st_tensor ts[16];
    strix_st_dtype dts[16];
    const void *raws[16];
    for (int i = 0; i < n; i++) {
        ts[i] = *strix_safetensors_at(ref, i);
        dts[i] = ts[i].dtype;
        raws[i] = ts[i].raw;
    }
    const strix_st_meta meta = {"format", "pt"};
    const char *path = in_tmp("raw.st");
    assert_int_equal(strix_safetensors_write_ex(path, ts, dts, raws, n, &meta, 1), STRIX_OK);
    strix_safetensors *back;
    assert_int_equal(strix_safetensors_read(path, &back), STRIX_OK);
    expect_same_tensors(ref, back); /* same order: both by data offset */
    strix_safetensors_free(back);

    /* from float32: exact for the values each dtype holds (the .f32 views of the file); the
     * int32/int64 tensors hold values over 2^24, which float32 cannot, and stay raw */
    for (int i = 0; i < n; i++)
        if (dts[i] != STRIX_ST_I32 && dts[i] != STRIX_ST_I64) raws[i] = NULL;
    assert_int_equal(strix_safetensors_write_ex(path, ts, dts, raws, n, &meta, 1), STRIX_OK);
    assert_int_equal(strix_safetensors_read(path, &back), STRIX_OK);
    for (int i = 0; i < n; i++) {
        const strix_st_tensor *x = strix_safetensors_at(ref, i), *y = strix_safetensors_at(back, i);
        int64_t numel = strix_st_numel(x);
        size_t bytes = (size_t)numel * strix_st_dtype_size(x->dtype);
        assert_int_equal(x->dtype, y->dtype);
        if (bytes) assert_memory_equal(x->raw, y->raw, bytes);
        if (numel) assert_memory_equal(x->data, y->data, (size_t)numel * sizeof(float));
    }
    strix_safetensors_free(back);
    strix_safetensors_free(ref);

    /* values a dtype cannot hold are refused, nothing written */
    float bad_u8[2] = {1.0f, 256.0f}, bad_i32[1] = {2147483648.0f}, frac[1] = {0.5f};
    const struct {
        const float *data;
        strix_st_dtype dtype;
    } bad[] = {{bad_u8, STRIX_ST_U8}, {bad_i32, STRIX_ST_I32}, {frac, STRIX_ST_I64},
               {frac, STRIX_ST_U8}};
    for (int k = 0; k < 4; k++) {
        strix_st_tensor t = {.name = "x", .ndim = 1, .shape = {k == 0 ? 2 : 1},
                             .data = bad[k].data};
        assert_int_equal(strix_safetensors_write_typed(in_tmp("bad.st"), &t, &bad[k].dtype, 1,
                                                       NULL, 0), STRIX_ERR_ARG);
        assert_non_null(strstr(strix_last_error(), "not a whole number"));
        struct stat sb;
        assert_int_not_equal(stat(in_tmp("bad.st"), &sb), 0);
    }
    strix_st_dtype unknown = STRIX_ST_DTYPE_COUNT;
    strix_st_tensor t = {.name = "x", .ndim = 1, .shape = {1}, .data = frac};
    assert_int_equal(strix_safetensors_write_typed(in_tmp("bad.st"), &t, &unknown, 1, NULL, 0),
                     STRIX_ERR_ARG);
    /* a raw tensor needs no float data */
    const uint16_t ones[2] = {0x3c00, 0x3c00};
    const void *raw = ones;
    strix_st_tensor r = {.name = "ones", .ndim = 1, .shape = {2}};
    strix_st_dtype f16 = STRIX_ST_F16;
    assert_int_equal(strix_safetensors_write_ex(path, &r, &f16, &raw, 1, NULL, 0), STRIX_OK);
    assert_int_equal(strix_safetensors_read(path, &back), STRIX_OK);
    assert_true(strix_safetensors_at(back, 0)->data[1] == 1.0f);
    strix_safetensors_free(back);
    assert_int_equal(strix_safetensors_write_typed(path, &r, &f16, 1, NULL, 0), STRIX_ERR_ARG);
}

// ---- sharded sets ------------------------------------------------------------------------------

static void test_sharded_set(void **state) {
    (void)state;
    strix_st_set *set;
    assert_int_equal(strix_st_set_open(SHARDED "model.safetensors.index.json", NULL, &set),
                     STRIX_OK);
    assert_int_equal(strix_st_set_shard_count(set), 2);
    assert_string_equal(strix_st_set_shard_name(set, 0), "model-00001-of-00002.st");
    assert_string_equal(strix_st_set_shard_name(set, 1), "model-00002-of-00002.st");
    assert_int_equal(strix_st_set_count(set), 5);
    const char *sorted[5] = {"embed.weight", "layers.0.weight", "layers.1.weight",
                             "lm_head.weight", "step"};
    for (int i = 0; i < 5; i++) assert_string_equal(strix_st_set_at(set, i)->name, sorted[i]);
    assert_string_equal(strix_st_set_meta(set, "total_size"), "72");
    assert_string_equal(strix_st_set_meta(set, "note"), "two shards");
    assert_null(strix_st_set_meta(set, "absent"));

    const strix_safetensors *shard;
    const strix_st_tensor *t = strix_st_set_find(set, "layers.1.weight", &shard);
    assert_non_null(t);
    assert_ptr_equal(shard, strix_st_set_shard(set, 1));
    assert_int_equal(t->dtype, STRIX_ST_F16);
    assert_true(t->data[3] == 2048.0f); /* 2048.5 in half: a tie, to even */
    assert_true(t->data[2] == 1.5f);
    t = strix_st_set_find(set, "layers.0.weight", &shard);
    assert_ptr_equal(shard, strix_st_set_shard(set, 0));
    assert_int_equal(t->dtype, STRIX_ST_BF16);
    assert_true(t->data[2] == -3.0f);
    t = strix_st_set_find(set, "embed.weight", NULL);
    assert_int_equal(t->shape[0], 3);
    assert_true(t->data[4] == 8.0f);
    t = strix_st_set_find(set, "step", NULL);
    assert_int_equal(t->dtype, STRIX_ST_I64);
    assert_int_equal(t->ndim, 0);
    assert_true(t->data[0] == 7.0f);
    assert_null(strix_st_set_find(set, "absent", &shard));
    assert_null(shard);
    strix_st_set_free(set);
    strix_st_set_free(NULL);

    /* lazily, without mmap: same values through to_f32 */
    const strix_st_read_options opt = {.lazy = true, .no_mmap = true};
    assert_int_equal(strix_st_set_open(SHARDED "model.safetensors.index.json", &opt, &set),
                     STRIX_OK);
    t = strix_st_set_find(set, "layers.1.weight", &shard);
    assert_null(t->data);
    float buf[4];
    assert_int_equal(strix_safetensors_to_f32(shard, t, buf, 4), STRIX_OK);
    assert_true(buf[3] == 2048.0f);
    assert_false(strix_safetensors_is_mapped(shard));
    strix_st_set_free(set);
}

/* Copies a golden shard into the temp directory. */
static void copy_shard(const char *name) {
    char src[256];
    snprintf(src, sizeof src, SHARDED "%s", name);
    size_t n;
    unsigned char *bytes = read_all(src, &n);
    assert_non_null(bytes);
    write_all(in_tmp(name), bytes, n);
    free(bytes);
}

/* Writes `index` into the temp directory (beside the shards there) and expects opening it to fail
 * with `want` and a message holding `phrase`. */
static void expect_index_error(const char *index, strix_status want, const char *phrase) {
    write_text(in_tmp("index.json"), index);
    strix_st_set *set = (strix_st_set *)1;
    strix_status s = strix_st_set_open(in_tmp("index.json"), NULL, &set);
    if (s != want || !strstr(strix_last_error(), phrase))
        fail_msg("index %s: got %s '%s', expected %s with '%s'", index, strix_status_str(s),
                 strix_last_error(), strix_status_str(want), phrase);
    assert_null(set);
}

#define S1 "\"model-00001-of-00002.st\""
#define S2 "\"model-00002-of-00002.st\""
#define GOOD_1 "\"embed.weight\":" S1 ",\"layers.0.weight\":" S1
#define GOOD_2 "\"layers.1.weight\":" S2 ",\"lm_head.weight\":" S2 ",\"step\":" S2

static void test_index_errors(void **state) {
    (void)state;
    copy_shard("model-00001-of-00002.st");
    copy_shard("model-00002-of-00002.st");
    /* the copy opens as the golden one does */
    write_text(in_tmp("index.json"), "{\"weight_map\":{" GOOD_1 "," GOOD_2 "}}");
    strix_st_set *set;
    assert_int_equal(strix_st_set_open(in_tmp("index.json"), NULL, &set), STRIX_OK);
    assert_int_equal(strix_st_set_count(set), 5);
    assert_null(strix_st_set_meta(set, "total_size"));
    strix_st_set_free(set);

    /* a third shard that repeats embed.weight, one with a tensor the index does not list */
    float x[6] = {1, 2, 3, 4, 5, 6};
    strix_st_tensor dup = {.name = "embed.weight", .ndim = 2, .shape = {3, 2}, .data = x};
    assert_int_equal(strix_safetensors_write(in_tmp("dup.st"), &dup, 1, NULL, 0), STRIX_OK);
    strix_st_tensor extra[2] = {{.name = "extra", .ndim = 1, .shape = {2}, .data = x},
                                {.name = "listed", .ndim = 1, .shape = {2}, .data = x}};
    assert_int_equal(strix_safetensors_write(in_tmp("extra.st"), extra, 2, NULL, 0), STRIX_OK);
    write_all(in_tmp("cut.st"), "\x10\0\0\0\0\0\0\0{}", 10);

    expect_index_error("{\"weight_map\":{" GOOD_1 "," GOOD_2 ",\"lost\":\"model-00003.st\"}}",
                       STRIX_ERR_IO, "shard 'model-00003.st': cannot open");
    expect_index_error("{\"weight_map\":{" GOOD_1 ",\"layers.1.weight\":" S1
                       ",\"lm_head.weight\":" S2 ",\"step\":" S2 "}}",
                       STRIX_ERR_FORMAT, "maps tensor 'layers.1.weight' to shard "
                       "'model-00001-of-00002.st', which does not hold it (shard "
                       "'model-00002-of-00002.st' does)");
    expect_index_error("{\"weight_map\":{" GOOD_1 "," GOOD_2 ",\"ghost\":" S1 "}}",
                       STRIX_ERR_FORMAT, "maps tensor 'ghost' to shard 'model-00001-of-00002.st',"
                       " which does not hold it");
    expect_index_error("{\"weight_map\":{" GOOD_1 "," GOOD_2 ",\"dummy\":\"dup.st\"}}",
                       STRIX_ERR_FORMAT, "tensor 'embed.weight' is in both shard "
                       "'model-00001-of-00002.st' and shard 'dup.st'");
    expect_index_error("{\"weight_map\":{" GOOD_1 "," GOOD_2 ",\"listed\":\"extra.st\"}}",
                       STRIX_ERR_FORMAT, "shard 'extra.st' holds tensor 'extra', which the index "
                       "does not list");
    expect_index_error("{\"weight_map\":{" GOOD_1 "," GOOD_2 ",\"step\":" S2 "}}",
                       STRIX_ERR_FORMAT, "lists tensor 'step' twice");
    expect_index_error("{\"weight_map\":{" GOOD_1 "," GOOD_2 ",\"c\":\"cut.st\"}}",
                       STRIX_ERR_FORMAT, "shard 'cut.st':");
    expect_index_error("{\"weight_map\":{" GOOD_1 "," GOOD_2 ",\"n\":7}}", STRIX_ERR_FORMAT,
                       "tensor 'n' is mapped to no plain relative file name");
    expect_index_error("{\"weight_map\":{\"a\":\"../model-00001-of-00002.st\"}}",
                       STRIX_ERR_FORMAT, "tensor 'a' is mapped to no plain relative file name");
    expect_index_error("{\"weight_map\":{\"a\":\"/etc/passwd\"}}", STRIX_ERR_FORMAT,
                       "no plain relative file name");
    expect_index_error("{\"weight_map\":{\"a\":\"\"}}", STRIX_ERR_FORMAT,
                       "no plain relative file name");
    expect_index_error("{\"metadata\":{}}", STRIX_ERR_FORMAT, "has no \"weight_map\" object");
    expect_index_error("{\"weight_map\":[]}", STRIX_ERR_FORMAT, "has no \"weight_map\" object");
    expect_index_error("{\"metadata\":3,\"weight_map\":{}}", STRIX_ERR_FORMAT,
                       "\"metadata\" is not an object");
    expect_index_error("[\"weight_map\"]", STRIX_ERR_FORMAT, "is not a JSON object");
    expect_index_error("{\"weight_map\":{", STRIX_ERR_FORMAT, "is not valid JSON");
    expect_index_error("", STRIX_ERR_FORMAT, "is not valid JSON");
    strix_st_set *none = (strix_st_set *)1;
    assert_int_equal(strix_st_set_open(in_tmp("absent.json"), NULL, &none), STRIX_ERR_IO);
    assert_null(none);
    assert_int_equal(strix_st_set_open(tl_tmp_dir(), NULL, &none), STRIX_ERR_IO);
    /* an empty weight_map is an empty set */
    write_text(in_tmp("index.json"), "{\"weight_map\":{}}");
    assert_int_equal(strix_st_set_open(in_tmp("index.json"), NULL, &set), STRIX_OK);
    assert_int_equal(strix_st_set_count(set), 0);
    assert_int_equal(strix_st_set_shard_count(set), 0);
    strix_st_set_free(set);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtypes_match_torch),
        cmocka_unit_test(test_dtype_names),
        cmocka_unit_test(test_random_corruption_typed),
        cmocka_unit_test(test_mmap_read_and_parse_agree),
        cmocka_unit_test(test_lazy_converts_on_demand),
        cmocka_unit_test(test_writer_rounds_like_torch),
        cmocka_unit_test(test_writer_round_trip_per_dtype),
        cmocka_unit_test(test_sharded_set),
        cmocka_unit_test(test_index_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
