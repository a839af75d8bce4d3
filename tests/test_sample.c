/*
 * test_sample.c - the sampler and the generator of strix/sample.h, with exact values for every rule
 * of docs/SEMANTICS.md (edge cases): greedy with ties, temperature (exact probabilities, the max subtracted
 * before scaling), top-k (1 = greedy, > V = off), top-p (tiny = top token, 1 = all, ties to the
 * lower id), NaN / +inf / all -inf logits, -inf entries never chosen, config errors; the draw (one
 * uniform, inverse CDF in rank order) against an independent computation; determinism; 20,000
 * draws against the softmax; the generator's context rule against full forwards; min-p and the
 * repetition penalty with the other rules against transformers' own warpers (sampling_ref.py).
 *
 * Does not test the CLI (tests/cli/sample.sh does).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "strix/sample.h"
#include "testlib.h"

#define OK(expr) assert_int_equal((expr), STRIX_OK)

static strix_sampler_config cfg(float temperature, int top_k, float top_p) {
    return (strix_sampler_config){.temperature = temperature, .top_k = top_k, .top_p = top_p};
}

/* Samples once from a fresh stream seeded with `seed`. */
static int32_t pick(const float *x, int V, strix_sampler_config c, uint64_t seed) {
    strix_rng rng;
    strix_rng_seed(&rng, seed);
    int32_t t = -1;
    OK(strix_sample_logits(x, V, &c, &rng, NULL, &t));
    return t;
}

/* Independent softmax of x/T in double over the finite entries (no max subtraction needed for
 * the small logits used here). */
static void softmax_ref(const float *x, int V, double T, double *p) {
    double s = 0.0;
    for (int i = 0; i < V; i++) s += (p[i] = isinf(x[i]) ? 0.0 : exp((double)x[i] / T));
    for (int i = 0; i < V; i++) p[i] /= s;
}

// ---- configuration -----------------------------------------------------------------------------

static void test_config_checks(void **state) {
    strix_sampler_config d = strix_sampler_config_default();
    assert_true(d.temperature == 1.0f && d.top_k == 0 && d.top_p == 1.0f);
    OK(strix_sampler_config_check(&d));
    const strix_sampler_config good[] = {cfg(0, 0, 1), cfg(1e-30f, 1, 1e-6f), cfg(INFINITY, 9, 1)};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        OK(strix_sampler_config_check(&good[i]));
    const strix_sampler_config bad[] = {cfg(-0.5f, 0, 1),  cfg(-1e-30f, 0, 1), cfg(NAN, 0, 1),
                                        cfg(1, -1, 1),     cfg(1, 0, 0),       cfg(1, 0, -0.1f),
                                        cfg(1, 0, 1.5f),   cfg(1, 0, NAN)};
    const char *msg[] = {"negative", "negative", "NaN", "top-k -1", "top-p 0", "top-p -0.1",
                         "top-p 1.5", "top-p nan"};
    float x[3] = {1, 2, 3};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(strix_sampler_config_check(&bad[i]), STRIX_ERR_ARG);
        assert_non_null(strstr(strix_last_error(), msg[i]));
        // the sampler refuses too, leaving the token and the stream alone
        strix_rng rng = {.state = 42};
        int32_t t = -7;
        assert_int_equal(strix_sample_logits(x, 3, &bad[i], &rng, NULL, &t), STRIX_ERR_ARG);
        assert_int_equal(t, -7);
        assert_true(rng.state == 42);
    }
    strix_sampler_config c = cfg(1, 0, 1);
    strix_rng rng = {.state = 1};
    int32_t t;
    assert_int_equal(strix_sample_logits(x, 0, &c, &rng, NULL, &t), STRIX_ERR_ARG);
    double p[3];
    assert_int_equal(strix_sample_probs(x, 0, &c, NULL, p), STRIX_ERR_ARG);
}

// ---- greedy ------------------------------------------------------------------------------------

