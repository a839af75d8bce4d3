/*
 * export.c - `strix export`: writes the weights-only file of a checkpoint (its parameters, config
 * and vocabulary, no optimizer state and no run: strix/checkpoint.h), which `strix sample`,
 * `strix explain` and a new training run read like the full checkpoint, at about a third of its
 * size.
 *
 * The model is read and checked by the library (strix_checkpoint_open and _restore on the cpu
 * backend) and written by it (strix_checkpoint_save_weights, atomically). --out is checked before
 * any work: never the checkpoint read, a directory, a file that is not a strix checkpoint, or,
 * without --force, a full checkpoint (its optimizer state and run would be lost). Does not train
 * and does not modify --model.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "out_file.h"
#include "strix/backend.h"
#include "strix/checkpoint.h"
#include "tool.h"

typedef struct export_flags {
    const char *model, *out;
    bool force;
} export_flags;

#define NEXPORT_SPECS 3

static void export_specs(export_flags *f, arg_spec *s) {
    const arg_spec table[NEXPORT_SPECS] = {
        FLAG("model", ARG_STRING, &f->model, 0, 0, 0, "CKPT",
             "checkpoint to export: a full one from strix train, or a weights-only file "
             "(required)"),
        FLAG("out", ARG_STRING, &f->out, 0, 0, 0, "PATH",
             "weights-only file to write (required, no default)"),
        FLAG("force", ARG_SWITCH, &f->force, 0, 0, 0, NULL,
             "replace an existing full checkpoint at --out (default off)"),
    };
    memcpy(s, table, sizeof table);
}

static void print_export_help(const arg_spec *specs, int n) {
    printf("Usage: strix export --model CKPT --out PATH [--force]\n"
           "\n"
           "Writes the weights-only file of a checkpoint: its parameters, model config and\n"
           "vocabulary, without the AdamW state and the run (about a third of the size).\n"
           "strix sample and strix explain read it exactly like the full checkpoint (same\n"
           "samples, same relevances); it cannot be resumed.\n"
           "\n");
    args_print_help(stdout, specs, n);
    printf("\n"
           "--out is written atomically. It may be a new file or an existing weights-only file\n"
           "(replaced, with a note); never --model itself, a directory or a file that is not a\n"
           "strix checkpoint; a full checkpoint only with --force.\n");
}

/* Whether a and b name the same existing file. */
static bool same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Checks --out before any work. Returns 0 (with *replacing set when an existing weights-only file
 * will be replaced), or 2 after printing ONE line. */
static int check_out(const export_flags *f, bool *replacing) {
    *replacing = false;
    size_t len = strlen(f->out);
    if (len == 0 || f->out[len - 1] == '/') {
        fprintf(stderr, "strix export: --out '%s' is not a file name; give one such as "
                        "weights.safetensors\n", f->out);
        return 2;
    }
    if (strcmp(f->out, f->model) == 0 || same_file(f->out, f->model)) {
        fprintf(stderr, "strix export: --out '%s' is the checkpoint --model; choose another "
                        "file\n", f->out);
        return 2;
    }
    struct stat os;
    if (stat(f->out, &os) == 0) {
        if (S_ISDIR(os.st_mode)) {
            fprintf(stderr, "strix export: --out '%s' is a directory; give a file name such as "
                            "%s/weights.safetensors\n", f->out, f->out);
            return 2;
        }
        if (!S_ISREG(os.st_mode)) {
            fprintf(stderr, "strix export: --out '%s' is not a regular file\n", f->out);
            return 2;
        }
        if (strix_checkpoint_probe(f->out) != STRIX_OK) {
            fprintf(stderr, "strix export: --out '%s' exists and is not a strix checkpoint; "
                            "refusing to replace it (remove it or choose another --out)\n",
                    f->out);
            return 2;
        }
        strix_checkpoint *old = NULL;
        bool weights_only = strix_checkpoint_open(f->out, &old) == STRIX_OK &&
                            strix_checkpoint_info_of(old)->weights_only;
        strix_checkpoint_close(old);
        if (!weights_only && !f->force) {
            fprintf(stderr, "strix export: --out '%s' is a full strix checkpoint (optimizer "
                            "state and run would be lost); --force replaces it\n", f->out);
            return 2;
        }
        *replacing = true;
    }
    char parent[STRIX_PATH_MAX];
    out_parent_of(f->out, parent, sizeof parent);
    struct stat ps;
    int err = stat(parent, &ps) != 0 ? errno : S_ISDIR(ps.st_mode) ? 0 : ENOTDIR;
    if (err) {
        fprintf(stderr, "strix export: cannot write %s: directory '%s': %s\n", f->out, parent,
                err == ENOENT ? "does not exist" : strerror(err));
        return 2;
    }
    return 0;
}

static long long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

int cmd_export(int argc, char **argv) {
    export_flags f = {0};
    arg_spec specs[NEXPORT_SPECS];
    export_specs(&f, specs);
    int rc = args_parse("export", argc, argv, 2, specs, NEXPORT_SPECS);
    if (rc == 1) {
        print_export_help(specs, NEXPORT_SPECS);
        return 0;
    }
    if (rc) return rc;
    if (!f.model || !f.out) {
        fprintf(stderr, "strix export: --model CKPT and --out PATH are required\n");
        return 2;
    }
    bool replacing = false;
    rc = check_out(&f, &replacing);
    if (rc) return rc;

    tool_model m = {0};
    strix_status s = strix_checkpoint_open(f.model, &m.ck);
    if (s == STRIX_OK) s = tool_model_load(&m, "cpu", 1);
    if (s == STRIX_OK)
        s = strix_checkpoint_save_weights_lm(f.out, m.lm, &strix_checkpoint_info_of(m.ck)->vocab);
    if (s != STRIX_OK) {
        rc = tool_fail(s);
        tool_model_free(&m);
        return rc;
    }
    const strix_lm_config *c = &strix_checkpoint_info_of(m.ck)->model;
    int L = strix_lm_config_layers(c);
    bool was_weights_only = strix_checkpoint_info_of(m.ck)->weights_only;
    long long full = file_size(f.model), out = file_size(f.out);
    if (replacing) printf("note: replaced the weights-only file %s\n", f.out);
    printf("exported %s (%s, %d layer%s, d_model %d, vocabulary %d, %zu parameters)\n", f.model,
           strix_arch_name(c->arch), L, L == 1 ? "" : "s", strix_lm_config_d_model(c),
           strix_lm_config_vocab(c), strix_lm_params(m.lm)->total);
    printf("wrote %s: %lld bytes, weights only; %s %s: %lld bytes (%.1f%%)\n", f.out, out,
           was_weights_only ? "the weights-only file" : "the full checkpoint", f.model, full,
           full > 0 ? 100.0 * (double)out / (double)full : 0.0);
    tool_model_free(&m);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "strix: cannot write the report: %s\n",
                errno ? strerror(errno) : "write error on standard output");
        return 1;
    }
    return 0;
}
