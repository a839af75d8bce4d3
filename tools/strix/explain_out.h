/*
 * explain_out.h - the output files of `strix explain` (explain_out.c), shared by the checkpoint
 * models' explain.c and the Llama-family models' explain_lm.c.
 */
#ifndef STRIX_TOOL_EXPLAIN_OUT_H
#define STRIX_TOOL_EXPLAIN_OUT_H

#include <stdbool.h>

#include "render.h"

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
