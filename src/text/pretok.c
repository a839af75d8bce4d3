/*
 * pretok.c - the text side of the tokenizer (strix/tokenizer.h): UTF-8 validation and lossy
 * decoding (Rust's str and from_utf8_lossy), the Unicode classes tokenizers uses (White_Space,
 * is_numeric, \w), GPT-2's byte-to-character table, the translation of tokenizers' Oniguruma
 * regexes to PCRE2, and the pre-tokenizer steps (Split, Digits, ByteLevel) as tokenizers'
 * pre_tokenizers (split.rs, digits.rs, byte_level.rs) and NormalizedString::split run them, each
 * piece handed on to the next step and finally to the BPE model (bpe.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tok_internal.h"

// ---- UTF-8 -------------------------------------------------------------------------------------

/* Length of the valid UTF-8 sequence starting at s[i], or 0 with the length of the maximal invalid
 * subpart (at least 1) in *bad. The Unicode table 3-7 ranges (Rust's str validation). */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t i, size_t *bad) {
    unsigned char c = s[i];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        *bad = 1;
        return 0;
    }
    size_t k = 1;
    for (; k <= need; k++) {
        if (i + k >= n) break;
        unsigned char d = s[i + k];
        unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
        if (d < l || d > h) break;
    }
    if (k == need + 1) return need + 1;
    *bad = k;
    return 0;
}

size_t tok_utf8_invalid_at(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        size_t bad, len = utf8_seq(u, n, i, &bad);
        if (!len) return i;
        i += len;
    }
    return n;
}

int32_t tok_utf8_decode(const char *s, size_t n, size_t i, size_t *adv) {
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[i];
    if (c < 0x80 || i + 1 >= n) {
        *adv = 1;
        return c;
    }
    if (c < 0xE0) {
        *adv = 2;
        return (int32_t)(c & 0x1F) << 6 | (u[i + 1] & 0x3F);
    }
    if (c < 0xF0) {
        *adv = 3;
        if (i + 2 >= n) return 0xFFFD;
        return (int32_t)(c & 0x0F) << 12 | (int32_t)(u[i + 1] & 0x3F) << 6 | (u[i + 2] & 0x3F);
    }
    *adv = 4;
    if (i + 3 >= n) return 0xFFFD;
    return (int32_t)(c & 0x07) << 18 | (int32_t)(u[i + 1] & 0x3F) << 12 |
           (int32_t)(u[i + 2] & 0x3F) << 6 | (u[i + 3] & 0x3F);
}

bool tok_utf8_lossy(tok_buf *out, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    static const char replacement[3] = {(char)0xEF, (char)0xBF, (char)0xBD};
    size_t i = 0, run = 0; /* s[run..i) is valid and not yet copied */
    while (i < n) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        size_t bad, len = utf8_seq(u, n, i, &bad);
        if (len) {
            i += len;
            continue;
        }
        if (!tok_buf_append(out, s + run, i - run) || !tok_buf_append(out, replacement, 3))
            return false;
        i += bad;
        run = i;
    }
    return tok_buf_append(out, s + run, n - run);
}

// ---- Unicode classes ---------------------------------------------------------------------------

typedef struct cp_range {
    int32_t lo, hi;
} cp_range;

/* Letters Unicode 15.0 and 16.0 added (what Oniguruma's \p{L} in tokenizers 0.23 has and the
 * PCRE2 10.42 / utf8proc 2.8 tables lack; measured over every code point). */
static const cp_range new_letters[] = {
    {0x1C89, 0x1C8A},   {0xA7CB, 0xA7CD},   {0xA7DA, 0xA7DC},   {0x105C0, 0x105F3},
    {0x10D4A, 0x10D65}, {0x10D6F, 0x10D85}, {0x10EC2, 0x10EC4}, {0x1123F, 0x11240},
    {0x11380, 0x11389}, {0x1138B, 0x1138B}, {0x1138E, 0x1138E}, {0x11390, 0x113B5},
    {0x113B7, 0x113B7}, {0x113D1, 0x113D1}, {0x113D3, 0x113D3}, {0x11BC0, 0x11BE0},
    {0x11F02, 0x11F02}, {0x11F04, 0x11F10}, {0x11F12, 0x11F33}, {0x1342F, 0x1342F},
    {0x13441, 0x13446}, {0x13460, 0x143FA}, {0x16100, 0x1611D}, {0x16D40, 0x16D6C},
    {0x18CFF, 0x18CFF}, {0x1B132, 0x1B132}, {0x1B155, 0x1B155}, {0x1DF25, 0x1DF2A},
    {0x1E030, 0x1E06D}, {0x1E4D0, 0x1E4EB}, {0x1E5D0, 0x1E5ED}, {0x1E5F0, 0x1E5F0},
    {0x2B739, 0x2B739}, {0x2EBF0, 0x2EE5D}, {0x31350, 0x323AF},
};

