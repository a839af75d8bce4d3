/*
 * launch.h - `strix train --procs N`: starts the run as N processes under OpenMPI's mpirun (one
 * machine; several machines take mpirun with a hostfile, docs/DISTRIBUTED.md).
 */
#ifndef STRIX_TOOL_LAUNCH_H
#define STRIX_TOOL_LAUNCH_H

/* Runs `mpirun -np procs --bind-to none -x STRIX_STOP_FILE [--oversubscribe]
 * [--allow-run-as-root] <this strix> argv[1..]` (argv: the train command line with --procs
 * removed) in its own process group, and waits for it. A first Ctrl-C (SIGINT, SIGTERM) creates
 * the file STRIX_STOP_FILE names, which every rank checks after each step: they stop at one step
 * and rank 0 saves; a second one, or SIGHUP, is SIGTERM to mpirun (every rank ends at once; exit
 * 130). mpirun's own notices are reduced to one line: a rank that died names its rank and signal,
 * and says whether `out` exists. Returns the exit code: mpirun's, 127 when no mpirun is on PATH
 * (one line), 1 when it cannot start. */
int launch_train(int procs, int argc, char **argv, const char *out);

#endif