static void test_greedy_ties_to_lower_id(void **state) {
    const float a[] = {1, 3, 3, 2}, b[] = {-INFINITY, -INFINITY, 5, 5}, c[] = {7, 7, 7};
    const float d[] = {-3e38f, -1e-45f, -0.0f, 0.0f};
    strix_rng rng = {.state = 5};
    strix_sampler_config g = cfg(0, 0, 1);
    int32_t t;
    OK(strix_sample_logits(a, 4, &g, &rng, NULL, &t));
    assert_int_equal(t, 1);
    OK(strix_sample_logits(b, 4, &g, &rng, NULL, &t));
    assert_int_equal(t, 2);
    OK(strix_sample_logits(c, 3, &g, &rng, NULL, &t));
    assert_int_equal(t, 0);
    OK(strix_sample_logits(d, 4, &g, &rng, NULL, &t)); // -0 == +0: a tie, the lower id
    assert_int_equal(t, 2);
    assert_true(rng.state == 5); // greedy draws nothing
    // top-k and top-p do not change the greedy choice
    strix_sampler_config gk = cfg(0, 1, 0.01f);
    OK(strix_sample_logits(a, 4, &gk, &rng, NULL, &t));
    assert_int_equal(t, 1);
    double p[4];
    OK(strix_sample_probs(a, 4, &g, NULL, p));
    assert_true(p[0] == 0 && p[1] == 1 && p[2] == 0 && p[3] == 0);
}

// ---- temperature -------------------------------------------------------------------------------

static void test_temperature_probabilities(void **state) {
    const float x[] = {1.0f, 2.0f, 3.0f, 0.5f, -1.0f};
    const double temps[] = {0.25, 0.5, 1.0, 2.0, 7.5};
    for (size_t k = 0; k < sizeof temps / sizeof temps[0]; k++) {
        strix_sampler_config c = cfg((float)temps[k], 0, 1);
        double got[5], want[5];
        OK(strix_sample_probs(x, 5, &c, NULL, got));
        softmax_ref(x, 5, temps[k], want);
        for (int i = 0; i < 5; i++) assert_true(fabs(got[i] - want[i]) <= 1e-15);
    }
    // exact: two equal logits at any temperature share the mass evenly
    const float e[] = {0.3f, 0.3f};
    strix_sampler_config c = cfg(0.01f, 0, 1);
    double p[2];
    OK(strix_sample_probs(e, 2, &c, NULL, p));
    assert_true(p[0] == 0.5 && p[1] == 0.5);
    // temperature +inf: uniform over the finite logits
    const float u[] = {100, -INFINITY, -5, 0};
    c = cfg(INFINITY, 0, 1);
    double q[4];
    OK(strix_sample_probs(u, 4, &c, NULL, q));
    for (int i = 0; i < 4; i++) assert_true(q[i] == (i == 1 ? 0.0 : 1.0 / 3.0));
}

static void test_tiny_temperature_subtracts_max(void **state) {
    // without subtracting the max, 3e38 / 1e-38 overflows to inf and the ratio becomes NaN
    const float x[] = {3e38f, -3e38f, 3e38f, 1e38f};
    strix_sampler_config c = cfg(1e-38f, 0, 1);
    double p[4];
    OK(strix_sample_probs(x, 4, &c, NULL, p));
    assert_true(p[0] == 0.5 && p[1] == 0 && p[2] == 0.5 && p[3] == 0);
    // a gap of one ulp at temperature 1e-30 leaves all the mass on the max, no NaN
    const float y[] = {1.0f, nextafterf(1.0f, 2.0f), 0.5f};
    c = cfg(1e-30f, 0, 1);
    OK(strix_sample_probs(y, 3, &c, NULL, p));
    assert_true(p[0] == 0 && p[1] == 1 && p[2] == 0);
    for (uint64_t s = 0; s < 50; s++) assert_int_equal(pick(y, 3, c, s), 1);
}

// ---- the draw ----------------------------------------------------------------------------------

