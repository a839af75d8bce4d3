/*
 * mpi.c - the communicator's MPI transport (built when CMake finds MPI: STRIX_HAVE_MPI): start and
 * stop, barrier, broadcast, max, all-gather, and the two exchanges of the gradient sum on host
 * memory: the all-to-all of shard chunks (nonblocking sends and receives, one strided type per
 * peer, so nothing is packed) and the all-gather of the summed chunks (dist.c adds between). Errors return (MPI_ERRORS_RETURN) as STRIX_ERR_IO with
 * MPI's message and this rank.
 */
#include <limits.h>
#include <stdlib.h>

#include "core/plugin.h"
#include "dist/dist_internal.h"

#ifdef STRIX_HAVE_MPI
#include <mpi.h>

bool strix_dist_has_mpi(void) { return true; }

#define COMM(d) (*(MPI_Comm *)(d)->comm)

static strix_status mpi_fail(const strix_dist *d, const char *what, int rc) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
    text[len] = '\0';
    return strix_error(STRIX_ERR_IO, "rank %d of %d: %s failed: %s", d->rank, d->size, what,
                       len ? text : "unknown MPI error");
}

#define MPI_TRY(d, what, call)                                                                    \
    do {                                                                                          \
        int rc_ = (call);                                                                         \
        if (rc_ != MPI_SUCCESS) return mpi_fail(d, what, rc_);                                    \
    } while (0)

strix_status dist_mpi_open(strix_dist *d) {
    int started = 0;
    MPI_Initialized(&started);
    if (!started && MPI_Init(NULL, NULL) != MPI_SUCCESS)
        return strix_error(STRIX_ERR_IO, "dist: MPI_Init failed");
    d->mpi = !started;
    MPI_Comm *comm = malloc(sizeof *comm);
    if (!comm) return strix_error(STRIX_ERR_ALLOC, "dist: out of memory");
    if (MPI_Comm_dup(MPI_COMM_WORLD, comm) != MPI_SUCCESS) {
        free(comm);
        return strix_error(STRIX_ERR_IO, "dist: MPI_Comm_dup failed");
    }
    MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(*comm, &d->rank);
    MPI_Comm_size(*comm, &d->size);
    d->comm = comm;
    return STRIX_OK;
}

void dist_mpi_close(strix_dist *d) {
    if (d->comm) {
        MPI_Comm_free((MPI_Comm *)d->comm);
        free(d->comm);
        d->comm = NULL;
    }
    int done = 0;
    MPI_Finalized(&done);
    if (d->mpi && !done) MPI_Finalize();
}

void dist_mpi_abort(strix_dist *d, int code) { MPI_Abort(COMM(d), code); }

strix_status dist_mpi_barrier(strix_dist *d) {
    MPI_TRY(d, "MPI_Barrier", MPI_Barrier(COMM(d)));
    return STRIX_OK;
}

strix_status dist_mpi_broadcast(strix_dist *d, void *buf, size_t bytes, int root) {
    const size_t piece = (size_t)1 << 30;
    for (size_t off = 0; off < bytes; off += piece) {
        size_t len = bytes - off < piece ? bytes - off : piece;
        MPI_TRY(d, "MPI_Bcast", MPI_Bcast((char *)buf + off, (int)len, MPI_BYTE, root, COMM(d)));
    }
    return STRIX_OK;
}

