/*
 * env.c - the environments of strix/rl.h: Gymnasium 1.x's CartPole-v1, a continuous CartPole
 * (CartPole-v1 with force = clamp(a, −1, 1)·force_mag) and Pendulum-v1, each with its TimeLimit
 * truncation. A step is Gymnasium's code transcribed: its constants, its operations in its order,
 * in double, so a replayed episode gives Gymnasium's states and rewards to the bit where the libm
 * is the one NumPy calls (tests/test_rl_env.c, goldens from tools/ref/rl_env_ref.py).
 * Does not: render, step several environments at once, or draw resets from NumPy's stream.
 */
#include <math.h>
#include <string.h>

#include "strix/rl.h"

#define ENV_COUNT 3
#define ENV_PI 3.141592653589793 /* math.pi (np.pi): the double nearest π */

static const strix_env_spec env_specs[ENV_COUNT] = {
    [STRIX_ENV_CARTPOLE] = {
        .name = "cartpole", .gym_id = "CartPole-v1", .obs_dim = 4, .state_dim = 4,
        .n_actions = 2, .action_dim = 1, .action_low = 0.0f, .action_high = 1.0f,
        .max_steps = 500,
        .obs_names = {"cart position", "cart velocity", "pole angle", "pole angular velocity"},
        .action_names = {"left", "right"}},
    [STRIX_ENV_CARTPOLE_CONTINUOUS] = {
        .name = "cartpole-continuous", .gym_id = "CartPole-v1", .obs_dim = 4, .state_dim = 4,
        .n_actions = 0, .action_dim = 1, .action_low = -1.0f, .action_high = 1.0f,
        .max_steps = 500,
        .obs_names = {"cart position", "cart velocity", "pole angle", "pole angular velocity"},
        .action_names = {"force", NULL}},
    [STRIX_ENV_PENDULUM] = {
        .name = "pendulum", .gym_id = "Pendulum-v1", .obs_dim = 3, .state_dim = 2,
        .n_actions = 0, .action_dim = 1, .action_low = -2.0f, .action_high = 2.0f,
        .max_steps = 200,
        .obs_names = {"cos(theta)", "sin(theta)", "angular velocity", NULL},
        .action_names = {"torque", NULL}},
};

const strix_env_spec *strix_env_spec_of(strix_env_kind kind) {
    STRIX_ASSERT((unsigned)kind < ENV_COUNT, "unknown environment kind %d", (int)kind);
    return &env_specs[kind];
}

strix_status strix_env_kind_of(const char *name, strix_env_kind *out) {
    for (int i = 0; i < ENV_COUNT; i++)
        if (name && strcmp(name, env_specs[i].name) == 0) {
            *out = (strix_env_kind)i;
            return STRIX_OK;
        }
    return strix_error(STRIX_ERR_ARG,
                       "unknown environment '%s' (cartpole, cartpole-continuous, pendulum)",
                       name ? name : "");
}

void strix_env_init(strix_env *e, strix_env_kind kind, uint64_t seed) {
    STRIX_ASSERT(e && (unsigned)kind < ENV_COUNT, "kind %d", (int)kind);
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->needs_reset = true;
    strix_rng_seed(&e->rng, seed);
}

/* U(low, high) as numpy's Generator.uniform computes it: low + (high − low)·u. */
static double uniform(strix_rng *rng, double low, double high) {
    return low + (high - low) * strix_rng_uniform(rng);
}

void strix_env_reset(strix_env *e, float *obs) {
    STRIX_ASSERT(e && (unsigned)e->kind < ENV_COUNT);
    if (e->kind == STRIX_ENV_PENDULUM) {
        e->state[0] = uniform(&e->rng, -ENV_PI, ENV_PI);
        e->state[1] = uniform(&e->rng, -1.0, 1.0);
    } else {
        for (int i = 0; i < 4; i++) e->state[i] = uniform(&e->rng, -0.05, 0.05);
    }
    e->steps = 0;
    e->needs_reset = false;
    if (obs) strix_env_observe(e, obs);
}

void strix_env_observe(const strix_env *e, float *obs) {
    STRIX_ASSERT(e && obs && (unsigned)e->kind < ENV_COUNT);
    if (e->kind == STRIX_ENV_PENDULUM) {
        obs[0] = (float)cos(e->state[0]);
        obs[1] = (float)sin(e->state[0]);
        obs[2] = (float)e->state[1];
    } else {
        for (int i = 0; i < 4; i++) obs[i] = (float)e->state[i];
    }
}

void strix_env_set_state(strix_env *e, const double *state) {
    STRIX_ASSERT(e && state && (unsigned)e->kind < ENV_COUNT);
    memcpy(e->state, state, (size_t)env_specs[e->kind].state_dim * sizeof(double));
    e->steps = 0;
    e->needs_reset = false;
}

// ---- dynamics ----------------------------------------------------------------------------------

/* x**2 of a NumPy scalar: NumPy calls libm's pow (powf for float32), which rounds differently
 * from x*x in about one case in a thousand. The exponent is read through a volatile so the
 * compiler cannot fold the call into x*x. */
