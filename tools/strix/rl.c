/*
 * rl.c - `strix rl`: train an agent (strix/rl.h) with a live progress line, atomic checkpoints
 * and a Ctrl-C that saves; evaluate a saved agent; draw its learning curve. `strix rl explain`
 * is rl_explain.c.
 *
 *   strix rl train --env ENV --algo ALGO [--steps N] [--seed S] [--out agent.safetensors] [...]
 *   strix rl eval --agent FILE [--episodes 100] [--seed S]
 *   strix rl plot --agent FILE --svg curve.svg
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "explain/heatmap.h"
#include "out_file.h"
#include "rl_tool.h"
#include "strix/rl.h"
#include "tool.h"

// ---- the learning curve --------------------------------------------------------------------------

const char *rl_env_label(strix_env_kind kind) {
    return kind == STRIX_ENV_CARTPOLE_CONTINUOUS ? "continuous CartPole"
                                                 : strix_env_spec_of(kind)->gym_id;
}

/* A "nice" tick step for a span (1, 2 or 5 times a power of ten, about 5 ticks). */
static double tick_step(double span) {
    double raw = span / 5.0, p = pow(10.0, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1.0 : m < 3.5 ? 2.0 : m < 7.5 ? 5.0 : 10.0) * p;
}

int rl_curve_svg(FILE *f, const strix_rl_episode *ep, int64_t n, int64_t steps,
                 const char *title) {
    const double W = 720, H = 420, L = 70, R = 20, T = 40, B = 50;
    double xmax = steps > 10 ? (double)steps : 10.0, ylo = 0.0, yhi = 1.0;
    for (int64_t i = 0; i < n; i++) { /* the returns' own range */
        if ((double)ep[i].step > xmax) xmax = (double)ep[i].step;
        if (i == 0 || ep[i].ret < ylo) ylo = ep[i].ret;
        if (i == 0 || ep[i].ret > yhi) yhi = ep[i].ret;
    }
    if (yhi - ylo < 1e-9) {
        ylo -= 0.5;
        yhi += 0.5;
    }
    double xs = tick_step(xmax), ys = tick_step(yhi - ylo);
    xmax = ceil(xmax / xs) * xs;
    ylo = floor(ylo / ys) * ys;
    yhi = ceil(yhi / ys) * ys;
#define PX(x) (L + (x) / xmax * (W - L - R))
#define PY(y) (H - B - ((y) - ylo) / (yhi - ylo) * (H - T - B))
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- " RL_OUTPUT_MARKER " -->\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans\" font-size=\"12\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n", W, H, W, H);
    fprintf(f, "<text x=\"%.0f\" y=\"24\" font-size=\"15\">", L);
    heat_xml_text(f, title);
    fputs("</text>\n<g stroke=\"#ddd\">\n", f);
    for (double x = 0; x <= xmax + xs / 2; x += xs)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>\n", PX(x), T, PX(x),
                H - B);
    for (double y = ylo; y <= yhi + ys / 2; y += ys)
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>\n", L, PY(y), W - R,
                PY(y));
    fputs("</g>\n<g fill=\"#444\" text-anchor=\"middle\">\n", f);
    for (double x = 0; x <= xmax + xs / 2; x += xs)
        fprintf(f, "<text x=\"%.1f\" y=\"%.0f\">%g</text>\n", PX(x), H - B + 16, x);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">environment steps</text>\n", (L + W - R) / 2,
            H - 12);
    fputs("</g>\n<g fill=\"#444\" text-anchor=\"end\">\n", f);
    for (double y = ylo; y <= yhi + ys / 2; y += ys)
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\">%g</text>\n", L - 6, PY(y) + 4, y);
    fprintf(f, "</g>\n<text transform=\"translate(16 %.0f) rotate(-90)\" text-anchor=\"middle\" "
               "fill=\"#444\">episode return</text>\n", (T + H - B) / 2);
    fputs("<g fill=\"#9ecae1\">\n", f); /* every episode */
    for (int64_t i = 0; i < n; i++)
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.5\"/>\n", PX((double)ep[i].step),
                PY(ep[i].ret));
    fputs("</g>\n", f);
    if (n > 0) { /* the mean of the last 100 episodes */
        fputs("<polyline fill=\"none\" stroke=\"#08519c\" stroke-width=\"2\" points=\"", f);
        double sum = 0.0;
        for (int64_t i = 0; i < n; i++) {
            sum += ep[i].ret;
            if (i >= 100) sum -= ep[i - 100].ret;
            double m = sum / (double)(i < 100 ? i + 1 : 100);
            fprintf(f, "%.1f,%.1f ", PX((double)ep[i].step), PY(m));
        }
        fputs("\"/>\n", f);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#08519c\" text-anchor=\"end\">mean of the "
               "last 100 episodes</text>\n</svg>\n", W - R, T + 14);
