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
#include <poll.h>
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
/* What is left of the run's checkpoint: "the last checkpoint X is intact" or that none was
 * saved. */
static const char *kept(const char *out, char *buf, size_t cap) {
    struct stat st;
    if (stat(out, &st) != 0) return "no checkpoint was saved";
    snprintf(buf, cap, "the last checkpoint %s is intact", out);
    return buf;
}

static bool notice(const char *box, const char *out) {
    const char *at = strstr(box, "process rank ");
    const char *sig = strstr(box, "on signal ");
    if (at && sig && !ended_at_once) {
        int rank = atoi(at + 13), signo = atoi(sig + 10);
        char buf[4200];
        fprintf(stderr, "strix: rank %d died (signal %d, %s); every process was stopped; %s\n",
                rank, signo, strsignal(signo), kept(out, buf, sizeof buf));
        return true;
    }
    if (at && sig) return true; /* our own SIGTERM: said below */
    if (!strstr(box, "non-zero exit code") && !strstr(box, "non-zero status")) fputs(box, stderr);
    return false;
}

/* mpirun's stderr, a line at a time: its boxed notices (between rules of dashes) reduced by
 * notice(); rank lines passed on until a rank died or the job was ended at once; mpirun's own
 * chatter (forwarded signals, libevent's epoll warnings as processes exit) dropped. */
typedef struct err_filter {
    char box[16384];
    size_t used;
    bool in_box, died;
    const char *out;
} err_filter;

static void err_line(err_filter *f, const char *line) {
    bool rule = strncmp(line, "----------", 10) == 0;
    if (rule && f->in_box) {
        f->box[f->used] = '\0';
        f->died |= notice(f->box, f->out);
        f->in_box = false;
    } else if (rule) {
        f->in_box = true;
        f->used = 0;
    } else if (f->in_box) {
        size_t n = strlen(line);
        if (f->used + n < sizeof f->box) memcpy(f->box + f->used, line, n), f->used += n;
    } else if (!f->died && !ended_at_once &&
               strncmp(line, "mpirun: Forwarding signal", 25) != 0 &&
               strncmp(line, "[warn] Epoll", 12) != 0) { // libevent's, as a job ends quickly
        fputs(line, stderr);
        fflush(stderr);
    }
}

/* One of mpirun's output pipes, split into lines. */
typedef struct pipe_lines {
    int fd;          /* -1 once closed */
    char buf[8192];
    size_t used;
} pipe_lines;

/* Reads what the pipe has; each complete line (and the rest at its end) goes to `line`. */
static void pump(pipe_lines *p, void (*line)(void *, const char *), void *user) {
    ssize_t n = read(p->fd, p->buf + p->used, sizeof p->buf - 1 - p->used);
    if (n < 0 && errno == EINTR) return;
    if (n > 0) p->used += (size_t)n;
    char *nl;
    while ((nl = memchr(p->buf, '\n', p->used)) != NULL || p->used == sizeof p->buf - 1 ||
           (n <= 0 && p->used > 0)) {
        size_t len = nl ? (size_t)(nl - p->buf) + 1 : p->used;
        char keep = p->buf[len];
        p->buf[len] = '\0';
        line(user, p->buf);
        p->buf[len] = keep;
        memmove(p->buf, p->buf + len, p->used - len);
        p->used -= len;
    }
    if (n <= 0) {
        close(p->fd);
        p->fd = -1;
    }
}

static void out_line_cb(void *user, const char *line) {
    (void)user;
    fputs(line, stdout); /* a failed write shows at exit (main.c), as for every command */
    fflush(stdout);
}

static void err_line_cb(void *user, const char *line) { err_line(user, line); }

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
    args[k++] = "--bind-to"; // each rank's threads take their share of the cores
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
    int errfd[2], outfd[2];
    if (pipe(errfd) != 0 || pipe(outfd) != 0) {
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
        dup2(errfd[1], STDERR_FILENO);
        dup2(outfd[1], STDOUT_FILENO);
        close(errfd[0]);
        close(errfd[1]);
        close(outfd[0]);
        close(outfd[1]);
        execvp("mpirun", args);
        fprintf(stderr, "strix: --procs: cannot run mpirun: %s\n", strerror(errno));
        _exit(127);
    }
    free(args);
    close(errfd[1]);
    close(outfd[1]);
    if (pid < 0) {
        close(errfd[0]);
        close(outfd[0]);
        fprintf(stderr, "strix: --procs: fork: %s\n", strerror(errno));
        return 1;
    }
    child_pid = pid;
    if (ended_at_once) kill(pid, SIGTERM); /* a second signal came before the pid was known */
    // mpirun's stdout and stderr, read as they come until both close
    err_filter filter = {.out = out};
    pipe_lines pipes[2] = {{.fd = outfd[0]}, {.fd = errfd[0]}};
    while (pipes[0].fd >= 0 || pipes[1].fd >= 0) {
        struct pollfd pf[2] = {{.fd = pipes[0].fd, .events = POLLIN},
                               {.fd = pipes[1].fd, .events = POLLIN}};
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (pf[0].revents) pump(&pipes[0], out_line_cb, NULL);
        if (pf[1].revents) pump(&pipes[1], err_line_cb, &filter);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    child_pid = 0;
    unlink(stop_path);
    if (ended_at_once) {
        char buf[4200];
        fprintf(stderr, "strix: stopped at once (a second Ctrl-C, or the terminal closed); every "
                        "process was ended; %s\n", kept(out, buf, sizeof buf));
        return 130;
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
