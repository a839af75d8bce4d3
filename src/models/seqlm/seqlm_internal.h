/*
 * seqlm_internal.h - the layout of struct strix_seqlm and the architecture table, shared by the
 * files of src/models/seqlm (seqlm.c runs the model, arch.c builds each architecture's blocks,
 * explain.c walks the modules). Internal: not installed.
 */
#ifndef STRIX_SEQLM_INTERNAL_H
#define STRIX_SEQLM_INTERNAL_H

#include "strix/layers.h"
#include "strix/seqlm.h"

#define SEQLM_MAX_BLOCKS 64

/* What differs between architectures: parameter names, the blocks, the norm, special inits. */
typedef struct seqlm_arch {
    strix_arch arch;
    const char *embed, *norm, *head; /* parameter prefixes */
    float embed_std;                 /* N(0, std) of the embedding */
    bool rms_norm;                   /* final norm: RMSNorm (no bias) instead of LayerNorm */
    float norm_eps;
    bool head_bias;
    float head_std_scale;            /* > 0: head weight N(0, scale/sqrt(out_dim)); 0: nn.Linear's
                                      * default U(±1/sqrt(out_dim)) */
    /* Validates the fields this architecture uses (the shared ones are checked already). */
    strix_status (*check)(const strix_seqlm_config *c);
    /* The width the blocks hand the norm and head (m->out_dim once built). */
    int (*out_width)(const strix_seqlm_config *c);
    /* Declares and builds the blocks (m->blocks, m->n_blocks) and sets m->out_dim. */
    strix_status (*build)(strix_seqlm *m);
    /* Special inits after strix_params_init (NULL: none). */
    strix_status (*init)(strix_seqlm *m, uint64_t seed);
} seqlm_arch;

/* The entry of architecture a, NULL when it is not built by seqlm (GPT) or not in this build. */
const seqlm_arch *seqlm_arch_of(strix_arch a);

struct strix_seqlm {
    strix_backend *be;
    strix_seqlm_config cfg;
    const seqlm_arch *arch;
    strix_params params;
    strix_embedding *emb;
    strix_module *blocks[SEQLM_MAX_BLOCKS];
    int n_blocks;
    int out_dim;                  /* width the norm and head see */
    strix_module *norm;           /* LayerNorm or RMSNorm */
    strix_linear *head;
    int32_t *ids, *targets;       /* backend buffers of ids_cap int32 each */
    size_t ids_cap;
    strix_tensor losses, dlogits;
    int B, T;
    bool can_backward, training;
    strix_module_state *states[SEQLM_MAX_BLOCKS]; /* decode states (NULL until the first step) */
    int decode_pos;
};

/* Copies n host ids to the backend id buffer (grown as needed). */
strix_status seqlm_upload_ids(strix_seqlm *m, const int32_t *ids, size_t n);

#endif
