/*
 * explain.c - `strix explain`: loads a checkpoint, explains the model's next-character prediction
 * after --prompt with LRP (strix_gpt_explain: AttnLRP by default), prints the predicted character
 * with its probability, the prompt coloured by relevance, the top contributors and the relevance
 * sums, and writes the requested SVG / HTML / JSON files atomically.
 *
 * Rules (--rule): attnlrp = epsilon on every Linear, LayerNorm with its std held constant (LXT's
 * configuration, Achtibat et al. 2024); epsilon = the same with LayerNorm passing relevance
 * through; gamma and alpha-beta = those rules on the Linear layers, LayerNorm as attnlrp. All
 * keep strix_gpt_explain_defaults()'s bias convention (in the denominator, as LXT and Zennit).
 * The relevance shown per character is its token embedding's share; the position embeddings'
 * share enters the input sum.
 * Does not train, sample or modify the checkpoint; never writes over the checkpoint it reads.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "explain/heatmap.h" /* STRIX_OUTPUT_MARKER */
#include "render.h"
#include "strix/backend.h"
#include "strix/checkpoint.h"
#include "strix/lrp.h"
#include "tool.h"

typedef struct explain_flags {
    const char *model, *prompt, *target, *contrast, *rule, *svg, *html, *json, *color;
    const char *backend, *device;
    int top, threads, cols;
    float eps, gamma, alpha;
    bool one_hot;
} explain_flags;

#define NEXPLAIN_SPECS 18

static void explain_specs(explain_flags *f, arg_spec *s) {
    const arg_spec table[NEXPLAIN_SPECS] = {
        TOOL_MODEL_FLAG(f),
        FLAG("prompt", ARG_STRING, &f->prompt, 0, 0, 0, "TEXT",
             "text whose next character is explained (required, no default)"),
        FLAG("target", ARG_STRING, &f->target, 0, 0, 0, "C",
             "explain C's logit; one byte or \\n \\t \\r \\\\ \\xNN (default: the predicted)"),
        FLAG("contrast", ARG_STRING, &f->contrast, 0, 0, 0, "C",
             "explain logit(target) - logit(C) (default none)"),
        FLAG("rule", ARG_STRING, &f->rule, 0, 0, 0, "NAME",
             "attnlrp, epsilon, gamma or alpha-beta (default attnlrp)"),
        FLAG("eps", ARG_FLOAT, &f->eps, 0, 1e6, true, "E",
             "the rules' stabiliser epsilon (default 1e-6)"),
        FLAG("gamma", ARG_FLOAT, &f->gamma, 0, 1e6, 0, "G", "gamma of --rule gamma (default 0.25)"),
        FLAG("alpha", ARG_FLOAT, &f->alpha, 1, 1e6, 0, "A",
             "alpha of --rule alpha-beta; beta = alpha - 1 (default 2)"),
        FLAG("one-hot", ARG_SWITCH, &f->one_hot, 0, 0, 0, NULL,
             "seed 1 at the target instead of its logit, as Zennit/LXT (default off)"),
        FLAG("top", ARG_INT, &f->top, 0, 1 << 20, 0, "N",
             "list the N most relevant positions (default 10)"),
        FLAG("svg", ARG_STRING, &f->svg, 0, 0, 0, "FILE", "write an SVG picture (default none)"),
        FLAG("html", ARG_STRING, &f->html, 0, 0, 0, "FILE",
             "write a self-contained HTML page (default none)"),
        FLAG("json", ARG_STRING, &f->json, 0, 0, 0, "FILE",
             "write the relevances as JSON (default none)"),
        FLAG("cols", ARG_INT, &f->cols, 8, 4096, 0, "N",
             "characters per line in the SVG (default 64)"),
        FLAG("color", ARG_STRING, &f->color, 0, 0, 0, "WHEN",
             "auto (colour a terminal unless NO_COLOR is set), always, never (default auto)"),
        TOOL_RUN_FLAGS(f),
    };
    memcpy(s, table, sizeof table);
}

static void print_explain_help(const arg_spec *specs, int n) {
    printf("Usage: strix explain --model CKPT --prompt TEXT [--target C] [--contrast C]\n"
           "                     [--rule attnlrp|epsilon|gamma|alpha-beta] [--svg FILE]\n"
           "                     [--html FILE] [--json FILE] [--top N]\n"
           "\n"
           "Explains which characters of the prompt drove the model's prediction of the next\n"
           "character, with layer-wise relevance propagation (AttnLRP, Achtibat et al. 2024).\n"
           "Red: relevance for the explained character; blue: against it; the stronger the\n"
           "colour, the larger |R|. Without a terminal, or with NO_COLOR set, the prompt is\n"
           "printed as a table of positions and numbers instead.\n"
           "\n");
    args_print_help(stdout, specs, n);
    printf("\n"
           "A prompt longer than the model's block is cropped to its last block characters\n"
           "(the model's context); positions count from the start of the whole prompt.\n");
}

