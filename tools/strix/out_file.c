/*
 * out_file.c - the file a run writes: checks before training, the "<out>.lock" lock (beside the
 * target of a symbolic link, like the saves), the removal of temp files that ended runs left, and
 * the stop signals held off around a save (out_file.h).
 */
#define _XOPEN_SOURCE 700 /* POSIX 2008 with realpath */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "out_file.h"
#include "strix/checkpoint.h"
#include "strix/safetensors.h"

void out_resolve_path(const char *path, char *buf, size_t cap) {
    char *abs = realpath(path, NULL);
    snprintf(buf, cap, "%s", abs ? abs : path);
    free(abs);
}

void out_parent_of(const char *path, char *buf, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(buf, cap, ".");
    else if (slash == path) snprintf(buf, cap, "/");
    else snprintf(buf, cap, "%.*s", (int)(slash - path), path);
}

/* FNV-1a, 64 bits, of s: the lock name of an output whose "<name>.lock" would be too long. */
static unsigned long long name_hash(const char *s) {
    unsigned long long h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* One line about the existing checkpoint at `out` (the file `target`) that replace_ok does not
 * allow to replace. */
static void refuse_replace(const char *out, const char *target) {
    strix_checkpoint *ck;
    char what[96] = "";
    bool weights_only = false;
    if (strix_checkpoint_open(target, &ck) == STRIX_OK) {
        const strix_checkpoint_info *i = strix_checkpoint_info_of(ck);
        weights_only = i->weights_only;
        snprintf(what, sizeof what, " (step %" PRId64 " of %" PRId64 ")", i->state.step,
                 i->train.steps);
        strix_checkpoint_close(ck);
    }
    if (weights_only) /* no run to continue: --resume would refuse it */
        fprintf(stderr, "strix train: --out '%s' holds a weights-only model file; pass --force to "
                        "replace it (or --init-from it to fine-tune)\n", out);
    else
        fprintf(stderr, "strix train: --out '%s' holds a trained checkpoint%s; pass --force to "
                        "replace it or --resume to continue it\n", out, what);
}

/* `path` with the links of its last component followed and its directory made absolute, into
 * buf: one name per file, also for a file that does not exist yet. */
static void canonical_name(const char *path, char *buf, size_t cap) {
    char target[STRIX_PATH_MAX], parent[STRIX_PATH_MAX];
    if (strix_atomic_target_path(path, target, sizeof target) != STRIX_OK)
        snprintf(target, sizeof target, "%s", path);
    out_parent_of(target, parent, sizeof parent);
    const char *slash = strrchr(target, '/');
    char *abs = realpath(parent, NULL);
    snprintf(buf, cap, "%s/%s", abs ? abs : parent, slash ? slash + 1 : target);
    free(abs);
}

bool out_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char ca[2 * STRIX_PATH_MAX], cb[2 * STRIX_PATH_MAX];
    canonical_name(a, ca, sizeof ca);
    canonical_name(b, cb, sizeof cb);
    return strcmp(ca, cb) == 0;
}

int out_check_outside_corpus(const char *what, const char *path, const char *data) {
    struct stat ds, ps;
    if (!data || stat(data, &ds) != 0) return 0;
    if (stat(path, &ps) == 0 && ps.st_dev == ds.st_dev && ps.st_ino == ds.st_ino) {
        fprintf(stderr, "strix train: %s is the corpus --data '%s'; refusing to overwrite it "
                        "(choose another path)\n", what, data);
        return 2;
    }
    /* A corpus directory is read non-recursively (its regular files only), so only a file
     * directly in it could become part of the corpus; its subdirectories may hold outputs. */
    char target[STRIX_PATH_MAX], parent[STRIX_PATH_MAX];
    if (strix_atomic_target_path(path, target, sizeof target) != STRIX_OK)
        snprintf(target, sizeof target, "%s", path);
    out_parent_of(target, parent, sizeof parent);
    if (S_ISDIR(ds.st_mode) && stat(parent, &ps) == 0 && ps.st_dev == ds.st_dev &&
        ps.st_ino == ds.st_ino) {
        fprintf(stderr, "strix train: %s lies inside the corpus directory '%s' (a file directly "
                        "in the --data directory would become part of the corpus); write it "
                        "elsewhere (or in a subdirectory)\n", what, data);
        return 2;
    }
    return 0;
}