#undef PX
#undef PY
    return ferror(f) ? 1 : 0;
}

/* Writes the agent's learning curve to path atomically. */
static strix_status write_curve(strix_agent *a, const char *path) {
    /* checked again at every write: the file may have appeared since the run started */
    if (access(path, F_OK) == 0 && !tool_file_replaceable(path, RL_OUTPUT_MARKER))
        return strix_error(STRIX_ERR_IO, "%s exists and is not a picture strix rl drew; "
                           "refusing to replace it", path);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return strix_error(STRIX_ERR_ALLOC, "out of memory");
    int64_t n = 0;
    const strix_rl_episode *ep = strix_agent_episodes(a, &n);
    const strix_agent_config *c = strix_agent_config_of(a);
    char title[160];
    snprintf(title, sizeof title, "%s on %s (seed %" PRIu64 "): %" PRId64 " episodes",
             strix_rl_algo_name(c->algo), rl_env_label(c->env), c->seed, n);
    int bad = rl_curve_svg(f, ep, n, strix_agent_progress(a).steps, title);
    if (fclose(f) != 0 || bad) {
        free(buf);
        return strix_error(STRIX_ERR_ALLOC, "cannot render the curve");
    }
    const void *chunks[1] = {buf};
    strix_status st = strix_write_file_atomic(path, chunks, &len, 1);
    free(buf);
    return st;
}

int rl_check_picture(const char *cmd, const char *flag, const char *path, const char *keep) {
    struct stat sb;
    if (!path[0]) {
        fprintf(stderr, "strix rl %s: %s must not be empty\n", cmd, flag);
        return 2;
    }
    if (keep && out_same_file(path, keep)) {
        fprintf(stderr, "strix rl %s: %s '%s' is the agent file itself; give the picture "
                        "another name\n", cmd, flag, path);
        return 2;
    }
    if (stat(path, &sb) == 0) {
        if (!S_ISREG(sb.st_mode)) {
            fprintf(stderr, "strix rl %s: %s '%s' is %s; give a file name such as curve.svg\n",
                    cmd, flag, path, S_ISDIR(sb.st_mode) ? "a directory" : "not a regular file");
            return 2;
        }
        if (!tool_file_replaceable(path, RL_OUTPUT_MARKER)) {
            fprintf(stderr, "strix rl %s: %s '%s' exists and is not a picture strix rl drew; "
                            "refusing to replace it (choose another name)\n", cmd, flag, path);
            return 2;
        }
    }
    char dir[STRIX_PATH_MAX];
    out_parent_of(path, dir, sizeof dir);
    if (access(dir, W_OK) != 0) {
        fprintf(stderr, "strix rl %s: cannot write %s '%s': %s: %s\n", cmd, flag, path, dir,
                strerror(errno));
        return 2;
    }
    return 0;
}

/* Refuses an --out that is not a strix agent file (a checkpoint, a corpus, a directory), and an
 * agent file unless `replace` (--force). 0 when it may be written. */
static int check_out(const char *out, bool replace) {
    struct stat sb;
    if (stat(out, &sb) != 0) {
        char dir[STRIX_PATH_MAX];
        out_parent_of(out, dir, sizeof dir);
        if (access(dir, W_OK) != 0) {
            fprintf(stderr, "strix rl train: cannot write --out '%s': %s: %s\n", out, dir,
                    strerror(errno));
            return 2;
        }
        return 0;
    }
    if (S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "strix rl train: --out '%s' is a directory; give a file name such as "
                        "agent.safetensors\n", out);
        return 2;
    }
    if (S_ISREG(sb.st_mode) && sb.st_size == 0) return 0;
    if (!S_ISREG(sb.st_mode) || strix_agent_probe(out, NULL, 0) != STRIX_OK) {
        fprintf(stderr, "strix rl train: --out '%s' exists and is not a strix agent file; "
                        "refusing to replace it (choose another --out)\n", out);
        return 2;
    }
    if (!replace) {
        fprintf(stderr, "strix rl train: %s holds an agent; continue it with --resume or "
                        "replace it with --force\n", out);
        return 2;
    }
    return 0;
}

