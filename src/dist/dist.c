/*
 * dist.c - the communicator of strix/dist.h: the launcher's environment, the world of one, the
 * fixed tree of the gradient sum (on the host, or with strix_add in a backend's memory), the
 * choice of where the sum runs, the scratch buffers. Every MPI call is mpi.c's; a GPU plugin's
 * collectives (NCCL) are reached through core/plugin.h.
 */
#include <stdlib.h>
#include <string.h>

#include "core/backend_impl.h"
#include "dist/dist_internal.h"
#include "strix/backend.h"

/* The first of `names` set in the environment to an integer >= low; `low - 1` when none is. */
static int env_count(const char *const *names, int count, int low) {
    for (int i = 0; i < count; i++) {
        const char *v = getenv(names[i]);
        if (!v || !*v) continue;
        char *end;
        long n = strtol(v, &end, 10);
        if (*end == '\0' && n >= low && n < (1 << 24)) return (int)n;
    }
    return low - 1;
}

int strix_dist_launched_size(void) {
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"};
    return env_count(names, 3, 1);
}

int strix_dist_local_size(void) {
    static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"};
    int n = env_count(names, 2, 1);
    return n > 0 ? n : 1;
}

int strix_dist_local_rank(void) {
    static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"};
    int n = env_count(names, 2, 0);
    return n >= 0 ? n : 0;
}

strix_status strix_dist_open_solo(strix_dist **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return strix_error(STRIX_ERR_ALLOC, "dist: out of memory");
    (*out)->size = 1;
    return STRIX_OK;
}

strix_status strix_dist_open(strix_dist **out) {
    *out = NULL;
    int launched = strix_dist_launched_size();
    if (launched == 0) return strix_dist_open_solo(out);
    if (!strix_dist_has_mpi()) {
        if (launched == 1) return strix_dist_open_solo(out);
        return strix_error(STRIX_ERR_UNSUPPORTED, "started by an MPI launcher as one of %d "
                           "processes, but this strix was built without MPI (each process would "
                           "train alone and write the same files); rebuild with OpenMPI "
                           "(apt-get install libopenmpi-dev openmpi-bin)", launched);
    }
    strix_dist *d;
    STRIX_TRY(strix_dist_open_solo(&d));
    strix_status s = dist_mpi_open(d);
    if (s != STRIX_OK) {
        free(d);
        return s;
    }
    *out = d;
    return STRIX_OK;
}

void strix_dist_close(strix_dist *d) {
    if (!d) return;
    strix_dist_use_device(d, NULL); /* releases the device path */
    if (d->mpi) dist_mpi_close(d);
    free(d->scratch);
    free(d->recv);
    free(d);
}

void strix_dist_abort(strix_dist *d, int code) {
    if (d && d->comm && d->size > 1) dist_mpi_abort(d, code);
}

int strix_dist_rank(const strix_dist *d) { return d ? d->rank : 0; }
int strix_dist_size(const strix_dist *d) { return d ? d->size : 1; }

strix_status strix_dist_barrier(strix_dist *d) {
    return d && d->comm ? dist_mpi_barrier(d) : STRIX_OK;
}

strix_status strix_dist_broadcast(strix_dist *d, void *buf, size_t bytes, int root) {
    if (root < 0 || root >= strix_dist_size(d))
        return strix_error(STRIX_ERR_ARG, "dist broadcast: root %d of %d ranks", root,
                           strix_dist_size(d));
    return d && d->comm ? dist_mpi_broadcast(d, buf, bytes, root) : STRIX_OK;
}

strix_status strix_dist_max(strix_dist *d, int64_t *v) {
    return d && d->comm ? dist_mpi_max(d, v) : STRIX_OK;
}

strix_status strix_dist_allgather_floats(strix_dist *d, const float *mine, size_t n, float *all) {
    if (d && d->comm) return dist_mpi_allgather_floats(d, mine, n, all);
    if (all != mine) memmove(all, mine, n * sizeof *all);
    return STRIX_OK;
}

