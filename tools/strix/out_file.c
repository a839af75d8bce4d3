/*
 * out_file.c - the file a run writes: checks before training, the "<out>.lock" lock, and the stop
 * signals held off around a save (out_file.h).
 */
#define _XOPEN_SOURCE 700 /* POSIX 2008 with realpath */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
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

int out_check(const char *out, const char *data, bool replace_ok) {
    (void)replace_ok; /* TODO(issue 10 item 8): refuse another run's checkpoint without it */
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
    struct stat os, ds;
    bool exists = stat(out, &os) == 0;
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
    out_parent_of(out, parent, sizeof parent);
    struct stat ps;
    int parent_err = stat(parent, &ps) != 0 ? errno : S_ISDIR(ps.st_mode) ? 0 : ENOTDIR;
    if (parent_err) {
        fprintf(stderr, "strix train: cannot write the checkpoint %s: directory '%s': %s\n", out,
                parent, parent_err == ENOENT ? "does not exist" : strerror(parent_err));
        return 2;
    }
    if (data && stat(data, &ds) == 0) {
        if (exists && os.st_dev == ds.st_dev && os.st_ino == ds.st_ino) {
            fprintf(stderr, "strix train: --out '%s' is the corpus --data '%s'; refusing to "
                            "overwrite it (choose another --out)\n", out, data);
            return 2;
        }
        if (S_ISDIR(ds.st_mode)) {
            char abs_parent[STRIX_PATH_MAX], abs_data[STRIX_PATH_MAX];
            out_resolve_path(parent, abs_parent, sizeof abs_parent);
            out_resolve_path(data, abs_data, sizeof abs_data);
            size_t n = strlen(abs_data);
            if (strncmp(abs_parent, abs_data, n) == 0 &&
                (abs_parent[n] == '\0' || abs_parent[n] == '/' || n == 1)) {
                fprintf(stderr, "strix train: --out '%s' lies inside the corpus directory '%s'; "
                                "write the checkpoint elsewhere\n", out, data);
                return 2;
            }
        }
    }
    if (exists && strix_checkpoint_probe(out) != STRIX_OK) {
        fprintf(stderr, "strix train: --out '%s' exists and is not a strix checkpoint; refusing "
                        "to replace it (remove it or choose another --out)\n", out);
        return 2;
    }
    char tmp[STRIX_PATH_MAX + 32];
    strix_atomic_temp_path(out, tmp, sizeof tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
        fprintf(stderr, "strix train: cannot write the checkpoint %s: %s\n", out,
                strerror(errno));
        return 2;
    }
    close(fd);
    unlink(tmp);
    return 0;
}

int out_lock_take(out_lock *l, const char *out) {
    snprintf(l->path, sizeof l->path, "%s.lock", out);
    /* The lock file is removed at exit, so a lock taken on a file that was unlinked meanwhile
     * protects nothing: after locking, check that the path still names the locked file. */
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = open(l->path, O_RDWR | O_CREAT, 0644);
        if (fd < 0) {
            fprintf(stderr, "strix train: cannot create the lock file %s: %s\n", l->path,
                    strerror(errno));
            return 2;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int err = errno;
            close(fd);
            if (err == EWOULDBLOCK)
                fprintf(stderr, "strix train: another strix process is training into %s (it "
                                "holds %s); choose another --out or wait for it\n", out,
                        l->path);
            else
                fprintf(stderr, "strix train: cannot lock %s: %s\n", l->path,
                        strerror(err));
            return 2;
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && stat(l->path, &named) == 0 &&
            held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
            l->fd = fd;
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

static void on_signal(int sig) { out_stop_signal = sig; }

void out_stop_signals_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C mid-step ends the process; saves hold it off */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

void out_stop_signals_ignore(void) {
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
}

void out_save_begin(out_save_guard *g) {
    sigset_t stop_set;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    sigprocmask(SIG_BLOCK, &stop_set, &g->old);
}

void out_save_end(out_save_guard *g) {
    if (out_stop_signal) out_stop_signals_ignore();
    sigprocmask(SIG_SETMASK, &g->old, NULL);
}
