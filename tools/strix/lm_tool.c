/*
 * lm_tool.c - opening a Llama-family model for the strix command and the steps its subcommands
 * share (lm_tool.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "args.h"
#include "lm_tool.h"
#include "tool.h"

#define PROMPT_MAX (64u << 20) /* a prompt file larger than this is refused */

void lm_tool_defaults(lm_tool_flags *f) { memset(f, 0, sizeof *f); }

bool lm_tool_is_model_path(const char *path) {
    struct stat st;
    size_t n = path ? strlen(path) : 0;
    if (n > 5 && strcmp(path + n - 5, ".gguf") == 0) return true; /* even when missing */
    if (!path || stat(path, &st) != 0) return false;
    if (S_ISDIR(st.st_mode)) return true; /* checkpoints are files; a folder is a model's */
    if (!S_ISREG(st.st_mode)) return false;
    FILE *fp = fopen(path, "rb");
    char magic[4] = {0};
    bool gguf = fp && fread(magic, 1, 4, fp) == 4 && memcmp(magic, "GGUF", 4) == 0;
    if (fp) fclose(fp);
    return gguf;
}

double lm_tool_peak_rss_mb(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : 0.0;
}

int lm_tool_open(lm_tool *lm, const char *cmd, const lm_tool_flags *f) {
    memset(lm, 0, sizeof *lm);
    if (!f->model) {
        fprintf(stderr, "strix %s: --model PATH is required (a Hugging Face folder or a .gguf "
                        "file)\n", cmd);
        return 2;
    }
    const char *be = f->backend ? f->backend : "cpu";
    if (strcmp(be, "cpu") != 0 && strcmp(be, "cpu-blas") != 0) {
        fprintf(stderr, "strix %s: --backend %s: this command runs on cpu or cpu-blas\n", cmd, be);
        return 2;
    }
    tool_warn_threads(f->threads);
    strix_set_num_threads(f->threads);
    strix_llama_options opt = {.backend = be, .max_context = f->max_context};
    double t0 = tool_now();
    strix_status s = strix_llama_load(f->model, &opt, &lm->model);
    if (s != STRIX_OK) {
        fprintf(stderr, "strix %s: %s\n", cmd, strix_last_error());
        return 1;
    }
    lm->load_seconds = tool_now() - t0;
    lm->path = f->model;
    lm->tok = strix_llama_tokenizer(lm->model);
    if (!lm->tok) {
        fprintf(stderr, "strix %s: %s has no tokenizer (tokenizer.json or GGUF tokenizer "
                        "metadata)\n", cmd, f->model);
        lm_tool_close(lm);
        return 1;
    }
    const char *tpl = strix_llama_chat_template(lm->model);
    lm->has_chat = tpl && strix_chat_template_parse(tpl, strlen(tpl), &lm->chat) == STRIX_OK;
    return 0;
}

void lm_tool_report(const lm_tool *lm) {
    const strix_llama_config *c = strix_llama_get_config(lm->model);
    size_t params = strix_llama_parameter_count(lm->model);
    double rss = lm_tool_peak_rss_mb();
    fprintf(stderr, "strix: %s: %s, %.1f M parameters (%d layers, d %d, %d/%d heads), context "
                    "%zu; loaded in %.2f s, peak RSS %.0f MB (%.2f bytes per parameter)\n",
            lm->path, c->architecture, (double)params / 1e6, c->num_layers, c->hidden_size,
            c->num_heads, c->num_kv_heads, strix_llama_max_context(lm->model), lm->load_seconds,
            rss, params ? rss * 1048576.0 / (double)params : 0.0);
}

void lm_tool_close(lm_tool *lm) {
    if (lm->has_chat) strix_chat_template_free(&lm->chat);
    strix_llama_free(lm->model);
    memset(lm, 0, sizeof *lm);
}

