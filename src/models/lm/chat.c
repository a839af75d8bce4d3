/*
 * chat.c - recognising a chat template and rendering a conversation with it (strix/chat.h).
 * Recognition looks for each layout's markers in the Jinja text; the fixed system message of a
 * ChatML template is the text of its literal "<|im_start|>system\n...<|im_end|>" when that text
 * is a plain string (no Jinja expression inside).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strix/chat.h"

/* The first occurrence of needle in hay[0..len), or NULL. */
static const char *find(const char *hay, size_t len, const char *needle) {
    size_t m = strlen(needle);
    for (size_t i = 0; m <= len && i <= len - m; i++)
        if (memcmp(hay + i, needle, m) == 0) return hay + i;
    return NULL;
}

/* The Jinja string-literal text s[0..n) with its escapes (\n, \t, \\, \', \") undone, or NULL
 * when it holds anything but plain text (a quote that closes the literal, an expression). */
static char *literal_text(const char *s, size_t n) {
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\'' || c == '"' || c == '{' || c == '}') {
            free(out);
            return NULL;
        }
        if (c == '\\' && i + 1 < n) {
            char e = s[++i];
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
        }
        out[k++] = c;
    }
    out[k] = '\0';
    return out;
}

static char *dup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

strix_status strix_chat_template_parse(const char *jinja, size_t len, strix_chat_template *out) {
    memset(out, 0, sizeof *out);
    if (!jinja) return strix_error(STRIX_ERR_UNSUPPORTED, "the model has no chat template");
    if (find(jinja, len, "<|im_start|>") && find(jinja, len, "<|im_end|>")) {
        out->format = STRIX_CHAT_CHATML;
        out->end = dup("<|im_end|>");
        if (!out->end) return strix_error(STRIX_ERR_ALLOC, "chat template: out of memory");
        const char *mark = "<|im_start|>system", *sys = jinja;
        while (!out->default_system && (sys = find(sys, len - (size_t)(sys - jinja), mark))) {
            const char *p = sys + strlen(mark);
            size_t left = len - (size_t)(p - jinja);
            size_t skip = left >= 2 && p[0] == '\\' && p[1] == 'n' ? 2 : left >= 1 && p[0] == '\n';
            p += skip;
            const char *end = find(p, left - skip, "<|im_end|>");
            if (end && end > p) out->default_system = literal_text(p, (size_t)(end - p));
            sys = p;
        }
        return STRIX_OK;
    }
    if (find(jinja, len, "<|start_header_id|>") && find(jinja, len, "<|eot_id|>")) {
        if (find(jinja, len, "Cutting Knowledge Date"))
            return strix_error(STRIX_ERR_UNSUPPORTED, "chat template: Llama 3.1+ with a date "
                                                      "header is not supported (Llama 3 and "
                                                      "ChatML are)");
        out->format = STRIX_CHAT_LLAMA3;
        out->end = dup("<|eot_id|>");
        if (!out->end) return strix_error(STRIX_ERR_ALLOC, "chat template: out of memory");
        return STRIX_OK;
    }
    return strix_error(STRIX_ERR_UNSUPPORTED, "chat template: not a template strix knows "
                                              "(ChatML or Llama 3)");
}

void strix_chat_template_free(strix_chat_template *t) {
    if (!t) return;
    free(t->default_system);
    free(t->end);
    memset(t, 0, sizeof *t);
}

/* A growing string. */
typedef struct buf {
    char *s;
    size_t len, cap;
    bool oom;
} buf;

static void put(buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap) cap *= 2;
        char *t = realloc(b->s, cap);
        if (!t) {
            b->oom = true;
            return;
        }
        b->s = t;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

/* Jinja's `trim`: Python's str.strip() of whitespace. */
static void put_trimmed(buf *b, const char *s) {
    size_t n = strlen(s), i = 0;
    while (i < n && strchr(" \t\n\r\v\f", s[i])) i++;
    while (n > i && strchr(" \t\n\r\v\f", s[n - 1])) n--;
    put(b, s + i, n - i);
}

strix_status strix_chat_render(const strix_chat_template *t, const strix_chat_message *msgs,
                               size_t n, char **text) {
    *text = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!msgs[i].role || !msgs[i].content || !msgs[i].role[0])
            return strix_error(STRIX_ERR_ARG, "chat message %zu has no role or no content", i + 1);
        if (strpbrk(msgs[i].role, "\n<>"))
            return strix_error(STRIX_ERR_ARG, "chat message %zu: role '%s' has a newline or "
                                              "angle bracket", i + 1, msgs[i].role);
    }
    buf b = {0};
    if (t->format == STRIX_CHAT_CHATML) {
        if (t->default_system && n > 0 && strcmp(msgs[0].role, "system") != 0) {
            puts_(&b, "<|im_start|>system\n");
            puts_(&b, t->default_system);
            puts_(&b, "<|im_end|>\n");
        }
        for (size_t i = 0; i < n; i++) {
            puts_(&b, "<|im_start|>");
            puts_(&b, msgs[i].role);
            puts_(&b, "\n");
            puts_(&b, msgs[i].content);
            puts_(&b, "<|im_end|>\n");
        }
        puts_(&b, "<|im_start|>assistant\n");
    } else if (t->format == STRIX_CHAT_LLAMA3) {
        if (n > 0) puts_(&b, "<|begin_of_text|>");
        for (size_t i = 0; i < n; i++) {
            puts_(&b, "<|start_header_id|>");
            puts_(&b, msgs[i].role);
            puts_(&b, "<|end_header_id|>\n\n");
            put_trimmed(&b, msgs[i].content);
            puts_(&b, "<|eot_id|>");
        }
        puts_(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    } else {
        return strix_error(STRIX_ERR_ARG, "chat: template not parsed");
    }
    if (b.oom) {
        free(b.s);
        return strix_error(STRIX_ERR_ALLOC, "chat: out of memory");
    }
    *text = b.s;
    return STRIX_OK;
}
