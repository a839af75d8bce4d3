/*
 * train_metrics.h - the metrics log of `strix train` (train_metrics.c): JSON lines beside the
 * checkpoint, one per log step
 *   {"step":N,"train_loss":x,"lr":x,"grad_norm":x,"tokens_per_s":x,"elapsed_s":x}
 * and one per evaluation
 *   {"step":N,"val_loss":x,"elapsed_s":x}
 * numbers as %.9g, a non-finite number as null. Plain stdio, flushed after every line; a write
 * error is one warning and the log stops, the run goes on. `strix plot` reads this format.
 *
 * Does not decide when to log (train.c does: the steps of the progress lines).
 */
#ifndef STRIX_TOOL_TRAIN_METRICS_H
#define STRIX_TOOL_TRAIN_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "strix/safetensors.h" /* STRIX_PATH_MAX */

typedef struct train_metrics {
    FILE *f;                         /* NULL: no log (--metrics none, or after a write error) */
    char path[STRIX_PATH_MAX + 16];
} train_metrics;

/* The default log of checkpoint `out`: a trailing ".safetensors" replaced by ".metrics.jsonl",
 * else ".metrics.jsonl" appended. False when it does not fit in cap. */
bool metrics_default_path(const char *out, char *buf, size_t cap);

/* Checks, creating and changing nothing, that a run writing checkpoint `out` on corpus `data`
 * (NULL: none) may write its log at `path`; metrics_open makes the same checks. Refused (2, one
 * line on stderr), new run or resumed: an empty path, --out itself (the same path or inode), the
 * corpus or a file directly in the corpus directory, anything but a regular file or a character
 * device (/dev/null is written as it is), an existing file that is not a metrics log (a log is
 * empty or its first line starts {"step":N); for a new run (resume_step < 0) also another run's
 * log unless `replace_ok`. A new run's default log (metrics_default_path) whose checkpoint does
 * not exist is an orphan of a run that never saved (killed before its first checkpoint):
 * allowed, and *orphan set. Returns 0 when the log may be written. */
int metrics_check(const char *path, const char *out, const char *data, int64_t resume_step,
                  bool replace_ok, bool *orphan);

/* Opens the log at `path` for a run writing `out` after metrics_check (same arguments). A new
 * run truncates it (an orphan log with a one-line note on stderr). A resumed run keeps the lines
 * of a metrics log whose step is <= resume_step (rewritten atomically when a line is dropped;
 * other lines, such as a half-written last one, are dropped) and appends. Returns 0, or 2 (one
 * line on stderr) for a refused path, 1 for a file that cannot be written (m->f NULL). */
int metrics_open(train_metrics *m, const char *path, const char *out, const char *data,
                 int64_t resume_step, bool replace_ok);

/* Appends a log step's line / an evaluation's line (nothing when m->f is NULL). */
void metrics_train(train_metrics *m, int64_t step, double train_loss, double lr, double grad_norm,
                   double tokens_per_s, double elapsed_s);
void metrics_eval(train_metrics *m, int64_t step, double val_loss, double elapsed_s);

/* Closes the log (a close error is the one warning). */
void metrics_close(train_metrics *m);

#endif
