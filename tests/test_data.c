/*
 * test_data.c - the byte-level corpus (strix/data.h): vocabulary, encode/decode, loading files and
 * directories, the split, random and sequential batches, and every error status.
 *
 * Does not test training on the data (tests/cli/learn.sh does).
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "strix/data.h"

static char tmp_dir[64];

static void write_file(const char *name, const void *bytes, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

static const char *in_tmp(const char *name) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    return path;
}

static int setup(void **state) {
    strcpy(tmp_dir, "/tmp/strix_test_data_XXXXXX");
    return mkdtemp(tmp_dir) ? 0 : -1;
}

static int teardown(void **state) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    return system(cmd) == 0 ? 0 : -1;
}

// ---- vocabulary --------------------------------------------------------------------------------

static void test_vocab_sorted_unique_bytes(void **state) {
    const char *text = "hello world";
    strix_corpus c;
    assert_int_equal(strix_corpus_from_bytes((const unsigned char *)text, strlen(text), &c),
                     STRIX_OK);
    assert_int_equal(c.vocab.size, 8);
    assert_memory_equal(c.vocab.bytes, " dehlorw", 8);
    assert_int_equal(c.vocab.id_of['h'], 3);
    assert_int_equal(c.vocab.id_of['z'], -1);
    assert_int_equal(c.size, 11);
    /* ids are the encoded text */
    assert_int_equal(c.ids[0], 3);
    assert_int_equal(c.ids[5], 0);
    strix_corpus_free(&c);
    strix_corpus_free(&c); /* double free of a zeroed corpus is a no-op */
}

static void test_vocab_encode_decode_round_trip(void **state) {
    const unsigned char bytes[] = {'\n', ' ', 'a', 'b', 0xA9, 0xC3};
    strix_vocab v;
    assert_int_equal(strix_vocab_from_bytes(bytes, 6, &v), STRIX_OK);
    const unsigned char text[] = {'a', 0xC3, 0xA9, ' ', 'b', '\n'};
    int32_t ids[6];
    assert_int_equal(strix_vocab_encode(&v, text, 6, ids), STRIX_OK);
    int32_t expect[6] = {2, 5, 4, 1, 3, 0};
    assert_memory_equal(ids, expect, sizeof expect);
    unsigned char back[6];
    assert_int_equal(strix_vocab_decode(&v, ids, 6, back), STRIX_OK);
    assert_memory_equal(back, text, 6);
}

static void test_vocab_errors(void **state) {
    const unsigned char unsorted[] = {'b', 'a'};
    strix_vocab v;
    assert_int_equal(strix_vocab_from_bytes(unsorted, 2, &v), STRIX_ERR_FORMAT);
    const unsigned char dup[] = {'a', 'a'};
    assert_int_equal(strix_vocab_from_bytes(dup, 2, &v), STRIX_ERR_FORMAT);
    assert_int_equal(strix_vocab_from_bytes(dup, 0, &v), STRIX_ERR_FORMAT);

    const unsigned char ab[] = {'a', 'b'};
    assert_int_equal(strix_vocab_from_bytes(ab, 2, &v), STRIX_OK);
    int32_t ids[3];
    assert_int_equal(strix_vocab_encode(&v, (const unsigned char *)"abz", 3, ids), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "'z'"));
    assert_non_null(strstr(strix_last_error(), "offset 2"));
    int32_t bad[2] = {1, 2};
    unsigned char out[2];
    assert_int_equal(strix_vocab_decode(&v, bad, 2, out), STRIX_ERR_ARG);
    bad[1] = -1;
    assert_int_equal(strix_vocab_decode(&v, bad, 2, out), STRIX_ERR_ARG);
}

// ---- loading -----------------------------------------------------------------------------------

