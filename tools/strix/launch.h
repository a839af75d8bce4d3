/*
 * launch.h - `strix train --procs N`: starts the run as N processes under OpenMPI's mpirun (one
 * machine; several machines take mpirun with a hostfile, docs/DISTRIBUTED.md).
 */
#ifndef STRIX_TOOL_LAUNCH_H
#define STRIX_TOOL_LAUNCH_H

/* Runs `mpirun -np procs --bind-to none [--oversubscribe] [--allow-run-as-root] <this strix>
 * argv[1..]` (argv: the train command line with --procs removed) in its own process group, and
 * waits for it. Ctrl-C (SIGINT, SIGTERM) is passed on as SIGUSR1, which mpirun hands to every
 * rank: they stop at one step and rank 0 saves; a second one as SIGTERM (every rank ends at once;
 * the last checkpoint stays intact). mpirun's own notices are reduced to one line: a rank that
 * died names its rank and signal. `out` names the checkpoint in that line. Returns the exit code:
 * mpirun's, 127 when no mpirun is on PATH (one line), 1 when it cannot start. */
int launch_train(int procs, int argc, char **argv, const char *out);

#endif
