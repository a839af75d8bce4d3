/*
 * explain.c - `strix explain`: loads a checkpoint, explains the model's next-character prediction
 * after the prompt (--prompt TEXT, or --prompt-file FILE, `-` for standard input) with
 * strix_lm_explain (--method: LRP by default - AttnLRP for a GPT, each block's own rules for a
 * sequence model -, or gradient × input, integrated gradients, saliency), prints the predicted character with its probability, the prompt coloured by
 * relevance per character (the bytes of one UTF-8 character merged), the top contributors, the
 * relevance sums (a warning when a method that should conserve relevance is off by more than
 * 25 % or has the opposite sign), optionally a deletion check (--deletion K), and writes the
 * requested SVG / HTML / JSON files atomically.
 *
 * Methods (--method): lrp = AttnLRP with --rule; gradient-x-input, integrated-gradients (zero
 * token embeddings as the baseline, --ig-steps Gauss-Legendre points, Captum's default method)
 * and saliency (Σ over d_model of |gradient|) attribute to the token embeddings, the position
 * embeddings held fixed (strix/gpt.h). The conservation warning is given for lrp (the seed should
 * reach the input) and integrated-gradients (completeness: the input sum should be f(x) −
 * f(baseline)); gradient × input and saliency promise no sum, so they get none.
 *
 * Deletion check (--deletion K, after Samek et al. 2017's "pixel flipping" and examples/digits
 * --deletion): the K characters of largest relevance (most in favour of the explained output;
 * ties: the lower position) are removed from the prompt (the rest closes up, as ERASER's
 * comprehensiveness removes tokens; a replacement byte such as a space would leave a relevant
 * space in place) and the explained output of the shorter prompt recomputed, exactly what
 * `strix explain --prompt` of that prompt with --target would report; the same for K random
 * characters, drawn without repetition from the explained characters by a strix_rng seeded with
 * --seed, averaged over 10 draws. Both drops (output before − after) are printed and written to
 * the JSON file. K must leave at least one explained character.
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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "explain_out.h"
#include "lm_tool.h"
#include "explain/heatmap.h" /* STRIX_OUTPUT_MARKER */
#include "render.h"
#include "strix/backend.h"
#include "strix/checkpoint.h"
#include "strix/lrp.h"
#include "tool.h"

typedef struct explain_flags {
    const char *model, *prompt, *target, *contrast, *rule, *svg, *html, *json, *color;
    const char *backend, *device, *method, *prompt_file;
    int top, threads, cols, ig_steps, deletion;
    uint64_t seed;
    float eps, gamma, alpha;
    bool one_hot, force;
    char *prompt_buf;   /* the prompt read from --prompt-file (owned) */
    size_t prompt_len;  /* bytes of the prompt */
} explain_flags;

#define NEXPLAIN_SPECS 24
#define DELETION_DRAWS 10       /* random deletions averaged by --deletion */
#define PROMPT_FILE_MAX (64u << 20) /* a --prompt-file larger than this is refused */

