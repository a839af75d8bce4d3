/*
 * generate.c - `strix generate` and `strix chat`: a Llama-family model (a Hugging Face folder or a
 * GGUF file, strix/llama.h) continues a prompt, or holds a conversation in its chat template,
 * streaming each token's bytes to standard output as it is drawn.
 *
 * Generation is the library's (strix/textgen.h: KV cache, repetition penalty, temperature,
 * top-k, top-p, min-p in transformers' order, end ids, stop strings; the same tokens for the
 * same seed); chat templates are strix/chat.h's. generate prints only the new text (--echo puts
 * the prompt first); a summary line (tokens, speed, why it stopped) goes to standard error.
 * chat reads one user message per line of standard input (Ctrl-D ends it, exit 0), renders the
 * whole conversation each turn and decodes only what the KV cache does not hold yet.
 * Does not write any file.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "lm_tool.h"
#include "strix/chat.h"
#include "strix/textgen.h"
#include "tool.h"

typedef struct gen_flags {
    lm_tool_flags lm;
    const char *prompt, *prompt_file, *stop, *system;
    int max_new, top_k;
    float temperature, top_p, min_p, penalty;
    uint64_t seed;
    bool echo, chat_template, quiet, ignore_eos;
} gen_flags;

#define GEN_SAMPLING_FLAGS(f, max_new_help)                                                      \
    FLAG("max-new-tokens", ARG_INT, &(f)->max_new, 0, 1 << 24, 0, "N", max_new_help),             \
        FLAG("temperature", ARG_FLOAT, &(f)->temperature, 0, 1e6, 0, "T",                        \
             "softmax temperature; 0 = greedy, ties to the lower id (default 0)"),               \
        FLAG("top-k", ARG_INT, &(f)->top_k, 0, 1 << 30, 0, "K",                                  \
             "sample among the K most likely tokens; 0 = off (default 0)"),                      \
        FLAG("top-p", ARG_FLOAT, &(f)->top_p, 0, 1, true, "P",                                   \
             "nucleus: the smallest set of tokens holding mass P; 1 = off (default 1)"),         \
        FLAG("min-p", ARG_FLOAT, &(f)->min_p, 0, 1, 0, "P",                                      \
             "drop tokens less likely than P times the most likely; 0 = off (default 0)"),       \
        FLAG("repetition-penalty", ARG_FLOAT, &(f)->penalty, 0, 1e6, true, "R",                  \
             "divide (multiply) the logits of tokens already in the context; 1 = off "           \
             "(default 1)"),                                                                     \
        FLAG("seed", ARG_U64, &(f)->seed, 0, 1e300, 0, "N", "seed of the draws (default 0)"),    \
        FLAG("stop", ARG_STRING, &(f)->stop, 0, 0, 0, "TEXT",                                    \
             "end once the generated text contains TEXT (default none)"),                        \
        FLAG("quiet", ARG_SWITCH, &(f)->quiet, 0, 0, 0, NULL,                                    \
             "no loading and summary lines on standard error")

#define NGEN_SPECS (LM_TOOL_NFLAGS + 14)
#define NCHAT_SPECS (LM_TOOL_NFLAGS + 10)

static void gen_defaults(gen_flags *f) {
    memset(f, 0, sizeof *f);
    lm_tool_defaults(&f->lm);
    f->max_new = 256;
    f->top_p = 1.0f;
    f->penalty = 1.0f;
}

/* Checks of values the flag table cannot express (a float that rounds to 0, an empty stop
 * string, a one-position context). Returns 0, or 2 after the error line. */
static int gen_check(const char *cmd, const gen_flags *f) {
    const char *bad = !(f->top_p > 0.0f) ? "--top-p must be > 0"
                      : !(f->penalty > 0.0f) ? "--repetition-penalty must be > 0"
                      : f->stop && !f->stop[0] ? "--stop needs a non-empty TEXT"
                      : f->lm.max_context == 1 ? "--max-context must be 0 (the model's) or >= 2"
                                               : NULL;
    if (bad) fprintf(stderr, "strix %s: %s\n", cmd, bad);
    else if (f->temperature == 0.0f && (f->top_k > 0 || f->top_p < 1.0f || f->min_p > 0.0f))
        fprintf(stderr, "strix %s: note: --top-k, --top-p and --min-p act only when sampling "
                        "(--temperature > 0); this run is greedy\n", cmd);
    return bad ? 2 : 0;
}

static strix_textgen_config gen_config(const gen_flags *f) {
    strix_textgen_config c = strix_textgen_config_default();
    c.sampler.temperature = f->temperature;
    c.sampler.top_k = f->top_k;
    c.sampler.top_p = f->top_p;
    c.sampler.min_p = f->min_p;
    c.repetition_penalty = f->penalty;
    c.max_new_tokens = f->max_new;
    c.seed = f->seed;
    return c;
}

