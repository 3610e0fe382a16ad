#pragma once
// cross_entropy's and nll_loss's cases, written once: the CPU value checks (float64 against
// loops by the definition, float32 against float64, nll_loss of log_softmax against
// cross_entropy), the CPU float64 gradient checks (tests/ops/test_cross_entropy.cpp) and the
// CUDA parity checks (tests/cuda/test_cuda_loss.cpp) all iterate this table, each case under
// every reduction, unweighted and with class_weights, both ignore indices and (cross_entropy)
// every label smoothing. The huge-logit, unbatched and bad-target tests stay by name.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ops/loss.h"
#include "engine/tensor.h"

namespace sonata::testing {

// Marks an ignored position in the table's targets; each check substitutes its ignore_index.
inline constexpr int64_t kIgnoredTarget = -100;

struct CrossEntropyCase {
  std::string name;
  Shape logits;  // [N, C] or [N, C, d...]
  // Row-major over target_shape(), kIgnoredTarget where ignored; empty: cycling_targets.
  std::vector<int64_t> targets = {};
  // The logits are a contiguous view one element into their storage: whole 16-byte packs per
  // row, but misaligned, so CUDA's kernels read element by element.
  bool misaligned = false;
  // A launch-path size for CUDA (block per row, columns, 16-byte packs); the gradient check
  // nudges every input element in turn (cost ~ numel^2 per run), so it leaves these to the
  // value and parity checks; the small rows and columns cases hold the gradient.
  bool large = false;

  int64_t classes() const { return logits[1]; }
  Shape target_shape() const;  // the logits' shape without dim 1
  // The tensor a check generates: the logits' shape, or the flat storage when misaligned.
  Shape input_shape() const;
  // The logits from that input (a view into it when misaligned).
  Tensor logits_of(const Tensor& input) const;
  // The targets with `ignore_index` at the ignored positions.
  std::vector<int64_t> target_values(int64_t ignore_index) const;
  Tensor target_tensor(int64_t ignore_index) const;
};

// Every fifth position ignored, the others cycling through the classes in steps of 11, a step
// coprime with every class count in the table (so no case's targets are all one class).
std::vector<int64_t> cycling_targets(int64_t count, int64_t classes);

// The table's dimensions besides the case: every reduction, no label smoothing up to all of
// it, and an ignore_index outside the classes (PyTorch's default) or naming class 1, whose
// positions are then skipped too.
inline constexpr Reduction kLossReductions[] = {Reduction::none, Reduction::sum, Reduction::mean};
inline constexpr double kLabelSmoothings[] = {0.0, 0.1, 0.15, 0.2, 1.0};
inline constexpr int64_t kIgnoreIndices[] = {-100, 1};

// The weighted runs' class weights: 0.5, 2, 1.25, 0.75, then spread over [0.5, 2).
std::vector<double> class_weights(int64_t classes);
Tensor class_weight_tensor(int64_t classes, DType dtype = DType::f64);

// Rows (CUDA: warp per row, block per row for 3000 classes, 16-byte packs, misaligned rows)
// and columns for [N, C, d...].
const std::vector<CrossEntropyCase>& cross_entropy_cases();

}  // namespace sonata::testing
