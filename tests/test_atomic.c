/*
 * test_atomic.c - the atomic writer of strix/safetensors.h (src/io/atomic.c): writing through
 * symbolic links (absolute, relative, chains, dangling; the link stays a link, the temp file lies
 * in the target's directory), link loops refused, a file name of 255 bytes (NAME_MAX) written
 * with a temp name that fits, the removal of stale temp files (ended processes and this one; live
 * processes, other outputs and non-files kept), and error lines that name the OS reason.
 *
 * Checkpoint-level atomic saving (the old file survives a failed save) is in test_checkpoint.c.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "strix/safetensors.h"
#include "testlib.h"

static const char *in_tmp(const char *name) { return tl_tmp_path(name); }

static int setup(void **state) {
    (void)state;
    snprintf(tl_tmp_dir(), 64, "/tmp/strix_test_atomic_XXXXXX");
    return mkdtemp(tl_tmp_dir()) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return tl_tmp_remove() ? 0 : -1;
}

/* Writes the string s to path atomically. */
static strix_status write_text(const char *path, const char *s) {
    const void *chunks[1] = {s};
    size_t sizes[1] = {strlen(s)};
    return strix_write_file_atomic(path, chunks, sizes, 1);
}

/* The whole file at path as a string (freed by the caller), or NULL. */
static char *read_text(const char *path) {
    size_t n;
    unsigned char *b = tl_read_file(path, &n);
    if (!b) return NULL;
    char *s = malloc(n + 1);
    memcpy(s, b, n);
    s[n] = '\0';
    free(b);
    return s;
}

/* Number of entries of dir whose name starts with ".strix-tmp-". */
static int temps_in(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -c '^\\.strix-tmp-'", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1) n = -1;
    if (p) pclose(p);
    return n;
}

static void assert_text(const char *path, const char *want) {
    char *got = read_text(path);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void assert_link(const char *path, const char *to) {
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    char buf[512];
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, to);
}

static void test_write_through_links(void **state) {
    (void)state;
    assert_int_equal(mkdir(in_tmp("real"), 0755), 0);
    assert_int_equal(mkdir(in_tmp("links"), 0755), 0);
    /* absolute link: the target is written, the link stays */
    char abs_target[512];
    snprintf(abs_target, sizeof abs_target, "%s", in_tmp("real/a.txt"));
    assert_int_equal(symlink(abs_target, in_tmp("links/abs")), 0);
    assert_int_equal(write_text(in_tmp("links/abs"), "one"), STRIX_OK);
    assert_link(in_tmp("links/abs"), abs_target);
    assert_text(abs_target, "one");
    /* a chain of relative links, resolved from each link's own directory */
    assert_int_equal(symlink("../real/b.txt", in_tmp("links/rel")), 0);
    assert_int_equal(symlink("rel", in_tmp("links/chain")), 0);
    char target[512];
    assert_int_equal(strix_atomic_target_path(in_tmp("links/chain"), target, sizeof target),
                     STRIX_OK);
    char want[512];
    snprintf(want, sizeof want, "%s/links/../real/b.txt", tl_tmp_dir());
    assert_string_equal(target, want);
    char tmp[600];
    strix_atomic_temp_path(in_tmp("links/chain"), tmp, sizeof tmp);
    char tmp_dir[512];
    snprintf(tmp_dir, sizeof tmp_dir, "%s/links/../real/.strix-tmp-", tl_tmp_dir());
    assert_memory_equal(tmp, tmp_dir, strlen(tmp_dir)); /* beside the target, not the link */
    /* dangling: the target is created; replacing it again keeps every link */
    assert_int_equal(write_text(in_tmp("links/chain"), "two"), STRIX_OK);
    assert_int_equal(write_text(in_tmp("links/chain"), "three"), STRIX_OK);
    assert_link(in_tmp("links/chain"), "rel");
    assert_link(in_tmp("links/rel"), "../real/b.txt");
    assert_text(in_tmp("real/b.txt"), "three");
    assert_int_equal(temps_in(in_tmp("real")), 0);
    assert_int_equal(temps_in(in_tmp("links")), 0);
    /* a plain file or a new name is its own target */
    assert_int_equal(strix_atomic_target_path(in_tmp("real/new"), target, sizeof target),
                     STRIX_OK);
    assert_string_equal(target, in_tmp("real/new"));
}

static void test_link_loop(void **state) {
    (void)state;
    assert_int_equal(symlink("loop_b", in_tmp("loop_a")), 0);
    assert_int_equal(symlink("loop_a", in_tmp("loop_b")), 0);
    assert_int_equal(write_text(in_tmp("loop_a"), "x"), STRIX_ERR_IO);
    assert_non_null(strstr(strix_last_error(), "Too many levels of symbolic links"));
    assert_int_equal(temps_in(tl_tmp_dir()), 0);
}

