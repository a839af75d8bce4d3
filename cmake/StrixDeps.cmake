# Finds the distribution packages strix builds on and stops with the package name when one is
# missing. Produces the interface target strix_deps and STRIX_HAVE_* compile definitions.
find_package(PkgConfig)
add_library(strix_deps INTERFACE)

# cJSON (checkpoint headers): Debian libcjson-dev
find_path(CJSON_INCLUDE_DIR cjson/cJSON.h)
find_library(CJSON_LIBRARY cjson)
if(NOT CJSON_INCLUDE_DIR OR NOT CJSON_LIBRARY)
  message(FATAL_ERROR "strix: cJSON not found. Install it: apt-get install libcjson-dev")
endif()
target_include_directories(strix_deps INTERFACE ${CJSON_INCLUDE_DIR})
target_link_libraries(strix_deps INTERFACE ${CJSON_LIBRARY})

# PCRE2 (the tokenizers' pre-tokenizer regexes, src/text/): Debian libpcre2-dev
find_path(PCRE2_INCLUDE_DIR pcre2.h)
find_library(PCRE2_LIBRARY pcre2-8)
if(NOT PCRE2_INCLUDE_DIR OR NOT PCRE2_LIBRARY)
  message(FATAL_ERROR "strix: PCRE2 not found. Install it: apt-get install libpcre2-dev")
endif()
target_include_directories(strix_deps INTERFACE ${PCRE2_INCLUDE_DIR})
target_link_libraries(strix_deps INTERFACE ${PCRE2_LIBRARY})

# utf8proc (Unicode normalization of tokenizers, src/text/): Debian libutf8proc-dev
find_path(UTF8PROC_INCLUDE_DIR utf8proc.h)
find_library(UTF8PROC_LIBRARY utf8proc)
if(NOT UTF8PROC_INCLUDE_DIR OR NOT UTF8PROC_LIBRARY)
  message(FATAL_ERROR "strix: utf8proc not found. Install it: apt-get install libutf8proc-dev")
endif()
target_include_directories(strix_deps INTERFACE ${UTF8PROC_INCLUDE_DIR})
target_link_libraries(strix_deps INTERFACE ${UTF8PROC_LIBRARY})