static void test_draw_is_inverse_cdf_in_rank_order(void **state) {
    // {0, 0}: exact halves; rank order puts id 0 first, so u < 0.5 -> 0
    const float h[] = {0.0f, 0.0f};
    for (uint64_t s = 0; s < 200; s++) {
        strix_rng r = {.state = s}, copy = r;
        double u = strix_rng_uniform(&copy);
        int32_t t;
        strix_sampler_config c = cfg(1, 0, 1);
        OK(strix_sample_logits(h, 2, &c, &r, NULL, &t));
        assert_int_equal(t, u < 0.5 ? 0 : 1);
        assert_true(r.state == copy.state); // exactly one uniform per sampled token
    }
    // a general row: an independent softmax, ranked by probability (ties to the lower id), and
    // the first rank whose cumulative mass exceeds u
    const float x[] = {0.1f, 1.7f, -0.4f, 1.7f, 0.9f, -2.0f, 0.0f};
    const int V = 7;
    const double T = (double)0.7f; // the float the config holds
    double p[7];
    softmax_ref(x, V, T, p);
    int order[7];
    for (int i = 0; i < V; i++) order[i] = i;
    for (int i = 1; i < V; i++) // insertion sort: probability descending, stable on id
        for (int j = i; j > 0 && p[order[j]] > p[order[j - 1]]; j--) {
            int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    assert_int_equal(order[0], 1); // ids 1 and 3 tie: id 1 ranks first
    assert_int_equal(order[1], 3);
    int checked = 0;
    for (uint64_t s = 0; s < 2000; s++) {
        strix_rng copy = {.state = s};
        double u = strix_rng_uniform(&copy), acc = 0.0;
        int want = order[V - 1];
        bool near = false;
        for (int r = 0; r < V; r++) {
            acc += p[order[r]];
            near = near || fabs(u - acc) < 1e-9;
            if (u < acc) {
                want = order[r];
                break;
            }
        }
        if (near) continue; // rounding of the reference could decide it: skip (none expected)
        assert_int_equal(pick(x, V, cfg((float)T, 0, 1), s), want);
        checked++;
    }
    assert_true(checked > 1990);
}

static void test_determinism_and_scratch(void **state) {
    float x[40];
    tl_fill_uniform(x, 40, 9, -3, 3);
    x[7] = -INFINITY;
    strix_sampler_config c = cfg(0.9f, 12, 0.8f);
    void *scratch = malloc(strix_sample_scratch_size(40));
    assert_non_null(scratch);
    assert_true(strix_sample_scratch_size(40) >= 40 * sizeof(double));
    strix_rng a = {.state = 77}, b = {.state = 77};
    for (int i = 0; i < 500; i++) {
        int32_t ta, tb;
        OK(strix_sample_logits(x, 40, &c, &a, NULL, &ta));
        OK(strix_sample_logits(x, 40, &c, &b, scratch, &tb));
        assert_int_equal(ta, tb);
        assert_true(a.state == b.state);
    }
    free(scratch);
}

// ---- top-k -------------------------------------------------------------------------------------

static void test_top_k(void **state) {
    float x[17];
    tl_fill_uniform(x, 17, 3, -2, 2);
    int argmax = 0;
    for (int i = 1; i < 17; i++)
        if (x[i] > x[argmax]) argmax = i;
    // k = 1 equals greedy at any temperature, and still draws one uniform
    for (uint64_t s = 0; s < 100; s++) {
        strix_rng r = {.state = s}, copy = r;
        strix_sampler_config c = cfg(5.0f, 1, 1);
        int32_t t;
        OK(strix_sample_logits(x, 17, &c, &r, NULL, &t));
        assert_int_equal(t, argmax);
        strix_rng_uniform(&copy);
        assert_true(r.state == copy.state);
    }
    // k >= V is k = 0: identical probabilities and identical draws
    double off[17], big[17], eq[17];
    strix_sampler_config c0 = cfg(1.3f, 0, 1), cbig = cfg(1.3f, 1000, 1), ceq = cfg(1.3f, 17, 1);
    OK(strix_sample_probs(x, 17, &c0, NULL, off));
    OK(strix_sample_probs(x, 17, &cbig, NULL, big));
    OK(strix_sample_probs(x, 17, &ceq, NULL, eq));
    assert_memory_equal(off, big, sizeof off);
    assert_memory_equal(off, eq, sizeof off);
    for (uint64_t s = 0; s < 100; s++) assert_int_equal(pick(x, 17, c0, s), pick(x, 17, cbig, s));
    // k = 2 keeps the two largest, renormalised: exact values
    const float y[] = {1, 3, 2, 0};
    strix_sampler_config c2 = cfg(1, 2, 1);
    double p[4];
    OK(strix_sample_probs(y, 4, &c2, NULL, p));
    double e1 = exp(0.0), e2 = exp(-1.0);
    assert_true(p[0] == 0 && p[3] == 0);
    assert_true(p[1] == e1 / (e1 + e2) && p[2] == e2 / (e1 + e2));
    // ties at the cut keep the lower id
    const float z[] = {0, 1, 1, 1};
    OK(strix_sample_probs(z, 4, &c2, NULL, p));
    assert_true(p[0] == 0 && p[1] == 0.5 && p[2] == 0.5 && p[3] == 0);
    // -inf entries do not count towards k
    const float w[] = {-INFINITY, -INFINITY, 0, -INFINITY};
    OK(strix_sample_probs(w, 4, &c2, NULL, p));
    assert_true(p[2] == 1 && p[0] == 0 && p[1] == 0 && p[3] == 0);
}

// ---- top-p -------------------------------------------------------------------------------------

static void test_top_p(void **state) {
    float x[9];
    tl_fill_uniform(x, 9, 4, -1, 1);
    int argmax = 0;
    for (int i = 1; i < 9; i++)
        if (x[i] > x[argmax]) argmax = i;
    // tiny p keeps only the top token
    strix_sampler_config tiny = cfg(2.0f, 0, 1e-6f);
    double p[9];
    OK(strix_sample_probs(x, 9, &tiny, NULL, p));
    for (int i = 0; i < 9; i++) assert_true(p[i] == (i == argmax ? 1.0 : 0.0));
    for (uint64_t s = 0; s < 100; s++) assert_int_equal(pick(x, 9, tiny, s), argmax);
    // p = 1 keeps all: the plain softmax
    strix_sampler_config one = cfg(2.0f, 0, 1);
    double q[9], want[9];
    OK(strix_sample_probs(x, 9, &one, NULL, q));
    softmax_ref(x, 9, 2.0, want);
    for (int i = 0; i < 9; i++) assert_true(q[i] > 0 && fabs(q[i] - want[i]) <= 1e-15);
    // exact ties: four ids of 1/4; p = 0.5 is reached by the first two (the lower ids)
    const float e[] = {1, 1, 1, 1};
    strix_sampler_config half = cfg(1, 0, 0.5f);
    double r[4];
    OK(strix_sample_probs(e, 4, &half, NULL, r));
    assert_true(r[0] == 0.5 && r[1] == 0.5 && r[2] == 0 && r[3] == 0);
    // the smallest prefix whose mass reaches p: {0.5, 0.25, 0.125, 0.125} (up to rounding of
    // ln 2) with p = 0.7 keeps the first two, renormalised to 2/3 and 1/3
    const float l2 = 0.69314718f;
    const float f[] = {-l2, 0, -2 * l2, -2 * l2};
    strix_sampler_config p7 = cfg(1, 0, 0.7f);
    OK(strix_sample_probs(f, 4, &p7, NULL, r));
    assert_true(fabs(r[1] - 2.0 / 3.0) < 1e-7 && fabs(r[0] - 1.0 / 3.0) < 1e-7);
    assert_true(r[2] == 0 && r[3] == 0);
    // top-p applies after top-k, on the renormalised top-k mass: k = 2 gives {2/3, 1/3}, so
    // p = 0.6 keeps only id 1
    strix_sampler_config kp = cfg(1, 2, 0.6f);
    OK(strix_sample_probs(f, 4, &kp, NULL, r));
    assert_true(r[1] == 1 && r[0] == 0 && r[2] == 0 && r[3] == 0);
}

// ---- non-finite logits -------------------------------------------------------------------------

static void test_nan_is_an_error(void **state) {
    const float a[] = {1, 2, NAN, 3}, b[] = {INFINITY, 0, 0, NAN}, c[] = {NAN, -INFINITY};
    const float *rows[] = {a, b, c};
    const int V[] = {4, 4, 2}, at[] = {2, 3, 0};
    const strix_sampler_config cs[] = {cfg(0, 0, 1), cfg(1, 0, 1), cfg(0.5f, 2, 0.3f)};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            strix_rng rng = {.state = 11};
            int32_t t = -7;
            assert_int_equal(strix_sample_logits(rows[i], V[i], &cs[j], &rng, NULL, &t),
                             STRIX_ERR_NUMERIC);
            char want[64];
            snprintf(want, sizeof want, "NaN logit (token id %d)", at[i]);
            assert_non_null(strstr(strix_last_error(), want));
            assert_int_equal(t, -7);
            assert_true(rng.state == 11);
            double p[4];
            assert_int_equal(strix_sample_probs(rows[i], V[i], &cs[j], NULL, p),
                             STRIX_ERR_NUMERIC);
        }
}