/* Reads a character flag: one byte, or the escapes \n \t \r \\ \xNN. Returns 0, or 2 after
 * printing the error line. */
static int parse_char(const char *flag, const char *s, unsigned char *out) {
    size_t n = strlen(s);
    if (n == 1) {
        *out = (unsigned char)s[0];
        return 0;
    }
    if (n == 2 && s[0] == '\\') {
        const char *from = "ntr\\", *to = "\n\t\r\\";
        const char *p = strchr(from, s[1]);
        if (p && s[1]) {
            *out = (unsigned char)to[p - from];
            return 0;
        }
    }
    if (n == 4 && s[0] == '\\' && s[1] == 'x') {
        char *end;
        long v = strtol(s + 2, &end, 16);
        if (!*end && s[2] != '-' && s[2] != '+' && v >= 0 && v <= 255) {
            *out = (unsigned char)v;
            return 0;
        }
    }
    fprintf(stderr, "strix explain: --%s expects one character or an escape \\n \\t \\r \\\\ "
                    "\\xNN (got '%s')\n", flag, s);
    return 2;
}

/* Whether paths a and b name the same existing file. */
static bool same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Whether an existing file at path may be replaced: an earlier output of strix explain (its
 * marker within the first 4 KiB) or an empty file. */
static bool replaceable(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char head[4097];
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    return n == 0 || strstr(head, STRIX_OUTPUT_MARKER) != NULL;
}

/* Checks the output paths before any work: none may be the checkpoint, a directory or an
 * existing file that strix explain did not write, and no two may be the same. Returns 0, or 2
 * after printing the error line. */
static int check_outputs(const explain_flags *f) {
    const char *flags[3] = {"svg", "html", "json"};
    const char *paths[3] = {f->svg, f->html, f->json};
    for (int i = 0; i < 3; i++) {
        if (!paths[i]) continue;
        struct stat st;
        if (!paths[i][0]) {
            fprintf(stderr, "strix explain: --%s needs a file name\n", flags[i]);
            return 2;
        }
        if (strcmp(paths[i], f->model) == 0 || same_file(paths[i], f->model)) {
            fprintf(stderr, "strix explain: --%s %s is the checkpoint; choose another file\n",
                    flags[i], paths[i]);
            return 2;
        }
        if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            fprintf(stderr, "strix explain: --%s %s is a directory\n", flags[i], paths[i]);
            return 2;
        }
        if (stat(paths[i], &st) == 0 && !replaceable(paths[i])) {
            fprintf(stderr, "strix explain: --%s %s exists and was not written by strix explain; "
                            "remove it or choose another name\n", flags[i], paths[i]);
            return 2;
        }
        char dir[4096];
        const char *slash = strrchr(paths[i], '/');
        size_t len = slash ? (size_t)(slash - paths[i]) : 0;
        snprintf(dir, sizeof dir, "%.*s", (int)len, paths[i]);
        if (slash && len > 0 && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
            fprintf(stderr, "strix explain: --%s %s: there is no directory %s\n", flags[i],
                    paths[i], dir);
            return 2;
        }
        for (int j = 0; j < i; j++) {
            if (paths[j] && (strcmp(paths[i], paths[j]) == 0 || same_file(paths[i], paths[j]))) {
                fprintf(stderr, "strix explain: --%s and --%s name the same file %s\n",
                        flags[j], flags[i], paths[i]);
                return 2;
            }
        }
    }
    return 0;
}

/* The rule of --rule (rule name checked by the caller). */
static strix_lrp_rule rule_of(const explain_flags *f) {
    strix_lrp_rule r = strix_gpt_explain_defaults().rule;
    if (strcmp(f->rule, "gamma") == 0) r = strix_lrp_gamma(f->gamma);
    else if (strcmp(f->rule, "alpha-beta") == 0) r = strix_lrp_alpha_beta(f->alpha, f->alpha - 1);
    r.epsilon = f->eps;
    r.bias_in_denominator = strix_gpt_explain_defaults().rule.bias_in_denominator;
    r.layer_norm_detach_std = strcmp(f->rule, "epsilon") != 0;
    return r;
}

