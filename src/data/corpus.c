/*
 * corpus.c - loading a character corpus from a file or a directory of text files, its vocabulary
 * and its train/validation split (strix/data.h).
 *
 * Does not sample batches (batch.c) and does not recurse into subdirectories.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "strix/data.h"

// ---- reading -----------------------------------------------------------------------------------

/* A growing byte buffer. */
typedef struct byte_buf {
    unsigned char *data;
    size_t size, cap;
} byte_buf;

static strix_status buf_reserve(byte_buf *b, size_t extra) {
    if (b->size + extra <= b->cap) return STRIX_OK;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->size + extra) cap *= 2;
    unsigned char *data = realloc(b->data, cap);
    if (!data) return strix_error(STRIX_ERR_ALLOC, "corpus: out of memory (%zu bytes)", cap);
    b->data = data;
    b->cap = cap;
    return STRIX_OK;
}

/* Appends the whole file at `path` to b; *added gets its length. Refuses (STRIX_ERR_ARG) a file
 * that is not regular (/dev/zero would grow b without bound) and text that would take b past
 * STRIX_CORPUS_MAX_BYTES, judged from the file's size before reading and again while reading (a
 * file that grows meanwhile). */
static strix_status append_file(const char *path, byte_buf *b, size_t *added) {
    *added = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return strix_error(STRIX_ERR_IO, "cannot open corpus '%s': %s", path, strerror(errno));
    struct stat st;
    strix_status s = STRIX_OK;
    if (fstat(fileno(f), &st) != 0)
        s = strix_error(STRIX_ERR_IO, "cannot stat corpus '%s': %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        s = strix_error(STRIX_ERR_ARG, "'%s' is not a regular file", path);
    else if ((uint64_t)st.st_size > STRIX_CORPUS_MAX_BYTES)
        s = strix_error(STRIX_ERR_ARG, "corpus file '%s' is %.2f GiB (%" PRIu64 " bytes); the "
                        "limit is 1 GiB", path, (double)st.st_size / (double)(1u << 30),
                        (uint64_t)st.st_size);
    else if (b->size + (size_t)st.st_size > STRIX_CORPUS_MAX_BYTES)
        s = strix_error(STRIX_ERR_ARG, "corpus too large: with '%s' it reaches %" PRIu64
                        " bytes; the limit is 1 GiB (%zu bytes)", path,
                        (uint64_t)b->size + (uint64_t)st.st_size, STRIX_CORPUS_MAX_BYTES);
    while (s == STRIX_OK) {
        s = buf_reserve(b, 1 << 16);
        if (s != STRIX_OK) break;
        size_t got = fread(b->data + b->size, 1, b->cap - b->size, f);
        b->size += got;
        *added += got;
        if (b->size > STRIX_CORPUS_MAX_BYTES) {
            s = strix_error(STRIX_ERR_ARG, "corpus too large: '%s' grew while being read past "
                            "the limit of 1 GiB (%zu bytes)", path, STRIX_CORPUS_MAX_BYTES);
            break;
        }
        if (got == 0) {
            if (ferror(f))
                s = strix_error(STRIX_ERR_IO, "cannot read corpus '%s': %s", path,
                                strerror(errno));
            break;
        }
    }
    fclose(f);
    return s;
}

/* Why `n` bytes of text are not text (NULL when they are): a NUL byte, or more than 10% control
 * characters other than the usual whitespace, backspace (overstriking) and ESC. */
static const char *binary_reason(const unsigned char *text, size_t n) {
    size_t control = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = text[i];
        if (c == 0) return "it holds NUL bytes";
        bool usual = c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' || c == '\b' ||
                     c == 0x1b;
        if ((c < 0x20 && !usual) || c == 0x7f) control++;
    }
    if (control * 10 > n) return "more than 10% of its bytes are control characters";
    return NULL;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends every text file directly inside `dir`, in strcmp order of names. */
static strix_status append_directory(const char *dir, byte_buf *b, strix_corpus *out) {
    DIR *d = opendir(dir);
    if (!d) return strix_error(STRIX_ERR_IO, "cannot open directory '%s': %s", dir,
                               strerror(errno));
    char **names = NULL;
    size_t count = 0, cap = 0;
    strix_status s = STRIX_OK;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown) { s = strix_error(STRIX_ERR_ALLOC, "corpus: out of memory"); break; }
            names = grown;
        }
        names[count] = malloc(strlen(e->d_name) + 1);
        if (!names[count]) { s = strix_error(STRIX_ERR_ALLOC, "corpus: out of memory"); break; }
        strcpy(names[count++], e->d_name);
    }
    closedir(d);
    if (s == STRIX_OK && count > 1) qsort(names, count, sizeof *names, compare_names);

    size_t dir_len = strlen(dir);
    for (size_t i = 0; i < count && s == STRIX_OK; i++) {
        const char *name = names[i];
        char *path = malloc(dir_len + strlen(name) + 2);
        if (!path) { s = strix_error(STRIX_ERR_ALLOC, "corpus: out of memory"); break; }
        sprintf(path, "%s%s%s", dir, (dir_len && dir[dir_len - 1] == '/') ? "" : "/", name);
        struct stat st;
        /* lstat: a link is skipped, never followed; only regular files are opened. */
        bool regular = name[0] != '.' && lstat(path, &st) == 0 && S_ISREG(st.st_mode);
        bool take = regular && st.st_size > 0;
        if (take) {
            size_t start = b->size, added = 0;
            s = append_file(path, b, &added);
            if (s == STRIX_OK && (added == 0 || binary_reason(b->data + start, added))) {
                b->size = start; /* drop the binary or (now) empty file again */
                take = false;
            }
        }
        if (s == STRIX_OK) {
            if (take) out->n_files++;
            else if (regular) out->n_skipped_text++;
            else out->n_skipped_other++;
        }
        free(path);
    }
    for (size_t i = 0; i < count; i++) free(names[i]);
    free(names);
    return s;
}

