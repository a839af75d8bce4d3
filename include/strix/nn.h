/*
 * strix/nn.h - neural-network modules: Linear, Embedding, LayerNorm, causal multi-head
 * self-attention (uniform or heterogeneous heads, optional RoPE, KV-cache decoding), MLP and the
 * pre-norm TransformerBlock. Each module is a small struct with typed functions and a generic
 * vtable (struct strix_module_i) so containers and explainers can chain them: the one-tensor
 * calls (strix_module_forward) are the shorthand of the general form (strix_module_io: several
 * inputs/outputs, int32 ids, a mask, a state object such as a KV cache).
 *
 * Contracts shared by every module:
 *   - Parameters are declared at construction into a strix_params block under PyTorch-style dotted
 *     names (prefix + ".weight", ...); their storage exists only after strix_params_alloc().
 *   - forward(x) writes an output the module owns (valid until its next forward) and caches what
 *     backward needs. It keeps a POINTER to x: the caller must leave x unchanged until backward.
 *   - backward(dy): parameter grads `+=`, the input gradient `=` into a buffer the module owns
 *     (valid until its next backward). backward always refers to the last forward.
 *   - Buffers grow with strix_tensor_ensure(), so after the first step of a given shape nothing
 *     is allocated.
 *   - A module's public struct holds only its configuration, parameters (strix_param *) and
 *     children; the caches of the last call and the scratch buffers are opaque (the `work`
 *     member, defined in src/nn). What callers may read is behind accessors
 *     (strix_linear_output, strix_block_output, strix_module_training, ...).
 *   - All computation goes through the backend primitives (strix/backend.h); data pointers are
 *     backend memory and are never dereferenced on the host here.
 *
 * Train/eval mode: strix_module_set_training() reaches the modules whose behaviour depends on it
 * (BatchNorm, Dropout; containers pass it on); modules start in training mode, as in PyTorch.
 * The classic layer zoo (Conv2d, pools, norms, Dropout, activations, Sequential, Residual) is in
 * strix/layers.h, PyTorch state dicts in strix/state_dict.h.
 *
 * LRP: every module implements the relevance slot beside its forward and backward, with the rule
 * it holds (strix_lrp_rule below; the rule machinery is src/nn/rules_internal.h);
 * strix_module_relevance runs it. strix/lrp.h (the explain floor, above this one) assigns rules
 * from composites, seeds the output and drives a whole model.
 */
#ifndef STRIX_NN_H
#define STRIX_NN_H

#include "strix/params.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- generic module vtable ---------------------------------------------------------------------

typedef struct strix_module strix_module;

/* LRP rule kinds of an affine module (Linear, Conv2d); strix/lrp.h has the explainers.
 *   EPSILON     R_i = Σ_j x_i·w_ij / stab(z_j)·R_j, stab(z) = z + eps·sign(z), sign(0) = +1
 *               (Bach et al. 2015, Eq. 58)
 *   GAMMA       contributions of the output's sign favoured (Montavon et al. 2019, Eq. 5; Zennit
 *               1.0.0's Gamma): outputs z > 0 use W + gamma·W⁺ on x⁺ and W + gamma·W⁻ on x⁻,
 *               outputs z < 0 the other pairing (same for the bias)
 *   ALPHA_BETA  R = alpha·R⁺ − beta·R⁻ with alpha − beta = 1, both >= 0 (Bach et al. 2015,
 *               Eq. 60); alpha 1, beta 0 is z-plus
 *   ZBOX        inputs bounded in [low, high] (Montavon et al. 2017, z^B rule): first layers
 * Modules without weights (activations, pools, norms, containers) use the rule's epsilon only. */
typedef enum strix_lrp_kind {
    STRIX_LRP_EPSILON, STRIX_LRP_GAMMA, STRIX_LRP_ALPHA_BETA, STRIX_LRP_ZBOX
} strix_lrp_kind;

typedef struct strix_lrp_rule {
    strix_lrp_kind kind;
    float epsilon;              /* stabiliser, 1e-6 by default */
    float gamma;                /* GAMMA: 0.25 */
    float alpha, beta;          /* ALPHA_BETA: 1, 0 */
    float low, high;            /* ZBOX bounds (scalars for every input) */
    bool bias_in_denominator;   /* z includes the bias (Zennit/LXT); default false: pre-bias z */
    bool layer_norm_detach_std; /* LayerNorm: the std is held constant (AttnLRP); false: LayerNorm
                                 * passes relevance through unchanged */
} strix_lrp_rule;

