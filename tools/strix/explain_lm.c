/*
 * explain_lm.c - `strix explain --model DIR|FILE.gguf`: AttnLRP of a Llama-family model's next
 * token (strix_llama_explain, LXT's rules) back to the prompt's tokens, shown with the char
 * GPT's views (render.h) with tokens as cells, or words with --words (render_group_words).
 *
 * --target TEXT explains the logit of TEXT's first token instead of the predicted one (e.g.
 * " Paris"; the line says when TEXT is several tokens); --contrast TEXT explains the difference
 * to another token's logit. --generate N explains N tokens in turn: each step explains the
 * predicted (greedy) token, appends it to the prompt and goes on, so every generated token gets
 * its own explanation over everything before it; with output files, step k writes
 * NAME-k.EXT. --chat wraps the prompt as one user message in the model's chat template.
 * Timing goes to standard error ("explained in X s"). Does not write the model.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "explain_out.h"
#include "lm_tool.h"
#include "render.h"
#include "tool.h"

typedef struct lm_explain_flags {
    lm_tool_flags lm;
    const char *prompt, *prompt_file, *target, *contrast, *svg, *html, *json, *color;
    int top, cols, generate;
    bool words, chat, force;
} lm_explain_flags;

#define NLMEX_SPECS (LM_TOOL_NFLAGS + 14)

static void lm_explain_specs(lm_explain_flags *f, arg_spec *s) {
    const arg_spec table[] = {
        LM_TOOL_FLAGS(&f->lm),
        LM_TOOL_PROMPT_FLAGS(&f->prompt, &f->prompt_file, &f->chat,
                             "text whose next token is explained (this or --prompt-file; no "
                             "default)"),
        FLAG("target", ARG_STRING, &f->target, 0, 0, 0, "TEXT",
             "explain the logit of TEXT's first token (e.g. \" Paris\"; default: the predicted "
             "token)"),
        FLAG("contrast", ARG_STRING, &f->contrast, 0, 0, 0, "TEXT",
             "explain target's logit minus the logit of TEXT's first token (default none)"),
        FLAG("generate", ARG_INT, &f->generate, 1, 4096, 0, "N",
             "explain N tokens in turn, each appended greedily before the next (default 1)"),
        FLAG("words", ARG_SWITCH, &f->words, 0, 0, 0, NULL,
             "merge the tokens into words (a word starts at whitespace) in every view"),
        FLAG("top", ARG_INT, &f->top, 0, 1 << 20, 0, "N",
             "list the N most relevant tokens (default 10; 0 = none)"),
        EXPLAIN_VIEW_FLAGS(f),
        FLAG("cols", ARG_INT, &f->cols, 8, 4096, 0, "N",
             "characters per line of the SVG picture (default 80)"),
        FLAG("force", ARG_SWITCH, &f->force, 0, 0, 0, NULL,
             "replace existing --svg/--html/--json files that strix explain did not write"),
    };
    _Static_assert(sizeof table / sizeof table[0] == NLMEX_SPECS, "NLMEX_SPECS");
    memcpy(s, table, sizeof table);
}

/* The token bytes of ids[0..n) concatenated (*text, malloc'd) and each token's start offset
 * (start, n + 1 entries, malloc'd). */
static int token_spans(const strix_tokenizer *tok, const int32_t *ids, size_t n,
                       unsigned char **text, int **start) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += strix_tokenizer_token_bytes(tok, ids[i], NULL, 0);
    *text = malloc(total + 1);
    *start = malloc((n + 1) * sizeof **start);
    if (!*text || !*start || total > (size_t)1 << 30) {
        free(*text);
        free(*start);
        *text = NULL;
        *start = NULL;
        tool_fail(strix_error(STRIX_ERR_ALLOC, "out of memory"));
        return 1;
    }
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        (*start)[i] = (int)at;
        at += strix_tokenizer_token_bytes(tok, ids[i], (char *)*text + at, total - at);
    }
    (*start)[n] = (int)at;
    (*text)[at] = '\0';
    return 0;
}

/* The bytes of token id as a NUL-terminated malloc'd string. */
static char *token_text(const strix_tokenizer *tok, int32_t id) {
    size_t len = strix_tokenizer_token_bytes(tok, id, NULL, 0);
    char *s = malloc(len + 1);
    if (s) {
        strix_tokenizer_token_bytes(tok, id, s, len);
        s[len] = '\0';
    }
    return s;
}

