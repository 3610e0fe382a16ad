#pragma once
// Routes a kernel call to kernels/cpu or kernels/cuda by device: the CUDA twin takes the
// same arguments plus the device's current stream.
#include "base/error.h"
#include "engine/device.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/index.h"
#include "kernels/cpu/random.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/softmax.h"

#if SONATA_WITH_CUDA
#include "engine/cuda/stream.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/index.h"
#include "kernels/cuda/random.h"
#include "kernels/cuda/reduce.h"
#include "kernels/cuda/softmax.h"
#define SONATA_BACKEND(device, fn, ...)                                                     \
  ((device).is_cuda()                                                                       \
       ? ::sonata::kernels::cuda::fn(__VA_ARGS__, ::sonata::current_stream((device).index)) \
       : ::sonata::kernels::cpu::fn(__VA_ARGS__))
#else
#define SONATA_BACKEND(device, fn, ...)                                                           \
  ((device).is_cuda() ? throw ::sonata::Error(::sonata::str(#fn " on ", (device).str(), ": ",     \
                                                            ::sonata::cuda_unavailable_reason())) \
                      : ::sonata::kernels::cpu::fn(__VA_ARGS__))
#endif
