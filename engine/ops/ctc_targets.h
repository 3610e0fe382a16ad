#pragma once
// The integer side of the CTC loss: validates targets and lengths against log_probs' shape
// on the host, and packs them into one int64 buffer on the loss's device in the layout of
// kernels::CtcTargets.
#include <cstdint>
#include <vector>

#include "engine/tensor.h"
#include "kernels/common/ctc.h"

namespace sonata {

struct CtcBatch {
  Tensor buffer;  // i64: labels | label_offsets | target_lengths | input_lengths |
                  //      class_positions | class_starts
  int64_t batch = 0, classes = 0, label_count = 0;
  int64_t max_target_length = 0;
  std::vector<int64_t> target_lengths;  // host copy, for the mean reduction

  kernels::CtcTargets view() const;
};

// `op` names the calling op in error messages; shape is log_probs' [T, N, C].
CtcBatch pack_ctc_batch(const char* op, const Shape& shape, const Tensor& targets,
                        const Tensor& input_lengths, const Tensor& target_lengths, int64_t blank,
                        Device device);

}  // namespace sonata