static void test_load_file(void **state) {
    write_file("one.txt", "abcabc\n", 7);
    strix_corpus c;
    assert_int_equal(strix_corpus_load(in_tmp("one.txt"), &c), STRIX_OK);
    assert_int_equal(c.size, 7);
    assert_int_equal(c.vocab.size, 4);
    assert_int_equal(c.n_files, 1);
    assert_true(c.hash == strix_fnv1a64(STRIX_FNV1A_INIT, "abcabc\n", 7));
    strix_corpus_free(&c);
}

static void test_load_directory_sorted_skipping_binary_links_hidden(void **state) {
    assert_int_equal(mkdir(in_tmp("dir"), 0755), 0);
    write_file("dir/b", "BBBB", 4);
    write_file("dir/a", "AAAA", 4);
    write_file("dir/a.dat", "\x00\x01\x02\x03", 4);  /* NUL: binary, skipped */
    write_file("dir/c", "\x01\x02\x03\x04x", 5);     /* 80% control bytes: skipped */
    write_file("dir/.hidden", "HHHH", 4);
    write_file("dir/empty", "", 0);
    char target[256], link[256];
    snprintf(target, sizeof target, "%s", "b");
    snprintf(link, sizeof link, "%s", in_tmp("dir/b.u8"));
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(mkdir(in_tmp("dir/sub"), 0755), 0);
    write_file("dir/sub/x", "XXXX", 4);

    strix_corpus c;
    assert_int_equal(strix_corpus_load(in_tmp("dir"), &c), STRIX_OK);
    assert_int_equal(c.size, 8);
    assert_int_equal(c.n_files, 2);
    assert_int_equal(c.n_skipped, 6);
    assert_int_equal(c.n_skipped_text, 3);  /* a.dat, c, empty */
    assert_int_equal(c.n_skipped_other, 3); /* .hidden, b.u8, sub */
    assert_int_equal(c.vocab.size, 2);
    unsigned char text[8];
    for (size_t i = 0; i < 8; i++) text[i] = c.vocab.bytes[c.ids[i]];
    assert_memory_equal(text, "AAAABBBB", 8);
    strix_corpus_free(&c);
}

static void test_load_errors(void **state) {
    strix_corpus c;
    assert_int_equal(strix_corpus_load(in_tmp("does-not-exist"), &c), STRIX_ERR_IO);
    assert_non_null(strstr(strix_last_error(), "does-not-exist"));
    assert_null(c.ids);

    write_file("empty.txt", "", 0);
    assert_int_equal(strix_corpus_load(in_tmp("empty.txt"), &c), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "is empty"));

    unsigned char binary[64];
    for (int i = 0; i < 64; i++) binary[i] = (unsigned char)(i * 7);
    write_file("blob.bin", binary, sizeof binary);
    assert_int_equal(strix_corpus_load(in_tmp("blob.bin"), &c), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "not a text file"));

    assert_int_equal(mkdir(in_tmp("notext"), 0755), 0);
    write_file("notext/x.dat", binary, sizeof binary);
    write_file("notext/y", "", 0);
    assert_int_equal(strix_corpus_load(in_tmp("notext"), &c), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "no text files"));
    assert_int_equal(mkdir(in_tmp("void"), 0755), 0);
    assert_int_equal(strix_corpus_load(in_tmp("void"), &c), STRIX_ERR_ARG);

    assert_int_equal(strix_corpus_from_bytes((const unsigned char *)"", 0, &c), STRIX_ERR_ARG);
}

