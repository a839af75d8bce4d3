/*
 * args.h - the strix command's small flag parser: `--name value` and `--name=value`, switches
 * without a value, typed targets with inclusive or open ranges, and --help text generated from the
 * same table, so every flag is listed with its default.
 *
 * Does not support short options or abbreviations; positional arguments only where a command
 * asks for them (args_parse_positional).
 */
#ifndef STRIX_TOOL_ARGS_H
#define STRIX_TOOL_ARGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum arg_kind {
    ARG_SWITCH, /* bool, no value */
    ARG_INT,    /* int */
    ARG_I64,    /* int64_t */
    ARG_U64,    /* uint64_t */
    ARG_FLOAT,  /* float */
    ARG_DOUBLE, /* double */
    ARG_STRING, /* const char * (points into argv) */
} arg_kind;

/* One flag. Numbers must lie in [min, max]; min_open makes the lower bound exclusive. */
typedef struct arg_spec {
    const char *name;  /* without the leading "--" */
    arg_kind kind;
    void *target;
    double min, max;
    bool min_open;
    const char *meta;  /* value placeholder in --help ("N", "PATH") */
    const char *help;  /* one line; states the default */
    bool hidden;       /* testing flags: listed under "testing" */
    bool seen;         /* set by args_parse */
} arg_spec;

/* Table rows: FLAG(name, kind, target, min, max, min_open, meta, help); TESTING_FLAG marks a
 * hidden one (listed under "Testing"). */
#define FLAG(name, kind, target, min, max, min_open, meta, help)                                 \
    {name, kind, target, min, max, min_open, meta, help, false, false}
#define TESTING_FLAG(name, kind, target, min, max, min_open, meta, help)                         \
    {name, kind, target, min, max, min_open, meta, help, true, false}

/* The flags of the subcommands that run a checkpoint's model (sample, explain), into the fields
 * of the same names of the flags struct `f` points to: --model, and --threads, --backend and
 * --device (three entries). */
#define TOOL_MODEL_FLAG(f)                                                                     \
    FLAG("model", ARG_STRING, &(f)->model, 0, 0, 0, "CKPT",                                    \
         "checkpoint from strix train or strix export (required, no default)")
#define TOOL_RUN_FLAGS(f)                                                                      \
    FLAG("threads", ARG_INT, &(f)->threads, 0, 4096, 0, "N",                                   \
         "CPU threads, 0 = all (default 0)"),                                                  \
        FLAG("backend", ARG_STRING, &(f)->backend, 0, 0, 0, "NAME",                            \
             "CPU backend: cpu or cpu-blas (default cpu)"),                                    \
        FLAG("device", ARG_STRING, &(f)->device, 0, 0, 0, "DEV",                               \
             "cpu, cuda[:N] or hip[:N]: where the model runs (default cpu)")

/* Parses argv[first..argc) into specs. Returns 0 on success, 1 when --help was asked (help
 * printed to stdout), 2 after printing ONE line "strix <cmd>: <problem>" to stderr for an unknown
 * flag, a missing or malformed value, or a value out of range. */
int args_parse(const char *cmd, int argc, char **argv, int first, arg_spec *specs, int n);

/* args_parse for a command that also takes up to max_pos positional arguments, anywhere among
 * the flags: an argument not starting with '-' that is not the value of the flag before it (a
 * flag that needs a value takes the next argument, whatever it is), and every argument after a
 * lone "--". Writes them in order to pos[0..*n_pos) (pointers into argv). One more than max_pos
 * is an error (return 2, one line); so is an argument starting with '-' that is not a flag.
 * With max_pos 0 it is args_parse. */
int args_parse_positional(const char *cmd, int argc, char **argv, int first, arg_spec *specs,
                          int n, const char **pos, int max_pos, int *n_pos);

/* Prints the flags of `specs` (usage line and summary are the caller's). */
void args_print_help(FILE *out, const arg_spec *specs, int n);

/* The spec called `name` (NULL if none). */
arg_spec *args_find(arg_spec *specs, int n, const char *name);

/* Formats the current value of a spec's target as the checkpoint stores it: numbers as the
 * shortest text that reads back exactly, switches as on/off. */
void args_format_value(const arg_spec *spec, char *buf, size_t cap);

/* The backend a command runs on from its --device (NULL when not given: cpu) and --backend
 * (NULL when not given) flags: --device cuda[:N] / hip[:N] names the GPU backend itself; --device
 * cpu (the default) leaves the choice to --backend (cpu or cpu-blas, default cpu). Returns 0 with
 * *name set, or 2 after printing ONE line "strix <cmd>: ..." for a malformed device or a
 * --backend given with a GPU --device. Whether the device exists is the backend's to say. */
int args_backend_of(const char *cmd, const char *device, const char *backend, const char **name);

/* The shortest "%.Ng" text of x that reads back as exactly x. */
void args_format_float(char *buf, size_t cap, float x);
void args_format_double(char *buf, size_t cap, double x);

#endif
