/*
 * main.c - the strix command: dispatch to the subcommands, --help and --version.
 *
 * Also the process-wide rules of the command's output: descriptors 0, 1 and 2 are open before any
 * file is (a closed one gets /dev/null, so no lock file or checkpoint becomes "stderr"), and a
 * failed write to stdout is an error: one line on stderr and exit status 1, never a silent 0.
 *
 * Does not train, sample or explain itself (train.c, sample.c, explain.c) and loads nothing on its
 * own.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "strix/dist.h"
#include "tool.h"

#ifndef STRIX_TOOL_BACKENDS /* set by CMake from the backends it builds */
#define STRIX_TOOL_BACKENDS "cpu"
#endif

static void print_help(FILE *out) {
    fprintf(out,
            "strix - train, sample and explain small character-level language models, run and "
            "explain Llama-family ones (C11; backends built: " STRIX_TOOL_BACKENDS ")\n"
            "\n"
            "Usage:\n"
            "  strix train  [--data PATH] [--out model.safetensors] [flags]   train a model\n"
            "  strix sample --model CKPT [--prompt TEXT] [flags]              generate text\n"
            "  strix explain --model CKPT --prompt TEXT [flags]               "
            "explain a prediction\n"
            "  strix generate --model DIR|FILE.gguf --prompt TEXT [flags]     "
            "continue a prompt with a Llama-family model\n"
            "  strix chat --model DIR|FILE.gguf [--system TEXT]               "
            "talk to a chat model (Ctrl-D ends)\n"
            "  strix explain --model DIR|FILE.gguf --prompt TEXT [flags]      "
            "explain its next token (AttnLRP)\n"
            "  strix export --model CKPT --out FILE                           "
            "write the weights alone\n"
            "  strix plot [LOG] --svg FILE                                    "
            "draw a run's loss curves\n"
            "  strix rl train|eval|explain|plot [flags]                       "
            "reinforcement learning\n"
            "  strix --help | --version\n"
            "\n"
            "  strix COMMAND --help lists every flag of COMMAND with its default.\n"
            "\n"
            "Examples:\n"
            "  strix train --data ../shared/data/tinyshakespeare.txt --time 120\n"
            "  strix train --resume model.safetensors        (continue an interrupted run)\n"
            "  strix sample --model model.safetensors --prompt 'ROMEO:' --tokens 300\n"
            "  strix explain --model model.safetensors --prompt 'ROMEO: Good morr' --svg r.svg\n"
            "  strix generate --model SmolLM2-135M-Instruct.Q4_1.gguf --prompt 'The owl' --chat\n"
            "\n"
            "Checkpoints are safetensors files with the weights, the AdamW state, the vocabulary\n"
            "and the whole run configuration (strix export writes the weights alone); nothing is\n"
            "ever loaded unless named.\n");
}

/* Opens /dev/null onto each of the descriptors 0, 1, 2 that is closed (a `2>&-` shell), so that the
 * next file opened never takes a standard descriptor. Returns 0, or -1 when one cannot be made. */
static int open_std_descriptors(void) {
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        int got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (got != fd) {
            if (got >= 0) close(got);
            return -1;
        }
    }
    return 0;
}

/* The exit status once the command returned `rc`: a write to stdout that failed (now or earlier,
 * ferror) turns a success into 1 with one line on stderr; a failure keeps its status (the command
 * has said why). */
static int finish_stdout(int rc) {
    errno = 0;
    bool flush_failed = fflush(stdout) != 0;
    int err = errno;
    if (rc != 0 || (!flush_failed && !ferror(stdout))) return rc;
    if (flush_failed && err)
        fprintf(stderr, "strix: cannot write to standard output: %s\n", strerror(err));
    else
        fprintf(stderr, "strix: cannot write to standard output (a write failed)\n");
    return 1;
}

static int run_command(int argc, char **argv);

int main(int argc, char **argv) {
    if (open_std_descriptors() != 0) return 2; /* nowhere to say it */
    /* Into a file or pipe, a help text or a table stays buffered until finish_stdout, whose flush
     * then names the reason of a failure (a failed flush midway loses errno); the commands flush
     * their progress themselves. */
    static char out_buffer[1 << 16]; /* glibc ignores the size without a buffer */
    if (!isatty(STDOUT_FILENO)) setvbuf(stdout, out_buffer, _IOFBF, sizeof out_buffer);
    return finish_stdout(run_command(argc, argv));
}

static int run_command(int argc, char **argv) {
    if (argc < 2) {
        print_help(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    bool info = strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
                strcmp(cmd, "help") == 0 || strcmp(cmd, "--version") == 0;
    if (info && argc > 2) {
        fprintf(stderr, "strix: %s takes no arguments (got '%s'); for a command's flags use "
                        "strix train --help, strix sample --help or strix explain --help\n",
                cmd, argv[2]);
        return 2;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        print_help(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("strix %s\n", STRIX_TOOL_VERSION);
        printf("multi-process training: %s\n", strix_dist_has_mpi()
                   ? "MPI (strix train --procs N, or mpirun -np N strix train)"
                   : "off (built without MPI: apt-get install libopenmpi-dev openmpi-bin)");
        if (fflush(stdout) != 0) {
            fprintf(stderr, "strix: cannot write the version: %s\n", strerror(errno));
            return 1;
        }
        return 0; /* any other write error is reported by finish_stdout */
    }
    if (strcmp(cmd, "train") == 0) return cmd_train(argc, argv);
    if (strcmp(cmd, "sample") == 0) return cmd_sample(argc, argv);
    if (strcmp(cmd, "explain") == 0) return cmd_explain(argc, argv);
    if (strcmp(cmd, "export") == 0) return cmd_export(argc, argv);
    if (strcmp(cmd, "plot") == 0) return cmd_plot(argc, argv);
    if (strcmp(cmd, "rl") == 0) return cmd_rl(argc, argv);
    if (strcmp(cmd, "generate") == 0) return cmd_generate(argc, argv);
    if (strcmp(cmd, "chat") == 0) return cmd_chat(argc, argv);
    fprintf(stderr, "strix: unknown command '%s' (commands: train, sample, explain, export, plot, rl, "
                    "generate, chat; "
                    "see strix --help)\n", cmd);
    return 2;
}
