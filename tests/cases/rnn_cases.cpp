#include "tests/cases/rnn_cases.h"

namespace sonata::testing {

Tensor RnnCellCase::lengths_tensor(Device device) const {
  return from_vector(lengths, {batch}, device);
}

const std::vector<RnnCellCase>& rnn_cell_cases() {
  static const std::vector<RnnCellCase> cases = {
      // At step 2: samples 0 and 2 active, sample 1 inactive (2 >= 2).
      {"batch 3, hidden 4", 3, 4, {4, 2, 3}, 2},
      // At step 2: samples 1 and 4 inactive.
      {"batch 5, hidden 37", 5, 37, {4, 2, 3, 7, 1}, 2},
  };
  return cases;
}

Tensor RnnSequenceCase::lengths_tensor(Device device) const {
  if (lengths.empty()) return Tensor();
  return from_vector(lengths, {batch}, device);
}

const std::vector<RnnSequenceCase>& rnn_sequence_cases() {
  static const std::vector<RnnSequenceCase> cases = {
      {"5 steps, batch 3, hidden 4, full lengths", 5, 3, 4, {}},
      {"5 steps, batch 3, hidden 4, sample 1 stops after 2 steps, sample 2 never starts",
       5,
       3,
       4,
       {5, 2, 0}},
      {"5 steps, batch 3, hidden 4, the longest sample in the middle", 5, 3, 4, {3, 5, 1}},
      {"7 steps, batch 5, hidden 37, ragged", 7, 5, 37, {4, 2, 3, 7, 1}, true},
  };
  return cases;
}

}  // namespace sonata::testing
