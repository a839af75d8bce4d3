/*
 * explain_out.c - the output files of `strix explain` (both the checkpoint models' explain.c and
 * the Llama-family models' explain_lm.c): the checks before any work and the atomic writes of
 * the SVG, HTML and JSON views (explain_out.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "explain/heatmap.h" /* STRIX_OUTPUT_MARKER */
#include "explain_out.h"
#include "strix/checkpoint.h"
#include "tool.h"

/* Whether paths a and b name the same existing file. */
static bool same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}


/* Whether path is an existing file of the model folder `model` that holds the model (its config,
 * weights, tokenizer or chat template): never replaced, not even with --force. */
static bool model_folder_file(const char *path, const char *model) {
    struct stat md, pd;
    if (stat(model, &md) != 0 || !S_ISDIR(md.st_mode)) return false;
    char dir[4096];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (stat(dir, &pd) != 0 || pd.st_dev != md.st_dev || pd.st_ino != md.st_ino) return false;
    static const char *const names[] = {"config.json", "generation_config.json",
                                        "tokenizer.json", "tokenizer_config.json",
                                        "chat_template.jinja", "special_tokens_map.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(base, names[i]) == 0) return true;
    size_t n = strlen(base);
    return (n > 12 && strcmp(base + n - 12, ".safetensors") == 0) ||
           (n > 23 && strcmp(base + n - 23, ".safetensors.index.json") == 0);
}

int explain_check_outputs(const char *cmd, const char *model, const char *prompt_file,
                          bool force, const char *const paths[3]) {
    const char *flags[3] = {"svg", "html", "json"};
    for (int i = 0; i < 3; i++) {
        if (!paths[i]) continue;
        struct stat st;
        if (!paths[i][0]) {
            fprintf(stderr, "strix %s: --%s needs a file name\n", cmd, flags[i]);
            return 2;
        }
        if (strcmp(paths[i], model) == 0 || same_file(paths[i], model)) {
            fprintf(stderr, "strix %s: --%s %s is the checkpoint (the model file); choose "
                            "another file\n", cmd,
                    flags[i], paths[i]);
            return 2;
        }
        if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            fprintf(stderr, "strix %s: --%s %s is a directory\n", cmd, flags[i], paths[i]);
            return 2;
        }
        if (stat(paths[i], &st) == 0 && !S_ISREG(st.st_mode)) {
            fprintf(stderr, "strix %s: --%s %s is not a regular file\n", cmd, flags[i],
                    paths[i]);
            return 2;
        }
        if (model_folder_file(paths[i], model)) {
            fprintf(stderr, "strix %s: --%s %s is a file of the model folder %s; it is never "
                            "replaced (not even with --force): choose another file\n", cmd,
                    flags[i], paths[i], model);
            return 2;
        }
        if (stat(paths[i], &st) == 0 && strix_checkpoint_probe(paths[i]) == STRIX_OK) {
            fprintf(stderr, "strix %s: --%s %s is a strix checkpoint; it is never replaced "
                            "(not even with --force): choose another file\n",
                    cmd, flags[i], paths[i]);
            return 2;
        }
        if (stat(paths[i], &st) == 0 && !force &&
            !tool_file_replaceable(paths[i], STRIX_OUTPUT_MARKER)) {
            fprintf(stderr, "strix %s: --%s %s exists and was not written by strix explain; "
                            "--force replaces it\n", cmd, flags[i], paths[i]);
            return 2;
        }
        if (prompt_file && (strcmp(paths[i], prompt_file) == 0 ||
                               same_file(paths[i], prompt_file))) {
            fprintf(stderr, "strix %s: --%s %s is the prompt file; choose another file\n", cmd,
                    flags[i], paths[i]);
            return 2;
        }
        char dir[4096];
        const char *slash = strrchr(paths[i], '/');
        size_t len = slash ? (size_t)(slash - paths[i]) : 0;
        snprintf(dir, sizeof dir, "%.*s", (int)len, paths[i]);
        if (slash && len > 0 && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
            fprintf(stderr, "strix %s: --%s %s: there is no directory %s\n", cmd, flags[i],
                    paths[i], dir);
            return 2;
        }
        for (int j = 0; j < i; j++) {
            if (paths[j] && (strcmp(paths[i], paths[j]) == 0 || same_file(paths[i], paths[j]))) {
                fprintf(stderr, "strix %s: --%s and --%s name the same file %s\n", cmd,
                        flags[j], flags[i], paths[i]);
                return 2;
            }
        }
    }
    return 0;
}

int explain_write_view(const char *path, int which, const render_explanation *re, int cols,
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

