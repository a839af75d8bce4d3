/*
 * train.c - `strix train`: trains a character-level language model of any architecture (--arch:
 * the GPT or a sequence model of strix/seqlm.h) on a text file or directory, evaluates on
 * the held-out tail, writes resumable checkpoints, and resumes them bit for bit.
 *
 * The step and the loop are the trainer's (strix/train.h: zero_grad, forward, backward,
 * clip_grad_norm - a non-finite norm skips the step, printed here as a warning -, lr =
 * warmup+cosine(step), AdamW with t = step + 1; evaluation and checkpoints every --eval-every
 * steps and at the end), on the LM adapter (strix/lm.h). This file sets the run up,
 * prints the trainer's events, turns Ctrl-C, --time and --stop-after into its stop flag and stop
 * requests, and writes the checkpoints with Ctrl-C held off. Randomness: weights from
 * derive(seed, 1), training batches from a stream seeded derive(seed, 2) whose state is saved in
 * every checkpoint, evaluation batches from a stream re-seeded derive(seed, 3) at every evaluation
 * (so evaluating and saving never perturb training), dropout masks keyed by derive(seed, 4), the
 * step and the micro-batch (no state to save). Does not auto-load anything: a checkpoint is
 * read only with --resume (the run goes on) or --init-from (its weights start a new run).
 * Beside the checkpoint: the metrics log (train_metrics.h) and, with --keep-best / --patience,
 * <stem>.best.safetensors, the checkpoint of the scheduled evaluation with the lowest val loss.
 * A run the trainer calls diverged (STRIX_ERR_NUMERIC: no updates any more) exits 1 naming the
 * last good checkpoint, which it never overwrote.
 */
#define _XOPEN_SOURCE 700 /* POSIX 2008 with realpath */

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "launch.h"
#include "out_file.h"
#include "ranks.h"
#include "train_metrics.h"
#include "strix/backend.h"
#include "strix/checkpoint.h"
#include "strix/lm.h"
#include "strix/train.h"
#include "tool.h"

#define DEFAULT_CORPUS "/usr/share/games/fortunes"
#define DEFAULT_STEPS 2000

// ---- flags -------------------------------------------------------------------------------------

typedef struct train_flags {
    const char *data, *out, *resume, *backend, *device, *head_sizes, *metrics, *init_from, *arch;
    int64_t steps;
    double time;
    int d_model, layers, heads, d_ff, block, batch, grad_accum, grad_shards, threads, eval_batches;
    int procs;
    int hidden, d_state, d_conv, expand;
    float lr, min_lr, weight_decay, clip, dropout;
    int64_t warmup, eval_every, stride, stop_after, log_every, patience, nan_from;
    double save_delay, step_delay;
    uint64_t seed;
    double val_fraction;
    bool rope, relu, tie, sequential, no_bias, force, keep_best;
} train_flags;

#define BIG 1e300
#define NSPECS 49

/* Fills specs (NSPECS entries) pointing into f. */
static void train_specs(train_flags *f, arg_spec *s) {
    const arg_spec table[NSPECS] = {
        FLAG("data", ARG_STRING, &f->data, 0, 0, 0, "PATH",
             "text file or directory of text files (default " DEFAULT_CORPUS ")"),
        FLAG("out", ARG_STRING, &f->out, 0, 0, 0, "PATH",
             "checkpoint to write (default model.safetensors; with --resume: the resumed file)"),
        FLAG("steps", ARG_I64, &f->steps, 1, BIG, 0, "N",
             "total optimizer steps and LR-schedule horizon (default 2000)"),
        FLAG("time", ARG_DOUBLE, &f->time, 0, BIG, true, "SECONDS",
             "also stop after this many seconds (default: no limit; see below)"),
        FLAG("arch", ARG_STRING, &f->arch, 0, 0, 0, "NAME",
             "gpt, rnn, lstm, gru, mamba, rwkv or retnet (default gpt)"),
        FLAG("d-model", ARG_INT, &f->d_model, 1, 65536, 0, "N",
             "model (embedding) width C (default 128)"),
        FLAG("layers", ARG_INT, &f->layers, 1, 1024, 0, "N",
             "transformer blocks or recurrent layers L (default 4; sequence models 2)"),
        FLAG("heads", ARG_INT, &f->heads, 1, STRIX_GPT_MAX_HEADS, 0, "N",
             "gpt, retnet: heads; must divide --d-model (retnet: into even sizes) (default 4)"),
        FLAG("hidden", ARG_INT, &f->hidden, 1, 65536, 0, "N",
             "rnn, lstm, gru: hidden size H (default --d-model)"),
        FLAG("d-state", ARG_INT, &f->d_state, 1, 4096, 0, "N",
             "mamba: SSM state size N (default 16)"),
        FLAG("d-conv", ARG_INT, &f->d_conv, 1, 64, 0, "N",
             "mamba: causal convolution taps (default 4)"),
        FLAG("expand", ARG_INT, &f->expand, 1, 64, 0, "N",
             "mamba: inner width = N x --d-model (default 2)"),
        FLAG("head-sizes", ARG_STRING, &f->head_sizes, 0, 0, 0, "A,B,..",
             "heterogeneous head sizes summing to --d-model, e.g. 16,16,32 (default: uniform)"),
        FLAG("d-ff", ARG_INT, &f->d_ff, 0, 1 << 24, 0, "N",
             "gpt: MLP, rwkv: channel-mix, retnet: FFN hidden size (default 0 = 4 x d-model; "
             "retnet 2 x)"),
        FLAG("block", ARG_INT, &f->block, 1, 1 << 20, 0, "T", "context length T (default 64)"),
        FLAG("batch", ARG_INT, &f->batch, 1, 1 << 20, 0, "B",
             "sequences per micro-batch B, over all processes of a data-parallel run (default 16)"),
        FLAG("grad-accum", ARG_INT, &f->grad_accum, 1, 1 << 16, 0, "N",
             "micro-batches per step: N x B sequences, gradients averaged (default 1)"),
        FLAG("grad-shards", ARG_INT, &f->grad_shards, 1, 1 << 20, 0, "S",
             "gradient shards per micro-batch, summed in a fixed order: the run's bits depend on S,"
             " not on the process count, which must divide it (default: the process count)"),
        FLAG("lr", ARG_FLOAT, &f->lr, 0, 10, true, "RATE", "peak learning rate (default 1e-3)"),
        FLAG("min-lr", ARG_FLOAT, &f->min_lr, 0, 10, 0, "RATE",
             "final learning rate of the cosine decay (default lr/10)"),
        FLAG("warmup", ARG_I64, &f->warmup, 0, BIG, 0, "N", "linear warmup steps (default 100)"),
        FLAG("weight-decay", ARG_FLOAT, &f->weight_decay, 0, 10, 0, "W",
             "AdamW decoupled weight decay (default 0.1)"),
        FLAG("clip", ARG_FLOAT, &f->clip, 0, BIG, 0, "NORM",
             "max global gradient norm, 0 = off (default 1.0)"),
        FLAG("seed", ARG_U64, &f->seed, 0, BIG, 0, "N", "seed of weights and data (default 1337)"),
        FLAG("eval-every", ARG_I64, &f->eval_every, 1, BIG, 0, "N",
             "steps between evaluations and checkpoints (default 250)"),
        FLAG("eval-batches", ARG_INT, &f->eval_batches, 1, 1 << 20, 0, "N",
             "validation batches per evaluation (default 20)"),
        FLAG("val-fraction", ARG_DOUBLE, &f->val_fraction, 0, 0.9, true, "F",
             "held-out tail of the corpus (default 0.1)"),
        FLAG("procs", ARG_INT, &f->procs, 1, 4096, 0, "N",
             "train as N processes under OpenMPI's mpirun, data parallel on this machine "
             "(default 1; see below)"),
        FLAG("threads", ARG_INT, &f->threads, 0, 4096, 0, "N",
             "CPU threads, 0 = all cores (default 0); results do not depend on it"),
        FLAG("backend", ARG_STRING, &f->backend, 0, 0, 0, "NAME",
             "cpu (our own GEMM; the faster one on AVX-512) or cpu-blas (OpenBLAS GEMM) (default cpu)"),
        FLAG("device", ARG_STRING, &f->device, 0, 0, 0, "DEV",
             "cpu, cuda[:N] or hip[:N]: where to train (default cpu; on cpu, --backend picks)"),
        FLAG("rope", ARG_SWITCH, &f->rope, 0, 0, 0, NULL,
             "rotary positions instead of learned ones (default off)"),
        FLAG("relu", ARG_SWITCH, &f->relu, 0, 0, 0, NULL, "ReLU MLP instead of GELU (default off)"),
        FLAG("tie", ARG_SWITCH, &f->tie, 0, 0, 0, NULL,
             "tie the output head to the token embedding (default off; mamba: on)"),
        FLAG("no-bias", ARG_SWITCH, &f->no_bias, 0, 0, 0, NULL,
             "Linear and LayerNorm layers without biases (default: with)"),
        FLAG("dropout", ARG_FLOAT, &f->dropout, 0, 1, 0, "P",
             "dropout probability in [0, 1), nanoGPT's four sites, training only (default 0)"),
        FLAG("init-from", ARG_STRING, &f->init_from, 0, 0, 0, "FILE",
             "new run from the weights (and model shape) of a checkpoint (default: none)"),
        FLAG("sequential", ARG_SWITCH, &f->sequential, 0, 0, 0, NULL,
             "walk the text in order (microGPT) instead of random windows (default off)"),
        FLAG("stride", ARG_I64, &f->stride, 1, BIG, 0, "N",
             "characters between windows of --sequential (default T)"),
        FLAG("resume", ARG_STRING, &f->resume, 0, 0, 0, "CKPT",
             "continue the run saved in CKPT (default: none, a new run); see below"),
        FLAG("log-every", ARG_I64, &f->log_every, 1, BIG, 0, "N",
             "steps between progress lines when stderr is not a terminal, and between "
             "metrics lines (default 50)"),
        FLAG("metrics", ARG_STRING, &f->metrics, 0, 0, 0, "PATH",
             "JSON-lines log of the run, or none (default: --out's stem + .metrics.jsonl)"),
        FLAG("force", ARG_SWITCH, &f->force, 0, 0, 0, NULL,
             "a new run may replace an existing checkpoint --out, its log and best file; with "
             "--resume: another run's best file (default off)"),
        FLAG("keep-best", ARG_SWITCH, &f->keep_best, 0, 0, 0, NULL,
             "also keep the checkpoint of the scheduled evaluation with the lowest val loss, "
             "<stem>.best.safetensors (default off)"),
        FLAG("patience", ARG_I64, &f->patience, 1, BIG, 0, "N",
             "stop after N scheduled evaluations without a new best val loss; implies --keep-best "
             "(default: never)"),
        TESTING_FLAG("stop-after", ARG_I64, &f->stop_after, 1, BIG, 0, "N",
             "behave as if interrupted (Ctrl-C) right after step N: save and exit 0"),
        TESTING_FLAG("save-delay", ARG_DOUBLE, &f->save_delay, 0, 3600, 0, "SECONDS",
             "sleep inside every save, where Ctrl-C is held off (default 0)"),
        TESTING_FLAG("step-delay", ARG_DOUBLE, &f->step_delay, 0, 3600, 0, "SECONDS",
             "sleep inside every step, where a second Ctrl-C ends the run (default 0)"),
        TESTING_FLAG("nan-from", ARG_I64, &f->nan_from, 1, BIG, 0, "N",
             "the loss of step N and every later step reads as NaN (default: never)"),
    };
    memcpy(s, table, sizeof table);
}

