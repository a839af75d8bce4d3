/*
 * test_checkpoint.c - safetensors reading and writing (strix/checkpoint.h): bit-exact round trip,
 * the hand-built reference file of tools/ref/safetensors_ref.py, every kind of corrupt file
 * (STRIX_ERR_FORMAT, no crash), atomic saving, and the GPT checkpoint round trip.
 *
 * Does not test resuming a training run (tests/cli/determinism.sh does).
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

#include "strix/backend.h"
#include "strix/checkpoint.h"
#include "testlib.h"

static const char *in_tmp(const char *name) { return tl_tmp_path(name); }

static int setup(void **state) {
    (void)state;
    snprintf(tl_tmp_dir(), 64, "/tmp/strix_test_ckpt_XXXXXX");
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

// ---- round trip and reference ------------------------------------------------------------------

static void test_round_trip_bit_identical(void **state) {
    float a[6], b[5], scalar = -0.0f;
    for (int i = 0; i < 6; i++) a[i] = (float)i * 0.1f - 0.25f;
    uint32_t specials[5] = {0x7fc00001u, 0x7f800000u, 0xff800000u, 0x00000001u, 0x80000000u};
    memcpy(b, specials, sizeof b); /* NaN payload, ±inf, a denormal, -0 survive bit for bit */
    strix_st_tensor t[4] = {
        {.name = "layer.weight", .ndim = 2, .shape = {2, 3}, .data = a},
        {.name = "special", .ndim = 1, .shape = {5}, .data = b},
        {.name = "scalar", .ndim = 0, .data = &scalar},
        {.name = "nothing", .ndim = 2, .shape = {0, 4}, .data = NULL},
    };
    strix_st_meta meta[2] = {{"format", "strix-test"},
                             {"tricky", "quote \" backslash \\ newline \n tab \t é"}};
    const char *path = in_tmp("rt.safetensors");
    assert_int_equal(strix_safetensors_write(path, t, 4, meta, 2), STRIX_OK);

    size_t n;
    unsigned char *bytes = read_all(path, &n);
    assert_non_null(bytes);
    uint64_t header_len = 0;
    for (int i = 0; i < 8; i++) header_len |= (uint64_t)bytes[i] << (8 * i);
    assert_int_equal((8 + header_len) % 8, 0); /* data section 8-byte aligned */
    assert_int_equal(n, 8 + header_len + (6 + 5 + 1) * 4);
    free(bytes);

    strix_safetensors *st;
    assert_int_equal(strix_safetensors_read(path, &st), STRIX_OK);
    assert_int_equal(strix_safetensors_count(st), 4);
    const strix_st_tensor *r = strix_safetensors_find(st, "layer.weight");
    assert_non_null(r);
    assert_int_equal(r->ndim, 2);
    assert_int_equal(r->shape[0], 2);
    assert_int_equal(r->shape[1], 3);
    assert_memory_equal(r->data, a, sizeof a);
    r = strix_safetensors_find(st, "special");
    assert_memory_equal(r->data, b, sizeof b);
    r = strix_safetensors_find(st, "scalar");
    assert_int_equal(r->ndim, 0);
    assert_memory_equal(r->data, &scalar, 4);
    r = strix_safetensors_find(st, "nothing");
    assert_int_equal(r->shape[0], 0);
    assert_null(strix_safetensors_find(st, "absent"));
    assert_string_equal(strix_safetensors_meta(st, "format"), "strix-test");
    assert_string_equal(strix_safetensors_meta(st, "tricky"), meta[1].value);
    assert_null(strix_safetensors_meta(st, "absent"));
    strix_safetensors_free(st);
    strix_safetensors_free(NULL);
}

static void test_write_rejects_bad_tensors(void **state) {
    float x = 1.0f;
    strix_st_tensor dup[2] = {{.name = "x", .ndim = 1, .shape = {1}, .data = &x},
                              {.name = "x", .ndim = 1, .shape = {1}, .data = &x}};
    assert_int_equal(strix_safetensors_write(in_tmp("dup.st"), dup, 2, NULL, 0), STRIX_ERR_ARG);
    strix_st_tensor rank[1] = {{.name = "r", .ndim = 5, .data = &x}};
    assert_int_equal(strix_safetensors_write(in_tmp("rank.st"), rank, 1, NULL, 0), STRIX_ERR_ARG);
    struct stat sb;
    assert_int_not_equal(stat(in_tmp("dup.st"), &sb), 0); /* nothing written */
}

/* The values written by tools/ref/safetensors_ref.py. */
static void test_reads_reference_file(void **state) {
    strix_safetensors *st;
    assert_int_equal(strix_safetensors_read("tests/golden/io/ref-f32.st", &st), STRIX_OK);
    assert_int_equal(strix_safetensors_count(st), 5);
    /* in data-offset order: a.weight, b.bias, e.cube, c.scalar, d.empty */
    assert_string_equal(strix_safetensors_at(st, 0)->name, "a.weight");
    assert_string_equal(strix_safetensors_at(st, 2)->name, "e.cube");
    const float a[6] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f};
    const float b[4] = {1.0f, -2.5f, 3.25f, 0.001f};
    const float e[4] = {-1.0f, 1e-7f, 65504.0f, -0.0f};
    const strix_st_tensor *t = strix_safetensors_find(st, "a.weight");
    assert_int_equal(t->ndim, 2);
    assert_memory_equal(t->data, a, sizeof a);
    t = strix_safetensors_find(st, "b.bias");
    assert_memory_equal(t->data, b, sizeof b);
    t = strix_safetensors_find(st, "e.cube");
    assert_int_equal(t->ndim, 3);
    assert_int_equal(t->shape[1], 1);
    assert_memory_equal(t->data, e, sizeof e);
    t = strix_safetensors_find(st, "c.scalar");
    assert_int_equal(t->ndim, 0);
    assert_true(t->data[0] == 42.0f);
    t = strix_safetensors_find(st, "d.empty");
    assert_int_equal(t->shape[0], 0);
    assert_int_equal(t->shape[1], 3);
    assert_string_equal(strix_safetensors_meta(st, "format"), "pt");
    strix_safetensors_free(st);
}

