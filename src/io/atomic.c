/*
 * atomic.c - writing a file atomically: temp file, fflush + fsync, rename over the target, fsync
 * of the directory (strix/safetensors.h). A crash or error at any point leaves either the old
 * file or the complete new one, never a torn file. A symbolic link at the path is written
 * through: the temp file lies in the directory of the link's target and is renamed over the
 * target, so the link stays a link.
 *
 * Temp names are short and fixed in form, ".strix-tmp-<pid>-<h>" beside the target, where <h> is
 * 16 hex digits of the FNV-1a 64-bit hash of the target's file name: a name near NAME_MAX still
 * fits, and the temp files of one output can be found (and, when their process is gone, removed:
 * strix_atomic_remove_stale).
 *
 * Does not lock: two processes saving to one path race, and the last rename wins.
 */
#define _XOPEN_SOURCE 700 /* POSIX 2008: readlink, lstat, kill, dirent */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "strix/safetensors.h"

#define TEMP_PREFIX ".strix-tmp-"
#define MAX_LINK_HOPS 40 /* Linux's MAXSYMLINKS */

/* The directory part of `path` into dir ("." for a bare name, "/" for a file in the root). */
static void dir_of(const char *path, char *dir, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, cap, ".");
    else if (slash == path) snprintf(dir, cap, "/");
    else snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

/* The file name part of `path` (after its last '/'). */
static const char *base_of(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* FNV-1a, 64 bits (Fowler, Noll, Vo), of the string s. */
static uint64_t name_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3u;
    return h;
}

/* fsync of the directory holding `path`, so the rename itself is durable. */
static strix_status sync_parent_dir(const char *path) {
    char dir[STRIX_PATH_MAX];
    dir_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return strix_error(STRIX_ERR_IO, "cannot open directory '%s' to sync it: %s", dir,
                           strerror(errno));
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    /* Some file systems refuse fsync on directories (EINVAL); the data itself is synced. */
    if (rc != 0 && err != EINVAL)
        return strix_error(STRIX_ERR_IO, "cannot sync directory '%s': %s", dir, strerror(err));
    return STRIX_OK;
}

strix_status strix_atomic_target_path(const char *path, char *buf, size_t cap) {
    if (!path || !path[0]) return strix_error(STRIX_ERR_ARG, "empty output path");
    if (strlen(path) >= cap || strlen(path) >= STRIX_PATH_MAX)
        return strix_error(STRIX_ERR_ARG, "output path too long: %s", path);
    char cur[STRIX_PATH_MAX];
    snprintf(cur, sizeof cur, "%s", path);
    for (int hops = 0;; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) break; /* a file, or nothing yet */
        if (hops == MAX_LINK_HOPS)
            return strix_error(STRIX_ERR_IO, "cannot write '%s': %s", path, strerror(ELOOP));
        char link[STRIX_PATH_MAX];
        ssize_t n = readlink(cur, link, sizeof link);
        if (n < 0)
            return strix_error(STRIX_ERR_IO, "cannot read the link '%s': %s", cur,
                               strerror(errno));
        if ((size_t)n >= sizeof link)
            return strix_error(STRIX_ERR_ARG, "the link '%s' points to a too long path", cur);
        link[n] = '\0';
        char next[STRIX_PATH_MAX], dir[STRIX_PATH_MAX];
        int len;
        dir_of(cur, dir, sizeof dir);
        if (link[0] == '/' || !strchr(cur, '/')) len = snprintf(next, sizeof next, "%s", link);
        else len = snprintf(next, sizeof next, "%s/%s", dir, link); /* relative to the link */
        if (len < 0 || (size_t)len >= sizeof next)
            return strix_error(STRIX_ERR_ARG, "the link '%s' points to a too long path", cur);
        memcpy(cur, next, (size_t)len + 1);
    }
    if (strlen(cur) >= cap)
        return strix_error(STRIX_ERR_ARG, "output path too long: %s", cur);
    memcpy(buf, cur, strlen(cur) + 1);
    return STRIX_OK;
}

/* The temp name of the resolved target `target` for process `pid`. */
static void temp_of(const char *target, long pid, char *buf, size_t cap) {
    const char *slash = strrchr(target, '/');
    snprintf(buf, cap, "%.*s" TEMP_PREFIX "%ld-%016" PRIx64, slash ? (int)(slash - target + 1) : 0,
             target, pid, name_hash(base_of(target)));
}

void strix_atomic_temp_path(const char *path, char *buf, size_t cap) {
    char target[STRIX_PATH_MAX];
    if (strix_atomic_target_path(path, target, sizeof target) != STRIX_OK)
        snprintf(target, sizeof target, "%s", path ? path : "");
    temp_of(target, (long)getpid(), buf, cap);
}