static void explain_specs(explain_flags *f, arg_spec *s) {
    const arg_spec table[NEXPLAIN_SPECS] = {
        TOOL_MODEL_FLAG(f),
        FLAG("prompt", ARG_STRING, &f->prompt, 0, 0, 0, "TEXT",
             "text whose next character is explained (this or --prompt-file; no default)"),
        FLAG("prompt-file", ARG_STRING, &f->prompt_file, 0, 0, 0, "FILE",
             "read the prompt from FILE, every byte as is; - reads standard input (no default)"),
        FLAG("method", ARG_STRING, &f->method, 0, 0, 0, "NAME",
             "lrp, gradient-x-input, integrated-gradients or saliency (default lrp)"),
        FLAG("ig-steps", ARG_INT, &f->ig_steps, 1, 100000, 0, "N",
             "Gauss-Legendre points of integrated-gradients, from zero token embeddings "
             "(default 50, as Captum)"),
        FLAG("target", ARG_STRING, &f->target, 0, 0, 0, "C",
             "explain C's logit; one byte or \\n \\t \\r \\\\ \\xNN (default: the predicted)"),
        FLAG("contrast", ARG_STRING, &f->contrast, 0, 0, 0, "C",
             "explain logit(target) - logit(C) (default none)"),
        FLAG("rule", ARG_STRING, &f->rule, 0, 0, 0, "NAME",
             "LRP rules: attnlrp, epsilon, gamma or alpha-beta (default attnlrp)"),
        FLAG("eps", ARG_FLOAT, &f->eps, 0, 1e6, true, "E",
             "the rules' stabiliser epsilon (default 1e-6)"),
        FLAG("gamma", ARG_FLOAT, &f->gamma, 0, 1e6, 0, "G", "gamma of --rule gamma (default 0.25)"),
        FLAG("alpha", ARG_FLOAT, &f->alpha, 1, 1e6, 0, "A",
             "alpha of --rule alpha-beta; beta = alpha - 1 (default 2)"),
        FLAG("one-hot", ARG_SWITCH, &f->one_hot, 0, 0, 0, NULL,
             "LRP: seed 1 at the target instead of its logit, as Zennit/LXT (default off)"),
        FLAG("top", ARG_INT, &f->top, 0, 1 << 20, 0, "N",
             "list the N most relevant positions (default 10)"),
        EXPLAIN_VIEW_FLAGS(f),
        FLAG("cols", ARG_INT, &f->cols, 8, 4096, 0, "N",
             "characters per line in the SVG (default 64)"),
        FLAG("deletion", ARG_INT, &f->deletion, 0, 1 << 20, 0, "K",
             "delete the K most relevant and K random characters, report the drops (default 0: "
             "none)"),
        FLAG("seed", ARG_U64, &f->seed, 0, 1e300, 0, "S",
             "seed of --deletion's random characters (default 0)"),
        FLAG("force", ARG_SWITCH, &f->force, 0, 0, 0, NULL,
             "replace --svg/--html/--json files that strix explain did not write (default off)"),
        TOOL_RUN_FLAGS(f),
    };
    memcpy(s, table, sizeof table);
}

static void print_explain_help(const arg_spec *specs, int n) {
    printf("Usage: strix explain --model CKPT (--prompt TEXT | --prompt-file FILE|-)\n"
           "                     [--method lrp|gradient-x-input|integrated-gradients|saliency]\n"
           "                     [--rule attnlrp|epsilon|gamma|alpha-beta] [--target C]\n"
           "                     [--contrast C] [--deletion K] [--svg FILE] [--html FILE]\n"
           "                     [--json FILE] [--force] [--top N]\n"
           "\n"
           "Explains which characters of the prompt drove the model's prediction of the next\n"
           "character, with layer-wise relevance propagation (AttnLRP, Achtibat et al. 2024) or\n"
           "a gradient method (on the token embeddings; each character's value is the sum over\n"
           "the embedding; saliency sums |gradient|). Red: relevance for the explained\n"
           "character; blue: against it; the stronger the colour, the larger |R|. Without a\n"
           "terminal, or with NO_COLOR set, the prompt is printed as a table of positions and\n"
           "numbers instead. A warning says when lrp or integrated-gradients relevance at the\n"
           "input is off from what it should sum to by more than 25 %% or has the wrong sign.\n"
           "\n");
    args_print_help(stdout, specs, n);
    printf("\n"
           "A GPT's prompt longer than its block is cropped to its last block characters (the\n"
           "model's context); a sequence model (--arch other than gpt) reads the whole prompt\n"
           "into its state, as in sampling, and takes the epsilon rules only (attnlrp, epsilon).\n"
           "Positions count bytes from the start of the whole prompt.\n"
           "The bytes of one UTF-8 character are shown as that character, their relevance\n"
           "summed. --deletion removes the characters from the prompt (the rest closes up)\n"
           "and averages %d random draws.\n"
           "\n"
           "A Llama-family model (--model DIR with config.json, or FILE.gguf) is explained per\n"
           "token instead, with its own flags: strix explain --model FILE.gguf --help.\n",
           DELETION_DRAWS);
}