static void print_train_help(arg_spec *specs, int n) {
    printf("Usage: strix train [--data PATH] [--out model.safetensors] [flags]\n"
           "\n"
           "Trains a character-level language model (bytes are tokens; --arch picks the\n"
           "architecture, a GPT by default) on PATH: the first (1 - val-fraction)\n"
           "of the text trains, the rest validates. Every --eval-every steps and at the end it\n"
           "prints \"step N: val loss X\" and saves the checkpoint (atomically: a failed run\n"
           "never damages an existing file). Ctrl-C finishes the current step, saves and exits 0;\n"
           "a second Ctrl-C during a step ends the process at once (the last checkpoint stays\n"
           "intact), and any Ctrl-C during the save is held off until the file is complete.\n"
           "--out must be a new file, or a strix checkpoint replaced only with --force (or\n"
           "--resume); an existing file of another kind, a directory, a file directly in the\n"
           "--data directory or --data itself is refused before training starts. A symbolic\n"
           "link is written through to its target.\n"
           "\n");
    args_print_help(stdout, specs, n);
    printf("\n"
           "--steps and --time combine: the LR schedule always spans --steps, and --time stops\n"
           "the run earlier if it runs out first. A time-bounded run saves where it stopped (step\n"
           "and planned total are recorded), and strix train --resume CKPT continues it to the\n"
           "--steps it planned.\n"
           "--resume: the checkpoint carries weights, optimizer state, step, data stream, the\n"
           "corpus's absolute path, size and hash, and every hyper-parameter. Only --out,\n"
           "--threads, --time, --backend, --log-every, --metrics, --keep-best, --patience,\n"
           "--force, --procs and --stop-after may be given with it (and --device, like\n"
           "--backend), plus --data naming the same corpus (checked by size and hash) when it\n"
           "has moved; other flags are\n"
           "refused unless they repeat the checkpoint's value.\n"
           "A resumed run keeps the backend recorded in the checkpoint and is then bit-identical\n"
           "to an uninterrupted run; another --backend continues the run to within rounding (the\n"
           "cpu, cpu-blas and GPU GEMMs round differently), so its numbers drift from the\n"
           "original's. --device does the same across devices: a run saved on a GPU resumes on\n"
           "the CPU with --device cpu.\n"
           "A run whose steps stop making updates (10 in a row, or all of its steps, skipped for\n"
           "a non-finite loss or gradient norm, or a non-finite val loss) stops without saving,\n"
           "keeps the last good checkpoint and exits 1.\n"
           "--metrics: one JSON line per --log-every steps {\"step\",\"train_loss\",\"lr\",\n"
           "\"grad_norm\",\"tokens_per_s\",\"elapsed_s\"} and per evaluation {\"step\",\n"
           "\"val_loss\",\"elapsed_s\"} (null: not finite); a new run truncates it,\n"
           "--resume drops the lines after the checkpoint's step and appends. A file that is\n"
           "not a metrics log, --out, --data or a file directly in its directory is refused;\n"
           "another run's log needs --force, but the default log of an --out that does not\n"
           "exist (a run killed before its first save) is replaced with a note.\n"
           "--keep-best writes <stem>.best.safetensors (a resumable checkpoint) at every\n"
           "scheduled evaluation that lowers the best val loss; --patience N stops (saved, exit\n"
           "0) after N scheduled evaluations without one. Both may be given again with --resume,\n"
           "which keeps the best file only if this run wrote it (same corpus, config and seed,\n"
           "step <= the checkpoint's; another run's needs --force).\n"
           "--init-from FILE: a new run (steps, lr, data, seed of the data from the flags) from\n"
           "the weights of FILE, whose model shape it takes (shape flags must repeat it) and\n"
           "whose vocabulary must hold every byte of the corpus; it evaluates at step 0 first.\n"
           "Its --dropout is its own (default 0, as nanoGPT's), not the file's.\n"
           "--dropout P: nanoGPT's dropout (embeddings, attention probabilities, attention and MLP\n"
           "outputs) in training steps only; the val loss, sample and explain never drop. Masks\n"
           "depend on --seed, the step and the micro-batch, so resumes stay bit-identical.\n"
           "--threads above the number of online cores is kept with a warning: oversubscribed\n"
           "threads make every step much slower.\n"
           "--procs N: data-parallel training as N processes under OpenMPI's mpirun on this\n"
           "machine (mpirun -np N strix train ... does the same, across machines with a\n"
           "hostfile). --batch is then the global batch; each micro-batch is cut into\n"
           "--grad-shards S slices (default N; a multiple of N), each process computes S/N of\n"
           "them and their gradients are added in one fixed order: the checkpoint is the bytes\n"
           "one process writes with --grad-shards S, and it resumes on any process count\n"
           "dividing S. Rank 0 prints and writes the files; Ctrl-C stops every process at one\n"
           "step and rank 0 saves once; without --threads the processes share the cores. See\n"
           "docs/DISTRIBUTED.md.\n"
           "Default corpus: the Debian package 'fortunes' (" DEFAULT_CORPUS ").\n");
}

/* Parses "16,16,32" into c->head_sizes / n_head. Returns false (message printed) on error. */
static bool parse_head_sizes(const char *text, strix_gpt_config *c) {
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 65536 || n == STRIX_GPT_MAX_HEADS || (*end && *end != ',')) {
            fprintf(stderr, "strix train: --head-sizes expects up to %d positive integers "
                            "separated by commas (got '%s')\n", STRIX_GPT_MAX_HEADS, text);
            return false;
        }
        c->head_sizes[n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (n == 0) {
        fprintf(stderr, "strix train: --head-sizes is empty\n");
        return false;
    }
    c->n_head = n;
    return true;
}

/* The flags of a GPT's shape (a sequence model has none of them). */
static bool is_gpt_shape_flag(const char *name) {
    static const char *gpt_only[] = {"heads", "head-sizes", "d-ff", "rope", "relu", "no-bias",
                                     "dropout"};
    for (size_t i = 0; i < sizeof gpt_only / sizeof *gpt_only; i++)
        if (strcmp(name, gpt_only[i]) == 0) return true;
    return false;
}

/* The flags of the sequence models' own fields and the architectures each applies to. */
typedef struct seq_flag {
    const char *name;
    unsigned archs; /* bit (1 << strix_arch) per architecture */
} seq_flag;

#define ARCH_BIT(a) (1u << (a))
#define RNN_ARCHS (ARCH_BIT(STRIX_ARCH_RNN) | ARCH_BIT(STRIX_ARCH_LSTM) | ARCH_BIT(STRIX_ARCH_GRU))

static const seq_flag seq_flags[] = {
    {"hidden", RNN_ARCHS},
    {"d-state", ARCH_BIT(STRIX_ARCH_MAMBA)},
    {"d-conv", ARCH_BIT(STRIX_ARCH_MAMBA)},
    {"expand", ARCH_BIT(STRIX_ARCH_MAMBA)},
    {"heads", ARCH_BIT(STRIX_ARCH_GPT) | ARCH_BIT(STRIX_ARCH_RETNET)},
    {"d-ff", ARCH_BIT(STRIX_ARCH_GPT) | ARCH_BIT(STRIX_ARCH_RWKV) | ARCH_BIT(STRIX_ARCH_RETNET)},
    {"head-sizes", ARCH_BIT(STRIX_ARCH_GPT)},
    {"rope", ARCH_BIT(STRIX_ARCH_GPT)},
    {"relu", ARCH_BIT(STRIX_ARCH_GPT)},
    {"no-bias", ARCH_BIT(STRIX_ARCH_GPT)},
    {"dropout", ARCH_BIT(STRIX_ARCH_GPT)},
};

/* Whether a flag of seq_flags (any other flag: true) applies to architecture a. */
static bool flag_applies(const char *name, strix_arch a) {
    for (size_t i = 0; i < sizeof seq_flags / sizeof *seq_flags; i++)
        if (strcmp(name, seq_flags[i].name) == 0) return (seq_flags[i].archs & ARCH_BIT(a)) != 0;
    return true;
}

/* A sequence model's value of flag `name` (the fields of strix_seqlm_config it uses); false for
 * other flags. */