static void test_plus_inf_picks_lowest(void **state) {
    const float x[] = {1, INFINITY, 3, INFINITY, -INFINITY};
    const strix_sampler_config cs[] = {cfg(0, 0, 1), cfg(1, 0, 1), cfg(100, 3, 0.1f),
                                       cfg(1e-30f, 1, 1)};
    for (int j = 0; j < 4; j++) {
        strix_rng rng = {.state = 3};
        int32_t t;
        OK(strix_sample_logits(x, 5, &cs[j], &rng, NULL, &t));
        assert_int_equal(t, 1);
        assert_true(rng.state == 3); // chosen without a draw
        double p[5];
        OK(strix_sample_probs(x, 5, &cs[j], NULL, p));
        assert_true(p[0] == 0 && p[1] == 1 && p[2] == 0 && p[3] == 0 && p[4] == 0);
    }
}

static void test_minus_inf(void **state) {
    const float all[] = {-INFINITY, -INFINITY, -INFINITY};
    const strix_sampler_config cs[] = {cfg(0, 0, 1), cfg(1, 0, 1), cfg(1, 1, 0.5f)};
    for (int j = 0; j < 3; j++) {
        strix_rng rng = {.state = 1};
        int32_t t = -7;
        assert_int_equal(strix_sample_logits(all, 3, &cs[j], &rng, NULL, &t),
                         STRIX_ERR_NUMERIC);
        assert_non_null(strstr(strix_last_error(), "-inf"));
        assert_int_equal(t, -7);
    }
    // mixed: -inf entries never get mass, whatever the temperature
    const float x[] = {-INFINITY, 0.0f, -INFINITY, -50.0f, -INFINITY};
    const float temps[] = {0.5f, 1.0f, 1000.0f, INFINITY};
    for (int k = 0; k < 4; k++) {
        strix_sampler_config c = cfg(temps[k], 0, 1);
        double p[5];
        OK(strix_sample_probs(x, 5, &c, NULL, p));
        assert_true(p[0] == 0 && p[2] == 0 && p[4] == 0 && p[1] > 0);
        strix_rng rng = {.state = (uint64_t)k};
        for (int i = 0; i < 2000; i++) {
            int32_t t;
            OK(strix_sample_logits(x, 5, &c, &rng, NULL, &t));
            assert_true(t == 1 || t == 3);
        }
    }
}

