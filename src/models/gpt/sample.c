/*
 * sample.c - next-token choice from logits and KV-cache generation (strix/sample.h).
 *
 * The sampler keeps no state between calls: its randomness is the caller's strix_rng and its
 * memory the caller's scratch (or one allocation per call). The generator owns a token window,
 * a logits row and a scratch, allocated once; past the block it slides (a full forward over the
 * last block) or re-primes the KV cache (strix_gpt_window). Nothing here prints; errors return
 * a status with a message. Not here: tokenisation, printing, batched generation.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "strix/backend.h"
#include "strix/sample.h"

// ---- configuration -----------------------------------------------------------------------------

strix_sampler_config strix_sampler_config_default(void) {
    return (strix_sampler_config){.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f};
}

strix_status strix_sampler_config_check(const strix_sampler_config *c) {
    if (isnan(c->temperature))
        return strix_error(STRIX_ERR_ARG, "temperature is NaN (0 means greedy)");
    if (c->temperature < 0.0f)
        return strix_error(STRIX_ERR_ARG, "temperature %g is negative (0 means greedy)",
                           (double)c->temperature);
    if (c->top_k < 0) return strix_error(STRIX_ERR_ARG, "top-k %d is negative", c->top_k);
    if (!(c->top_p > 0.0f && c->top_p <= 1.0f))
        return strix_error(STRIX_ERR_ARG, "top-p %g is outside (0, 1]", (double)c->top_p);
    if (!(c->min_p >= 0.0f && c->min_p <= 1.0f))
        return strix_error(STRIX_ERR_ARG, "min-p %g is outside [0, 1]", (double)c->min_p);
    return STRIX_OK;
}

strix_status strix_sample_repetition_penalty(float *logits, int V, const int32_t *history,
                                             size_t n, float penalty, unsigned char *seen) {
    if (V < 1) return strix_error(STRIX_ERR_ARG, "repetition penalty: vocabulary of %d", V);
    if (!(isfinite(penalty) && penalty > 0.0f))
        return strix_error(STRIX_ERR_ARG, "repetition penalty %g must be finite and > 0",
                           (double)penalty);
    if (penalty == 1.0f || n == 0) return STRIX_OK;
    unsigned char *owned = NULL;
    if (!seen) {
        seen = owned = malloc((size_t)V);
        if (!owned)
            return strix_error(STRIX_ERR_ALLOC, "repetition penalty: out of memory (%d ids)", V);
    }
    memset(seen, 0, (size_t)V);
    for (size_t i = 0; i < n; i++) {
        int32_t id = history[i];
        if (id < 0 || id >= V || seen[id]) continue;
        seen[id] = 1;
        logits[id] = logits[id] > 0.0f ? logits[id] / penalty : logits[id] * penalty;
    }
    free(owned);
    return STRIX_OK;
}

// ---- the sampler -------------------------------------------------------------------------------

/* One kept id and its unnormalised weight exp((x - max) / temperature). */
typedef struct ranked {
    double value;
    int32_t id;
} ranked;

size_t strix_sample_scratch_size(int V) { return V > 0 ? (size_t)V * sizeof(ranked) : 0; }

/* Rank order: weight descending, then id ascending (ties keep the lower id first). */
static int by_value_desc(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->value != y->value) return x->value > y->value ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

/* Rules 1-4 of strix_sample_probs(): validates the call and either decides the token without a
 * draw (*fixed = its id) or leaves *fixed = -1 and the finite maximum's id in *best. */
static strix_status sample_scan(const float *logits, int V, const strix_sampler_config *c,
                                int *fixed, int *best) {
    if (V < 1) return strix_error(STRIX_ERR_ARG, "sample: vocabulary of %d (must be >= 1)", V);
    STRIX_TRY(strix_sampler_config_check(c));
    for (int i = 0; i < V; i++)
        if (isnan(logits[i]))
            return strix_error(STRIX_ERR_NUMERIC, "the model produced a NaN logit (token id %d)",
                               i);
    *fixed = -1;
    *best = -1;
    for (int i = 0; i < V; i++) {
        if (logits[i] == INFINITY) { /* +inf takes all the mass; the lowest id wins */
            *fixed = i;
            return STRIX_OK;
        }
        if (logits[i] != -INFINITY && (*best < 0 || logits[i] > logits[*best])) *best = i;
    }
    if (*best < 0) return strix_error(STRIX_ERR_NUMERIC, "every logit is -inf: no token to pick");
    if (c->temperature == 0.0f) *fixed = *best;
    return STRIX_OK;
}

/* Rule 5: fills r[0..*keep) with the kept ids in rank order and their weights; *sum is their
 * total. max = logits[best] is finite. */
