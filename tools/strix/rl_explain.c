/*
 * rl_explain.c - `strix rl explain`: which observation features drove an agent's action, by LRP
 * through its policy or Q-network (strix_agent_explain).
 *
 *   one observation (--obs x,y,... or the first of an episode): a table of the features, their
 *     values, relevances and shares, the action and the explained output; --svg draws the bars;
 *   --episode: one greedy episode, every step explained; the table of the mean |relevance| per
 *     feature and --svg a plot of each feature's relevance over the episode's steps, with the
 *     actions beneath.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "explain/heatmap.h"
#include "rl_tool.h"
#include "tool.h"

static const char *const colours[STRIX_ENV_MAX_OBS] = {"#1b9e77", "#d95f02", "#7570b3",
                                                       "#e7298a"};

static void action_text(const strix_env_spec *s, const float *action, char *buf, size_t cap) {
    if (s->n_actions > 0)
        snprintf(buf, cap, "%d (%s)", (int)action[0], s->action_names[(int)action[0]]);
    else
        snprintf(buf, cap, "%s %.3f", s->action_names[0], (double)action[0]);
}

/* The bar chart of one explanation. */
static int bars_svg(FILE *f, const strix_env_spec *s, const float *obs, const float *rel,
                    const char *title) {
    int n = s->obs_dim;
    double W = 640, row = 34, top = 50, H = top + row * n + 30, mid = 400, half = 200;
    float m = 0.0f;
    for (int i = 0; i < n; i++) m = fmaxf(m, fabsf(rel[i]));
    if (m <= 0.0f) m = 1.0f;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- " RL_OUTPUT_MARKER " -->\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"DejaVu Sans\" font-size=\"13\">\n<rect width=\"100%%\" "
               "height=\"100%%\" fill=\"#fff\"/>\n<text x=\"12\" y=\"26\" font-size=\"14\">",
            W, H);
    heat_xml_text(f, title);
    fputs("</text>\n", f);
    for (int i = 0; i < n; i++) {
        double y = top + row * i, len = fabs(rel[i]) / m * (half - 10);
        fprintf(f, "<text x=\"12\" y=\"%.0f\">", y + 18);
        heat_xml_text(f, s->obs_names[i]);
        fprintf(f, " = %.3f</text>\n<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"22\" "
                   "fill=\"%s\"/>\n<text x=\"%.0f\" y=\"%.0f\" fill=\"#444\" font-size=\"11\">"
                   "%+.4g</text>\n", (double)obs[i], rel[i] >= 0 ? mid : mid - len, y + 4, len,
                rel[i] >= 0 ? "#d7301f" : "#2166ac", rel[i] >= 0 ? mid - 60 : mid + 6, y + 19,
                (double)rel[i]);
    }
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#888\"/>\n"
               "<text x=\"12\" y=\"%.0f\" fill=\"#666\" font-size=\"11\">red: for the action, "
               "blue: against it (LRP: gamma rule in the hidden layers, epsilon at the output)"
               "</text>\n</svg>\n",
            mid, top, mid, top + row * n, H - 10);
    return ferror(f) ? 1 : 0;
}