// ---- frequencies -------------------------------------------------------------------------------

static void test_frequencies_match_softmax(void **state) {
    const float x[] = {0.2f, -0.7f, 1.1f, 0.0f, 0.6f, -1.5f};
    const int V = 6, N = 20000;
    const strix_sampler_config cs[] = {cfg(0.8f, 0, 1), cfg(1.5f, 4, 1), cfg(1.0f, 0, 0.75f)};
    for (int j = 0; j < 3; j++) {
        double p[6];
        OK(strix_sample_probs(x, V, &cs[j], NULL, p));
        if (j == 0) { // against the independent softmax too
            double want[6];
            softmax_ref(x, V, (double)0.8f, want); // the float temperature, exactly
            for (int i = 0; i < V; i++) assert_true(fabs(p[i] - want[i]) <= 1e-15);
        }
        int count[6] = {0};
        strix_rng rng = {.state = 2024 + (uint64_t)j};
        for (int n = 0; n < N; n++) {
            int32_t t;
            OK(strix_sample_logits(x, V, &cs[j], &rng, NULL, &t));
            count[t]++;
        }
        for (int i = 0; i < V; i++) {
            double se = sqrt(N * p[i] * (1 - p[i]));
            if (p[i] == 0) assert_int_equal(count[i], 0);
            if (fabs(count[i] - N * p[i]) > 4 * se + 1e-9)
                fail_msg("config %d id %d: %d draws, expected %.1f (4 se = %.1f)", j, i,
                         count[i], N * p[i], 4 * se);
        }
    }
}

// ---- the generator -----------------------------------------------------------------------------

/* Next-token logits of a full forward over ids[0..n) (the last row), to host. */
static void forward_last(strix_backend *be, strix_gpt *g, const int32_t *ids, int n, float *out) {
    int V = strix_gpt_config_of(g)->vocab_size;
    OK(strix_gpt_forward(g, ids, NULL, 1, n, NULL));
    tl_download(be, out, strix_gpt_logits(g) + (size_t)(n - 1) * (size_t)V,
                (size_t)V * sizeof(float));
}