static bool seq_flag_value(const strix_seqlm_config *q, const char *name, char *buf, size_t cap) {
    unsigned bit = ARCH_BIT(q->arch);
    int v;
    if (strcmp(name, "hidden") == 0 && (bit & RNN_ARCHS)) v = q->hidden;
    else if (strcmp(name, "d-state") == 0 && q->arch == STRIX_ARCH_MAMBA) v = q->d_state;
    else if (strcmp(name, "d-conv") == 0 && q->arch == STRIX_ARCH_MAMBA) v = q->d_conv;
    else if (strcmp(name, "expand") == 0 && q->arch == STRIX_ARCH_MAMBA) v = q->expand;
    else if (strcmp(name, "heads") == 0 && q->arch == STRIX_ARCH_RETNET) v = q->n_head;
    else if (strcmp(name, "d-ff") == 0 &&
             (q->arch == STRIX_ARCH_RWKV || q->arch == STRIX_ARCH_RETNET)) v = q->d_ff;
    else return false;
    snprintf(buf, cap, "%d", v);
    return true;
}

/* The value a run flag has in the checkpoint, formatted like args_format_value; false for flags
 * that are not part of the run. */
static bool checkpoint_value(const strix_checkpoint_info *ck, const char *name, char *buf,
                             size_t cap) {
    const strix_train_config *t = &ck->train;
    const strix_gpt_config *m = &ck->model.gpt;
    const strix_seqlm_config *q = &ck->model.seq;
    bool gpt = ck->model.arch == STRIX_ARCH_GPT;
    buf[0] = '\0';
    if (strcmp(name, "arch") == 0) snprintf(buf, cap, "%s", strix_arch_name(ck->model.arch));
    else if (!gpt && strcmp(name, "d-model") == 0) snprintf(buf, cap, "%d", q->d_model);
    else if (!gpt && strcmp(name, "layers") == 0) snprintf(buf, cap, "%d", q->n_layer);
    else if (!gpt && strcmp(name, "block") == 0) snprintf(buf, cap, "%d", q->block_size);
    else if (!gpt && strcmp(name, "tie") == 0)
        snprintf(buf, cap, "%s", q->tie_weights ? "on" : "off");
    else if (!gpt && seq_flag_value(q, name, buf, cap)) {}
    else if (!gpt && is_gpt_shape_flag(name)) {} /* unset in a sequence model's checkpoint */
    else if (strcmp(name, "data") == 0) snprintf(buf, cap, "%s", t->data_path);
    else if (strcmp(name, "steps") == 0) snprintf(buf, cap, "%" PRId64, t->steps);
    else if (strcmp(name, "d-model") == 0) snprintf(buf, cap, "%d", m->d_model);
    else if (strcmp(name, "layers") == 0) snprintf(buf, cap, "%d", m->n_layer);
    else if (strcmp(name, "heads") == 0) {
        if (m->head_sizes[0] > 0) { /* heterogeneous heads: no --heads N repeats them */
            size_t used = (size_t)snprintf(buf, cap, "head sizes ");
            for (int h = 0; h < m->n_head && used < cap; h++)
                used += (size_t)snprintf(buf + used, cap - used, h ? ",%d" : "%d",
                                         m->head_sizes[h]);
        } else {
            snprintf(buf, cap, "%d", m->n_head);
        }
    }
    else if (strcmp(name, "d-ff") == 0) snprintf(buf, cap, "%d", m->d_ff);
    else if (strcmp(name, "block") == 0) snprintf(buf, cap, "%d", m->block_size);
    else if (strcmp(name, "batch") == 0) snprintf(buf, cap, "%d", t->batch);
    else if (strcmp(name, "grad-accum") == 0)
        snprintf(buf, cap, "%d", t->grad_accum > 1 ? t->grad_accum : 1);
    else if (strcmp(name, "grad-shards") == 0)
        snprintf(buf, cap, "%d", t->grad_shards > 1 ? t->grad_shards : 1);
    else if (strcmp(name, "lr") == 0) args_format_float(buf, cap, t->lr);
    else if (strcmp(name, "min-lr") == 0) args_format_float(buf, cap, t->min_lr);
    else if (strcmp(name, "warmup") == 0) snprintf(buf, cap, "%" PRId64, t->warmup);
    else if (strcmp(name, "weight-decay") == 0) args_format_float(buf, cap, t->weight_decay);
    else if (strcmp(name, "clip") == 0) args_format_float(buf, cap, t->clip);
    else if (strcmp(name, "seed") == 0) snprintf(buf, cap, "%" PRIu64, t->seed);
    else if (strcmp(name, "eval-every") == 0) snprintf(buf, cap, "%" PRId64, t->eval_every);
    else if (strcmp(name, "eval-batches") == 0) snprintf(buf, cap, "%d", t->eval_batches);
    else if (strcmp(name, "val-fraction") == 0)
        args_format_double(buf, cap, t->val_fraction);
    else if (strcmp(name, "rope") == 0) snprintf(buf, cap, "%s", m->rope ? "on" : "off");
    else if (strcmp(name, "relu") == 0)
        snprintf(buf, cap, "%s", m->mlp_act == STRIX_ACT_RELU ? "on" : "off");
    else if (strcmp(name, "tie") == 0) snprintf(buf, cap, "%s", m->tie_weights ? "on" : "off");
    else if (strcmp(name, "no-bias") == 0) snprintf(buf, cap, "%s", m->bias ? "off" : "on");
    else if (strcmp(name, "dropout") == 0) args_format_float(buf, cap, m->dropout);
    else if (strcmp(name, "sequential") == 0)
        snprintf(buf, cap, "%s", t->sequential ? "on" : "off");
    else if (strcmp(name, "stride") == 0) snprintf(buf, cap, "%" PRId64, t->stride);
    else if (strcmp(name, "head-sizes") == 0) {
        size_t used = 0;
        buf[0] = '\0';
        /* a uniform model's heads listed as sizes, so --head-sizes 16,16 repeats --heads 2 */
        for (int h = 0; h < m->n_head && used < cap; h++)
            used += (size_t)snprintf(buf + used, cap - used, h ? ",%d" : "%d",
                                     m->head_sizes[0] > 0 ? m->head_sizes[h]
                                                          : m->d_model / m->n_head);
    } else
        return false;
    return true;
}

// ---- the run -----------------------------------------------------------------------------------

typedef struct run {
    strix_checkpoint_info info; /* the run's configuration and position */
    strix_corpus corpus;
    strix_backend *be;
    strix_lm *lm;
    strix_train_model lm_model; /* the LM adapter (strix_lm_train_model) */
    strix_train_model model;    /* what the trainer sees: the adapter, plus save() below */
    strix_optimizer *opt;
    const char *out;
    double time_limit, save_delay, step_delay;
    int64_t stop_after, log_every, nan_from;
    bool tty, corpus_is_dir;
    bool vocab_fixed;           /* info.vocab is the model's (resume, --init-from): the corpus is
                                 * encoded with it */
    int corpus_bytes;           /* distinct bytes of the corpus itself (0: not re-encoded) */
    const char *init_from;      /* --init-from FILE (NULL: none) */
    train_metrics metrics;      /* the metrics log (metrics.f NULL: none) */
    bool metrics_on;            /* a log is to be written at metrics_path (checked, not opened) */
    char metrics_path[STRIX_PATH_MAX + 24];
    int64_t resume_step;        /* the resumed checkpoint's step; -1: a new run */
    bool force;                 /* --force: another run's log and best file may be replaced */
    double t0;                  /* start of the training loop (tool_now) */
    /* the last checkpoint known to be good: what a diverged run keeps */
    const char *good_path;
    int64_t good_step;          /* -1: none written */
    /* --keep-best and --patience */
    bool keep_best;
    int64_t patience;           /* 0: never stop early */
    char best_path[STRIX_PATH_MAX + 24];
    double best_val;            /* +inf before the first scheduled evaluation */
    int64_t best_step, evals_since_best;
    int64_t eval_step;          /* step of the evaluation the next save follows (-1: none) */
    bool patience_out;          /* patience ran out at the last save */
    char data_path[STRIX_PATH_MAX]; /* info.train.data_path and .backend point here */
    char backend[32];
    out_lock lock;              /* held while the run may write --out */
    ranks ranks;                /* the processes of a data-parallel run (one: size 1) */
    bool root;                  /* rank 0: prints, checks and writes the outputs */
    bool alone_error;           /* the run failed on this rank only (the job must be aborted) */
} run;

static void run_free(run *r) {
    metrics_close(&r->metrics);
    out_lock_release(&r->lock);
    strix_lm_train_model_free(&r->lm_model);
    strix_optimizer_free(r->opt);
    strix_lm_free(r->lm);
    strix_backend_free(r->be);
    strix_corpus_free(&r->corpus);
}

/* Re-encodes the corpus with the model's vocabulary r->info.vocab (a resumed or --init-from run:
 * the corpus's own byte set may be a subset of it). Returns 0, or 1 after one line naming the
 * first byte of the corpus that the vocabulary lacks. */
static int encode_with(run *r, const char *path) {
    const strix_vocab *mv = &r->info.vocab, *cv = &r->corpus.vocab;
    for (int i = 0; i < cv->size; i++) {
        unsigned char b = cv->bytes[i];
        if (mv->id_of[b] >= 0) continue;
        char shown[16];
        if (b > 32 && b < 127 && b != '\'') snprintf(shown, sizeof shown, "'%c' ", b);
        else shown[0] = '\0';
        fprintf(stderr, "strix: the corpus %s holds the byte %s(0x%02x), which the vocabulary of "
                        "%s (%d bytes) lacks; the model can only read its own bytes\n", path,
                shown, b, r->init_from ? r->init_from : "the checkpoint", mv->size);
        return 1;
    }
    int16_t map[256];
    r->corpus_bytes = cv->size;
    for (int i = 0; i < cv->size; i++) map[i] = mv->id_of[cv->bytes[i]];
    for (size_t i = 0; i < r->corpus.size; i++) r->corpus.ids[i] = (uint8_t)map[r->corpus.ids[i]];
    r->corpus.vocab = *mv;
    return 0;
}

