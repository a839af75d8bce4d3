/*
 * lm.c - the architecture-independent handle of strix/lm.h: a tagged pointer to a GPT or a
 * sequence model, each call forwarded to the model's own function, and the configuration's JSON.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "strix/checkpoint.h"
#include "strix/lm.h"

struct strix_lm {
    strix_lm_config cfg;
    strix_gpt *gpt;      /* arch GPT */
    strix_seqlm *seq;    /* the others */
    bool borrowed;       /* strix_lm_wrap_gpt: the GPT is not ours */
};

// ---- configuration -----------------------------------------------------------------------------

strix_lm_config strix_lm_config_of_gpt(const strix_gpt_config *c) {
    strix_lm_config l;
    memset(&l, 0, sizeof l);
    l.arch = STRIX_ARCH_GPT;
    l.gpt = *c;
    return l;
}

strix_lm_config strix_lm_config_of_seq(const strix_seqlm_config *c) {
    strix_lm_config l;
    memset(&l, 0, sizeof l);
    l.arch = c->arch;
    l.seq = *c;
    return l;
}

strix_status strix_lm_config_check(const strix_lm_config *c) {
    if (c->arch == STRIX_ARCH_GPT) return strix_gpt_config_check(&c->gpt);
    if (!strix_arch_name(c->arch))
        return strix_error(STRIX_ERR_ARG, "lm: unknown architecture %d", (int)c->arch);
    if (c->seq.arch != c->arch)
        return strix_error(STRIX_ERR_ARG, "lm: config of %s holds a %s model",
                           strix_arch_name(c->arch), strix_arch_name(c->seq.arch));
    return strix_seqlm_config_check(&c->seq);
}

int strix_lm_config_vocab(const strix_lm_config *c) {
    return c->arch == STRIX_ARCH_GPT ? c->gpt.vocab_size : c->seq.vocab_size;
}
int strix_lm_config_block(const strix_lm_config *c) {
    return c->arch == STRIX_ARCH_GPT ? c->gpt.block_size : c->seq.block_size;
}
int strix_lm_config_layers(const strix_lm_config *c) {
    return c->arch == STRIX_ARCH_GPT ? c->gpt.n_layer : c->seq.n_layer;
}
int strix_lm_config_d_model(const strix_lm_config *c) {
    return c->arch == STRIX_ARCH_GPT ? c->gpt.d_model : c->seq.d_model;
}

/* The integer fields of strix_seqlm_config in JSON order. */
#define SEQ_INTS(X) \
    X(vocab_size) X(block_size) X(n_layer) X(d_model) X(hidden) X(d_state) X(d_conv) \
    X(expand) X(n_head) X(d_ff)

strix_status strix_lm_config_to_json(const strix_lm_config *c, char **json) {
    *json = NULL;
    if (c->arch == STRIX_ARCH_GPT) return strix_gpt_config_to_json(&c->gpt, json);
    cJSON *o = cJSON_CreateObject();
    bool ok = o != NULL;
#define PUT(f) ok = ok && cJSON_AddNumberToObject(o, #f, c->seq.f);
    SEQ_INTS(PUT)
#undef PUT
    ok = ok && cJSON_AddBoolToObject(o, "tie_weights", c->seq.tie_weights);
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return strix_error(STRIX_ERR_ALLOC, "lm config: out of memory");
    *json = text;
    return STRIX_OK;
}

strix_status strix_lm_config_from_json(strix_arch arch, const char *json, strix_lm_config *c) {
    memset(c, 0, sizeof *c);
    c->arch = arch;
    if (arch == STRIX_ARCH_GPT) return strix_gpt_config_from_json(json, &c->gpt);
    if (!strix_arch_name(arch))
        return strix_error(STRIX_ERR_FORMAT, "lm config: unknown architecture %d", (int)arch);
    cJSON *o = cJSON_Parse(json);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return strix_error(STRIX_ERR_FORMAT, "lm config: not a JSON object");
    }
    c->seq.arch = arch;
    const char *bad = NULL;
#define GET(f) \
    if (!bad) { \
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, #f); \
        if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int)v->valuedouble || \
            v->valuedouble < 0 || v->valuedouble > 2147483647.0) \
            bad = #f; \
        else \
            c->seq.f = (int)v->valuedouble; \
    }
    SEQ_INTS(GET)
#undef GET
    const cJSON *tie = cJSON_GetObjectItemCaseSensitive(o, "tie_weights");
    if (!bad && !cJSON_IsBool(tie)) bad = "tie_weights";
    if (!bad) c->seq.tie_weights = cJSON_IsTrue(tie);
    cJSON_Delete(o);
    if (bad)
        return strix_error(STRIX_ERR_FORMAT, "lm config of %s: field '%s' missing or not a "
                           "non-negative integer", strix_arch_name(arch), bad);
    return STRIX_OK;
}

// ---- the handle --------------------------------------------------------------------------------

