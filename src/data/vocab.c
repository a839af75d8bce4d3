/*
 * vocab.c - the byte vocabulary: construction from stored bytes, encode, decode (strix/data.h).
 *
 * Does not build a vocabulary from a text (corpus.c does, while loading) and knows nothing of
 * files or checkpoints.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "strix/data.h"

strix_status strix_vocab_from_bytes(const unsigned char *bytes, int n, strix_vocab *out) {
    memset(out, 0, sizeof *out);
    memset(out->id_of, 0xff, sizeof out->id_of); /* every id_of = -1 */
    if (n < 1 || n > 256)
        return strix_error(STRIX_ERR_FORMAT, "vocabulary of %d bytes (expected 1..256)", n);
    for (int i = 0; i < n; i++) {
        if (i > 0 && bytes[i] <= bytes[i - 1]) {
            memset(out->id_of, 0xff, sizeof out->id_of);
            return strix_error(STRIX_ERR_FORMAT,
                               "vocabulary bytes are not strictly ascending at index %d", i);
        }
        out->bytes[i] = bytes[i];
        out->id_of[bytes[i]] = (int16_t)i;
    }
    out->size = n;
    return STRIX_OK;
}

/* Writes a readable name of byte b: 'c' for printable ASCII, else 0xNN. */
static void byte_name(unsigned char b, char *buf, size_t cap) {
    if (b < 128 && isprint(b) && b != '\'')
        snprintf(buf, cap, "'%c'", b);
    else
        snprintf(buf, cap, "0x%02X", b);
}

strix_status strix_vocab_encode(const strix_vocab *v, const unsigned char *text, size_t n,
                                int32_t *ids) {
    for (size_t i = 0; i < n; i++) {
        int id = v->id_of[text[i]];
        if (id < 0) {
            char name[16];
            byte_name(text[i], name, sizeof name);
            return strix_error(STRIX_ERR_ARG,
                               "character %s (byte %u) at offset %zu is not in the vocabulary "
                               "of %d characters", name, (unsigned)text[i], i, v->size);
        }
        ids[i] = id;
    }
    return STRIX_OK;
}

strix_status strix_vocab_decode(const strix_vocab *v, const int32_t *ids, size_t n,
                                unsigned char *out) {
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= v->size)
            return strix_error(STRIX_ERR_ARG, "token id %d at index %zu is outside [0, %d)",
                               (int)ids[i], i, v->size);
        out[i] = v->bytes[ids[i]];
    }
    return STRIX_OK;
}

uint64_t strix_fnv1a64(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