strix_status dist_mpi_max(strix_dist *d, int64_t *v) {
    MPI_TRY(d, "MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_INT64_T, MPI_MAX, COMM(d)));
    return STRIX_OK;
}

strix_status dist_mpi_allgather_floats(strix_dist *d, const float *mine, size_t n, float *all) {
    if (n > INT_MAX) return strix_error(STRIX_ERR_ARG, "dist all-gather: %zu floats", n);
    MPI_TRY(d, "MPI_Allgather",
            MPI_Allgather(mine, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, COMM(d)));
    return STRIX_OK;
}

strix_status dist_mpi_alltoall_chunks(strix_dist *d, const float *shards, int local, size_t n,
                                      float *recv) {
    int N = d->size;
    size_t mine = strix_dist_chunk_len(n, d->rank, N);
    if (n > INT_MAX || (size_t)local * (n / (size_t)N + 1) > INT_MAX)
        return strix_error(STRIX_ERR_ARG, "dist sum: %d shards of %zu floats exceed one MPI "
                           "exchange", N * local, n);
    MPI_Datatype *chunk = malloc((size_t)N * sizeof *chunk);
    MPI_Request *req = malloc(2 * (size_t)N * sizeof *req);
    if (!chunk || !req) {
        free(chunk);
        free(req);
        return strix_error(STRIX_ERR_ALLOC, "dist sum: out of memory");
    }
    // to rank q its chunk of each of my shards (one strided type: `local` blocks, stride n,
    // nothing packed); from rank q my chunk of its shards, stored in shard order
    int made = 0, rc = MPI_SUCCESS;
    for (int q = 0; q < N && rc == MPI_SUCCESS; q++) {
        size_t len = strix_dist_chunk_len(n, q, N);
        rc = MPI_Type_vector(local, (int)len, (int)n, MPI_FLOAT, &chunk[q]);
        if (rc == MPI_SUCCESS && (rc = MPI_Type_commit(&chunk[q])) == MPI_SUCCESS) made = q + 1;
    }
    for (int q = 0; q < N && rc == MPI_SUCCESS; q++)
        rc = MPI_Irecv(recv + (size_t)q * (size_t)local * mine, local * (int)mine, MPI_FLOAT, q,
                       0, COMM(d), &req[q]);
    for (int q = 0; q < N && rc == MPI_SUCCESS; q++)
        rc = MPI_Isend(shards + strix_dist_chunk_lo(n, q, N), 1, chunk[q], q, 0, COMM(d),
                       &req[N + q]);
    if (rc == MPI_SUCCESS) rc = MPI_Waitall(2 * N, req, MPI_STATUSES_IGNORE);
    for (int q = 0; q < made; q++) MPI_Type_free(&chunk[q]);
    free(chunk);
    free(req);
    return rc == MPI_SUCCESS ? STRIX_OK : mpi_fail(d, "the gradient exchange", rc);
}

strix_status dist_mpi_allgather_chunks(strix_dist *d, const float *chunk, size_t n,
                                       float *out) {
    int N = d->size;
    if (n > INT_MAX) return strix_error(STRIX_ERR_ARG, "dist sum: %zu floats", n);
    int *count = malloc(2 * (size_t)N * sizeof *count);
    if (!count) return strix_error(STRIX_ERR_ALLOC, "dist sum: out of memory");
    int *displ = count + N;
    for (int q = 0; q < N; q++) {
        displ[q] = (int)strix_dist_chunk_lo(n, q, N);
        count[q] = (int)strix_dist_chunk_len(n, q, N);
    }
    int rc = MPI_Allgatherv(chunk, count[d->rank], MPI_FLOAT, out, count, displ, MPI_FLOAT,
                            COMM(d));
    free(count);
    return rc == MPI_SUCCESS ? STRIX_OK : mpi_fail(d, "the gradient all-gather", rc);
}

#else // no MPI in this build: strix_dist_open never calls these

bool strix_dist_has_mpi(void) { return false; }

static strix_status no_mpi(void) {
    return strix_error(STRIX_ERR_UNSUPPORTED, "dist: this strix was built without MPI");
}
strix_status dist_mpi_open(strix_dist *d) { (void)d; return no_mpi(); }
void dist_mpi_close(strix_dist *d) { (void)d; }
void dist_mpi_abort(strix_dist *d, int code) { (void)d, (void)code; }
strix_status dist_mpi_barrier(strix_dist *d) { (void)d; return no_mpi(); }
strix_status dist_mpi_broadcast(strix_dist *d, void *buf, size_t bytes, int root) {
    (void)d, (void)buf, (void)bytes, (void)root;
    return no_mpi();
}
strix_status dist_mpi_max(strix_dist *d, int64_t *v) { (void)d, (void)v; return no_mpi(); }
strix_status dist_mpi_allgather_floats(strix_dist *d, const float *mine, size_t n, float *all) {
    (void)d, (void)mine, (void)n, (void)all;
    return no_mpi();
}
strix_status dist_mpi_alltoall_chunks(strix_dist *d, const float *shards, int local, size_t n,
                                      float *recv) {
    (void)d, (void)shards, (void)local, (void)n, (void)recv;
    return no_mpi();
}
strix_status dist_mpi_allgather_chunks(strix_dist *d, const float *chunk, size_t n,
                                       float *out) {
    (void)d, (void)chunk, (void)n, (void)out;
    return no_mpi();
}
#endif