/* Opaque per-module state that outlives one call: attention's KV cache, an LSTM's h and c. Made
 * by strix_module_state_new for one module (it knows the layout), passed in strix_module_io,
 * freed by strix_module_state_free. Several states of one module are independent sequences. */
typedef struct strix_module_state strix_module_state;

#define STRIX_MODULE_MAX_IO 4

/* The general form of one module call (BLIS's _ex pattern; the one-tensor calls below are its
 * shorthand). The caller fills the inputs, the module the outputs:
 *   forward_ex    in[0..n_in): float inputs; ids: int32 ids in BACKEND memory with shape
 *                 ids_shape (ids_ndim dims), e.g. Embedding's token ids; mask: an optional mask
 *                 whose layout the module documents (NULL: none; a module that takes none
 *                 returns STRIX_ERR_UNSUPPORTED for one); state + pos: a step of a stateful
 *                 module on its state object (attention: a KV-cache decode step at position
 *                 pos). The module sets out[0..n_out), its own buffers (valid until its next
 *                 call of the same kind), and keeps what backward and relevance need.
 *   backward_ex   in[k] = the gradient of forward output k (n_in = the forward's n_out; a NULL
 *                 entry is a zero gradient where the module allows it); the module sets out[k] =
 *                 the gradient of float input k (`=`; NULL where it computes none, e.g. ids).
 *                 Parameter grads `+=`.
 *   relevance_ex  in[k] = the relevance of forward output k; out[k] = the relevance of float
 *                 input k, and after the float inputs one entry for the ids (one value per id,
 *                 shape ids_shape) when the forward took ids.
 * The shorthand strix_module_forward(m, x, &y) is forward_ex with n_in 1, in[0] = x and
 * nothing else, y = out[0]; likewise backward and relevance. A module fills either slot family
 * or both; module.c converts between them.
 * A recurrent module (LSTM, GRU, Mamba) returns y and its final state through this form:
 * forward_ex takes in[0] = x (B,T,I) and its strix_module_state holding h_0 (and c_0; zeros
 * when fresh), and sets out[0] = y (B,T,dirs·H), out[1] = h_T, out[2] = c_T (layers·dirs,B,H)
 * as torch.nn.LSTM's h_n/c_n (strix/recurrent.h), also written back
 * into the state so the next call continues the sequence; backward_ex takes in[0] = dy, in[1] =
 * dh_T, in[2] = dc_T (NULL: zero) and sets out[0] = dx; relevance_ex takes the relevance of y
 * (and of h_T, c_T) and sets out[0] = the relevance of x. */
typedef struct strix_module_io {
    int n_in;
    const strix_tensor *in[STRIX_MODULE_MAX_IO];
    const int32_t *ids;         /* backend memory, or NULL */
    int ids_ndim;
    int64_t ids_shape[STRIX_MAX_DIMS];
    const strix_tensor *mask;   /* NULL: none */
    strix_module_state *state;  /* NULL: a plain (stateless) call */
    int pos;                    /* with state: the position of the step */
    int n_out;                  /* set by the module */
    const strix_tensor *out[STRIX_MODULE_MAX_IO];
} strix_module_io;

/* The io of a one-tensor call: n_in 1, in[0] = x, everything else empty. */
STRIX_API strix_module_io strix_module_io_of(const strix_tensor *x);
/* The io of a call on int32 ids (backend memory) of shape (ndim dims, 1 <= ndim < 4). */
STRIX_API strix_module_io strix_module_io_of_ids(const int32_t *ids, int ndim,
                                                 const int64_t *shape);

/* The vtable of a module. forward/backward return the module's own output or input gradient
 * through *y / *dx (valid until the next call of the same kind). set_training may be NULL: the
 * module behaves the same in both modes. The *_ex slots are the general form (strix_module_io);
 * NULL ones are served by the one-tensor slots for one-tensor calls, and the reverse. */
