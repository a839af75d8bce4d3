/*
 * dist_internal.h - the communicator's state and the transport it talks through (mpi.c). The
 * world-of-one paths and the tree are dist.c's; every call that leaves the process is mpi.c's.
 */
#ifndef STRIX_DIST_INTERNAL_H
#define STRIX_DIST_INTERNAL_H

#include "strix/dist.h"

struct strix_dist {
    int rank, size;
    bool mpi;              /* opened MPI (and finalizes it at close) */
    void *comm;            /* the MPI communicator (a heap MPI_Comm), NULL for a world of one */
    void *scratch;         /* strix_dist_scratch */
    size_t scratch_bytes;
    float *recv;           /* mpi.c: the chunks of every shard this rank adds */
    size_t recv_bytes;
};

/* mpi.c: MPI_Init, the duplicate of MPI_COMM_WORLD with errors returned, rank and size. */
strix_status dist_mpi_open(strix_dist *d);
void dist_mpi_close(strix_dist *d);
void dist_mpi_abort(strix_dist *d, int code);
strix_status dist_mpi_barrier(strix_dist *d);
strix_status dist_mpi_broadcast(strix_dist *d, void *buf, size_t bytes, int root);
strix_status dist_mpi_max(strix_dist *d, int64_t *v);
strix_status dist_mpi_allgather_floats(strix_dist *d, const float *mine, size_t n, float *all);
/* All-to-all of shard chunks then all-gather: see strix_dist_sum_shards. */
strix_status dist_mpi_sum_shards(strix_dist *d, float *shards, int local, size_t n, float *out);

#endif