/* The pid of a temp file name of `base` (the target's file name): ".strix-tmp-<pid>-<hash of
 * base>", or the form of earlier versions "<base>.tmp.<pid>"; 0 when `name` is neither. */
static long temp_owner(const char *name, const char *base, uint64_t hash) {
    const char *digits = NULL;
    char *end;
    size_t bl = strlen(base);
    if (strncmp(name, TEMP_PREFIX, strlen(TEMP_PREFIX)) == 0) {
        digits = name + strlen(TEMP_PREFIX);
        long pid = strtol(digits, &end, 10);
        char tail[32];
        snprintf(tail, sizeof tail, "-%016" PRIx64, hash);
        return end != digits && pid > 0 && strcmp(end, tail) == 0 ? pid : 0;
    }
    if (strncmp(name, base, bl) == 0 && strncmp(name + bl, ".tmp.", 5) == 0) {
        digits = name + bl + 5;
        long pid = strtol(digits, &end, 10);
        return end != digits && *end == '\0' && pid > 0 ? pid : 0;
    }
    return 0;
}

int strix_atomic_remove_stale(const char *path) {
    char target[STRIX_PATH_MAX], dir[STRIX_PATH_MAX];
    if (strix_atomic_target_path(path, target, sizeof target) != STRIX_OK) return 0;
    dir_of(target, dir, sizeof dir);
    const char *base = base_of(target);
    uint64_t hash = name_hash(base);
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = temp_owner(e->d_name, base, hash);
        if (pid == 0) continue;
        /* a live process (kill succeeds, or EPERM: it runs under another user) owns its file */
        if (pid != (long)getpid() && !(kill((pid_t)pid, 0) != 0 && errno == ESRCH)) continue;
        char file[STRIX_PATH_MAX + 256];
        snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(file, &st) == 0 && S_ISREG(st.st_mode) && unlink(file) == 0) removed++;
    }
    closedir(d);
    return removed;
}

strix_status strix_write_file_atomic(const char *path, const void *const *chunks,
                                     const size_t *sizes, int n) {
    char target[STRIX_PATH_MAX], tmp[STRIX_PATH_MAX + 64];
    if (!path || !path[0]) return strix_error(STRIX_ERR_ARG, "empty output path");
    if (strlen(path) >= STRIX_PATH_MAX)
        return strix_error(STRIX_ERR_ARG, "output path too long: %s", path);
    STRIX_TRY(strix_atomic_target_path(path, target, sizeof target));
    /* rename would replace a device, FIFO or socket node itself (as root even /dev/null) */
    struct stat st;
    if (stat(target, &st) == 0 && !S_ISREG(st.st_mode))
        return strix_error(STRIX_ERR_IO, "cannot replace '%s': it is not a regular file (%s; it "
                           "was left as it was)", path, S_ISDIR(st.st_mode) ? "a directory"
                           : "a device, FIFO or socket");
    temp_of(target, (long)getpid(), tmp, sizeof tmp);

    /* O_EXCL: never write through a file (or link) that happens to carry the temp name. */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return strix_error(STRIX_ERR_IO, "cannot write '%s' (its temporary file '%s'): %s", path,
                           tmp, strerror(errno));
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int err = errno;
        close(fd);
        remove(tmp);
        return strix_error(STRIX_ERR_IO, "cannot write '%s' (its temporary file '%s'): %s", path,
                           tmp, strerror(err));
    }
    const char *step = NULL;
    int err = 0;
    for (int i = 0; i < n && !step; i++)
        if (sizes[i] && fwrite(chunks[i], 1, sizes[i], f) != sizes[i]) step = "write", err = errno;
    if (!step && fflush(f) != 0) step = "flush", err = errno;
    if (!step && fsync(fileno(f)) != 0) step = "fsync", err = errno;
    if (fclose(f) != 0 && !step) step = "close", err = errno;
    if (!step && rename(tmp, target) != 0) step = "rename", err = errno;
    if (step) {
        remove(tmp);
        /* Say what happened to the target: untouched if it existed, not created otherwise. */
        const char *fate = access(target, F_OK) == 0 ? "was left as it was" : "was not created";
        if (strcmp(step, "rename") == 0)
            return strix_error(STRIX_ERR_IO, "cannot replace '%s': %s (it %s)", path,
                               strerror(err), fate);
        return strix_error(STRIX_ERR_IO, "cannot write '%s': %s (at the %s of its temporary "
                           "file '%s', removed; it %s)", path, strerror(err), step, tmp, fate);
    }
    return sync_parent_dir(target);
}
