/*
 * test_rl_env.c - the environments, the replay buffer and GAE of strix/rl.h:
 *
 *  1. Gymnasium 1.4 episodes (tools/ref/rl_env_ref.py, tests/golden/rl/<env>.txt) of CartPole-v1
 *     (random actions, a balancing controller truncated at 500 steps, a drifting one that leaves
 *     the track), the continuous CartPole (actions past ±1) and Pendulum-v1 (torques past ±2, a
 *     pendulum spun up to the ±8 speed clip): each is replayed from its initial state through
 *     strix_env_set_state + strix_env_step, strix's own state carried from step to step. States
 *     and rewards must agree within 1e-12 and the observations, episode ends and truncations
 *     exactly (strix calls the libm NumPy calls, so in practice every double is bit-identical; the
 *     largest differences are printed).
 *  2. Resets (seeded streams, the draws and their ranges), specs and names, every error of
 *     strix_env_step (nothing changed), the continuous CartPole's clamp, Pendulum's torque clip,
 *     and a step that both terminates and reaches the time limit.
 *  3. The replay buffer: ring order, the exact slots a seeded sample draws, bad sizes.
 *  4. GAE against a float32 transcription (tools/ref/rl_gae_ref.py, tests/golden/rl/gae.bin,
 *     within 1e-6) and a case worked by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "strix/rl.h"
#include "testlib.h"

#define OK(expr) assert_int_equal((expr), STRIX_OK)
#define STATE_ATOL 1e-12
#define REWARD_ATOL 1e-12
#define GAE_ATOL 1e-6

// ---- golden episodes ---------------------------------------------------------------------------

typedef struct gold_step {
    float action;
    double state[STRIX_ENV_MAX_STATE];
    float obs[STRIX_ENV_MAX_OBS];
    double reward;
    bool terminated, truncated;
} gold_step;

typedef struct gold_episode {
    long seed;
    char policy[16];
    int steps;
    double init[STRIX_ENV_MAX_STATE];
    float init_obs[STRIX_ENV_MAX_OBS];
    gold_step *step; /* steps of them */
} gold_episode;

typedef struct gold_file {
    int count;
    gold_episode ep[8];
} gold_file;

/* Reads n doubles (or floats) from the text at *at; false when a field is missing. */
static bool read_doubles(char **at, double *out, int n) {
    for (int i = 0; i < n; i++) {
        char *end;
        out[i] = strtod(*at, &end);
        if (end == *at) return false;
        *at = end;
    }
    return true;
}

static bool read_floats(char **at, float *out, int n) {
    for (int i = 0; i < n; i++) {
        char *end;
        out[i] = strtof(*at, &end); /* numpy's shortest float32 text: read back exactly */
        if (end == *at) return false;
        *at = end;
    }
    return true;
}

static void gold_free(gold_file *g) {
    for (int i = 0; i < g->count; i++) free(g->ep[i].step);
    memset(g, 0, sizeof *g);
}

