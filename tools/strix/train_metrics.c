/*
 * train_metrics.c - the metrics log of `strix train` (train_metrics.h): where it lives, the
 * checks before a run truncates it, the filtering of a resumed run's log, and the JSON lines.
 */
#define _XOPEN_SOURCE 700

#include "train_metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool metrics_default_path(const char *out, char *buf, size_t cap) {
    static const char ext[] = ".safetensors";
    size_t n = strlen(out), e = sizeof ext - 1;
    if (n > e && strcmp(out + n - e, ext) == 0) n -= e;
    int w = snprintf(buf, cap, "%.*s.metrics.jsonl", (int)n, out);
    return w >= 0 && (size_t)w < cap;
}

static void warn_once(train_metrics *m, const char *what) {
    fprintf(stderr, "strix: warning: metrics log %s: %s (%s); the run goes on without it\n",
            m->path, what, strerror(errno ? errno : EIO));
    if (m->f) fclose(m->f);
    m->f = NULL;
}

/* The step of a log line ({"step":N,...}); false for anything else. */
static bool line_step(const char *line, int64_t *step) {
    static const char key[] = "{\"step\":";
    if (strncmp(line, key, sizeof key - 1) != 0) return false;
    char *end;
    errno = 0;
    long long v = strtoll(line + sizeof key - 1, &end, 10);
    if (errno || end == line + sizeof key - 1 || *end != ',') return false;
    size_t n = strlen(line);
    if (n < 2 || line[n - 1] != '\n' || line[n - 2] != '}') return false; /* half-written */
    *step = v;
    return true;
}

/* Rewrites the log keeping the lines of steps <= last. 0, or 1 (message printed). */
static int keep_until(const char *path, int64_t last) {
    FILE *in = fopen(path, "r");
    if (!in) return errno == ENOENT ? 0 : 1;
    char tmp[STRIX_PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *outf = fopen(tmp, "w");
    if (!outf) {
        fprintf(stderr, "strix: metrics log %s: cannot write %s: %s\n", path, tmp,
                strerror(errno));
        fclose(in);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    bool ok = true;
    while (getline(&line, &cap, in) > 0) {
        int64_t step;
        if (line_step(line, &step) && step <= last) ok = ok && fputs(line, outf) >= 0;
    }
    free(line);
    ok = !ferror(in) && ok;
    fclose(in);
    ok = fclose(outf) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        fprintf(stderr, "strix: metrics log %s: cannot rewrite it for the resumed run: %s\n",
                path, strerror(errno ? errno : EIO));
        remove(tmp);
        return 1;
    }
    return 0;
}

int metrics_open(train_metrics *m, const char *path, const char *out, int64_t resume_step,
                 bool replace_ok) {
    m->f = NULL;
    if (snprintf(m->path, sizeof m->path, "%s", path) >= (int)sizeof m->path) {
        fprintf(stderr, "strix train: --metrics path is too long\n");
        return 2;
    }
    struct stat st, so;
    bool exists = stat(path, &st) == 0;
    bool device = exists && S_ISCHR(st.st_mode); /* /dev/null: written, never rewritten */
    if (exists && !S_ISREG(st.st_mode) && !device) {
        fprintf(stderr, "strix train: --metrics '%s' is neither a regular file nor a character "
                        "device\n", path);
        return 2;
    }
    if (exists && stat(out, &so) == 0 && so.st_dev == st.st_dev && so.st_ino == st.st_ino) {
        fprintf(stderr, "strix train: --metrics '%s' is the checkpoint --out\n", path);
        return 2;
    }
    if (exists && !device && resume_step < 0) {
        FILE *f = fopen(path, "r");
        int c = f ? fgetc(f) : EOF;
        if (f) fclose(f);
        if (c != EOF && c != '{') {
            fprintf(stderr, "strix train: --metrics '%s' exists and is not a metrics log; "
                            "choose another path or --metrics none\n", path);
            return 2;
        }
        if (c != EOF && !replace_ok) {
            fprintf(stderr, "strix train: the metrics log '%s' of another run exists; --force "
                            "replaces it (--metrics none: no log)\n", path);
            return 2;
        }
    }
    if (resume_step >= 0 && !device && keep_until(path, resume_step)) return 1;
    m->f = fopen(path, resume_step >= 0 ? "a" : "w");
    if (!m->f) {
        fprintf(stderr, "strix: metrics log %s: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

/* A number as %.9g, non-finite as null. */
static void num(char *buf, size_t cap, double v) {
    if (isfinite(v)) snprintf(buf, cap, "%.9g", v);
    else snprintf(buf, cap, "null");
}

static void put_line(train_metrics *m, const char *line) {
    if (!m->f) return;
    errno = 0;
    if (fputs(line, m->f) < 0 || fflush(m->f) != 0) warn_once(m, "write failed");
}

void metrics_train(train_metrics *m, int64_t step, double train_loss, double lr, double grad_norm,
                   double tokens_per_s, double elapsed_s) {
    if (!m->f) return;
    char a[32], b[32], c[32], d[32], e[32], line[256];
    num(a, sizeof a, train_loss);
    num(b, sizeof b, lr);
    num(c, sizeof c, grad_norm);
    num(d, sizeof d, tokens_per_s);
    num(e, sizeof e, elapsed_s);
    snprintf(line, sizeof line, "{\"step\":%" PRId64 ",\"train_loss\":%s,\"lr\":%s,"
             "\"grad_norm\":%s,\"tokens_per_s\":%s,\"elapsed_s\":%s}\n", step, a, b, c, d, e);
    put_line(m, line);
}

void metrics_eval(train_metrics *m, int64_t step, double val_loss, double elapsed_s) {
    if (!m->f) return;
    char a[32], e[32], line[128];
    num(a, sizeof a, val_loss);
    num(e, sizeof e, elapsed_s);
    snprintf(line, sizeof line, "{\"step\":%" PRId64 ",\"val_loss\":%s,\"elapsed_s\":%s}\n", step,
             a, e);
    put_line(m, line);
}

void metrics_close(train_metrics *m) {
    if (!m->f) return;
    errno = 0;
    if (fclose(m->f) != 0) {
        m->f = NULL;
        warn_once(m, "close failed");
    }
    m->f = NULL;
}