/* The first token of TEXT (--target / --contrast) into *id. */
static int first_token(lm_tool *lm, const char *flag, const char *text, int32_t *id) {
    int32_t *ids = NULL;
    size_t n = 0;
    strix_status s = strix_tokenizer_encode(lm->tok, text, strlen(text), false, true, &ids, &n);
    if (s != STRIX_OK || n == 0) {
        fprintf(stderr, "strix explain: --%s '%s': %s\n", flag, text,
                s != STRIX_OK ? strix_last_error() : "no tokens");
        free(ids);
        return 2;
    }
    *id = ids[0];
    if (n > 1) {
        char *t = token_text(lm->tok, ids[0]), shown[128];
        render_text((const unsigned char *)(t ? t : "?"), (int)strlen(t ? t : "?"), false, 24,
                    shown, sizeof shown);
        fprintf(stderr, "strix explain: note: --%s '%s' is %zu tokens; explaining its first, "
                        "'%s'\n", flag, text, n, shown);
        free(t);
    }
    free(ids);
    return 0;
}

/* PATH with "-k" before its extension (step k of --generate), or PATH itself for one step. */
static char *step_path(const char *path, int k, int steps) {
    if (!path) return NULL;
    size_t len = strlen(path) + 16;
    char *out = malloc(len);
    if (!out) return NULL;
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (steps == 1) snprintf(out, len, "%s", path);
    else if (dot && (!slash || dot > slash))
        snprintf(out, len, "%.*s-%d%s", (int)(dot - path), path, k, dot);
    else snprintf(out, len, "%s-%d", path, k);
    return out;
}

/* The output files of every step (NAME-k.EXT with --generate N) checked before any work. */
static int check_step_outputs(const lm_explain_flags *f) {
    for (int k = 1; k <= f->generate; k++) {
        char *p[3] = {step_path(f->svg, k, f->generate), step_path(f->html, k, f->generate),
                      step_path(f->json, k, f->generate)};
        int rc = 0;
        if ((f->svg && !p[0]) || (f->html && !p[1]) || (f->json && !p[2]))
            rc = tool_fail(strix_error(STRIX_ERR_ALLOC, "out of memory"));
        const char *paths[3] = {p[0], p[1], p[2]};
        if (!rc) rc = explain_check_outputs("explain", f->lm.model, f->prompt_file, f->force,
                                            paths);
        for (int i = 0; i < 3; i++) free(p[i]);
        if (rc) return rc;
    }
    return 0;
}

/* Softmax probability of id in logits[0..V) (max subtracted, double). */
static double prob_of(const float *logits, int V, int32_t id) {
    float mx = logits[0];
    for (int i = 1; i < V; i++)
        if (logits[i] > mx) mx = logits[i];
    double s = 0.0;
    for (int i = 0; i < V; i++) s += exp((double)logits[i] - mx);
    return exp((double)logits[id] - mx) / s;
}

/* Prints and writes one explained step. */
static int show(const lm_explain_flags *f, render_explanation *re, int step, bool color) {
    char pt[128], tt[128], ct[128];
    render_text((const unsigned char *)re->predicted_text, (int)strlen(re->predicted_text),
                false, 24, pt, sizeof pt);
    render_text((const unsigned char *)re->target_text, (int)strlen(re->target_text), false, 24,
                tt, sizeof tt);
    if (f->generate > 1) printf("\n== step %d of %d ==\n", step, f->generate);
    printf("next token: '%s' (p = %.4f)\n", pt, (double)re->predicted_prob);
    if (re->contrast_text) {
        render_text((const unsigned char *)re->contrast_text, (int)strlen(re->contrast_text),
                    false, 24, ct, sizeof ct);
        printf("explained: logit of '%s' minus logit of '%s' = %.4f (%.4f - %.4f)\n", tt, ct,
               (double)re->target_logit - (double)re->contrast_logit, (double)re->target_logit,
               (double)re->contrast_logit);
    } else {
        printf("explained: logit of '%s' = %.4f (p = %.4f)\n", tt, (double)re->target_logit,
               (double)re->target_prob);
    }
    printf("\n");
    render_prompt(stdout, re, color);
    if (f->top > 0) {
        printf("\ntop %d %ss:\n", f->top < re->n ? f->top : re->n, re->unit);
        render_top(stdout, re, f->top);
    }
    char sums[256];
    render_sums(re, sums, sizeof sums);
    printf("\n%s\n", sums);
    const char *paths[3] = {f->svg, f->html, f->json};
    for (int k = 0; k < 3; k++) {
        char *p = step_path(paths[k], step, f->generate);
        if (paths[k] && !p) return tool_fail(strix_error(STRIX_ERR_ALLOC, "out of memory"));
        int rc = p ? explain_write_view(p, k, re, f->cols, f->top > 0 ? f->top : 10) : 0;
        if (p && rc == 0) printf("wrote %s\n", p);
        free(p);
        if (rc) return rc;
    }
    return 0;
}