/* Loads the corpus at `path`, applies the split and checks the block fits. When resuming
 * (`resume` names the checkpoint), first checks that it is the corpus the run was trained on
 * (`data_given`: --data named it). */
static int load_corpus(run *r, const char *path, bool is_default, const char *resume,
                       bool data_given) {
    struct stat st;
    if (is_default && stat(path, &st) != 0) {
        fprintf(stderr, "strix: default corpus not found: install the Debian package 'fortunes' "
                        "(apt-get install fortunes) or pass --data PATH\n");
        return 1;
    }
    r->corpus_is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    strix_status s = strix_corpus_load(path, &r->corpus);
    const strix_train_state *then = &r->info.state;
    if (s == STRIX_OK && resume &&
        (r->corpus.size != then->data_size || r->corpus.hash != then->data_hash)) {
        char why[96] = "same size, other text";
        if (r->corpus.size != then->data_size)
            snprintf(why, sizeof why, "%zu characters, %" PRIu64 " in the checkpoint",
                     r->corpus.size, then->data_size);
        if (data_given)
            fprintf(stderr, "strix: '%s' is not the corpus of %s (%s); a resumed run needs the "
                            "same data\n", path, resume, why);
        else
            fprintf(stderr, "strix: the corpus %s changed since %s was written (%zu characters "
                            "now, %" PRIu64 " then); a resumed run needs the same data\n", path,
                    resume, r->corpus.size, then->data_size);
        return 1;
    }
    if (s == STRIX_OK && r->vocab_fixed && encode_with(r, path)) return 1;
    if (s == STRIX_OK) s = strix_corpus_split(&r->corpus, r->info.train.val_fraction);
    if (s == STRIX_OK) s = strix_corpus_check_block(&r->corpus, strix_lm_config_block(&r->info.model));
    return s == STRIX_OK ? 0 : tool_fail(s);
}

/* "gpt, 4 layers, d_model 128, 4 heads, block 64" and the like, for the setup line. */
static void model_shape(const strix_lm_config *c, char *buf, size_t cap) {
    int L = strix_lm_config_layers(c);
    size_t k = (size_t)snprintf(buf, cap, "%s, %d layer%s, d_model %d", strix_arch_name(c->arch),
                                L, L == 1 ? "" : "s", strix_lm_config_d_model(c));
    const strix_gpt_config *g = &c->gpt;
    const strix_seqlm_config *q = &c->seq;
    if (k >= cap) return;
    switch (c->arch) {
    case STRIX_ARCH_GPT:
        k += (size_t)snprintf(buf + k, cap - k, ", %d head%s", g->n_head, g->n_head == 1 ? "" : "s");
        if (k < cap && g->dropout > 0.0f)
            k += (size_t)snprintf(buf + k, cap - k, ", dropout %g", (double)g->dropout);
        break;
    case STRIX_ARCH_MAMBA:
        k += (size_t)snprintf(buf + k, cap - k, ", d_state %d, d_conv %d, expand %d", q->d_state,
                              q->d_conv, q->expand);
        break;
    case STRIX_ARCH_RETNET:
        k += (size_t)snprintf(buf + k, cap - k, ", %d heads, d_ff %d", q->n_head,
                              q->d_ff > 0 ? q->d_ff : 2 * q->d_model);
        break;
    case STRIX_ARCH_RWKV:
        k += (size_t)snprintf(buf + k, cap - k, ", d_ff %d", q->d_ff > 0 ? q->d_ff : 4 * q->d_model);
        break;
    default:
        k += (size_t)snprintf(buf + k, cap - k, ", hidden %d", q->hidden);
        break;
    }
    if (k < cap) snprintf(buf + k, cap - k, ", block %d", strix_lm_config_block(c));
}

static void print_setup(const run *r, bool resumed) {
    const strix_checkpoint_info *i = &r->info;
    const strix_corpus *c = &r->corpus;
    char skipped[160] = "";
    if (r->corpus_is_dir)
        snprintf(skipped, sizeof skipped, " (%d skipped: %d binary or empty, %d hidden, links, "
                 "subdirectories or not regular files)", c->n_skipped, c->n_skipped_text,
                 c->n_skipped_other);
    char vocab[64] = "";
    if (r->corpus_bytes > 0 && r->corpus_bytes != c->vocab.size)
        snprintf(vocab, sizeof vocab, " (the model's; the corpus uses %d)", r->corpus_bytes);
    printf("corpus %s: %zu characters in %d file%s%s, vocabulary %d%s; train %zu, val %zu\n",
           i->train.data_path, c->size, c->n_files, c->n_files == 1 ? "" : "s", skipped,
           c->vocab.size, vocab, strix_corpus_split_size(c, STRIX_SPLIT_TRAIN),
           strix_corpus_split_size(c, STRIX_SPLIT_VAL));
    char shape[160];
    model_shape(&i->model, shape, sizeof shape);
    int nt = strix_get_num_threads();
    printf("model: %s, %zu parameters; backend %s, %d thread%s\n", shape,
           strix_lm_params(r->lm)->total, strix_backend_name(r->be), nt, nt == 1 ? "" : "s");
    int S = i->train.grad_shards > 1 ? i->train.grad_shards : 1, N = r->ranks.size;
    if (N > 1 || S > 1)
        printf("data parallel: %d process%s x %d sequence%s of the global batch %d, %d gradient "
               "shard%s (the same bits on any process count dividing %d)\n", N,
               N == 1 ? "" : "es", i->train.batch / N, i->train.batch / N == 1 ? "" : "s",
               i->train.batch, S, S == 1 ? "" : "s", S);
    if (resumed)
        printf("resuming at step %" PRId64 " of %" PRId64 "\n", i->state.step, i->train.steps);
    fflush(stdout);
}

