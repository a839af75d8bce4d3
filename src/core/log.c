/*
 * log.c - the log sink and the always-on assert hook. The only place the library writes to a
 * stream, and only when no callback is installed.
 */
#include <stdio.h>
#include <stdlib.h>

#include "strix/core.h"

static strix_log_fn log_fn;
static void *log_user;
static strix_abort_fn abort_fn;

void strix_set_log_callback(strix_log_fn fn, void *user) {
    log_fn = fn;
    log_user = user;
}

void strix_log(strix_log_level level, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (log_fn) {
        log_fn(level, msg, log_user);
    } else if (level != STRIX_LOG_DEBUG) {
        fprintf(stderr, "%s\n", msg);
    }
}

void strix_set_abort_callback(strix_abort_fn fn) { abort_fn = fn; }

void strix_abort(const char *file, int line, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (abort_fn) abort_fn(file, line, msg);
    fprintf(stderr, "strix: %s:%d: %s\n", file, line, msg);
    abort();
}

void strix_assert_fail(const char *file, int line, const char *cond, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    strix_abort(file, line, "assert(%s) %s", cond, msg);
}
