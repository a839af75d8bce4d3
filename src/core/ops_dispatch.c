/*
 * ops_dispatch.c - what src/core/primitives.def generates in the core: the public entry point of
 * every STRIX_PRIMITIVE and STRIX_PRIMITIVE_ASSERT entry (the contract, if any, asserted; then a
 * checked dispatch into the backend vtable: NULL handle -> STRIX_ASSERT, NULL slot ->
 * STRIX_ERR_UNSUPPORTED naming the backend and the primitive, never another backend), and the
 * table of slot names and headers. STRIX_PRIMITIVE_CHECKED entries are written by hand in
 * src/core/backend.c and src/core/ops_*.c. No math here.
 */
#include "core/backend_impl.h"

// ---- generated entry points --------------------------------------------------------------------

#define STRIX_PRIMITIVE(header, name, params, args)                                           \
    strix_status strix_##name(strix_backend *be, STRIX_UNPAREN params) {                       \
        STRIX_DISPATCH(be, name, STRIX_UNPAREN args);                                          \
    }
#define STRIX_PRIMITIVE_ASSERT(header, name, params, args, contract)                          \
    strix_status strix_##name(strix_backend *be, STRIX_UNPAREN params) {                       \
        STRIX_ASSERT(contract, #name ": contract violated");                                   \
        STRIX_DISPATCH(be, name, STRIX_UNPAREN args);                                          \
    }
#define STRIX_PRIMITIVE_CHECKED(header, name, params, args)
#include "core/primitives.def"

// ---- the slot table ----------------------------------------------------------------------------

/* The public header of each `header` field of the list. */
#define STRIX_HEADER_backend "strix/backend.h"
#define STRIX_HEADER_cnn "strix/ops/cnn.h"
#define STRIX_HEADER_lrp "strix/ops/lrp.h"
#define STRIX_HEADER_logic "strix/ops/logic.h"
#define STRIX_HEADER_recurrent "strix/ops/recurrent.h"
#define STRIX_HEADER_ssm "strix/ops/ssm.h"
#define STRIX_HEADER_rl "strix/ops/rl.h"

static const struct {
    const char *name, *header;
} primitives[STRIX_PRIMITIVE_COUNT] = {
#define STRIX_PRIMITIVE(header, name, params, args) {#name, STRIX_HEADER_##header},
#include "core/primitives.def"
};

const char *strix_primitive_name(int id) {
    STRIX_ASSERT(id >= 0 && id < STRIX_PRIMITIVE_COUNT, "primitive id %d", id);
    return primitives[id].name;
}

const char *strix_primitive_header(int id) {
    STRIX_ASSERT(id >= 0 && id < STRIX_PRIMITIVE_COUNT, "primitive id %d", id);
    return primitives[id].header;
}

bool strix_backend_i_has(const struct strix_backend_i *vt, int id) {
    STRIX_ASSERT(vt != NULL && id >= 0 && id < STRIX_PRIMITIVE_COUNT, "backend_i_has: id %d", id);
    switch ((enum strix_primitive_id)id) {
#define STRIX_PRIMITIVE(header, name, params, args)                                           \
    case STRIX_PRIM_##name: return vt->name != NULL;
#include "core/primitives.def"
    case STRIX_PRIMITIVE_COUNT: break;
    }
    return false;
}
