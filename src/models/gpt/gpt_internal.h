/*
 * gpt_internal.h - the layout of struct strix_gpt, shared by the files of src/models/gpt (gpt.c
 * builds and runs it, explain.c walks its modules for AttnLRP). Internal: not installed.
 */
#ifndef STRIX_GPT_INTERNAL_H
#define STRIX_GPT_INTERNAL_H

#include "strix/gpt.h"
#include "strix/layers.h"
#include "strix/nn.h"

struct strix_gpt {
    strix_backend *be;
    strix_gpt_config cfg;
    strix_params params;
    strix_embedding *wte;
    strix_param *wpe;          /* NULL with RoPE */
    strix_block **h;           /* n_layer blocks */
    strix_layernorm *ln_f;
    strix_linear *lm_head;
    int32_t *ids, *targets;    /* backend buffers of ids_cap int32 each */
    size_t ids_cap;
    strix_tensor losses;       /* (B·T) per-row cross-entropy */
    strix_tensor dlogits;      /* (B,T,V) */
    int B, T;
    bool can_backward;         /* the last forward had targets and no decode step came after */
    int decode_pos;
    /* dropout (cfg.dropout > 0; drop NULL otherwise): the embedding site's module, the mode, the
     * key and count of strix_gpt_set_dropout_key. Between forwards the blocks and drop stay in
     * eval mode, so code that runs the blocks directly (explain.c) never drops. */
    strix_dropout *drop;
    bool training;
    uint64_t drop_key, drop_count;
};

#endif