static void test_generator_context_rule(void **state) {
    strix_backend *be = tl_backend_open("cpu");
    assert_non_null(be);
    strix_gpt_config c = strix_gpt_config_default();
    c.vocab_size = 11;
    c.block_size = 8;
    c.n_layer = 1;
    c.n_head = 2;
    c.d_model = 16;
    strix_gpt *g;
    OK(strix_gpt_new(be, &c, &g));
    OK(strix_gpt_init_weights(g, 7));
    strix_gpt_generator *gen;
    OK(strix_gpt_generator_new(g, &gen));
    OK(strix_gpt_generator_set_window(gen, STRIX_GPT_WINDOW_REPRIME));
    assert_int_equal(strix_gpt_generator_set_window(gen, (strix_gpt_window)7), STRIX_ERR_ARG);
    strix_sampler_config sc = cfg(1.0f, 0, 1);
    strix_rng rng = {.state = 1};
    int32_t t;
    // errors: next before prime, an empty prompt, an id outside the vocabulary
    assert_int_equal(strix_gpt_generator_next(gen, &sc, &rng, &t), STRIX_ERR_ARG);
    assert_int_equal(strix_gpt_generator_prime(gen, NULL, 0), STRIX_ERR_ARG);
    const int32_t bad[] = {1, 11};
    assert_int_equal(strix_gpt_generator_prime(gen, bad, 2), STRIX_ERR_ARG);
    assert_int_equal(strix_gpt_generator_next(gen, &sc, &rng, &t), STRIX_ERR_ARG);
    assert_true(rng.state == 1);

    // a prompt of 11 tokens is cropped to its last 8; 40 tokens refill the cache (8 -> last 4)
    const int32_t prompt[11] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5};
    const strix_sampler_config modes[] = {cfg(0, 0, 1), cfg(1.0f, 0, 1)}; // greedy, sampled
    for (int m = 0; m < 2; m++) {
        OK(strix_gpt_generator_prime(gen, prompt, 11));
        assert_int_equal(strix_gpt_decode_pos(g), 8);
        int32_t ctx[8], n = 8; // the reference context, by the documented rule
        memcpy(ctx, prompt + 3, sizeof ctx);
        strix_rng r = {.state = 99}, ref_r = r;
        float want[11];
        for (int step = 0; step < 40; step++) {
            OK(strix_gpt_generator_next(gen, &modes[m], &r, &t));
            forward_last(be, g, ctx, n, want);
            assert_true(tl_check_close("generator logits", strix_gpt_generator_logits(gen), want,
                                       11, 1e-5, 1e-4));
            int32_t ref;
            OK(strix_sample_logits(want, 11, &modes[m], &ref_r, NULL, &ref));
            assert_int_equal(t, ref);
            assert_true(r.state == ref_r.state);
            if (n == 8) { // full: keep the last 4 (with the new token)
                memmove(ctx, ctx + 5, 3 * sizeof *ctx);
                ctx[3] = t;
                n = 4;
            } else {
                ctx[n++] = t;
            }
        }
        // the last token was not fed: the cache lags the reference context by one (40 steps end
        // just after 4 plain steps, so no refill is pending)
        assert_int_equal(strix_gpt_decode_pos(g), n - 1);
    }
    // a short prompt (1 token) and block/2 refill with an odd block size are covered by the CLI;
    // here: a prime after generating starts over (same tokens for the same stream)
    int32_t first[2][5];
    for (int k = 0; k < 2; k++) {
        strix_rng r = {.state = 5};
        OK(strix_gpt_generator_prime(gen, prompt, 1));
        assert_int_equal(strix_gpt_decode_pos(g), 1);
        for (int i = 0; i < 5; i++) OK(strix_gpt_generator_next(gen, &sc, &r, &first[k][i]));
    }
    assert_memory_equal(first[0], first[1], sizeof first[0]);
    strix_gpt_generator_free(gen);
    strix_gpt_generator_free(NULL);
    strix_gpt_free(g);
    strix_backend_free(be);
}

/* The default SLIDE window is nanoGPT's generate(): every token comes from a full forward over
 * the last block_size ids (the reference below recomputes it from scratch each step, the argmax
 * with ties to the lower id). Greedy and sampled: identical ids for 3 blocks and more (the first
 * block through the KV cache, the rest sliding), and the logits agree to rounding. A model with
 * RoPE (positions restart at 0 in each window) as well as learned positions. */
