/*
 * atomic.c - writing a file atomically: temp file, fflush + fsync, rename over the target, fsync
 * of the directory (strix/safetensors.h). A crash or error at any point leaves either the old
 * file or the complete new one, never a torn file.
 *
 * Does not lock: two processes saving to one path race, and the last rename wins.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strix/safetensors.h"

/* fsync of the directory holding `path`, so the rename itself is durable. */
static strix_status sync_parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[STRIX_PATH_MAX];
    if (!slash) {
        strcpy(dir, ".");
    } else if (slash == path) {
        strcpy(dir, "/");
    } else {
        size_t len = (size_t)(slash - path);
        if (len >= sizeof dir) return strix_error(STRIX_ERR_IO, "path too long: %s", path);
        memcpy(dir, path, len);
        dir[len] = '\0';
    }
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

void strix_atomic_temp_path(const char *path, char *buf, size_t cap) {
    snprintf(buf, cap, "%s.tmp.%ld", path, (long)getpid());
}

strix_status strix_write_file_atomic(const char *path, const void *const *chunks,
                                     const size_t *sizes, int n) {
    char tmp[STRIX_PATH_MAX + 32];
    if (!path || !path[0]) return strix_error(STRIX_ERR_ARG, "empty output path");
    if (strlen(path) >= STRIX_PATH_MAX)
        return strix_error(STRIX_ERR_ARG, "output path too long: %s", path);
    strix_atomic_temp_path(path, tmp, sizeof tmp);

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
    if (!step && rename(tmp, path) != 0) step = "rename", err = errno;
    if (step) {
        remove(tmp);
        /* Say what happened to the target: untouched if it existed, not created otherwise. */
        const char *fate = access(path, F_OK) == 0 ? "was left as it was" : "was not created";
        if (strcmp(step, "rename") == 0)
            return strix_error(STRIX_ERR_IO, "cannot replace '%s': %s (it %s)", path,
                               strerror(err), fate);
        return strix_error(STRIX_ERR_IO, "cannot %s '%s': %s ('%s' %s)", step, tmp,
                           strerror(err), path, fate);
    }
    return sync_parent_dir(path);
}