/* One view rendered into memory and written to `path` atomically; which: 0 SVG, 1 HTML, 2 JSON.
 * Returns 0, or 1 after printing the error line. */
static int write_view(const char *path, int which, const render_explanation *re, int cols,
                      int top) {
    char *buf = NULL;
    size_t len = 0;
    int bad = 0;
    if (which == 2) {
        buf = render_json(re);
        len = buf ? strlen(buf) : 0;
        bad = !buf;
        if (buf) { // a JSON file ends with a newline like any text file
            char *nb = realloc(buf, len + 2);
            if (nb) {
                buf = nb;
                buf[len++] = '\n';
                buf[len] = '\0';
            }
        }
    } else {
        FILE *mem = open_memstream(&buf, &len);
        bad = !mem;
        if (mem) {
            bad = which == 0 ? render_svg(mem, re, cols) : render_html(mem, re, top);
            bad |= fclose(mem) != 0;
        }
    }
    strix_status s = bad ? strix_error(STRIX_ERR_ALLOC, "out of memory rendering %s", path)
                         : STRIX_OK;
    if (s == STRIX_OK) {
        const void *chunks[1] = {buf};
        size_t sizes[1] = {len};
        s = strix_write_file_atomic(path, chunks, sizes, 1);
    }
    free(buf);
    return s == STRIX_OK ? 0 : tool_fail(s);
}

/* Encodes the prompt, explains, prints and writes the files. */
static int explain(strix_gpt *g, const strix_vocab *vocab, const explain_flags *f,
                   int target_byte, int contrast_byte) {
    size_t n = strlen(f->prompt);
    int32_t *ids = malloc(n * sizeof *ids);
    if (!ids) return tool_fail(strix_error(STRIX_ERR_ALLOC, "out of memory"));
    strix_status s = strix_vocab_encode(vocab, (const unsigned char *)f->prompt, n, ids);
    if (s != STRIX_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", strix_last_error());
        free(ids);
        return tool_fail(strix_error(s, "prompt: %s of the model", msg));
    }
    strix_gpt_explain_config cfg = strix_gpt_explain_defaults();
    cfg.rule = rule_of(f);
    cfg.one_hot_seed = f->one_hot;
    cfg.target = target_byte >= 0 ? vocab->id_of[target_byte] : -1;
    cfg.contrast = contrast_byte >= 0 ? vocab->id_of[contrast_byte] : -1;
    strix_gpt_explanation ex = {0};
    s = strix_gpt_explain(g, ids, (int)n, &cfg, &ex);
    free(ids);
    if (s != STRIX_OK) return tool_fail(s);

    render_explanation re = {
        .text = (const unsigned char *)f->prompt, .offset = (int)n - ex.T, .n = ex.T,
        .relevance = ex.relevance, .relevance_position = ex.relevance_position,
        .softmax_gap = ex.softmax_gap,
        .predicted = vocab->bytes[ex.predicted], .predicted_prob = ex.predicted_prob,
        .target = vocab->bytes[ex.target], .target_prob = ex.target_prob,
        .target_logit = ex.target_logit, .contrast = contrast_byte, .rule = f->rule,
        .model = f->model, .sum_out = ex.relevance_out_sum, .sum_in = ex.relevance_in_sum};
    const char *nc = getenv("NO_COLOR");
    bool color = strcmp(f->color, "always") == 0 ||
                 (strcmp(f->color, "auto") == 0 && isatty(STDOUT_FILENO) && !(nc && nc[0]));
    char pg[8], tg[8], cg[8];
    render_glyph(re.predicted, false, pg);
    render_glyph(re.target, false, tg);
    const strix_gpt_config *mc = strix_gpt_config_of(g);
    printf("model %s: vocabulary %d, block %d, %d layer%s; rule %s\n", f->model, mc->vocab_size,
           mc->block_size, mc->n_layer, mc->n_layer == 1 ? "" : "s", f->rule);
    printf("next character: '%s' (p = %.4f)\n", pg, (double)re.predicted_prob);
    if (contrast_byte >= 0) {
        render_glyph((unsigned char)contrast_byte, false, cg);
        printf("explained: logit of '%s' minus logit of '%s'%s\n", tg, cg,
               f->one_hot ? ", seeded with +1 and -1" : "");
    } else {
        printf("explained: logit of '%s' = %.4f (p = %.4f)%s\n", tg, (double)re.target_logit,
               (double)re.target_prob, f->one_hot ? ", seeded with 1" : "");
    }
    if (re.offset > 0)
        printf("prompt cropped to its last %d characters (the model's context)\n", re.n);
    printf("\n");
    render_prompt(stdout, &re, color);
    if (color)
        printf("red: for '%s', blue: against; intensity |R| / max|R| (max %.4g)\n", tg,
               (double)render_max_abs(re.relevance, re.n));
    if (f->top > 0) {
        printf("\ntop %d contributors:\n", f->top < re.n ? f->top : re.n);
        render_top(stdout, &re, f->top);
    }
    char sums[200];
    render_sums(&re, sums, sizeof sums);
    printf("\n%s\n", sums);
    int rc = 0;
    const char *paths[3] = {f->svg, f->html, f->json};
    for (int k = 0; k < 3 && rc == 0; k++) {
        if (!paths[k]) continue;
        rc = write_view(paths[k], k, &re, f->cols, f->top > 0 ? f->top : 10);
        if (rc == 0) printf("wrote %s\n", paths[k]);
    }
    strix_gpt_explanation_free(&ex);
    errno = 0;
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
        fprintf(stderr, "strix: cannot write the explanation: %s\n",
                errno ? strerror(errno) : "write error on standard output");
        rc = 1;
    }
    return rc;
}

