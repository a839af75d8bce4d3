/*
 * generator.c - generation for any architecture (strix_lm_generator, strix/lm.h): the GPT's
 * windowed KV-cache generator, or for a sequence model the decode state fed with the whole
 * prompt and then one step per new token (the token fed lazily, as the GPT's generator does).
 */
#include <stdlib.h>

#include "strix/lm.h"

struct strix_lm_generator {
    strix_lm *lm;
    strix_gpt_generator *gpt;  /* arch GPT */
    int V;                     /* vocabulary size */
    float *logits;             /* (V) the latest prediction (sequence models) */
    void *scratch;
    int32_t pending;           /* the last sampled token, fed at the next call (-1: none) */
    bool primed;
};

strix_status strix_lm_generator_new(strix_lm *lm, strix_lm_generator **out) {
    *out = NULL;
    strix_lm_generator *g = calloc(1, sizeof *g);
    if (!g) return strix_error(STRIX_ERR_ALLOC, "generator: out of memory");
    g->lm = lm;
    g->V = strix_lm_config_vocab(strix_lm_config_get(lm));
    g->pending = -1;
    strix_status s = STRIX_OK;
    if (strix_lm_gpt(lm)) {
        s = strix_gpt_generator_new(strix_lm_gpt(lm), &g->gpt);
    } else {
        g->logits = malloc((size_t)g->V * sizeof(float));
        g->scratch = malloc(strix_sample_scratch_size(g->V));
        if (!g->logits || !g->scratch) s = strix_error(STRIX_ERR_ALLOC, "generator: out of memory");
    }
    if (s != STRIX_OK) {
        strix_lm_generator_free(g);
        return s;
    }
    *out = g;
    return STRIX_OK;
}

void strix_lm_generator_free(strix_lm_generator *gen) {
    if (!gen) return;
    strix_gpt_generator_free(gen->gpt);
    free(gen->logits);
    free(gen->scratch);
    free(gen);
}

strix_status strix_lm_generator_set_window(strix_lm_generator *gen, strix_gpt_window window) {
    return gen->gpt ? strix_gpt_generator_set_window(gen->gpt, window) : STRIX_OK;
}

strix_status strix_lm_generator_prime(strix_lm_generator *gen, const int32_t *prompt, size_t n) {
    if (gen->gpt) return strix_gpt_generator_prime(gen->gpt, prompt, n);
    gen->primed = false;
    gen->pending = -1;
    if (n == 0) return strix_error(STRIX_ERR_ARG, "generator: the prompt is empty");
    for (size_t i = 0; i < n; i++)
        if (prompt[i] < 0 || prompt[i] >= gen->V)
            return strix_error(STRIX_ERR_ARG, "generator: prompt id %d at %zu outside [0, %d)",
                               prompt[i], i, gen->V);
    STRIX_TRY(strix_lm_decode_reset(gen->lm));
    for (size_t i = 0; i < n; i++) STRIX_TRY(strix_lm_decode_step(gen->lm, prompt[i], gen->logits));
    gen->primed = true;
    return STRIX_OK;
}

strix_status strix_lm_generator_next(strix_lm_generator *gen, const strix_sampler_config *c,
                                     strix_rng *rng, int32_t *token) {
    if (gen->gpt) return strix_gpt_generator_next(gen->gpt, c, rng, token);
    if (!gen->primed) return strix_error(STRIX_ERR_ARG, "generator: not primed");
    if (gen->pending >= 0) {
        strix_status s = strix_lm_decode_step(gen->lm, gen->pending, gen->logits);
        if (s != STRIX_OK) {
            gen->primed = false;
            return s;
        }
        gen->pending = -1;
    }
    STRIX_TRY(strix_sample_logits(gen->logits, gen->V, c, rng, gen->scratch, token));
    gen->pending = *token;
    return STRIX_OK;
}