int lm_tool_read_prompt(const char *cmd, const char *prompt, const char *file, char **text,
                        size_t *len) {
    *text = NULL;
    *len = 0;
    if (!!prompt == !!file) {
        fprintf(stderr, "strix %s: give the prompt with --prompt TEXT or --prompt-file FILE "
                        "(one of them)\n", cmd);
        return 2;
    }
    if (prompt) {
        *len = strlen(prompt);
        *text = malloc(*len + 1);
        if (!*text) return tool_fail(strix_error(STRIX_ERR_ALLOC, "out of memory"));
        memcpy(*text, prompt, *len + 1);
        return 0;
    }
    struct stat st;
    if (strcmp(file, "-") != 0 && stat(file, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "strix %s: --prompt-file %s is a directory\n", cmd, file);
        return 2;
    }
    FILE *fp = strcmp(file, "-") == 0 ? stdin : fopen(file, "rb");
    if (!fp) {
        fprintf(stderr, "strix %s: cannot read --prompt-file %s: %s\n", cmd, file,
                strerror(errno));
        return 1;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    bool big = false;
    while (buf && !big) {
        if (n + 1 >= cap) {
            char *b = realloc(buf, cap * 2);
            if (!b) break;
            buf = b;
            cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - n - 1, fp);
        n += k;
        big = n > PROMPT_MAX;
        if (k == 0) break;
    }
    bool err = ferror(fp) || !buf;
    int why = errno;
    if (fp != stdin) fclose(fp);
    if (err || big) {
        free(buf);
        if (big) fprintf(stderr, "strix %s: --prompt-file %s is over %u MB\n", cmd, file,
                         PROMPT_MAX >> 20);
        else fprintf(stderr, "strix %s: cannot read --prompt-file %s: %s\n", cmd, file,
                     buf ? strerror(why) : "out of memory");
        return big ? 2 : 1;
    }
    buf[n] = '\0';
    if (strlen(buf) != n) {
        free(buf);
        fprintf(stderr, "strix %s: --prompt-file %s holds a NUL byte\n", cmd, file);
        return 2;
    }
    *text = buf;
    *len = n;
    return 0;
}

int lm_tool_encode(lm_tool *lm, const char *cmd, const char *text, size_t len, bool add_special,
                   int32_t **ids, size_t *n) {
    strix_status s = strix_tokenizer_encode(lm->tok, text, len, add_special, true, ids, n);
    if (s != STRIX_OK) {
        fprintf(stderr, "strix %s: the prompt: %s\n", cmd, strix_last_error());
        return 2;
    }
    if (*n == 0) {
        free(*ids);
        *ids = NULL;
        fprintf(stderr, "strix %s: the prompt is empty\n", cmd);
        return 2;
    }
    return 0;
}

int lm_tool_check_chat(lm_tool *lm, const char *cmd) {
    if (lm->has_chat) return 0;
    const char *tpl = strix_llama_chat_template(lm->model);
    strix_chat_template t;
    strix_status s = strix_chat_template_parse(tpl, tpl ? strlen(tpl) : 0, &t);
    if (s == STRIX_OK) strix_chat_template_free(&t);
    fprintf(stderr, "strix %s: %s\n", cmd, strix_last_error());
    return 1;
}

int lm_tool_render_chat(lm_tool *lm, const char *cmd, const strix_chat_message *msgs, size_t n,
                        char **text) {
    int rc = lm_tool_check_chat(lm, cmd);
    if (rc) return rc;
    strix_status s = strix_chat_render(&lm->chat, msgs, n, text);
    if (s != STRIX_OK) {
        fprintf(stderr, "strix %s: %s\n", cmd, strix_last_error());
        return 2;
    }
    return 0;
}

static void add_eos(lm_tool *lm, int32_t id) {
    if (id < 0) return;
    for (int i = 0; i < lm->n_eos; i++)
        if (lm->eos[i] == id) return;
    if (lm->n_eos < (int)(sizeof lm->eos / sizeof lm->eos[0])) lm->eos[lm->n_eos++] = id;
}

void lm_tool_set_eos(lm_tool *lm, strix_textgen_config *c) {
    const strix_llama_config *mc = strix_llama_get_config(lm->model);
    lm->n_eos = 0;
    for (int i = 0; i < mc->n_eos; i++) add_eos(lm, mc->eos_token_ids[i]);
    add_eos(lm, strix_tokenizer_eos(lm->tok));
    if (lm->has_chat && lm->chat.end)
        add_eos(lm, strix_tokenizer_token_id(lm->tok, lm->chat.end, strlen(lm->chat.end)));
    c->eos = lm->eos;
    c->n_eos = lm->n_eos;
}

static strix_status decode(void *model, size_t keep, const int32_t *ids, size_t n,
                           float *logits) {
    return strix_llama_decode(model, keep, ids, n, logits);
}

int lm_tool_textgen(lm_tool *lm, strix_textgen **g) {
    const strix_llama_config *c = strix_llama_get_config(lm->model);
    strix_decoder d = {.model = lm->model, .decode = decode, .vocab = c->vocab_size,
                       .max_context = strix_llama_max_context(lm->model)};
    strix_status s = strix_textgen_new(&d, lm->tok, g);
    return s == STRIX_OK ? 0 : tool_fail(s);
}