typedef struct strix_module_i {
    const char *type; /* "Linear", "LayerNorm", ... */
    strix_status (*forward)(strix_module *m, const strix_tensor *x, const strix_tensor **y);
    strix_status (*backward)(strix_module *m, const strix_tensor *dy, const strix_tensor **dx);
    void (*destroy)(strix_module *m);
    void (*set_training)(strix_module *m, bool training);
    /* LRP (strix/lrp.h) of the last forward with rule m->rule: r_out has the output's shape;
     * *r_in (the input's shape, owned by the module, valid until its next relevance call) is the
     * relevance of the input. Containers call their children in reverse. NULL: the module
     * cannot be explained. */
    strix_status (*relevance)(strix_module *m, const strix_tensor *r_out,
                              const strix_tensor **r_in);
    /* Whether the module implements rule kind k. NULL: EPSILON only. Weightless modules that only
     * pass relevance on accept every kind. */
    bool (*supports_rule)(const strix_module *m, strix_lrp_kind k);
    /* Containers: the i-th child in forward order, NULL past the last. NULL slot: a leaf. */
    strix_module *(*child)(strix_module *m, int i);
    /* The general form (strix_module_io above); NULL: the one-tensor slots serve one-tensor
     * calls and any other io is STRIX_ERR_UNSUPPORTED. */
    strix_status (*forward_ex)(strix_module *m, strix_module_io *io);
    strix_status (*backward_ex)(strix_module *m, strix_module_io *io);
    strix_status (*relevance_ex)(strix_module *m, strix_module_io *io);
    /* A fresh state object for this module (NULL slot: the module has no state). */
    strix_status (*state_new)(strix_module *m, strix_module_state **out);
    void (*state_free)(strix_module *m, strix_module_state *st);
    /* The current train/eval mode of a module that has one (BatchNorm, Dropout); NULL: the
     * module has no mode of its own (containers: their children may have one). */
    bool (*get_training)(const strix_module *m);
} strix_module_i;

/* Every module struct starts with this header, so a pointer to it is a strix_module. */
struct strix_module {
    const strix_module_i *vt;
    strix_backend *be;
    strix_lrp_rule rule; /* set by the explainers before a relevance pass (strix/lrp.h) */
};

/* y = module(x); see the contracts above. */
STRIX_API strix_status strix_module_forward(strix_module *m, const strix_tensor *x,
                                            const strix_tensor **y);
/* dx = backward(dy) of the last forward; parameter grads `+=`. */
STRIX_API strix_status strix_module_backward(strix_module *m, const strix_tensor *dy,
                                             const strix_tensor **dx);
/* The general forward (strix_module_io): fills io->out/n_out. STRIX_ERR_UNSUPPORTED when the
 * module has no form for this io (ids, a mask or state it does not take, several inputs),
 * STRIX_ERR_ARG for a state made by another module, and the module's own errors. */
STRIX_API strix_status strix_module_forward_ex(strix_module *m, strix_module_io *io);
/* The general backward of the last forward_ex: io->in = output gradients, io->out = input
 * gradients (`=`), parameter grads `+=`. Statuses as strix_module_forward_ex. */
STRIX_API strix_status strix_module_backward_ex(strix_module *m, strix_module_io *io);
/* The general relevance of the last forward_ex with the module's rule: io->in = relevance of the
 * outputs, io->out = relevance of the inputs (ids last). Statuses as strix_module_forward_ex. */
STRIX_API strix_status strix_module_relevance_ex(strix_module *m, strix_module_io *io);
/* A fresh state object of module m (attention: an empty KV cache). STRIX_ERR_UNSUPPORTED for a
 * module without state, STRIX_ERR_ALLOC. Free it with strix_module_state_free before m. */
STRIX_API strix_status strix_module_state_new(strix_module *m, strix_module_state **out);
/* Frees a state made by strix_module_state_new(m, ...). NULL is a no-op. */
STRIX_API void strix_module_state_free(strix_module *m, strix_module_state *st);
/* Frees the module and its buffers (not its parameters: they live in the strix_params block).
 * NULL is a no-op. */
STRIX_API void strix_module_free(strix_module *m);
/* Training (true) or evaluation (false) mode, PyTorch's module.train()/eval(): BatchNorm uses
 * batch or running statistics, Dropout drops or is the identity; containers pass it to their
 * children; modules without a mode ignore it. Takes effect at the next forward. */
STRIX_API void strix_module_set_training(strix_module *m, bool training);
/* Whether m itself has a train/eval mode (its get_training slot; BatchNorm, Dropout), not
 * counting its children. */
