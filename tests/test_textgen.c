/*
 * test_textgen.c - the generator of strix/textgen.h over a fake decoder whose logits are known
 * exactly (the next id is (last + 1) mod V by a margin; a counter records what was decoded) and
 * a real tokenizer (tests/golden/tokenizer/gpt2.json): greedy ids, the text as the tokens'
 * bytes, each stop rule (end id, stop string, max tokens, full context), the prefix kept on a
 * restart (only new ids decoded), the repetition penalty's effect, seeded sampling repeatable,
 * and the argument errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "strix/textgen.h"

#define OK(expr) assert_int_equal((expr), STRIX_OK)

/* The fake model: logits 1 everywhere but 6 at (last id + 1) mod V, or at `forced` when >= 0. */
typedef struct fake {
    int V;
    size_t cached, decoded; /* positions held; ids decoded in total */
    int32_t last, forced;
} fake;

static strix_status fake_decode(void *model, size_t keep, const int32_t *ids, size_t n,
                                float *logits) {
    fake *f = model;
    assert_true(keep <= f->cached);
    f->cached = keep + n;
    f->decoded += n;
    f->last = ids[n - 1];
    for (int i = 0; i < f->V; i++) logits[i] = 1.0f;
    logits[f->forced >= 0 ? f->forced : (f->last + 1) % f->V] = 6.0f;
    return STRIX_OK;
}

static strix_tokenizer *tok;

static int setup(void **state) {
    (void)state;
    return strix_tokenizer_load_json("tests/golden/tokenizer/gpt2.json", &tok) == STRIX_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    strix_tokenizer_free(tok);
    return 0;
}

static strix_textgen *make(fake *f, size_t ctx) {
    f->V = (int)strix_tokenizer_vocab_size(tok);
    f->forced = -1;
    strix_decoder d = {.model = f, .decode = fake_decode, .vocab = f->V, .max_context = ctx};
    strix_textgen *g = NULL;
    OK(strix_textgen_new(&d, tok, &g));
    return g;
}

/* Runs to the end; returns the number of tokens drawn and the reason. */
static int run(strix_textgen *g, strix_textgen_stop *why) {
    int n = 0;
    for (;;) {
        int32_t id;
        OK(strix_textgen_next(g, &id, why));
        if (id >= 0) n++;
        if (*why != STRIX_TEXTGEN_RUNNING) return n;
    }
}

static void test_greedy_and_stops(void **state) {
    (void)state;
    fake f = {0};
    strix_textgen *g = make(&f, 64);
    strix_textgen_config c = strix_textgen_config_default();
    c.max_new_tokens = 5;
    const int32_t prompt[] = {300, 301, 302}; /* merged tokens: whole characters */
    OK(strix_textgen_start(g, &c, prompt, 3));
    strix_textgen_stop why;
    assert_int_equal(run(g, &why), 5);
    assert_int_equal(why, STRIX_TEXTGEN_MAX_TOKENS);
    size_t n;
    const int32_t *ids = strix_textgen_ids(g, &n);
    assert_int_equal(n, 8);
    for (size_t i = 3; i < 8; i++) assert_int_equal(ids[i], 300 + (int32_t)i);
    /* the text is the tokens' bytes */
    char *want = NULL;
    size_t wlen = 0, glen = 0;
    OK(strix_tokenizer_decode(tok, ids + 3, 5, false, &want, &wlen));
    const char *got = strix_textgen_text(g, &glen);
    assert_int_equal(glen, wlen);
    assert_memory_equal(got, want, wlen);
    free(want);
    /* the last drawn token is not decoded: 3 prompt ids + 4 */
    assert_int_equal(f.decoded, 7);

    /* an end id: drawn, returned, not in the text */
    int32_t eos = 304;
    c.eos = &eos;
    c.n_eos = 1;
    c.max_new_tokens = 50;
    OK(strix_textgen_start(g, &c, prompt, 3));
    assert_int_equal(run(g, &why), 2);
    assert_int_equal(why, STRIX_TEXTGEN_EOS);
    strix_textgen_text(g, &glen);
    char one[64];
    assert_int_equal(glen, strix_tokenizer_token_bytes(tok, 303, one, sizeof one));

    /* a stop string made of the next token's bytes */
    c.n_eos = 0;
    size_t k = strix_tokenizer_token_bytes(tok, 305, one, sizeof one - 1);
    one[k] = '\0';
    const char *stops[] = {one};
    c.stop = stops;
    c.n_stop = 1;
    OK(strix_textgen_start(g, &c, prompt, 3));
    assert_int_equal(run(g, &why), 3);
    assert_int_equal(why, STRIX_TEXTGEN_STOP_STRING);

    /* a full context: 3 prompt ids in 8 positions leave 5 */
    c.n_stop = 0;
    strix_textgen *small = make(&f, 8);
    OK(strix_textgen_start(small, &c, prompt, 3));
    assert_int_equal(run(small, &why), 5);
    assert_int_equal(why, STRIX_TEXTGEN_CONTEXT_FULL);
    strix_textgen_free(small);
    strix_textgen_free(g);
}