static void test_generator_sliding_window(void **state) {
    (void)state;
    strix_backend *be = tl_backend_open("cpu");
    assert_non_null(be);
    enum { V = 11, T = 8, STEPS = 3 * T + 5 };
    for (int rope = 0; rope < 2; rope++) {
        strix_gpt_config c = strix_gpt_config_default();
        c.vocab_size = V;
        c.block_size = T;
        c.n_layer = 2;
        c.n_head = 2;
        c.d_model = 16;
        c.rope = rope == 1;
        strix_gpt *g;
        OK(strix_gpt_new(be, &c, &g));
        OK(strix_gpt_init_weights(g, 11 + (uint64_t)rope));
        /* larger weights than the 0.02 init, so the greedy path is not one repeated id */
        strix_params *ps = strix_gpt_params(g);
        size_t np = ps->total;
        float *w = malloc(np * sizeof *w);
        assert_non_null(w);
        tl_fill_uniform(w, np, 21 + (uint64_t)rope, -0.3f, 0.3f);
        OK(strix_copy(be, ps->data, w, np * sizeof *w, STRIX_COPY_H2D));
        free(w);
        strix_gpt_generator *gen;
        OK(strix_gpt_generator_new(g, &gen)); /* SLIDE by default */
        const int32_t prompt[3] = {3, 1, 4};
        const strix_sampler_config modes[] = {cfg(0, 0, 1), cfg(1.0f, 0, 1)};
        for (int m = 0; m < 2; m++) {
            OK(strix_gpt_generator_prime(gen, prompt, 3));
            int32_t hist[3 + STEPS];
            memcpy(hist, prompt, sizeof prompt);
            int n = 3, distinct = 0, seen[V] = {0};
            strix_rng r = {.state = 42}, ref_r = r;
            for (int step = 0; step < STEPS; step++) {
                int32_t t, ref;
                OK(strix_gpt_generator_next(gen, &modes[m], &r, &t));
                int ctx = n < T ? n : T;
                float want[V];
                forward_last(be, g, hist + n - ctx, ctx, want);
                if (m == 0) { /* argmax, ties to the lower id */
                    ref = 0;
                    for (int i = 1; i < V; i++)
                        if (want[i] > want[ref]) ref = i;
                } else {
                    OK(strix_sample_logits(want, V, &modes[m], &ref_r, NULL, &ref));
                }
                if (t != ref)
                    fail_msg("rope %d mode %d: step %d (context %d) gave id %d, the window %d",
                             rope, m, step, n, t, ref);
                assert_true(tl_check_close("sliding logits", strix_gpt_generator_logits(gen),
                                           want, V, 1e-5, 1e-4));
                distinct += !seen[t];
                seen[t] = 1;
                hist[n++] = t;
            }
            assert_true(n - 3 > 2 * T);
            if (m == 1 && distinct < 3) /* a real path (greedy settles into a cycle) */
                fail_msg("rope %d: %d distinct sampled ids", rope, distinct);
            assert_int_equal(strix_gpt_decode_pos(g), T); /* the cache stays full */
        }
        /* the reference tells the rules apart: REPRIME's logits leave the window's after the
         * first block (its context shrinks to T/2) */
        OK(strix_gpt_generator_set_window(gen, STRIX_GPT_WINDOW_REPRIME));
        OK(strix_gpt_generator_prime(gen, prompt, 3));
        int32_t hist[3 + STEPS];
        memcpy(hist, prompt, sizeof prompt);
        int n = 3, apart = 0;
        strix_rng r = {.state = 42};
        for (int step = 0; step < STEPS; step++) {
            int32_t t;
            OK(strix_gpt_generator_next(gen, &modes[0], &r, &t));
            int ctx = n < T ? n : T;
            float want[V];
            forward_last(be, g, hist + n - ctx, ctx, want);
            for (int i = 0; i < V; i++)
                if (fabsf(strix_gpt_generator_logits(gen)[i] - want[i]) > 1e-3f) {
                    apart++;
                    break;
                }
            hist[n++] = t;
        }
        if (apart == 0) fail_msg("rope %d: REPRIME matched the sliding window", rope);
        strix_gpt_generator_free(gen);
        strix_gpt_free(g);
    }
    strix_backend_free(be);
}


// ---- transformers' warpers (tests/golden/sampling/warpers.txt, tools/ref/sampling_ref.py) --------

