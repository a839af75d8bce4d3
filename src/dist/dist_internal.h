/*
 * dist_internal.h - the communicator's state and its host transport (mpi.c). The world-of-one
 * paths, the tree and the choice of where the gradient sum runs are dist.c's; every MPI call is
 * mpi.c's; a GPU plugin's collectives (NCCL) come through core/plugin.h.
 */
#ifndef STRIX_DIST_INTERNAL_H
#define STRIX_DIST_INTERNAL_H

#include "core/plugin.h"
#include "strix/dist.h"

struct strix_dist {
    int rank, size;
    bool mpi;              /* opened MPI (and finalizes it at close) */
    void *comm;            /* the MPI communicator (a heap MPI_Comm), NULL for a world of one */
    void *scratch;         /* strix_dist_scratch */
    size_t scratch_bytes;
    float *recv;           /* host: the chunks of every shard this rank adds */
    size_t recv_bytes;
    /* the sum in a backend's own memory (strix_dist_use_device) */
    strix_backend *dev_be; /* the backend decided for (NULL: none) */
    bool dev_ok;           /* the sum runs in its memory */
    const strix_plugin_collectives *coll; /* its plugin's collectives, opened (NULL: MPI on host
                                           * memory, or one rank) */
    void *coll_comm;
    float *dev_recv, *dev_scratch; /* buffers in dev_be's memory */
    size_t dev_recv_bytes, dev_scratch_bytes;
};

/* mpi.c: MPI_Init, the duplicate of MPI_COMM_WORLD with errors returned, rank and size. */
strix_status dist_mpi_open(strix_dist *d);
void dist_mpi_close(strix_dist *d);
void dist_mpi_abort(strix_dist *d, int code);
strix_status dist_mpi_barrier(strix_dist *d);
strix_status dist_mpi_broadcast(strix_dist *d, void *buf, size_t bytes, int root);
strix_status dist_mpi_max(strix_dist *d, int64_t *v);
strix_status dist_mpi_allgather_floats(strix_dist *d, const float *mine, size_t n, float *all);
/* The exchanges of the gradient sum on host memory, as the collectives of core/plugin.h:
 * alltoall_chunks and allgather_chunks. */
strix_status dist_mpi_alltoall_chunks(strix_dist *d, const float *shards, int local, size_t n,
                                      float *recv);
strix_status dist_mpi_allgather_chunks(strix_dist *d, const float *chunk, size_t n, float *out);

#endif
