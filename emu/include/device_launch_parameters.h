#pragma once
// CUDA's built-in variables (threadIdx, blockIdx, blockDim, gridDim, warpSize) for the
// emulator: per host thread, set by the executor each time it switches to a CUDA thread's
// fiber, so kernel code reads them as on a card.
#include "vector_types.h"

// __thread, not thread_local: no dynamic initialisation, so reads compile to one
// TLS-relative load (initial-exec: the executor is linked statically).
extern __thread uint3 threadIdx __attribute__((tls_model("initial-exec")));
extern __thread uint3 blockIdx __attribute__((tls_model("initial-exec")));
extern __thread dim3 blockDim __attribute__((tls_model("initial-exec")));
extern __thread dim3 gridDim __attribute__((tls_model("initial-exec")));
constexpr int warpSize = 32;