/* Parses tests/golden/rl/<name>.txt (format: tools/ref/rl_env_ref.py). */
static bool gold_load(const char *name, const strix_env_spec *spec, gold_file *g) {
    char path[256], line[1024];
    snprintf(path, sizeof path, "tests/golden/rl/%s.txt", name);
    memset(g, 0, sizeof *g);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "golden %s: cannot open (run tests from the repository root)\n", path);
        return false;
    }
    const int sd = spec->state_dim, od = spec->obs_dim;
    bool ok = true, named = false;
    gold_episode *ep = NULL;
    int filled = 0;
    while (ok && fgets(line, sizeof line, f)) {
        char *at = line;
        if (line[0] == '#' || line[0] == '\n') continue;
        if (strncmp(line, "env ", 4) == 0) {
            char got[64] = "";
            ok = sscanf(line + 4, "%63s", got) == 1 && strcmp(got, spec->name) == 0;
            named = true;
        } else if (strncmp(line, "episode ", 8) == 0) {
            ok = named && g->count < 8 && (!ep || filled == ep->steps);
            if (!ok) break;
            ep = &g->ep[g->count++];
            ok = sscanf(line + 8, "%ld %15s %d", &ep->seed, ep->policy, &ep->steps) == 3 &&
                 ep->steps > 0 && ep->steps <= 100000;
            ep->step = ok ? calloc((size_t)ep->steps, sizeof *ep->step) : NULL;
            ok = ok && ep->step;
            filled = -1; /* the init line comes next */
        } else if (strncmp(line, "init ", 5) == 0) {
            at += 5;
            ok = ep && filled == -1 && read_doubles(&at, ep->init, sd) &&
                 read_floats(&at, ep->init_obs, od);
            filled = 0;
        } else if (strncmp(line, "step ", 5) == 0) {
            ok = ep && filled >= 0 && filled < ep->steps;
            if (!ok) break;
            gold_step *s = &ep->step[filled++];
            at += 5;
            double flags[2] = {0.0, 0.0};
            ok = read_floats(&at, &s->action, 1) && read_doubles(&at, s->state, sd) &&
                 read_floats(&at, s->obs, od) && read_doubles(&at, &s->reward, 1) &&
                 read_doubles(&at, flags, 2);
            s->terminated = flags[0] != 0.0;
            s->truncated = flags[1] != 0.0;
        } else {
            ok = false;
        }
    }
    fclose(f);
    ok = ok && g->count > 0 && ep && filled == ep->steps;
    if (!ok) {
        fprintf(stderr, "golden %s: malformed file\n", path);
        gold_free(g);
    }
    return ok;
}

/* Replays every episode of the golden of `kind`; prints the largest differences. */
static void replay_golden(strix_env_kind kind) {
    const strix_env_spec *spec = strix_env_spec_of(kind);
    gold_file g;
    assert_true(gold_load(spec->name, spec, &g));
    double worst_state = 0.0, worst_reward = 0.0;
    int steps = 0, ends_terminated = 0, ends_truncated = 0;
    for (int k = 0; k < g.count; k++) {
        const gold_episode *ep = &g.ep[k];
        strix_env e;
        float obs[STRIX_ENV_MAX_OBS];
        strix_env_init(&e, kind, 0);
        strix_env_set_state(&e, ep->init);
        assert_int_equal(e.steps, 0);
        assert_false(e.needs_reset);
        strix_env_observe(&e, obs);
        assert_memory_equal(obs, ep->init_obs, sizeof(float) * (size_t)spec->obs_dim);
        for (int t = 0; t < ep->steps; t++) {
            const gold_step *s = &ep->step[t];
            double reward = NAN;
            bool term = true, trunc = true;
            OK(strix_env_step(&e, &s->action, obs, &reward, &term, &trunc));
            for (int i = 0; i < spec->state_dim; i++) {
                double d = fabs(e.state[i] - s->state[i]);
                worst_state = d > worst_state ? d : worst_state;
                if (!(d <= STATE_ATOL))
                    fail_msg("%s seed %ld (%s) step %d: state[%d] %.17g, Gymnasium %.17g",
                             spec->name, ep->seed, ep->policy, t + 1, i, e.state[i],
                             s->state[i]);
            }
            for (int i = 0; i < spec->obs_dim; i++)
                if (obs[i] != s->obs[i])
                    fail_msg("%s seed %ld step %d: obs[%d] %.9g, Gymnasium %.9g", spec->name,
                             ep->seed, t + 1, i, (double)obs[i], (double)s->obs[i]);
            double d = fabs(reward - s->reward);
            worst_reward = d > worst_reward ? d : worst_reward;
            if (!(d <= REWARD_ATOL))
                fail_msg("%s seed %ld step %d: reward %.17g, Gymnasium %.17g", spec->name,
                         ep->seed, t + 1, reward, s->reward);
            if (term != s->terminated || trunc != s->truncated)
                fail_msg("%s seed %ld step %d: terminated %d truncated %d, Gymnasium %d %d",
                         spec->name, ep->seed, t + 1, term, trunc, s->terminated, s->truncated);
            /* the golden's last step is where Gymnasium's episode ended */
            assert_int_equal(e.needs_reset, t == ep->steps - 1);
        }
        steps += ep->steps;
        ends_terminated += ep->step[ep->steps - 1].terminated;
        ends_truncated += ep->step[ep->steps - 1].truncated;
    }
    fprintf(stderr, "%s: %d episodes (%d terminated, %d truncated), %d steps; largest state "
            "difference %.3g, reward %.3g\n", spec->name, g.count, ends_terminated,
            ends_truncated, steps, worst_state, worst_reward);
    gold_free(&g);
}

