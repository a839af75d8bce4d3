/*
 * sampler.c - next-token choice from logits (sampler.h).
 *
 * Does not keep state between calls; the random stream is the caller's strix_rng.
 */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>

/* Sort key: probability descending, then id ascending (ties keep the lower id first). */
typedef struct ranked {
    double value;
    int32_t id;
} ranked;

static int by_value_desc(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->value != y->value) return x->value > y->value ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
}

strix_status sampler_pick(const float *logits, int V, const sampler_opts *o, strix_rng *rng,
                          int32_t *out) {
    if (V < 1 || V > SAMPLER_MAX_VOCAB)
        return strix_error(STRIX_ERR_ARG, "sampler: vocabulary of %d (1..256)", V);
    if (!(o->temperature >= 0.0f))
        return strix_error(STRIX_ERR_ARG, "temperature %g is negative (0 means greedy)",
                           (double)o->temperature);
    if (o->top_k < 0) return strix_error(STRIX_ERR_ARG, "top-k %d is negative", o->top_k);
    if (!(o->top_p > 0.0f && o->top_p <= 1.0f))
        return strix_error(STRIX_ERR_ARG, "top-p %g is outside (0, 1]", (double)o->top_p);

    int best = -1;
    for (int i = 0; i < V; i++) {
        if (isnan(logits[i]))
            return strix_error(STRIX_ERR_NUMERIC, "the model produced a NaN logit (token id %d)",
                               i);
        if (isinf(logits[i]) && logits[i] > 0) {
            *out = i; /* +inf takes all the mass; the first one wins */
            for (int j = i + 1; j < V; j++)
                if (isnan(logits[j]))
                    return strix_error(STRIX_ERR_NUMERIC,
                                       "the model produced a NaN logit (token id %d)", j);
            return STRIX_OK;
        }
        if (logits[i] != -INFINITY && (best < 0 || logits[i] > logits[best])) best = i;
    }
    if (best < 0) return strix_error(STRIX_ERR_NUMERIC, "every logit is -inf: no token to pick");
    if (o->temperature == 0.0f) {
        *out = best;
        return STRIX_OK;
    }

    ranked r[SAMPLER_MAX_VOCAB];
    int n = 0;
    double max = logits[best];
    for (int i = 0; i < V; i++)
        if (logits[i] != -INFINITY)
            r[n++] = (ranked){.value = ((double)logits[i] - max) / o->temperature, .id = i};
    qsort(r, (size_t)n, sizeof *r, by_value_desc);
    int keep = (o->top_k > 0 && o->top_k < n) ? o->top_k : n;
    double sum = 0.0;
    for (int i = 0; i < keep; i++) {
        r[i].value = exp(r[i].value);
        sum += r[i].value;
    }
    if (o->top_p < 1.0f) {
        double mass = 0.0;
        int cut = keep;
        for (int i = 0; i < keep; i++) {
            mass += r[i].value / sum;
            if (mass >= o->top_p) { cut = i + 1; break; }
        }
        keep = cut;
        sum = 0.0;
        for (int i = 0; i < keep; i++) sum += r[i].value;
    }
    double u = strix_rng_uniform(rng) * sum, acc = 0.0;
    *out = r[keep - 1].id;
    for (int i = 0; i < keep; i++) {
        acc += r[i].value;
        if (u < acc) {
            *out = r[i].id;
            break;
        }
    }
    return STRIX_OK;
}
