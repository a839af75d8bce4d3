/*
 * args.c - the flag parser of the strix command (args.h).
 *
 * Does not print anything but the one error line and --help text.
 */
#include "args.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

arg_spec *args_find(arg_spec *specs, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(specs[i].name, name) == 0) return &specs[i];
    return NULL;
}

static int set_value(const char *cmd, arg_spec *s, const char *text) {
    if (s->kind == ARG_STRING) {
        *(const char **)s->target = text;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    double v;
    bool integer = s->kind == ARG_INT || s->kind == ARG_I64 || s->kind == ARG_U64;
    if (s->kind == ARG_U64) {
        unsigned long long x = strtoull(text, &end, 10);
        v = text[0] == '-' ? -1.0 : (double)x;
    } else if (integer) {
        long long x = strtoll(text, &end, 10);
        v = (double)x;
    } else {
        v = strtod(text, &end);
    }
    if (!text[0] || *end || (errno == ERANGE && !integer) || !isfinite(v)) {
        fprintf(stderr, "strix %s: --%s expects %s (got '%s')\n", cmd, s->name,
                integer ? "an integer" : "a number", text);
        return 2;
    }
    if (errno == ERANGE) { /* a well-formed integer beyond 64 bits: outside any range */
        bool negative = text[strspn(text, " \t\n\v\f\r")] == '-';
        if (negative)
            fprintf(stderr, "strix %s: --%s must be %s %.10g (got %s)\n", cmd, s->name,
                    s->min_open ? ">" : ">=", s->min, text);
        else if (s->kind == ARG_INT || s->max < 9223372036854775807.0)
            fprintf(stderr, "strix %s: --%s must be <= %.10g (got %s)\n", cmd, s->name,
                    s->kind == ARG_INT && s->max > INT_MAX ? (double)INT_MAX : s->max, text);
        else /* the range is the type's own */
            fprintf(stderr, "strix %s: --%s must be <= %s (got %s)\n", cmd, s->name,
                    s->kind == ARG_U64 ? "18446744073709551615" : "9223372036854775807", text);
        return 2;
    }
    bool low = s->min_open ? !(v > s->min) : !(v >= s->min);
    if (low) {
        fprintf(stderr, "strix %s: --%s must be %s %.10g (got %s)\n", cmd, s->name,
                s->min_open ? ">" : ">=", s->min, text);
        return 2;
    }
    if (v > s->max) {
        fprintf(stderr, "strix %s: --%s must be <= %.10g (got %s)\n", cmd, s->name, s->max, text);
        return 2;
    }
    switch (s->kind) {
    case ARG_INT: *(int *)s->target = (int)v; break;
    case ARG_I64: *(int64_t *)s->target = (int64_t)strtoll(text, NULL, 10); break;
    case ARG_U64: *(uint64_t *)s->target = (uint64_t)strtoull(text, NULL, 10); break;
    case ARG_FLOAT: *(float *)s->target = (float)v; break;
    case ARG_DOUBLE: *(double *)s->target = v; break;
    default: break;
    }
    return 0;
}

int args_parse(const char *cmd, int argc, char **argv, int first, arg_spec *specs, int n) {
    return args_parse_positional(cmd, argc, argv, first, specs, n, NULL, 0, NULL);
}

int args_parse_positional(const char *cmd, int argc, char **argv, int first, arg_spec *specs,
                          int n, const char **pos, int max_pos, int *n_pos) {
    bool flags_end = false; /* after "--" every argument is positional */
    if (n_pos) *n_pos = 0;
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        bool positional = max_pos > 0 && (flags_end || arg[0] != '-');
        if (max_pos > 0 && !flags_end && strcmp(arg, "--") == 0) {
            flags_end = true;
            continue;
        }
        if (positional) {
            if (*n_pos == max_pos) {
                fprintf(stderr, "strix %s: unexpected argument '%s' (it takes %d argument%s "
                                "besides the flags; see strix %s --help)\n", cmd, arg, max_pos,
                        max_pos == 1 ? "" : "s", cmd);
                return 2;
            }
            pos[(*n_pos)++] = arg;
            continue;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) return 1;
        if (strncmp(arg, "--", 2) != 0 || !arg[2]) {
            fprintf(stderr, "strix %s: unexpected argument '%s' (flags start with --; see "
                            "strix %s --help)\n", cmd, arg, cmd);
            return 2;
        }
        char name[64];
        const char *eq = strchr(arg + 2, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (len >= sizeof name) len = sizeof name - 1;
        memcpy(name, arg + 2, len);
        name[len] = '\0';
        arg_spec *s = args_find(specs, n, name);
        if (!s) {
            fprintf(stderr, "strix %s: unknown flag --%s (see strix %s --help)\n", cmd, name, cmd);
            return 2;
        }
        if (s->kind == ARG_SWITCH) {
            if (eq) {
                fprintf(stderr, "strix %s: --%s takes no value\n", cmd, name);
                return 2;
            }
            *(bool *)s->target = true;
        } else {
            const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!value) {
                fprintf(stderr, "strix %s: --%s needs a value\n", cmd, name);
                return 2;
            }
            int rc = set_value(cmd, s, value);
            if (rc) return rc;
        }
        s->seen = true;
    }
    return 0;
}

