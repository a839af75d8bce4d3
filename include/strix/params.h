/*
 * strix/params.h - the parameter block (llm.c layout): every parameter of a model is a view into
 * ONE backend allocation per role - values, grads, Adam m, Adam v - so zero_grad is one fill, the
 * optimizer one kernel and a checkpoint one write per role.
 *
 * Use: modules call strix_params_add() while they are built (names are PyTorch-style dotted
 * paths, "blocks.0.attn.c_attn.weight"); then strix_params_alloc() lays out the block and fills
 * each strix_param's data/grad views; then strix_params_init() draws initial values.
 */
#ifndef STRIX_PARAMS_H
#define STRIX_PARAMS_H

#include "strix/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STRIX_PARAM_NAME_MAX 96

typedef enum strix_init {
    STRIX_INIT_ZEROS,
    STRIX_INIT_ONES,
    STRIX_INIT_NORMAL,   /* N(0, std) */
    STRIX_INIT_UNIFORM,  /* U(-bound, bound), bound in `std` */
} strix_init;

typedef struct strix_param {
    char name[STRIX_PARAM_NAME_MAX];
    int ndim;
    int64_t shape[STRIX_MAX_DIMS];
    size_t numel;
    size_t offset;        /* in floats, from the start of each role's block */
    float *data, *grad;   /* views into the block (valid after strix_params_alloc) */
    strix_init init;
    float init_std;
    bool decay;           /* AdamW weight decay applies (weights of Linear/Embedding) */
    bool requires_grad;   /* false: frozen, optimizers skip it (default true) */
    bool is_buffer;       /* state, not a parameter (BatchNorm running stats): no gradient, never
                           * optimized, saved in the state dict */
    struct strix_param *tied_to; /* non-NULL: shares storage with another parameter */
} strix_param;

typedef struct strix_params {
    strix_backend *be;
    strix_param **items;
    int count, cap;
    size_t total;               /* floats per role */
    float *data, *grad, *m, *v; /* one allocation each; m/v zero until the first step */
} strix_params;

/* An empty set on backend `be`. */
STRIX_API void strix_params_init_empty(strix_params *ps, strix_backend *be);

/* Declares a parameter; returns its handle (stable until strix_params_free) or NULL on OOM.
 * Duplicate names are a contract violation. */
STRIX_API strix_param *strix_params_add(strix_params *ps, const char *name, int ndim,
                                        const int64_t *shape, strix_init init, float init_std,
                                        bool decay);

/* Declares a buffer (PyTorch register_buffer): stored and saved like a parameter, with
 * is_buffer set and requires_grad clear, so optimizers and zero_grad's users ignore it. Its grad
 * view exists but stays unused. NULL on OOM. */
STRIX_API strix_param *strix_params_add_buffer(strix_params *ps, const char *name, int ndim,
                                               const int64_t *shape, strix_init init);

/* Declares `name` as the same storage as `target` (weight tying); it is listed by name but not
 * stored twice. */
STRIX_API strix_param *strix_params_tie(strix_params *ps, const char *name, strix_param *target);

/* Allocates the four role blocks (zeroed) and points every parameter into them.
 * STRIX_ERR_ALLOC on failure. */
STRIX_API strix_status strix_params_alloc(strix_params *ps);

/* Draws every parameter's initial value on the host from a SplitMix64 stream derived from
 * (seed, parameter index) and uploads it; the result depends on nothing else. */
STRIX_API strix_status strix_params_init(strix_params *ps, uint64_t seed);

/* Finds a parameter by dotted name (NULL if absent). */
STRIX_API strix_param *strix_params_find(const strix_params *ps, const char *name);

/* True if dotted `name` lies under `prefix`: name == prefix, or name starts with prefix followed by
 * '.', or prefix is "" or ends with '.' and starts name. So "blocks.1" matches "blocks.1.mlp.bias"
 * but not "blocks.10.mlp.bias". */
STRIX_API bool strix_param_name_matches(const char *name, const char *prefix);

/* Freezes (flag false) or unfreezes every parameter whose name matches `prefix` (as
 * strix_param_name_matches; PyTorch requires_grad_ on a submodule's parameters). Buffers are not
 * parameters: they never match and stay frozen. Tied storage is one parameter: matching either
 * name sets the flag of both. Optimizers and clipping skip frozen parameters; modules may skip
 * their gradients. STRIX_ERR_ARG naming the prefix if no parameter matches. */
STRIX_API strix_status strix_params_set_requires_grad(strix_params *ps, const char *prefix,
                                                      bool flag);

/* grads = 0 (one fill). */
STRIX_API strix_status strix_params_zero_grad(strix_params *ps);

/* Frees the blocks and the handles. NULL-safe. */
STRIX_API void strix_params_free(strix_params *ps);

#ifdef __cplusplus
}
#endif
#endif