/* One step: explains the next token after ids[0..n) and shows it; *next is the predicted id. */
static int explain_step(lm_tool *lm, const lm_explain_flags *f, const int32_t *ids, size_t n,
                        int32_t target, int32_t contrast, float *rel, float *logits, int step,
                        bool color, int32_t *next) {
    int V = strix_llama_get_config(lm->model)->vocab_size;
    strix_llama_explain_info info;
    double t0 = tool_now();
    strix_status s = strix_llama_explain(lm->model, ids, n, target, contrast, rel, &info);
    if (s == STRIX_ERR_ARG && contrast >= 0 && target < 0 && info.argmax == contrast) {
        fprintf(stderr, "strix explain: --contrast is the predicted token; name another one, "
                        "or the token to explain with --target\n");
        return 2;
    }
    if (s == STRIX_OK) /* the cache holds ids: recompute the last position for probabilities */
        s = strix_llama_decode(lm->model, n - 1, ids + n - 1, 1, logits);
    if (s != STRIX_OK) return tool_fail(s);
    double secs = tool_now() - t0;
    *next = info.argmax;
    unsigned char *text = NULL;
    int *start = NULL;
    int rc = token_spans(lm->tok, ids, n, &text, &start);
    if (rc) return rc;
    const int32_t out_ids[3] = {info.argmax, info.target, contrast};
    bool *alone = malloc(n * sizeof *alone); /* special tokens stay words of their own */
    for (size_t i = 0; alone && i < n; i++) alone[i] = strix_tokenizer_is_special(lm->tok, ids[i]);
    char *pred = token_text(lm->tok, info.argmax), *tgt = token_text(lm->tok, info.target);
    char *con = contrast >= 0 ? token_text(lm->tok, contrast) : NULL;
    render_explanation re = {
        .text = text, .offset = 0, .n_bytes = start[n], .n = (int)n, .start = start,
        .relevance = rel, .unit = "token", .predicted_text = pred, .target_text = tgt,
        .contrast_text = con, .cell_ids = ids, .cell_alone = alone, .contrast = -1,
        .output_ids = out_ids,
        .predicted_prob = (float)prob_of(logits, V, info.argmax),
        .target_prob = (float)prob_of(logits, V, info.target), .target_logit = info.target_logit,
        .contrast_logit = info.contrast_logit, .rule = "attnlrp", .method = "lrp",
        .baseline_output = NAN, .conserved_sum = info.explained, .model = f->lm.model,
        .sum_out = info.relevance_out_sum, .sum_in = info.relevance_in_sum, .softmax_gap = NAN};
    if (!pred || !tgt || (contrast >= 0 && !con) || !alone)
        rc = tool_fail(strix_error(STRIX_ERR_ALLOC, "out of memory"));
    if (!rc && f->words && render_group_words(&re, rel, NULL) != 0)
        rc = tool_fail(strix_error(STRIX_ERR_ALLOC, "out of memory"));
    if (!rc) rc = show(f, &re, step, color);
    if (f->words && re.start != start) render_group_free(&re);
    fprintf(stderr, "strix: explained the next token after %zu tokens in %.3f s (peak RSS %.0f "
                    "MB)\n", n, secs, lm_tool_peak_rss_mb());
    free(pred);
    free(tgt);
    free(con);
    free(alone);
    free(text);
    free(start);
    return rc;
}