// ---- train -------------------------------------------------------------------------------------

typedef struct train_flags {
    const char *env, *algo, *out, *curve, *backend;
    int64_t steps;
    uint64_t seed;
    int threads, hidden, envs, eval_episodes, batch;
    float lr, gamma, save_every;
    int64_t learning_starts;
    bool resume, force, quiet, double_q;
} train_flags;

static void print_train_help(const arg_spec *s, int n) {
    printf("strix rl train - train a reinforcement-learning agent\n\n"
           "Usage: strix rl train --env ENV --algo ALGO [flags]\n\n"
           "  ENV:  cartpole (CartPole-v1), cartpole-continuous, pendulum (Pendulum-v1)\n"
           "  ALGO: dqn, reinforce, a2c, ppo (discrete actions), sac (continuous actions)\n"
           "The defaults are CleanRL's hyper-parameters (docs/RL.md). The agent file holds the\n"
           "whole run: Ctrl-C saves it, --resume continues it bit for bit.\n\n");
    args_print_help(stdout, s, n);
}

/* The progress line: steps, episodes, mean return of the last 100, loss, speed, ETA. */
static void progress(strix_agent *a, double t0, int64_t first, bool tty, bool final) {
    strix_rl_progress p = strix_agent_progress(a);
    const strix_agent_config *c = strix_agent_config_of(a);
    double dt = tool_now() - t0, sps = dt > 0 ? (double)(p.steps - first) / dt : 0.0;
    double eta = sps > 0 ? (double)(c->total_steps - p.steps) / sps : 0.0;
    char ret[32] = "-";
    if (!isnan(p.mean_return)) snprintf(ret, sizeof ret, "%.1f", p.mean_return);
    printf("%sstep %" PRId64 "/%" PRId64 "  episodes %" PRId64 "  return(100) %s  "
           "loss %.4g  %.0f steps/s  ETA %.0fs%s", tty ? "\r" : "", p.steps, c->total_steps,
           p.episodes, ret, p.last_loss, sps, eta < 0 ? 0.0 : eta, tty && !final ? "   " : "\n");
    fflush(stdout);
}

/* Saves the agent and, when `curve` is set and has not failed yet (*curve_failed), the
 * learning curve. A failed curve is said once, in one line, and the run goes on (the agent is
 * what matters; the exit status will say it). Returns 0, or 1 when the agent was not saved. */
static int save_agent(strix_agent *a, const char *out, const char *curve, bool *curve_failed) {
    out_save_guard g;
    out_save_begin(&g);
    strix_status st = strix_agent_save(a, out);
    strix_status cst = STRIX_OK;
    if (st == STRIX_OK && curve && !*curve_failed) cst = write_curve(a, curve);
    out_save_end(&g);
    if (st != STRIX_OK) return tool_fail(st);
    if (cst != STRIX_OK) {
        fprintf(stderr, "strix rl train: the learning curve was not written (the agent is saved "
                        "in %s): %s\n", out, strix_last_error());
        *curve_failed = true;
    }
    return 0;
}

/* A stop signal during the final evaluation (the agent is saved by then): one line, then the
 * signal's default action. */
static void eval_stopped(int sig) {
    static const char msg[] = "\nstrix: evaluation stopped; the agent was saved before it\n";
    ssize_t unused = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)unused;
    signal(sig, SIG_DFL);
    raise(sig);
}

