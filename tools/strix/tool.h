/*
 * tool.h - what the parts of the strix command share: the subcommands' entry points, the error
 * line printer, the clock and the loading of a checkpoint's model (tool.c).
 *
 * Does not hold any library logic: every computation is a library call returning strix_status.
 */
#ifndef STRIX_TOOL_H
#define STRIX_TOOL_H

#include <stdbool.h>

#include "strix/checkpoint.h"
#include "strix/core.h"

#define STRIX_TOOL_VERSION "0.1.0"

/* `strix train ...`, `strix sample ...`, `strix explain ...`, `strix export ...` and `strix plot
 * ...` (train.c, sample.c, explain.c, export.c, plot.c); argv[1] is the subcommand. Return the exit
 * code: 0 success, 1 a failure at run time (message printed), 2 a usage error (message printed). */
int cmd_train(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_rl(int argc, char **argv);
/* `strix generate ...` and `strix chat ...` (generate.c), `strix explain --model DIR|FILE.gguf`
 * (explain_lm.c; cmd_explain hands over when --model names such a model). */
int cmd_generate(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_explain_lm(int argc, char **argv);

/* Prints "strix: <strix_last_error()>" to stderr and returns 1 (for `return tool_fail(s);`). */
int tool_fail(strix_status s);

/* Whether an existing output file may be replaced: it is empty, or `marker` stands in its first
 * 4 KiB (an earlier output of the same kind). False when it cannot be read. */
bool tool_file_replaceable(const char *path, const char *marker);

/* Seconds on a monotonic clock. */
double tool_now(void);

/* Warns once on stderr, in one line, when `threads` (a --threads value, 0 = all) exceeds the
 * online cores (sysconf(_SC_NPROCESSORS_ONLN)): "strix: warning: --threads N exceeds the M online
 * cores; oversubscribed threads make every step much slower (keeping N)". The thread count is
 * kept. Returns whether it warned. */
bool tool_warn_threads(int threads);

/* A lower estimate of the bytes a training step of model m at micro-batch `batch` keeps as
 * activations, in floats: B·T·(L·(10·C + 2·d_ff + NH·T) + 2·V) (per layer and position: the
 * LayerNorm, qkv, attention and MLP outputs kept for backward, the hidden MLP pre- and
 * post-activation, one attention-probability row per head; then the logits and their
 * softmax). d_ff 0 counts as 4·C. Pure arithmetic in double: never overflows. */
double tool_activation_bytes(const strix_gpt_config *m, int batch);

/* A lower estimate of the bytes training model c at micro-batch `batch` needs: a GPT's
 * activations (tool_activation_bytes); a sequence model's activations from the shapes its blocks
 * keep for backward (Mamba's discretised (E, S) arrays per position dominate), plus its
 * parameters, gradients and AdamW moments (16 bytes per parameter). Pure arithmetic in double. */
double tool_training_bytes(const strix_lm_config *c, int batch);

/* Refuses a training configuration whose tool_training_bytes exceeds the machine's physical
 * memory (sysconf _SC_PHYS_PAGES x _SC_PAGESIZE; unknown: accepted): returns 2 after one line
 * "strix <cmd>: --batch B needs about X GiB of activations (...), more than the machine's Y
 * GiB of memory; ..." (a sequence model: "this lstm model needs about X GiB ..."), else 0.
 * Allocates nothing. For runs on a CPU backend (a GPU's activations are in its own memory). */
int tool_check_memory(const char *cmd, const strix_lm_config *c, int batch);

/* strix_backend_init_ex with the backend options the environment asks for: STRIX_CUDA_GEMM=own
 * (the GPU backends' own SGEMM; =blas the vendor BLAS), STRIX_CUDA_TF32=1 (TF32 in cuBLAS),
 * STRIX_CUDA_REDUCE=exact (the GPU reductions in the CPU's order, the CPU's bits) and
 * STRIX_PLUGIN_DIR (a folder searched first for the GPU plugins). The library itself reads no
 * environment; this is where the command does. Statuses of strix_backend_init_ex. */
strix_status tool_backend_init(const char *name, strix_backend **out);

/* The model of a subcommand that reads a checkpoint (sample, explain, export): a full checkpoint
 * or a weights-only file. Zero-initialise it, open the checkpoint into ck
 * (strix_checkpoint_open), then tool_model_load. */
typedef struct tool_model {
    strix_checkpoint *ck;
    strix_backend *be;
    strix_lm *lm;             /* the model of any architecture (strix/lm.h) */
} tool_model;

/* Warns about too many threads (tool_warn_threads), sets the thread count (0 = all), creates
 * backend `backend` (an error names it) and the checkpoint's model on it with the checkpoint's
 * weights (never its optimizer state, so a weights-only file serves as well). On failure what
 * was made stays in *m for tool_model_free. */
strix_status tool_model_load(tool_model *m, const char *backend, int threads);

/* Frees the model, the backend and the checkpoint (each may be NULL). */
void tool_model_free(tool_model *m);

#endif