/* The value of --model in argv (either form), or NULL. */
static const char *model_arg(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) return argv[i + 1];
        if (strncmp(argv[i], "--model=", 8) == 0) return argv[i] + 8;
    }
    return NULL;
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

/* The method of --method (checked by the caller). */
static strix_gpt_explain_method method_of(const char *name) {
    if (strcmp(name, "gradient-x-input") == 0) return STRIX_GPT_EXPLAIN_GRADIENT_X_INPUT;
    if (strcmp(name, "integrated-gradients") == 0) return STRIX_GPT_EXPLAIN_INTEGRATED_GRADIENTS;
    if (strcmp(name, "saliency") == 0) return STRIX_GPT_EXPLAIN_SALIENCY;
    return STRIX_GPT_EXPLAIN_LRP;
}

/* Prints the conservation warning when the method promises a sum (lrp: the seed; integrated
 * gradients: f(x) − f(baseline)) and the input sum is off from it by more than 25 % or has the
 * opposite sign. */
static void warn_conservation(const strix_gpt_explanation *ex, bool ig) {
    double want = ex->conserved_sum, got = ex->relevance_in_sum;
    if (isnan(want)) return;
    const char *what = ig ? "f(x) - f(baseline)" : "the explained output";
    const char *why = ig ? "more --ig-steps bring integrated gradients closer"
                         : "LRP's bias and softmax rules do not conserve relevance exactly";
    if ((want < 0 && got > 0) || (want > 0 && got < 0)) {
        fprintf(stderr, "strix: warning: the input relevance sum %.6g has the opposite sign of "
                        "%s %.6g (%s)\n", got, what, want, why);
    } else if (fabs(got - want) > 0.25 * fabs(want)) {
        fprintf(stderr, "strix: warning: the input relevance sum %.6g differs from %s %.6g by "
                        "%.0f%% (%s)\n", got, what, want,
                want != 0.0 ? 100.0 * fabs(got - want) / fabs(want) : 100.0, why);
    }
}

/* ids (n, the whole prompt) without the characters i of re that have gone[i], into out;
 * returns its length. */
static int drop_chars(const int32_t *ids, int n, const render_explanation *re, const bool *gone,
                      int32_t *out) {
    int m = 0;
    for (int b = 0; b < re->start[0]; b++) out[m++] = ids[b];
    for (int i = 0; i < re->n; i++)
        for (int b = re->start[i]; b < re->start[i + 1] && !gone[i]; b++) out[m++] = ids[b];
    for (int b = re->start[re->n]; b < n; b++) out[m++] = ids[b];
    return m;
}

/* The deletion check of --deletion (render_deletion) on ids (n, the whole prompt); re's
 * characters and relevance give the order. Returns 0, 1 after a library error or 2 after a
 * usage error, the line printed. */
