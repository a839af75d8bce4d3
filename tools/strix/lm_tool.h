/*
 * lm_tool.h - what `strix generate`, `strix chat` and `strix explain --model DIR|FILE.gguf`
 * share: the flags that open a Llama-family model (strix/llama.h), loading it with a report of
 * time and memory, the prompt (--prompt or --prompt-file), tokenizing, the chat template and
 * the end ids of a generation.
 *
 * Functions that can fail print one line "strix <cmd>: ..." and return the exit code (1 at run
 * time, 2 for a usage error); 0 on success.
 */
#ifndef STRIX_TOOL_LM_TOOL_H
#define STRIX_TOOL_LM_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strix/chat.h"
#include "strix/llama.h"
#include "strix/textgen.h"
#include "strix/tokenizer.h"

typedef struct lm_tool_flags {
    const char *model, *backend;
    int threads, max_context;
} lm_tool_flags;

/* The flags of lm_tool_flags (LM_TOOL_NFLAGS table rows). */
#define LM_TOOL_NFLAGS 4
#define LM_TOOL_FLAGS(f)                                                                         \
    FLAG("model", ARG_STRING, &(f)->model, 0, 0, 0, "PATH",                                      \
         "a Hugging Face folder (config.json + safetensors) or a .gguf file (required)"),        \
        FLAG("max-context", ARG_INT, &(f)->max_context, 0, 1 << 20, 0, "N",                      \
             "positions of the KV cache; 0 = the model's, at most 4096 (default 0)"),            \
        FLAG("threads", ARG_INT, &(f)->threads, 0, 4096, 0, "N",                                 \
             "CPU threads, 0 = all (default 0)"),                                                \
        FLAG("backend", ARG_STRING, &(f)->backend, 0, 0, 0, "NAME",                              \
             "cpu or cpu-blas (default cpu)")

/* --prompt, --prompt-file and --chat into the given fields (three table rows). */
#define LM_TOOL_PROMPT_FLAGS(prompt_, file_, chat_, prompt_help)                                 \
    FLAG("prompt", ARG_STRING, prompt_, 0, 0, 0, "TEXT", prompt_help),                           \
        FLAG("prompt-file", ARG_STRING, file_, 0, 0, 0, "FILE",                                  \
             "read the prompt from FILE; - reads standard input (no default)"),                  \
        FLAG("chat", ARG_SWITCH, chat_, 0, 0, 0, NULL,                                           \
             "wrap the prompt as one user message in the model's chat template")

typedef struct lm_tool {
    strix_llama *model;
    const strix_tokenizer *tok;
    strix_chat_template chat;
    bool has_chat;
    int32_t eos[STRIX_LLAMA_MAX_EOS + 3];
    int n_eos;
    const char *path;       /* --model */
    double load_seconds;
} lm_tool;

void lm_tool_defaults(lm_tool_flags *f);
/* Whether path names a Llama-family model rather than a strix checkpoint: a folder (a Hugging
 * Face model's), a name ending in .gguf (even a missing one, so that the error is the model's),
 * or a regular file that starts with "GGUF". */
bool lm_tool_is_model_path(const char *path);
/* Loads f->model (threads and backend from f). Refuses a model without a tokenizer. */
int lm_tool_open(lm_tool *lm, const char *cmd, const lm_tool_flags *f);
/* One line on stderr: architecture, parameters, layers, context, load time, peak RSS so far
 * and its bytes per parameter. Printed once the input is checked, so that an error stays the
 * only line. */
void lm_tool_report(const lm_tool *lm);
void lm_tool_close(lm_tool *lm);
/* The prompt from --prompt TEXT or --prompt-file FILE (- = stdin), exactly one of them, into a
 * malloc'd NUL-terminated *text (*len bytes; a NUL byte inside is refused). */
int lm_tool_read_prompt(const char *cmd, const char *prompt, const char *file, char **text,
                        size_t *len);
/* Tokenizes text (special tokens written in it become their ids; add_special: the tokenizer's
 * BOS rule). An empty result is refused ("the prompt is empty"). */
int lm_tool_encode(lm_tool *lm, const char *cmd, const char *text, size_t len, bool add_special,
                   int32_t **ids, size_t *n);
/* Refuses a model whose chat template strix does not know. */
int lm_tool_check_chat(lm_tool *lm, const char *cmd);
/* msgs through the chat template into a malloc'd *text. */
int lm_tool_render_chat(lm_tool *lm, const char *cmd, const strix_chat_message *msgs, size_t n,
                        char **text);
/* c->eos: the model's end ids, the tokenizer's and the chat template's end token. */
void lm_tool_set_eos(lm_tool *lm, strix_textgen_config *c);
/* The process's peak resident memory so far, in MB (getrusage). */
double lm_tool_peak_rss_mb(void);
/* A generator over the model's KV cache. */
int lm_tool_textgen(lm_tool *lm, strix_textgen **g);

#endif