static void print_specs(FILE *out, const arg_spec *specs, int n, bool hidden) {
    for (int i = 0; i < n; i++) {
        const arg_spec *s = &specs[i];
        if (s->hidden != hidden) continue;
        char left[64];
        if (s->kind == ARG_SWITCH)
            snprintf(left, sizeof left, "--%s", s->name);
        else
            snprintf(left, sizeof left, "--%s %s", s->name, s->meta ? s->meta : "X");
        fprintf(out, "  %-24s %s\n", left, s->help);
    }
}

void args_print_help(FILE *out, const arg_spec *specs, int n) {
    fprintf(out, "Flags (also --name=value):\n");
    print_specs(out, specs, n, false);
    bool any_hidden = false;
    for (int i = 0; i < n; i++) any_hidden |= specs[i].hidden;
    if (any_hidden) {
        fprintf(out, "Testing:\n");
        print_specs(out, specs, n, true);
    }
    fprintf(out, "  %-24s %s\n", "--help", "this text");
}

void args_format_float(char *buf, size_t cap, float x) {
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, cap, "%.*g", digits, (double)x);
        if (strtof(buf, NULL) == x || isnan(x)) return;
    }
}

void args_format_double(char *buf, size_t cap, double x) {
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, cap, "%.*g", digits, x);
        if (strtod(buf, NULL) == x || isnan(x)) return;
    }
}

void args_format_value(const arg_spec *s, char *buf, size_t cap) {
    switch (s->kind) {
    case ARG_SWITCH: snprintf(buf, cap, "%s", *(bool *)s->target ? "on" : "off"); break;
    case ARG_INT: snprintf(buf, cap, "%d", *(int *)s->target); break;
    case ARG_I64: snprintf(buf, cap, "%" PRId64, *(int64_t *)s->target); break;
    case ARG_U64: snprintf(buf, cap, "%" PRIu64, *(uint64_t *)s->target); break;
    case ARG_FLOAT: args_format_float(buf, cap, *(float *)s->target); break;
    case ARG_DOUBLE: args_format_double(buf, cap, *(double *)s->target); break;
    case ARG_STRING: {
        const char *v = *(const char **)s->target;
        snprintf(buf, cap, "%s", v ? v : "");
        break;
    }
    }
}

/* True for "cpu", "cuda", "hip", "cuda:N", "hip:N" (N decimal digits). */
static bool device_name_ok(const char *d) {
    if (strcmp(d, "cpu") == 0) return true;
    size_t p = strncmp(d, "cuda", 4) == 0 ? 4 : strncmp(d, "hip", 3) == 0 ? 3 : 0;
    if (p == 0) return false;
    if (d[p] == '\0') return true;
    if (d[p] != ':' || d[p + 1] == '\0' || strlen(d + p + 1) > 4) return false;
    for (const char *c = d + p + 1; *c; c++)
        if (*c < '0' || *c > '9') return false;
    return true;
}

int args_backend_of(const char *cmd, const char *device, const char *backend,
                    const char **name) {
    if (device && !device_name_ok(device)) {
        fprintf(stderr, "strix %s: --device takes cpu, cuda, cuda:N, hip or hip:N (got '%s')\n",
                cmd, device);
        return 2;
    }
    if (device && strcmp(device, "cpu") != 0) {
        if (backend) {
            fprintf(stderr, "strix %s: --backend %s picks a CPU backend; it cannot go with "
                            "--device %s\n", cmd, backend, device);
            return 2;
        }
        *name = device;
        return 0;
    }
    *name = backend ? backend : "cpu";
    return 0;
}
