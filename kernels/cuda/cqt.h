#pragma once
// The constant-Q dB image of a batch of equal-length clips on CUDA, the twin of
// kernels/cpu/cqt.h's cqt_magnitude + amplitude_to_db_ref_max:
//   1. cqt_magnitude: one block per (frame, bin, clip); its threads split the bin's taps, sum
//      re and im in float (in another order than the CPU's, so results agree within rounding),
//      and a block reduction gives |C|;
//   2. cqt_db: one block per clip, its max by a block reduction, then 20 log10 against it,
//      floored at -top_db.
// Everything is asynchronous on `stream`; every pointer is device memory owned by the caller.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace sonata::kernels::cuda {

struct CqtDeviceBankView {
  int64_t bins = 0;
  const int64_t* taps = nullptr;   // [bins]
  const int64_t* first = nullptr;  // [bins]: where bin k's taps start in re / im
  const float* re = nullptr;       // all bins' taps, as kernels/cpu/cqt.h's CqtBank
  const float* im = nullptr;
};

// samples: [clips, length]; out: [clips, bins, frames] dB, frames = 1 + length / hop.
void cqt_db(const CqtDeviceBankView& bank, const float* samples, int64_t clips, int64_t length,
            int64_t hop, double top_db, float* out, cudaStream_t stream);

}  // namespace sonata::kernels::cuda