static int cmd_rl_train(int argc, char **argv) {
    train_flags f = {.out = "agent.safetensors", .seed = 1, .save_every = 30.0f,
                     .eval_episodes = 100};
    arg_spec specs[] = {
        FLAG("env", ARG_STRING, &f.env, 0, 0, 0, "ENV",
             "cartpole, cartpole-continuous or pendulum (required)"),
        FLAG("algo", ARG_STRING, &f.algo, 0, 0, 0, "ALGO",
             "dqn, reinforce, a2c, ppo or sac (required)"),
        FLAG("steps", ARG_I64, &f.steps, 1, 1e12, 0, "N",
             "environment steps (default 500000; sac 50000)"),
        FLAG("seed", ARG_U64, &f.seed, 0, 1e300, 0, "S", "seed of the whole run (default 1)"),
        FLAG("out", ARG_STRING, &f.out, 0, 0, 0, "PATH",
             "agent file, saved atomically (default agent.safetensors)"),
        FLAG("resume", ARG_SWITCH, &f.resume, 0, 0, 0, NULL,
             "continue the run saved in --out (its settings come from the file)"),
        FLAG("force", ARG_SWITCH, &f.force, 0, 0, 0, NULL, "replace an existing --out"),
        FLAG("curve", ARG_STRING, &f.curve, 0, 0, 0, "SVG",
             "learning curve (return against steps), written with each save (default none)"),
        FLAG("save-every", ARG_FLOAT, &f.save_every, 0, 1e9, 0, "SEC",
             "seconds between saves (default 30; 0: only at the start and the end)"),
        FLAG("eval", ARG_INT, &f.eval_episodes, 0, 100000, 0, "N",
             "greedy evaluation episodes at the end (default 100; 0: none)"),
        FLAG("hidden", ARG_INT, &f.hidden, 1, 4096, 0, "H",
             "width of both hidden layers (default: the algorithm's)"),
        FLAG("lr", ARG_FLOAT, &f.lr, 0, 1, 1, "LR", "learning rate (default: the algorithm's)"),
        FLAG("gamma", ARG_FLOAT, &f.gamma, 0, 1, 0, "G", "discount (default 0.99)"),
        FLAG("envs", ARG_INT, &f.envs, 1, 1024, 0, "N",
             "environments (on-policy; default: the algorithm's)"),
        FLAG("batch", ARG_INT, &f.batch, 1, 65536, 0, "B",
             "replay batch (dqn, sac; default: the algorithm's)"),
        FLAG("learning-starts", ARG_I64, &f.learning_starts, 0, 1e12, 0, "N",
             "random steps before the first update (dqn, sac)"),
        FLAG("double-q", ARG_SWITCH, &f.double_q, 0, 0, 0, NULL, "dqn: Double DQN targets"),
        FLAG("quiet", ARG_SWITCH, &f.quiet, 0, 0, 0, NULL, "no progress line"),
        FLAG("threads", ARG_INT, &f.threads, 0, 4096, 0, "N", "CPU threads (default 1)"),
        FLAG("backend", ARG_STRING, &f.backend, 0, 0, 0, "NAME",
             "cpu or cpu-blas (default cpu)"),
    };
    int n = (int)(sizeof specs / sizeof *specs);
    int rc = args_parse("rl train", argc, argv, 3, specs, n);
    if (rc == 1) {
        print_train_help(specs, n);
        return 0;
    }
    if (rc) return rc;
    if (!f.out[0]) {
        fprintf(stderr, "strix rl train: --out must not be empty\n");
        return 2;
    }
    static const char *const run_flags[] = {"env", "algo", "steps", "seed", "hidden", "lr",
                                            "gamma", "envs", "batch", "learning-starts",
                                            "double-q"};
    strix_agent_config cfg;
    if (f.resume) {
        for (size_t i = 0; i < sizeof run_flags / sizeof *run_flags; i++)
            if (args_find(specs, n, run_flags[i])->seen) {
                fprintf(stderr, "strix rl train: --%s cannot change a resumed run (its settings "
                                "come from %s)\n", run_flags[i], f.out);
                return 2;
            }
    } else {
        if (!f.env || !f.algo) {
            fprintf(stderr, "strix rl train: --env and --algo are required (e.g. --env "
                            "cartpole --algo ppo)\n");
            return 2;
        }
        strix_env_kind env;
        strix_rl_algo algo;
        if (strix_env_kind_of(f.env, &env) != STRIX_OK ||
            strix_rl_algo_of(f.algo, &algo) != STRIX_OK ||
            strix_agent_defaults(algo, env, f.seed, &cfg) != STRIX_OK) {
            fprintf(stderr, "strix rl train: %s\n", strix_last_error());
            return 2;
        }
        if (f.steps) cfg.total_steps = f.steps;
        if (f.hidden) cfg.hidden[0] = cfg.hidden[1] = f.hidden;
        if (f.lr > 0) cfg.lr = f.lr;
        if (args_find(specs, n, "gamma")->seen) cfg.gamma = f.gamma;
        if (f.envs) cfg.n_envs = f.envs;
        if (f.batch) cfg.batch_size = f.batch;
        if (args_find(specs, n, "learning-starts")->seen) cfg.learning_starts = f.learning_starts;
        if (f.double_q) cfg.double_q = true;
        if (strix_agent_config_check(&cfg) != STRIX_OK) {
            fprintf(stderr, "strix rl train: %s\n", strix_last_error());
            return 2;
        }
        if ((rc = check_out(f.out, f.force)) != 0) return rc;
        /* flags of some algorithms only: refused elsewhere rather than ignored */
        static const struct { const char *flag, *algos; } only[] = {
            {"batch", "dqn and sac"}, {"learning-starts", "dqn and sac"}, {"double-q", "dqn"},
            {"envs", "reinforce, a2c and ppo"}};
        for (size_t i = 0; i < sizeof only / sizeof *only; i++)
            if (args_find(specs, n, only[i].flag)->seen && !strstr(only[i].algos, f.algo)) {
                fprintf(stderr, "strix rl train: --%s applies to %s, not %s\n", only[i].flag,
                        only[i].algos, f.algo);
                return 2;
            }
    }
    if (f.curve && (rc = rl_check_picture("train", "--curve", f.curve, f.out)) != 0) return rc;
    char file_backend[64] = "";
    if (f.resume) { /* the run continues on the backend that ran it */
        strix_status ps = strix_agent_probe(f.out, file_backend, sizeof file_backend);
        if (ps != STRIX_OK) return tool_fail(ps);
        if (f.backend && file_backend[0] && strcmp(f.backend, file_backend) != 0) {
            fprintf(stderr, "strix rl train: %s was trained on backend %s; --backend %s would "
                            "change the resumed run (leave --backend out)\n", f.out,
                    file_backend, f.backend);
            return 2;
        }
        if (!f.backend && file_backend[0]) f.backend = file_backend;
    }
    out_lock lock = {.fd = -1};
    if ((rc = out_lock_take(&lock, f.out, "rl train")) != 0) return rc;
    tool_warn_threads(f.threads);
    strix_set_num_threads(f.threads ? f.threads : 1);
    strix_backend *be = NULL;
    strix_agent *a = NULL;
    strix_status st = tool_backend_init(f.backend ? f.backend : "cpu", &be);
    if (st == STRIX_OK) st = f.resume ? strix_agent_load(be, f.out, &a)
                                      : strix_agent_new(be, &cfg, &a);
    if (st != STRIX_OK) {
        rc = tool_fail(st);
        goto done;
    }
    bool curve_failed = false;
    if (!f.resume && (rc = save_agent(a, f.out, NULL, &curve_failed)) != 0)
        goto done; /* writable, step 0 */
    out_stop_signals_install();
    bool tty = isatty(STDOUT_FILENO) && !f.quiet;
    int64_t first = strix_agent_progress(a).steps;
    double t0 = tool_now(), last_save = t0, last_line = t0;
    while (!strix_agent_done(a) && !out_stop_signal) {
        if ((st = strix_agent_iterate(a)) != STRIX_OK) break;
        double now = tool_now();
        if (!f.quiet && now - last_line >= (tty ? 0.25 : 10.0)) {
            progress(a, t0, first, tty, false);
            last_line = now;
        }
        if (f.save_every > 0 && now - last_save >= f.save_every) {
            if ((rc = save_agent(a, f.out, f.curve, &curve_failed)) != 0) goto done;
            last_save = now;
        }
    }
    out_stop_signals_ignore();
    if (!f.quiet) progress(a, t0, first, tty, true);
    if (st != STRIX_OK) { /* the last save stands: report, keep it */
        fprintf(stderr, "strix: %s; the last save of %s is kept\n", strix_last_error(), f.out);
        rc = 1;
        goto done;
    }
    if ((rc = save_agent(a, f.out, f.curve, &curve_failed)) != 0) goto done;
    if (curve_failed) rc = 1;
    strix_rl_progress p = strix_agent_progress(a);
    char mean_text[32] = "n/a, no episode ended";
    if (!isnan(p.mean_return)) snprintf(mean_text, sizeof mean_text, "%.2f", p.mean_return);
    if (!strix_agent_done(a)) {
        printf("interrupted at step %" PRId64 " of %" PRId64 "; saved %s (continue with: strix "
               "rl train --resume --out %s)\n", p.steps, strix_agent_config_of(a)->total_steps,
               f.out, f.out);
        goto done;
    }
    /* the step at which the mean of the last 100 episodes first reached the task's threshold:
     * CartPole's reward_threshold in Gymnasium (475); Pendulum has none there, -250 is the
     * bar docs/RL.md uses */
    double threshold = strix_agent_config_of(a)->env == STRIX_ENV_PENDULUM ? -250.0 : 475.0;
    int64_t n_ep = 0, solved = -1;
    const strix_rl_episode *ep = strix_agent_episodes(a, &n_ep);
    double window = 0.0;
    for (int64_t i = 0; i < n_ep && solved < 0; i++) {
        window += ep[i].ret - (i >= 100 ? ep[i - 100].ret : 0.0);
        if (i >= 99 && window / 100.0 >= threshold) solved = ep[i].step;
    }
    if (solved >= 0)
        printf("return(100) first reached %g at step %" PRId64 "\n", threshold, solved);
    else
        printf("return(100) never reached %g\n", threshold);
    if (f.eval_episodes > 0) {
        /* the agent is saved: a stop signal now ends the evaluation at once, in one line */
        out_lock_release(&lock);
        fflush(stdout);
        signal(SIGINT, eval_stopped);
        signal(SIGTERM, eval_stopped);
        double mean = 0, sd = 0;
        st = strix_agent_evaluate(a, f.eval_episodes, RL_EVAL_SEED, NULL, &mean, &sd);
        if (st != STRIX_OK) {
            rc = tool_fail(st);
            goto done;
        }
        printf("done: %" PRId64 " steps, %" PRId64 " episodes (mean return of the last 100: "
               "%s), %.1f s; evaluation over %d episode%s: %.2f +- %.2f; saved %s\n", p.steps,
               p.episodes, mean_text, tool_now() - t0, f.eval_episodes,
               f.eval_episodes == 1 ? "" : "s", mean, sd, f.out);
    } else {
        printf("done: %" PRId64 " steps, %" PRId64 " episodes (mean return of the last 100: "
               "%s), %.1f s; saved %s\n", p.steps, p.episodes, mean_text, tool_now() - t0,
               f.out);
    }
done:
    strix_agent_free(a);
    strix_backend_free(be);
    out_lock_release(&lock);
    return rc;
}