/* Relevance of every feature over an episode (rel: steps x obs_dim), actions beneath. */
static int episode_svg(FILE *f, const strix_env_spec *s, const float *rel, const float *act,
                       int steps, const char *title) {
    int n = s->obs_dim;
    double W = 760, H = 420, L = 60, R = 170, T = 40, B = 70;
    double lo = 0, hi = 0;
    for (int i = 0; i < steps * n; i++) {
        lo = fmin(lo, rel[i]);
        hi = fmax(hi, rel[i]);
    }
    if (hi - lo < 1e-12) hi = lo + 1;
    double xs = steps > 1 ? (W - L - R) / (steps - 1) : 0;
#define PY(v) (T + (hi - (v)) / (hi - lo) * (H - T - B))
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- " RL_OUTPUT_MARKER " -->\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"DejaVu Sans\" font-size=\"12\">\n<rect width=\"100%%\" "
               "height=\"100%%\" fill=\"#fff\"/>\n<text x=\"%.0f\" y=\"24\" font-size=\"14\">",
            W, H, L);
    heat_xml_text(f, title);
    fprintf(f, "</text>\n<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#aaa\"/>"
               "\n<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#444\">0</text>\n"
               "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#444\">%.3g</text>\n"
               "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#444\">%.3g</text>\n",
            L, PY(0), W - R, PY(0), L - 6, PY(0) + 4, L - 6, PY(hi) + 4, hi, L - 6, PY(lo) + 4,
            lo);
    for (int j = 0; j < n; j++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                colours[j]);
        for (int t = 0; t < steps; t++)
            fprintf(f, "%.1f,%.1f ", L + xs * t, PY(rel[(size_t)t * (size_t)n + (size_t)j]));
        fprintf(f, "\"/>\n<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">", W - R + 10, T + 16 + 18 * j,
                colours[j]);
        heat_xml_text(f, s->obs_names[j]);
        fputs("</text>\n", f);
    }
    double ay = H - B + 14; /* the actions: a strip of ticks */
    for (int t = 0; t < steps; t++) {
        double v = s->n_actions > 0 ? act[t] / (double)(s->n_actions - 1)
                                    : (act[t] - s->action_low) / (s->action_high - s->action_low);
        /* from blue (#2166ac, low) to red (#d7301f, high) */
        int r = (int)lrint(0x21 + v * (0xd7 - 0x21)), g = (int)lrint(0x66 + v * (0x30 - 0x66)),
            b = (int)lrint(0xac + v * (0x1f - 0xac));
        fprintf(f, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.2f\" height=\"14\" "
                   "fill=\"#%02x%02x%02x\"/>\n", L + xs * t - xs / 2, ay, xs > 1 ? xs : 1.0, r, g, b);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#444\">action (%s: blue, %s: red)</text>\n"
               "<text x=\"%.0f\" y=\"%.0f\" fill=\"#444\" text-anchor=\"middle\">step of the "
               "episode (%d)</text>\n</svg>\n", W - R + 10, ay + 11,
            s->n_actions > 0 ? s->action_names[0] : "low",
            s->n_actions > 0 ? s->action_names[1] : "high", (L + W - R) / 2, H - 16, steps);
#undef PY
    return ferror(f) ? 1 : 0;
}

static strix_status write_svg(const char *path, int (*draw)(FILE *, void *), void *ctx) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return strix_error(STRIX_ERR_ALLOC, "out of memory");
    int bad = draw(f, ctx);
    if (fclose(f) != 0 || bad) {
        free(buf);
        return strix_error(STRIX_ERR_ALLOC, "cannot render %s", path);
    }
    const void *chunks[1] = {buf};
    strix_status st = strix_write_file_atomic(path, chunks, &len, 1);
    free(buf);
    return st;
}

typedef struct draw_ctx {
    const strix_env_spec *s;
    const float *obs, *rel, *act;
    int steps;
    const char *title;
} draw_ctx;

static int draw_bars(FILE *f, void *c) {
    draw_ctx *d = c;
    return bars_svg(f, d->s, d->obs, d->rel, d->title);
}
static int draw_episode(FILE *f, void *c) {
    draw_ctx *d = c;
    return episode_svg(f, d->s, d->rel, d->act, d->steps, d->title);
}

/* Parses "x,y,..." into exactly n finite floats within ±1e6 (far beyond any state the
 * environments reach; larger ones overflow the networks' sums). */
static int parse_obs(const char *text, int n, float *obs) {
    const char *p = text;
    for (int i = 0; i < n; i++) {
        char *end = NULL;
        obs[i] = strtof(p, &end);
        if (end == p || !isfinite(obs[i]) || fabsf(obs[i]) > 1e6f) return 1;
        p = end;
        if (i < n - 1) {
            if (*p != ',') return 1;
            p++;
        }
    }
    return *p ? 1 : 0;
}