static void test_golden_cartpole(void **state) { replay_golden(STRIX_ENV_CARTPOLE); }
static void test_golden_cartpole_continuous(void **state) {
    replay_golden(STRIX_ENV_CARTPOLE_CONTINUOUS);
}
static void test_golden_pendulum(void **state) { replay_golden(STRIX_ENV_PENDULUM); }

// ---- specs, resets -----------------------------------------------------------------------------

static void test_specs(void **state) {
    const char *names[] = {"cartpole", "cartpole-continuous", "pendulum"};
    const int obs_dim[] = {4, 4, 3}, state_dim[] = {4, 4, 2}, n_actions[] = {2, 0, 0};
    const int max_steps[] = {500, 500, 200};
    const float low[] = {0.0f, -1.0f, -2.0f}, high[] = {1.0f, 1.0f, 2.0f};
    for (int k = 0; k < 3; k++) {
        const strix_env_spec *s = strix_env_spec_of((strix_env_kind)k);
        assert_string_equal(s->name, names[k]);
        assert_int_equal(s->obs_dim, obs_dim[k]);
        assert_int_equal(s->state_dim, state_dim[k]);
        assert_int_equal(s->n_actions, n_actions[k]);
        assert_int_equal(s->action_dim, 1);
        assert_int_equal(s->max_steps, max_steps[k]);
        assert_true(s->action_low == low[k] && s->action_high == high[k]);
        for (int i = 0; i < s->obs_dim; i++) assert_non_null(s->obs_names[i]);
        assert_non_null(s->action_names[0]);
        strix_env_kind kind;
        OK(strix_env_kind_of(names[k], &kind));
        assert_int_equal(kind, k);
    }
    assert_string_equal(strix_env_spec_of(STRIX_ENV_CARTPOLE)->gym_id, "CartPole-v1");
    assert_string_equal(strix_env_spec_of(STRIX_ENV_PENDULUM)->gym_id, "Pendulum-v1");
    assert_non_null(strix_env_spec_of(STRIX_ENV_CARTPOLE)->action_names[1]);
    strix_env_kind kind = STRIX_ENV_PENDULUM;
    assert_int_equal(strix_env_kind_of("CartPole-v1", &kind), STRIX_ERR_ARG);
    assert_non_null(strstr(strix_last_error(), "cartpole-continuous"));
    assert_int_equal(strix_env_kind_of(NULL, &kind), STRIX_ERR_ARG);
    assert_int_equal(kind, STRIX_ENV_PENDULUM); /* untouched */
}