// ---- eval and plot -----------------------------------------------------------------------------

int rl_load_agent(const char *cmd, const char *path, int threads, strix_backend **be,
                  strix_agent **a) {
    if (!path) {
        fprintf(stderr, "strix rl %s: --agent FILE is required\n", cmd);
        return 2;
    }
    tool_warn_threads(threads);
    strix_set_num_threads(threads ? threads : 1);
    strix_status st = tool_backend_init("cpu", be);
    if (st == STRIX_OK) st = strix_agent_load(*be, path, a);
    return st == STRIX_OK ? 0 : tool_fail(st);
}

static int cmd_rl_eval(int argc, char **argv) {
    const char *agent = NULL;
    int episodes = 100, threads = 0;
    uint64_t seed = RL_EVAL_SEED;
    arg_spec specs[] = {
        FLAG("agent", ARG_STRING, &agent, 0, 0, 0, "FILE", "agent file (required)"),
        FLAG("episodes", ARG_INT, &episodes, 1, 1000000, 0, "N", "episodes (default 100)"),
        FLAG("seed", ARG_U64, &seed, 0, 1e300, 0, "S", "seed of the episodes' starts (default 12345)"),
        FLAG("threads", ARG_INT, &threads, 0, 4096, 0, "N", "CPU threads (default 1)"),
    };
    int n = (int)(sizeof specs / sizeof *specs);
    int rc = args_parse("rl eval", argc, argv, 3, specs, n);
    if (rc == 1) {
        printf("strix rl eval - the mean and std of an agent's return over greedy episodes\n\n"
               "Usage: strix rl eval --agent FILE [--episodes N] [--seed S]\n\n");
        args_print_help(stdout, specs, n);
        return 0;
    }
    if (rc) return rc;
    strix_backend *be = NULL;
    strix_agent *a = NULL;
    if ((rc = rl_load_agent("eval", agent, threads, &be, &a)) == 0) {
        double mean = 0, sd = 0;
        strix_status st = strix_agent_evaluate(a, episodes, seed, NULL, &mean, &sd);
        if (st != STRIX_OK) {
            rc = tool_fail(st);
        } else {
            const strix_agent_config *c = strix_agent_config_of(a);
            printf("%s on %s, %" PRId64 " training steps: mean return over %d episode%s "
                   "%.2f +- %.2f\n", strix_rl_algo_name(c->algo),
                   rl_env_label(c->env), strix_agent_progress(a).steps, episodes,
                   episodes == 1 ? "" : "s", mean, sd);
        }
    }
    strix_agent_free(a);
    strix_backend_free(be);
    return rc;
}

