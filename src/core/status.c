/*
 * status.c - status names and the thread-local last-error message.
 */
#include <stdio.h>

#include "strix/core.h"

static _Thread_local char last_error[1024];

const char *strix_status_str(strix_status s) {
    switch (s) {
    case STRIX_OK: return "STRIX_OK";
    case STRIX_ERR_ALLOC: return "STRIX_ERR_ALLOC";
    case STRIX_ERR_IO: return "STRIX_ERR_IO";
    case STRIX_ERR_SHAPE: return "STRIX_ERR_SHAPE";
    case STRIX_ERR_UNSUPPORTED: return "STRIX_ERR_UNSUPPORTED";
    case STRIX_ERR_DEVICE: return "STRIX_ERR_DEVICE";
    case STRIX_ERR_ARG: return "STRIX_ERR_ARG";
    case STRIX_ERR_FORMAT: return "STRIX_ERR_FORMAT";
    case STRIX_ERR_NUMERIC: return "STRIX_ERR_NUMERIC";
    }
    return "STRIX_ERR_UNKNOWN";
}

const char *strix_last_error(void) { return last_error; }

void strix_clear_error(void) { last_error[0] = '\0'; }

strix_status strix_error(strix_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}
