/*
 * launch.c - `strix train --procs N` (launch.h): mpirun as a child in its own process group; a
 * first Ctrl-C creates the stop file the ranks look for after every step (so it needs mpirun to
 * be ready for nothing and is never lost at start-up); a second one, or SIGHUP, is SIGTERM to
 * mpirun; mpirun's stderr is read line by line: rank lines go through, its boxed notices become
 * one line.
 */
#define _XOPEN_SOURCE 700

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch.h"

static volatile sig_atomic_t child_pid, stops, ended_at_once;
static char stop_path[64]; /* the stop file: "/tmp/strix-stop-<launcher pid>" */

/* The first SIGINT/SIGTERM creates the stop file (every rank stops after its step, rank 0
 * saves); a second one, or SIGHUP (the terminal is gone), ends the job at once: SIGTERM to
 * mpirun, which passes it on and kills what is left a second later. */
static void on_stop(int sig) {
    if (sig != SIGHUP && stops++ == 0) {
        int fd = open(stop_path, O_WRONLY | O_CREAT, 0600);
        if (fd >= 0) close(fd);
        return;
    }
    ended_at_once = 1;
    if (child_pid > 0) kill((pid_t)child_pid, SIGTERM);
}

/* True when `name` is an executable file in a directory of PATH. */
static bool on_path(const char *name) {
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    char buf[4096];
    while (*path) {
        size_t len = strcspn(path, ":");
        if (len > 0 && len + strlen(name) + 2 < sizeof buf) {
            snprintf(buf, sizeof buf, "%.*s/%s", (int)len, path, name);
            struct stat st;
            if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
                return true;
        }
        path += len + (path[len] == ':');
    }
    return false;
}

/* mpirun's notice between two rules of dashes, reduced: a rank that died by a signal is one
 * line (and true is returned: what the other ranks still print as they are stopped is noise);
 * the note that a rank exited non-zero is dropped (the rank said why itself); anything else is
 * shown as it came. */
static bool notice(const char *box, const char *out) {
    const char *at = strstr(box, "process rank ");
    const char *sig = strstr(box, "on signal ");
    if (at && sig && !ended_at_once) {
        int rank = atoi(at + 13), signo = atoi(sig + 10);
        struct stat st;
        char kept[4200] = "no checkpoint was saved";
        if (stat(out, &st) == 0) snprintf(kept, sizeof kept, "the last checkpoint %s is intact", out);
        fprintf(stderr, "strix: rank %d died (signal %d, %s); every process was stopped; %s\n",
                rank, signo, strsignal(signo), kept);
        return true;
    }
    if (at && sig) return true; /* our own SIGTERM: said below */
    if (!strstr(box, "non-zero exit code") && !strstr(box, "non-zero status")) fputs(box, stderr);
    return false;
}

int launch_train(int procs, int argc, char **argv, const char *out) {
    if (!on_path("mpirun")) {
        fprintf(stderr, "strix: --procs %d needs OpenMPI's mpirun on PATH (apt-get install "
                        "openmpi-bin)\n", procs);
        return 127;
    }
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "strix: --procs: cannot find this program's path\n");
        return 1;
    }
    self[len] = '\0';
    char np[16];
    snprintf(np, sizeof np, "%d", procs);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char **args = calloc((size_t)argc + 12, sizeof *args);
    if (!args) return 1;
    int k = 0;
    args[k++] = "mpirun";
    args[k++] = "-np";
    args[k++] = np;
    args[k++] = "--bind-to"; // each rank's OpenMP threads take their share of the cores
    args[k++] = "none";
    args[k++] = "-x"; // the stop file's path, to every rank
    args[k++] = "STRIX_STOP_FILE";
    if (procs > cores) args[k++] = "--oversubscribe";
    if (geteuid() == 0) args[k++] = "--allow-run-as-root"; // containers run as root
    args[k++] = self;
    for (int i = 1; i < argc; i++) args[k++] = argv[i];
    snprintf(stop_path, sizeof stop_path, "/tmp/strix-stop-%ld", (long)getpid());
    unlink(stop_path);
    setenv("STRIX_STOP_FILE", stop_path, 1);
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        free(args);
        fprintf(stderr, "strix: --procs: pipe: %s\n", strerror(errno));
        return 1;
    }
    // the handlers before the fork, so no signal finds the launcher gone and mpirun orphaned
    // (exec gives the child the default actions back)
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0); // a terminal's Ctrl-C reaches this launcher only, which passes it on
        dup2(pipefd[1], STDERR_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        execvp("mpirun", args);
        fprintf(stderr, "strix: --procs: cannot run mpirun: %s\n", strerror(errno));
        _exit(127);
    }
    free(args);
    close(pipefd[1]);
    if (pid < 0) {
        close(pipefd[0]);
        fprintf(stderr, "strix: --procs: fork: %s\n", strerror(errno));
        return 1;
    }
    child_pid = pid;
    if (ended_at_once) kill(pid, SIGTERM); /* a second signal came before the pid was known */
    FILE *in = fdopen(pipefd[0], "r");
    char line[4096], box[16384];
    size_t used = 0;
    bool in_box = false, died = false;
    while (in && fgets(line, sizeof line, in)) {
        bool rule = strncmp(line, "----------", 10) == 0;
        if (rule && in_box) {
            box[used] = '\0';
            died |= notice(box, out);
            in_box = false;
        } else if (rule) {
            in_box = true;
            used = 0;
        } else if (in_box) {
            size_t n = strlen(line);
            if (used + n < sizeof box) memcpy(box + used, line, n), used += n;
        } else if (!died && !ended_at_once &&
                   strncmp(line, "mpirun: Forwarding signal", 25) != 0) {
            fputs(line, stderr);
            fflush(stderr);
        }
    }
    if (in) fclose(in);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    child_pid = 0;
    unlink(stop_path);
    if (ended_at_once) {
        fprintf(stderr, "strix: stopped at once (a second Ctrl-C, or the terminal closed); every "
                        "process was ended; the last complete checkpoint is kept\n");
        return 130;
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