strix_status strix_lm_new(strix_backend *be, const strix_lm_config *c, strix_lm **out) {
    *out = NULL;
    STRIX_TRY(strix_lm_config_check(c));
    strix_lm *lm = calloc(1, sizeof *lm);
    if (!lm) return strix_error(STRIX_ERR_ALLOC, "lm: out of memory");
    lm->cfg = *c;
    strix_status s = c->arch == STRIX_ARCH_GPT ? strix_gpt_new(be, &c->gpt, &lm->gpt)
                                               : strix_seqlm_new(be, &c->seq, &lm->seq);
    if (s != STRIX_OK) {
        free(lm);
        return s;
    }
    *out = lm;
    return STRIX_OK;
}

strix_status strix_lm_wrap_gpt(strix_gpt *g, strix_lm **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return strix_error(STRIX_ERR_ALLOC, "lm: out of memory");
    (*out)->cfg = strix_lm_config_of_gpt(strix_gpt_config_of(g));
    (*out)->gpt = g;
    (*out)->borrowed = true;
    return STRIX_OK;
}

void strix_lm_free(strix_lm *lm) {
    if (!lm) return;
    if (!lm->borrowed) strix_gpt_free(lm->gpt);
    strix_seqlm_free(lm->seq);
    free(lm);
}

strix_arch strix_lm_arch(const strix_lm *lm) { return lm->cfg.arch; }

const strix_lm_config *strix_lm_config_get(const strix_lm *lm) { return &lm->cfg; }

strix_gpt *strix_lm_gpt(strix_lm *lm) { return lm->gpt; }
strix_seqlm *strix_lm_seqlm(strix_lm *lm) { return lm->seq; }

strix_params *strix_lm_params(strix_lm *lm) {
    return lm->gpt ? strix_gpt_params(lm->gpt) : strix_seqlm_params(lm->seq);
}

strix_backend *strix_lm_backend(const strix_lm *lm) {
    return lm->gpt ? strix_gpt_params(lm->gpt)->be : strix_seqlm_params(lm->seq)->be;
}

strix_status strix_lm_init_weights(strix_lm *lm, uint64_t seed) {
    return lm->gpt ? strix_gpt_init_weights(lm->gpt, seed)
                   : strix_seqlm_init_weights(lm->seq, seed);
}

strix_status strix_lm_forward(strix_lm *lm, const int32_t *ids, const int32_t *targets, int B,
                              int T, float *loss) {
    return lm->gpt ? strix_gpt_forward(lm->gpt, ids, targets, B, T, loss)
                   : strix_seqlm_forward(lm->seq, ids, targets, B, T, loss);
}

const float *strix_lm_logits(const strix_lm *lm) {
    return lm->gpt ? strix_gpt_logits(lm->gpt) : strix_seqlm_logits(lm->seq);
}

strix_status strix_lm_backward_scaled(strix_lm *lm, float scale) {
    return lm->gpt ? strix_gpt_backward_scaled(lm->gpt, scale)
                   : strix_seqlm_backward_scaled(lm->seq, scale);
}

void strix_lm_set_training(strix_lm *lm, bool training) {
    if (lm->gpt) strix_gpt_set_training(lm->gpt, training);
    else strix_seqlm_set_training(lm->seq, training);
}

bool strix_lm_training(const strix_lm *lm) {
    return lm->gpt ? strix_gpt_training(lm->gpt) : strix_seqlm_training(lm->seq);
}

void strix_lm_set_dropout_key(strix_lm *lm, uint64_t key) {
    if (lm->gpt) strix_gpt_set_dropout_key(lm->gpt, key);
}

strix_status strix_lm_decode_reset(strix_lm *lm) {
    return lm->gpt ? strix_gpt_decode_reset(lm->gpt) : strix_seqlm_decode_reset(lm->seq);
}

strix_status strix_lm_decode_step(strix_lm *lm, int32_t token, float *logits) {
    return lm->gpt ? strix_gpt_decode_step(lm->gpt, token, logits)
                   : strix_seqlm_decode_step(lm->seq, token, logits);
}

int strix_lm_decode_pos(const strix_lm *lm) {
    return lm->gpt ? strix_gpt_decode_pos(lm->gpt) : strix_seqlm_decode_pos(lm->seq);
}

bool strix_lm_decode_bounded(const strix_lm *lm) { return lm->gpt != NULL; }

strix_status strix_lm_explain(strix_lm *lm, const int32_t *ids, int n,
                              const strix_gpt_explain_config *cfg, strix_gpt_explanation *out) {
    return lm->gpt ? strix_gpt_explain(lm->gpt, ids, n, cfg, out)
                   : strix_seqlm_explain(lm->seq, ids, n, cfg, out);
}

strix_status strix_lm_explain_output(strix_lm *lm, const int32_t *ids, int n,
                                     const strix_gpt_explain_config *cfg, double *value) {
    return lm->gpt ? strix_gpt_explain_output(lm->gpt, ids, n, cfg, value)
                   : strix_seqlm_explain_output(lm->seq, ids, n, cfg, value);
}