static void sample_rank(const float *logits, int V, const strix_sampler_config *c, int best,
                        ranked *r, int *keep, double *sum) {
    int n = 0;
    double max = logits[best];
    for (int i = 0; i < V; i++)
        if (logits[i] != -INFINITY)
            r[n++] = (ranked){.value = ((double)logits[i] - max) / c->temperature, .id = i};
    qsort(r, (size_t)n, sizeof *r, by_value_desc);
    int k = (c->top_k > 0 && c->top_k < n) ? c->top_k : n;
    double s = 0.0;
    for (int i = 0; i < k; i++) {
        r[i].value = exp(r[i].value);
        s += r[i].value;
    }
    if (c->top_p < 1.0f) {
        double mass = 0.0;
        int cut = k;
        for (int i = 0; i < k; i++) {
            mass += r[i].value / s;
            if (mass >= c->top_p) {
                cut = i + 1;
                break;
            }
        }
        k = cut;
        s = 0.0;
        for (int i = 0; i < k; i++) s += r[i].value;
    }
    if (c->min_p > 0.0f) { /* r[0].value = exp(0) = 1: the threshold is min_p itself */
        int cut = 1;
        while (cut < k && r[cut].value >= (double)c->min_p * r[0].value) cut++;
        k = cut;
        s = 0.0;
        for (int i = 0; i < k; i++) s += r[i].value;
    }
    *keep = k;
    *sum = s;
}

/* The caller's scratch, or a fresh one that *owned receives (free it after use). */
static strix_status scratch_get(void *scratch, int V, ranked **r, void **owned) {
    *owned = NULL;
    if (scratch) {
        *r = scratch;
        return STRIX_OK;
    }
    *owned = malloc(strix_sample_scratch_size(V));
    if (!*owned)
        return strix_error(STRIX_ERR_ALLOC, "sample: out of memory (scratch for %d logits)", V);
    *r = *owned;
    return STRIX_OK;
}

/* The distribution both public calls draw from: either one forced token (*fixed >= 0: +inf
 * logit or greedy), or the kept ids ranked in r[0..keep) with unnormalised weights summing to
 * *sum. r lives in the caller's scratch or in *owned (free it after use). */
typedef struct distribution {
    int fixed, keep;
    ranked *r;
    double sum;
    void *owned;
} distribution;

static strix_status distribution_of(const float *logits, int V, const strix_sampler_config *c,
                                    void *scratch, distribution *d) {
    int best;
    d->owned = NULL;
    STRIX_TRY(sample_scan(logits, V, c, &d->fixed, &best));
    if (d->fixed >= 0) return STRIX_OK;
    STRIX_TRY(scratch_get(scratch, V, &d->r, &d->owned));
    sample_rank(logits, V, c, best, d->r, &d->keep, &d->sum);
    return STRIX_OK;
}

strix_status strix_sample_probs(const float *logits, int V, const strix_sampler_config *c,
                                void *scratch, double *probs) {
    distribution d;
    STRIX_TRY(distribution_of(logits, V, c, scratch, &d));
    for (int i = 0; i < V; i++) probs[i] = 0.0;
    if (d.fixed >= 0) {
        probs[d.fixed] = 1.0;
        return STRIX_OK;
    }
    for (int i = 0; i < d.keep; i++) probs[d.r[i].id] = d.r[i].value / d.sum;
    free(d.owned);
    return STRIX_OK;
}

strix_status strix_sample_logits(const float *logits, int V, const strix_sampler_config *c,
                                 strix_rng *rng, void *scratch, int32_t *token) {
    distribution d;
    STRIX_TRY(distribution_of(logits, V, c, scratch, &d));
    if (d.fixed >= 0) {
        *token = d.fixed;
        return STRIX_OK;
    }
    double u = strix_rng_uniform(rng) * d.sum, acc = 0.0;
    int32_t pick = d.r[d.keep - 1].id;
    for (int i = 0; i < d.keep; i++) {
        acc += d.r[i].value;
        if (u < acc) {
            pick = d.r[i].id;
            break;
        }
    }
    free(d.owned);
    *token = pick;
    return STRIX_OK;
}

// ---- the generator -----------------------------------------------------------------------------

struct strix_gpt_generator {
    strix_gpt *g;
    int V, T;         /* vocabulary, block size */
    int32_t *win;     /* the latest tokens, win[0..len), room for 2T (shifted down when full) */
    int len;
    float *logits;    /* V floats: the latest prediction */
    void *scratch;    /* strix_sample_scratch_size(V) bytes */
    bool primed;      /* a prime succeeded and no decode failed since */
    bool pending;     /* win[len-1] was sampled and is not yet in the cache */
    strix_gpt_window window; /* the rule once the context is full */
};