int out_check(const char *out, const char *data, bool replace_ok) {
    size_t len = strlen(out);
    if (len == 0) {
        fprintf(stderr, "strix train: --out is empty; give the checkpoint's file name\n");
        return 2;
    }
    if (out[len - 1] == '/') {
        fprintf(stderr, "strix train: --out '%s' ends in '/'; give a file name such as "
                        "%smodel.safetensors\n", out, out);
        return 2;
    }
    /* Through a symbolic link the save replaces the link's target, in the target's directory. */
    char target[STRIX_PATH_MAX];
    if (strix_atomic_target_path(out, target, sizeof target) != STRIX_OK) {
        fprintf(stderr, "strix train: %s\n", strix_last_error());
        return 2;
    }
    struct stat os;
    bool exists = stat(target, &os) == 0;
    if (!exists && errno != ENOENT) { /* a name over NAME_MAX, a path through a file, ... */
        int err = errno;
        if (err != ENOTDIR) {
            fprintf(stderr, "strix train: cannot write the checkpoint %s: %s\n", out,
                    strerror(err));
            return 2;
        }
    }
    if (exists && S_ISDIR(os.st_mode)) {
        fprintf(stderr, "strix train: --out '%s' is a directory; give a file name such as "
                        "%s/model.safetensors\n", out, out);
        return 2;
    }
    if (exists && !S_ISREG(os.st_mode)) {
        fprintf(stderr, "strix train: --out '%s' is not a regular file\n", out);
        return 2;
    }
    char parent[STRIX_PATH_MAX];
    out_parent_of(target, parent, sizeof parent);
    struct stat ps;
    int parent_err = stat(parent, &ps) != 0 ? errno : S_ISDIR(ps.st_mode) ? 0 : ENOTDIR;
    if (parent_err) {
        fprintf(stderr, "strix train: cannot write the checkpoint %s: directory '%s': %s\n", out,
                parent, parent_err == ENOENT ? "does not exist" : strerror(parent_err));
        return 2;
    }
    char what[STRIX_PATH_MAX + 16];
    snprintf(what, sizeof what, "--out '%s'", out);
    if (out_check_outside_corpus(what, out, data)) return 2;
    if (exists && strix_checkpoint_probe(target) != STRIX_OK) {
        fprintf(stderr, "strix train: --out '%s' exists and is not a strix checkpoint; refusing "
                        "to replace it (remove it or choose another --out)\n", out);
        return 2;
    }
    if (exists && !replace_ok) {
        refuse_replace(out, target);
        return 2;
    }
    char tmp[STRIX_PATH_MAX + 64];
    strix_atomic_temp_path(out, tmp, sizeof tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0 && errno == EEXIST && strix_atomic_remove_stale(out) > 0)
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644); /* a file of an ended process */
    if (fd < 0) {
        fprintf(stderr, "strix train: cannot write the checkpoint %s: %s\n", out,
                strerror(errno));
        return 2;
    }
    close(fd);
    unlink(tmp);
    return 0;
}