static int explain_one(strix_agent *a, const float *obs, const char *svg) {
    const strix_env_spec *s = strix_env_spec_of(strix_agent_config_of(a)->env);
    float rel[STRIX_ENV_MAX_OBS], action[STRIX_ENV_MAX_OBS], out = 0;
    strix_status st = strix_agent_explain(a, obs, NULL, rel, action, &out);
    if (st != STRIX_OK) return tool_fail(st);
    char at[64];
    action_text(s, action, at, sizeof at);
    const strix_agent_config *c = strix_agent_config_of(a);
    const char *what = c->algo == STRIX_ALGO_DQN ? "Q-value"
                       : c->algo == STRIX_ALGO_SAC ? "pre-tanh mean" : "logit";
    double sum = 0, tot = 0;
    for (int i = 0; i < s->obs_dim; i++) {
        sum += rel[i];
        tot += fabs(rel[i]);
    }
    if (s->n_actions == 2) {
        float other = 1.0f - action[0];
        char ot[64];
        action_text(s, &other, ot, sizeof ot);
        printf("action %s rather than %s: %s difference %.4f; relevance sum %.4f\n", at, ot,
               what, (double)out, sum);
    } else if (s->n_actions > 2) {
        printf("action %s rather than the best other: %s difference %.4f; relevance sum %.4f\n",
               at, what, (double)out, sum);
    } else {
        printf("action %s; its pre-tanh mean, along the action, %.4f; relevance sum %.4f\n",
               at, (double)out, sum);
    }
    printf("%-22s %10s %11s %7s\n", "feature", "value", "relevance", "share");
    for (int i = 0; i < s->obs_dim; i++) {
        double share = tot > 0 ? 100.0 * fabs(rel[i]) / tot : 0.0;
        char bar[32] = "";
        int k = (int)lrint(share / 5.0);
        for (int j = 0; j < k && j < 20; j++) bar[j] = rel[i] >= 0 ? '+' : '-';
        printf("%-22s %10.4f %+11.4f %6.1f%% %s\n", s->obs_names[i], (double)obs[i],
               (double)rel[i], share, bar);
    }
    if (svg) {
        char title[160];
        snprintf(title, sizeof title, "%s on %s: why action %s", strix_rl_algo_name(c->algo),
                 rl_env_label(c->env), at);
        draw_ctx d = {.s = s, .obs = obs, .rel = rel, .title = title};
        st = write_svg(svg, draw_bars, &d);
        if (st != STRIX_OK) return tool_fail(st);
        printf("wrote %s\n", svg);
    }
    return 0;
}

static int explain_episode(strix_agent *a, uint64_t seed, const char *svg) {
    const strix_agent_config *c = strix_agent_config_of(a);
    const strix_env_spec *s = strix_env_spec_of(c->env);
    int n = s->obs_dim, cap = s->max_steps;
    float *rel = malloc(sizeof(float) * (size_t)cap * (size_t)n);
    float *act = malloc(sizeof(float) * (size_t)cap);
    if (!rel || !act) {
        free(rel);
        free(act);
        return tool_fail(strix_error(STRIX_ERR_ALLOC, "out of memory"));
    }
    strix_env env;
    strix_env_init(&env, c->env, seed);
    float obs[STRIX_ENV_MAX_OBS], action[STRIX_ENV_MAX_OBS], out;
    strix_env_reset(&env, obs);
    bool term = false, trunc = false;
    double ret = 0;
    int steps = 0, rc = 0;
    while (!term && !trunc) {
        double r = 0;
        strix_status st = strix_agent_explain(a, obs, NULL, rel + (size_t)steps * (size_t)n,
                                              action, &out);
        if (st == STRIX_OK) st = strix_env_step(&env, action, obs, &r, &term, &trunc);
        if (st != STRIX_OK) {
            rc = tool_fail(st);
            break;
        }
        act[steps++] = action[0];
        ret += r;
    }
    if (rc == 0) {
        printf("episode of %d steps (seed %llu), return %.2f; mean |relevance| per feature:\n",
               steps, (unsigned long long)seed, ret);
        for (int j = 0; j < n; j++) {
            double m = 0;
            for (int t = 0; t < steps; t++) m += fabs(rel[(size_t)t * (size_t)n + (size_t)j]);
            printf("  %-22s %.4f\n", s->obs_names[j], m / steps);
        }
        if (svg) {
            char title[160];
            snprintf(title, sizeof title, "%s on %s: relevance of each feature over an episode",
                     strix_rl_algo_name(c->algo), rl_env_label(c->env));
            draw_ctx d = {.s = s, .rel = rel, .act = act, .steps = steps, .title = title};
            strix_status st = write_svg(svg, draw_episode, &d);
            if (st != STRIX_OK) rc = tool_fail(st);
            else printf("wrote %s\n", svg);
        }
    }
    free(rel);
    free(act);
    return rc;
}

