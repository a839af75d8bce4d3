# gen.cmake - cmake -DSRC=<file.cu> -DDST=<file.cpp> -P gen.cmake: the host C++ copy of one GPU
# source for tests/gpu_emu. Rewrites `k<<<grid, block, shmem, stream>>>(args)` into
# `EMU_LAUNCH(k, grid, block, shmem, stream)(args)` (hip/hip_runtime.h) and sets EMU_THREADED
# in files that call __syncthreads or include block_reduce.h (whose reductions call it). Nothing
# else changes.
file(READ "${SRC}" s)
string(REGEX REPLACE "([A-Za-z_][A-Za-z0-9_]*)<<<" "EMU_LAUNCH(\\1, " s "${s}")
string(REPLACE ">>>" ")" s "${s}")
set(threaded 0)
string(FIND "${s}" "__syncthreads" at)
string(FIND "${s}" "block_reduce.h" at_blocks)
if(NOT at EQUAL -1 OR NOT at_blocks EQUAL -1)
  set(threaded 1)
endif()
file(WRITE "${DST}" "// Generated from ${SRC} by tests/gpu_emu/gen.cmake.\n#define EMU_THREADED ${threaded}\n#line 1 \"${SRC}\"\n${s}")