static void test_load_refuses_devices_and_huge_files(void **state) {
    strix_corpus c;
    /* /dev/zero would never end: refused from its type before reading */
    assert_int_equal(strix_corpus_load("/dev/zero", &c), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "'/dev/zero' is not a regular file"));
    assert_null(c.ids);
    assert_int_equal(strix_corpus_load("/dev/urandom", &c), STRIX_ERR_ARG);
    assert_int_equal(mkfifo(in_tmp("fifo"), 0644), 0);
    assert_int_equal(strix_corpus_load(in_tmp("fifo"), &c), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "is not a regular file"));

    /* a sparse file just over the cap is refused from its size, before anything is read */
    char huge[256];
    snprintf(huge, sizeof huge, "%s", in_tmp("huge.txt"));
    FILE *f = fopen(huge, "wb");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(truncate(huge, (off_t)STRIX_CORPUS_MAX_BYTES + 1), 0);
    assert_int_equal(strix_corpus_load(huge, &c), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "(1073741825 bytes); the limit is 1 GiB"));
    assert_null(c.ids);

    /* in a directory, a FIFO, a link to a device and the huge file's link are skipped */
    assert_int_equal(mkdir(in_tmp("devdir"), 0755), 0);
    write_file("devdir/text", "hello there", 11);
    assert_int_equal(mkfifo(in_tmp("devdir/fifo"), 0644), 0);
    assert_int_equal(symlink("/dev/zero", in_tmp("devdir/zero")), 0);
    assert_int_equal(symlink(huge, in_tmp("devdir/huge")), 0);
    write_file("devdir/bin", "\0\0", 2);
    assert_int_equal(strix_corpus_load(in_tmp("devdir"), &c), STRIX_OK);
    assert_int_equal(c.size, 11);
    assert_int_equal(c.n_files, 1);
    assert_int_equal(c.n_skipped, 4);
    assert_int_equal(c.n_skipped_text, 1);
    assert_int_equal(c.n_skipped_other, 3);
    strix_corpus_free(&c);

    /* a directory whose text files together pass the cap is refused, naming the size */
    assert_int_equal(mkdir(in_tmp("bigdir"), 0755), 0);
    write_file("bigdir/a", "some text", 9);
    char big2[256];
    snprintf(big2, sizeof big2, "%s", in_tmp("bigdir/b"));
    f = fopen(big2, "wb");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(truncate(big2, (off_t)STRIX_CORPUS_MAX_BYTES - 4), 0);
    assert_int_equal(strix_corpus_load(in_tmp("bigdir"), &c), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "1073741829 bytes; the limit is 1 GiB"));
    assert_null(c.ids);
}

// ---- split -------------------------------------------------------------------------------------

static void test_split_sizes(void **state) {
    unsigned char text[1000];
    for (int i = 0; i < 1000; i++) text[i] = (unsigned char)('a' + i % 26);
    strix_corpus c;
    assert_int_equal(strix_corpus_from_bytes(text, 1000, &c), STRIX_OK);
    assert_int_equal(c.n_train, 900); /* default 0.1 */
    assert_int_equal(strix_corpus_split_size(&c, STRIX_SPLIT_VAL), 100);
    assert_int_equal(strix_corpus_split(&c, 0.25), STRIX_OK);
    assert_int_equal(strix_corpus_split_size(&c, STRIX_SPLIT_TRAIN), 750);
    assert_int_equal(strix_corpus_split_size(&c, STRIX_SPLIT_VAL), 250);
    assert_int_equal(strix_corpus_split(&c, 0.0), STRIX_ERR_ARG);
    assert_int_equal(strix_corpus_split(&c, 1.0), STRIX_ERR_ARG);
    assert_int_equal(strix_corpus_split(&c, -0.5), STRIX_ERR_ARG);
    assert_int_equal(c.n_train, 750); /* a refused split leaves the old one */

    /* block checks: val has 250 characters */
    assert_int_equal(strix_corpus_check_block(&c, 249), STRIX_OK);
    assert_int_equal(strix_corpus_check_block(&c, 250), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "validation split of 250 characters"));
    assert_non_null(strstr(strix_last_error(), "shorter than one block of T+1 = 251"));
    assert_int_equal(strix_corpus_check_block(&c, 1000), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "corpus of 1000 characters is shorter"));
    assert_int_equal(strix_corpus_check_block(&c, 0), STRIX_ERR_ARG);
    strix_corpus_free(&c);
}