STRIX_API bool strix_module_has_mode(const strix_module *m);
/* m's own mode: true in training mode; true for a module without a mode of its own (it behaves
 * the same in both, and modules start in training mode). Containers do not look at their
 * children: walk them with the `child` slot. */
STRIX_API bool strix_module_training(const strix_module *m);
/* r_in = relevance(m, r_out) through the module's vtable with its current rule (m->rule), for
 * the last forward (STRIX_ERR_UNSUPPORTED for a NULL slot). r_in is owned by the module (or is
 * r_out itself for pass-through modules), valid until its next relevance call. The explainers
 * that choose the rules and seed r_out are in strix/lrp.h. */
STRIX_API strix_status strix_module_relevance(strix_module *m, const strix_tensor *r_out,
                                              const strix_tensor **r_in);

// ---- Linear ------------------------------------------------------------------------------------

/* y = x·Wᵀ + b (PyTorch nn.Linear). W is stored (out_features, in_features), so PyTorch state
 * dicts load without transposes. */
typedef struct strix_linear {
    strix_module base;
    int in_features, out_features;
    strix_param *weight, *bias; /* bias NULL without bias */
    bool need_input_grad;       /* false: backward skips dx (default true) */
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_linear_work *work;
} strix_linear;

/* Declares `<prefix>.weight` (out,in) with init N(0, init_std) and decay, and, if `bias`,
 * `<prefix>.bias` (out) with init 0 and no decay. If `tied_weight` is non-NULL, the weight is
 * declared as `<prefix>.weight` tied to it (strix_params_tie) and must have shape (out,in).
 * Returns STRIX_ERR_ALLOC, STRIX_ERR_ARG (bad sizes) or STRIX_ERR_SHAPE (a tied weight whose
 * shape is not (out_features, in_features)). */
STRIX_API strix_status strix_linear_new(strix_params *ps, const char *prefix, int in_features,
                                        int out_features, bool bias, float init_std,
                                        strix_param *tied_weight, strix_linear **out);
/* The same layer with PyTorch's default nn.Linear init (reset_parameters: Kaiming-uniform with
 * a = sqrt(5)): weight and bias U(−1/sqrt(in), 1/sqrt(in)), drawn by strix_params_init from the
 * seeded stream (so the values differ from PyTorch's, the distribution is the same). Weight
 * decay on the weight only. STRIX_ERR_ALLOC / STRIX_ERR_ARG. */
STRIX_API strix_status strix_linear_new_default(strix_params *ps, const char *prefix,
                                                int in_features, int out_features, bool bias,
                                                strix_linear **out);
/* x (..., in) -> y (..., out) = x·Wᵀ + b. STRIX_ERR_SHAPE if the last dim is not in_features.
 * Only the input is kept: a relevance pass gets the pre-bias z = x·Wᵀ bit for bit by repeating
 * the GEMM. */
STRIX_API strix_status strix_linear_forward(strix_linear *m, const strix_tensor *x,
                                            const strix_tensor **y);
/* dy (..., out): dW += dyᵀ·x, db += column sums of dy, dx = dy·W (..., in). A parameter with
 * requires_grad clear (frozen) gets no gradient. */
STRIX_API strix_status strix_linear_backward(strix_linear *m, const strix_tensor *dy,
                                             const strix_tensor **dx);
/* The output y (..., out) of the last forward (the module's buffer, valid until its next
 * forward; empty before the first). */
STRIX_API const strix_tensor *strix_linear_output(const strix_linear *m);
/* The input gradient dx (..., in) of the last backward, or the relevance of the input of the
 * last relevance pass, which shares the buffer (valid until the next of either; empty before the
 * first and when backward skipped dx). */
STRIX_API const strix_tensor *strix_linear_input_grad(const strix_linear *m);

// ---- Embedding ---------------------------------------------------------------------------------

/* out[i] = weight[ids[i]] (PyTorch nn.Embedding) on int32 ids: a module of the general form
 * (strix_module_forward_ex with io ids, e.g. strix_module_io_of_ids; out[0] = the rows,
 * backward_ex computes no input gradient, relevance_ex sets out[0] = the relevance per id), so it
 * can head a Sequential and be explained by strix_lrp_explain_ex. The one-tensor forward is
 * STRIX_ERR_UNSUPPORTED (it has no float input); the typed functions below remain. */
typedef struct strix_embedding {
    strix_module base;
    int num_embeddings, dim;
    strix_param *weight;       /* (num, dim), init N(0, init_std), decay */
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_embedding_work *work;
} strix_embedding;

