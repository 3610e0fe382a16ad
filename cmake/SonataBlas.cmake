# OpenBLAS (Debian's libopenblas-dev) for sgemm/dgemm; cblas.h comes with it.
find_path(SONATA_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-pthread
          x86_64-linux-gnu)
find_library(SONATA_OPENBLAS_LIB NAMES openblas)
if(NOT SONATA_CBLAS_INCLUDE OR NOT SONATA_OPENBLAS_LIB)
  message(FATAL_ERROR "OpenBLAS not found: install libopenblas-dev (tools/setup.sh does this)")
endif()
add_library(sonata_blas INTERFACE)
target_include_directories(sonata_blas INTERFACE ${SONATA_CBLAS_INCLUDE})
target_link_libraries(sonata_blas INTERFACE ${SONATA_OPENBLAS_LIB})