/* Bytes at the end of t[0..n) that begin a UTF-8 character not complete yet (0-3). */
static size_t utf8_pending(const char *t, size_t n) {
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char c = (unsigned char)t[n - k];
        if ((c & 0xC0) == 0x80) continue; /* a continuation byte: look further back */
        size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return need > k ? k : 0;
    }
    return 0;
}

/* Streams the generation started on g: each token's bytes to stdout as drawn, holding back a
 * character that is not complete yet (a generation that ends inside one shows U+FFFD there, as
 * the tokenizer's decode does). Returns 0, or 1 after an error line. *why is the reason it
 * stopped. */
static int stream(strix_textgen *g, strix_textgen_stop *why, size_t *tokens) {
    size_t printed = 0, len = 0;
    *tokens = 0;
    for (;;) {
        int32_t id;
        strix_status s = strix_textgen_next(g, &id, why);
        const char *text = strix_textgen_text(g, &len);
        bool end = s != STRIX_OK || *why != STRIX_TEXTGEN_RUNNING;
        size_t ready = len - utf8_pending(text, len);
        if (ready > printed) fwrite(text + printed, 1, ready - printed, stdout);
        printed = ready > printed ? ready : printed;
        if (end && len > printed) fputs("\xEF\xBF\xBD", stdout); /* U+FFFD */
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "strix: cannot write the generated text: %s\n", strerror(errno));
            return 1;
        }
        if (s != STRIX_OK) return tool_fail(s);
        if (id >= 0) (*tokens)++;
        if (end) return 0;
    }
}

static void summary(const gen_flags *f, size_t prompt_n, double prompt_s, size_t n, double s,
                    strix_textgen_stop why) {
    if (f->quiet) return;
    fprintf(stderr, "\n[prompt %zu tokens in %.2f s (%.1f tokens/s); generated %zu tokens in "
                    "%.2f s (%.1f tokens/s); stopped: %s; peak RSS %.0f MB]\n",
            prompt_n, prompt_s, prompt_s > 0 ? (double)prompt_n / prompt_s : 0.0, n, s,
            s > 0 ? (double)n / s : 0.0, strix_textgen_stop_name(why), lm_tool_peak_rss_mb());
}

static void generate_specs(gen_flags *f, arg_spec *s) {
    const arg_spec table[] = {
        LM_TOOL_FLAGS(&f->lm),
        LM_TOOL_PROMPT_FLAGS(&f->prompt, &f->prompt_file, &f->chat_template,
                             "text to continue (this or --prompt-file; no default)"),
        FLAG("echo", ARG_SWITCH, &f->echo, 0, 0, 0, NULL, "print the prompt before the new text"),
        FLAG("ignore-eos", ARG_SWITCH, &f->ignore_eos, 0, 0, 0, NULL,
             "go on past end-of-sequence tokens (benchmarks: always --max-new-tokens)"),
        GEN_SAMPLING_FLAGS(f, "tokens to generate at most (default 256)"),
    };
    _Static_assert(sizeof table / sizeof table[0] == NGEN_SPECS, "NGEN_SPECS");
    memcpy(s, table, sizeof table);
}

