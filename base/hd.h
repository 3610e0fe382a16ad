#pragma once
// Marks the few small functions that run on host and device alike (Philox, half casts).
#if defined(__CUDACC__)
#define SONATA_HD __host__ __device__ __forceinline__
#else
#define SONATA_HD inline
#endif
