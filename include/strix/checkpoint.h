/*
 * strix/checkpoint.h - the training checkpoint of a character LM of any architecture
 * (strix/lm.h), a safetensors file (strix/safetensors.h).
 *
 * A checkpoint is ONE safetensors file holding
 *   - every parameter under its dotted name (strix_params; a tied parameter is stored once, under
 *     the name it was declared with first), as F32,
 *   - the AdamW moments as "optim.m.<name>" and "optim.v.<name>" (same shapes, F32),
 *   - __metadata__: format "strix-gpt" for a GPT (the first format, unchanged), or "strix-lm"
 *     with arch (its strix_arch_name: "lstm", "mamba", ...) for any other architecture;
 *     format_version "1", config (the model's config as JSON, strix_lm_config_to_json),
 *     vocab (the vocabulary bytes in hex, two lowercase digits each), and the run: step,
 *     total_steps, time_limit, lr, min_lr, warmup, weight_decay, clip, adam_beta1/2, adam_eps,
 *     batch, grad_accum, grad_shards, seed, eval_every, eval_batches, val_fraction, data_path, data_size,
 *     data_hash, sampling ("random"/"sequential"), stride, backend, data_rng, seq_pos,
 *     seq_epoch, val_loss. Every key is required except grad_accum and grad_shards (newer than
 *     the format: a file without them loads as 1). No key names the number of processes that
 *     wrote the file: a data-parallel run's checkpoint is the bytes one process writes.
 *     Integers are decimal (data_hash: 16 hex digits); floats are the shortest decimal text
 *     that reads back as the same float (or double), so every value reads back bit for bit and
 *     --resume continues the run exactly. These run fields come from one table in
 *     src/models/gpt/checkpoint.c, used both for saving and for loading.
 *
 * A weights-only file (strix_checkpoint_save_weights, `strix export`,
 * tools/ref/pt_to_safetensors.py) is the same format without the run: the parameters only (no
 * "optim.*" tensors) and __metadata__ with format "strix-gpt", format_version "1", contents
 * "weights", config and vocab; every other key is ignored. A file without "contents" is a full
 * checkpoint. Parameter names and shapes are nanoGPT's state dict: transformer.wte.weight (V,C),
 * transformer.wpe.weight (T,C; none with rope), transformer.h.N.{ln_1, attn.c_attn, attn.c_proj,
 * ln_2, mlp.c_fc, mlp.c_proj}.{weight,bias}, transformer.ln_f.{weight,bias}, lm_head.weight
 * (V,C), Linear weights (out,in) as in PyTorch; lm_head.weight is absent when tied to
 * transformer.wte.weight, and every bias when config.bias is false. The other architectures'
 * names are their reference models' (strix/seqlm.h).
 * Files are written atomically (strix_write_file_atomic).
 */
#ifndef STRIX_CHECKPOINT_H
#define STRIX_CHECKPOINT_H

#include "strix/data.h"
#include "strix/lm.h"
#include "strix/safetensors.h"
#include "strix/train.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- GPT checkpoint ----------------------------------------------------------------------------

/* STRIX_PATH_MAX: strix/safetensors.h */

/* strix_train_config and strix_train_state (the run recorded in the metadata) are in
 * strix/train.h. */
typedef struct strix_checkpoint_info {
    strix_lm_config model;    /* architecture and config (model.gpt for a GPT) */
    strix_vocab vocab;        /* size must equal model.vocab_size */
    strix_train_config train; /* after strix_checkpoint_open, train.data_path and train.backend
                               * point into the checkpoint: valid until strix_checkpoint_close */
    strix_train_state state;
    bool weights_only;        /* set by strix_checkpoint_open: the file holds no run and no
                               * optimizer state (train and state are zero, their strings "") */
} strix_checkpoint_info;

/* Saves the parameters and AdamW moments of `lm` with `info` to `path` atomically (see the top of
 * this file). STRIX_ERR_ARG when info->model or the vocabulary disagree with the model;
 * STRIX_ERR_IO (previous file untouched), STRIX_ERR_ALLOC, backend errors. */