// ---- corpus ------------------------------------------------------------------------------------

/* Turns the text in `b` into ids in place, with its vocabulary, hash and default split. Takes
 * ownership of b->data. */
static strix_status finish_corpus(byte_buf *b, strix_corpus *out) {
    out->hash = strix_fnv1a64(STRIX_FNV1A_INIT, b->data, b->size);
    bool present[256] = {false};
    for (size_t i = 0; i < b->size; i++) present[b->data[i]] = true;
    unsigned char bytes[256];
    int n = 0;
    for (int c = 0; c < 256; c++)
        if (present[c]) bytes[n++] = (unsigned char)c;
    strix_status s = strix_vocab_from_bytes(bytes, n, &out->vocab);
    if (s != STRIX_OK) { free(b->data); return s; }
    for (size_t i = 0; i < b->size; i++) b->data[i] = (uint8_t)out->vocab.id_of[b->data[i]];
    out->ids = b->data;
    out->size = b->size;
    return strix_corpus_split(out, 0.1);
}

strix_status strix_corpus_load(const char *path, strix_corpus *out) {
    memset(out, 0, sizeof *out);
    if (!path || !path[0]) return strix_error(STRIX_ERR_ARG, "corpus path is empty");
    struct stat st;
    if (stat(path, &st) != 0)
        return strix_error(STRIX_ERR_IO, "cannot open corpus '%s': %s", path, strerror(errno));
    byte_buf b = {0};
    strix_status s;
    if (S_ISDIR(st.st_mode)) {
        s = append_directory(path, &b, out);
        out->n_skipped = out->n_skipped_text + out->n_skipped_other;
        if (s == STRIX_OK && out->n_files == 0)
            s = strix_error(STRIX_ERR_ARG,
                            "directory '%s' holds no text files (%d entries skipped: binary, "
                            "empty, hidden, links, subdirectories or not regular files)", path,
                            out->n_skipped);
    } else if (!S_ISREG(st.st_mode)) {
        return strix_error(STRIX_ERR_ARG, "'%s' is not a regular file", path);
    } else {
        size_t added = 0;
        s = append_file(path, &b, &added);
        const char *why = s == STRIX_OK ? binary_reason(b.data, b.size) : NULL;
        if (s == STRIX_OK && b.size == 0)
            s = strix_error(STRIX_ERR_ARG, "corpus file '%s' is empty", path);
        else if (s == STRIX_OK && why)
            s = strix_error(STRIX_ERR_ARG, "'%s' is not a text file (%s)", path, why);
        out->n_files = 1;
    }
    if (s != STRIX_OK) {
        free(b.data);
        memset(out, 0, sizeof *out);
        return s;
    }
    s = finish_corpus(&b, out);
    if (s != STRIX_OK) memset(out, 0, sizeof *out);
    return s;
}

strix_status strix_corpus_from_bytes(const unsigned char *text, size_t n, strix_corpus *out) {
    memset(out, 0, sizeof *out);
    if (n == 0) return strix_error(STRIX_ERR_ARG, "corpus text is empty");
    byte_buf b = {0};
    STRIX_TRY(buf_reserve(&b, n));
    memcpy(b.data, text, n);
    b.size = n;
    out->n_files = 1;
    strix_status s = finish_corpus(&b, out);
    if (s != STRIX_OK) memset(out, 0, sizeof *out);
    return s;
}

void strix_corpus_free(strix_corpus *c) {
    if (!c) return;
    free(c->ids);
    memset(c, 0, sizeof *c);
}

strix_status strix_corpus_split(strix_corpus *c, double val_fraction) {
    if (!(val_fraction > 0.0 && val_fraction < 1.0))
        return strix_error(STRIX_ERR_ARG, "validation fraction %g is outside (0, 1)",
                           val_fraction);
    c->n_train = (size_t)floor((double)c->size * (1.0 - val_fraction));
    return STRIX_OK;
}

size_t strix_corpus_split_size(const strix_corpus *c, strix_split split) {
    return split == STRIX_SPLIT_TRAIN ? c->n_train : c->size - c->n_train;
}

strix_status strix_corpus_check_block(const strix_corpus *c, int T) {
    if (T < 1) return strix_error(STRIX_ERR_ARG, "block size %d must be at least 1", T);
    size_t need = (size_t)T + 1;
    if (c->size < need)
        return strix_error(STRIX_ERR_ARG,
                           "corpus of %zu characters is shorter than one block of T+1 = %zu "
                           "characters", c->size, need);
    static const char *names[2] = {"training", "validation"};
    for (int s = 0; s < 2; s++) {
        size_t n = strix_corpus_split_size(c, (strix_split)s);
        if (n < need)
            return strix_error(STRIX_ERR_ARG,
                               "%s split of %zu characters (of a corpus of %zu) is shorter than "
                               "one block of T+1 = %zu characters", names[s], n, c->size, need);
    }
    return STRIX_OK;
}
