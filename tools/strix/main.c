/*
 * main.c - the strix command: dispatch to the subcommands, --help and --version.
 *
 * Does not train, sample or explain itself (train.c, sample.c, explain.c) and loads nothing on its
 * own.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tool.h"

#ifndef STRIX_TOOL_BACKENDS /* set by CMake from the backends it builds */
#define STRIX_TOOL_BACKENDS "cpu"
#endif

static void print_help(FILE *out) {
    fprintf(out,
            "strix - train, sample and explain a small character-level GPT (C11; backends "
            "built: " STRIX_TOOL_BACKENDS ")\n"
            "\n"
            "Usage:\n"
            "  strix train  [--data PATH] [--out model.safetensors] [flags]   train a model\n"
            "  strix sample --model CKPT [--prompt TEXT] [flags]              generate text\n"
            "  strix explain --model CKPT --prompt TEXT [flags]               "
            "explain a prediction\n"
            "  strix export --model CKPT --out FILE                           "
            "write the weights alone\n"
            "  strix plot [LOG] --svg FILE                                    "
            "draw a run's loss curves\n"
            "  strix --help | --version\n"
            "\n"
            "  strix COMMAND --help lists every flag of COMMAND with its default.\n"
            "\n"
            "Examples:\n"
            "  strix train --data ../shared/data/tinyshakespeare.txt --time 120\n"
            "  strix train --resume model.safetensors        (continue an interrupted run)\n"
            "  strix sample --model model.safetensors --prompt 'ROMEO:' --tokens 300\n"
            "  strix explain --model model.safetensors --prompt 'ROMEO: Good morr' --svg r.svg\n"
            "\n"
            "Checkpoints are safetensors files with the weights, the AdamW state, the vocabulary\n"
            "and the whole run configuration (strix export writes the weights alone); nothing is\n"
            "ever loaded unless named.\n");
}

int main(int argc, char **argv) {
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
        if (fflush(stdout) != 0) {
            fprintf(stderr, "strix: cannot write the version: %s\n", strerror(errno));
            return 1;
        }
        return 0;
    }
    if (strcmp(cmd, "train") == 0) return cmd_train(argc, argv);
    if (strcmp(cmd, "sample") == 0) return cmd_sample(argc, argv);
    if (strcmp(cmd, "explain") == 0) return cmd_explain(argc, argv);
    if (strcmp(cmd, "export") == 0) return cmd_export(argc, argv);
    if (strcmp(cmd, "plot") == 0) return cmd_plot(argc, argv);
    fprintf(stderr, "strix: unknown command '%s' (commands: train, sample, explain, export, plot; "
                    "see strix --help)\n", cmd);
    return 2;
}