static void test_restart_keeps_prefix(void **state) {
    (void)state;
    fake f = {0};
    strix_textgen *g = make(&f, 64);
    strix_textgen_config c = strix_textgen_config_default();
    c.max_new_tokens = 4;
    const int32_t p1[] = {10, 11, 12};
    OK(strix_textgen_start(g, &c, p1, 3));
    strix_textgen_stop why;
    run(g, &why);
    size_t n;
    const int32_t *ids = strix_textgen_ids(g, &n);
    int32_t p2[16];
    memcpy(p2, ids, n * sizeof *ids); /* the conversation so far, then two new ids */
    p2[n] = 50;
    p2[n + 1] = 51;
    size_t before = f.decoded, cached = f.cached;
    OK(strix_textgen_start(g, &c, p2, n + 2));
    assert_int_equal(f.decoded - before, n + 2 - cached); /* only what the cache lacks */
    strix_textgen_free(g);
}

static void test_penalty_and_sampling(void **state) {
    (void)state;
    fake f = {0};
    strix_textgen *g = make(&f, 64);
    f.forced = 7; /* the model always prefers id 7: 6 against 1 */
    strix_textgen_config c = strix_textgen_config_default();
    c.max_new_tokens = 2;
    const int32_t prompt[] = {7};
    c.repetition_penalty = 100.0f; /* 6/100 < the others' 1: id 7 is not drawn */
    OK(strix_textgen_start(g, &c, prompt, 1));
    strix_textgen_stop why;
    int32_t id;
    OK(strix_textgen_next(g, &id, &why));
    assert_int_not_equal(id, 7);
    assert_int_equal(id, 0); /* all others tie at 1: the lowest id */
    c.repetition_penalty = 1.0f;
    OK(strix_textgen_start(g, &c, prompt, 1));
    OK(strix_textgen_next(g, &id, &why));
    assert_int_equal(id, 7);
    /* seeded sampling: the same seed, the same tokens; temperature high enough to vary */
    c.sampler.temperature = 50.0f;
    c.max_new_tokens = 12;
    c.seed = 3;
    int32_t a[12], b[12];
    OK(strix_textgen_start(g, &c, prompt, 1));
    for (int i = 0; i < 12; i++) OK(strix_textgen_next(g, &a[i], &why));
    OK(strix_textgen_start(g, &c, prompt, 1));
    for (int i = 0; i < 12; i++) OK(strix_textgen_next(g, &b[i], &why));
    assert_memory_equal(a, b, sizeof a);
    int differ = 0;
    for (int i = 0; i < 12; i++) differ += a[i] != 7;
    assert_true(differ > 0);
    strix_textgen_free(g);
}

static void test_errors(void **state) {
    (void)state;
    fake f = {0};
    strix_textgen *g = make(&f, 8);
    strix_textgen_config c = strix_textgen_config_default();
    int32_t id;
    strix_textgen_stop why;
    assert_int_equal(strix_textgen_next(g, &id, &why), STRIX_ERR_ARG); /* before a start */
    const int32_t ok_ids[] = {1, 2}, bad_ids[] = {1, -3};
    const int32_t long_ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    assert_int_equal(strix_textgen_start(g, &c, ok_ids, 0), STRIX_ERR_ARG);
    assert_int_equal(strix_textgen_start(g, &c, bad_ids, 2), STRIX_ERR_ARG);
    assert_int_equal(strix_textgen_start(g, &c, long_ids, 8), STRIX_ERR_ARG);
    c.repetition_penalty = 0.0f;
    assert_int_equal(strix_textgen_start(g, &c, ok_ids, 2), STRIX_ERR_ARG);
    c = strix_textgen_config_default();
    const char *empty[] = {""};
    c.stop = empty;
    c.n_stop = 1;
    assert_int_equal(strix_textgen_start(g, &c, ok_ids, 2), STRIX_ERR_ARG);
    c = strix_textgen_config_default();
    c.max_new_tokens = -1;
    assert_int_equal(strix_textgen_start(g, &c, ok_ids, 2), STRIX_ERR_ARG);
    strix_textgen_free(g);
    strix_decoder d = {.model = &f, .decode = fake_decode, .vocab = 10, .max_context = 8};
    assert_int_equal(strix_textgen_new(&d, tok, &g), STRIX_ERR_ARG); /* tokenizer > model */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_and_stops),
        cmocka_unit_test(test_restart_keeps_prefix),
        cmocka_unit_test(test_penalty_and_sampling),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