// ---- the fixed tree ----------------------------------------------------------------------------

/* x[lo] = sum(lo, hi) of the tree in strix/dist.h; rows lo+1..hi-1 are overwritten. */
static void tree_range(float *x, int lo, int hi, size_t n) {
    if (hi - lo < 2) return;
    int mid = lo + (hi - lo) / 2;
    tree_range(x, lo, mid, n);
    tree_range(x, mid, hi, n);
    float *a = x + (size_t)lo * n;
    const float *b = x + (size_t)mid * n;
    for (size_t i = 0; i < n; i++) a[i] += b[i];
}

void strix_dist_tree(float *x, int count, size_t n) {
    STRIX_ASSERT(count >= 1, "dist tree: %d rows", count);
    tree_range(x, 0, count, n);
}

/* *buf holds at least `bytes` of host memory (grown, contents not kept). */
static strix_status host_grow(float **buf, size_t *have, size_t bytes) {
    if (bytes <= *have) return STRIX_OK;
    free(*buf);
    *buf = malloc(bytes ? bytes : 1);
    *have = *buf ? bytes : 0;
    return *buf ? STRIX_OK : strix_error(STRIX_ERR_ALLOC, "dist: out of memory for %zu bytes",
                                         bytes);
}

strix_status strix_dist_sum_shards(strix_dist *d, float *shards, int local, size_t n,
                                   float *out) {
    if (local < 1) return strix_error(STRIX_ERR_ARG, "dist sum: %d local shards", local);
    if (!d || !d->comm || d->size == 1) {
        strix_dist_tree(shards, local, n);
        memcpy(out, shards, n * sizeof *out);
        return STRIX_OK;
    }
    int N = d->size, S = N * local;
    size_t mine = strix_dist_chunk_len(n, d->rank, N);
    STRIX_TRY(host_grow(&d->recv, &d->recv_bytes, (size_t)S * mine * sizeof(float)));
    STRIX_TRY(dist_mpi_alltoall_chunks(d, shards, local, n, d->recv));
    strix_dist_tree(d->recv, S, mine); // my chunk of every shard, in shard order
    return dist_mpi_allgather_chunks(d, d->recv, n, out);
}

// ---- the sum in a backend's own memory -----------------------------------------------------------

/* Frees what the device path holds in dev_be's memory and closes the collectives. */
static void release_device(strix_dist *d) {
    if (d->coll && d->coll_comm) d->coll->close(d->coll_comm);
    if (d->dev_be) {
        strix_free(d->dev_be, d->dev_recv);
        strix_free(d->dev_be, d->dev_scratch);
    }
    d->coll = NULL;
    d->coll_comm = NULL;
    d->dev_recv = d->dev_scratch = NULL;
    d->dev_recv_bytes = d->dev_scratch_bytes = 0;
    d->dev_be = NULL;
    d->dev_ok = false;
}

/* Opens the plugin collectives `c` on every rank (rank 0's id broadcast); false, everything
 * closed again, when any rank cannot. */
static bool open_collectives(strix_dist *d, strix_backend *be, const strix_plugin_collectives *c) {
    unsigned char id[1024];
    int64_t bad = c == NULL || c->id_bytes > sizeof id;
    if (strix_dist_max(d, &bad) != STRIX_OK || bad) return false;
    bad = d->rank == 0 && c->make_id(id) != STRIX_OK;
    if (strix_dist_max(d, &bad) != STRIX_OK || bad) return false;
    if (strix_dist_broadcast(d, id, c->id_bytes, 0) != STRIX_OK) return false;
    void *comm = NULL;
    bad = c->open(be, id, d->rank, d->size, &comm) != STRIX_OK;
    if (strix_dist_max(d, &bad) != STRIX_OK || bad) {
        if (comm) c->close(comm);
        return false;
    }
    d->coll = c;
    d->coll_comm = comm;
    return true;
}