static void format_duration(double s, char *buf, size_t cap) {
    if (!(s >= 0) || s > 1e7) { snprintf(buf, cap, "--:--"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, cap, "%ld:%02ld", t / 60, t % 60);
}

static void clear_progress(const run *r) {
    if (r->tty) fprintf(stderr, "\r\033[K");
}

/* Training tokens per second of this invocation: (step - first) steps in `elapsed` seconds. */
static double tokens_per_s(const run *r, int64_t step, int64_t first, double elapsed) {
    int accum = r->info.train.grad_accum > 1 ? r->info.train.grad_accum : 1;
    return elapsed > 0 ? (double)(step - first) * accum * r->info.train.batch *
                             strix_lm_config_block(&r->info.model) / elapsed
                       : 0.0;
}

static void progress(run *r, int64_t step, int64_t first, float loss, double t0, bool force) {
    static double last_print;
    if (!r->root) return;
    double now = tool_now(), elapsed = now - t0;
    int64_t total = r->info.train.steps;
    bool due = r->tty ? (force || now - last_print > 0.1)
                      : (force || step % r->log_every == 0);
    if (!due) return;
    last_print = now;
    double done = (double)(step - first);
    double tok_s = tokens_per_s(r, step, first, elapsed);
    double eta = done > 0 ? elapsed / done * (double)(total - step) : NAN;
    if (r->time_limit > 0 && r->time_limit - elapsed < eta) eta = r->time_limit - elapsed;
    char el[32], et[32];
    format_duration(elapsed, el, sizeof el);
    format_duration(eta, et, sizeof et);
    char val[32] = "-";
    if (!isnan(r->info.state.val_loss)) snprintf(val, sizeof val, "%.4f", r->info.state.val_loss);
    fprintf(stderr, "%sstep %" PRId64 "/%" PRId64 " | loss %.4f | val %s | %.0f tok/s | %s "
                    "elapsed | ETA %s%s", r->tty ? "\r\033[K" : "", step, total, loss, val,
            tok_s, el, et, r->tty ? "" : "\n");
    fflush(stderr);
}

/* Saves the checkpoint with SIGINT and SIGTERM blocked, so a Ctrl-C never cuts a save short: one
 * arriving during the save is delivered after it. Once a stop was asked for, later signals are
 * ignored (pending ones discarded) so the run can finish saving and report. */
static strix_status save(void *ctx, const strix_train_state *state) {
    run *r = ctx;
    (void)state; /* it is r->info.state */
    out_save_guard guard;
    out_save_begin(&guard);
    if (r->save_delay > 0) {
        double whole = floor(r->save_delay);
        struct timespec ts = {.tv_sec = (time_t)whole,
                              .tv_nsec = (long)((r->save_delay - whole) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    }
    strix_status s = strix_checkpoint_save_lm(r->out, r->lm, &r->info);
    int64_t step = r->info.state.step;
    if (s == STRIX_OK) {
        r->good_path = r->out;
        r->good_step = step;
    }
    /* --keep-best: a scheduled evaluation (every --eval-every steps, the last step) that lowers
     * the best val loss writes the best file too; one that does not counts for --patience */
    bool scheduled = step % r->info.train.eval_every == 0 || step == r->info.train.steps;
    if (s == STRIX_OK && r->keep_best && r->eval_step == step && scheduled) {
        if (r->info.state.val_loss < r->best_val) {
            s = strix_checkpoint_save_lm(r->best_path, r->lm, &r->info);
            r->best_val = r->info.state.val_loss;
            r->best_step = step;
            r->evals_since_best = 0;
        } else {
            r->evals_since_best++;
        }
        r->patience_out = r->patience > 0 && r->evals_since_best >= r->patience;
    }
    r->eval_step = -1;
    out_save_end(&guard);
    return s;
}

/* What the trainer's events make of the run: progress lines, the warnings and stop requests. */
typedef struct loop_ctx {
    run *r;
    double t0;
    int64_t first;
    const char *stopped;   /* why the run stopped early (NULL: it did not) */
    bool early;            /* stopped by --patience */
} loop_ctx;

static strix_train_action on_event(void *user, const strix_train_event *ev) {
    loop_ctx *c = user;
    run *r = c->r;
    switch (ev->kind) {
    case STRIX_TRAIN_EV_SKIPPED:
        if (!r->root) return STRIX_TRAIN_CONTINUE;
        clear_progress(r);
        fprintf(stderr, "strix: warning: step %" PRId64 ": loss %g, gradient norm %g; "
                        "step skipped\n", ev->step + 1, (double)ev->loss, ev->grad_norm);
        return STRIX_TRAIN_CONTINUE;
    case STRIX_TRAIN_EV_EVAL:
        if (!r->root) return STRIX_TRAIN_CONTINUE;
        clear_progress(r);
        printf("step %" PRId64 ": val loss %.4f\n", ev->step, ev->val_loss);
        fflush(stdout); /* before the stop line on stderr */
        metrics_eval(&r->metrics, ev->step, ev->val_loss, tool_now() - c->t0);
        r->eval_step = ev->step;
        return STRIX_TRAIN_CONTINUE;
    case STRIX_TRAIN_EV_LOOP_END:
        /* Training is over: what is left (a last evaluation, the save, the report) runs to its
         * end whatever signals come; the process exits right after. */
        out_stop_signals_ignore();
        return STRIX_TRAIN_CONTINUE;
    case STRIX_TRAIN_EV_STEP:
        break;
    }
    const char *stop_file = getenv("STRIX_STOP_FILE"); /* --procs: the launcher's Ctrl-C */
    if (stop_file && !out_stop_signal && access(stop_file, F_OK) == 0) out_stop_signal = SIGINT;
    bool last = ev->step == r->info.train.steps;
    progress(r, ev->step, c->first, ev->loss, c->t0, last);
    if (last || ev->step % r->log_every == 0) {
        double elapsed = tool_now() - c->t0;
        metrics_train(&r->metrics, ev->step, ev->loss, ev->lr, ev->grad_norm,
                      tokens_per_s(r, ev->step, c->first, elapsed), elapsed);
    }
    if (r->patience_out && !last) {
        c->stopped = "early stop";
        c->early = true;
        return STRIX_TRAIN_STOP; /* this step just evaluated and saved */
    }
    if (r->stop_after > 0 && ev->step >= r->stop_after) {
        c->stopped = "stopped by --stop-after";
        return STRIX_TRAIN_STOP;
    }
    if (r->time_limit > 0 && tool_now() - c->t0 >= r->time_limit) {
        c->stopped = "time limit";
        return STRIX_TRAIN_STOP_EVAL; /* its own stream: the run stays resumable bit for bit */
    }
    return STRIX_TRAIN_CONTINUE;
}

/* The training loop from the run's current step. */
static int train_loop(run *r) {
    strix_checkpoint_info *info = &r->info;
    const strix_train_config *t = &info->train;

    out_stop_signals_install();
    if (getenv("STRIX_STOP_FILE")) out_stop_signals_at_once(); /* --procs: Ctrl-C is the file */

    loop_ctx c = {.r = r, .t0 = tool_now(), .first = info->state.step};
    r->t0 = c.t0;
    if (r->stop_after > 0 && r->stop_after <= c.first) {
        fprintf(stderr, "strix: --stop-after %" PRId64 " is not past the checkpoint's step %" PRId64
                        "\n", r->stop_after, c.first);
        return 2;
    }
    if (r->init_from && r->model.eval) { /* where the fine-tuning starts from */
        double val;
        strix_status s = r->model.eval(r->model.ctx, &val);
        if (s != STRIX_OK) return tool_fail(s);
        info->state.val_loss = val;
        printf("step 0: val loss %.4f\n", val);
        fflush(stdout);
        metrics_eval(&r->metrics, 0, val, tool_now() - c.t0);
        if (r->keep_best && isfinite(val)) { /* the weights it starts from are the first best */
            out_save_guard guard;
            out_save_begin(&guard);
            s = strix_checkpoint_save_lm(r->best_path, r->lm, info);
            out_save_end(&guard);
            if (s != STRIX_OK) return tool_fail(s);
            r->best_val = val;
            r->best_step = 0;
            r->evals_since_best = 0;
        }
    }
    strix_train_hooks hooks = {.dist = r->ranks.dist, .on_event = on_event, .user = &c,
                               .stop = &out_stop_signal};
    strix_train_result res;
    strix_status s = strix_train_run(t, &r->model, r->opt, &info->state, &hooks, &res);
    out_stop_signals_ignore();
    clear_progress(r);
    if (s != STRIX_OK && !res.shared_error) r->alone_error = true;
    if (s != STRIX_OK && res.shared_error && !r->root) return 1; /* rank 0 reports it */
    if (s == STRIX_OK && !r->root) return 0;
    if (s == STRIX_ERR_NUMERIC) { /* no update any more: nothing was saved since */
        char kept[STRIX_PATH_MAX + 64] = "no checkpoint was written";
        if (r->good_step >= 0)
            snprintf(kept, sizeof kept, "the last good checkpoint %s (step %" PRId64 ") is kept",
                     r->good_path, r->good_step);
        fprintf(stderr, "strix: %s; %s\n", strix_last_error(), kept);
        return 1;
    }
    if (s != STRIX_OK) return tool_fail(s);
    if (res.end == STRIX_TRAIN_INTERRUPTED) c.stopped = "interrupted";
    int64_t step = info->state.step, val_step = res.val_step;
    double elapsed = tool_now() - c.t0;
    if (res.skipped > 0)
        fprintf(stderr, "strix: warning: %" PRId64 " of %" PRId64 " steps were skipped for a "
                        "non-finite loss or gradient norm%s\n", res.skipped, step - c.first,
                res.skip_since >= 0 ? ", the run's last steps among them" : "");
    if (c.early) {
        fprintf(stderr, "strix: early stop at step %" PRId64 " of %" PRId64 ": %" PRId64
                        " evaluation%s without a val loss below %.4f (step %" PRId64 "); best "
                        "checkpoint %s, last %s\n", step, t->steps, r->evals_since_best,
                r->evals_since_best == 1 ? "" : "s", r->best_val, r->best_step, r->best_path,
                r->out);
    } else if (c.stopped) {
        fprintf(stderr, "strix: %s at step %" PRId64 " of %" PRId64 "; checkpoint saved to %s "
                        "(continue with: strix train --resume %s)\n", c.stopped, step, t->steps,
                r->out, r->out);
    }
    char train_text[32] = "n/a (no step run)", val_text[64] = "n/a (no evaluation yet)";
    if (step > c.first) snprintf(train_text, sizeof train_text, "%.4f", (double)res.loss);
    if (!isnan(info->state.val_loss)) {
        if (val_step == step)
            snprintf(val_text, sizeof val_text, "%.4f", info->state.val_loss);
        else if (val_step >= 0)
            snprintf(val_text, sizeof val_text, "%.4f (at step %" PRId64 ")",
                     info->state.val_loss, val_step);
        else
            snprintf(val_text, sizeof val_text, "%.4f (from the checkpoint)",
                     info->state.val_loss);
    }
    printf("%s: %" PRId64 " of %" PRId64 " steps, train loss %s, val loss %s, %.1f s; "
           "saved %s\n", step == t->steps ? "done" : "stopped", step, t->steps, train_text,
           val_text, elapsed, r->out);
    if (c.stopped && strcmp(c.stopped, "time limit") == 0 && step < 1000)
        fprintf(stderr, "strix: note: --time stopped the run after %" PRId64 " step%s "
                        "(%.0f tok/s): too few for good samples (a small model needs thousands); "
                        "another process busy on the cores makes each step many times slower: "
                        "give a longer --time, fewer --threads, or an idle machine\n", step,
                step == 1 ? "" : "s", tokens_per_s(r, step, c.first, elapsed));
    return 0;
}

// ---- setup -------------------------------------------------------------------------------------

/* Checks the flags given with --resume against the checkpoint (exit code 2 on a conflict). */
static int check_resume_flags(const strix_checkpoint_info *ck, arg_spec *specs, int n) {
    /* --data may name the corpus at another place: its size and hash are checked instead. */
    static const char *allowed[] = {"out",       "threads",    "procs",    "time", "backend", "device",
                                    "resume",    "log-every",  "stop-after", "save-delay",
                                    "step-delay",
                                    "data",      "metrics",    "keep-best", "patience",
                                    "nan-from",  "force"};
    for (int i = 0; i < n; i++) {
        if (!specs[i].seen) continue;
        bool ok = false;
        for (size_t a = 0; a < sizeof allowed / sizeof *allowed; a++)
            ok |= strcmp(specs[i].name, allowed[a]) == 0;
        if (ok) continue;
        char mine[STRIX_PATH_MAX], theirs[STRIX_PATH_MAX];
        args_format_value(&specs[i], mine, sizeof mine);
        if (!checkpoint_value(ck, specs[i].name, theirs, sizeof theirs)) theirs[0] = '\0';
        if (strcmp(mine, theirs) == 0) continue; /* the same value changes nothing */
        if (!flag_applies(specs[i].name, ck->model.arch)) {
            fprintf(stderr, "strix train: --%s does not apply to the %s model of the checkpoint; a "
                            "resumed run keeps its configuration\n", specs[i].name,
                    strix_arch_name(ck->model.arch));
            return 2;
        }
        fprintf(stderr, "strix train: --%s conflicts with the checkpoint (%s); a resumed run "
                        "keeps its configuration\n", specs[i].name, theirs[0] ? theirs : "unset");
        return 2;
    }
    return 0;
}

/* Creates the run's backend: `name` is --backend for a new run, and for a resumed run the
 * checkpoint's backend unless --backend names another. Records it for the next checkpoint. */
static int setup_backend(run *r, const train_flags *f, const char *name) {
    int threads = f->threads;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int local = strix_dist_local_size(); /* processes of this job on this machine share its cores */
    if (threads == 0 && local > 1) threads = cores > local ? (int)(cores / local) : 1;
    if (!tool_warn_threads(threads) && local > 1 && (long)threads * local > cores)
        fprintf(stderr, "strix: warning: %d processes x %d threads exceed the %ld online cores; "
                        "oversubscribed threads make every step much slower\n", local, threads,
                cores);
    strix_set_num_threads(threads);
    /* the processes of one machine take one GPU each: "cuda" is cuda:<local rank> there (the
     * checkpoint keeps the name given) */
    char device[48];
    bool gpu = strcmp(name, "cuda") == 0 || strcmp(name, "hip") == 0;
    snprintf(device, sizeof device, "%s", name);
    if (gpu && local > 1) snprintf(device, sizeof device, "%s:%d", name, strix_dist_local_rank());
    strix_status s = tool_backend_init(device, &r->be);
    if (s != STRIX_OK) {
        fprintf(stderr, "strix: backend %s: %s\n", device, strix_last_error());
        return 1;
    }
    if (name != r->backend) snprintf(r->backend, sizeof r->backend, "%s", name);
    r->info.train.backend = r->backend;
    return 0;
}

static strix_status run_loss_step(void *ctx, const strix_train_slice *sl, float *loss) {
    run *r = ctx;
    strix_status s = r->lm_model.loss_step(r->lm_model.ctx, sl, loss);
    if (r->nan_from > 0 && sl->step + 1 >= r->nan_from) *loss = NAN; /* the testing flag */
    if (r->step_delay > 0) { /* the testing flag: a step long enough to be interrupted in */
        double whole = floor(r->step_delay);
        struct timespec ts = {.tv_sec = (time_t)whole,
                              .tv_nsec = (long)((r->step_delay - whole) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    }
    return s;
}

static strix_status run_eval(void *ctx, double *val_loss) {
    run *r = ctx;
    return r->lm_model.eval(r->lm_model.ctx, val_loss);
}

/* The LM adapter on the run's corpus and state, the checkpoint writer, and the optimizer. */
static int setup_trainer(run *r) {
    const strix_train_config *t = &r->info.train;
    strix_gpt_train_data d = {.batch = t->batch, .corpus = &r->corpus, .state = &r->info.state,
                              .sequential = t->sequential, .eval_batches = t->eval_batches,
                              .eval_seed = strix_seed_derive(t->seed, 3),
                              .dropout_seed = strix_seed_derive(t->seed, 4)};
    strix_status s = strix_lm_train_model(r->lm, &d, &r->lm_model);
    if (s == STRIX_OK) s = strix_train_optimizer(r->lm_model.params, t, &r->opt);
    if (s != STRIX_OK) return tool_fail(s);
    r->model = (strix_train_model){.ctx = r, .params = r->lm_model.params,
                                   .loss_step = run_loss_step,
                                   .eval = r->lm_model.eval ? run_eval : NULL, .save = save};
    return 0;
}

/* The model-shape flags given with --init-from must repeat the file's values (exit code 2). */
static int check_init_flags(const strix_checkpoint_info *ck, const char *file, arg_spec *specs,
                            int n) {
    static const char *shape[] = {"arch",  "d-model", "layers",  "heads",  "head-sizes",
                                  "d-ff",  "block",   "rope",    "relu",   "tie",
                                  "no-bias", "hidden", "d-state", "d-conv", "expand"};
    for (size_t i = 0; i < sizeof shape / sizeof *shape; i++) {
        arg_spec *a = args_find(specs, n, shape[i]);
        if (!a->seen) continue;
        /* a sequence model's weights do not depend on the window: a fine-tune may change it */
        if (ck->model.arch != STRIX_ARCH_GPT && strcmp(shape[i], "block") == 0) continue;
        char mine[STRIX_PATH_MAX], theirs[STRIX_PATH_MAX];
        args_format_value(a, mine, sizeof mine);
        checkpoint_value(ck, a->name, theirs, sizeof theirs);
        if (strcmp(mine, theirs) == 0) continue;
        fprintf(stderr, "strix train: --%s %s differs from the model of --init-from %s (%s); the "
                        "model's shape comes from the file\n", a->name, mine, file,
                theirs[0] ? theirs : "unset");
        return 2;
    }
    return 0;
}

static int start_new_from(run *r, train_flags *f, arg_spec *specs, int n,
                          const strix_checkpoint *init);
static int check_outputs(run *r, const train_flags *f, const char *data, int64_t resume_step);

/* A new run: from --init-from's weights (its checkpoint open while the run is set up), or
 * initialised from --seed. */
static int start_new(run *r, train_flags *f, arg_spec *specs, int n) {
    strix_checkpoint *ck = NULL;
    if (f->init_from) {
        strix_status s = strix_checkpoint_open(f->init_from, &ck);
        if (s != STRIX_OK) return tool_fail(s);
        r->init_from = f->init_from;
    }
    int rc = start_new_from(r, f, specs, n, ck);
    if (ck) strix_checkpoint_close(ck);
    return rc;
}

static void set_vocab_size(strix_lm_config *c, int V) {
    if (c->arch == STRIX_ARCH_GPT) c->gpt.vocab_size = V;
    else c->seq.vocab_size = V;
}

/* The model of a new run from the flags: --arch and the shape flags that apply to it (one that
 * does not is a usage error, exit code 2). The vocabulary is a placeholder (256) until the corpus
 * is read. */
static int new_model_config(const train_flags *f, arg_spec *specs, int n, strix_lm_config *lc) {
    strix_arch arch = STRIX_ARCH_GPT;
    if (f->arch && strix_arch_from_name(f->arch, &arch) != STRIX_OK) {
        fprintf(stderr, "strix train: --arch: %s\n", strix_last_error());
        return 2;
    }
    for (size_t i = 0; i < sizeof seq_flags / sizeof *seq_flags; i++) {
        if (!args_find(specs, n, seq_flags[i].name)->seen || (seq_flags[i].archs & ARCH_BIT(arch)))
            continue;
        char list[96] = "";
        for (int a = 0; a < STRIX_ARCH_COUNT; a++)
            if (seq_flags[i].archs & ARCH_BIT(a))
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                         list[0] ? ", " : "", strix_arch_name((strix_arch)a));
        fprintf(stderr, "strix train: --%s applies to --arch %s, not to %s\n", seq_flags[i].name,
                list, strix_arch_name(arch));
        return 2;
    }
    if (arch != STRIX_ARCH_GPT) {
        strix_seqlm_config q = strix_seqlm_config_default(arch);
        q.vocab_size = 256;
        q.d_model = f->d_model;
        q.block_size = f->block;
        if (args_find(specs, n, "layers")->seen) q.n_layer = f->layers;
        q.hidden = args_find(specs, n, "hidden")->seen ? f->hidden : f->d_model;
        if (args_find(specs, n, "d-state")->seen) q.d_state = f->d_state;
        if (args_find(specs, n, "d-conv")->seen) q.d_conv = f->d_conv;
        if (args_find(specs, n, "expand")->seen) q.expand = f->expand;
        if (args_find(specs, n, "heads")->seen) q.n_head = f->heads;
        q.d_ff = f->d_ff;
        q.tie_weights = q.tie_weights || f->tie;
        *lc = strix_lm_config_of_seq(&q);
        return 0;
    }
    strix_gpt_config m = strix_gpt_config_default();
    m.d_model = f->d_model;
    m.n_layer = f->layers;
    m.n_head = f->heads;
    m.d_ff = f->d_ff;
    m.block_size = f->block;
    m.mlp_act = f->relu ? STRIX_ACT_RELU : STRIX_ACT_GELU;
    m.rope = f->rope;
    m.tie_weights = f->tie;
    m.bias = !f->no_bias;
    m.dropout = f->dropout;
    if (f->head_sizes) {
        if (args_find(specs, n, "heads")->seen) {
            fprintf(stderr, "strix train: give either --heads or --head-sizes, not both\n");
            return 2;
        }
        if (!parse_head_sizes(f->head_sizes, &m)) return 2;
    }
    m.vocab_size = 256;
    *lc = strix_lm_config_of_gpt(&m);
    return 0;
}

static int start_new_from(run *r, train_flags *f, arg_spec *specs, int n,
                          const strix_checkpoint *init) {
    strix_checkpoint_info *info = &r->info;
    strix_lm_config *lc = &info->model;
    if (init) {
        const strix_checkpoint_info *src = strix_checkpoint_info_of(init);
        int rc = check_init_flags(src, f->init_from, specs, n);
        if (rc) return rc;
        *lc = src->model;
        if (lc->arch == STRIX_ARCH_GPT) /* a training setting of the new run, as nanoGPT's */
            lc->gpt.dropout = f->dropout;
        else if (args_find(specs, n, "block")->seen) /* the window of a sequence model */
            lc->seq.block_size = f->block;
        info->vocab = src->vocab;
        r->vocab_fixed = true;
    } else {
        int rc = new_model_config(f, specs, n, lc);
        if (rc) return rc;
    }
    if (lc->arch == STRIX_ARCH_GPT && !(lc->gpt.dropout < 1.0f)) {
        fprintf(stderr, "strix train: --dropout must be in [0, 1) (got %g): p = 1 drops "
                        "everything\n",
                (double)lc->gpt.dropout);
        return 2;
    }
    if (strix_lm_config_check(lc) != STRIX_OK) {
        fprintf(stderr, "strix train: %s\n", strix_last_error());
        return 2;
    }
    if (strncmp(f->backend, "cpu", 3) == 0 && tool_check_memory("train", lc, f->batch)) return 2;
    strix_train_config *t = &info->train;
    t->steps = f->steps;
    t->time_limit = f->time;
    t->lr = f->lr;
    t->min_lr = args_find(specs, n, "min-lr")->seen ? f->min_lr : f->lr / 10.0f;
    if (t->min_lr > t->lr) {
        fprintf(stderr, "strix train: --min-lr %g exceeds --lr %g\n", (double)t->min_lr,
                (double)t->lr);
        return 2;
    }
    t->warmup = f->warmup;
    t->weight_decay = f->weight_decay;
    t->clip = f->clip;
    strix_adamw_config adam = strix_adamw_defaults(f->weight_decay);
    t->adam_beta1 = adam.beta1;
    t->adam_beta2 = adam.beta2;
    t->adam_eps = adam.eps;
    t->batch = f->batch;
    t->grad_accum = f->grad_accum;
    t->grad_shards = f->grad_shards > 0 ? f->grad_shards : r->ranks.size;
    if (t->grad_shards % r->ranks.size != 0) {
        fprintf(stderr, "strix train: --grad-shards %d is not a multiple of the %d processes "
                        "(each computes the same number of shards)\n", t->grad_shards,
                r->ranks.size);
        return 2;
    }
    if (t->batch % t->grad_shards != 0) {
        fprintf(stderr, "strix train: --batch %d is the global batch of the %d process%s: it "
                        "must be divisible by --grad-shards %d\n", t->batch, r->ranks.size,
                r->ranks.size == 1 ? "" : "es", t->grad_shards);
        return 2;
    }
    t->seed = f->seed;
    t->eval_every = f->eval_every;
    t->eval_batches = f->eval_batches;
    t->val_fraction = f->val_fraction;
    t->sequential = f->sequential;
    bool stride_seen = args_find(specs, n, "stride")->seen;
    if (stride_seen && !f->sequential) {
        fprintf(stderr, "strix train: --stride applies only with --sequential (random windows "
                        "have no stride)\n");
        return 2;
    }
    t->stride = stride_seen ? f->stride : strix_lm_config_block(lc); /* --init-from: the file's */
    const char *data = f->data ? f->data : DEFAULT_CORPUS;
    if (strlen(data) >= sizeof r->data_path) {
        fprintf(stderr, "strix train: --data path is too long\n");
        return 2;
    }
    struct stat st;
    bool out_exists = r->root && stat(r->out, &st) == 0; /* rank 0 alone writes the outputs */
    /* every output is checked before anything is created (the log is opened in cmd_train) */
    if (f->init_from && out_exists && out_same_file(r->out, f->init_from)) {
        fprintf(stderr, "strix train: --out '%s' is the --init-from file; a fine-tune writes its "
                        "own checkpoint (choose another --out)\n", r->out);
        return 2;
    }
    int rc = r->root ? out_check(r->out, data, f->force) : 0;
    if (rc == 0 && r->root) rc = check_outputs(r, f, data, -1);
    if (rc == 0 && r->root) rc = out_lock_take(&r->lock, r->out, "train");
    if (rc) return rc;

    rc = load_corpus(r, data, f->data == NULL, NULL, false);
    if (rc) return rc;
    /* The absolute path, so that --resume finds the corpus from any working directory. */
    out_resolve_path(data, r->data_path, sizeof r->data_path);
    t->data_path = r->data_path;
    set_vocab_size(lc, r->corpus.vocab.size); /* --init-from: the model's (load_corpus encoded) */
    info->vocab = r->corpus.vocab;
    info->state.step = 0;
    info->state.data_rng = strix_seed_derive(f->seed, 2);
    info->state.cursor = (strix_seq_cursor){.pos = 0, .stride = (uint64_t)t->stride, .epoch = 0};
    info->state.val_loss = NAN;
    info->state.data_size = r->corpus.size;
    info->state.data_hash = r->corpus.hash;

    rc = setup_backend(r, f, f->backend);
    if (rc) return rc;
    strix_status s = strix_lm_new(r->be, lc, &r->lm);
    if (s == STRIX_OK && init) s = strix_checkpoint_restore_lm(init, r->lm, false); /* weights */
    else if (s == STRIX_OK) s = strix_lm_init_weights(r->lm, strix_seed_derive(f->seed, 1));
    if (s != STRIX_OK) return tool_fail(s);
    if (args_find(specs, n, "warmup")->seen && t->warmup > t->steps)
        fprintf(stderr, "strix: warning: --warmup %" PRId64 " exceeds --steps %" PRId64 ": the "
                        "learning rate only reaches %g of --lr %g and never decays\n",
                t->warmup, t->steps, (double)t->lr * (double)t->steps / (double)t->warmup,
                (double)t->lr);
    if (out_exists) /* a strix checkpoint: out_check refused anything else */
        fprintf(stderr, "strix: note: %s exists and will be replaced at the first checkpoint\n",
                r->out);
    return setup_trainer(r);
}

/* True when the checkpoint `b` (the best file found beside --out) is one this run wrote: a full
 * checkpoint of the same corpus (size and hash), model, seed and training configuration (the
 * corpus's path, backend and time limit may differ), at a step <= resume_step. Two runs equal in
 * all of these are the same run: they are bit-identical. */
static bool best_of_this_run(const strix_checkpoint_info *b, const strix_checkpoint_info *me,
                             int64_t resume_step) {
    if (b->weights_only || b->state.step > resume_step || !isfinite(b->state.val_loss))
        return false;
    if (b->state.data_size != me->state.data_size || b->state.data_hash != me->state.data_hash)
        return false;
    char *mb = NULL, *mm = NULL;
    bool same = b->model.arch == me->model.arch &&
                strix_lm_config_to_json(&b->model, &mb) == STRIX_OK &&
                strix_lm_config_to_json(&me->model, &mm) == STRIX_OK && strcmp(mb, mm) == 0;
    free(mb);
    free(mm);
    const strix_train_config *x = &b->train, *y = &me->train;
    int ax = x->grad_accum > 1 ? x->grad_accum : 1, ay = y->grad_accum > 1 ? y->grad_accum : 1;
    return same && x->steps == y->steps && x->lr == y->lr && x->min_lr == y->min_lr &&
           x->warmup == y->warmup && x->weight_decay == y->weight_decay && x->clip == y->clip &&
           x->adam_beta1 == y->adam_beta1 && x->adam_beta2 == y->adam_beta2 &&
           x->adam_eps == y->adam_eps && x->batch == y->batch && ax == ay &&
           (x->grad_shards > 1 ? x->grad_shards : 1) == (y->grad_shards > 1 ? y->grad_shards : 1) &&
           x->seed == y->seed && x->eval_every == y->eval_every &&
           x->eval_batches == y->eval_batches && x->val_fraction == y->val_fraction &&
           x->sequential == y->sequential && x->stride == y->stride;
}

/* The best checkpoint <stem>.best.safetensors of --keep-best / --patience: its path, and the
 * checks on an existing one (exit code 2, one line): the corpus or a file directly in its
 * directory, not a strix checkpoint, another run's (a new run: any; a resumed run: one that
 * best_of_this_run rejects) unless --force. A resumed run takes the best so far from its own. */
static int check_best(run *r, const train_flags *f, const char *data, int64_t resume_step) {
    static const char ext[] = ".safetensors";
    size_t len = strlen(r->out), e = sizeof ext - 1;
    if (len > e && strcmp(r->out + len - e, ext) == 0) len -= e;
    snprintf(r->best_path, sizeof r->best_path, "%.*s.best.safetensors", (int)len, r->out);
    char what[STRIX_PATH_MAX + 48];
    snprintf(what, sizeof what, "the best checkpoint '%s'", r->best_path);
    if (out_check_outside_corpus(what, r->best_path, data)) return 2;
    if (r->metrics_on && out_same_file(r->metrics_path, r->best_path)) {
        fprintf(stderr, "strix train: --metrics '%s' is the best checkpoint of --keep-best; "
                        "choose another path for the log\n", r->metrics_path);
        return 2;
    }
    struct stat st;
    if (stat(r->best_path, &st) != 0) return 0;
    if (!S_ISREG(st.st_mode) || strix_checkpoint_probe(r->best_path) != STRIX_OK) {
        fprintf(stderr, "strix train: %s (--keep-best) exists and is not a strix checkpoint; "
                        "refusing to replace it (remove it or choose another --out)\n", what);
        return 2;
    }
    bool mine = false;
    strix_checkpoint *ck;
    if (resume_step >= 0 && strix_checkpoint_open(r->best_path, &ck) == STRIX_OK) {
        const strix_checkpoint_info *b = strix_checkpoint_info_of(ck);
        mine = best_of_this_run(b, &r->info, resume_step);
        if (mine) {
            r->best_val = b->state.val_loss;
            r->best_step = b->state.step;
            int64_t every = r->info.train.eval_every;
            r->evals_since_best = resume_step / every - b->state.step / every;
        }
        strix_checkpoint_close(ck);
    }
    if (!mine && !f->force) {
        fprintf(stderr, "strix train: %s of another run exists; --force replaces it\n", what);
        return 2;
    }
    return 0;
}

/* Checks the run's other outputs once --out passed its checks, creating nothing: the metrics log
 * (metrics_check; a new run when resume_step < 0) and, with --keep-best or --patience, the best
 * checkpoint (check_best). Returns 0 or an exit code (message printed). */
static int check_outputs(run *r, const train_flags *f, const char *data, int64_t resume_step) {
    char *path = r->metrics_path;
    size_t cap = sizeof r->metrics_path;
    bool none = f->metrics && strcmp(f->metrics, "none") == 0;
    if (f->metrics && !none) snprintf(path, cap, "%s", f->metrics);
    else metrics_default_path(r->out, path, cap);
    const char *base = strrchr(path, '/');
    if (!f->metrics && strlen(base ? base + 1 : path) > NAME_MAX) {
        fprintf(stderr, "strix: note: no metrics log: its default name %s would exceed %d bytes "
                        "(give --metrics PATH)\n", path, NAME_MAX);
        none = true;
    }
    r->metrics_on = !none;
    r->resume_step = resume_step;
    r->force = f->force;
    bool orphan;
    if (r->metrics_on) {
        int rc = metrics_check(path, r->out, data, resume_step, f->force, &orphan);
        if (rc) return rc;
    }
    r->keep_best = f->keep_best || f->patience > 0;
    r->patience = f->patience;
    r->best_val = INFINITY;
    r->best_step = -1;
    r->eval_step = -1;
    return r->keep_best ? check_best(r, f, data, resume_step) : 0;
}

/* Opens the metrics log checked by check_outputs, once the run is set up (a run refused or failed
 * before this leaves no log behind). Returns 0 or an exit code (message printed). */
static int open_outputs(run *r) {
    if (!r->root || !r->metrics_on) return 0;
    return metrics_open(&r->metrics, r->metrics_path, r->out, r->info.train.data_path,
                        r->resume_step, r->force);
}

static int start_resumed(run *r, train_flags *f, arg_spec *specs, int n) {
    strix_checkpoint *ck;
    strix_status s = strix_checkpoint_open(f->resume, &ck);
    if (s != STRIX_OK) return tool_fail(s);
    if (strix_checkpoint_info_of(ck)->weights_only) { /* no run to continue */
        strix_checkpoint_close(ck);
        fprintf(stderr, "strix train: --resume %s is a weights-only file (no optimizer state "
                        "and no run); only a full checkpoint can be resumed\n", f->resume);
        return 2;
    }
    r->info = *strix_checkpoint_info_of(ck);
    /* the strings point into ck: keep copies (the checkpoint bounds data_path by STRIX_PATH_MAX
     * and the backend name by 32 bytes) */
    snprintf(r->data_path, sizeof r->data_path, "%s", r->info.train.data_path);
    snprintf(r->backend, sizeof r->backend, "%s", r->info.train.backend);
    r->info.train.data_path = r->data_path;
    r->info.train.backend = r->backend;
    r->good_path = f->resume;
    r->good_step = r->info.state.step;
    int rc = check_resume_flags(&r->info, specs, n);
    int S = r->info.train.grad_shards > 1 ? r->info.train.grad_shards : 1;
    if (rc == 0 && S % r->ranks.size != 0) {
        fprintf(stderr, "strix train: %s was trained with %d gradient shard%s; it resumes on a "
                        "process count dividing %d, not on %d\n", f->resume, S,
                S == 1 ? "" : "s", S, r->ranks.size);
        rc = 2;
    }
    /* The whole checkpoint is checked (every tensor present with its shape) even when the run is
     * finished: a damaged file is reported, never called finished. */
    if (rc == 0)
        rc = setup_backend(r, f,
                           args_find(specs, n, "backend")->seen ||
                                   args_find(specs, n, "device")->seen
                               ? f->backend
                               : r->info.train.backend);
    if (rc == 0) {
        s = strix_lm_new(r->be, &r->info.model, &r->lm);
        if (s == STRIX_OK) s = strix_checkpoint_restore_lm(ck, r->lm, true);
        if (s != STRIX_OK) rc = tool_fail(s);
    }
    strix_checkpoint_close(ck);
    if (rc) return rc;
    if (r->info.state.step >= r->info.train.steps) {
        printf("%s already finished its %" PRId64 " steps; nothing to do\n", f->resume,
               r->info.train.steps);
        return -1;
    }
    strix_train_config *t = &r->info.train;
    const char *data = f->data ? f->data : t->data_path;
    struct stat st;
    if (!f->data && stat(data, &st) != 0 && errno == ENOENT) {
        fprintf(stderr, "strix: the corpus '%s' of %s no longer exists; if it moved, pass "
                        "--data PATH (its size and hash are checked)\n", data, f->resume);
        return 1;
    }
    if (strlen(data) >= sizeof r->data_path) {
        fprintf(stderr, "strix train: --data path is too long\n");
        return 2;
    }
    if (r->root) {
        rc = out_check(r->out, data, true);
        if (rc == 0) rc = check_outputs(r, f, data, r->info.state.step);
        if (rc == 0) rc = out_lock_take(&r->lock, r->out, "train");
    }
    r->vocab_fixed = true;
    if (rc == 0) rc = load_corpus(r, data, false, f->resume, f->data != NULL);
    if (rc) return rc;
    char where[STRIX_PATH_MAX];
    out_resolve_path(data, where, sizeof where); /* where the corpus is now, for the next resume */
    strcpy(r->data_path, where);
    t->data_path = r->data_path;
    t->time_limit = f->time;
    return setup_trainer(r);
}

/* Removes every "--name V" and "--name=V" from argv (in place); returns the new argc. */
static int argc_without(int argc, char **argv, const char *name) {
    size_t len = strlen(name);
    int k = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool flag = i > 0 && a[0] == '-' && a[1] == '-' && strncmp(a + 2, name, len) == 0;
        if (flag && a[2 + len] == '=') continue;
        if (flag && a[2 + len] == '\0') {
            i++; /* and its value */
            continue;
        }
        argv[k++] = argv[i];
    }
    argv[k] = NULL;
    return k;
}

/* FNV-1a of everything that decides a run's numbers: the model's config, the vocabulary, the
 * training configuration, the backend and the step it starts from (the ranks of a run must
 * agree on it). */
static uint64_t run_fingerprint(const run *r) {
    const strix_checkpoint_info *i = &r->info;
    const strix_train_config *t = &i->train;
    char *model = NULL;
    if (strix_lm_config_to_json(&i->model, &model) != STRIX_OK) model = NULL;
    char buf[1024];
    snprintf(buf, sizeof buf, "%" PRId64 " %a %a %" PRId64 " %a %a %a %a %a %d %d %d %" PRIu64
             " %" PRId64 " %d %a %d %" PRId64 " %" PRId64 " %" PRIu64 " %" PRIu64, t->steps,
             (double)t->lr, (double)t->min_lr, t->warmup, (double)t->weight_decay,
             (double)t->clip, (double)t->adam_beta1, (double)t->adam_beta2, (double)t->adam_eps,
             t->batch, t->grad_accum, t->grad_shards, t->seed, t->eval_every, t->eval_batches,
             t->val_fraction, t->sequential, t->stride, i->state.step, i->state.data_size,
             i->state.data_hash);
    uint64_t h = 1469598103934665603ull;
    const char *backend = t->backend ? t->backend : ""; /* one kind of device for all ranks */
    const char *parts[4] = {buf, model ? model : "", (const char *)i->vocab.bytes, backend};
    size_t lens[4] = {strlen(buf), model ? strlen(model) : 0, (size_t)i->vocab.size,
                      strlen(backend)};
    for (int p = 0; p < 4; p++)
        for (size_t k = 0; k < lens[p]; k++) h = (h ^ (unsigned char)parts[p][k]) * 1099511628211ull;
    free(model);
    return h;
}

/* cmd_train once the communicator is open: parse, set up, agree across the ranks, train. */
static int train_main(run *r, train_flags *f, arg_spec *specs, int n, int argc, char **argv) {
    int rc = args_parse("train", argc, argv, 2, specs, n);
    if (rc == 1) {
        print_train_help(specs, NSPECS);
        return 0;
    }
    if (rc) return rc;
    /* --device / --backend to the backend name (f->backend from here on) */
    rc = args_backend_of("train", f->device,
                         args_find(specs, n, "backend")->seen ? f->backend : NULL, &f->backend);
    if (rc) return rc;
    r->out = f->out ? f->out : (f->resume ? f->resume : "model.safetensors");
    if (f->procs > 1 || (f->procs == 1 && strix_dist_launched_size() > 0)) {
        if (strix_dist_launched_size() > 0) {
            fprintf(stderr, "strix train: --procs starts the processes itself; under mpirun, "
                            "leave it out (mpirun -np N gives the count)\n");
            return 2;
        }
        return launch_train(f->procs, argc_without(argc, argv, "procs"), argv, r->out);
    }
    r->time_limit = f->time;
    r->stop_after = f->stop_after;
    r->log_every = f->log_every;
    r->save_delay = f->save_delay;
    r->step_delay = f->step_delay;
    r->nan_from = f->nan_from;
    r->good_step = -1;
    if (f->resume && f->init_from) {
        fprintf(stderr, "strix train: --init-from starts a new run; it cannot be given with "
                        "--resume\n");
        return 2;
    }
    r->tty = isatty(STDERR_FILENO);
    if (strlen(r->out) >= STRIX_PATH_MAX) {
        fprintf(stderr, "strix train: --out path is too long\n");
        return 2;
    }
    rc = f->resume ? start_resumed(r, f, specs, n) : start_new(r, f, specs, n);
    rc = ranks_agree(&r->ranks, rc); /* one rank's failed setup stops every rank */
    if (rc == 0) rc = ranks_same(&r->ranks, run_fingerprint(r), "settings (flags or checkpoints)");
    if (rc == 0) rc = ranks_agree(&r->ranks, open_outputs(r)); /* a refused run writes no log */
    if (rc == 0) {
        if (r->root) print_setup(r, f->resume != NULL);
        rc = train_loop(r);
    }
    return rc;
}

int cmd_train(int argc, char **argv) {
    train_flags f = {
        .out = NULL, .backend = "cpu", .steps = DEFAULT_STEPS, .time = 0.0, .d_model = 128,
        .layers = 4, .heads = 4, .d_ff = 0, .block = 64, .batch = 16, .grad_accum = 1,
        .threads = 0,
        .eval_batches = 20, .lr = 1e-3f, .min_lr = 1e-4f, .weight_decay = 0.1f, .clip = 1.0f,
        .warmup = 100, .eval_every = 250, .stride = 0, .stop_after = 0, .log_every = 50,
        .save_delay = 0.0,
        .seed = 1337, .val_fraction = 0.1,
    };
    arg_spec specs[NSPECS];
    train_specs(&f, specs);
    run r;
    memset(&r, 0, sizeof r);
    r.lock.fd = -1;
    if (ranks_open(&r.ranks)) return 1;
    r.root = r.ranks.rank == 0;
    int rc = train_main(&r, &f, specs, NSPECS, argc, argv);
    run_free(&r);
    if (r.alone_error) rc = ranks_fail_alone(&r.ranks, rc > 0 ? rc : 1);
    ranks_close(&r.ranks);
    return rc < 0 ? 0 : rc;
}