int cmd_generate(int argc, char **argv) {
    gen_flags f;
    gen_defaults(&f);
    arg_spec specs[NGEN_SPECS];
    generate_specs(&f, specs);
    int rc = args_parse("generate", argc, argv, 2, specs, NGEN_SPECS);
    if (rc == 1) {
        printf("usage: strix generate --model DIR|FILE.gguf --prompt TEXT [flags]\n\n"
               "Continues TEXT with a Llama-family language model (Llama, SmolLM2, Qwen2/2.5, "
               "Qwen3; a Hugging Face\nfolder or a GGUF file), printing each token as it is "
               "drawn. Greedy unless --temperature > 0.\n\n");
        args_print_help(stdout, specs, NGEN_SPECS);
        return 0;
    }
    if (rc || (rc = gen_check("generate", &f))) return rc;
    char *prompt = NULL;
    size_t prompt_len = 0;
    if ((rc = lm_tool_read_prompt("generate", f.prompt, f.prompt_file, &prompt, &prompt_len)))
        return rc;
    lm_tool lm = {0};
    if ((rc = lm_tool_open(&lm, "generate", &f.lm))) {
        free(prompt);
        return rc;
    }
    char *text = prompt; /* what is tokenized: the prompt, or it in the chat template */
    bool special = false;
    if (f.chat_template) {
        strix_chat_message m = {.role = "user", .content = prompt};
        rc = lm_tool_render_chat(&lm, "generate", &m, 1, &text);
        special = true;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    if (!rc) rc = lm_tool_encode(&lm, "generate", text, strlen(text), !special, &ids, &n);
    strix_textgen_config c = gen_config(&f);
    const char *stops[1] = {f.stop};
    c.stop = stops;
    c.n_stop = f.stop ? 1 : 0;
    lm_tool_set_eos(&lm, &c);
    if (f.ignore_eos) c.n_eos = 0;
    strix_textgen *g = NULL;
    if (!rc) rc = lm_tool_textgen(&lm, &g);
    if (!rc && n >= strix_llama_max_context(lm.model)) {
        fprintf(stderr, "strix generate: the prompt has %zu tokens; the context holds %zu "
                        "(--max-context)\n", n, strix_llama_max_context(lm.model));
        rc = 2;
    }
    if (!rc && !f.quiet) lm_tool_report(&lm);
    if (!rc) {
        if (f.echo) {
            fwrite(prompt, 1, prompt_len, stdout);
            fflush(stdout);
        }
        double t0 = tool_now();
        strix_status s = strix_textgen_start(g, &c, ids, n);
        double t1 = tool_now();
        strix_textgen_stop why = STRIX_TEXTGEN_RUNNING;
        size_t made = 0;
        rc = s != STRIX_OK ? tool_fail(s) : stream(g, &why, &made);
        if (!rc) {
            fputc('\n', stdout);
            summary(&f, n, t1 - t0, made, tool_now() - t1, why);
        }
    }
    strix_textgen_free(g);
    free(ids);
    if (text != prompt) free(text);
    free(prompt);
    lm_tool_close(&lm);
    return rc;
}

// ---- chat --------------------------------------------------------------------------------------

static void chat_specs(gen_flags *f, arg_spec *s) {
    const arg_spec table[] = {
        LM_TOOL_FLAGS(&f->lm),
        FLAG("system", ARG_STRING, &f->system, 0, 0, 0, "TEXT",
             "system message (default: the template's own, if it has one)"),
        GEN_SAMPLING_FLAGS(f, "tokens of each reply at most (default 1024)"),
    };
    _Static_assert(sizeof table / sizeof table[0] == NCHAT_SPECS, "NCHAT_SPECS");
    memcpy(s, table, sizeof table);
}

/* One line of stdin without its line end into *line (getline's buffer), its length in *len.
 * Returns 1 for a line, 0 at the end of input, -1 after the error line of a read error. */
static int read_line(char **line, size_t *cap, size_t *len) {
    errno = 0;
    ssize_t k = getline(line, cap, stdin);
    if (k < 0) {
        if (!ferror(stdin)) return 0;
        fprintf(stderr, "strix chat: cannot read standard input: %s\n", strerror(errno));
        return -1;
    }
    while (k > 0 && ((*line)[k - 1] == '\n' || (*line)[k - 1] == '\r')) (*line)[--k] = '\0';
    *len = (size_t)k;
    return 1;
}

/* Whether s holds nothing but whitespace. */
static bool blank(const char *s) {
    for (; *s; s++)
        if (!strchr(" \t\v\f\r\n", *s)) return false;
    return true;
}

/* The conversation: messages with owned contents. */
typedef struct convo {
    strix_chat_message *m;
    size_t n, cap;
} convo;

static bool convo_add(convo *c, const char *role, const char *content, size_t len) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        strix_chat_message *m = realloc(c->m, cap * sizeof *m);
        if (!m) return false;
        c->m = m;
        c->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return false;
    memcpy(copy, content, len);
    copy[len] = '\0';
    c->m[c->n++] = (strix_chat_message){.role = role, .content = copy};
    return true;
}

static void convo_free(convo *c) {
    for (size_t i = 0; i < c->n; i++) free((char *)c->m[i].content);
    free(c->m);
}