static void test_reset(void **state) {
    for (int k = 0; k < 3; k++) {
        const strix_env_spec *spec = strix_env_spec_of((strix_env_kind)k);
        const int sd = spec->state_dim;
        strix_env a, b, c;
        strix_env_init(&a, (strix_env_kind)k, 42);
        strix_env_init(&b, (strix_env_kind)k, 42);
        strix_env_init(&c, (strix_env_kind)k, 43);
        assert_true(a.needs_reset && a.steps == 0);
        strix_rng draws; /* the documented draws: U(low, high) from strix_rng_uniform, in order */
        strix_rng_seed(&draws, 42);
        double lo[4] = {-0.05, -0.05, -0.05, -0.05}, hi[4] = {0.05, 0.05, 0.05, 0.05};
        if (k == STRIX_ENV_PENDULUM) {
            lo[0] = -3.141592653589793, hi[0] = 3.141592653589793, lo[1] = -1.0, hi[1] = 1.0;
        }
        double min[4] = {1e9, 1e9, 1e9, 1e9}, max[4] = {-1e9, -1e9, -1e9, -1e9};
        int differ = 0;
        for (int n = 0; n < 2000; n++) {
            float obs_a[4], obs_b[4], obs[4];
            if (n == 1) { /* a reset in the middle of an episode starts a new one */
                float act = k == STRIX_ENV_CARTPOLE ? 1.0f : 0.5f;
                OK(strix_env_step(&a, &act, NULL, NULL, NULL, NULL));
                OK(strix_env_step(&b, &act, NULL, NULL, NULL, NULL));
                assert_int_equal(a.steps, 1);
            }
            strix_env_reset(&a, obs_a);
            strix_env_reset(&b, obs_b);
            strix_env_reset(&c, NULL);
            assert_memory_equal(a.state, b.state, sizeof(double) * (size_t)sd);
            assert_memory_equal(obs_a, obs_b, sizeof(float) * (size_t)spec->obs_dim);
            strix_env_observe(&a, obs);
            assert_memory_equal(obs, obs_a, sizeof(float) * (size_t)spec->obs_dim);
            assert_true(a.steps == 0 && !a.needs_reset);
            for (int i = 0; i < sd; i++) {
                double want = lo[i] + (hi[i] - lo[i]) * strix_rng_uniform(&draws);
                assert_true(a.state[i] == want);
                assert_true(a.state[i] >= lo[i] && a.state[i] <= hi[i]);
                min[i] = a.state[i] < min[i] ? a.state[i] : min[i];
                max[i] = a.state[i] > max[i] ? a.state[i] : max[i];
                differ += a.state[i] != c.state[i];
            }
        }
        assert_int_equal(differ, 2000 * sd); /* another seed, another stream */
        for (int i = 0; i < sd; i++) /* the draws fill the range */
            assert_true(min[i] < lo[i] + 0.01 * (hi[i] - lo[i]) &&
                        max[i] > hi[i] - 0.01 * (hi[i] - lo[i]));
    }
}

// ---- errors and limits -------------------------------------------------------------------------

/* strix_env_step(action) fails with STRIX_ERR_ARG and changes neither e nor the outputs. */
static void expect_refused(strix_env *e, float action) {
    strix_env before;
    memcpy(&before, e, sizeof before); /* bytes, padding included */
    float obs[4] = {7.0f, 7.0f, 7.0f, 7.0f};
    double reward = 7.0;
    bool term = true, trunc = true;
    strix_clear_error();
    assert_int_equal(strix_env_step(e, &action, obs, &reward, &term, &trunc), STRIX_ERR_ARG);
    assert_true(strlen(strix_last_error()) > 0);
    assert_memory_equal(e, &before, sizeof before);
    assert_true(obs[0] == 7.0f && obs[3] == 7.0f && reward == 7.0 && term && trunc);
}

