/*
 * strix/dist.h - the communicator of data-parallel training: rank, world size, the gradient sum in
 * a fixed order, broadcasts, agreement on small values, barrier. One process is a world of one
 * (no library needed); several processes started by an MPI launcher (`mpirun -np N`) talk through
 * MPI when the build has it (OpenMPI: Debian libopenmpi-dev, openmpi-bin).
 *
 * The promise: the gradient of a step is the sum of S "gradient shards" (each the gradient of an
 * equal slice of the global batch) added by ONE binary tree over the shard index (strix_dist_tree,
 * below), whichever rank computed which shard. So N processes each computing S/N shards give the
 * bits one process gives computing all S, for every N dividing S. The exchange: every rank sends
 * chunk q of each of its S/N shards to rank q (all-to-all), rank q adds its chunk of all S shards
 * by the tree, and an all-gather hands every rank the whole sum. Per step each rank sends (and
 * receives) (S/N + 1)·(N-1)/N of the gradient's bytes: with S = N, 2·(N-1)/N, a ring
 * all-reduce's traffic.
 *
 * Memory: strix_dist_sum_shards works on host memory; strix_dist_sum_shards_on on a backend's
 * own (host memory for the CPU backends; a GPU's with its plugin's NCCL). Not here: which slice
 * of a batch a shard is (the trainer and the model adapter).
 */
#ifndef STRIX_DIST_H
#define STRIX_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "strix/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct strix_dist strix_dist;

/* True when this build has MPI (CMake found it; option STRIX_MPI). */
STRIX_API bool strix_dist_has_mpi(void);

/* The world size an MPI launcher announced in the environment (OMPI_COMM_WORLD_SIZE, PMIX_SIZE,
 * PMI_SIZE), 0 when none did: the process was started on its own. */
STRIX_API int strix_dist_launched_size(void);

/* The number of processes of this job on this machine as the launcher announced it
 * (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS), 1 when none did: for dividing the cores. */
STRIX_API int strix_dist_local_size(void);

/* This process's index among the job's processes on this machine as the launcher announced it
 * (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID), 0 when none did: for choosing a GPU. */
STRIX_API int strix_dist_local_rank(void);

/* Opens the communicator: started by an MPI launcher, MPI_Init and a duplicate of MPI_COMM_WORLD
 * whose errors return (never abort); otherwise a world of one. STRIX_ERR_UNSUPPORTED when a
 * launcher announced more than one process and the build has no MPI (each process would train
 * alone and write the same files); STRIX_ERR_IO when MPI fails to start; STRIX_ERR_ALLOC. */
STRIX_API strix_status strix_dist_open(strix_dist **out);

/* A world of one that never touches MPI (the trainer's own when it is given none). */
STRIX_API strix_status strix_dist_open_solo(strix_dist **out);

/* Closes the communicator (MPI_Finalize when it opened MPI). NULL is a no-op. */
STRIX_API void strix_dist_close(strix_dist *d);

/* Ends every process of the job now with exit status `code` (MPI_Abort: the launcher stops the
 * others), for an error only this rank met while the others may wait in an exchange. Returns only
 * for a world of one (NULL included), doing nothing. */
STRIX_API void strix_dist_abort(strix_dist *d, int code);

/* This process's rank, 0..size-1 (NULL: 0), and the world size (NULL: 1). */
STRIX_API int strix_dist_rank(const strix_dist *d);
STRIX_API int strix_dist_size(const strix_dist *d);

/* Blocks until every rank reached it. STRIX_ERR_IO when the transport fails. */
STRIX_API strix_status strix_dist_barrier(strix_dist *d);

/* Copies `bytes` at buf on rank `root` into buf on every other rank (MPI_Bcast; any size: sent
 * in pieces under 2 GiB). STRIX_ERR_ARG for a bad root; STRIX_ERR_IO. */
STRIX_API strix_status strix_dist_broadcast(strix_dist *d, void *buf, size_t bytes, int root);

/* *v = the largest of every rank's *v (agreement on stop flags, actions and statuses).
 * STRIX_ERR_IO. */
STRIX_API strix_status strix_dist_max(strix_dist *d, int64_t *v);

/* all[r·n .. r·n+n) = rank r's mine[0..n), on every rank (rank order). STRIX_ERR_IO. */
STRIX_API strix_status strix_dist_allgather_floats(strix_dist *d, const float *mine, size_t n,
                                                   float *all);

/* The fixed tree over shards: x[0..count) rows of n floats, row i = shard i; afterwards row 0
 * holds sum(0, count) where sum(lo, hi) = x[lo] when hi - lo == 1, else
 * sum(lo, mid) + sum(mid, hi) with mid = lo + (hi - lo) / 2, each addition elementwise in float.
 * The other rows are overwritten. count >= 1. */
STRIX_API void strix_dist_tree(float *x, int count, size_t n);

/* The gradient sum: this rank holds `local` consecutive shards (rank r: shards r·local ..
 * r·local + local - 1 of size·local), rows of n floats at shards (local × n, host memory; used as
 * scratch: undefined afterwards). Writes to out[0..n) on every rank the tree sum
 * (strix_dist_tree) of all size·local shards: the same bits for any world size. out may not
 * overlap shards. STRIX_ERR_ARG for local < 1 or pieces over MPI's int counts; STRIX_ERR_ALLOC;
 * STRIX_ERR_IO when the transport fails (a rank died). */
STRIX_API strix_status strix_dist_sum_shards(strix_dist *d, float *shards, int local, size_t n,
                                             float *out);

/* Whether the gradient sum can run in `be`'s own memory (strix_dist_sum_shards_on): yes for a
 * backend in host memory (cpu, cpu-blas: MPI works on its buffers) and for a world of one; for a
 * GPU backend of several ranks when its plugin has collectives (the CUDA plugin's NCCL) on every
 * rank, which this call then opens. Collective on its first call with a backend (every rank calls
 * it with its own); later calls with the same backend answer at once. false: the gradients pass
 * through host memory (strix_dist_sum_shards). be NULL releases what the device path holds (call
 * it before freeing the backend). */
STRIX_API bool strix_dist_use_device(strix_dist *d, strix_backend *be);

/* strix_dist_sum_shards in the memory of `be`, which strix_dist_use_device chose: shards
 * (local × n, used as scratch) and out are be's buffers; the tree's additions are strix_add on
 * be, so the bits are the host tree's. Errors as strix_dist_sum_shards, and the backend's. */
STRIX_API strix_status strix_dist_sum_shards_on(strix_dist *d, strix_backend *be, float *shards,
                                                int local, size_t n, float *out);

/* Scratch in `be`'s memory, owned by the communicator (after strix_dist_use_device chose be; kept
 * between calls, grows without keeping contents). NULL on failure (the error set). */
STRIX_API void *strix_dist_scratch_on(strix_dist *d, strix_backend *be, size_t bytes);

/* Host scratch owned by the communicator, at least `bytes` (kept between calls; grows, contents
 * not kept when it grows). NULL on failure (STRIX_ERR_ALLOC set). */
STRIX_API void *strix_dist_scratch(strix_dist *d, size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