int cmd_rl_explain(int argc, char **argv) {
    const char *agent = NULL, *obs_text = NULL, *svg = NULL;
    bool episode = false;
    uint64_t seed = RL_EVAL_SEED;
    int threads = 0;
    arg_spec specs[] = {
        FLAG("agent", ARG_STRING, &agent, 0, 0, 0, "FILE", "agent file (required)"),
        FLAG("obs", ARG_STRING, &obs_text, 0, 0, 0, "X,Y,..",
             "the observation to explain (default: an episode's first, from --seed)"),
        FLAG("episode", ARG_SWITCH, &episode, 0, 0, 0, NULL,
             "explain every step of one greedy episode"),
        FLAG("seed", ARG_U64, &seed, 0, 1e300, 0, "S", "seed of the episode's start (default 12345)"),
        FLAG("svg", ARG_STRING, &svg, 0, 0, 0, "FILE", "draw the explanation (default none)"),
        FLAG("threads", ARG_INT, &threads, 0, 4096, 0, "N", "CPU threads (default 1)"),
    };
    int n = (int)(sizeof specs / sizeof *specs);
    int rc = args_parse("rl explain", argc, argv, 3, specs, n);
    if (rc == 1) {
        printf("strix rl explain - which observation features drove an agent's action (LRP)\n\n"
               "Usage: strix rl explain --agent FILE [--obs X,Y,.. | --episode] [--svg FILE]\n\n");
        args_print_help(stdout, specs, n);
        return 0;
    }
    if (rc) return rc;
    if (episode && obs_text) {
        fprintf(stderr, "strix rl explain: --obs and --episode exclude each other\n");
        return 2;
    }
    if (obs_text && args_find(specs, n, "seed")->seen) {
        fprintf(stderr, "strix rl explain: --seed picks the episode to start from; it does "
                        "nothing with --obs\n");
        return 2;
    }
    if (svg && agent && (rc = rl_check_picture("explain", "--svg", svg, agent)) != 0) return rc;
    strix_backend *be = NULL;
    strix_agent *a = NULL;
    if ((rc = rl_load_agent("explain", agent, threads, &be, &a)) == 0) {
        const strix_env_spec *s = strix_env_spec_of(strix_agent_config_of(a)->env);
        float obs[STRIX_ENV_MAX_OBS];
        if (episode) {
            rc = explain_episode(a, seed, svg);
        } else if (obs_text && parse_obs(obs_text, s->obs_dim, obs) != 0) {
            fprintf(stderr, "strix rl explain: --obs needs %d comma-separated numbers within "
                            "+-1e6 for %s (got '%s')\n", s->obs_dim,
                    rl_env_label(strix_agent_config_of(a)->env), obs_text);
            rc = 2;
        } else {
            if (!obs_text) {
                strix_env env;
                strix_env_init(&env, strix_agent_config_of(a)->env, seed);
                strix_env_reset(&env, obs);
            }
            rc = explain_one(a, obs, svg);
        }
    }
    strix_agent_free(a);
    strix_backend_free(be);
    return rc;
}
