#include "tests/cases/cross_entropy_cases.h"

#include "engine/ops.h"

namespace sonata::testing {

Shape CrossEntropyCase::target_shape() const {
  Shape shape = logits;
  shape.erase(shape.begin() + 1);
  return shape;
}

Shape CrossEntropyCase::input_shape() const {
  return misaligned ? Shape{1 + shape_numel(logits)} : logits;
}

Tensor CrossEntropyCase::logits_of(const Tensor& input) const {
  if (!misaligned) return input;
  return input.slice(0, 1, 1 + shape_numel(logits)).view(logits);
}

std::vector<int64_t> CrossEntropyCase::target_values(int64_t ignore_index) const {
  std::vector<int64_t> values =
      targets.empty() ? cycling_targets(shape_numel(target_shape()), classes()) : targets;
  for (int64_t& t : values)
    if (t == kIgnoredTarget) t = ignore_index;
  return values;
}

Tensor CrossEntropyCase::target_tensor(int64_t ignore_index) const {
  return from_vector(target_values(ignore_index), target_shape());
}

std::vector<int64_t> cycling_targets(int64_t count, int64_t classes) {
  std::vector<int64_t> values(static_cast<size_t>(count));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = i % 5 == 3 ? kIgnoredTarget : int64_t((i * 11 + 1) % size_t(classes));
  return values;
}

std::vector<double> class_weights(int64_t classes) {
  const double first[] = {0.5, 2.0, 1.25, 0.75};
  std::vector<double> weights;
  for (int64_t k = 0; k < classes; ++k)
    weights.push_back(k < 4 ? first[k] : 0.5 + 1.5 * double((k * 37) % 101) / 101.0);
  return weights;
}

Tensor class_weight_tensor(int64_t classes, DType dtype) {
  return from_vector(class_weights(classes), {classes}, TensorOptions{}.with(DType::f64)).to(dtype);
}

const std::vector<CrossEntropyCase>& cross_entropy_cases() {
  static const std::vector<CrossEntropyCase> cases = {
      {"[5, 4] rows", {5, 4}, {3, 0, kIgnoredTarget, 1, 2}},
      {"[4, 3] rows", {4, 3}, {2, kIgnoredTarget, 0, 1}},
      {"[2, 3, 2, 2] columns", {2, 3, 2, 2}, {0, 2, 1, kIgnoredTarget, 2, 2, 0, 1}},
      {"[2, 3, 2, 2] columns, other targets", {2, 3, 2, 2}, {0, 2, 1, kIgnoredTarget, 2, 1, 0, 1}},
      {"[2, 3, 4] columns", {2, 3, 4}, {0, 1, 2, 0, kIgnoredTarget, kIgnoredTarget, 1, 2}},
      {"[12, 7] warp per row", {12, 7}},
      {"[16, 10] warp per row", {16, 10}},
      {"[4, 6, 5, 7] columns", {4, 6, 5, 7}, {}, false, true},
      {"[16, 64] warp per row in whole 16-byte packs", {16, 64}, {}, false, true},
      {"[6, 64] rows misaligned to 16-byte packs", {6, 64}, {}, true},
      {"[4, 3000] block per row", {4, 3000}, {}, false, true},
  };
  return cases;
}

}  // namespace sonata::testing
