/*
 * strix/state_dict.h - a model's parameters and buffers as a PyTorch state dict in a safetensors
 * file, under PyTorch's dotted names ("0.weight", "features.3.running_mean"), so a state dict
 * saved from a PyTorch model of the same architecture loads unchanged, and a file saved here
 * loads into PyTorch (load_state_dict after safetensors.torch.load_file).
 *
 * dtypes: every tensor is F32 except BatchNorm's num_batches_tracked, which PyTorch keeps as a
 * 0-dim int64: it is written as a 0-dim I64 and read from one. Since strix has no 0-dim
 * parameters, a 0-dim tensor in a file matches a parameter of shape (1). Tied parameters are
 * stored once, under the name declared first; on load a tied name is optional and, if present,
 * ignored (its storage is loaded under the first name).
 *
 * Built on strix/safetensors.h. Not here: optimizer state (the GPT checkpoint has its own format),
 * sharded sets (load each shard of a strix_st_set with strix_state_dict_apply, not strict), other
 * dtypes (a parameter stored as F16 or BF16 is refused, not converted).
 */
#ifndef STRIX_STATE_DICT_H
#define STRIX_STATE_DICT_H

#include "strix/params.h"
#include "strix/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- state dicts -------------------------------------------------------------------------------

/* Writes every parameter and buffer of ps (tied names once) to `path` atomically, in declaration
 * order, with __metadata__ {"format": "pt"}. STRIX_ERR_IO (a previous file is untouched),
 * STRIX_ERR_ALLOC, backend errors. */
STRIX_API strix_status strix_state_dict_save(const strix_params *ps, const char *path);

/* Loads the parameters and buffers of ps from a parsed file (opened lazily or not: tensors without
 * float data are converted one at a time on the way to the device). Every tensor is checked before
 * anything is copied, so a failed load leaves ps unchanged:
 *   - a parameter absent from the file: STRIX_ERR_FORMAT ("missing key") when strict; kept as
 *     it is otherwise;
 *   - a file tensor that is no parameter of ps: STRIX_ERR_FORMAT ("unexpected key") when
 *     strict; ignored otherwise;
 *   - a shape that differs: STRIX_ERR_SHAPE (also when not strict, as in PyTorch);
 *   - a dtype other than the parameter's (F32; I64 for num_batches_tracked): STRIX_ERR_FORMAT.
 * The message names the first offending tensor. */
STRIX_API strix_status strix_state_dict_apply(strix_params *ps, const strix_safetensors *st,
                                              bool strict);

/* strix_safetensors_read(path) then strix_state_dict_apply. Adds STRIX_ERR_IO and the reader's
 * STRIX_ERR_FORMAT for unreadable or malformed files. The file is memory-mapped and read lazily. */
STRIX_API strix_status strix_state_dict_load(strix_params *ps, const char *path, bool strict);

#ifdef __cplusplus
}
#endif
#endif
