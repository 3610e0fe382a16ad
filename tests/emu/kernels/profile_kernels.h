#pragma once
// Launchers of the emulated profile's self-test kernels (tests/emu/kernels/profile_kernels.cu):
// access patterns whose sectors, ideal sectors and shared-memory wavefronts are known from
// the hardware's rules, to check emu/exec/access_profile against.
#include <cuda_runtime.h>

namespace sonata::emu::test {

// out[i] = in[i * stride] for i < n, one thread each (blocks of 128): stride 1 is coalesced,
// stride 8 touches a sector per lane for 4 useful bytes.
cudaError_t strided_gather(const float* in, float* out, int n, int stride);
// out[i] = in[0] for i < n: every lane of a warp reads one word (a broadcast).
cudaError_t broadcast(const float* in, float* out, int n);
// out[i] = __ldg(&in[i]) for n 16-byte vectors: one wide load instruction per lane, as on a
// card (not four 4-byte requests 16 bytes apart).
cudaError_t vector_ldg(const uint4* in, uint4* out, int n);
// A 2-byte element per lane, n of them: coalesced, but narrow.
cudaError_t narrow_copy(const unsigned short* in, unsigned short* out, int n);
// One warp writes shared memory at word lane * stride, then reads it back to out[lane]:
// stride 1 is conflict-free, stride 32 puts all 32 lanes in bank 0.
cudaError_t shared_stride(float* out, int stride);

}  // namespace sonata::emu::test