static void test_step_errors(void **state) {
    const float bad[] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++) {
        strix_env e;
        strix_env_init(&e, (strix_env_kind)k, 1);
        expect_refused(&e, 0.0f); /* before the first reset */
        assert_non_null(strstr(strix_last_error(), "reset"));
        strix_env_reset(&e, NULL);
        for (int i = 0; i < 3; i++) expect_refused(&e, bad[i]);
        float ok = 1.0f;
        OK(strix_env_step(&e, &ok, NULL, NULL, NULL, NULL));
    }
    strix_env e;
    strix_env_init(&e, STRIX_ENV_CARTPOLE, 1);
    strix_env_reset(&e, NULL);
    const float not_actions[] = {2.0f, 0.5f, -1.0f, 1.5f, 1e30f, -0.25f};
    for (int i = 0; i < 6; i++) expect_refused(&e, not_actions[i]);
    assert_non_null(strstr(strix_last_error(), "0..1"));
    const float actions[] = {0.0f, 1.0f, -0.0f};
    for (int i = 0; i < 3; i++) OK(strix_env_step(&e, &actions[i], NULL, NULL, NULL, NULL));

    /* after a termination: the pole is already past 12° */
    const double fallen[4] = {0.0, 0.0, 0.25, 0.0};
    strix_env_set_state(&e, fallen);
    double reward = 0.0;
    bool term = false, trunc = true;
    float push = 1.0f;
    OK(strix_env_step(&e, &push, NULL, &reward, &term, &trunc));
    assert_true(term && !trunc && reward == 1.0 && e.needs_reset);
    expect_refused(&e, push);

    /* after a truncation: Pendulum never terminates, 200 steps */
    strix_env p;
    strix_env_init(&p, STRIX_ENV_PENDULUM, 3);
    strix_env_reset(&p, NULL);
    for (int t = 1; t <= 200; t++) {
        float u = 0.0f;
        OK(strix_env_step(&p, &u, NULL, &reward, &term, &trunc));
        assert_false(term);
        assert_int_equal(trunc, t == 200);
    }
    expect_refused(&p, 0.0f);
    strix_env_reset(&p, NULL);
    OK(strix_env_step(&p, &push, NULL, NULL, NULL, NULL));
}

/* A step that terminates on the time limit's last step reports both flags, as Gymnasium's
 * TimeLimit does (truncated = elapsed >= max, whatever the inner step said). */
static void test_terminated_and_truncated(void **state) {
    const strix_env_kind kinds[] = {STRIX_ENV_CARTPOLE, STRIX_ENV_CARTPOLE_CONTINUOUS};
    for (int k = 0; k < 2; k++) {
        const double leaning[4] = {0.0, 0.0, 0.2094, 1.0}; /* past 12° after this step */
        for (int before = 498; before <= 499; before++) {
            strix_env e;
            strix_env_init(&e, kinds[k], 0);
            strix_env_set_state(&e, leaning);
            e.steps = before; /* white box: as if `before` steps had been taken */
            float push = 1.0f;
            bool term = false, trunc = false;
            OK(strix_env_step(&e, &push, NULL, NULL, &term, &trunc));
            assert_true(term);
            assert_int_equal(trunc, before == 499);
            assert_true(e.needs_reset);
        }
    }
}

/* The next state of `kind` from `start` under `action`. */
static void next_state(strix_env_kind kind, const double *start, float action, double *out,
                       double *reward) {
    strix_env e;
    strix_env_init(&e, kind, 0);
    strix_env_set_state(&e, start);
    OK(strix_env_step(&e, &action, NULL, reward, NULL, NULL));
    memcpy(out, e.state, sizeof e.state);
}

