/*
 * strix/chat.h - turning a conversation into the prompt text a chat model was trained on.
 *
 * Models ship their chat template as a Jinja program (tokenizer_config.json's or GGUF's
 * `tokenizer.chat_template`). strix does not run Jinja: it recognises the two layouts the
 * supported models use and renders them itself, equal to transformers' apply_chat_template(...,
 * add_generation_prompt=True) for those templates (tests/test_chat.c holds the goldens):
 *   - ChatML (SmolLM2, Qwen2/2.5): "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
 *     "<|im_start|>assistant\n". When the template inserts a fixed system message before a
 *     conversation that has none (SmolLM2: "You are a helpful AI assistant named SmolLM, trained
 *     by Hugging Face"), that text is read from the template and inserted too.
 *   - Llama 3 (without a date header): "<|begin_of_text|>", then per message
 *     "<|start_header_id|>{role}<|end_header_id|>\n\n{content, trimmed}<|eot_id|>", then
 *     "<|start_header_id|>assistant<|end_header_id|>\n\n".
 * Any other template is refused by name ("not a template strix knows").
 */
#ifndef STRIX_CHAT_H
#define STRIX_CHAT_H

#include <stddef.h>

#include "strix/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum strix_chat_format { STRIX_CHAT_CHATML = 1, STRIX_CHAT_LLAMA3 } strix_chat_format;

typedef struct strix_chat_message {
    const char *role;    /* "system", "user", "assistant" */
    const char *content; /* UTF-8 */
} strix_chat_message;

typedef struct strix_chat_template {
    strix_chat_format format;
    char *default_system; /* inserted when the conversation has no system message; NULL: none */
    char *end;            /* the text that ends an assistant turn ("<|im_end|>", "<|eot_id|>") */
} strix_chat_template;

/* Recognises a Jinja chat template (len bytes). STRIX_ERR_UNSUPPORTED naming what it is not
 * ("chat template: not ChatML or Llama 3"); STRIX_ERR_ALLOC. Free with strix_chat_template_free. */
STRIX_API strix_status strix_chat_template_parse(const char *jinja, size_t len,
                                                 strix_chat_template *out);
STRIX_API void strix_chat_template_free(strix_chat_template *t);

/* The prompt for msgs[0..n) followed by the assistant's generation prompt, into *text (malloc'd,
 * NUL-terminated; the caller frees). STRIX_ERR_ARG for a message without a role or content, or
 * a role with a character the layout cannot hold (a newline); STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_chat_render(const strix_chat_template *t,
                                         const strix_chat_message *msgs, size_t n, char **text);

#ifdef __cplusplus
}
#endif

#endif