/* Numbers that Rust's char::is_numeric (tokenizers' Digits) has and utf8proc 2.8 lacks. */
static const cp_range new_numerics[] = {
    {0x10D40, 0x10D49}, {0x116D0, 0x116E3}, {0x11BF0, 0x11BF9}, {0x11DE0, 0x11DE9},
    {0x16130, 0x16139}, {0x16D70, 0x16D79}, {0x16FF4, 0x16FF6}, {0x1CCF0, 0x1CCF9},
    {0x1E5F1, 0x1E5FA},
};

static bool in_ranges(const cp_range *r, size_t n, int32_t cp) {
    for (size_t i = 0; i < n; i++)
        if (cp >= r[i].lo && cp <= r[i].hi) return true;
    return false;
}

bool tok_is_space(int32_t cp) {
    switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

bool tok_is_numeric(int32_t cp) {
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO ||
           in_ranges(new_numerics, sizeof new_numerics / sizeof *new_numerics, cp);
}

bool tok_is_word(int32_t cp) {
    if (cp == 0x200C || cp == 0x200D || cp == '_') return true;
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        return in_ranges(new_letters, sizeof new_letters / sizeof *new_letters, cp);
    }
}

// ---- GPT-2's bytes_to_unicode ------------------------------------------------------------------

/* Bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves; the other 68, in byte order,
 * for U+0100 onwards (openai/gpt-2 encoder.py bytes_to_unicode). */
const uint16_t tok_byte_char[256] = {
    0x100, 0x101, 0x102, 0x103, 0x104, 0x105, 0x106, 0x107, 0x108, 0x109, 0x10A, 0x10B, 0x10C,
    0x10D, 0x10E, 0x10F, 0x110, 0x111, 0x112, 0x113, 0x114, 0x115, 0x116, 0x117, 0x118, 0x119,
    0x11A, 0x11B, 0x11C, 0x11D, 0x11E, 0x11F, 0x120, /* 0x00..0x20 */
    '!', '"', '#', '$', '%', '&', '\'', '(', ')', '*', '+', ',', '-', '.', '/', '0', '1', '2',
    '3', '4', '5', '6', '7', '8', '9', ':', ';', '<', '=', '>', '?', '@', 'A', 'B', 'C', 'D',
    'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M', 'N', 'O', 'P', 'Q', 'R', 'S', 'T', 'U', 'V',
    'W', 'X', 'Y', 'Z', '[', '\\', ']', '^', '_', '`', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h',
    'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z',
    '{', '|', '}', '~', /* 0x21..0x7E */
    0x121, 0x122, 0x123, 0x124, 0x125, 0x126, 0x127, 0x128, 0x129, 0x12A, 0x12B, 0x12C, 0x12D,
    0x12E, 0x12F, 0x130, 0x131, 0x132, 0x133, 0x134, 0x135, 0x136, 0x137, 0x138, 0x139, 0x13A,
    0x13B, 0x13C, 0x13D, 0x13E, 0x13F, 0x140, 0x141, 0x142, /* 0x7F..0xA0 */
    0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB, 0xAC, /* 0xA1..0xAC */
    0x143,                                                                   /* 0xAD */
    0xAE, 0xAF, 0xB0, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xBB, 0xBC,
    0xBD, 0xBE, 0xBF, 0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xCB,
    0xCC, 0xCD, 0xCE, 0xCF, 0xD0, 0xD1, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8, 0xD9, 0xDA,
    0xDB, 0xDC, 0xDD, 0xDE, 0xDF, 0xE0, 0xE1, 0xE2, 0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9,
    0xEA, 0xEB, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8,
    0xF9, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF, /* 0xAE..0xFF */
};