static int cmd_rl_plot(int argc, char **argv) {
    const char *agent = NULL, *svg = NULL;
    arg_spec specs[] = {
        FLAG("agent", ARG_STRING, &agent, 0, 0, 0, "FILE", "agent file (required)"),
        FLAG("svg", ARG_STRING, &svg, 0, 0, 0, "FILE", "the picture to write (required)"),
    };
    int rc = args_parse("rl plot", argc, argv, 3, specs, 2);
    if (rc == 1) {
        printf("strix rl plot - an agent's learning curve: every episode's return against the "
               "environment steps, and the mean of the last 100\n\n"
               "Usage: strix rl plot --agent FILE --svg FILE\n\n");
        args_print_help(stdout, specs, 2);
        return 0;
    }
    if (rc) return rc;
    if (!svg) {
        fprintf(stderr, "strix rl plot: --svg FILE is required\n");
        return 2;
    }
    if (agent && (rc = rl_check_picture("plot", "--svg", svg, agent)) != 0) return rc;
    strix_backend *be = NULL;
    strix_agent *a = NULL;
    if ((rc = rl_load_agent("plot", agent, 1, &be, &a)) == 0) {
        strix_status st = write_curve(a, svg);
        rc = st == STRIX_OK ? 0 : tool_fail(st);
        if (rc == 0) printf("wrote %s\n", svg);
    }
    strix_agent_free(a);
    strix_backend_free(be);
    return rc;
}

