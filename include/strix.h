/*
 * strix.h - the whole public API of strix in one include. Each part has its own header under
 * strix/ (core, tensor, backend and its ops/, params, safetensors, nn, layers, recurrent, mamba,
 * rwkv, retnet, fuzzy, loss, optim, state_dict, lrp, attribution, train, logic, gpt, gpt_train,
 * seqlm, lm, sample, data, checkpoint, rl, gguf, tokenizer, llama, textgen, chat); include only
 * what you use if you prefer.
 * examples/tiny_gpt.c and examples/digits.c are complete, commented programs.
 */
#ifndef STRIX_H
#define STRIX_H

#include "strix/core.h"
#include "strix/tensor.h"
#include "strix/backend.h"
#include "strix/params.h"
#include "strix/safetensors.h"
#include "strix/gguf.h"
#include "strix/tokenizer.h"
#include "strix/nn.h"
#include "strix/layers.h"
#include "strix/recurrent.h"
#include "strix/mamba.h"
#include "strix/retnet.h"
#include "strix/rwkv.h"
#include "strix/fuzzy.h"
#include "strix/loss.h"
#include "strix/optim.h"
#include "strix/train.h"
#include "strix/logic.h"
#include "strix/gpt.h"
#include "strix/gpt_train.h"
#include "strix/seqlm.h"
#include "strix/lm.h"
#include "strix/sample.h"
#include "strix/data.h"
#include "strix/checkpoint.h"
#include "strix/state_dict.h"
#include "strix/lrp.h"
#include "strix/attribution.h"
#include "strix/rl.h"
#include "strix/llama.h"
#include "strix/textgen.h"
#include "strix/chat.h"

#endif