int tok_char_byte(int32_t cp) {
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF))
        return cp;
    if (cp < 0x100 || cp > 0x143) return -1;
    /* the bytes that do not stand for themselves, in order */
    static const unsigned char others[68] = {
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D,
        0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B,
        0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x7F, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
        0x88, 0x89, 0x8A, 0x8B, 0x8C, 0x8D, 0x8E, 0x8F, 0x90, 0x91, 0x92, 0x93, 0x94, 0x95,
        0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xAD};
    return others[cp - 0x100];
}

// ---- regexes -----------------------------------------------------------------------------------

/* tokenizer.json's patterns (GPT-2: tokenizers' ByteLevel RE; Llama-3 and Qwen2: their Split). */
const char tok_re_gpt2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char tok_re_llama3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char tok_re_qwen2[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* The members of \s as Oniguruma has it (Unicode White_Space; PCRE2's \s adds U+180E), to go
 * inside [...]. */
static const char cls_space[] =
    "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";

/* Per general category, the code points Oniguruma (tokenizers 0.23, Unicode 16) puts in \p{X}
 * and PCRE2 10.42 (Unicode 14) does not: what Unicode 15.0 and 16.0 assigned. Measured over every
 * code point with both libraries (none the other way round, except U+1171E, Mn in 14, Mc in 16).
 * Categories not listed gained nothing. */
static const struct {
    const char *name, *extra;
} new_in_category[] = {
    {"L",
     "\\x{1C89}-\\x{1C8A}\\x{A7CB}-\\x{A7CD}\\x{A7DA}-\\x{A7DC}\\x{105C0}-\\x{105F3}"
     "\\x{10D4A}-\\x{10D65}\\x{10D6F}-\\x{10D85}\\x{10EC2}-\\x{10EC4}\\x{1123F}-\\x{11240}"
     "\\x{11380}-\\x{11389}\\x{1138B}\\x{1138E}\\x{11390}-\\x{113B5}\\x{113B7}\\x{113D1}"
     "\\x{113D3}\\x{11BC0}-\\x{11BE0}\\x{11F02}\\x{11F04}-\\x{11F10}\\x{11F12}-\\x{11F33}"
     "\\x{1342F}\\x{13441}-\\x{13446}\\x{13460}-\\x{143FA}\\x{16100}-\\x{1611D}"
     "\\x{16D40}-\\x{16D6C}\\x{18CFF}\\x{1B132}\\x{1B155}\\x{1DF25}-\\x{1DF2A}"
     "\\x{1E030}-\\x{1E06D}\\x{1E4D0}-\\x{1E4EB}\\x{1E5D0}-\\x{1E5ED}\\x{1E5F0}\\x{2B739}"
     "\\x{2EBF0}-\\x{2EE5D}\\x{31350}-\\x{323AF}"},
    {"Lu",
     "\\x{1C89}\\x{A7CB}-\\x{A7CC}\\x{A7DA}\\x{A7DC}\\x{10D50}-\\x{10D65}"},
    {"Ll",
     "\\x{1C8A}\\x{A7CD}\\x{A7DB}\\x{10D70}-\\x{10D85}\\x{1DF25}-\\x{1DF2A}"},
    {"Lm",
     "\\x{10D4E}\\x{10D6F}\\x{16D40}-\\x{16D42}\\x{16D6B}-\\x{16D6C}\\x{1E030}-\\x{1E06D}"
     "\\x{1E4EB}"},
    {"Lo",
     "\\x{105C0}-\\x{105F3}\\x{10D4A}-\\x{10D4D}\\x{10D4F}\\x{10EC2}-\\x{10EC4}"
     "\\x{1123F}-\\x{11240}\\x{11380}-\\x{11389}\\x{1138B}\\x{1138E}\\x{11390}-\\x{113B5}"
     "\\x{113B7}\\x{113D1}\\x{113D3}\\x{11BC0}-\\x{11BE0}\\x{11F02}\\x{11F04}-\\x{11F10}"
     "\\x{11F12}-\\x{11F33}\\x{1342F}\\x{13441}-\\x{13446}\\x{13460}-\\x{143FA}"
     "\\x{16100}-\\x{1611D}\\x{16D43}-\\x{16D6A}\\x{18CFF}\\x{1B132}\\x{1B155}"
     "\\x{1E4D0}-\\x{1E4EA}\\x{1E5D0}-\\x{1E5ED}\\x{1E5F0}\\x{2B739}\\x{2EBF0}-\\x{2EE5D}"
     "\\x{31350}-\\x{323AF}"},
    {"M",
     "\\x{897}\\x{CF3}\\x{ECE}\\x{10D69}-\\x{10D6D}\\x{10EFC}-\\x{10EFF}\\x{11241}"
     "\\x{113B8}-\\x{113C0}\\x{113C2}\\x{113C5}\\x{113C7}-\\x{113CA}\\x{113CC}-\\x{113D0}"
     "\\x{113D2}\\x{113E1}-\\x{113E2}\\x{11F00}-\\x{11F01}\\x{11F03}\\x{11F34}-\\x{11F3A}"
     "\\x{11F3E}-\\x{11F42}\\x{11F5A}\\x{13440}\\x{13447}-\\x{13455}\\x{1611E}-\\x{1612F}"
     "\\x{1E08F}\\x{1E4EC}-\\x{1E4EF}\\x{1E5EE}-\\x{1E5EF}"},
    {"Mn",
     "\\x{897}\\x{ECE}\\x{10D69}-\\x{10D6D}\\x{10EFC}-\\x{10EFF}\\x{11241}"
     "\\x{113BB}-\\x{113C0}\\x{113CE}\\x{113D0}\\x{113D2}\\x{113E1}-\\x{113E2}"
     "\\x{11F00}-\\x{11F01}\\x{11F36}-\\x{11F3A}\\x{11F40}\\x{11F42}\\x{11F5A}\\x{13440}"
     "\\x{13447}-\\x{13455}\\x{1611E}-\\x{16129}\\x{1612D}-\\x{1612F}\\x{1E08F}"
     "\\x{1E4EC}-\\x{1E4EF}\\x{1E5EE}-\\x{1E5EF}"},
    {"Mc",
     "\\x{CF3}\\x{113B8}-\\x{113BA}\\x{113C2}\\x{113C5}\\x{113C7}-\\x{113CA}"
     "\\x{113CC}-\\x{113CD}\\x{113CF}\\x{1171E}\\x{11F03}\\x{11F34}-\\x{11F35}"
     "\\x{11F3E}-\\x{11F3F}\\x{11F41}\\x{1612A}-\\x{1612C}"},
    {"N",
     "\\x{10D40}-\\x{10D49}\\x{116D0}-\\x{116E3}\\x{11BF0}-\\x{11BF9}\\x{11F50}-\\x{11F59}"
     "\\x{16130}-\\x{16139}\\x{16D70}-\\x{16D79}\\x{1CCF0}-\\x{1CCF9}\\x{1D2C0}-\\x{1D2D3}"
     "\\x{1E4F0}-\\x{1E4F9}\\x{1E5F1}-\\x{1E5FA}"},
    {"Nd",
     "\\x{10D40}-\\x{10D49}\\x{116D0}-\\x{116E3}\\x{11BF0}-\\x{11BF9}\\x{11F50}-\\x{11F59}"
     "\\x{16130}-\\x{16139}\\x{16D70}-\\x{16D79}\\x{1CCF0}-\\x{1CCF9}\\x{1E4F0}-\\x{1E4F9}"
     "\\x{1E5F1}-\\x{1E5FA}"},
    {"No",
     "\\x{1D2C0}-\\x{1D2D3}"},
    {"P",
     "\\x{1B4E}-\\x{1B4F}\\x{1B7F}\\x{10D6E}\\x{113D4}-\\x{113D5}\\x{113D7}-\\x{113D8}"
     "\\x{11B00}-\\x{11B09}\\x{11BE1}\\x{11F43}-\\x{11F4F}\\x{16D6D}-\\x{16D6F}\\x{1E5FF}"},
    {"Pd",
     "\\x{10D6E}"},
    {"Po",
     "\\x{1B4E}-\\x{1B4F}\\x{1B7F}\\x{113D4}-\\x{113D5}\\x{113D7}-\\x{113D8}"
     "\\x{11B00}-\\x{11B09}\\x{11BE1}\\x{11F43}-\\x{11F4F}\\x{16D6D}-\\x{16D6F}\\x{1E5FF}"},
    {"S",
     "\\x{2427}-\\x{2429}\\x{2FFC}-\\x{2FFF}\\x{31E4}-\\x{31E5}\\x{31EF}"
     "\\x{10D8E}-\\x{10D8F}\\x{1CC00}-\\x{1CCEF}\\x{1CD00}-\\x{1CEB3}\\x{1F6DC}"
     "\\x{1F774}-\\x{1F776}\\x{1F77B}-\\x{1F77F}\\x{1F7D9}\\x{1F8B2}-\\x{1F8BB}"
     "\\x{1F8C0}-\\x{1F8C1}\\x{1FA75}-\\x{1FA77}\\x{1FA87}-\\x{1FA89}\\x{1FA8F}"
     "\\x{1FAAD}-\\x{1FAAF}\\x{1FABB}-\\x{1FABF}\\x{1FAC6}\\x{1FACE}-\\x{1FACF}"
     "\\x{1FADA}-\\x{1FADC}\\x{1FADF}\\x{1FAE8}-\\x{1FAE9}\\x{1FAF7}-\\x{1FAF8}"
     "\\x{1FBCB}-\\x{1FBEF}"},
    {"Sm",
     "\\x{10D8E}-\\x{10D8F}"},
    {"So",
     "\\x{2427}-\\x{2429}\\x{2FFC}-\\x{2FFF}\\x{31E4}-\\x{31E5}\\x{31EF}"
     "\\x{1CC00}-\\x{1CCEF}\\x{1CD00}-\\x{1CEB3}\\x{1F6DC}\\x{1F774}-\\x{1F776}"
     "\\x{1F77B}-\\x{1F77F}\\x{1F7D9}\\x{1F8B2}-\\x{1F8BB}\\x{1F8C0}-\\x{1F8C1}"
     "\\x{1FA75}-\\x{1FA77}\\x{1FA87}-\\x{1FA89}\\x{1FA8F}\\x{1FAAD}-\\x{1FAAF}"
     "\\x{1FABB}-\\x{1FABF}\\x{1FAC6}\\x{1FACE}-\\x{1FACF}\\x{1FADA}-\\x{1FADC}\\x{1FADF}"
     "\\x{1FAE8}-\\x{1FAE9}\\x{1FAF7}-\\x{1FAF8}\\x{1FBCB}-\\x{1FBEF}"},
};

/* Appends class members `cls`: bare inside a class, else as [cls] or [^cls]. */
static bool put_class(tok_buf *o, const char *cls, bool in_class, bool negated) {
    if (in_class) return tok_buf_append(o, cls, strlen(cls));
    return tok_buf_append(o, negated ? "[^" : "[", negated ? 2 : 1) &&
           tok_buf_append(o, cls, strlen(cls)) && tok_buf_append(o, "]", 1);
}

/* Rewrites \s, \S (outside classes) and the general categories \pX, \p{X}, \p{Xy} (and \P...
 * outside classes) to the classes above; everything else is copied as it is. */
static bool translate(const char *p, size_t n, tok_buf *o) {
    bool in_class = false;
    size_t i = 0;
    while (i < n) {
        char c = p[i];
        if (c == '\\' && i + 1 < n) {
            char e = p[i + 1];
            if (e == 's') {
                if (!put_class(o, cls_space, in_class, false)) return false;
                i += 2;
                continue;
            }
            if (e == 'S' && !in_class) {
                if (!put_class(o, cls_space, false, true)) return false;
                i += 2;
                continue;
            }
            if ((e == 'p' || e == 'P') && i + 2 < n) {
                /* \pX or \p{X} / \p{Xy}: a general category, with what Unicode 15-16 added */
                char name[3] = {0};
                size_t skip = 0;
                if (p[i + 2] != '{') {
                    name[0] = p[i + 2];
                    skip = 3;
                } else if (i + 4 < n && p[i + 4] == '}') {
                    name[0] = p[i + 3];
                    skip = 5;
                } else if (i + 5 < n && p[i + 5] == '}') {
                    name[0] = p[i + 3];
                    name[1] = p[i + 4];
                    skip = 6;
                }
                const char *extra = NULL;
                for (size_t k = 0; skip && k < sizeof new_in_category / sizeof *new_in_category;
                     k++)
                    if (strcmp(new_in_category[k].name, name) == 0)
                        extra = new_in_category[k].extra;
                bool neg = e == 'P';
                if (extra && !(neg && in_class)) {
                    bool ok = in_class || tok_buf_append(o, neg ? "[^" : "[", neg ? 2 : 1);
                    ok = ok && tok_buf_append(o, "\\p{", 3) &&
                         tok_buf_append(o, name, strlen(name)) && tok_buf_append(o, "}", 1) &&
                         tok_buf_append(o, extra, strlen(extra));
                    ok = ok && (in_class || tok_buf_append(o, "]", 1));
                    if (!ok) return false;
                    i += skip;
                    continue;
                }
            }
            if (!tok_buf_append(o, p + i, 2)) return false;
            i += 2;
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            size_t k = i + 1;
            if (k < n && p[k] == '^') k++;
            if (k < n && p[k] == ']') k++; /* a leading ] is literal */
            if (!tok_buf_append(o, p + i, k - i)) return false;
            i = k;
            continue;
        }
        if (in_class && c == '[' && i + 1 < n && p[i + 1] == ':') { /* [:alpha:] */
            size_t k = i + 2;
            while (k + 1 < n && !(p[k] == ':' && p[k + 1] == ']')) k++;
            k = k + 1 < n ? k + 2 : n;
            if (!tok_buf_append(o, p + i, k - i)) return false;
            i = k;
            continue;
        }
        if (in_class && c == ']') in_class = false;
        if (!tok_buf_append(o, p + i, 1)) return false;
        i++;
    }
    return tok_buf_append(o, "", 1);
}

pcre2_code *tok_regex_compile(const char *pattern, size_t len, bool literal, char *err,
                              size_t cap) {
    tok_buf o = {0};
    uint32_t opts = PCRE2_UTF | PCRE2_UCP;
    const char *src = pattern;
    size_t src_len = len;
    if (literal) {
        opts = PCRE2_UTF | PCRE2_LITERAL; /* UCP is not allowed with LITERAL (nor needed) */
    } else {
        if (!translate(pattern, len, &o)) {
            tok_buf_free(&o);
            snprintf(err, cap, "out of memory");
            return NULL;
        }
        src = o.data;
        src_len = o.len - 1;
    }
    int code;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)src, src_len, opts, &code, &off, NULL);
    tok_buf_free(&o);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof msg);
        snprintf(err, cap, "%s", (const char *)msg);
        return NULL;
    }
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* the interpreter when JIT is missing */
    return re;
}