int out_lock_take(out_lock *l, const char *out, const char *cmd) {
    /* The lock follows a symbolic link to the file the saves replace, like the temp files. */
    char target[STRIX_PATH_MAX];
    if (strix_atomic_target_path(out, target, sizeof target) != STRIX_OK)
        snprintf(target, sizeof target, "%s", out);
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    if (strlen(base) + strlen(".lock") <= NAME_MAX)
        snprintf(l->path, sizeof l->path, "%s.lock", target);
    else /* "<name>.lock" would exceed NAME_MAX: a short name beside it */
        snprintf(l->path, sizeof l->path, "%.*s.strix-lock-%016llx",
                 slash ? (int)(slash - target + 1) : 0, target, name_hash(base));
    /* The lock file is removed at exit, so a lock taken on a file that was unlinked meanwhile
     * protects nothing: after locking, check that the path still names the locked file. A lock
     * file left by a killed process holds no lock (flock ends with its process) and is reused. */
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            fprintf(stderr, "strix %s: cannot create the lock file %s: %s\n", cmd, l->path,
                    strerror(errno));
            return 2;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int err = errno;
            close(fd);
            if (err == EWOULDBLOCK)
                fprintf(stderr, "strix %s: another strix process is training into %s (it "
                                "holds %s); choose another --out or wait for it\n", cmd, out,
                        l->path);
            else
                fprintf(stderr, "strix %s: cannot lock %s: %s\n", cmd, l->path,
                        strerror(err));
            return 2;
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && stat(l->path, &named) == 0 &&
            held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
            l->fd = fd;
            /* Holding the lock, no other strix process writes this output: temp files of
             * processes that have ended are leftovers (a kill -9 during a save). */
            int removed = strix_atomic_remove_stale(out);
            if (removed > 0)
                fprintf(stderr, "strix: note: removed %d temporary file%s of %s left by an "
                                "ended run\n", removed, removed == 1 ? "" : "s", out);
            return 0;
        }
        close(fd); /* the file was removed by the process that held it: take the new one */
    }
    fprintf(stderr, "strix train: cannot lock %s: it keeps being replaced\n", l->path);
    return 2;
}

void out_lock_release(out_lock *l) {
    if (l->fd < 0) return;
    unlink(l->path);
    close(l->fd);
    l->fd = -1;
}

// ---- stop signals ------------------------------------------------------------------------------

volatile sig_atomic_t out_stop_signal;
/* Non-zero between out_save_begin and out_save_end. Any thread may take a process-directed
 * signal (OpenBLAS's workers block nothing; strix's own block all), so the handler decides from
 * this flag, not from the calling thread's signal mask. */
static volatile sig_atomic_t out_saving;

/* Set by out_stop_signals_at_once: every signal counts as a second one. */
static volatile sig_atomic_t out_at_once;

/* When the first stop signal came (CLOCK_MONOTONIC; written by the handler only). */
static struct timespec out_first_at;

/* Whether `sig` repeats the first stop signal within 0.2 s: one request sent twice, as GNU
 * timeout does (to the child, then to its process group), not a second Ctrl-C. */
static bool same_request(int sig) {
    struct timespec now;
    if (sig != out_stop_signal || clock_gettime(CLOCK_MONOTONIC, &now) != 0) return false;
    double dt = (double)(now.tv_sec - out_first_at.tv_sec) +
                1e-9 * (double)(now.tv_nsec - out_first_at.tv_nsec);
    return dt >= 0.0 && dt < 0.2;
}

/* The first stop signal, and every one during a save, only sets the flag; a second one outside a
 * save ends the process as the signal's default action would (killed by SIGINT: status 130). The
 * same signal again within 0.2 s of the first counts as the first. */
static void on_signal(int sig) {
    if (out_stop_signal && !out_at_once && same_request(sig)) return;
    if ((out_stop_signal || out_at_once) && !out_saving) {
        /* one line (write(2) is async-signal-safe), then the default action; a rank under
         * the --procs launcher is silent: the launcher says what ended the job */
        static const char msg[] = "\nstrix: stopped at once by a second signal; the last "
                                  "checkpoint is kept as it was\n";
        if (!out_at_once) {
            ssize_t unused = write(STDERR_FILENO, msg, sizeof msg - 1);
            (void)unused;
        }
        signal(sig, SIG_DFL);
        raise(sig); /* blocked in this handler; delivered, and fatal, when it returns */
        return;
    }
    if (!out_stop_signal) clock_gettime(CLOCK_MONOTONIC, &out_first_at);
    out_stop_signal = sig;
}

void out_stop_signals_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; /* no SA_RESETHAND: the handler itself decides when to end */
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT); /* one handler at a time, whichever signal and thread */
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

void out_stop_signals_at_once(void) { out_at_once = 1; }

void out_stop_signals_ignore(void) {
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
}

void out_save_begin(out_save_guard *g) {
    out_saving = 1;
    sigset_t stop_set;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    sigprocmask(SIG_BLOCK, &stop_set, &g->old); /* this thread's system calls run on */
}

void out_save_end(out_save_guard *g) {
    if (out_stop_signal) out_stop_signals_ignore();
    out_saving = 0;
    sigprocmask(SIG_SETMASK, &g->old, NULL);
}