/* Reads `word` then its count and that many numbers ("-inf" allowed) into v (cap entries). */
static int read_row(FILE *f, const char *word, double *v, int cap) {
    char w[32];
    int n = 0;
    if (fscanf(f, "%31s %d", w, &n) != 2 || strcmp(w, word) != 0 || n > cap) return -1;
    for (int i = 0; i < n; i++) {
        char num[64];
        if (fscanf(f, "%63s", num) != 1) return -1;
        v[i] = strcmp(num, "-inf") == 0 ? -INFINITY : strtod(num, NULL);
    }
    return n;
}

/* Every case: repetition penalty, temperature, top-k, top-p and min-p as transformers 4.57 applies
 * them in generate(); strix's kept set and probabilities must match (1e-6 absolute: transformers
 * scales in float32, strix in double). */
static void test_warpers_match_transformers(void **state) {
    (void)state;
    FILE *f = fopen("tests/golden/sampling/warpers.txt", "r");
    assert_non_null(f);
    int cases = 0;
    char word[16];
    while (fscanf(f, "%15s", word) == 1) {
        assert_string_equal(word, "case");
        double t, p, mp, pen, hist[64], lg[64], want[64];
        int k;
        assert_int_equal(fscanf(f, "%lf %d %lf %lf %lf", &t, &k, &p, &mp, &pen), 5);
        int nh = read_row(f, "history", hist, 64), V = read_row(f, "logits", lg, 64);
        assert_int_equal(read_row(f, "probs", want, 64), V);
        assert_true(nh > 0 && V > 0);
        float x[64];
        int32_t h[64];
        for (int i = 0; i < V; i++) x[i] = (float)lg[i];
        for (int i = 0; i < nh; i++) h[i] = (int32_t)hist[i];
        OK(strix_sample_repetition_penalty(x, V, h, (size_t)nh, (float)pen, NULL));
        strix_sampler_config c = {.temperature = (float)t, .top_k = k, .top_p = (float)p,
                                  .min_p = (float)mp};
        double got[64];
        OK(strix_sample_probs(x, V, &c, NULL, got));
        for (int i = 0; i < V; i++) {
            if ((want[i] == 0.0) != (got[i] == 0.0))
                fail_msg("case %d (T %g k %d p %g min-p %g penalty %g): id %d kept by %s only",
                         cases, t, k, p, mp, pen, i, want[i] == 0.0 ? "strix" : "transformers");
            assert_true(fabs(got[i] - want[i]) <= 1e-6);
        }
        cases++;
    }
    fclose(f);
    assert_int_equal(cases, 24);
}

/* The penalty's own rules: each distinct id once, sign-dependent, ids outside V ignored. */
static void test_repetition_penalty_rules(void **state) {
    (void)state;
    float x[4] = {2.0f, -2.0f, 0.0f, 1.0f};
    const int32_t h[] = {0, 0, 1, 9, -1, 2, 0};
    OK(strix_sample_repetition_penalty(x, 4, h, 7, 2.0f, NULL));
    assert_true(x[0] == 1.0f && x[1] == -4.0f && x[2] == 0.0f && x[3] == 1.0f);
    assert_int_equal(strix_sample_repetition_penalty(x, 4, h, 7, 0.0f, NULL), STRIX_ERR_ARG);
    assert_int_equal(strix_sample_repetition_penalty(x, 4, h, 7, NAN, NULL), STRIX_ERR_ARG);
    strix_sampler_config bad = {.temperature = 1.0f, .top_p = 1.0f, .min_p = 1.5f};
    assert_int_equal(strix_sampler_config_check(&bad), STRIX_ERR_ARG);
    bad.min_p = -0.1f;
    assert_int_equal(strix_sampler_config_check(&bad), STRIX_ERR_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_checks),
        cmocka_unit_test(test_greedy_ties_to_lower_id),
        cmocka_unit_test(test_temperature_probabilities),
        cmocka_unit_test(test_tiny_temperature_subtracts_max),
        cmocka_unit_test(test_draw_is_inverse_cdf_in_rank_order),
        cmocka_unit_test(test_determinism_and_scratch),
        cmocka_unit_test(test_top_k),
        cmocka_unit_test(test_top_p),
        cmocka_unit_test(test_nan_is_an_error),
        cmocka_unit_test(test_plus_inf_picks_lowest),
        cmocka_unit_test(test_minus_inf),
        cmocka_unit_test(test_frequencies_match_softmax),
        cmocka_unit_test(test_generator_context_rule),
        cmocka_unit_test(test_warpers_match_transformers),
        cmocka_unit_test(test_repetition_penalty_rules),
        cmocka_unit_test(test_generator_sliding_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