static void test_clamp_and_clip(void **state) {
    const double s[4] = {0.1, -0.2, 0.03, 0.4};
    double a[4], b[4], r;
    /* continuous CartPole: |a| > 1 is clamped; ±1 is the discrete CartPole's ±force_mag */
    next_state(STRIX_ENV_CARTPOLE_CONTINUOUS, s, 5.0f, a, &r);
    next_state(STRIX_ENV_CARTPOLE_CONTINUOUS, s, 1.0f, b, &r);
    assert_memory_equal(a, b, sizeof a);
    next_state(STRIX_ENV_CARTPOLE, s, 1.0f, b, &r);
    assert_memory_equal(a, b, sizeof a);
    next_state(STRIX_ENV_CARTPOLE_CONTINUOUS, s, -7.5f, a, &r);
    next_state(STRIX_ENV_CARTPOLE, s, 0.0f, b, &r);
    assert_memory_equal(a, b, sizeof a);
    next_state(STRIX_ENV_CARTPOLE_CONTINUOUS, s, 0.5f, b, &r);
    assert_true(b[1] > a[1] && b[3] != a[3]); /* a weaker force than −1 */
    assert_true(r == 1.0);
    /* Pendulum: the torque is clipped to ±2 before the dynamics and the cost */
    const double p[2] = {2.5, -1.5};
    double ra, rb;
    next_state(STRIX_ENV_PENDULUM, p, 3.0f, a, &ra);
    next_state(STRIX_ENV_PENDULUM, p, 2.0f, b, &rb);
    assert_memory_equal(a, b, 2 * sizeof(double));
    assert_true(ra == rb);
    next_state(STRIX_ENV_PENDULUM, p, -100.0f, a, &ra);
    next_state(STRIX_ENV_PENDULUM, p, -2.0f, b, &rb);
    assert_memory_equal(a, b, 2 * sizeof(double));
    assert_true(ra == rb);
    next_state(STRIX_ENV_PENDULUM, p, 1.0f, b, &rb);
    assert_true(b[1] > a[1] && rb > ra); /* less torque costs less */
    /* the speed clip: a fast pendulum pushed further stays at 8 */
    const double fast[2] = {0.5, 7.99};
    next_state(STRIX_ENV_PENDULUM, fast, 2.0f, a, &ra);
    assert_true(a[1] == 8.0 && a[0] == 0.5 + 8.0 * 0.05);
}

// ---- replay buffer -----------------------------------------------------------------------------

/* Transition i: obs (i, −i), action 10·i, reward i, next obs (i + 0.5, −i − 0.5), terminated
 * every third. */
static void add_transition(strix_replay *r, int i) {
    float obs[2] = {(float)i, (float)-i}, act = 10.0f * (float)i;
    float next[2] = {(float)i + 0.5f, (float)-i - 0.5f};
    strix_replay_add(r, obs, &act, (float)i, next, i % 3 == 0);
}

/* Slot `slot` holds transition i. */
static void check_slot(const strix_replay *r, int64_t slot, int i) {
    assert_true(r->obs[slot * 2] == (float)i && r->obs[slot * 2 + 1] == (float)-i);
    assert_true(r->next_obs[slot * 2] == (float)i + 0.5f);
    assert_true(r->actions[slot] == 10.0f * (float)i && r->rewards[slot] == (float)i);
    assert_true(r->terminated[slot] == (i % 3 == 0 ? 1.0f : 0.0f));
}

static void test_replay_ring(void **state) {
    strix_replay r;
    OK(strix_replay_init(&r, 4, 2, 1));
    assert_true(r.capacity == 4 && r.size == 0 && r.pos == 0);
    for (int i = 0; i < 3; i++) add_transition(&r, i);
    assert_true(r.size == 3 && r.pos == 3);
    for (int i = 0; i < 3; i++) check_slot(&r, i, i);
    for (int i = 3; i < 6; i++) add_transition(&r, i);
    /* full: transitions 4 and 5 overwrote the oldest two, 0 and 1 */
    assert_true(r.size == 4 && r.pos == 2);
    const int holds[4] = {4, 5, 2, 3};
    for (int s = 0; s < 4; s++) check_slot(&r, s, holds[s]);
    for (int i = 6; i < 10; i++) add_transition(&r, i); /* one more lap */
    const int holds2[4] = {8, 9, 6, 7};
    for (int s = 0; s < 4; s++) check_slot(&r, s, holds2[s]);
    assert_true(r.size == 4 && r.pos == 2);
    strix_replay_free(&r);
    assert_null(r.obs);
    strix_replay_free(&r); /* twice, and NULL: no-ops */
    strix_replay_free(NULL);
}