// ---- corrupt files -----------------------------------------------------------------------------

/* A file with header `json` (not padded) and `data_len` data bytes of 0x3f. */
static unsigned char *craft(const char *json, size_t data_len, size_t *n) {
    size_t hl = strlen(json);
    *n = 8 + hl + data_len;
    unsigned char *buf = malloc(*n);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, json, hl);
    memset(buf + 8 + hl, 0x3f, data_len);
    return buf;
}

static void expect_format_error(const char *json, size_t data_len, const char *phrase) {
    size_t n;
    unsigned char *buf = craft(json, data_len, &n);
    strix_safetensors *st = (strix_safetensors *)buf; /* must be reset to NULL on failure */
    strix_status s = strix_safetensors_parse(buf, n, &st);
    if (s != STRIX_ERR_FORMAT || !strstr(strix_last_error(), phrase))
        fail_msg("header %s: got %s '%s', expected STRIX_ERR_FORMAT with '%s'", json,
                 strix_status_str(s), strix_last_error(), phrase);
    assert_null(st);
    free(buf);
}

static void test_crafted_headers(void **state) {
    size_t n;
    unsigned char *ok = craft("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                              &n);
    strix_safetensors *st;
    assert_int_equal(strix_safetensors_parse(ok, n, &st), STRIX_OK);
    strix_safetensors_free(st);
    free(ok);

    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8,
                        "malformed JSON");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},}", 8,
                        "malformed JSON");
    expect_format_error("[1,2]", 0, "does not start with '{'");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8,
                        "past the end");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                        "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
                        "overlap");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                        "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", 20,
                        "hole");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
                        "hole");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12,
                        "cover 8");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]}}", 12,
                        "numel x 4");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8,
                        "end before begin");
    /* F16 is read since strix/safetensors.h; F64 (and other dtypes) are still refused */
    expect_format_error("{\"x\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16,
                        "dtype 'F64'");
    expect_format_error("{\"x\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                        "numel x 2");
    expect_format_error("{\"x\":{\"dtype\":\"Q7\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                        "dtype 'Q7'");
    expect_format_error("{\"x\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                        "string dtype");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                        "\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
                        "duplicate name 'x'");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,2],"
                        "\"data_offsets\":[0,8]}}", 8, "5 dims");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8,
                        "shape entry");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8,
                        "shape entry");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8,
                        "data_offsets [begin, end]");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],"
                        "\"data_offsets\":[0,1e300]}}", 8, "data_offsets [begin, end]");
    expect_format_error("{\"x\":[1,2]}", 0, "not an object");
    expect_format_error("{\"__metadata__\":{\"k\":1}}", 0, "not a string");
    expect_format_error("{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, "duplicate metadata");
    expect_format_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,"
                        "4294967296],\"data_offsets\":[0,8]}}", 8, "shape");
    expect_format_error("{}x", 0, "after the JSON header");
}

