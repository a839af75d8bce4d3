/*
 * explain_out.h - the output files of `strix explain` (explain_out.c), shared by the checkpoint
 * models' explain.c and the Llama-family models' explain_lm.c.
 */
#ifndef STRIX_TOOL_EXPLAIN_OUT_H
#define STRIX_TOOL_EXPLAIN_OUT_H

#include <stdbool.h>

#include "args.h"
#include "render.h"

/* The flag rows of the views, into fields svg, html, json and color of the flags struct f
 * points to (four rows). */
#define EXPLAIN_VIEW_FLAGS(f)                                                                    \
    FLAG("svg", ARG_STRING, &(f)->svg, 0, 0, 0, "FILE", "write an SVG picture (default none)"),  \
        FLAG("html", ARG_STRING, &(f)->html, 0, 0, 0, "FILE",                                    \
             "write a self-contained HTML page (default none)"),                                 \
        FLAG("json", ARG_STRING, &(f)->json, 0, 0, 0, "FILE",                                    \
             "write the relevances as JSON (default none)"),                                     \
        FLAG("color", ARG_STRING, &(f)->color, 0, 0, 0, "WHEN",                                  \
             "auto (colour a terminal unless NO_COLOR is set), always, never (default auto)")

/* Checks the output paths (--svg, --html, --json; NULL entries skipped) before any work: none
 * may be the model, the prompt file (NULL: none), a directory, a strix checkpoint, an existing
 * file that strix explain did not write (unless force), or in a missing folder, and no two may be
 * the same. Returns 0, or 2 after printing "strix <cmd>: ..." */
int explain_check_outputs(const char *cmd, const char *model, const char *prompt_file,
                          bool force, const char *const paths[3]);

/* One view of re rendered into memory and written to `path` atomically; which: 0 SVG, 1 HTML,
 * 2 JSON. Returns 0, or 1 after printing the error line. */
int explain_write_view(const char *path, int which, const render_explanation *re, int cols,
                       int top);

#endif