/* Declares `<prefix>.weight` (num, dim). STRIX_ERR_ALLOC / STRIX_ERR_ARG. */
STRIX_API strix_status strix_embedding_new(strix_params *ps, const char *prefix,
                                           int num_embeddings, int dim, float init_std,
                                           strix_embedding **out);
/* ids: `count` int32 in BACKEND memory (a view of them is kept for backward). Output shape
 * (shape..., dim) where shape has ndim dims multiplying to count. STRIX_ERR_ARG, naming the id and
 * its flat position, for an id outside [0, num), checked before anything is written (on a GPU
 * backend through a host copy of the ids); STRIX_ERR_SHAPE for ndim outside [1, 4). */
STRIX_API strix_status strix_embedding_forward(strix_embedding *m, const int32_t *ids,
                                               int ndim, const int64_t *shape,
                                               const strix_tensor **y);
/* dW[ids[i]] += dy[i] in ascending i (scatter-add) over the last forward's ids, checked again
 * first (the caller's buffer may have changed): STRIX_ERR_ARG naming the id and its position,
 * dW untouched. No input gradient (ids are integers). */
STRIX_API strix_status strix_embedding_backward(strix_embedding *m, const strix_tensor *dy);
/* LRP (the vtable's relevance slot): an id's relevance is the sum of its output row's relevance,
 * r_in[i] = Σ_d r_out[i][d] (d ascending, a GEMM with a ones vector), shape (shape...) of the
 * last forward. Any rule (no weights are involved). */
STRIX_API strix_status strix_embedding_relevance(strix_embedding *m, const strix_tensor *r_out,
                                                 const strix_tensor **r_in);

// ---- LayerNorm ---------------------------------------------------------------------------------

/* PyTorch nn.LayerNorm over the last dim: y = (x − mean)/sqrt(var + eps)·gamma + beta (biased
 * variance). Parameters `<prefix>.weight` (ones) and, if bias, `<prefix>.bias` (zeros), no
 * decay. */
typedef struct strix_layernorm {
    strix_module base;
    int dim;
    float eps;
    strix_param *weight, *bias; /* bias NULL without bias */
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_layernorm_work *work;
} strix_layernorm;

/* Declares the parameters above for rows of `dim` values. STRIX_ERR_ARG (dim or eps <= 0),
 * STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_layernorm_new(strix_params *ps, const char *prefix, int dim,
                                           bool bias, float eps, strix_layernorm **out);
/* x (..., dim) -> y (..., dim); caches xhat and the row std (x itself is not needed later). */
STRIX_API strix_status strix_layernorm_forward(strix_layernorm *m, const strix_tensor *x,
                                               const strix_tensor **y);
/* dgamma += Σ_rows dy⊙xhat, dbeta += Σ_rows dy, dx = LayerNorm input gradient. */
STRIX_API strix_status strix_layernorm_backward(strix_layernorm *m, const strix_tensor *dy,
                                                const strix_tensor **dx);
/* LayerNorm's relevance for its last forward, whose input x (..., dim) is the view the forward
 * kept (x NULL) or the same values passed by the caller: with m->base.rule.layer_norm_detach_std
 * the epsilon rule of the map with the row std held constant (LXT's layer_norm:
 * y = γ(x − mean)/std + β, std detached):
 *   R_j = x_j·(γ_j·s_j − (1/D)·Σ_i γ_i·s_i)/std,  s_i = r_i/stab(z_i),
 * z_i = γ_i·xhat_i (+ β_i with bias_in_denominator); else r_in = r_out (pass-through). r_in is
 * owned by the module. The vtable slot calls it with x NULL. STRIX_ERR_ARG for a bad rule. */
STRIX_API strix_status strix_layernorm_relevance(strix_layernorm *m, const strix_tensor *x,
                                                 const strix_tensor *r_out,
                                                 const strix_tensor **r_in);

// ---- causal multi-head self-attention -----------------------------------------------------------

#define STRIX_ATTN_MAX_HEADS 64