static void test_split_tinyshakespeare_like_nanogpt(void **state) {
    strix_corpus c;
    if (strix_corpus_load("../shared/data/tinyshakespeare.txt", &c) != STRIX_OK) skip();
    assert_int_equal(c.size, 1115394);
    assert_int_equal(c.vocab.size, 65);
    assert_int_equal(c.n_train, 1003854); /* nanoGPT prepare.py: int(n * 0.9) */
    strix_corpus_free(&c);
}

// ---- batches -----------------------------------------------------------------------------------

/* A corpus whose train part is lowercase and validation part uppercase (200 + 100 characters). */
static void two_alphabet_corpus(strix_corpus *c) {
    unsigned char text[300];
    for (int i = 0; i < 300; i++)
        text[i] = (unsigned char)(i < 200 ? 'a' + i % 26 : 'A' + i % 26);
    assert_int_equal(strix_corpus_from_bytes(text, 300, c), STRIX_OK);
    assert_int_equal(strix_corpus_split(c, 1.0 / 3.0), STRIX_OK);
    assert_int_equal(c->n_train, 200);
}

static void test_random_batch_deterministic_and_shifted(void **state) {
    strix_corpus c;
    two_alphabet_corpus(&c);
    enum { B = 4, T = 8 };
    int32_t ids1[B * T], tg1[B * T], ids2[B * T], tg2[B * T];
    strix_rng r1, r2;
    strix_rng_seed(&r1, 1337);
    strix_rng_seed(&r2, 1337);
    assert_int_equal(strix_corpus_batch_random(&c, STRIX_SPLIT_TRAIN, &r1, B, T, ids1, tg1),
                     STRIX_OK);
    assert_int_equal(strix_corpus_batch_random(&c, STRIX_SPLIT_TRAIN, &r2, B, T, ids2, tg2),
                     STRIX_OK);
    assert_memory_equal(ids1, ids2, sizeof ids1);
    assert_memory_equal(tg1, tg2, sizeof tg1);
    /* exactly B draws */
    strix_rng r3;
    strix_rng_seed(&r3, 1337);
    for (int b = 0; b < B; b++) strix_rng_next(&r3);
    assert_true(r1.state == r3.state);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            unsigned char ch = c.vocab.bytes[ids1[b * T + t]];
            assert_true(ch >= 'a' && ch <= 'z');
            if (t + 1 < T) assert_int_equal(tg1[b * T + t], ids1[b * T + t + 1]);
            /* consecutive characters of the alphabet cycle */
            unsigned char next = c.vocab.bytes[tg1[b * T + t]];
            assert_int_equal(next, ch == 'z' ? 'a' : ch + 1);
        }
    /* another seed gives another batch */
    strix_rng_seed(&r2, 1338);
    assert_int_equal(strix_corpus_batch_random(&c, STRIX_SPLIT_TRAIN, &r2, B, T, ids2, tg2),
                     STRIX_OK);
    assert_memory_not_equal(ids1, ids2, sizeof ids1);
    /* validation batches only see validation text */
    strix_rng_seed(&r1, 7);
    for (int rep = 0; rep < 50; rep++) {
        assert_int_equal(strix_corpus_batch_random(&c, STRIX_SPLIT_VAL, &r1, B, T, ids1, tg1),
                         STRIX_OK);
        for (int i = 0; i < B * T; i++) {
            unsigned char a = c.vocab.bytes[ids1[i]], b = c.vocab.bytes[tg1[i]];
            assert_true(a >= 'A' && a <= 'Z' && b >= 'A' && b <= 'Z');
        }
    }
    strix_corpus_free(&c);
}

