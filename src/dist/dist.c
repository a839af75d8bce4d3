/*
 * dist.c - the communicator of strix/dist.h: the launcher's environment, the world of one, the
 * fixed tree of the gradient sum, the scratch buffer; every call that leaves the process goes to
 * mpi.c.
 */
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"

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

strix_status strix_dist_sum_shards(strix_dist *d, float *shards, int local, size_t n,
                                   float *out) {
    if (local < 1) return strix_error(STRIX_ERR_ARG, "dist sum: %d local shards", local);
    if (d && d->comm && d->size > 1) return dist_mpi_sum_shards(d, shards, local, n, out);
    strix_dist_tree(shards, local, n);
    memcpy(out, shards, n * sizeof *out);
    return STRIX_OK;
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