strix_status strix_gpt_generator_new(strix_gpt *g, strix_gpt_generator **out) {
    *out = NULL;
    const strix_gpt_config *c = strix_gpt_config_of(g);
    strix_gpt_generator *gen = calloc(1, sizeof *gen);
    if (gen) {
        gen->g = g;
        gen->V = c->vocab_size;
        gen->T = c->block_size;
        gen->win = malloc(2 * (size_t)gen->T * sizeof *gen->win);
        gen->logits = calloc((size_t)gen->V, sizeof *gen->logits);
        gen->scratch = malloc(strix_sample_scratch_size(gen->V));
    }
    if (!gen || !gen->win || !gen->logits || !gen->scratch) {
        strix_gpt_generator_free(gen);
        return strix_error(STRIX_ERR_ALLOC, "generator: out of memory");
    }
    *out = gen;
    return STRIX_OK;
}

void strix_gpt_generator_free(strix_gpt_generator *gen) {
    if (!gen) return;
    free(gen->win);
    free(gen->logits);
    free(gen->scratch);
    free(gen);
}

strix_status strix_gpt_generator_set_window(strix_gpt_generator *gen, strix_gpt_window window) {
    if (window != STRIX_GPT_WINDOW_SLIDE && window != STRIX_GPT_WINDOW_REPRIME)
        return strix_error(STRIX_ERR_ARG, "generator: unknown window rule %d", (int)window);
    gen->window = window;
    return STRIX_OK;
}

/* SLIDE: the next-token logits of a full forward over the last T tokens of the window (len > T
 * whenever the cache is full), the last row copied to the host. */
static strix_status generator_slide(strix_gpt_generator *gen) {
    STRIX_TRY(strix_gpt_forward(gen->g, gen->win + gen->len - gen->T, NULL, 1, gen->T, NULL));
    const float *last = strix_gpt_logits(gen->g) + (size_t)(gen->T - 1) * (size_t)gen->V;
    return strix_copy(strix_gpt_params(gen->g)->be, gen->logits, last,
                      (size_t)gen->V * sizeof(float), STRIX_COPY_D2H);
}

/* Empties the cache and feeds the last `keep` tokens of the window. */
static strix_status generator_feed(strix_gpt_generator *gen, int keep) {
    STRIX_TRY(strix_gpt_decode_reset(gen->g));
    for (int i = gen->len - keep; i < gen->len; i++)
        STRIX_TRY(strix_gpt_decode_step(gen->g, gen->win[i], gen->logits));
    return STRIX_OK;
}

strix_status strix_gpt_generator_prime(strix_gpt_generator *gen, const int32_t *prompt,
                                       size_t n) {
    gen->primed = false;
    gen->pending = false;
    if (n == 0) return strix_error(STRIX_ERR_ARG, "generator: empty prompt (give one token)");
    size_t start = n > (size_t)gen->T ? n - (size_t)gen->T : 0;
    for (size_t i = start; i < n; i++)
        if (prompt[i] < 0 || prompt[i] >= gen->V)
            return strix_error(STRIX_ERR_ARG, "generator: prompt token %d (at %zu) outside [0, %d)",
                               prompt[i], i, gen->V);
    gen->len = (int)(n - start);
    memcpy(gen->win, prompt + start, (size_t)gen->len * sizeof *gen->win);
    STRIX_TRY(generator_feed(gen, gen->len));
    gen->primed = true;
    return STRIX_OK;
}

strix_status strix_gpt_generator_next(strix_gpt_generator *gen, const strix_sampler_config *c,
                                      strix_rng *rng, int32_t *token) {
    if (!gen->primed)
        return strix_error(STRIX_ERR_ARG, "generator: call strix_gpt_generator_prime first");
    if (gen->pending) {
        strix_status s;
        if (strix_gpt_decode_pos(gen->g) < gen->T)
            s = strix_gpt_decode_step(gen->g, gen->win[gen->len - 1], gen->logits);
        else if (gen->window == STRIX_GPT_WINDOW_REPRIME) /* refill with the last T/2 */
            s = generator_feed(gen, gen->T / 2 > 0 ? gen->T / 2 : 1);
        else /* the cache stays full (pos T): every later token slides too */
            s = generator_slide(gen);
        if (s != STRIX_OK) {
            gen->primed = false;
            return s;
        }
        gen->pending = false;
    }
    int32_t next;
    STRIX_TRY(strix_sample_logits(gen->logits, gen->V, c, rng, gen->scratch, &next));
    if (gen->len == 2 * gen->T) { /* keep the last T tokens: all a refill or prime can need */
        memmove(gen->win, gen->win + gen->T, (size_t)gen->T * sizeof *gen->win);
        gen->len = gen->T;
    }
    gen->win[gen->len++] = next;
    gen->pending = true;
    *token = next;
    return STRIX_OK;
}

const float *strix_gpt_generator_logits(const strix_gpt_generator *gen) { return gen->logits; }