static void test_replay_sample(void **state) {
    strix_replay r;
    OK(strix_replay_init(&r, 8, 2, 1));
    for (int i = 0; i < 5; i++) add_transition(&r, i); /* slots 0..4 of 8 */
    enum { B = 64 };
    float obs[B * 2], act[B], rew[B], next[B * 2], term[B];
    float obs2[B * 2], act2[B], rew2[B], next2[B * 2], term2[B];
    strix_rng rng, rng2, expect;
    strix_rng_seed(&rng, 99);
    strix_rng_seed(&rng2, 99);
    strix_rng_seed(&expect, 99);
    strix_replay_sample(&r, &rng, B, obs, act, rew, next, term);
    strix_replay_sample(&r, &rng2, B, obs2, act2, rew2, next2, term2);
    assert_memory_equal(obs, obs2, sizeof obs);
    assert_memory_equal(act, act2, sizeof act);
    assert_memory_equal(rew, rew2, sizeof rew);
    assert_memory_equal(next, next2, sizeof next);
    assert_memory_equal(term, term2, sizeof term);
    bool seen[5] = {false};
    for (int b = 0; b < B; b++) { /* the documented draws: strix_rng_below(size), in order */
        int i = (int)strix_rng_below(&expect, 5);
        seen[i] = true;
        assert_true(obs[b * 2] == (float)i && obs[b * 2 + 1] == (float)-i);
        assert_true(next[b * 2] == (float)i + 0.5f && next[b * 2 + 1] == (float)-i - 0.5f);
        assert_true(act[b] == 10.0f * (float)i && rew[b] == (float)i);
        assert_true(term[b] == (i % 3 == 0 ? 1.0f : 0.0f));
    }
    for (int i = 0; i < 5; i++) assert_true(seen[i]);
    assert_true(rng.state == expect.state); /* B draws, no more */
    strix_replay_sample(&r, &rng, 0, obs, act, rew, next, term);
    assert_true(rng.state == expect.state);
    /* another seed, other slots */
    strix_rng_seed(&rng2, 100);
    strix_replay_sample(&r, &rng2, B, obs2, act2, rew2, next2, term2);
    assert_memory_not_equal(obs, obs2, sizeof obs);
    strix_replay_free(&r);
}

static void test_replay_errors(void **state) {
    strix_replay r;
    const int64_t caps[] = {0, -1, 4, 4};
    const int obs_dims[] = {2, 2, 0, 2}, action_dims[] = {1, 1, 1, -3};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(strix_replay_init(&r, caps[i], obs_dims[i], action_dims[i]),
                         STRIX_ERR_ARG);
        assert_true(r.obs == NULL && r.capacity == 0);
        strix_replay_free(&r); /* safe after a failed init */
    }
    assert_non_null(strstr(strix_last_error(), "action_dim"));
    assert_int_equal(strix_replay_init(&r, INT64_MAX / 2, 2, 1), STRIX_ERR_ALLOC);
    assert_null(r.obs);
}

// ---- GAE ---------------------------------------------------------------------------------------

static void test_gae_golden(void **state) {
    tl_golden g;
    assert_true(tl_golden_load("tests/golden/rl/gae.bin", &g));
    const tl_array *rewards = tl_golden_get(&g, "rewards"), *values = tl_golden_get(&g, "values");
    const tl_array *next = tl_golden_get(&g, "next_values");
    const tl_array *term = tl_golden_get(&g, "terminated"), *ended = tl_golden_get(&g, "ended");
    const tl_array *adv = tl_golden_get(&g, "advantages"), *ret = tl_golden_get(&g, "returns");
    assert_true(rewards && values && next && term && ended && adv && ret);
    assert_int_equal(rewards->ndim, 2);
    size_t T = (size_t)rewards->shape[0], N = (size_t)rewards->shape[1];
    assert_true(T == 16 && N == 3 && adv->count == T * N);
    float *a = tl_malloc_floats(T * N), *r = tl_malloc_floats(T * N);
    strix_gae(T, N, rewards->data, values->data, next->data, term->data, ended->data,
              tl_golden_scalar(&g, "gamma"), tl_golden_scalar(&g, "lambda"), a, r);
    assert_true(tl_check_close("gae advantages", a, adv->data, T * N, GAE_ATOL, 0.0));
    assert_true(tl_check_close("gae returns", r, ret->data, T * N, GAE_ATOL, 0.0));
    free(a);
    free(r);
    tl_golden_free(&g);
}