typedef struct strix_attention_config {
    int d_model;        /* C */
    int n_head;         /* NH: uniform heads of C/NH, or the number of entries of head_sizes */
    const int *head_sizes; /* NULL: uniform; else NH sizes summing to C (copied) */
    int block_size;     /* longest sequence (RoPE tables and the KV cache) */
    bool bias;          /* biases of c_attn and c_proj */
    bool rope;          /* rotary embedding of q and k, adjacent pairs (2i, 2i+1) */
    float rope_base;    /* theta_i = pos / base^(2i/hs) */
    float init_std;     /* c_attn weight init */
    float proj_init_std;/* c_proj weight init (nanoGPT: 0.02/sqrt(2L)) */
    float dropout;      /* p of dropout on the attention probabilities, [0, 1) (nanoGPT
                         * attn_dropout); 0: none */
} strix_attention_config;

/* nanoGPT CausalSelfAttention: qkv = c_attn(x) (B,T,3C) holds q|k|v; head h takes columns
 * [off_h, off_h+hs_h) of each; optional RoPE rotates q and k per head; P = softmax(q·kᵀ/sqrt(hs))
 * with the causal mask; y_h = P·v_h is written at the head's column slice of (B,T,C); out =
 * c_proj(y). Head slices are read in place (no split/merge copies). */
typedef struct strix_attention {
    strix_module base;
    int C, NH, block_size;
    int head_size[STRIX_ATTN_MAX_HEADS], head_off[STRIX_ATTN_MAX_HEADS];
    bool rope;
    float rope_base;
    strix_linear *c_attn, *c_proj;
    float *rope_cos, *rope_sin;          /* backend: per head (block_size, hs/2), at rope_off */
    size_t rope_off[STRIX_ATTN_MAX_HEADS];
    float dropout;                       /* p on the probabilities (0: none, no extra work) */
    bool training;                       /* the mode (strix_module_set_training); starts true */
    uint64_t drop_seed, drop_offset;     /* the next dropping forward's mask stream; the offset
                                          * advances by NH·B·T·T after each (both may be set) */
    /* Opaque: the caches of the last forward (for backward and relevance), the module's own KV
     * cache and the relevance scratch (src/nn/attention.c); see the accessors below. */
    struct strix_attention_work *work;
} strix_attention;

/* Declares `<prefix>.c_attn.*` and `<prefix>.c_proj.*` and builds the RoPE tables. STRIX_ERR_ARG
 * for a bad head layout (NH not dividing C, sizes not summing to C, odd head size with RoPE),
 * STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_attention_new(strix_params *ps, const char *prefix,
                                           const strix_attention_config *cfg,
                                           strix_attention **out);
/* x (B,T,C), T <= block_size -> y (B,T,C). STRIX_ERR_SHAPE otherwise. In training mode with
 * dropout p > 0, P·v uses the inverted dropout of the probabilities P (element i of the
 * (NH,B,T,T) probabilities dropped iff U(drop_seed, drop_offset + i) < p, kept ones scaled by
 * 1/(1 − p), as torch.nn.Dropout on nanoGPT's att); backward follows the same mask. */
STRIX_API strix_status strix_attention_forward(strix_attention *m, const strix_tensor *x,
                                               const strix_tensor **y);
/* strix_attention_forward with a key-padding mask on top of the causal one: keep (B,T) floats in
 * backend memory, keep[b,j] = 1 lets every query of sequence b attend to key j, 0 masks it out
 * (its score becomes -inf before the softmax, through strix_attention_mask_fill). That is the
 * convention of a boolean attn_mask of torch's scaled_dot_product_attention (True = take part)
 * and the NEGATION of nn.MultiheadAttention's key_padding_mask (True = ignore). A query whose
 * keys are all masked gets probabilities 0 and gradient 0 (docs/SEMANTICS.md, as PyTorch >= 2.5's
 * SDPA; the output is c_proj's bias alone; torch 1.13 gives NaN). keep NULL: the causal mask
 * alone. The module keeps a pointer to keep: leave it unchanged until backward and relevance,
 * which follow the mask (masked probabilities are 0, so they get no gradient and no relevance).
 * This is forward_ex with io.mask = keep. STRIX_ERR_SHAPE for a mask not (B,T). */
STRIX_API strix_status strix_attention_forward_masked(strix_attention *m, const strix_tensor *x,
                                                      const strix_tensor *keep,
                                                      const strix_tensor **y);
/* dy (B,T,C) -> dx (B,T,C); c_attn/c_proj grads `+=`. STRIX_ERR_ARG without a forward since the
 * last decode step. */
