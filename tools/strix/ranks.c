/*
 * ranks.c - the quiet ranks of a data-parallel `strix train` (ranks.h).
 */
#define _XOPEN_SOURCE 700

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ranks.h"

int ranks_open(ranks *k) {
    memset(k, 0, sizeof *k);
    strix_status s = strix_dist_open(&k->dist);
    if (s != STRIX_OK) {
        fprintf(stderr, "strix: %s\n", strix_last_error());
        return 1;
    }
    k->rank = strix_dist_rank(k->dist);
    k->size = strix_dist_size(k->dist);
    if (k->rank == 0) return 0;
    int keep = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
    k->log = tmpfile();
    if (keep >= 0) k->err = fdopen(keep, "w");
    if (null >= 0) {
        fflush(stdout);
        dup2(null, STDOUT_FILENO);
        close(null);
    }
    if (k->log && k->err) {
        fflush(stderr);
        dup2(fileno(k->log), STDERR_FILENO);
    }
    return 0;
}

/* Ranks > 0: what stderr collected, each line as "strix: rank R: <line>" on the real stderr. */
static void show_lines(ranks *k) {
    if (!k->log || !k->err) return;
    fflush(stderr);
    rewind(k->log);
    char line[4096];
    while (fgets(line, sizeof line, k->log)) {
        const char *text = strncmp(line, "strix: ", 7) == 0 ? line + 7 : line;
        fprintf(k->err, "strix: rank %d: %s%s", k->rank, text,
                strchr(text, '\n') ? "" : "\n");
    }
    fflush(k->err);
}

int ranks_agree(ranks *k, int rc) {
    if (k->size == 1) return rc;
    int64_t worst = rc > 0 ? rc : 0, root = rc;
    if (strix_dist_max(k->dist, &worst) != STRIX_OK ||
        strix_dist_broadcast(k->dist, &root, sizeof root, 0) != STRIX_OK) {
        fprintf(stderr, "strix: %s\n", strix_last_error());
        return ranks_fail_alone(k, 1);
    }
    if (worst == 0) return rc;
    if (rc > 0 && root <= 0) show_lines(k); /* rank 0 did not fail: say why this one did */
    return (int)worst;
}

int ranks_same(ranks *k, uint64_t value, const char *what) {
    if (k->size == 1) return 0;
    int64_t v[2] = {(int64_t)value, (int64_t)~value}, differ;
    if (strix_dist_max(k->dist, &v[0]) != STRIX_OK || strix_dist_max(k->dist, &v[1]) != STRIX_OK)
        return ranks_fail_alone(k, 1);
    differ = v[0] != (int64_t)value || v[1] != (int64_t)~value;
    if (strix_dist_max(k->dist, &differ) != STRIX_OK) return ranks_fail_alone(k, 1);
    if (!differ) return 0;
    if (k->rank == 0)
        fprintf(stderr, "strix train: the %d processes were started with different %s; every "
                        "process needs the same command line and the same files\n", k->size,
                what);
    return 2;
}

int ranks_fail_alone(ranks *k, int code) {
    if (k->rank > 0) show_lines(k);
    fflush(stdout);
    fflush(stderr);
    strix_dist_abort(k->dist, code);
    return code;
}

void ranks_close(ranks *k) {
    strix_dist_close(k->dist);
    if (k->log) fclose(k->log);
    if (k->err) fclose(k->err);
    memset(k, 0, sizeof *k);
}