int cmd_rl(int argc, char **argv) {
    const char *sub = argc > 2 ? argv[2] : "";
    if (!strcmp(sub, "train")) return cmd_rl_train(argc, argv);
    if (!strcmp(sub, "eval")) return cmd_rl_eval(argc, argv);
    if (!strcmp(sub, "explain")) return cmd_rl_explain(argc, argv);
    if (!strcmp(sub, "plot")) return cmd_rl_plot(argc, argv);
    if (sub[0] && strcmp(sub, "--help") != 0 && strcmp(sub, "-h") != 0) {
        fprintf(stderr, "strix rl: unknown command '%s' (train, eval, explain, plot)\n", sub);
        return 2;
    }
    FILE *out = sub[0] ? stdout : stderr;
    fprintf(out, "strix rl - reinforcement learning (strix/rl.h)\n\n"
                 "Usage:\n"
                 "  strix rl train --env ENV --algo ALGO [flags]   train an agent\n"
                 "  strix rl eval --agent FILE [--episodes N]     mean +- std return\n"
                 "  strix rl explain --agent FILE [flags]         why it acts (LRP)\n"
                 "  strix rl plot --agent FILE --svg FILE         its learning curve\n"
                 "  strix rl COMMAND --help lists the flags.\n");
    if (out == stdout) return 0;
    return 2;
}