/* Checks a message alone (valid UTF-8, as the tokenizer wants it); 0, or 2 after the line. */
static int check_message(lm_tool *lm, const char *what, const char *text, size_t len) {
    if (strlen(text) != len) {
        fprintf(stderr, "strix chat: %s holds a NUL byte; not sent\n", what);
        return 2;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    strix_status s = strix_tokenizer_encode(lm->tok, text, len, false, true, &ids, &n);
    free(ids);
    if (s == STRIX_OK) return 0;
    fprintf(stderr, "strix chat: %s: %s; not sent\n", what, strix_last_error());
    return 2;
}

/* One turn: the whole conversation through the template, tokenized, generated after; the reply
 * joins the conversation as the tokenizer decodes its ids (a reply cut inside a character gets
 * U+FFFD, so the next turn's text stays valid UTF-8). Returns 0; 2 after the line of a message
 * that cannot be sent (the caller drops it); 1 after a failure that ends the chat. */
static int chat_turn(lm_tool *lm, const gen_flags *f, strix_textgen *g,
                     const strix_textgen_config *c, convo *cv) {
    char *text = NULL;
    int rc = lm_tool_render_chat(lm, "chat", cv->m, cv->n, &text);
    int32_t *ids = NULL;
    size_t n = 0;
    if (!rc) rc = lm_tool_encode(lm, "chat", text, strlen(text), false, &ids, &n);
    free(text);
    if (rc) return 2;
    if (n >= strix_llama_max_context(lm->model)) {
        free(ids);
        fprintf(stderr, "strix chat: the conversation has %zu tokens; the context holds %zu "
                        "(--max-context); message not sent\n", n,
                strix_llama_max_context(lm->model));
        return 2;
    }
    strix_status s = strix_textgen_start(g, c, ids, n);
    free(ids);
    if (s != STRIX_OK) return tool_fail(s);
    double t1 = tool_now();
    strix_textgen_stop why;
    size_t made = 0;
    rc = stream(g, &why, &made);
    fputc('\n', stdout);
    fflush(stdout);
    if (rc) return 1;
    size_t all;
    const int32_t *ctx = strix_textgen_ids(g, &all);
    char *reply = NULL;
    size_t len = 0;
    s = strix_tokenizer_decode(lm->tok, ctx + n, all - n, true, &reply, &len);
    if (s != STRIX_OK || !convo_add(cv, "assistant", reply, len)) {
        free(reply);
        return tool_fail(s != STRIX_OK ? s : strix_error(STRIX_ERR_ALLOC, "chat: out of memory"));
    }
    free(reply);
    if (!f->quiet && why != STRIX_TEXTGEN_EOS)
        fprintf(stderr, "[reply ended: %s after %zu tokens (%.1f tokens/s)]\n",
                strix_textgen_stop_name(why), made, made / (tool_now() - t1 + 1e-9));
    return 0;
}

int cmd_chat(int argc, char **argv) {
    gen_flags f;
    gen_defaults(&f);
    f.max_new = 1024;
    arg_spec specs[NCHAT_SPECS];
    chat_specs(&f, specs);
    int rc = args_parse("chat", argc, argv, 2, specs, NCHAT_SPECS);
    if (rc == 1) {
        printf("usage: strix chat --model DIR|FILE.gguf [--system TEXT] [flags]\n\n"
               "A conversation with a chat model in its own chat template (ChatML: SmolLM2, "
               "Qwen; Llama 3): one user\nmessage per line of standard input, the reply "
               "streamed after it; Ctrl-D ends. --max-new-tokens\nbounds each reply "
               "(default 1024).\n\n");
        args_print_help(stdout, specs, NCHAT_SPECS);
        return 0;
    }
    if (rc || (rc = gen_check("chat", &f))) return rc;
    lm_tool lm = {0};
    if ((rc = lm_tool_open(&lm, "chat", &f.lm))) return rc;
    strix_textgen_config c = gen_config(&f);
    const char *stops[1] = {f.stop};
    c.stop = stops;
    c.n_stop = f.stop ? 1 : 0;
    lm_tool_set_eos(&lm, &c);
    strix_textgen *g = NULL;
    convo cv = {0};
    rc = lm_tool_check_chat(&lm, "chat");
    if (!rc) rc = lm_tool_textgen(&lm, &g);
    if (!rc && f.system) rc = check_message(&lm, "--system", f.system, strlen(f.system));
    if (!rc && !f.quiet) lm_tool_report(&lm);
    if (!rc && f.system && !convo_add(&cv, "system", f.system, strlen(f.system)))
        rc = tool_fail(strix_error(STRIX_ERR_ALLOC, "chat: out of memory"));
    bool tty = isatty(STDIN_FILENO);
    char *line = NULL;
    size_t cap = 0, len = 0;
    while (!rc) {
        if (tty) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        int got = read_line(&line, &cap, &len);
        if (got <= 0) {
            rc = got < 0 ? 1 : 0;
            break;
        }
        if (blank(line) || check_message(&lm, "the message", line, len)) continue;
        if (!convo_add(&cv, "user", line, len)) {
            rc = tool_fail(strix_error(STRIX_ERR_ALLOC, "chat: out of memory"));
            break;
        }
        rc = chat_turn(&lm, &f, g, &c, &cv);
        if (rc == 2) { /* the message could not be sent: drop it, go on */
            free((char *)cv.m[--cv.n].content);
            rc = 0;
        }
    }
    if (tty && !rc) fputc('\n', stdout);
    free(line);
    convo_free(&cv);
    strix_textgen_free(g);
    lm_tool_close(&lm);
    return rc;
}
