# OpenBLAS for sgemm/dgemm, preferably Debian's OpenMP build (libopenblas-openmp-dev): the
# pthread build's threads and our OpenMP loops' spinning threads fight over the cores (a
# conv backward ran 3-15x slower). The library is linked by full path, so the build's RPATH
# picks the OpenMP variant whatever the system's libopenblas.so.0 alternative points to.
# SONATA_BLAS=AUTO falls back to a plain
# blocked loop when OpenBLAS is absent (the GPU machines have no Debian packages; there the
# CPU only serves as the tests' reference), ON requires it.
set(SONATA_BLAS AUTO CACHE STRING "Use OpenBLAS for CPU GEMM: AUTO, ON or OFF")
set_property(CACHE SONATA_BLAS PROPERTY STRINGS AUTO ON OFF)
add_library(sonata_blas INTERFACE)
set(SONATA_WITH_BLAS OFF)
if(NOT SONATA_BLAS STREQUAL "OFF")
  find_path(SONATA_CBLAS_INCLUDE cblas.h PATH_SUFFIXES ${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp
            openblas ${CMAKE_LIBRARY_ARCHITECTURE}/openblas-pthread)
  find_library(SONATA_OPENBLAS_LIB NAMES openblas
               PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp NO_DEFAULT_PATH)
  find_library(SONATA_OPENBLAS_LIB NAMES openblas)
  if(SONATA_CBLAS_INCLUDE AND SONATA_OPENBLAS_LIB)
    set(SONATA_WITH_BLAS ON)
    target_include_directories(sonata_blas INTERFACE ${SONATA_CBLAS_INCLUDE})
    target_link_libraries(sonata_blas INTERFACE ${SONATA_OPENBLAS_LIB})
    target_compile_definitions(sonata_blas INTERFACE SONATA_WITH_BLAS=1)
  elseif(SONATA_BLAS STREQUAL "ON")
    message(FATAL_ERROR "OpenBLAS not found: install libopenblas-openmp-dev (tools/setup.sh does)")
  else()
    message(WARNING "sonata: OpenBLAS not found, CPU GEMM uses the slow built-in loop")
  endif()
endif()
