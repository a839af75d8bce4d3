/*
 * out_file.h - the file a run writes (`strix train --out`): the checks made before any training,
 * the lock that keeps two processes out of one file, and the stop signals (Ctrl-C, SIGTERM) that
 * ask a run to stop but never cut a save short (out_file.c).
 *
 * Does not write checkpoints itself: the save is the library's atomic write
 * (strix_checkpoint_save); this file only holds the signals off around it.
 */
#ifndef STRIX_TOOL_OUT_FILE_H
#define STRIX_TOOL_OUT_FILE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "strix/safetensors.h" /* STRIX_PATH_MAX */

/* `path` made absolute (realpath) into buf; `path` itself when it cannot be resolved. */
void out_resolve_path(const char *path, char *buf, size_t cap);

/* The directory part of `path` ("." for a bare name). */
void out_parent_of(const char *path, char *buf, size_t cap);

/* Refuses (exit code 2, one line on stderr) an --out that the run could not or must not write,
 * before any training: an empty path, a path ending in '/', a directory or other non-regular
 * file, the corpus itself or a file directly in the corpus directory (it is read
 * non-recursively: its subdirectories may hold --out), an existing file that is not a strix
 * checkpoint, an existing strix checkpoint unless `replace_ok` (--force or --resume; the line
 * names its step and the two flags; for a weights-only file --force and --init-from), a
 * missing or unwritable directory (tried by creating and removing the very temp file the atomic
 * save will use). A symbolic link is judged by its target,
 * which the saves replace. `data` is the corpus path (NULL: none to compare with).
 * Returns 0 when the path may be written. */
int out_check(const char *out, const char *data, bool replace_ok);

/* True when `a` and `b` name the same file: the same inode when both exist, else the same name
 * once the links of the last component are followed and the directory is made absolute (so a
 * file not written yet is compared too). */
bool out_same_file(const char *a, const char *b);

/* Refuses (exit code 2, one line on stderr starting with `what`, e.g. "--metrics 'x.jsonl'") a
 * file the run would write at `path` that is the corpus `data` itself or lies directly in the
 * corpus directory (its subdirectories are fine: directories are read non-recursively). A
 * symbolic link is judged by its target. 0 when `data` is NULL or does not exist. */
int out_check_outside_corpus(const char *what, const char *path, const char *data);

/* An advisory lock on "<target>.lock" beside the file the saves replace (the target of a link),
 * or on "<dir>/.strix-lock-<hash>" when that name would exceed NAME_MAX (flock; the file is
 * removed at release; one left by a killed process holds no lock and is reused). */
typedef struct out_lock {
    int fd; /* -1: not held */
    char path[STRIX_PATH_MAX + 8];
} out_lock;

/* Takes the lock of `out` so that two strix processes never train into the same file, then
 * removes the temp files of `out` that ended processes left (strix_atomic_remove_stale; a note on
 * stderr names how many). Returns 0, or 2 (one line on stderr, "strix <cmd>: ...") when another
 * process holds it or it cannot be made. */
int out_lock_take(out_lock *l, const char *out, const char *cmd);

/* Releases a held lock and removes its file; nothing when l->fd < 0. */
void out_lock_release(out_lock *l);

/* The stop flag: the number of the stop signal received (SIGINT, SIGTERM), 0 while none came. */
extern volatile sig_atomic_t out_stop_signal;

/* Installs the stop handlers: the first SIGINT/SIGTERM sets out_stop_signal, the run finishes its
 * step, saves and reports; a second one outside a save ends the process at once (killed by the
 * signal, as without a handler), except the same signal within 0.2 s of the first (one request
 * sent to the process and again to its group, as GNU timeout does); during a save (out_save_begin..out_save_end) every one only sets
 * the flag, whichever thread of the process takes it. */
void out_stop_signals_install(void);

/* A rank under `strix train --procs` (launch.h): its stop request comes through the launcher's
 * stop file, so every stop signal (mpirun's SIGTERM after a second Ctrl-C or a hang-up) ends it
 * at once, as a second one does (still held off during a save). */
void out_stop_signals_at_once(void);

/* From here on stop signals are ignored (pending ones discarded): the run only saves and
 * reports. */
void out_stop_signals_ignore(void);

/* Brackets a save: stop signals that arrive between begin and end never end the process; they
 * are recorded in out_stop_signal (and held in the calling thread until end). At end, once a stop
 * was asked for, later ones are ignored. */
typedef struct out_save_guard {
    sigset_t old;
} out_save_guard;
void out_save_begin(out_save_guard *g);
void out_save_end(out_save_guard *g);

#endif
