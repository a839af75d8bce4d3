/*
 * rl_tool.h - what the files of `strix rl` share (rl.c: train, eval, plot; rl_explain.c).
 */
#ifndef STRIX_TOOL_RL_H
#define STRIX_TOOL_RL_H

#include <stdio.h>

#include "strix/rl.h"

/* `strix rl explain` (rl_explain.c). */
int cmd_rl_explain(int argc, char **argv);

/* Loads the agent file `path` on the CPU backend with `threads` threads (0: 1). Returns 0, or
 * 2 / 1 after one line on stderr (no --agent given / the file cannot be loaded). */
int rl_load_agent(const char *cmd, const char *path, int threads, strix_backend **be,
                  strix_agent **a);

/* Draws the learning curve of episodes ep[0..n) (return against environment steps, each
 * episode a dot, the mean of the last 100 a line) as an SVG into f. Returns 0, 1 on a write
 * error. */
int rl_curve_svg(FILE *f, const strix_rl_episode *ep, int64_t n, const char *title);

#endif