static void test_random_batch_covers_last_window(void **state) {
    /* split of exactly T+1 characters: the only window is the whole split */
    const char *text = "abcdefghij"; /* train 9 (0.9 · 10), val 1 */
    strix_corpus c;
    assert_int_equal(strix_corpus_from_bytes((const unsigned char *)text, 10, &c), STRIX_OK);
    int32_t ids[8], tg[8];
    strix_rng r;
    strix_rng_seed(&r, 0);
    assert_int_equal(strix_corpus_batch_random(&c, STRIX_SPLIT_TRAIN, &r, 1, 8, ids, tg),
                     STRIX_OK);
    assert_int_equal(ids[0], 0);
    assert_int_equal(tg[7], 8);
    assert_int_equal(strix_corpus_batch_random(&c, STRIX_SPLIT_TRAIN, &r, 1, 9, ids, tg),
                     STRIX_ERR_ARG);
    assert_int_equal(strix_corpus_batch_random(&c, STRIX_SPLIT_VAL, &r, 1, 1, ids, tg),
                     STRIX_ERR_ARG);
    assert_int_equal(strix_corpus_batch_random(&c, STRIX_SPLIT_TRAIN, &r, 0, 4, ids, tg),
                     STRIX_ERR_ARG);
    strix_corpus_free(&c);
}

static void test_sequential_walk_strides_and_wraps(void **state) {
    /* train split "0123456789" (10 of 12 characters at fraction 1/6) */
    const char *text = "0123456789xy";
    strix_corpus c;
    assert_int_equal(strix_corpus_from_bytes((const unsigned char *)text, 12, &c), STRIX_OK);
    assert_int_equal(strix_corpus_split(&c, 1.0 / 6.0), STRIX_OK);
    assert_int_equal(c.n_train, 10);
    strix_seq_cursor cur = {.pos = 0, .stride = 3, .epoch = 0};
    int32_t ids[2 * 3], tg[2 * 3];
    /* windows of 4 fit at starts 0..6: 0, 3, 6, then wrap to 0 */
    assert_int_equal(strix_corpus_batch_sequential(&c, STRIX_SPLIT_TRAIN, &cur, 2, 3, ids, tg),
                     STRIX_OK);
    unsigned char got[7] = {0};
    for (int i = 0; i < 6; i++) got[i] = c.vocab.bytes[ids[i]];
    assert_string_equal((char *)got, "012345");
    assert_int_equal(c.vocab.bytes[tg[5]], '6');
    assert_int_equal(cur.pos, 6);
    assert_int_equal(strix_corpus_batch_sequential(&c, STRIX_SPLIT_TRAIN, &cur, 2, 3, ids, tg),
                     STRIX_OK);
    for (int i = 0; i < 6; i++) got[i] = c.vocab.bytes[ids[i]];
    assert_string_equal((char *)got, "678012");
    assert_int_equal(cur.epoch, 1);
    assert_int_equal(cur.pos, 3);
    /* resuming from a saved cursor continues the same walk */
    strix_seq_cursor copy = cur;
    int32_t ids2[6], tg2[6];
    assert_int_equal(strix_corpus_batch_sequential(&c, STRIX_SPLIT_TRAIN, &cur, 2, 3, ids, tg),
                     STRIX_OK);
    assert_int_equal(strix_corpus_batch_sequential(&c, STRIX_SPLIT_TRAIN, &copy, 2, 3, ids2, tg2),
                     STRIX_OK);
    assert_memory_equal(ids, ids2, sizeof ids);
    cur.stride = 0;
    assert_int_equal(strix_corpus_batch_sequential(&c, STRIX_SPLIT_TRAIN, &cur, 2, 3, ids, tg),
                     STRIX_ERR_ARG);
    strix_corpus_free(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vocab_sorted_unique_bytes),
        cmocka_unit_test(test_vocab_encode_decode_round_trip),
        cmocka_unit_test(test_vocab_errors),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_load_directory_sorted_skipping_binary_links_hidden),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_load_refuses_devices_and_huge_files),
        cmocka_unit_test(test_split_sizes),
        cmocka_unit_test(test_split_tinyshakespeare_like_nanogpt),
        cmocka_unit_test(test_random_batch_deterministic_and_shifted),
        cmocka_unit_test(test_random_batch_covers_last_window),
        cmocka_unit_test(test_sequential_walk_strides_and_wraps),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