static int deletion_check(strix_lm *g, const explain_flags *f,
                          int32_t *ids, int n, const render_explanation *re,
                          const strix_gpt_explain_config *cfg, render_deletion *d, int *positions) {
    int K = f->deletion, N = re->n;
    if (K >= N) {
        fprintf(stderr, "strix explain: --deletion %d must be below the %d characters explained "
                        "(one must stay)\n", K, N);
        return 2;
    }
    int *order = malloc(sizeof(int) * (size_t)N);
    int32_t *work = malloc(sizeof(int32_t) * (size_t)n);
    bool *gone = malloc(sizeof(bool) * (size_t)N);
    if (!order || !work || !gone) {
        free(gone);
        free(order);
        free(work);
        return tool_fail(strix_error(STRIX_ERR_ALLOC, "out of memory"));
    }
    // the K largest relevances (stable: ties keep the lower position first; NaN last)
    for (int i = 0; i < N; i++) order[i] = i;
    for (int k = 0; k < K; k++) {
        int best = k;
        for (int j = k + 1; j < N; j++) {
            float a = re->relevance[order[j]], b = re->relevance[order[best]];
            if (a > b || (isnan(b) && !isnan(a))) best = j;
        }
        int t = order[k];
        order[k] = order[best];
        order[best] = t;
    }
    strix_status s = strix_lm_explain_output(g, ids, n, cfg, &d->before);
    memset(gone, 0, sizeof(bool) * (size_t)N);
    for (int k = 0; k < K; k++) {
        positions[k] = re->start[order[k]];
        gone[order[k]] = true;
    }
    int m = drop_chars(ids, n, re, gone, work);
    if (s == STRIX_OK) s = strix_lm_explain_output(g, work, m, cfg, &d->after_top);
    strix_rng rng;
    strix_rng_seed(&rng, f->seed);
    double sum = 0.0;
    for (int r = 0; r < DELETION_DRAWS && s == STRIX_OK; r++) {
        for (int i = 0; i < N; i++) order[i] = i;
        memset(gone, 0, sizeof(bool) * (size_t)N);
        for (int k = 0; k < K; k++) { // partial Fisher-Yates: order[0..K) is the draw
            int j = k + (int)strix_rng_below(&rng, (uint64_t)(N - k));
            int t = order[k];
            order[k] = order[j];
            order[j] = t;
            gone[order[k]] = true;
        }
        double v = 0.0;
        s = strix_lm_explain_output(g, work, drop_chars(ids, n, re, gone, work), cfg, &v);
        sum += v;
    }
    free(gone);
    free(order);
    free(work);
    if (s != STRIX_OK) return tool_fail(s);
    d->k = K;
    d->positions = positions;
    d->after_random = sum / DELETION_DRAWS;
    d->draws = DELETION_DRAWS;
    d->seed = f->seed;
    return 0;
}

