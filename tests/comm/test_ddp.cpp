// DistributedDataParallel's broadcasts: rank 0's parameters and buffers at construction, its
// buffers (BatchNorm running statistics) again on broadcast_buffers(). Expected values are
// closed forms of rank 0's inputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <vector>

#include "comm/broadcast_coalesced.h"
#include "comm/ddp.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "models/layers/batch_norm.h"
#include "tests/comm/comm_group.h"

using namespace sonata;
using sonata::testing::comm_group;
using sonata::testing::shared_comm_group;

namespace {

// x[n][c] = (r + 1) * (c + 1) + (n - 1.5) for n < 4: channel c's batch mean is (r + 1)(c + 1),
// its unbiased variance 5/3 whatever the rank.
Tensor rank_input(int64_t r, int64_t channels) {
  std::vector<double> values;
  for (int64_t n = 0; n < 4; ++n)
    for (int64_t c = 0; c < channels; ++c) values.push_back(double((r + 1) * (c + 1)) + n - 1.5);
  return from_vector(values, {4, channels}, TensorOptions{}.with(DType::f64));
}

double max_error(const Tensor& t, const std::vector<double>& expected) {
  const std::vector<double> got = t.to_vector<double>();
  double error = got.size() == expected.size() ? 0 : INFINITY;
  for (size_t i = 0; i < got.size() && i < expected.size(); ++i)
    error = std::max(error, std::abs(got[i] - expected[i]));
  return error;
}

}  // namespace

TEST_CASE("DDP makes every replica's parameters and buffers rank 0's", "[comm][ddp]") {
  ProcessGroup& group = comm_group();
  const int64_t r = group.rank(), C = 3;
  auto bn = std::make_shared<BatchNorm>(C);
  bn->to(DType::f64);
  NamedTensors state = bn->state_dict();  // weight, bias, running_mean, running_var, count
  {
    NoGradGuard no_grad;
    state[0].second.fill_(double(r + 2));       // weight
    state[4].second.fill_(double(10 * r + 7));  // num_batches_tracked (i64)
  }
  DistributedDataParallel ddp(bn, shared_comm_group());
  CHECK(max_error(state[0].second, {2, 2, 2}) == 0);
  CHECK(state[4].second.item() == 7);

  // One training forward on rank-dependent data: the running statistics now differ...
  bn->forward(rank_input(r, C));
  std::vector<double> mean0, var0;
  for (int64_t c = 0; c < C; ++c) {
    mean0.push_back(0.1 * double(c + 1));  // 0.9 * 0 + 0.1 * rank 0's batch mean
    var0.push_back(0.9 + 0.1 * 5.0 / 3.0);
  }
  const double tolerance = 1e-15;
  if (r != 0) CHECK(max_error(state[2].second, mean0) > 0.05);
  CHECK(state[4].second.item() == 8);
  // ... until rank 0's are broadcast.
  ddp.broadcast_buffers();
  CHECK(max_error(state[2].second, mean0) <= tolerance);
  CHECK(max_error(state[3].second, var0) <= tolerance);
  CHECK(state[4].second.item() == 8);

  // forward() in training broadcasts before running: each rank then adds its own batch to
  // rank 0's statistics (0), not to its own (r).
  {
    NoGradGuard no_grad;
    state[2].second.fill_(double(r));
  }
  ddp.forward(rank_input(r, C));
  std::vector<double> mean_after;
  for (int64_t c = 0; c < C; ++c) mean_after.push_back(0.1 * double((r + 1) * (c + 1)));
  CHECK(max_error(state[2].second, mean_after) <= tolerance);
}

TEST_CASE("broadcast_coalesced sends tensors of several dtypes and shapes in place",
          "[comm][ddp]") {
  ProcessGroup& group = comm_group();
  const double r = group.rank();
  const int root = group.world_size() - 1;  // not always rank 0
  std::vector<Tensor> tensors{
      full({2, 3}, r + 1, TensorOptions{}.with(DType::f32)),
      full({}, r + 2, TensorOptions{}.with(DType::f64)),
      full({5}, r + 3, TensorOptions{}.with(DType::f32)).slice(0, 0, 5, 2),  // strided
      from_vector(std::vector<int64_t>{int64_t(r) + 4, 9}, {2}),
  };
  broadcast_coalesced(group, tensors, root);
  CHECK(max_error(tensors[0], std::vector<double>(6, root + 1)) == 0);
  CHECK(max_error(tensors[1], {double(root + 2)}) == 0);
  CHECK(max_error(tensors[2], std::vector<double>(3, root + 3)) == 0);
  CHECK(max_error(tensors[3], {double(root + 4), 9}) == 0);
}