int cmd_explain(int argc, char **argv) {
    explain_flags f = {.rule = "attnlrp", .backend = "cpu", .color = "auto", .top = 10,
                       .cols = 64, .eps = 1e-6f, .gamma = 0.25f, .alpha = 2.0f};
    arg_spec specs[NEXPLAIN_SPECS];
    explain_specs(&f, specs);
    int rc = args_parse("explain", argc, argv, 2, specs, NEXPLAIN_SPECS);
    if (rc == 1) {
        print_explain_help(specs, NEXPLAIN_SPECS);
        return 0;
    }
    if (rc) return rc;
    if (!f.model) {
        fprintf(stderr, "strix explain: --model CKPT is required (a checkpoint from strix "
                        "train)\n");
        return 2;
    }
    if (!f.prompt || !f.prompt[0]) {
        fprintf(stderr, "strix explain: --prompt TEXT is required and must not be empty (the "
                        "prediction after it is explained)\n");
        return 2;
    }
    const char *rules[4] = {"attnlrp", "epsilon", "gamma", "alpha-beta"};
    bool known = false;
    for (int i = 0; i < 4; i++) known |= strcmp(f.rule, rules[i]) == 0;
    if (!known) {
        fprintf(stderr, "strix explain: unknown --rule '%s' (rules: attnlrp, epsilon, gamma, "
                        "alpha-beta)\n", f.rule);
        return 2;
    }
    if (strcmp(f.color, "auto") && strcmp(f.color, "always") && strcmp(f.color, "never")) {
        fprintf(stderr, "strix explain: --color takes auto, always or never (got '%s')\n",
                f.color);
        return 2;
    }
    unsigned char tb = 0, cb = 0;
    if (f.target && parse_char("target", f.target, &tb)) return 2;
    if (f.contrast && parse_char("contrast", f.contrast, &cb)) return 2;
    if (f.target && f.contrast && tb == cb) {
        fprintf(stderr, "strix explain: --contrast must differ from --target\n");
        return 2;
    }
    if (check_outputs(&f)) return 2;
    const char *backend = NULL;
    rc = args_backend_of("explain", f.device,
                         args_find(specs, NEXPLAIN_SPECS, "backend")->seen ? f.backend : NULL,
                         &backend);
    if (rc) return rc;

    tool_model m = {0};
    strix_status s = strix_checkpoint_open(f.model, &m.ck);
    const strix_vocab *vocab = s == STRIX_OK ? &strix_checkpoint_info_of(m.ck)->vocab : NULL;
    const char *names[2] = {"target", "contrast"};
    const unsigned char bytes[2] = {tb, cb};
    const bool given[2] = {f.target != NULL, f.contrast != NULL};
    for (int k = 0; k < 2 && s == STRIX_OK; k++) {
        if (given[k] && vocab->id_of[bytes[k]] < 0) {
            char g8[8];
            render_glyph(bytes[k], false, g8);
            s = strix_error(STRIX_ERR_ARG, "--%s '%s' is not in the model's vocabulary",
                            names[k], g8);
        }
    }
    if (s == STRIX_OK) s = tool_model_load(&m, backend, f.threads);
    rc = s == STRIX_OK ? explain(m.g, vocab, &f, f.target ? tb : -1, f.contrast ? cb : -1)
                       : tool_fail(s);
    tool_model_free(&m);
    return rc;
}