int cmd_explain_lm(int argc, char **argv) {
    lm_explain_flags f;
    memset(&f, 0, sizeof f);
    lm_tool_defaults(&f.lm);
    f.top = 10;
    f.cols = 80;
    f.generate = 1;
    f.color = "auto";
    arg_spec specs[NLMEX_SPECS];
    lm_explain_specs(&f, specs);
    int rc = args_parse("explain", argc, argv, 2, specs, NLMEX_SPECS);
    if (rc == 1) {
        printf("Usage: strix explain --model DIR|FILE.gguf (--prompt TEXT | --prompt-file FILE|-)\n"
               "                     [--target TEXT] [--contrast TEXT] [--generate N] [--words]\n"
               "                     [--chat] [--svg FILE] [--html FILE] [--json FILE] [--top N]\n"
               "\n"
               "Explains which tokens of the prompt drove a Llama-family model's next token, with\n"
               "AttnLRP (Achtibat et al. 2024) in LXT's rules: relevance flows from the explained\n"
               "logit back to each prompt token's embedding. Red: for the explained token; blue:\n"
               "against it. --generate N explains N tokens in turn (each appended greedily);\n"
               "output files of step k are NAME-k.EXT.\n\n");
        args_print_help(stdout, specs, NLMEX_SPECS);
        return 0;
    }
    if (rc) return rc;
    if (strcmp(f.color, "auto") != 0 && strcmp(f.color, "always") != 0 &&
        strcmp(f.color, "never") != 0) {
        fprintf(stderr, "strix explain: --color %s: use auto, always or never\n", f.color);
        return 2;
    }
    if ((rc = check_step_outputs(&f))) return rc;
    char *prompt = NULL;
    size_t len = 0;
    if ((rc = lm_tool_read_prompt("explain", f.prompt, f.prompt_file, &prompt, &len))) return rc;
    lm_tool lm = {0};
    if ((rc = lm_tool_open(&lm, "explain", &f.lm))) {
        free(prompt);
        return rc;
    }
    char *text = prompt;
    if (f.chat) {
        strix_chat_message m = {.role = "user", .content = prompt};
        rc = lm_tool_render_chat(&lm, "explain", &m, 1, &text);
    }
    int32_t *ids = NULL, target = -1, contrast = -1;
    size_t n = 0;
    if (!rc) rc = lm_tool_encode(&lm, "explain", text, strlen(text), !f.chat, &ids, &n);
    if (!rc && f.target) rc = first_token(&lm, "target", f.target, &target);
    if (!rc && f.contrast) rc = first_token(&lm, "contrast", f.contrast, &contrast);
    if (!rc && f.generate > 1 && (f.target || f.contrast)) {
        fprintf(stderr, "strix explain: --target and --contrast name one prediction; --generate "
                        "explains the predicted token of every step\n");
        rc = 2;
    }
    if (!rc && target >= 0 && target == contrast) {
        fprintf(stderr, "strix explain: --target and --contrast are the same token\n");
        rc = 2;
    }
    size_t max_ctx = strix_llama_max_context(lm.model);
    if (!rc && n + (size_t)f.generate - 1 > max_ctx) {
        if (f.generate > 1)
            fprintf(stderr, "strix explain: the prompt (%zu tokens) and %d generated tokens "
                            "exceed the context of %zu (--max-context)\n", n, f.generate - 1,
                    max_ctx);
        else
            fprintf(stderr, "strix explain: the prompt has %zu tokens; the context holds %zu "
                            "(--max-context)\n", n, max_ctx);
        rc = 2;
    }
    if (!rc) lm_tool_report(&lm);
    int V = strix_llama_get_config(lm.model)->vocab_size;
    int32_t *all = rc ? NULL : malloc((n + (size_t)f.generate) * sizeof *all);
    float *rel = rc ? NULL : malloc((n + (size_t)f.generate) * sizeof *rel);
    float *logits = rc ? NULL : malloc((size_t)V * sizeof *logits);
    if (!rc && (!all || !rel || !logits))
        rc = tool_fail(strix_error(STRIX_ERR_ALLOC, "out of memory"));
    const char *nc = getenv("NO_COLOR");
    bool color = strcmp(f.color, "always") == 0 ||
                 (strcmp(f.color, "auto") == 0 && isatty(STDOUT_FILENO) && !(nc && nc[0]));
    if (!rc) memcpy(all, ids, n * sizeof *ids);
    for (int k = 1; !rc && k <= f.generate; k++) {
        int32_t next = -1;
        rc = explain_step(&lm, &f, all, n, k == 1 ? target : -1, k == 1 ? contrast : -1, rel,
                          logits, k, color, &next);
        all[n++] = next;
    }
    if (!rc && f.generate > 1) {
        char *gen = NULL;
        size_t glen = 0;
        size_t first = n - (size_t)f.generate;
        if (strix_tokenizer_decode(lm.tok, all + first, (size_t)f.generate, false, &gen,
                                   &glen) == STRIX_OK) {
            printf("\ngenerated: %s\n", gen);
            free(gen);
        }
    }
    if (fflush(stdout) != 0 && !rc) {
        fprintf(stderr, "strix explain: cannot write the explanation\n");
        rc = 1;
    }
    free(all);
    free(rel);
    free(logits);
    free(ids);
    if (text != prompt) free(text);
    free(prompt);
    lm_tool_close(&lm);
    return rc;
}
