/*
 * train_metrics.c - the metrics log of `strix train` (train_metrics.h): where it lives, the
 * checks before a run truncates it, the filtering of a resumed run's log, and the JSON lines.
 */
#define _XOPEN_SOURCE 700

#include "train_metrics.h"
#include "out_file.h"
#include "strix/safetensors.h"

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

/* Rewrites the log keeping the lines of steps <= last (atomically, through the library's temp
 * file: a symbolic link stays, no other file is touched); nothing when every line is kept.
 * 0, or 1 (message printed). */
static int keep_until(const char *path, int64_t last) {
    FILE *in = fopen(path, "r");
    if (!in) return errno == ENOENT ? 0 : 1;
    char *kept = NULL, *line = NULL;
    size_t kept_len = 0, cap = 0;
    FILE *mem = open_memstream(&kept, &kept_len);
    bool ok = mem != NULL, dropped = false;
    while (ok && getline(&line, &cap, in) > 0) {
        int64_t step;
        if (line_step(line, &step) && step <= last) ok = fputs(line, mem) >= 0;
        else dropped = true;
    }
    free(line);
    ok = !ferror(in) && ok;
    fclose(in);
    if (mem) ok = fclose(mem) == 0 && ok;
    strix_status s = STRIX_OK;
    if (ok && dropped) {
        const void *chunks[1] = {kept};
        size_t sizes[1] = {kept_len};
        s = strix_write_file_atomic(path, chunks, sizes, 1);
    }
    free(kept);
    if (!ok || s != STRIX_OK) {
        fprintf(stderr, "strix: metrics log %s: cannot rewrite it for the resumed run: %s\n",
                path, s != STRIX_OK ? strix_last_error() : strerror(errno ? errno : EIO));
        return 1;
    }
    return 0;
}

/* What the file at `path` holds: 0 nothing (empty), 1 a metrics log (its first line starts as
 * every line of one does, {"step":N), 2 something else, -1 it cannot be read (errno set). */
static int log_kind(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char head[16] = "";
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    static const char key[] = "{\"step\":";
    if (n == 0) return 0;
    if (n < sizeof key || strncmp(head, key, sizeof key - 1) != 0) return 2;
    char c = head[sizeof key - 1];
    return (c >= '0' && c <= '9') || c == '-' ? 1 : 2;
}

/* True when the log at `path` is the default log of a checkpoint that does not exist: `path` is
 * "<S>.metrics.jsonl", the default of --out `out`, and neither <S> nor <S>.safetensors (the two
 * checkpoints with this default log) exists. */
static bool orphan_log(const char *path, const char *out) {
    char def[STRIX_PATH_MAX + 16], stem[STRIX_PATH_MAX + 16];
    if (!metrics_default_path(out, def, sizeof def) || strcmp(def, path) != 0) return false;
    size_t n = strlen(path) - strlen(".metrics.jsonl");
    struct stat st;
    snprintf(stem, sizeof stem, "%.*s", (int)n, path);
    if (stat(stem, &st) == 0) return false;
    snprintf(stem, sizeof stem, "%.*s.safetensors", (int)n, path);
    return stat(stem, &st) != 0 && stat(out, &st) != 0;
}

int metrics_check(const char *path, const char *out, const char *data, int64_t resume_step,
                  bool replace_ok, bool *orphan) {
    *orphan = false;
    if (path[0] == '\0') {
        fprintf(stderr, "strix train: --metrics is empty; give the log's path or none\n");
        return 2;
    }
    if (strlen(path) >= STRIX_PATH_MAX) {
        fprintf(stderr, "strix train: --metrics path is too long\n");
        return 2;
    }
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && S_ISCHR(st.st_mode)) return 0; /* /dev/null: written, never rewritten */
    if (exists && !S_ISREG(st.st_mode)) {
        fprintf(stderr, "strix train: --metrics '%s' is neither a regular file nor a character "
                        "device\n", path);
        return 2;
    }
    if (out_same_file(path, out)) {
        fprintf(stderr, "strix train: --metrics '%s' is the checkpoint --out '%s'; choose "
                        "another path for the log\n", path, out);
        return 2;
    }
    char what[STRIX_PATH_MAX + 16];
    snprintf(what, sizeof what, "--metrics '%s'", path);
    if (out_check_outside_corpus(what, path, data)) return 2;
    if (!exists) return 0;
    int kind = log_kind(path);
    if (kind < 0) {
        fprintf(stderr, "strix train: --metrics '%s' cannot be read: %s\n", path,
                strerror(errno));
        return 2;
    }
    if (kind == 2) {
        fprintf(stderr, "strix train: --metrics '%s' exists and is not a metrics log; refusing "
                        "to replace it (choose another path or --metrics none)\n", path);
        return 2;
    }
    if (kind == 0 || resume_step >= 0 || replace_ok) return 0;
    if (orphan_log(path, out)) {
        *orphan = true;
        return 0;
    }
    fprintf(stderr, "strix train: the metrics log '%s' of another run exists; --force replaces "
                    "it (--metrics none: no log)\n", path);
    return 2;
}

int metrics_open(train_metrics *m, const char *path, const char *out, const char *data,
                 int64_t resume_step, bool replace_ok) {
    m->f = NULL;
    bool orphan;
    int rc = metrics_check(path, out, data, resume_step, replace_ok, &orphan);
    if (rc) return rc;
    snprintf(m->path, sizeof m->path, "%s", path);
    struct stat st;
    bool device = stat(path, &st) == 0 && S_ISCHR(st.st_mode);
    if (orphan)
        fprintf(stderr, "strix: note: replacing the metrics log %s of a run that never saved "
                        "its checkpoint %s\n", path, out);
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
