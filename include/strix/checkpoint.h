/*
 * strix/checkpoint.h - the GPT training checkpoint, a safetensors file (strix/safetensors.h).
 *
 * A GPT checkpoint is ONE safetensors file holding
 *   - every parameter under its dotted name (strix_params; a tied parameter is stored once, under
 *     the name it was declared with first), as F32,
 *   - the AdamW moments as "optim.m.<name>" and "optim.v.<name>" (same shapes, F32),
 *   - __metadata__: format "strix-gpt", format_version "1", config (the GPT config as JSON),
 *     vocab (the vocabulary bytes in hex, two lowercase digits each), and the run: step,
 *     total_steps, time_limit, lr, min_lr, warmup, weight_decay, clip, adam_beta1/2, adam_eps,
 *     batch, grad_accum, seed, eval_every, eval_batches, val_fraction, data_path, data_size,
 *     data_hash, sampling ("random"/"sequential"), stride, backend, data_rng, seq_pos,
 *     seq_epoch, val_loss. Every key is required except grad_accum (newer than the format: a
 *     file without it loads as 1).
 *     Integers are decimal (data_hash: 16 hex digits); floats are the shortest decimal text
 *     that reads back as the same float (or double), so every value reads back bit for bit and
 *     --resume continues the run exactly. These run fields come from one table in
 *     src/models/gpt/checkpoint.c, used both for saving and for loading.
 * Files are written atomically (strix_write_file_atomic).
 */
#ifndef STRIX_CHECKPOINT_H
#define STRIX_CHECKPOINT_H

#include "strix/data.h"
#include "strix/gpt.h"
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
    strix_gpt_config model;
    strix_vocab vocab;        /* size must equal model.vocab_size */
    strix_train_config train; /* after strix_checkpoint_open, train.data_path and train.backend
                               * point into the checkpoint: valid until strix_checkpoint_close */
    strix_train_state state;
} strix_checkpoint_info;

/* Saves the parameters and AdamW moments of `g` with `info` to `path` atomically (see the top of
 * this file). STRIX_ERR_ARG when info->model or the vocabulary disagree with the model;
 * STRIX_ERR_IO (previous file untouched), STRIX_ERR_ALLOC, backend errors. */
STRIX_API strix_status strix_checkpoint_save(const char *path, strix_gpt *g,
                                             const strix_checkpoint_info *info);

/* A checkpoint read and validated, not yet applied to a model. */
typedef struct strix_checkpoint strix_checkpoint;

/* Reads `path` and validates the safetensors layer, the format name and version, every metadata
 * value, the GPT config (strix_gpt_config_check) and the vocabulary. Touches no model.
 * STRIX_ERR_IO, STRIX_ERR_FORMAT, STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_checkpoint_open(const char *path, strix_checkpoint **out);
STRIX_API const strix_checkpoint_info *strix_checkpoint_info_of(const strix_checkpoint *ck);

/* A cheap test of whether `path` holds a strix checkpoint, reading only its header: STRIX_OK when
 * the safetensors header length fits the file, the header parses as a JSON object and its
 * __metadata__ says format "strix-gpt" (the tensors and other values are not checked: use
 * strix_checkpoint_open for that). STRIX_ERR_FORMAT (message says why) for any other file,
 * STRIX_ERR_IO when it cannot be opened or read, STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_checkpoint_probe(const char *path);

/* Copies the weights (and, if `optimizer`, the AdamW moments) into `g`, after checking that every
 * parameter of g is present with its shape and that the file holds no other tensor;
 * nothing is written into g unless all checks pass. STRIX_ERR_FORMAT on a mismatch,
 * STRIX_ERR_ARG when g's config differs from the checkpoint's. */
STRIX_API strix_status strix_checkpoint_restore(const strix_checkpoint *ck, strix_gpt *g,
                                                bool optimizer);
STRIX_API void strix_checkpoint_close(strix_checkpoint *ck);

/* The GPT config as compact JSON (caller frees with free()), and back. from_json returns
 * STRIX_ERR_FORMAT for malformed JSON, missing fields or out-of-range values (it does not run
 * strix_gpt_config_check). */
STRIX_API strix_status strix_gpt_config_to_json(const strix_gpt_config *c, char **json);
STRIX_API strix_status strix_gpt_config_from_json(const char *json, strix_gpt_config *c);

#ifdef __cplusplus
}
#endif
#endif