/* Encodes the prompt, explains, prints and writes the files. */
static int explain(strix_lm *g, const strix_vocab *vocab, const explain_flags *f,
                   int target_byte, int contrast_byte) {
    size_t n = f->prompt_len;
    if (n > (size_t)1 << 30)
        return tool_fail(strix_error(STRIX_ERR_ARG, "the prompt is longer than 1 GiB"));
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
    cfg.method = method_of(f->method);
    cfg.ig_steps = f->ig_steps;
    cfg.rule = rule_of(f);
    cfg.one_hot_seed = f->one_hot;
    cfg.target = target_byte >= 0 ? vocab->id_of[target_byte] : -1;
    cfg.contrast = contrast_byte >= 0 ? vocab->id_of[contrast_byte] : -1;
    bool lrp = cfg.method == STRIX_GPT_EXPLAIN_LRP;
    strix_gpt_explanation ex = {0};
    s = strix_lm_explain(g, ids, (int)n, &cfg, &ex);
    if (s != STRIX_OK) {
        free(ids);
        return tool_fail(s);
    }

    render_explanation re = {
        .text = (const unsigned char *)f->prompt, .offset = (int)n - ex.T, .n_bytes = ex.T,
        .softmax_gap = ex.softmax_gap,
        .predicted = vocab->bytes[ex.predicted], .predicted_prob = ex.predicted_prob,
        .target = vocab->bytes[ex.target], .target_prob = ex.target_prob,
        .target_logit = ex.target_logit, .contrast = contrast_byte,
        .rule = lrp ? f->rule : NULL, .method = f->method, .ig_steps = f->ig_steps,
        .baseline_output = ex.baseline_output, .conserved_sum = ex.conserved_sum,
        .model = f->model, .sum_out = ex.relevance_out_sum, .sum_in = ex.relevance_in_sum};
    if (render_group_utf8(&re, ex.relevance, ex.relevance_position) != 0) {
        strix_gpt_explanation_free(&ex);
        free(ids);
        return tool_fail(strix_error(STRIX_ERR_ALLOC, "out of memory"));
    }
    double contrast_output = NAN; /* logit(target) - logit(contrast) */
    if (cfg.contrast >= 0) {
        strix_gpt_explain_config out_cfg = cfg;
        out_cfg.target = ex.target;
        s = strix_lm_explain_output(g, ids, (int)n, &out_cfg, &contrast_output);
        if (s != STRIX_OK) {
            render_group_free(&re);
            strix_gpt_explanation_free(&ex);
            free(ids);
            return tool_fail(s);
        }
        re.contrast_logit = (float)((double)ex.target_logit - contrast_output);
    }
    render_deletion del = {0};
    int *del_pos = f->deletion > 0 ? malloc(sizeof(int) * (size_t)f->deletion) : NULL;
    int rc = 0;
    if (f->deletion > 0) {
        cfg.target = ex.target; // the explained output of the prompt, whatever the deletion
        rc = del_pos ? deletion_check(g, f, ids, (int)n, &re, &cfg, &del, del_pos)
                     : tool_fail(strix_error(STRIX_ERR_ALLOC, "out of memory"));
        if (rc == 0) re.deletion = &del;
    }
    free(ids);
    if (rc != 0) {
        free(del_pos);
        render_group_free(&re);
        strix_gpt_explanation_free(&ex);
        return rc;
    }
    const char *nc = getenv("NO_COLOR");
    bool color = strcmp(f->color, "always") == 0 ||
                 (strcmp(f->color, "auto") == 0 && isatty(STDOUT_FILENO) && !(nc && nc[0]));
    char pg[8], tg[8], cg[8];
    render_glyph(re.predicted, false, pg);
    render_glyph(re.target, false, tg);
    const strix_lm_config *mc = strix_lm_config_get(g);
    int L = strix_lm_config_layers(mc);
    printf("model %s: %s, vocabulary %d, block %d, %d layer%s; ", f->model,
           strix_arch_name(mc->arch), strix_lm_config_vocab(mc), strix_lm_config_block(mc), L,
           L == 1 ? "" : "s");
    if (lrp) printf("rule %s\n", f->rule);
    else if (cfg.method == STRIX_GPT_EXPLAIN_INTEGRATED_GRADIENTS)
        printf("method %s (%d steps)\n", f->method, f->ig_steps);
    else printf("method %s\n", f->method);
    printf("next character: '%s' (p = %.4f)\n", pg, (double)re.predicted_prob);
    if (contrast_byte >= 0) {
        render_glyph((unsigned char)contrast_byte, false, cg);
        printf("explained: logit of '%s' minus logit of '%s' = %.4f (%.4f - %.4f)%s\n", tg, cg,
               contrast_output, (double)re.target_logit, (double)re.contrast_logit,
               f->one_hot && lrp ? ", seeded with +1 and -1" : "");
    } else {
        printf("explained: logit of '%s' = %.4f (p = %.4f)%s\n", tg, (double)re.target_logit,
               (double)re.target_prob, f->one_hot && lrp ? ", seeded with 1" : "");
    }
    if (re.offset > 0)
        printf("prompt cropped to its last %d characters (the model's context)\n", re.n_bytes);
    printf("\n");
    render_prompt(stdout, &re, color);
    if (color)
        printf("red: for '%s', blue: against; intensity |R| / max|R| (max %.4g)\n", tg,
               (double)render_max_abs(re.relevance, re.n));
    if (f->top > 0) {
        printf("\ntop %d contributors:\n", f->top < re.n ? f->top : re.n);
        render_top(stdout, &re, f->top);
    }
    char sums[256];
    render_sums(&re, sums, sizeof sums);
    printf("\n%s\n", sums);
    if (re.deletion) {
        printf("deletion of the %d most relevant character%s (removed): output %.6f "
               "-> %.6f (drop %.6f)\n", del.k, del.k == 1 ? "" : "s", del.before, del.after_top,
               del.before - del.after_top);
        printf("deletion of %d random character%s (mean of %d draws, seed %llu): output %.6f "
               "-> %.6f (drop %.6f)\n", del.k, del.k == 1 ? "" : "s", del.draws,
               (unsigned long long)del.seed, del.before, del.after_random,
               del.before - del.after_random);
    }
    int write_err = fflush(stdout) != 0 ? errno : 0; /* errno is lost at a later flush */
    warn_conservation(&ex, cfg.method == STRIX_GPT_EXPLAIN_INTEGRATED_GRADIENTS);
    const char *paths[3] = {f->svg, f->html, f->json};
    for (int k = 0; k < 3 && rc == 0; k++) {
        if (!paths[k]) continue;
        rc = explain_write_view(paths[k], k, &re, f->cols, f->top > 0 ? f->top : 10);
        if (rc == 0) printf("wrote %s\n", paths[k]);
    }
    free(del_pos);
    render_group_free(&re);
    strix_gpt_explanation_free(&ex);
    errno = 0;
    if (fflush(stdout) != 0 && !write_err) write_err = errno;
    if (rc == 0 && (write_err || ferror(stdout))) {
        fprintf(stderr, "strix: cannot write the explanation: %s\n",
                write_err ? strerror(write_err) : "write error on standard output");
        rc = 1;
    }
    return rc;
}