static void test_name_max(void **state) {
    (void)state;
    char name[256];
    memset(name, 'n', 255);
    memcpy(name + 255 - 4, ".bin", 5); /* 255 bytes and the NUL */
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tl_tmp_dir(), name);
    char tmp[600];
    strix_atomic_temp_path(path, tmp, sizeof tmp);
    const char *base = strrchr(tmp, '/') + 1;
    assert_true(strlen(base) <= 38);
    assert_int_equal(write_text(path, "long"), STRIX_OK);
    assert_text(path, "long");
    assert_int_equal(temps_in(tl_tmp_dir()), 0);
}

/* A pid that no process has: a child that has exited and been waited for. */
static long dead_pid(void) {
    pid_t child = fork();
    if (child == 0) _exit(0);
    assert_true(child > 0);
    assert_int_equal(waitpid(child, NULL, 0), child);
    return (long)child;
}

static void make_file(const char *path) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("partial", f);
    assert_int_equal(fclose(f), 0);
}

static void test_remove_stale(void **state) {
    (void)state;
    assert_int_equal(mkdir(in_tmp("stale"), 0755), 0);
    char out[512], dir[512];
    snprintf(out, sizeof out, "%s", in_tmp("stale/model.st"));
    snprintf(dir, sizeof dir, "%s", in_tmp("stale"));
    char mine[600], other[600];
    strix_atomic_temp_path(out, mine, sizeof mine);
    strix_atomic_temp_path(in_tmp("stale/other.st"), other, sizeof other);
    const char *hash = strrchr(mine, '-'), *other_hash = strrchr(other, '-');
    long dead = dead_pid();
    char p[8][700];
    snprintf(p[0], sizeof p[0], "%s/.strix-tmp-%ld%s", dir, dead, hash);
    snprintf(p[1], sizeof p[1], "%s", mine);                              /* this process */
    snprintf(p[2], sizeof p[2], "%s/model.st.tmp.%ld", dir, dead); /* old form */
    snprintf(p[3], sizeof p[3], "%s/.strix-tmp-%ld%s", dir, (long)getppid(), hash);
    snprintf(p[4], sizeof p[4], "%s/.strix-tmp-%ld%s", dir, dead, other_hash);
    snprintf(p[5], sizeof p[5], "%s/model.st.tmp.%ldx", dir, dead); /* not a pid */
    snprintf(p[6], sizeof p[6], "%s/.strix-tmp-%ld%s", dir, dead + 1000000, hash);
    for (int i = 0; i < 6; i++) make_file(p[i]);
    assert_int_equal(mkdir(p[6], 0755), 0); /* not a regular file: kept */
    assert_int_equal(strix_atomic_remove_stale(out), 3);
    struct stat st;
    for (int i = 0; i < 3; i++) assert_int_not_equal(stat(p[i], &st), 0);
    for (int i = 3; i < 7; i++) assert_int_equal(stat(p[i], &st), 0);
    assert_int_equal(strix_atomic_remove_stale(out), 0);
    /* through a link, the target's directory is cleaned */
    make_file(p[0]);
    assert_int_equal(symlink("stale/model.st", in_tmp("to_model")), 0);
    assert_int_equal(strix_atomic_remove_stale(in_tmp("to_model")), 1);
    assert_int_equal(stat(p[0], &st), -1);
    assert_int_equal(strix_atomic_remove_stale(in_tmp("no/such/dir/x")), 0);
}

static void test_errors_name_the_reason(void **state) {
    (void)state;
    assert_int_equal(write_text(in_tmp("no/such/x.svg"), "x"), STRIX_ERR_IO);
    assert_non_null(strstr(strix_last_error(), "No such file or directory"));
    make_file(in_tmp("plain"));
    assert_int_equal(write_text(in_tmp("plain/x.svg"), "x"), STRIX_ERR_IO);
    assert_non_null(strstr(strix_last_error(), "Not a directory"));
    /* a node that is not a regular file is never replaced (rename would replace a device, as
     * root even /dev/null): a FIFO here, and a link to it */
    assert_int_equal(mkfifo(in_tmp("fifo"), 0644), 0);
    assert_int_equal(symlink("fifo", in_tmp("to_fifo")), 0);
    assert_int_equal(write_text(in_tmp("fifo"), "x"), STRIX_ERR_IO);
    assert_non_null(strstr(strix_last_error(), "not a regular file"));
    assert_int_equal(write_text(in_tmp("to_fifo"), "x"), STRIX_ERR_IO);
    struct stat st;
    assert_int_equal(lstat(in_tmp("fifo"), &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(temps_in(tl_tmp_dir()), 0);
    assert_int_equal(write_text("", "x"), STRIX_ERR_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_through_links),
        cmocka_unit_test(test_link_loop),
        cmocka_unit_test(test_name_max),
        cmocka_unit_test(test_remove_stale),
        cmocka_unit_test(test_errors_name_the_reason),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