# OpenBLAS (the cpu-blas backend's GEMM): Debian libopenblas-dev
if(STRIX_BLAS)
  find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas openblas-pthread openblas-openmp)
  find_library(OPENBLAS_LIBRARY openblas)
  if(NOT OPENBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
    message(FATAL_ERROR "strix: OpenBLAS not found. Install it: apt-get install libopenblas-dev "
                        "(or configure with -DSTRIX_BLAS=OFF to build without the cpu-blas backend)")
  endif()
  message(STATUS "strix: OpenBLAS ${OPENBLAS_LIBRARY}")
  target_include_directories(strix_deps INTERFACE ${OPENBLAS_INCLUDE_DIR})
  target_link_libraries(strix_deps INTERFACE ${OPENBLAS_LIBRARY})
  target_compile_definitions(strix_deps INTERFACE STRIX_HAVE_BLAS=1)
else()
  message(STATUS "strix: OpenBLAS off (cpu-blas backend unavailable)")
endif()


# MPI (data-parallel training across processes, src/dist/mpi.c): Debian libopenmpi-dev (and
# openmpi-bin for mpirun). STRIX_MPI: AUTO (on when found), ON (stop when it is not) or OFF. A build
# without it trains in one process and refuses to run as several.
set(STRIX_MPI AUTO CACHE STRING "Build the MPI communicator: AUTO, ON or OFF")
set_property(CACHE STRIX_MPI PROPERTY STRINGS AUTO ON OFF)
set(STRIX_HAVE_MPI OFF)
set(STRIX_NCCL AUTO CACHE STRING "Give the CUDA plugin NCCL collectives: AUTO, ON or OFF")
set_property(CACHE STRIX_NCCL PROPERTY STRINGS AUTO ON OFF)
if(NOT STRIX_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS C)
  if(MPI_C_FOUND)
    set(STRIX_HAVE_MPI ON)
    message(STATUS "strix: MPI found (${MPI_C_LIBRARIES}): multi-process training on")
    target_compile_definitions(strix_deps INTERFACE STRIX_HAVE_MPI=1)
  elseif(STRIX_MPI STREQUAL "ON")
    message(FATAL_ERROR "strix: STRIX_MPI=ON but MPI was not found. Install it: apt-get install "
                        "libopenmpi-dev openmpi-bin")
  else()
    message(STATUS "strix: MPI not found: multi-process training off (apt-get install "
                   "libopenmpi-dev openmpi-bin)")
  endif()
endif()

# cmocka (the test framework): Debian libcmocka-dev
if(STRIX_BUILD_TESTS)
  find_path(CMOCKA_INCLUDE_DIR cmocka.h)
  find_library(CMOCKA_LIBRARY cmocka)
  if(NOT CMOCKA_INCLUDE_DIR OR NOT CMOCKA_LIBRARY)
    message(FATAL_ERROR "strix: cmocka not found. Install it: apt-get install libcmocka-dev "
                        "(or configure with -DSTRIX_BUILD_TESTS=OFF)")
  endif()
endif()

# GPU backends (src/backends/cuda/*.cu). STRIX_CUDA / STRIX_HIP: AUTO (on when the compiler is
# found), ON (stop when it is not) or OFF. Nothing GPU-related changes in a build without them.
#   CUDA: nvcc (PATH, CMAKE_CUDA_COMPILER or /usr/local/cuda/bin) + the toolkit's cudart/cuBLAS.
#   HIP:  hipcc (Debian: hipcc + libamdhip64-dev) + libamdhip64; hipBLAS when found, else the GEMM
#         slots use our own tiled kernel.
set(STRIX_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
set_property(CACHE STRIX_CUDA PROPERTY STRINGS AUTO ON OFF)
set(STRIX_HIP AUTO CACHE STRING "Build the HIP backend: AUTO, ON or OFF")
set_property(CACHE STRIX_HIP PROPERTY STRINGS AUTO ON OFF)

set(STRIX_HAVE_CUDA OFF)
if(NOT STRIX_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    find_program(STRIX_NVCC nvcc)
    if(NOT STRIX_NVCC)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(STRIX_HAVE_CUDA ON)
    message(STATUS "strix: CUDA backend on (${CMAKE_CUDA_COMPILER})")
  elseif(STRIX_CUDA STREQUAL "ON")
    message(FATAL_ERROR "strix: STRIX_CUDA=ON but nvcc was not found. Install the CUDA toolkit "
                        "or pass -DCMAKE_CUDA_COMPILER=/path/to/nvcc")
  else()
    message(STATUS "strix: CUDA backend off (no nvcc)")
  endif()
endif()

set(STRIX_HAVE_HIP OFF)
if(NOT STRIX_HIP STREQUAL "OFF")
  find_program(STRIX_HIPCC hipcc HINTS /opt/rocm/bin)
  find_library(STRIX_AMDHIP64 amdhip64 HINTS /opt/rocm/lib)
  find_library(STRIX_HIPBLAS hipblas HINTS /opt/rocm/lib)
  find_path(STRIX_HIPBLAS_INCLUDE NAMES hipblas.h hipblas/hipblas.h HINTS /opt/rocm/include
            PATH_SUFFIXES hipblas)
  if(NOT STRIX_HIPBLAS_INCLUDE)
    set(STRIX_HIPBLAS "") # the library without its header: build with our own SGEMM
  endif()
  if(STRIX_HIPCC AND STRIX_AMDHIP64)
    set(STRIX_HAVE_HIP ON)
    set(STRIX_HIP_ARCHITECTURES "gfx900;gfx906;gfx908;gfx90a;gfx1030" CACHE STRING
        "AMD GPU targets of the HIP backend")
    if(STRIX_HIPBLAS)
      message(STATUS "strix: HIP backend on (${STRIX_HIPCC}, hipBLAS ${STRIX_HIPBLAS})")
    else()
      message(STATUS "strix: HIP backend on (${STRIX_HIPCC}; no hipBLAS: own SGEMM)")
    endif()
  elseif(STRIX_HIP STREQUAL "ON")
    message(FATAL_ERROR "strix: STRIX_HIP=ON but hipcc or libamdhip64 was not found. Install "
                        "them: apt-get install hipcc libamdhip64-dev")
  else()
    message(STATUS "strix: HIP backend off (no hipcc)")
  endif()
endif()
