/*
 * nccl.cu - the CUDA plugin's collectives (core/plugin.h) on NCCL, for data-parallel training
 * whose gradients stay on the GPUs: the all-to-all of shard chunks and the all-gather of the
 * summed chunks as grouped point-to-point sends and receives on the backend's stream (chunks of
 * unequal length, which ncclAllGather cannot carry), finished before return. The fixed tree that
 * adds the shards is src/dist's, the same for every transport. Built only into the CUDA plugin
 * when CMake finds NCCL (STRIX_HAVE_NCCL); the HIP plugin has no collectives.
 */
#if defined(STRIX_HAVE_NCCL) && !defined(STRIX_HIP_BUILD)
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_internal.h"
#include "core/plugin.h"

typedef struct nccl_comm {
    ncclComm_t comm;
    int rank, size;
} nccl_comm;

static strix_status nccl_check(ncclResult_t r, const char *call) {
    if (r == ncclSuccess) return STRIX_OK;
    return strix_error(STRIX_ERR_DEVICE, "%s failed: %s", call, ncclGetErrorString(r));
}
#define NCCL_TRY(call)                                                                         \
    do {                                                                                       \
        strix_status nccl_try_s_ = nccl_check((call), #call);                                 \
        if (nccl_try_s_ != STRIX_OK) return nccl_try_s_;                                       \
    } while (0)

static strix_status nccl_make_id(void *id) {
    NCCL_TRY(ncclGetUniqueId((ncclUniqueId *)id));
    return STRIX_OK;
}

static strix_status nccl_open(strix_backend *be, const void *id, int rank, int size,
                              void **out) {
    *out = NULL;
    (void)cuda_stream(be); // makes the backend's device current for the communicator
    nccl_comm *c = (nccl_comm *)calloc(1, sizeof *c);
    if (!c) return strix_error(STRIX_ERR_ALLOC, "nccl: out of memory");
    ncclUniqueId uid;
    memcpy(&uid, id, sizeof uid);
    strix_status s = nccl_check(ncclCommInitRank(&c->comm, size, uid, rank), "ncclCommInitRank");
    if (s != STRIX_OK) {
        free(c);
        return s;
    }
    c->rank = rank;
    c->size = size;
    *out = c;
    return STRIX_OK;
}

/* Ends a group of sends and receives opened by ncclGroupStart (always, so the communicator is
 * never left inside a group) and waits for it; the first error of the group's calls `r` wins. */
static strix_status end_group(ncclResult_t r, cudaStream_t st) {
    ncclResult_t end = ncclGroupEnd();
    STRIX_TRY(nccl_check(r, "ncclSend/ncclRecv"));
    STRIX_TRY(nccl_check(end, "ncclGroupEnd"));
    CUDA_TRY(cudaStreamSynchronize(st));
    return STRIX_OK;
}

static strix_status nccl_alltoall_chunks(void *comm, strix_backend *be, const float *shards,
                                         int local, size_t n, float *recv) {
    nccl_comm *c = (nccl_comm *)comm;
    cudaStream_t st = cuda_stream(be);
    size_t mine = strix_dist_chunk_len(n, c->rank, c->size);
    NCCL_TRY(ncclGroupStart());
    ncclResult_t r = ncclSuccess;
    for (int q = 0; q < c->size; q++) {
        size_t lo = strix_dist_chunk_lo(n, q, c->size), len = strix_dist_chunk_len(n, q, c->size);
        for (int l = 0; l < local && r == ncclSuccess; l++) { // matched in order per pair
            r = ncclSend(shards + (size_t)l * n + lo, len, ncclFloat, q, c->comm, st);
            if (r == ncclSuccess)
                r = ncclRecv(recv + ((size_t)q * (size_t)local + (size_t)l) * mine, mine,
                             ncclFloat, q, c->comm, st);
        }
    }
    return end_group(r, st);
}

static strix_status nccl_allgather_chunks(void *comm, strix_backend *be, const float *chunk,
                                          size_t n, float *out) {
    nccl_comm *c = (nccl_comm *)comm;
    cudaStream_t st = cuda_stream(be);
    NCCL_TRY(ncclGroupStart());
    ncclResult_t r = ncclSuccess;
    for (int q = 0; q < c->size && r == ncclSuccess; q++) {
        r = ncclSend(chunk, strix_dist_chunk_len(n, c->rank, c->size), ncclFloat, q, c->comm, st);
        if (r == ncclSuccess)
            r = ncclRecv(out + strix_dist_chunk_lo(n, q, c->size),
                         strix_dist_chunk_len(n, q, c->size), ncclFloat, q, c->comm, st);
    }
    return end_group(r, st);
}

static void nccl_close(void *comm) {
    nccl_comm *c = (nccl_comm *)comm;
    if (!c) return;
    ncclCommDestroy(c->comm);
    free(c);
}

extern "C" const strix_plugin_collectives strix_cuda_nccl = {
    "nccl",
    (uint32_t)sizeof(ncclUniqueId),
    nccl_make_id,
    nccl_open,
    nccl_alltoall_chunks,
    nccl_allgather_chunks,
    nccl_close,
};
#endif
