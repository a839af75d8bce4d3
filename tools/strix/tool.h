/*
 * tool.h - what the parts of the strix command share: the subcommands' entry points, the error
 * line printer and the clock.
 *
 * Does not hold any library logic: every computation is a library call returning strix_status.
 */
#ifndef STRIX_TOOL_H
#define STRIX_TOOL_H

#include "strix/core.h"

#define STRIX_TOOL_VERSION "0.1.0"

/* `strix train ...`, `strix sample ...` and `strix explain ...` (train.c, sample.c, explain.c);
 * argv[1] is the subcommand. Return the exit code: 0 success, 1 a failure at run time (message
 * printed), 2 a usage error (message printed). */
int cmd_train(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_explain(int argc, char **argv);

/* Prints "strix: <strix_last_error()>" to stderr and returns 1 (for `return tool_fail(s);`). */
int tool_fail(strix_status s);

/* Seconds on a monotonic clock. */
double tool_now(void);

#endif