STRIX_API strix_status strix_attention_backward(strix_attention *m, const strix_tensor *dy,
                                                const strix_tensor **dx);
/* AttnLRP (Achtibat et al. 2024) of the last forward, the vtable's relevance slot: r_out (B,T,C)
 * -> *r_in (B,T,C), owned by c_attn. c_proj by Linear's rule (m->c_proj->base.rule), then per
 * head: the bilinear rule (Eq. 15: half to each operand, w = r/stab(2·o)) for y_h = P·v_h, the
 * softmax rule r_s = s·(r_P − P·Σr_P) (masked scores get 0), the score scale passes relevance
 * on, the bilinear rule for q·kᵀ, then the epsilon rule of RoPE's rotation (lrp_rope) when RoPE
 * is on, and c_attn by its rule. The bilinear rule runs in its gradient×input form on the head
 * slices in place (lrp_stabilized_divide, then the backward's GEMMs, times the operands): the
 * formula of strix_lrp_bilinear_matmul. Every epsilon inside is m->base.rule.epsilon. Records
 * the softmax gap (strix_attention_softmax_gap). STRIX_ERR_ARG without a forward since the last
 * decode step; STRIX_ERR_UNSUPPORTED after a forward that dropped probabilities (explain in eval
 * mode). */
STRIX_API strix_status strix_attention_relevance(strix_attention *m, const strix_tensor *r_out,
                                                 const strix_tensor **r_in);
/* The relevance of q|k|v (B,T,3C) from the last strix_attention_relevance (the module's buffer,
 * valid until its next relevance call). */
STRIX_API const strix_tensor *strix_attention_relevance_qkv(const strix_attention *m);
/* Σ r_P − Σ r_scores over the heads of the last relevance pass: the relevance the softmax rule
 * did not conserve. */
STRIX_API double strix_attention_softmax_gap(const strix_attention *m);
/* One decoding step for batch 1: x (1,C) is the token at position `pos` (< block_size); its
 * rotated k,v are stored in the cache row `pos`, and the query attends over cache rows 0..pos.
 * Rows < pos must come from earlier calls (the caller resets by starting again at pos 0).
 * Overwrites the buffers of the last forward (a later backward returns STRIX_ERR_ARG). This uses
 * the module's own cache; in the general form (strix_module_forward_ex) a state object from
 * strix_module_state_new(&m->base, ...) is a cache of its own, one per sequence: io.in[0] = x,
 * io.state, io.pos run this step on that state (STRIX_ERR_ARG for another module's state).
 * Without a state, forward_ex is strix_attention_forward_masked with io.mask (NULL: the causal
 * mask alone); a mask with a state is STRIX_ERR_UNSUPPORTED. */
STRIX_API strix_status strix_attention_decode(strix_attention *m, const strix_tensor *x,
                                              int pos, const strix_tensor **y);

// ---- MLP ---------------------------------------------------------------------------------------

/* nanoGPT MLP: c_fc Linear(C, d_ff) -> GELU (STRIX_ACT_GELU, erf form, PyTorch default) or ReLU
 * (STRIX_ACT_RELU) -> c_proj Linear(d_ff, C). The activation is the backend's strix_act, the one
 * activation enum of the library (strix/backend.h). */
typedef struct strix_mlp {
    strix_module base;
    strix_linear *c_fc, *c_proj;
    strix_act act;  /* STRIX_ACT_GELU or STRIX_ACT_RELU */
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_mlp_work *work;
} strix_mlp;

/* Declares `<prefix>.c_fc.*` (init init_std) and `<prefix>.c_proj.*` (init proj_init_std).
 * STRIX_ERR_ARG for an activation other than STRIX_ACT_GELU and STRIX_ACT_RELU, STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_mlp_new(strix_params *ps, const char *prefix, int d_model, int d_ff,
                                     strix_act act, bool bias, float init_std,
                                     float proj_init_std, strix_mlp **out);
/* x (..., C) -> y (..., C). */
STRIX_API strix_status strix_mlp_forward(strix_mlp *m, const strix_tensor *x,
                                         const strix_tensor **y);
/* dy (..., C) -> dx (..., C); c_fc/c_proj grads `+=`. */
STRIX_API strix_status strix_mlp_backward(strix_mlp *m, const strix_tensor *dy,
                                          const strix_tensor **dx);