static volatile double pow_two = 2.0;
static volatile float pow_two_f = 2.0f;
static double np_sq(double x) { return pow(x, pow_two); }
static float np_sqf(float x) { return powf(x, pow_two_f); }

/* CartPoleEnv.step with the force already chosen (explicit Euler); returns terminated. */
static bool cartpole_step(double *s, double force) {
    const double gravity = 9.8, masscart = 1.0, masspole = 0.1;
    const double total_mass = masspole + masscart;
    const double length = 0.5; /* half the pole's length */
    const double polemass_length = masspole * length;
    const double tau = 0.02;
    const double theta_threshold = 12 * 2 * ENV_PI / 360, x_threshold = 2.4;

    double x = s[0], x_dot = s[1], theta = s[2], theta_dot = s[3];
    double costheta = cos(theta), sintheta = sin(theta);
    /* np.square is a plain product */
    double temp = (force + polemass_length * (theta_dot * theta_dot) * sintheta) / total_mass;
    double thetaacc = (gravity * sintheta - costheta * temp) /
                      (length * (4.0 / 3.0 - masspole * (costheta * costheta) / total_mass));
    double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
    x = x + tau * x_dot;
    x_dot = x_dot + tau * xacc;
    theta = theta + tau * theta_dot;
    theta_dot = theta_dot + tau * thetaacc;
    s[0] = x, s[1] = x_dot, s[2] = theta, s[3] = theta_dot;
    return x < -x_threshold || x > x_threshold || theta < -theta_threshold ||
           theta > theta_threshold;
}

/* angle_normalize: ((x + π) % 2π) − π with Python's float modulo (the result takes the sign of
 * the divisor; NumPy's npy_divmod: fmod, then one divisor added when the signs differ). */
static double angle_normalize(double x) {
    const double b = 2 * ENV_PI;
    double m = fmod(x + ENV_PI, b);
    if (m != 0.0) {
        if ((m < 0.0) != (b < 0.0)) m += b;
    } else {
        m = copysign(0.0, b);
    }
    return m - ENV_PI;
}

/* PendulumEnv.step; returns the reward. The action arrives as a float32 array, so NumPy keeps
 * u = clip(a, −2, 2) in float32 and computes u**2, 0.001·u² and 3.0·u in float32 (a Python
 * float meeting a float32 scalar is cast to float32). */
static double pendulum_step(double *s, float a) {
    const double g = 10.0, m = 1.0, l = 1.0, dt = 0.05, max_speed = 8.0;
    const float u_coef = (float)(3.0 / (m * (l * l))); /* 3.0/(m·l**2), cast to meet u */
    double th = s[0], thdot = s[1];
    float u = a < -2.0f ? -2.0f : a > 2.0f ? 2.0f : a;
    double costs = np_sq(angle_normalize(th)) + 0.1 * np_sq(thdot) +
                   (double)(0.001f * np_sqf(u));
    double newthdot = thdot + (3 * g / (2 * l) * sin(th) + (double)(u_coef * u)) * dt;
    newthdot = newthdot < -max_speed ? -max_speed : newthdot > max_speed ? max_speed : newthdot;
    double newth = th + newthdot * dt;
    s[0] = newth, s[1] = newthdot;
    return -costs;
}

strix_status strix_env_step(strix_env *e, const float *action, float *obs, double *reward,
                            bool *terminated, bool *truncated) {
    STRIX_ASSERT(e && action && (unsigned)e->kind < ENV_COUNT);
    const strix_env_spec *spec = &env_specs[e->kind];
    if (e->needs_reset)
        return strix_error(STRIX_ERR_ARG, "%s: step without an episode (before the first reset "
                           "or after the episode ended): call strix_env_reset", spec->name);
    float a = action[0];
    if (!isfinite(a))
        return strix_error(STRIX_ERR_ARG, "%s: the action is %g (must be finite)", spec->name,
                           (double)a);
    if (spec->n_actions > 0 && (a != floorf(a) || a < 0.0f || a >= (float)spec->n_actions))
        return strix_error(STRIX_ERR_ARG, "%s: action %g is not one of 0..%d", spec->name,
                           (double)a, spec->n_actions - 1);

    double r = 1.0; /* CartPole: 1 on every step, the terminating one included */
    bool term = false;
    switch (e->kind) {
    case STRIX_ENV_CARTPOLE:
        term = cartpole_step(e->state, a == 1.0f ? 10.0 : -10.0);
        break;
    case STRIX_ENV_CARTPOLE_CONTINUOUS: {
        float c = a < -1.0f ? -1.0f : a > 1.0f ? 1.0f : a;
        term = cartpole_step(e->state, (double)c * 10.0);
        break;
    }
    case STRIX_ENV_PENDULUM:
        r = pendulum_step(e->state, a);
        break;
    }
    /* TimeLimit: truncated once the steps reach the limit, even on a terminating step */
    e->steps++;
    bool trunc = e->steps >= spec->max_steps;
    e->needs_reset = term || trunc;
    if (obs) strix_env_observe(e, obs);
    if (reward) *reward = r;
    if (terminated) *terminated = term;
    if (truncated) *truncated = trunc;
    return STRIX_OK;
}