static void test_header_length_lies(void **state) {
    size_t n;
    unsigned char *buf = craft("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                               8, &n);
    strix_safetensors *st;
    uint64_t lies[] = {n - 7, n, UINT64_MAX, (uint64_t)1 << 63, 0, 1, 5};
    for (size_t i = 0; i < sizeof lies / sizeof *lies; i++) {
        for (int b = 0; b < 8; b++) buf[b] = (unsigned char)(lies[i] >> (8 * b));
        assert_int_equal(strix_safetensors_parse(buf, n, &st), STRIX_ERR_FORMAT);
        assert_null(st);
    }
    free(buf);
}

static void test_every_truncation_fails_cleanly(void **state) {
    size_t n;
    unsigned char *bytes = read_all("tests/golden/io/ref-f32.st", &n);
    assert_non_null(bytes);
    strix_safetensors *st;
    for (size_t len = 0; len < n; len++) {
        strix_status s = strix_safetensors_parse(bytes, len, &st);
        if (s != STRIX_ERR_FORMAT) fail_msg("prefix of %zu/%zu bytes gave %s", len, n,
                                            strix_status_str(s));
    }
    assert_int_equal(strix_safetensors_parse(bytes, 7, &st), STRIX_ERR_FORMAT);
    assert_non_null(strstr(strix_last_error(), "shorter than the 8-byte"));
    /* on disk too, with the path in the message */
    write_all(in_tmp("trunc.st"), bytes, n - 3);
    assert_int_equal(strix_safetensors_read(in_tmp("trunc.st"), &st), STRIX_ERR_FORMAT);
    assert_non_null(strstr(strix_last_error(), "trunc.st"));
    assert_int_equal(strix_safetensors_read(in_tmp("missing.st"), &st), STRIX_ERR_IO);
    free(bytes);
}

/* Random byte flips in the header and data: any status is fine, a crash is not (run under ASan). */
static void test_random_corruption_never_crashes(void **state) {
    size_t n;
    unsigned char *orig = read_all("tests/golden/io/ref-f32.st", &n);
    unsigned char *buf = malloc(n);
    strix_rng rng;
    strix_rng_seed(&rng, 99);
    int ok = 0;
    for (int trial = 0; trial < 3000; trial++) {
        memcpy(buf, orig, n);
        int flips = 1 + (int)strix_rng_below(&rng, 4);
        for (int f = 0; f < flips; f++) {
            size_t at = (size_t)strix_rng_below(&rng, n);
            buf[at] = (unsigned char)strix_rng_next(&rng);
        }
        strix_safetensors *st;
        strix_status s = strix_safetensors_parse(buf, n, &st);
        assert_true(s == STRIX_OK || s == STRIX_ERR_FORMAT);
        if (s == STRIX_OK) {
            ok++;
            for (int i = 0; i < strix_safetensors_count(st); i++) {
                const strix_st_tensor *t = strix_safetensors_at(st, i);
                int64_t numel = 1;
                for (int d = 0; d < t->ndim; d++) numel *= t->shape[d];
                volatile float sink = 0;
                for (int64_t j = 0; j < numel; j++) sink += t->data[j];
                (void)sink;
            }
            strix_safetensors_free(st);
        }
    }
    assert_true(ok > 0); /* flips in the data section keep the file valid */
    free(buf);
    free(orig);
}

// ---- atomic saving -----------------------------------------------------------------------------

static void test_failed_save_leaves_old_file(void **state) {
    float x[2] = {1.0f, 2.0f}, y[2] = {3.0f, 4.0f};
    strix_st_tensor old_t = {.name = "x", .ndim = 1, .shape = {2}, .data = x};
    strix_st_tensor new_t = {.name = "x", .ndim = 1, .shape = {2}, .data = y};
    const char *path = in_tmp("keep.safetensors");
    assert_int_equal(strix_safetensors_write(path, &old_t, 1, NULL, 0), STRIX_OK);
    size_t n0;
    unsigned char *before = read_all(path, &n0);

    /* 1. the temp file cannot be created: a directory already carries its name */
    char tmp[512];
    strix_atomic_temp_path(path, tmp, sizeof tmp);
    assert_int_equal(mkdir(tmp, 0755), 0);
    assert_int_equal(strix_safetensors_write(path, &new_t, 1, NULL, 0), STRIX_ERR_IO);
    assert_non_null(strstr(strix_last_error(), "cannot write"));
    assert_int_equal(rmdir(tmp), 0);
    size_t n1;
    unsigned char *after = read_all(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(after);

    /* 2. the rename fails (the target is a non-empty directory): the temp is removed */
    const char *dir_target = in_tmp("is_a_dir");
    assert_int_equal(mkdir(dir_target, 0755), 0);
    write_all(in_tmp("is_a_dir/inside"), "x", 1);
    assert_int_equal(strix_safetensors_write(dir_target, &new_t, 1, NULL, 0), STRIX_ERR_IO);
    assert_non_null(strstr(strix_last_error(), "left as it was"));
    strix_atomic_temp_path(dir_target, tmp, sizeof tmp);
    struct stat sb;
    assert_int_not_equal(stat(tmp, &sb), 0);

    /* 3. the directory does not exist */
    assert_int_equal(strix_safetensors_write(in_tmp("no/such/dir/x.st"), &new_t, 1, NULL, 0),
                     STRIX_ERR_IO);

    /* a successful save replaces the file completely */
    assert_int_equal(strix_safetensors_write(path, &new_t, 1, NULL, 0), STRIX_OK);
    strix_safetensors *st;
    assert_int_equal(strix_safetensors_read(path, &st), STRIX_OK);
    assert_memory_equal(strix_safetensors_find(st, "x")->data, y, sizeof y);
    strix_safetensors_free(st);
    free(before);
}

// ---- GPT checkpoint ----------------------------------------------------------------------------

static strix_gpt_config tiny_config(void) {
    strix_gpt_config c = strix_gpt_config_default();
    c.vocab_size = 5;
    c.block_size = 8;
    c.n_layer = 1;
    c.n_head = 2;
    c.d_model = 8;
    return c;
}

static strix_checkpoint_info tiny_info(const strix_gpt_config *c) {
    strix_checkpoint_info info;
    memset(&info, 0, sizeof info);
    info.model = strix_lm_config_of_gpt(c);
    assert_int_equal(strix_vocab_from_bytes((const unsigned char *)"\nabc\xff", 5, &info.vocab),
                     STRIX_OK);
    info.train.steps = 100;
    info.train.lr = 3e-4f;
    info.train.min_lr = 3e-5f;
    info.train.warmup = 10;
    info.train.weight_decay = 0.1f;
    info.train.clip = 1.0f;
    info.train.adam_beta1 = 0.9f;
    info.train.adam_beta2 = 0.999f;
    info.train.adam_eps = 1e-8f;
    info.train.batch = 4;
    info.train.grad_accum = 3;
    info.train.seed = UINT64_MAX;
    info.train.eval_every = 25;
    info.train.eval_batches = 3;
    info.train.val_fraction = 0.1;
    info.train.stride = 8;
    info.train.data_path = "some dir/with \"quotes\".txt";
    info.train.backend = "cpu-blas";
    info.state.step = 42;
    info.state.data_rng = 0xfedcba9876543210ULL;
    info.state.cursor = (strix_seq_cursor){.pos = 17, .stride = 8, .epoch = 3};
    info.state.val_loss = NAN;
    info.state.data_size = 12345;
    info.state.data_hash = 0x0123456789abcdefULL;
    return info;
}

static void fill_block(strix_params *ps, float *block, float base) {
    float *host = malloc(ps->total * sizeof(float));
    for (size_t i = 0; i < ps->total; i++) host[i] = base + (float)i * 1e-3f;
    assert_int_equal(strix_copy(ps->be, block, host, ps->total * sizeof(float), STRIX_COPY_H2D),
                     STRIX_OK);
    free(host);
}

static void test_gpt_checkpoint_round_trip(void **state) {
    strix_backend *be;
    assert_int_equal(strix_backend_init("cpu", &be), STRIX_OK);
    strix_gpt_config c = tiny_config();
    strix_gpt *g1, *g2;
    assert_int_equal(strix_gpt_new(be, &c, &g1), STRIX_OK);
    assert_int_equal(strix_gpt_init_weights(g1, 7), STRIX_OK);
    strix_params *p1 = strix_gpt_params(g1);
    fill_block(p1, p1->m, 0.5f);
    fill_block(p1, p1->v, 2.0f);
    strix_checkpoint_info info = tiny_info(&c);
    const char *path = in_tmp("gpt.safetensors");
    assert_int_equal(strix_checkpoint_save(path, g1, &info), STRIX_OK);

    strix_checkpoint *ck;
    assert_int_equal(strix_checkpoint_open(path, &ck), STRIX_OK);
    const strix_checkpoint_info *got = strix_checkpoint_info_of(ck);
    assert_int_equal(got->model.gpt.d_model, 8);
    assert_int_equal(got->model.gpt.n_head, 2);
    assert_int_equal(got->vocab.size, 5);
    assert_memory_equal(got->vocab.bytes, "\nabc\xff", 5);
    assert_int_equal(got->state.step, 42);
    assert_true(got->state.data_rng == info.state.data_rng);
    assert_true(got->train.seed == UINT64_MAX);
    assert_int_equal(got->train.grad_accum, info.train.grad_accum);
    assert_true(got->train.lr == info.train.lr);
    assert_true(got->train.adam_eps == info.train.adam_eps);
    assert_true(got->state.cursor.pos == 17 && got->state.cursor.epoch == 3);
    assert_true(isnan(got->state.val_loss));
    assert_true(got->state.data_hash == info.state.data_hash);
    assert_string_equal(got->train.data_path, info.train.data_path);
    assert_string_equal(got->train.backend, info.train.backend);

    assert_int_equal(strix_gpt_new(be, &c, &g2), STRIX_OK);
    assert_int_equal(strix_checkpoint_restore(ck, g2, true), STRIX_OK);
    strix_params *p2 = strix_gpt_params(g2);
    assert_int_equal(p1->total, p2->total);
    assert_memory_equal(p1->data, p2->data, p1->total * sizeof(float));
    assert_memory_equal(p1->m, p2->m, p1->total * sizeof(float));
    assert_memory_equal(p1->v, p2->v, p1->total * sizeof(float));
    strix_gpt_free(g2);

    /* a model of another shape is refused before anything is written */
    strix_gpt_config other = c;
    other.d_model = 12;
    other.n_head = 3;
    assert_int_equal(strix_gpt_new(be, &other, &g2), STRIX_OK);
    assert_int_equal(strix_checkpoint_restore(ck, g2, true), STRIX_ERR_ARG);
    strix_gpt_free(g2);
    strix_checkpoint_close(ck);

    /* saving the same state again gives the same bytes */
    size_t n1, n2;
    unsigned char *b1 = read_all(path, &n1);
    assert_int_equal(strix_checkpoint_save(path, g1, &info), STRIX_OK);
    unsigned char *b2 = read_all(path, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);

    /* optimizer settings that would turn weights into NaN on resume are refused on load */
    const char *bad_keys[] = {"adam_beta2", "adam_eps", "min_lr"};
    for (int i = 0; i < 3; i++) {
        strix_checkpoint_info bad = info;
        if (i == 0) bad.train.adam_beta2 = 1.0f;   /* bias correction 1 - 1^t = 0 */
        if (i == 1) bad.train.adam_eps = 0.0f;     /* 0/0 for a parameter never updated */
        if (i == 2) bad.train.min_lr = 2.0f * bad.train.lr;
        const char *bad_path = in_tmp("bad_optim.safetensors");
        assert_int_equal(strix_checkpoint_save(bad_path, g1, &bad), STRIX_OK);
        assert_int_equal(strix_checkpoint_open(bad_path, &ck), STRIX_ERR_FORMAT);
        assert_non_null(strstr(strix_last_error(), bad_keys[i]));
    }

    /* a plain safetensors file is not a checkpoint */
    assert_int_equal(strix_checkpoint_open("tests/golden/io/ref-f32.st", &ck),
                     STRIX_ERR_FORMAT);
    assert_non_null(strstr(strix_last_error(), "not a strix checkpoint"));
    free(b1);
    free(b2);
    strix_gpt_free(g1);
    strix_backend_free(be);
}

/* strix_checkpoint_probe: a cheap header-only test used before --out replaces a file. */
static void test_checkpoint_probe(void **state) {
    strix_backend *be;
    assert_int_equal(strix_backend_init("cpu", &be), STRIX_OK);
    strix_gpt_config c = tiny_config();
    strix_gpt *g;
    assert_int_equal(strix_gpt_new(be, &c, &g), STRIX_OK);
    assert_int_equal(strix_gpt_init_weights(g, 7), STRIX_OK);
    strix_checkpoint_info info = tiny_info(&c);
    const char *path = in_tmp("probe.safetensors");
    assert_int_equal(strix_checkpoint_save(path, g, &info), STRIX_OK);
    assert_int_equal(strix_checkpoint_probe(path), STRIX_OK);

    /* only the header is read: a checkpoint cut short in its data still probes as one */
    size_t n;
    unsigned char *bytes = read_all(path, &n);
    write_all(in_tmp("cut.safetensors"), bytes, n - 16);
    assert_int_equal(strix_checkpoint_probe(in_tmp("cut.safetensors")), STRIX_OK);
    /* ... but not one cut inside its header */
    write_all(in_tmp("cut_header.safetensors"), bytes, 40);
    assert_int_equal(strix_checkpoint_probe(in_tmp("cut_header.safetensors")), STRIX_ERR_FORMAT);
    free(bytes);

    /* text, short files, empty files, foreign safetensors, directories, devices: not ours */
    write_all(in_tmp("text.txt"), "First Citizen:\nBefore we proceed any further, hear me.\n",
              54);
    assert_int_equal(strix_checkpoint_probe(in_tmp("text.txt")), STRIX_ERR_FORMAT);
    assert_non_null(strstr(strix_last_error(), "no safetensors header"));
    write_all(in_tmp("short"), "abc", 3);
    assert_int_equal(strix_checkpoint_probe(in_tmp("short")), STRIX_ERR_FORMAT);
    write_all(in_tmp("empty"), "", 0);
    assert_int_equal(strix_checkpoint_probe(in_tmp("empty")), STRIX_ERR_FORMAT);
    assert_int_equal(strix_checkpoint_probe("tests/golden/io/ref-f32.st"), STRIX_ERR_FORMAT);
    assert_non_null(strstr(strix_last_error(), "not a strix checkpoint"));
    static const char fake[] = "\x0e\0\0\0\0\0\0\0{\"a\":1, \"b\":[]}";
    write_all(in_tmp("fake"), fake, sizeof fake - 1);
    assert_int_equal(strix_checkpoint_probe(in_tmp("fake")), STRIX_ERR_FORMAT);
    assert_int_equal(strix_checkpoint_probe(tl_tmp_dir()), STRIX_ERR_FORMAT);
    assert_int_equal(strix_checkpoint_probe("/dev/zero"), STRIX_ERR_FORMAT);
    assert_int_equal(strix_checkpoint_probe(in_tmp("missing")), STRIX_ERR_IO);

    strix_gpt_free(g);
    strix_backend_free(be);
}

static void test_gpt_checkpoint_tied_weights_stored_once(void **state) {
    strix_backend *be;
    assert_int_equal(strix_backend_init("cpu", &be), STRIX_OK);
    strix_gpt_config c = tiny_config();
    c.tie_weights = true;
    strix_gpt *g1, *g2;
    assert_int_equal(strix_gpt_new(be, &c, &g1), STRIX_OK);
    assert_int_equal(strix_gpt_init_weights(g1, 3), STRIX_OK);
    strix_params *p1 = strix_gpt_params(g1);
    int untied = 0;
    for (int i = 0; i < p1->count; i++) untied += p1->items[i]->tied_to == NULL;
    assert_true(untied < p1->count);
    strix_checkpoint_info info = tiny_info(&c);
    const char *path = in_tmp("tied.safetensors");
    assert_int_equal(strix_checkpoint_save(path, g1, &info), STRIX_OK);
    strix_safetensors *st;
    assert_int_equal(strix_safetensors_read(path, &st), STRIX_OK);
    assert_int_equal(strix_safetensors_count(st), 3 * untied);
    strix_safetensors_free(st);
    strix_checkpoint *ck;
    assert_int_equal(strix_checkpoint_open(path, &ck), STRIX_OK);
    assert_true(strix_checkpoint_info_of(ck)->model.gpt.tie_weights);
    assert_int_equal(strix_gpt_new(be, &c, &g2), STRIX_OK);
    assert_int_equal(strix_checkpoint_restore(ck, g2, true), STRIX_OK);
    assert_memory_equal(p1->data, strix_gpt_params(g2)->data, p1->total * sizeof(float));
    strix_checkpoint_close(ck);
    strix_gpt_free(g2);
    strix_gpt_free(g1);
    strix_backend_free(be);
}

/* The metadata keys and their texts, as every strix checkpoint so far has written them (plus
 * grad_accum, the one optional key), and each key checked on load: removing it, or (run fields)
 * garbling it, makes the file fail to open with a message naming the key; a file without
 * grad_accum (written before accumulation) opens with grad_accum 1, a garbled one fails. */
static void test_checkpoint_metadata_fields(void **state) {
    strix_backend *be;
    assert_int_equal(strix_backend_init("cpu", &be), STRIX_OK);
    strix_gpt_config c = tiny_config();
    strix_gpt *g;
    assert_int_equal(strix_gpt_new(be, &c, &g), STRIX_OK);
    assert_int_equal(strix_gpt_init_weights(g, 7), STRIX_OK);
    strix_checkpoint_info info = tiny_info(&c);
    const char *path = in_tmp("fields.safetensors");
    assert_int_equal(strix_checkpoint_save(path, g, &info), STRIX_OK);
    strix_safetensors *st;
    assert_int_equal(strix_safetensors_read(path, &st), STRIX_OK);
    static const char *const keys[] = {
        "format", "format_version", "config", "vocab", "step", "total_steps", "time_limit", "lr",
        "min_lr", "warmup", "weight_decay", "clip", "adam_beta1", "adam_beta2", "adam_eps",
        "batch", "grad_accum", "grad_shards", "seed", "eval_every", "eval_batches", "val_fraction",
        "data_path", "data_size", "data_hash", "sampling", "stride", "backend", "data_rng",
        "seq_pos", "seq_epoch", "val_loss", "optimizer"};
    const int n_keys = (int)(sizeof keys / sizeof *keys);
    assert_int_equal(strix_safetensors_meta_count(st), n_keys);
    for (int i = 0; i < n_keys; i++)
        assert_string_equal(strix_safetensors_meta_at(st, i)->key, keys[i]);
    static const char *const texts[][2] = {
        {"format_version", "1"}, {"vocab", "0a616263ff"}, {"step", "42"},
        {"total_steps", "100"}, {"time_limit", "0"}, {"lr", "0.0003"}, {"min_lr", "3e-05"},
        {"warmup", "10"}, {"weight_decay", "0.1"}, {"clip", "1"}, {"adam_beta2", "0.999"},
        {"adam_eps", "1e-08"}, {"batch", "4"}, {"grad_accum", "3"},
        {"seed", "18446744073709551615"},
        {"eval_every", "25"}, {"eval_batches", "3"}, {"val_fraction", "0.1"},
        {"data_path", "some dir/with \"quotes\".txt"}, {"data_size", "12345"},
        {"data_hash", "0123456789abcdef"}, {"sampling", "random"}, {"stride", "8"},
        {"backend", "cpu-blas"}, {"data_rng", "18364758544493064720"}, {"seq_pos", "17"},
        {"seq_epoch", "3"}, {"val_loss", "nan"}};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        const char *v = strix_safetensors_meta(st, texts[i][0]);
        if (!v || strcmp(v, texts[i][1]) != 0)
            fail_msg("metadata '%s' = '%s', expected '%s'", texts[i][0], v ? v : "(none)",
                     texts[i][1]);
    }

    int n = strix_safetensors_count(st);
    strix_st_tensor *ts = calloc((size_t)n, sizeof *ts);
    for (int i = 0; i < n; i++) ts[i] = *strix_safetensors_at(st, i);
    strix_st_meta meta[64];
    const char *edited = in_tmp("edited.safetensors");
    for (int k = 0; k < n_keys; k++) {
        if (strcmp(keys[k], "optimizer") == 0) continue; /* informational, not read */
        for (int garble = 0; garble < 2; garble++) {
            /* free-form strings ("-x1" is a fine path or backend name) are not garbled */
            bool run_field = k >= 4 && strcmp(keys[k], "data_path") != 0 &&
                             strcmp(keys[k], "backend") != 0;
            if (garble && !run_field) continue;
            int m = 0;
            for (int i = 0; i < n_keys; i++) {
                meta[m] = *strix_safetensors_meta_at(st, i);
                if (i == k && !garble) continue;
                if (i == k) meta[m].value = "-x1";
                m++;
            }
            assert_int_equal(strix_safetensors_write(edited, ts, n, meta, m), STRIX_OK);
            strix_checkpoint *ck = (strix_checkpoint *)1;
            strix_status s = strix_checkpoint_open(edited, &ck);
            bool optional = strcmp(keys[k], "grad_accum") == 0 ||
                            strcmp(keys[k], "grad_shards") == 0;
            if (!garble && optional) { /* keys newer than the format: default 1 */
                if (s != STRIX_OK)
                    fail_msg("without %s: got %s '%s', expected it to open", keys[k],
                             strix_status_str(s), strix_last_error());
                const strix_train_config *t = &strix_checkpoint_info_of(ck)->train;
                assert_int_equal(keys[k][5] == 'a' ? t->grad_accum : t->grad_shards, 1);
                assert_int_equal(strix_checkpoint_info_of(ck)->train.batch, 4);
                strix_checkpoint_close(ck);
                continue;
            }
            char want[96];
            if (garble) snprintf(want, sizeof want, "metadata '%s' = '-x1' is invalid", keys[k]);
            else if (k == 0) snprintf(want, sizeof want, "not a strix checkpoint");
            else snprintf(want, sizeof want, "'%s'", keys[k]);
            if (s != STRIX_ERR_FORMAT || !strstr(strix_last_error(), want))
                fail_msg("%s '%s': got %s '%s', expected '%s'", garble ? "garbled" : "without",
                         keys[k], strix_status_str(s), strix_last_error(), want);
            assert_null(ck);
        }
    }
    free(ts);
    strix_safetensors_free(st);
    strix_gpt_free(g);
    strix_backend_free(be);
}

static void test_gpt_config_json_round_trip(void **state) {
    strix_gpt_config c = tiny_config();
    c.n_head = 3;
    c.head_sizes[0] = 2, c.head_sizes[1] = 2, c.head_sizes[2] = 4;
    c.rope = true;
    c.mlp_act = STRIX_ACT_RELU;
    c.ln_eps = 1e-5f;
    char *json;
    assert_int_equal(strix_gpt_config_to_json(&c, &json), STRIX_OK);
    strix_gpt_config back;
    assert_int_equal(strix_gpt_config_from_json(json, &back), STRIX_OK);
    free(json);
    assert_int_equal(back.n_head, 3);
    assert_int_equal(back.head_sizes[2], 4);
    assert_true(back.rope && back.mlp_act == STRIX_ACT_RELU);
    assert_true(back.ln_eps == c.ln_eps && back.rope_base == c.rope_base);
    assert_int_equal(strix_gpt_config_from_json("{\"vocab_size\":5}", &back), STRIX_ERR_FORMAT);
    assert_int_equal(strix_gpt_config_from_json("not json", &back), STRIX_ERR_FORMAT);
}

// ---- weights-only files ------------------------------------------------------------------------

/* A variant of a weights-only file: its tensors (one dropped, one added, one reshaped, one as
 * F16) and metadata (one key dropped or changed), rewritten to `path`. */
typedef struct variant {
    const char *drop_tensor, *extra_tensor, *reshape_tensor, *f16_tensor;
    const char *meta_key, *meta_value; /* value NULL: the key is dropped */
} variant;

static void write_variant(const char *from, const char *path, const variant *v) {
    strix_safetensors *st;
    if (strix_safetensors_read(from, &st) != STRIX_OK) fail_msg("%s", strix_last_error());
    int n = strix_safetensors_count(st), nm = strix_safetensors_meta_count(st), k = 0, km = 0;
    strix_st_tensor *t = calloc((size_t)n + 1, sizeof *t);
    strix_st_dtype *dt = calloc((size_t)n + 1, sizeof *dt);
    strix_st_meta *m = calloc((size_t)nm + 1, sizeof *m);
    for (int i = 0; i < n; i++) {
        const strix_st_tensor *src = strix_safetensors_at(st, i);
        if (v->drop_tensor && strcmp(src->name, v->drop_tensor) == 0) continue;
        t[k] = *src;
        dt[k] = v->f16_tensor && strcmp(src->name, v->f16_tensor) == 0 ? STRIX_ST_F16
                                                                       : STRIX_ST_F32;
        if (v->reshape_tensor && strcmp(src->name, v->reshape_tensor) == 0) {
            assert_int_equal(t[k].ndim, 2);
            t[k].shape[0] = src->shape[1]; /* transposed shape, same numel */
            t[k].shape[1] = src->shape[0];
        }
        k++;
    }
    if (v->extra_tensor) {
        t[k] = *strix_safetensors_at(st, 0);
        t[k].name = v->extra_tensor;
        dt[k++] = STRIX_ST_F32;
    }
    for (int i = 0; i < nm; i++) {
        const strix_st_meta *src = strix_safetensors_meta_at(st, i);
        bool hit = v->meta_key && strcmp(src->key, v->meta_key) == 0;
        if (hit && !v->meta_value) continue;
        m[km] = *src;
        if (hit) m[km].value = v->meta_value;
        km++;
    }
    if (strix_safetensors_write_typed(path, t, dt, k, m, km) != STRIX_OK)
        fail_msg("%s", strix_last_error());
    free(t);
    free(dt);
    free(m);
    strix_safetensors_free(st);
}

/* The error of opening `path` and restoring it into g: a format error, one line, naming phrase;
 * g's weights unchanged. */
static void expect_refused(const char *path, strix_gpt *g, const char *phrase) {
    strix_params *ps = strix_gpt_params(g);
    float *before = malloc(ps->total * sizeof(float));
    memcpy(before, ps->data, ps->total * sizeof(float));
    strix_checkpoint *ck = NULL;
    strix_status s = strix_checkpoint_open(path, &ck);
    if (s == STRIX_OK) s = strix_checkpoint_restore(ck, g, false);
    strix_checkpoint_close(ck);
    if (s != STRIX_ERR_FORMAT) fail_msg("%s: status %s", phrase, strix_status_str(s));
    if (!strstr(strix_last_error(), phrase))
        fail_msg("'%s' not in '%s'", phrase, strix_last_error());
    assert_null(strchr(strix_last_error(), '\n'));
    assert_memory_equal(before, ps->data, ps->total * sizeof(float));
    free(before);
}

/* strix_checkpoint_save_weights: the parameters only, about a third of the full checkpoint,
 * restored bit for bit (the same weights as from the full file); never resumable; every
 * truncation, a missing, extra, reshaped or F16 tensor and broken metadata are refused with one
 * line, the model untouched. */
static void test_weights_only_file(void **state) {
    strix_backend *be;
    assert_int_equal(strix_backend_init("cpu", &be), STRIX_OK);
    strix_gpt_config c = tiny_config();
    c.tie_weights = true;
    strix_gpt *g1, *g2, *g3;
    assert_int_equal(strix_gpt_new(be, &c, &g1), STRIX_OK);
    assert_int_equal(strix_gpt_init_weights(g1, 11), STRIX_OK);
    strix_params *p1 = strix_gpt_params(g1);
    fill_block(p1, p1->m, 0.5f);
    fill_block(p1, p1->v, 2.0f);
    strix_checkpoint_info info = tiny_info(&c);
    char full[256], wo[256], cut[256], bad[256], nomoment[256]; /* in_tmp's buffers rotate */
    snprintf(full, sizeof full, "%s", in_tmp("full.safetensors"));
    snprintf(wo, sizeof wo, "%s", in_tmp("weights.safetensors"));
    snprintf(cut, sizeof cut, "%s", in_tmp("cut.st"));
    snprintf(bad, sizeof bad, "%s", in_tmp("bad.st"));
    snprintf(nomoment, sizeof nomoment, "%s", in_tmp("nomoment.st"));
    assert_int_equal(strix_checkpoint_save(full, g1, &info), STRIX_OK);
    assert_int_equal(strix_checkpoint_save_weights(wo, g1, &info.vocab), STRIX_OK);
    strix_vocab small;
    assert_int_equal(strix_vocab_from_bytes((const unsigned char *)"ab", 2, &small), STRIX_OK);
    assert_int_equal(strix_checkpoint_save_weights(in_tmp("x.st"), g1, &small), STRIX_ERR_ARG);

    /* the file: untied parameters only, F32, contents "weights", no run */
    strix_safetensors *st;
    assert_int_equal(strix_safetensors_read(wo, &st), STRIX_OK);
    int untied = 0;
    for (int i = 0; i < p1->count; i++) untied += p1->items[i]->tied_to == NULL;
    assert_int_equal(strix_safetensors_count(st), untied);
    assert_null(strix_safetensors_find(st, "lm_head.weight")); /* tied to transformer.wte */
    assert_non_null(strix_safetensors_find(st, "transformer.wte.weight"));
    assert_non_null(strix_safetensors_find(st, "transformer.h.0.attn.c_attn.weight"));
    for (int i = 0; i < strix_safetensors_count(st); i++)
        assert_null(strstr(strix_safetensors_at(st, i)->name, "optim."));
    assert_string_equal(strix_safetensors_meta(st, "contents"), "weights");
    assert_string_equal(strix_safetensors_meta(st, "format"), "strix-gpt");
    assert_null(strix_safetensors_meta(st, "step"));
    assert_null(strix_safetensors_meta(st, "optimizer"));
    strix_safetensors_free(st);
    struct stat sf, sw;
    assert_int_equal(stat(full, &sf), 0);
    assert_int_equal(stat(wo, &sw), 0);
    double ratio = (double)sw.st_size / (double)sf.st_size;
    if (ratio < 0.30 || ratio > 0.40) fail_msg("weights-only / full = %.3f", ratio);
    assert_int_equal(strix_checkpoint_probe(wo), STRIX_OK);

    /* open: config and vocabulary, weights_only, empty run */
    strix_checkpoint *ck;
    assert_int_equal(strix_checkpoint_open(wo, &ck), STRIX_OK);
    const strix_checkpoint_info *got = strix_checkpoint_info_of(ck);
    assert_true(got->weights_only);
    assert_int_equal(got->model.gpt.d_model, c.d_model);
    assert_true(got->model.gpt.tie_weights);
    assert_int_equal(got->vocab.size, 5);
    assert_memory_equal(got->vocab.bytes, "\nabc\xff", 5);
    assert_string_equal(got->train.data_path, "");
    assert_string_equal(got->train.backend, "");
    assert_int_equal(got->state.step, 0);

    /* restore: bit-identical weights, as from the full checkpoint */
    assert_int_equal(strix_gpt_new(be, &c, &g2), STRIX_OK);
    assert_int_equal(strix_gpt_new(be, &c, &g3), STRIX_OK);
    assert_int_equal(strix_gpt_init_weights(g2, 99), STRIX_OK);
    strix_params *p2 = strix_gpt_params(g2);
    assert_memory_not_equal(p1->data, p2->data, p1->total * sizeof(float));
    assert_int_equal(strix_checkpoint_restore(ck, g2, true), STRIX_ERR_FORMAT); /* no moments */
    assert_non_null(strstr(strix_last_error(), "weights-only"));
    assert_int_equal(strix_checkpoint_restore(ck, g2, false), STRIX_OK);
    assert_memory_equal(p1->data, p2->data, p1->total * sizeof(float));
    strix_checkpoint_close(ck);
    assert_int_equal(strix_checkpoint_open(full, &ck), STRIX_OK);
    assert_false(strix_checkpoint_info_of(ck)->weights_only);
    assert_int_equal(strix_checkpoint_restore(ck, g3, false), STRIX_OK);
    assert_memory_equal(strix_gpt_params(g3)->data, p2->data, p1->total * sizeof(float));
    strix_checkpoint_close(ck);
    /* a full checkpoint's optimizer=false restore still wants its moments in the file */
    write_variant(full, nomoment, &(variant){.drop_tensor = "optim.m.transformer.ln_f.weight"});

    /* corrupted and partial files: refused with one line, the model untouched */
    assert_int_equal(strix_gpt_init_weights(g2, 5), STRIX_OK);
    size_t n;
    unsigned char *bytes = read_all(wo, &n);
    for (size_t len = 0; len < n; len += len < 64 ? 1 : 97) {
        write_all(cut, bytes, len);
        expect_refused(cut, g2, "");
    }
    free(bytes);
    write_variant(wo, bad, &(variant){.drop_tensor = "transformer.h.0.mlp.c_fc.weight"});
    expect_refused(bad, g2, "has no tensor 'transformer.h.0.mlp.c_fc.weight'");
    write_variant(wo, bad, &(variant){.extra_tensor = "lm_head.weight"});
    expect_refused(bad, g2, "holds");
    write_variant(wo, bad, &(variant){.reshape_tensor = "transformer.h.0.attn.c_attn.weight"});
    expect_refused(bad, g2, "has shape");
    write_variant(wo, bad, &(variant){.f16_tensor = "transformer.ln_f.weight"});
    expect_refused(bad, g2, "is not F32");
    write_variant(wo, bad, &(variant){.meta_key = "contents", .meta_value = "weight"});
    expect_refused(bad, g2, "metadata 'contents'");
    write_variant(wo, bad, &(variant){.meta_key = "config"});
    expect_refused(bad, g2, "has no metadata 'config'");
    write_variant(wo, bad, &(variant){.meta_key = "vocab", .meta_value = "0a61"});
    expect_refused(bad, g2, "vocabulary of 2 bytes");
    write_variant(wo, bad, &(variant){.meta_key = "format"});
    expect_refused(bad, g2, "not a strix checkpoint");
    /* without "contents" the file claims to be a full checkpoint: its run fields are missing */
    write_variant(wo, bad, &(variant){.meta_key = "contents"});
    expect_refused(bad, g2, "has no metadata 'step'");
    expect_refused(nomoment, g2, "has no tensor 'optim.m.transformer.ln_f.weight'");

    strix_gpt_free(g1);
    strix_gpt_free(g2);
    strix_gpt_free(g3);
    strix_backend_free(be);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_bit_identical),
        cmocka_unit_test(test_write_rejects_bad_tensors),
        cmocka_unit_test(test_reads_reference_file),
        cmocka_unit_test(test_crafted_headers),
        cmocka_unit_test(test_header_length_lies),
        cmocka_unit_test(test_every_truncation_fails_cleanly),
        cmocka_unit_test(test_random_corruption_never_crashes),
        cmocka_unit_test(test_failed_save_leaves_old_file),
        cmocka_unit_test(test_gpt_config_json_round_trip),
        cmocka_unit_test(test_gpt_checkpoint_round_trip),
        cmocka_unit_test(test_gpt_checkpoint_tied_weights_stored_once),
        cmocka_unit_test(test_checkpoint_probe),
        cmocka_unit_test(test_checkpoint_metadata_fields),
        cmocka_unit_test(test_weights_only_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