// ---- splitting ---------------------------------------------------------------------------------

/* A piece of the text: [start, end) and whether the pattern matched it. */
typedef struct span {
    size_t start, end;
    bool match;
} span;

typedef struct spans {
    span *v;
    size_t n, cap;
    span small[32];
} spans;

static bool spans_push(spans *s, size_t start, size_t end, bool match) {
    if (s->n == s->cap) {
        size_t cap = s->cap * 2;
        span *v = malloc(cap * sizeof *v);
        if (!v) return false;
        memcpy(v, s->v, s->n * sizeof *v);
        if (s->v != s->small) free(s->v);
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (span){start, end, match};
    return true;
}

static void spans_init(spans *s) {
    s->v = s->small;
    s->n = 0;
    s->cap = sizeof s->small / sizeof *s->small;
}

static void spans_free(spans *s) {
    if (s->v != s->small) free(s->v);
}

/* The matches of re in s[0..n) and the gaps between them (Pattern::find_matches for SysRegex);
 * empty matches are skipped. STRIX_ERR_ARG when PCRE2 fails. */
static strix_status regex_spans(const pcre2_code *re, const char *s, size_t n,
                                pcre2_match_data *md, spans *out) {
    size_t pos = 0, prev = 0;
    while (pos <= n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return strix_error(STRIX_ERR_ARG, "tokenizer: regex failed on the text: %s",
                               (const char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t start = ov[0], end = ov[1];
        if (end <= start) { /* empty: step over one character */
            if (start >= n) break;
            size_t adv;
            (void)tok_utf8_decode(s, n, start, &adv);
            pos = start + adv;
            continue;
        }
        if (prev < start && !spans_push(out, prev, start, false)) goto oom;
        if (!spans_push(out, start, end, true)) goto oom;
        prev = pos = end;
    }
    if (prev < n && !spans_push(out, prev, n, false)) goto oom;
    return STRIX_OK;
oom:
    return strix_error(STRIX_ERR_ALLOC, "tokenizer: out of memory");
}

/* The characters that are numeric, one span each, and the gaps (Pattern for Fn(char) -> bool). */
static strix_status digit_spans(const char *s, size_t n, spans *out) {
    size_t i = 0, prev = 0;
    while (i < n) {
        size_t adv;
        int32_t cp = tok_utf8_decode(s, n, i, &adv);
        if (tok_is_numeric(cp)) {
            if ((prev < i && !spans_push(out, prev, i, false)) ||
                !spans_push(out, i, i + adv, true))
                return strix_error(STRIX_ERR_ALLOC, "tokenizer: out of memory");
            prev = i + adv;
        }
        i += adv;
    }
    if (prev < n && !spans_push(out, prev, n, false))
        return strix_error(STRIX_ERR_ALLOC, "tokenizer: out of memory");
    return STRIX_OK;
}

/* Folds spans in place by behaviour (NormalizedString::split); removed spans get match = true
 * and are dropped by the caller, kept ones match = false. */
static void apply_behavior(spans *s, tok_behavior b) {
    size_t k = 0;
    bool prev_match = false;
    switch (b) {
    case TOK_ISOLATED:
        for (size_t i = 0; i < s->n; i++) s->v[i].match = false;
        return;
    case TOK_REMOVED:
        return;
    case TOK_CONTIGUOUS:
        for (size_t i = 0; i < s->n; i++) {
            bool m = s->v[i].match;
            if (m == prev_match && k > 0) s->v[k - 1].end = s->v[i].end;
            else s->v[k++] = (span){s->v[i].start, s->v[i].end, false};
            prev_match = m;
        }
        s->n = k;
        return;
    case TOK_MERGED_PREV:
        for (size_t i = 0; i < s->n; i++) {
            bool m = s->v[i].match;
            if (m && !prev_match && k > 0) s->v[k - 1].end = s->v[i].end;
            else s->v[k++] = (span){s->v[i].start, s->v[i].end, false};
            prev_match = m;
        }
        s->n = k;
        return;
    case TOK_MERGED_NEXT: {
        /* from the end: a match merges into the piece after it */
        size_t w = s->n;
        for (size_t i = s->n; i-- > 0;) {
            bool m = s->v[i].match;
            if (m && !prev_match && w < s->n) s->v[w].start = s->v[i].start;
            else s->v[--w] = (span){s->v[i].start, s->v[i].end, false};
            prev_match = m;
        }
        memmove(s->v, s->v + w, (s->n - w) * sizeof *s->v);
        s->n -= w;
        return;
    }
    }
}

strix_status tok_pretokenize(const strix_tokenizer *t, size_t step, const char *s, size_t n,
                             pcre2_match_data *md, tok_buf *out, tok_buf *scratch) {
    if (n == 0) return STRIX_OK;
    const tok_pre *p = &t->pre[step];
    if (p->kind == TOK_PRE_BYTELEVEL) {
        char *prefixed = NULL;
        if (p->add_prefix_space && s[0] != ' ') {
            prefixed = malloc(n + 1);
            if (!prefixed) return strix_error(STRIX_ERR_ALLOC, "tokenizer: out of memory");
            prefixed[0] = ' ';
            memcpy(prefixed + 1, s, n);
            s = prefixed;
            n++;
        }
        strix_status st = STRIX_OK;
        if (!p->re) {
            if (!tok_bpe(t, (const unsigned char *)s, n, out, scratch))
                st = strix_error(STRIX_ERR_ALLOC, "tokenizer: out of memory");
        } else {
            spans sp;
            spans_init(&sp);
            st = regex_spans(p->re, s, n, md, &sp);
            for (size_t i = 0; st == STRIX_OK && i < sp.n; i++)
                if (!tok_bpe(t, (const unsigned char *)s + sp.v[i].start,
                             sp.v[i].end - sp.v[i].start, out, scratch))
                    st = strix_error(STRIX_ERR_ALLOC, "tokenizer: out of memory");
            spans_free(&sp);
        }
        free(prefixed);
        return st;
    }
    spans sp;
    spans_init(&sp);
    strix_status st;
    tok_behavior behavior;
    if (p->kind == TOK_PRE_DIGITS) {
        st = digit_spans(s, n, &sp);
        behavior = p->individual_digits ? TOK_ISOLATED : TOK_CONTIGUOUS;
    } else {
        st = regex_spans(p->re, s, n, md, &sp);
        if (p->invert)
            for (size_t i = 0; i < sp.n; i++) sp.v[i].match = !sp.v[i].match;
        behavior = p->behavior;
    }
    if (st == STRIX_OK) apply_behavior(&sp, behavior);
    for (size_t i = 0; st == STRIX_OK && i < sp.n; i++) {
        if (sp.v[i].match || sp.v[i].end == sp.v[i].start) continue;
        st = tok_pretokenize(t, step + 1, s + sp.v[i].start, sp.v[i].end - sp.v[i].start, md,
                             out, scratch);
    }
    spans_free(&sp);
    return st;
}
