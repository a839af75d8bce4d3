/*
 * ops_rl.c - the hand-written entry points of include/strix/ops/rl.h: strix_rl_rows (op and slot
 * checks); the tanh-Gaussian entry points are generated
 * from src/core/primitives.def (src/core/ops_dispatch.c). No math here.
 */
#include "core/backend_impl.h"

/* Slots each op reads and writes (bit i = in[i] / out[i]); 0 for an unknown op. */
static void rl_slots(strix_rl_op op, unsigned *ins, unsigned *outs) {
    switch (op) {
    case STRIX_RL_DQN_LOSS: *ins = 0x7, *outs = 0x1; return;
    case STRIX_RL_DQN_GRAD: *ins = 0x7, *outs = 0x1; return;
    case STRIX_RL_PG_LOSS: *ins = 0x7, *outs = 0x3; return;
    case STRIX_RL_PG_GRAD: *ins = 0x7, *outs = 0x1; return;
    case STRIX_RL_PPO_LOSS: *ins = 0xF, *outs = 0xF; return;
    case STRIX_RL_PPO_GRAD: *ins = 0x1F, *outs = 0x1; return;
    case STRIX_RL_DQN_TARGET: *ins = 0xF, *outs = 0x1; return;
    case STRIX_RL_POLYAK_BLEND: *ins = 0x3, *outs = 0x1; return;
    }
    *ins = *outs = 0;
}

/* Checks the op and, for a non-empty call, every slot it uses; the actions are the backend's
 * (they may live on the device). */
strix_status strix_rl_rows(strix_backend *be, strix_rl_op op, const strix_rl_args *args) {
    STRIX_ASSERT(args != NULL, "rl_rows: NULL args");
    unsigned ins = 0, outs = 0;
    rl_slots(op, &ins, &outs);
    if (ins == 0) return strix_error(STRIX_ERR_ARG, "rl_rows: unknown op %d", (int)op);
    if (args->rows > 0 && args->cols > 0)
        STRIX_ASSERT_SLOTS("rl_rows", op, args, ins, 5, outs, 4);
    STRIX_DISPATCH(be, rl_rows, op, args);
}