/* LRP of the last forward (the vtable's relevance slot): c_proj by its rule, the activation
 * passes relevance through unchanged (AttnLRP's identity rule, as LXT does for GELU/ReLU), c_fc
 * by its rule. r_out (..., C) -> *r_in (..., C), owned by c_fc. */
STRIX_API strix_status strix_mlp_relevance(strix_mlp *m, const strix_tensor *r_out,
                                           const strix_tensor **r_in);

// ---- TransformerBlock --------------------------------------------------------------------------

typedef struct strix_block_config {
    strix_attention_config attn; /* attn.d_model is C; attn.dropout: on the probabilities */
    int d_ff;                    /* 0 means 4·C */
    strix_act act;               /* MLP activation: STRIX_ACT_GELU or STRIX_ACT_RELU */
    float ln_eps;
    bool bias;                   /* Linear and LayerNorm biases */
    float dropout;               /* p, [0, 1), on the attention's and the MLP's outputs before
                                  * each residual add (nanoGPT resid_dropout, MLP dropout) */
} strix_block_config;

/* Pre-norm block (nanoGPT Block): x1 = x + attn(ln_1(x)); y = x1 + mlp(ln_2(x1)), with
 * x1 = x + drop(attn(...)), y = x1 + drop(mlp(...)) when config dropout > 0. */
typedef struct strix_block {
    strix_module base;
    strix_layernorm *ln_1, *ln_2;
    strix_attention *attn;
    strix_mlp *mlp;
    /* strix/layers.h's Dropout modules, NULL without dropout; children after attn and mlp */
    struct strix_dropout *drop_attn, *drop_mlp;
    /* Opaque: the caches and scratch of the last calls (src/nn). */
    struct strix_block_work *work;
} strix_block;

/* Declares `<prefix>.ln_1.*`, `<prefix>.attn.*`, `<prefix>.ln_2.*`, `<prefix>.mlp.*`.
 * STRIX_ERR_ARG for a dropout outside [0, 1). The block starts in training mode (PyTorch);
 * strix_module_set_training passes its mode to the attention and the Dropout modules. */
STRIX_API strix_status strix_block_new(strix_params *ps, const char *prefix,
                                       const strix_block_config *cfg, strix_block **out);
/* x (B,T,C) -> y (B,T,C). */
STRIX_API strix_status strix_block_forward(strix_block *m, const strix_tensor *x,
                                           const strix_tensor **y);
/* dy (B,T,C) -> dx (B,T,C); every parameter grad of the block `+=`. */
STRIX_API strix_status strix_block_backward(strix_block *m, const strix_tensor *dy,
                                            const strix_tensor **dx);
/* The output y (B,T,C) of the last forward or decode step (the module's buffer, valid until its
 * next one; empty before the first). */
STRIX_API const strix_tensor *strix_block_output(const strix_block *m);
/* The relevance of the input (B,T,C) of the last strix_block_relevance, the *r_in it returned
 * (the module's buffer, valid until its next relevance call; empty before the first). */
STRIX_API const strix_tensor *strix_block_relevance_input(const strix_block *m);
/* LRP of the last forward (the vtable's relevance slot), r_out (B,T,C) -> *r_in (B,T,C) owned by
 * the block: the epsilon split of y = x1 + mlp(...) (lrp_residual_split, m->base.rule.epsilon),
 * the MLP and ln_2 on the branch, their relevance added to x1's share; the same for x1 = x +
 * attn(ln_1(x)). LayerNorm by its own rule (layer_norm_detach_std: std held constant, else
 * pass-through). STRIX_ERR_UNSUPPORTED after a forward that dropped (explain in eval mode). */
STRIX_API strix_status strix_block_relevance(strix_block *m, const strix_tensor *r_out,
                                             const strix_tensor **r_in);
/* Selects the masks of the block's next forward: its three dropout sites (the attention
 * probabilities, the attention output, the MLP output) use strix_seed_derive(seed, 0 / 1 / 2) at
 * offset 0, so a mask is a function of (seed, site, element) alone. No-op without dropout. */
STRIX_API void strix_block_set_dropout_seed(strix_block *m, uint64_t seed);
/* One decoding step of the block for batch 1 at position `pos` (see strix_attention_decode);
 * never drops. */
STRIX_API strix_status strix_block_decode(strix_block *m, const strix_tensor *x, int pos,
                                          const strix_tensor **y);

#ifdef __cplusplus
}
#endif
#endif