/* Reads --prompt-file (`-`: standard input) into f->prompt_buf. Returns 0, or 1 / 2 after the
 * error line (cannot read / empty or too large). */
static int read_prompt_file(explain_flags *f) {
    bool in = strcmp(f->prompt_file, "-") == 0;
    const char *name = in ? "standard input" : f->prompt_file;
    FILE *fp = in ? stdin : fopen(f->prompt_file, "rb");
    if (!fp) {
        fprintf(stderr, "strix explain: cannot read --prompt-file %s: %s\n", name,
                strerror(errno));
        return 1;
    }
    struct stat st;
    if (!in && fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(fp);
        fprintf(stderr, "strix explain: --prompt-file %s is a directory\n", name);
        return 2;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    int rc = buf ? 0 : 1;
    while (rc == 0) {
        if (len == cap) {
            char *nb = cap >= PROMPT_FILE_MAX ? NULL : realloc(buf, cap * 2);
            if (!nb) {
                rc = cap >= PROMPT_FILE_MAX ? 2 : 1;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, fp);
        len += got;
        if (got == 0) break;
    }
    bool bad = ferror(fp);
    int saved = errno;
    if (!in) fclose(fp);
    if (rc == 2) {
        fprintf(stderr, "strix explain: --prompt-file %s is larger than %u MiB\n", name,
                PROMPT_FILE_MAX >> 20);
    } else if (rc == 1 || bad) {
        fprintf(stderr, "strix explain: cannot read --prompt-file %s: %s\n", name,
                bad ? strerror(saved) : "out of memory");
        rc = 1;
    } else if (len == 0) {
        fprintf(stderr, "strix explain: --prompt-file %s is empty (the prediction after the "
                        "prompt is explained)\n", name);
        rc = 2;
    }
    if (rc) {
        free(buf);
        return rc;
    }
    f->prompt_buf = buf;
    f->prompt = buf;
    f->prompt_len = len;
    return 0;
}

int cmd_explain(int argc, char **argv) {
    if (lm_tool_is_model_path(model_arg(argc, argv))) return cmd_explain_lm(argc, argv);
    explain_flags f = {.rule = "attnlrp", .backend = "cpu", .color = "auto", .top = 10,
                       .cols = 64, .eps = 1e-6f, .gamma = 0.25f, .alpha = 2.0f,
                       .method = "lrp", .ig_steps = 50};
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
    if (f.prompt && f.prompt_file) {
        fprintf(stderr, "strix explain: give one of --prompt and --prompt-file, not both\n");
        return 2;
    }
    if (!f.prompt_file && (!f.prompt || !f.prompt[0])) {
        fprintf(stderr, "strix explain: --prompt TEXT (or --prompt-file FILE) is required and "
                        "must not be empty (the prediction after it is explained)\n");
        return 2;
    }
    if (f.prompt_file && !f.prompt_file[0]) {
        fprintf(stderr, "strix explain: --prompt-file needs a file name (- for standard input)\n");
        return 2;
    }
    const char *methods[4] = {"lrp", "gradient-x-input", "integrated-gradients", "saliency"};
    bool known = false;
    for (int i = 0; i < 4; i++) known |= strcmp(f.method, methods[i]) == 0;
    if (!known) {
        fprintf(stderr, "strix explain: unknown --method '%s' (methods: lrp, gradient-x-input, "
                        "integrated-gradients, saliency)\n", f.method);
        return 2;
    }
    const char *rules[4] = {"attnlrp", "epsilon", "gamma", "alpha-beta"};
    known = false;
    for (int i = 0; i < 4; i++) known |= strcmp(f.rule, rules[i]) == 0;
    if (!known) {
        fprintf(stderr, "strix explain: unknown --rule '%s' (rules: attnlrp, epsilon, gamma, "
                        "alpha-beta)\n", f.rule);
        return 2;
    }
    if (strcmp(f.method, "lrp") != 0) {
        const char *lrp_only[5] = {"rule", "eps", "gamma", "alpha", "one-hot"};
        for (int i = 0; i < 5; i++)
            if (args_find(specs, NEXPLAIN_SPECS, lrp_only[i])->seen) {
                fprintf(stderr, "strix explain: --%s is an option of --method lrp (got --method "
                                "%s)\n", lrp_only[i], f.method);
                return 2;
            }
    }
    const char *rule_only[2][2] = {{"gamma", "gamma"}, {"alpha", "alpha-beta"}};
    for (int i = 0; i < 2; i++)
        if (args_find(specs, NEXPLAIN_SPECS, rule_only[i][0])->seen &&
            strcmp(f.rule, rule_only[i][1]) != 0) {
            fprintf(stderr, "strix explain: --%s is an option of --rule %s (got --rule %s)\n",
                    rule_only[i][0], rule_only[i][1], f.rule);
            return 2;
        }
    if (args_find(specs, NEXPLAIN_SPECS, "ig-steps")->seen &&
        strcmp(f.method, "integrated-gradients") != 0) {
        fprintf(stderr, "strix explain: --ig-steps is an option of --method "
                        "integrated-gradients\n");
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
    const char *outs[3] = {f.svg, f.html, f.json};
    if (explain_check_outputs("explain", f.model, f.prompt_file, f.force, outs)) return 2;
    const char *backend = NULL;
    rc = args_backend_of("explain", f.device,
                         args_find(specs, NEXPLAIN_SPECS, "backend")->seen ? f.backend : NULL,
                         &backend);
    if (rc) return rc;
    if (f.prompt_file) {
        rc = read_prompt_file(&f);
        if (rc) return rc;
    } else {
        f.prompt_len = strlen(f.prompt);
    }

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
    strix_arch arch = s == STRIX_OK ? strix_checkpoint_info_of(m.ck)->model.arch : STRIX_ARCH_GPT;
    if (s == STRIX_OK && arch != STRIX_ARCH_GPT && strcmp(f.method, "lrp") == 0 &&
        (strcmp(f.rule, "gamma") == 0 || strcmp(f.rule, "alpha-beta") == 0)) {
        fprintf(stderr, "strix explain: --rule %s applies to a GPT; the blocks of a %s model "
                        "implement the epsilon rules only (--rule attnlrp or epsilon)\n", f.rule,
                strix_arch_name(arch));
        tool_model_free(&m);
        free(f.prompt_buf);
        return 2;
    }
    if (s == STRIX_OK) s = tool_model_load(&m, backend, f.threads);
    rc = s == STRIX_OK ? explain(m.lm, vocab, &f, f.target ? tb : -1, f.contrast ? cb : -1)
                       : tool_fail(s);
    tool_model_free(&m);
    free(f.prompt_buf);
    return rc;
}
