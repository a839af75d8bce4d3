/*
 * strix/checkpoint.h - safetensors files and the GPT training checkpoint built on them.
 *
 * safetensors (huggingface/safetensors, docs "Format"): an 8-byte little-endian unsigned header
 * length N, N bytes of UTF-8 JSON mapping each tensor name to {"dtype", "shape", "data_offsets":
 * [begin, end]} (byte offsets into the data section, which follows the header) plus an optional
 * "__metadata__" object of string to string, then the data section, which the tensors cover
 * exactly, without holes or overlaps. The header may end in spaces (the writer pads it so the
 * data starts 8-byte aligned). strix reads and writes only F32 tensors of at most 4 dims.
 *
 * A GPT checkpoint is ONE safetensors file holding
 *   - every parameter under its dotted name (strix_params; a tied parameter is stored once, under
 *     the name it was declared with first),
 *   - the AdamW moments as "optim.m.<name>" and "optim.v.<name>" (same shapes),
 *   - __metadata__: format "strix-gpt", format_version "1", config (the GPT config as JSON),
 *     vocab (the vocabulary bytes in hex, two lowercase digits each), and the run: step,
 *     total_steps, time_limit, lr, min_lr, warmup, weight_decay, clip, adam_beta1/2, adam_eps,
 *     batch, seed, eval_every, eval_batches, val_fraction, data_path, data_size, data_hash,
 *     sampling ("random"/"sequential"), stride, backend, data_rng, seq_pos, seq_epoch, val_loss. Integers
 *     are decimal; floats are the shortest decimal text that reads back as the same float (or
 *     double), so every value reads back bit for bit and --resume continues the run exactly.
 * Files are written atomically (temp file, fsync, rename, fsync of the directory).
 *
 * Not here: other dtypes (F16, BF16, ...; F32 and I64 only), memory-mapped reading, sharded files.
 */
#ifndef STRIX_CHECKPOINT_H
#define STRIX_CHECKPOINT_H

#include "strix/data.h"
#include "strix/gpt.h"
#include "strix/train.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- safetensors -------------------------------------------------------------------------------

/* One F32 tensor: host data of numel = Π shape floats (1 for ndim 0). */
typedef struct strix_st_tensor {
    const char *name;
    int ndim;                       /* 0..STRIX_MAX_DIMS */
    int64_t shape[STRIX_MAX_DIMS];
    const float *data;
} strix_st_tensor;

/* One __metadata__ entry. */
typedef struct strix_st_meta {
    const char *key;
    const char *value;
} strix_st_meta;

/* Writes tensors[0..n) (in this order, consecutive in the data section) and meta[0..n_meta) to
 * `path` atomically (strix_write_file_atomic). STRIX_ERR_ARG for duplicate or empty names, a bad
 * rank or negative dims; STRIX_ERR_IO when the file cannot be written (the previous file at
 * `path`, if any, is then untouched). */
STRIX_API strix_status strix_safetensors_write(const char *path, const strix_st_tensor *tensors,
                                               int n, const strix_st_meta *meta, int n_meta);

/* A parsed, validated safetensors file, held in host memory. */
typedef struct strix_safetensors strix_safetensors;

/* Reads and validates the file at `path`. STRIX_ERR_IO when it cannot be read; STRIX_ERR_FORMAT
 * (message names the problem) for: a file shorter than 8 bytes, a header length past the end,
 * a header that is not a JSON object, malformed entries, a dtype other than F32 and I64, a rank
 * over 4, duplicate names, offsets past the end of the data, a size other than numel·itemsize,
 * overlapping tensors, holes or trailing bytes in the data section, non-string metadata. */
STRIX_API strix_status strix_safetensors_read(const char *path, strix_safetensors **out);

/* The same from `n` bytes in memory (copied; `bytes` may be freed afterwards). */
STRIX_API strix_status strix_safetensors_parse(const void *bytes, size_t n,
                                               strix_safetensors **out);

/* Tensors, in ascending order of their data offsets. i in [0, count). */
STRIX_API int strix_safetensors_count(const strix_safetensors *st);
STRIX_API const strix_st_tensor *strix_safetensors_at(const strix_safetensors *st, int i);
/* The tensor called `name`, or NULL. */
STRIX_API const strix_st_tensor *strix_safetensors_find(const strix_safetensors *st,
                                                        const char *name);
/* Metadata value of `key`, or NULL. */
STRIX_API const char *strix_safetensors_meta(const strix_safetensors *st, const char *key);
STRIX_API void strix_safetensors_free(strix_safetensors *st);

// ---- safetensors with int64 tensors (PyTorch's BatchNorm num_batches_tracked) -------------------

typedef enum strix_st_dtype { STRIX_ST_F32 = 0, STRIX_ST_I64 = 1 } strix_st_dtype;

/* strix_safetensors_write with a dtype per tensor (dtypes NULL: all F32). An I64 tensor's `data`
 * holds floats that must be whole numbers within ±2^53; they are written as little-endian int64
 * (STRIX_ERR_ARG otherwise). */
STRIX_API strix_status strix_safetensors_write_typed(const char *path,
                                                     const strix_st_tensor *tensors,
                                                     const strix_st_dtype *dtypes, int n,
                                                     const strix_st_meta *meta, int n_meta);

/* The dtype tensor t (a pointer from strix_safetensors_at/find of st) has in the file. The
 * reader accepts F32 and I64; an I64 tensor's values are converted to the nearest float on read
 * (exact up to 2^24 in magnitude), so t->data is float for both. */
STRIX_API strix_st_dtype strix_safetensors_dtype(const strix_safetensors *st,
                                                 const strix_st_tensor *t);

/* Writes the concatenation of chunks[0..n) (sizes in bytes) to `path` atomically: a temp file
 * "<path>.tmp.<pid>" is written, flushed and fsync'ed, renamed over `path`, and the directory is
 * fsync'ed. On any failure the temp file is removed, `path` is left as it was, and STRIX_ERR_IO is
 * returned naming the failing step. */
STRIX_API strix_status strix_write_file_atomic(const char *path, const void *const *chunks,
                                               const size_t *sizes, int n);

/* The temp file name strix_write_file_atomic uses for `path` in this process, into buf (cap
 * bytes; truncated if too small), so a caller can check before a long run that it can be
 * created. */
STRIX_API void strix_atomic_temp_path(const char *path, char *buf, size_t cap);

// ---- GPT checkpoint ----------------------------------------------------------------------------

#define STRIX_PATH_MAX 4096 /* longest path the atomic writer and the checkpoint accept */

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
