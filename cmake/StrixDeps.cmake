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

# OpenMP (parallel loops over independent outputs): part of gcc
if(STRIX_OPENMP)
  find_package(OpenMP COMPONENTS C)
  if(OpenMP_C_FOUND)
    message(STATUS "strix: OpenMP found")
    target_compile_definitions(strix_deps INTERFACE STRIX_HAVE_OPENMP=1)
  else()
    message(WARNING "strix: OpenMP not found, CPU loops run on one thread")
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