bool strix_dist_use_device(strix_dist *d, strix_backend *be) {
    STRIX_ASSERT(d, "dist use_device: no communicator");
    if (be && d->dev_be == be) return d->dev_ok;
    release_device(d);
    if (!be) return false;
    d->dev_be = be;
    // host memory, or one rank: the backend's own adds, MPI (if any) on its buffers
    d->dev_ok = be->device == STRIX_DEVICE_CPU || !d->comm || d->size == 1 ||
                open_collectives(d, be, strix_backend_collectives(be));
    return d->dev_ok;
}

/* x[lo] = sum(lo, hi) of strix_dist_tree's tree, added by `be` in its memory. */
static strix_status tree_on(strix_backend *be, float *x, int lo, int hi, size_t n) {
    if (hi - lo < 2) return STRIX_OK;
    int mid = lo + (hi - lo) / 2;
    STRIX_TRY(tree_on(be, x, lo, mid, n));
    STRIX_TRY(tree_on(be, x, mid, hi, n));
    float *a = x + (size_t)lo * n;
    return strix_add(be, a, x + (size_t)mid * n, a, n);
}

strix_status strix_dist_sum_shards_on(strix_dist *d, strix_backend *be, float *shards, int local,
                                      size_t n, float *out) {
    STRIX_ASSERT(d && be && d->dev_be == be && d->dev_ok,
                 "dist sum_shards_on: strix_dist_use_device did not choose this backend");
    if (local < 1) return strix_error(STRIX_ERR_ARG, "dist sum: %d local shards", local);
    size_t bytes = n * sizeof(float);
    if (!d->comm || d->size == 1) {
        STRIX_TRY(tree_on(be, shards, 0, local, n));
        return strix_copy(be, out, shards, bytes, STRIX_COPY_D2D);
    }
    int N = d->size, S = N * local;
    size_t mine = strix_dist_chunk_len(n, d->rank, N);
    size_t need = (size_t)S * mine * sizeof(float);
    if (need > d->dev_recv_bytes) {
        strix_free(be, d->dev_recv);
        d->dev_recv = NULL;
        d->dev_recv_bytes = 0;
        STRIX_TRY(strix_alloc(be, need ? need : 1, (void **)&d->dev_recv));
        d->dev_recv_bytes = need;
    }
    if (d->coll) STRIX_TRY(d->coll->alltoall_chunks(d->coll_comm, be, shards, local, n,
                                                    d->dev_recv));
    else STRIX_TRY(dist_mpi_alltoall_chunks(d, shards, local, n, d->dev_recv));
    STRIX_TRY(tree_on(be, d->dev_recv, 0, S, mine)); // my chunk of every shard, in shard order
    if (d->coll) return d->coll->allgather_chunks(d->coll_comm, be, d->dev_recv, n, out);
    return dist_mpi_allgather_chunks(d, d->dev_recv, n, out);
}

void *strix_dist_scratch_on(strix_dist *d, strix_backend *be, size_t bytes) {
    STRIX_ASSERT(d && be && d->dev_be == be, "dist scratch_on: strix_dist_use_device first");
    if (bytes <= d->dev_scratch_bytes) return d->dev_scratch;
    strix_free(be, d->dev_scratch);
    d->dev_scratch = NULL;
    d->dev_scratch_bytes = 0;
    if (strix_alloc(be, bytes ? bytes : 1, (void **)&d->dev_scratch) != STRIX_OK) return NULL;
    d->dev_scratch_bytes = bytes;
    return d->dev_scratch;
}

void *strix_dist_scratch(strix_dist *d, size_t bytes) {
    STRIX_ASSERT(d, "dist scratch: no communicator");
    if (bytes <= d->scratch_bytes) return d->scratch;
    free(d->scratch);
    d->scratch = malloc(bytes);
    d->scratch_bytes = d->scratch ? bytes : 0;
    if (!d->scratch)
        strix_error(STRIX_ERR_ALLOC, "dist: out of memory for %zu bytes of gradient shards", bytes);
    return d->scratch;
}
