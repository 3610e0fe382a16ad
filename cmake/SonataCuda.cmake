# CUDA backend: AUTO switches it on when nvcc and the CUDA libraries are found.
# cuDNN and NCCL are searched in the toolkit, under CUDNN_ROOT / NCCL_ROOT, and in the
# Python wheels PyTorch brings (site-packages/nvidia/cudnn, site-packages/nvidia/nccl).
set(SONATA_WITH_CUDA OFF)
set(SONATA_WITH_CUDNN OFF)
set(SONATA_WITH_NCCL OFF)
# Every target that compiles CUDA sources (*.cu) calls this: under nvcc nothing to do; under
# the emulator the sources are C++ compiled with the kernel executor's instrumentation.
function(sonata_cuda_sources target)
  if(NOT SONATA_CUDA_EMU)
    return()
  endif()
  get_target_property(_sources ${target} SOURCES)
  set(_cu "")
  foreach(_s ${_sources})
    if(_s MATCHES "\\.cu$")
      list(APPEND _cu ${_s})
    endif()
  endforeach()
  if(NOT _cu)
    return()
  endif()
  if(COMMAND sonata_emu_kernel_sources)
    # emu/exec's function: LANGUAGE CXX and the instrumentation flags of kernel code.
    sonata_emu_kernel_sources(${target} ${_cu})
  else()
    set_source_files_properties(${_cu} TARGET_DIRECTORY ${target} PROPERTIES LANGUAGE CXX)
  endif()
endfunction()

set(SONATA_CUDA_EMU OFF)
if(SONATA_CUDA STREQUAL "OFF")
  return()
endif()

# SONATA_CUDA=EMU: no nvcc and no CUDA toolkit. The CUDA sources compile as C++ against the
# emulator's drop-in headers (emu/include) and run on the CPU under its model of CUDA's rules
# (emu/, README "The CUDA emulator"). Every CUDA target below resolves to the emulator.
if(SONATA_CUDA STREQUAL "EMU")
  set(SONATA_CUDA_EMU ON)
  set(SONATA_WITH_CUDA ON)
  set(SONATA_WITH_CUDNN ON)
  set(SONATA_WITH_NCCL ON)
  add_compile_definitions(SONATA_CUDA_EMU=1)
  set(_emu_include ${CMAKE_CURRENT_LIST_DIR}/../emu/include)
  cmake_path(NORMAL_PATH _emu_include)
  add_library(sonata_cuda_emu INTERFACE)
  # First on the include path: nothing of a CUDA toolkit may be found instead.
  target_include_directories(sonata_cuda_emu BEFORE INTERFACE ${_emu_include})
  target_link_libraries(sonata_cuda_emu INTERFACE sonata_emu_runtime sonata_emu_exec
                                                  sonata_emu_libs)
  foreach(_lib cudart cublas cublasLt cufft nvtx3)
    add_library(CUDA::${_lib} INTERFACE IMPORTED GLOBAL)
    target_link_libraries(CUDA::${_lib} INTERFACE sonata_cuda_emu)
  endforeach()
  add_library(sonata_cudnn INTERFACE)
  target_link_libraries(sonata_cudnn INTERFACE sonata_cuda_emu)
  add_library(sonata_nccl INTERFACE)
  target_link_libraries(sonata_nccl INTERFACE sonata_cuda_emu)
  message(STATUS "sonata: CUDA emulated on the CPU (emu/), no GPU used")
  return()
endif()

include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  if(SONATA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SONATA_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER)")
  endif()
  message(STATUS "sonata: no nvcc found, building the CPU backend only")
  return()
endif()
enable_language(CUDA)
# Debian's CMake 3.25 does not know nvcc's C++20 flag: teach it, then ask for C++20.
if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
find_package(CUDAToolkit REQUIRED)
set(SONATA_WITH_CUDA ON)

# Python wheels: every site-packages an interpreter on this machine knows about. SONATA_PYTHON
# (or $PYTHON) first, then the lent GPU machines' PyTorch interpreter, whose venv is not on
# their PATH, then whatever python3 is. SONATA_WHEEL_SITE names a site-packages folder
# directly (tools/rehearse_card_build.sh: wheels unpacked here, no interpreter needed).
set(SONATA_PYTHON "$ENV{PYTHON}" CACHE STRING "Python interpreter whose wheels may hold cuDNN and NCCL")
set(SONATA_WHEEL_SITE "" CACHE PATH "A site-packages folder holding nvidia/cudnn and nvidia/nccl")
set(_sonata_wheel_roots ${SONATA_WHEEL_SITE})
foreach(_py ${SONATA_PYTHON} /opt/torch/.venv/bin/python3 python3 /usr/bin/python3)
  execute_process(COMMAND ${_py} -c "import site,sys; print(';'.join(site.getsitepackages()+[site.getusersitepackages()]))"
                  OUTPUT_VARIABLE _sp OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0)
    list(APPEND _sonata_wheel_roots ${_sp})
  endif()
endforeach()

function(sonata_find_cuda_lib var header libname root_var wheel_dir)
  set(_hints ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
  if(DEFINED ${root_var})
    list(PREPEND _hints ${${root_var}})
  endif()
  if(DEFINED ENV{${root_var}})
    list(PREPEND _hints $ENV{${root_var}})
  endif()
  foreach(_sp ${_sonata_wheel_roots})
    list(APPEND _hints ${_sp}/nvidia/${wheel_dir} ${_sp}/nvidia/cu13 ${_sp}/nvidia/cu12)
  endforeach()
  find_path(${var}_INCLUDE ${header} HINTS ${_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  # Wheels ship only the versioned shared object (libcudnn.so.9, libnccl.so.2). NAMES_PER_DIR:
  # the first folder of the hints wins whichever name it holds, so a named root or a wheel is
  # not passed over for a toolkit's libcudnn.so that the header found first does not match.
  find_library(${var}_LIB NAMES ${libname} lib${libname}.so.9 lib${libname}.so.2 NAMES_PER_DIR
               HINTS ${_hints} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
  if(${var}_INCLUDE AND ${var}_LIB)
    set(${var}_FOUND ON PARENT_SCOPE)
  else()
    set(${var}_FOUND OFF PARENT_SCOPE)
  endif()
endfunction()

sonata_find_cuda_lib(SONATA_CUDNN cudnn.h cudnn CUDNN_ROOT cudnn)
if(SONATA_CUDNN_FOUND)
  set(SONATA_WITH_CUDNN ON)
  add_library(sonata_cudnn INTERFACE)
  target_include_directories(sonata_cudnn INTERFACE ${SONATA_CUDNN_INCLUDE})
  target_link_libraries(sonata_cudnn INTERFACE ${SONATA_CUDNN_LIB})
endif()
sonata_find_cuda_lib(SONATA_NCCL nccl.h nccl NCCL_ROOT nccl)
if(SONATA_NCCL_FOUND)
  set(SONATA_WITH_NCCL ON)
  add_library(sonata_nccl INTERFACE)
  target_include_directories(sonata_nccl INTERFACE ${SONATA_NCCL_INCLUDE})
  target_link_libraries(sonata_nccl INTERFACE ${SONATA_NCCL_LIB})
endif()
message(STATUS "sonata: cuDNN ${SONATA_CUDNN_LIB}; NCCL ${SONATA_NCCL_LIB}")
