/*
 * ranks.h - `strix train` as one process of a data-parallel job (strix/dist.h): rank 0 speaks
 * and writes files; every other rank sends its stdout to /dev/null and its stderr to a temporary
 * file, which it shows (each line prefixed "strix: rank R: ") only when it meets an error of its
 * own. Decisions the ranks must share go through ranks_agree.
 */
#ifndef STRIX_TOOL_RANKS_H
#define STRIX_TOOL_RANKS_H

#include <stdint.h>
#include <stdio.h>

#include "strix/dist.h"

typedef struct ranks {
    strix_dist *dist;   /* a world of one when not started by an MPI launcher */
    int rank, size;
    FILE *err;          /* ranks > 0: the real stderr; NULL on rank 0 */
    FILE *log;          /* ranks > 0: what stderr collected */
} ranks;

/* Opens the communicator and, on ranks > 0, quiets the output. Returns 0, or 1 after one line. */
int ranks_open(ranks *k);

/* Every rank's setup result `rc` (0 fine, -1 nothing to do, > 0 an exit code) made one: the
 * largest exit code of any rank (a rank that alone failed shows its lines), else rc. */
int ranks_agree(ranks *k, int rc);

/* 0 when every rank passed the same `value`; otherwise 2, after one line from rank 0 saying the
 * processes were started with different `what`. */
int ranks_same(ranks *k, uint64_t value, const char *what);

/* For an error only this rank met (the others may wait for it in an exchange): shows its lines
 * (ranks > 0) and ends the whole job with `code` when there are other ranks; returns `code`. */
int ranks_fail_alone(ranks *k, int code);

/* Closes the communicator (MPI_Finalize) and the collected output. */
void ranks_close(ranks *k);

#endif
