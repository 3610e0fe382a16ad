#include "tests/cases/index_cases.h"

namespace sonata::testing {

namespace {

Tensor indices(const std::vector<int64_t>& values, const Shape& shape, Device device) {
  return from_vector(values, shape, device);
}

}  // namespace

Tensor IndexSelectCase::index_tensor(Device device) const {
  return indices(index, {int64_t(index.size())}, device);
}

Tensor GatherCase::index_tensor(Device device) const {
  return indices(index, index_shape, device);
}

Tensor ScatterAddCase::index_tensor(Device device) const {
  return indices(index, index_shape, device);
}

const std::vector<IndexSelectCase>& index_select_cases() {
  static const std::vector<IndexSelectCase> cases = [] {
    std::vector<IndexSelectCase> c = {
        {"dim 0", {4, 3}, 0, {2, 0, 2, 3}},
        {"dim 0 of a 3-D input", {4, 4, 3}, 0, {2, 0, 2, 3}},
        {"middle dim", {2, 4, 3}, 1, {2, 0, 2, 3}},
        {"middle dim, a row twice", {2, 4, 3}, 1, {3, 3, 0}},
        {"middle dim of a square input", {4, 4, 3}, 1, {2, 0, 2, 3}},
        {"last dim of a transposed input", {4, 3}, -1, {2, 0, 2, 3}, true},
    };
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < 500; ++i) rows.push_back((i * 7) % 13);
    c.push_back({"500 picks of 13 rows", {13, 40}, 0, rows});
    return c;
  }();
  return cases;
}

const std::vector<GatherCase>& gather_cases() {
  static const std::vector<GatherCase> cases = {
      {"dim 1", {3, 4}, 1, {0, 0, 3, 1, 2, 1, 3, 3, 3}, {3, 3}},
      {"dim 0 with fewer rows than the input", {4, 3}, 0, {3, 0, 0, 1, 1, 2}, {2, 3}},
      {"a transposed input", {4, 3}, 1, {0, 3, 3, 2, 1, 0}, {3, 2}, true},
      {"last dim of a 3-D input, fewer columns",
       {2, 3, 4},
       2,
       {0, 3, 3, 1, 0, 2, 2, 2, 1, 1, 0, 3, 0, 0, 1, 2, 3, 2},
       {2, 3, 3}},
  };
  return cases;
}

const std::vector<ScatterAddCase>& scatter_add_cases() {
  static const std::vector<ScatterAddCase> cases = [] {
    std::vector<ScatterAddCase> c = {
        {"dim 0 with colliding indices", {3, 2}, {4, 2}, 0, {0, 2, 2, 2, 0, 1, 2, 0}, {4, 2}},
        {"last dim, non-contiguous source", {2, 5}, {3, 2}, -1, {4, 4, 0, 1, 2, 4}, {2, 3}, true},
    };
    std::vector<int64_t> targets;
    for (int64_t i = 0; i < 16 * 256; ++i) targets.push_back((i * 5) % 64);
    c.push_back({"four sources per target", {16, 64}, {16, 256}, 1, targets, {16, 256}});
    return c;
  }();
  return cases;
}

}  // namespace sonata::testing