STRIX_API strix_status strix_checkpoint_save_lm(const char *path, strix_lm *lm,
                                                const strix_checkpoint_info *info);
/* strix_checkpoint_save_lm for a GPT (the shorthand of the first API). */
STRIX_API strix_status strix_checkpoint_save(const char *path, strix_gpt *g,
                                             const strix_checkpoint_info *info);

/* Saves only the parameters of `lm` (F32, as the full checkpoint names them) with its config and
 * `vocab` (size must equal the model's vocab_size) to `path` atomically: a weights-only file (see
 * the top of this file), about a third of the full checkpoint. Reads g's parameters, writes
 * nothing into g. STRIX_ERR_ARG for a vocabulary of another size; STRIX_ERR_IO (previous file
 * untouched), STRIX_ERR_ALLOC, backend errors. */
STRIX_API strix_status strix_checkpoint_save_weights_lm(const char *path, strix_lm *lm,
                                                        const strix_vocab *vocab);
/* strix_checkpoint_save_weights_lm for a GPT. */
STRIX_API strix_status strix_checkpoint_save_weights(const char *path, strix_gpt *g,
                                                     const strix_vocab *vocab);

/* A checkpoint read and validated, not yet applied to a model. */
typedef struct strix_checkpoint strix_checkpoint;

/* Reads `path` and validates the safetensors layer, the format name and version, every metadata
 * value, the model's config (strix_lm_config_check) and the vocabulary. A full checkpoint or a
 * weights-only file (info->weights_only; its run fields are not read). Touches no model.
 * STRIX_ERR_IO, STRIX_ERR_FORMAT, STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_checkpoint_open(const char *path, strix_checkpoint **out);
STRIX_API const strix_checkpoint_info *strix_checkpoint_info_of(const strix_checkpoint *ck);

/* A cheap test of whether `path` holds a strix checkpoint, reading only its header: STRIX_OK when
 * the safetensors header length fits the file, the header parses as a JSON object and its
 * __metadata__ says format "strix-gpt" or "strix-lm" (the tensors and other values are not checked: use
 * strix_checkpoint_open for that). STRIX_ERR_FORMAT (message says why) for any other file,
 * STRIX_ERR_IO when it cannot be opened or read, STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_checkpoint_probe(const char *path);

/* Copies the weights (and, if `optimizer`, the AdamW moments) into `lm`, after checking that every
 * parameter of lm is present with its shape and that the file holds no other tensor (a full
 * checkpoint: the parameters and both moments; a weights-only file: the parameters);
 * nothing is written into g unless all checks pass. STRIX_ERR_FORMAT on a mismatch or when
 * `optimizer` is asked of a weights-only file, STRIX_ERR_ARG when lm's architecture or config
 * differs from the checkpoint's in anything but the GPT's dropout or a sequence model's block
 * (its training window; no weight depends on either, so a fine-tune may change them). */
STRIX_API strix_status strix_checkpoint_restore_lm(const strix_checkpoint *ck, strix_lm *lm,
                                                   bool optimizer);
/* strix_checkpoint_restore_lm for a GPT. */
STRIX_API strix_status strix_checkpoint_restore(const strix_checkpoint *ck, strix_gpt *g,
                                                bool optimizer);
STRIX_API void strix_checkpoint_close(strix_checkpoint *ck);

/* The GPT config as compact JSON (caller frees with free()), and back. from_json returns
 * STRIX_ERR_FORMAT for malformed JSON, missing fields or out-of-range values (it does not run
 * strix_gpt_config_check); a missing "dropout" (files written before it existed) reads as 0. */
STRIX_API strix_status strix_gpt_config_to_json(const strix_gpt_config *c, char **json);
STRIX_API strix_status strix_gpt_config_from_json(const char *json, strix_gpt_config *c);

#ifdef __cplusplus
}
#endif
#endif