/* T = 3, N = 1, γ = λ = 0.5 (γλ = 0.25), every value exact in float:
 *   t = 0  r 1  V 0.5  V' 1.0 (V_1)                      δ0 = 1 + 0.5·1 − 0.5 = 1
 *   t = 1  r 2  V 1.0  V' 4.0 truncated (final obs)     δ1 = 2 + 0.5·4 − 1 = 3
 *   t = 2  r 3  V 1.5  V' 2.0 terminated (not used)     δ2 = 3 + 0 − 1.5 = 1.5
 * A2 = 1.5; A1 = 3 (ended: A2 does not cross); A0 = 1 + 0.25·3 = 1.75; returns A + V =
 * 2.25, 4, 3. */
static void test_gae_by_hand(void **state) {
    const float rewards[3] = {1, 2, 3}, values[3] = {0.5f, 1.0f, 1.5f};
    const float next[3] = {1.0f, 4.0f, 2.0f}, term[3] = {0, 0, 1}, ended[3] = {0, 1, 1};
    float a[3] = {NAN, NAN, NAN}, r[3] = {NAN, NAN, NAN};
    strix_gae(3, 1, rewards, values, next, term, ended, 0.5f, 0.5f, a, r);
    const float want_a[3] = {1.75f, 3.0f, 1.5f}, want_r[3] = {2.25f, 4.0f, 3.0f};
    assert_true(tl_check_bits("gae by hand", a, want_a, 3));
    assert_true(tl_check_bits("gae returns by hand", r, want_r, 3));
    /* λ = 1, no ends, V' the next values (1, 1.5, then a bootstrap 2): δ = 1, 2 + 0.75 − 1 =
     * 1.75, 3 + 1 − 1.5 = 2.5; A = 1 + 0.5·3 = 2.5, 1.75 + 0.5·2.5 = 3, 2.5; the returns are the
     * discounted returns 1 + 0.5·2 + 0.25·3 + 0.125·2 = 3, 2 + 0.5·3 + 0.25·2 = 4, 3 + 0.5·2 = 4 */
    const float zero[3] = {0, 0, 0}, chain[3] = {1.0f, 1.5f, 2.0f};
    strix_gae(3, 1, rewards, values, chain, zero, zero, 0.5f, 1.0f, a, r);
    const float chain_a[3] = {2.5f, 3.0f, 2.5f}, chain_r[3] = {3.0f, 4.0f, 4.0f};
    assert_true(tl_check_bits("gae lambda 1", a, chain_a, 3));
    assert_true(tl_check_bits("gae lambda 1 returns", r, chain_r, 3));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_cartpole),
        cmocka_unit_test(test_golden_cartpole_continuous),
        cmocka_unit_test(test_golden_pendulum),
        cmocka_unit_test(test_specs),
        cmocka_unit_test(test_reset),
        cmocka_unit_test(test_step_errors),
        cmocka_unit_test(test_terminated_and_truncated),
        cmocka_unit_test(test_clamp_and_clip),
        cmocka_unit_test(test_replay_ring),
        cmocka_unit_test(test_replay_sample),
        cmocka_unit_test(test_replay_errors),
        cmocka_unit_test(test_gae_golden),
        cmocka_unit_test(test_gae_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
