#pragma once
// The LSTM / GRU cells' and sequences' cases, written once: the CPU value checks (the cells
// against the formulas, the sequences against the per-step composition), the CPU float64
// gradient checks and masking checks (tests/ops/test_rnn_cell.cpp,
// tests/ops/test_rnn_sequence.cpp) and the CUDA parity checks (tests/cuda/test_cuda_rnn.cpp)
// all iterate these tables, each under its dimensions (masked or not, which outputs are used,
// both directions, with and without b_hh).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace sonata::testing {

// One cell step: gates [batch, gates * hidden], states [batch, hidden].
struct RnnCellCase {
  std::string name;
  int64_t batch, hidden;
  std::vector<int64_t> lengths;  // [batch]; a sample with length <= step is inactive at step
  int64_t step;

  bool active(int64_t sample) const { return step < lengths[size_t(sample)]; }
  Tensor lengths_tensor(Device device = Device::cpu()) const;
};

// Batch 3, hidden 4, and CUDA's odd sizes that leave the grid-stride tail partly empty; each
// with an inactive sample at its step.
const std::vector<RnnCellCase>& rnn_cell_cases();

// A whole direction: gates_x [steps, batch, gates * hidden], weight_hh [gates * hidden, hidden].
struct RnnSequenceCase {
  std::string name;
  int64_t steps, batch, hidden;
  std::vector<int64_t> lengths;  // [batch]; empty: every sample runs every step
  // CUDA's launch sizes; the gradient check nudges every input element in turn, each nudge a
  // whole sequence, so it leaves these to the value and parity checks.
  bool large = false;

  // Undefined when every sample runs every step.
  Tensor lengths_tensor(Device device = Device::cpu()) const;
};

// Full lengths; a sample stopping early and one that never starts; the longest in the middle;
// CUDA's odd sizes with ragged lengths.
const std::vector<RnnSequenceCase>& rnn_sequence_cases();

}  // namespace sonata::testing
