// Collectives on the group this run was started with (the single group without mpiexec, the
// MPI group under mpiexec -np 2 and 3), against closed forms in the rank r and world size W.
// Every rank runs the same operations in the same order, so checks use CHECK (never REQUIRE
// between collectives): a failed check must not make one rank skip a collective its peers
// are waiting in.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "tests/comm/comm_group.h"

using namespace sonata;
using sonata::testing::comm_group;

namespace {

TensorOptions of(DType dtype) {
  return TensorOptions{}.with(dtype);
}

// A tensor of `dtype` holding value(i) for i in [0, n).
template <typename F>
Tensor make(int64_t n, DType dtype, F value) {
  if (dtype == DType::i64 || dtype == DType::i32) {
    std::vector<int64_t> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[size_t(i)] = int64_t(value(i));
    Tensor t = from_vector(values, {n});
    return dtype == DType::i64 ? t : t.to(dtype);
  }
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[size_t(i)] = double(value(i));
  return from_vector(values, {n}, of(dtype));
}

// How many elements differ from expected(i) by more than `tolerance`, and the first one.
struct Mismatch {
  int64_t count = 0;
  std::string first;
};
template <typename F>
Mismatch compare(const Tensor& t, F expected, double tolerance = 0) {
  Mismatch m;
  const std::vector<double> got = t.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) {
    const double want = double(expected(int64_t(i)));
    const double error = got[i] > want ? got[i] - want : want - got[i];
    if (error > tolerance) {
      if (m.count++ == 0) m.first = str("element ", i, ": got ", got[i], ", expected ", want);
    }
  }
  return m;
}

#define CHECK_MATCHES(tensor, expected, ...)                                         \
  do {                                                                               \
    const Mismatch mismatch_ = compare(tensor, expected __VA_OPT__(, ) __VA_ARGS__); \
    INFO(mismatch_.first);                                                           \
    CHECK(mismatch_.count == 0);                                                     \
  } while (0)

// Small positive integers: every partial sum is exact in f16, bf16, f32 and f64, so sums
// and averages (W + 1) / 2 * k have one right answer.
int64_t pattern(int64_t i) {
  return i % 7 + 1;
}

}  // namespace

TEST_CASE("all_reduce sum and avg of rank-dependent values equal the closed form",
          "[comm][all_reduce]") {
  ProcessGroup& group = comm_group();
  const int64_t r = group.rank(), W = group.world_size();
  const int64_t rank_sum = W * (W + 1) / 2;  // sum over ranks of (r + 1)
  for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::i32, DType::f16, DType::bf16}) {
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(1) << 20}) {
      if (is_half(dtype) && n > 7) continue;  // f16 stops being exact past 2048
      INFO("dtype " << dtype_name(dtype) << ", n " << n);
      Tensor t = make(n, dtype, [&](int64_t i) { return (r + 1) * pattern(i); });
      group.all_reduce(t, ReduceOp::sum)->wait();
      CHECK(t.dtype() == dtype);
      CHECK_MATCHES(t, [&](int64_t i) { return rank_sum * pattern(i); });
      if (!is_floating(dtype)) continue;
      Tensor a = make(n, dtype, [&](int64_t i) { return (r + 1) * pattern(i); });
      group.all_reduce(a, ReduceOp::avg)->wait();
      CHECK_MATCHES(a, [&](int64_t i) { return double(W + 1) / 2 * double(pattern(i)); });
    }
  }
}

TEST_CASE("all_reduce of large i64 and fractional f64 values", "[comm][all_reduce]") {
  ProcessGroup& group = comm_group();
  const int64_t r = group.rank(), W = group.world_size();
  // Past 32 bits: an i64 reduced as anything narrower would wrap.
  const int64_t big = int64_t(1) << 40;
  std::vector<int64_t> values = {big * (r + 1), -big * (r + 1) + r, r};
  Tensor t = from_vector(values, {3});
  group.all_reduce(t)->wait();
  const int64_t rank_sum = W * (W + 1) / 2, r_sum = W * (W - 1) / 2;
  CHECK(t.to_vector<int64_t>() ==
        std::vector<int64_t>{big * rank_sum, -big * rank_sum + r_sum, r_sum});
  // 1 / (r + 1) summed over ranks: the harmonic number H_W, order-independent to 1e-15.
  Tensor h = full({5}, 1.0 / double(r + 1), of(DType::f64));
  group.all_reduce(h, ReduceOp::avg)->wait();
  double harmonic = 0;
  for (int64_t k = 1; k <= W; ++k) harmonic += 1.0 / double(k);
  CHECK_MATCHES(
      h, [&](int64_t) { return harmonic / double(W); }, 1e-15);
}

TEST_CASE("all_reduce refuses integer averages and non-contiguous tensors", "[comm][errors]") {
  ProcessGroup& group = comm_group();
  Tensor ints = zeros({4}, of(DType::i64));
  CHECK_THROWS_WITH(group.all_reduce(ints, ReduceOp::avg), Catch::Contains("avg of i64 tensors"));
  Tensor strided = zeros({4, 4}).t();
  CHECK_THROWS_WITH(group.all_reduce(strided), Catch::Contains("must be contiguous"));
  Tensor bytes = zeros({4}, of(DType::u8));
  CHECK_THROWS_WITH(group.all_reduce(bytes), Catch::Contains("cannot reduce u8"));
  Tensor t = zeros({4});
  CHECK_THROWS_WITH(group.broadcast(t, group.world_size()), Catch::Contains("root"));
}

TEST_CASE("broadcast from each root gives every rank the root's values", "[comm][broadcast]") {
  ProcessGroup& group = comm_group();
  const int64_t r = group.rank();
  for (int root = 0; root < group.world_size(); ++root) {
    for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::bf16, DType::u8}) {
      INFO("root " << root << ", dtype " << dtype_name(dtype));
      Tensor t = make(9, dtype, [&](int64_t i) { return r * 10 + i; });
      group.broadcast(t, root)->wait();
      CHECK_MATCHES(t, [&](int64_t i) { return root * 10 + i; });
    }
  }
}

TEST_CASE("all_gather places rank j's block at j", "[comm][all_gather]") {
  ProcessGroup& group = comm_group();
  const int64_t r = group.rank(), W = group.world_size();
  const int64_t n = 5;
  for (DType dtype : {DType::f32, DType::i64, DType::f16}) {
    INFO("dtype " << dtype_name(dtype));
    const Tensor in = make(n, dtype, [&](int64_t i) { return r * 100 + i; });
    Tensor out = zeros({W * n}, of(dtype));
    group.all_gather(in, out)->wait();
    CHECK_MATCHES(out, [&](int64_t k) { return (k / n) * 100 + k % n; });
  }
  // In place: this rank's block of out already holds its contribution.
  Tensor out = zeros({W * n}, of(DType::f64));
  Tensor own = out.slice(0, r * n, (r + 1) * n);
  own.copy_(make(n, DType::f64, [&](int64_t i) { return -(r + 1) * (i + 1); }));
  group.all_gather(own, out)->wait();
  CHECK_MATCHES(out, [&](int64_t k) { return -(k / n + 1) * (k % n + 1); });
  Tensor wrong = zeros({W * n + 1});
  const Tensor in = zeros({n});
  CHECK_THROWS_WITH(group.all_gather(in, wrong), Catch::Contains("all_gather: out has"));
}

TEST_CASE("reduce_scatter gives rank r the reduction of block r", "[comm][reduce_scatter]") {
  ProcessGroup& group = comm_group();
  const int64_t r = group.rank(), W = group.world_size();
  const int64_t rank_sum = W * (W + 1) / 2;
  for (int64_t n : {int64_t(1), int64_t(6), int64_t(1000)}) {
    for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::bf16}) {
      if (dtype == DType::bf16 && n > 6) continue;  // bf16 integers are exact to 256
      INFO("dtype " << dtype_name(dtype) << ", n " << n);
      // Element k of the input (block k / n) is (r + 1) * pattern(k).
      const Tensor in = make(W * n, dtype, [&](int64_t k) { return (r + 1) * pattern(k); });
      Tensor out = zeros({n}, of(dtype));
      group.reduce_scatter(in, out, ReduceOp::sum)->wait();
      CHECK_MATCHES(out, [&](int64_t i) { return rank_sum * pattern(r * n + i); });
      if (!is_floating(dtype)) continue;
      Tensor avg = zeros({n}, of(dtype));
      group.reduce_scatter(in, avg, ReduceOp::avg)->wait();
      CHECK_MATCHES(avg, [&](int64_t i) { return double(W + 1) / 2 * double(pattern(r * n + i)); });
    }
  }
}

TEST_CASE("send and recv pass values around a ring", "[comm][p2p]") {
  ProcessGroup& group = comm_group();
  const int W = group.world_size(), r = group.rank();
  if (W == 1) {
    Tensor t = zeros({3});
    CHECK_THROWS_WITH(group.send(t, 0, 0), Catch::Contains("single-process group"));
    CHECK_THROWS_WITH(group.recv(t, 0, 0), Catch::Contains("single-process group"));
    return;
  }
  const int next = (r + 1) % W, previous = (r + W - 1) % W;
  for (DType dtype : {DType::f32, DType::i64}) {
    INFO("dtype " << dtype_name(dtype));
    const Tensor out = make(11, dtype, [&](int64_t i) { return r * 1000 + i; });
    Tensor in = zeros({11}, of(dtype));
    // Two tags in flight at once: the receive with tag 8 must not take the tag-7 message.
    const Tensor out8 = make(2, dtype, [&](int64_t i) { return -r - i; });
    Tensor in8 = zeros({2}, of(dtype));
    auto received8 = group.recv(in8, previous, 8);
    auto received = group.recv(in, previous, 7);
    auto sent = group.send(out, next, 7);
    auto sent8 = group.send(out8, next, 8);
    received->wait();
    received8->wait();
    sent->wait();
    sent8->wait();
    CHECK_MATCHES(in, [&](int64_t i) { return previous * 1000 + i; });
    CHECK_MATCHES(in8, [&](int64_t i) { return -previous - i; });
  }
  Tensor t = zeros({1});
  CHECK_THROWS_WITH(group.send(t, W, 0), Catch::Contains("peer"));
}

TEST_CASE("several all-reduces in flight complete in any wait order", "[comm][overlap]") {
  ProcessGroup& group = comm_group();
  const int64_t r = group.rank(), W = group.world_size();
  const int64_t rank_sum = W * (W + 1) / 2;
  constexpr int kInFlight = 6;
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<Work>> works;
  for (int k = 0; k < kInFlight; ++k) {
    const int64_t n = int64_t(1) << (4 * k);  // 1 element to 1 M elements
    tensors.push_back(make(n, k % 2 ? DType::f64 : DType::f32,
                           [&](int64_t i) { return (r + 1) * (pattern(i) + k); }));
    works.push_back(group.all_reduce(tensors.back(), k == 3 ? ReduceOp::avg : ReduceOp::sum));
  }
  // Poll the middle ones (progress without blocking), then wait newest first.
  for (int spin = 0; spin < 100 && !works[2]->completed(); ++spin) works[4]->completed();
  for (int k = kInFlight - 1; k >= 0; --k) works[k]->wait();
  for (int k = 0; k < kInFlight; ++k) {
    INFO("in flight #" << k);
    CHECK(works[k]->completed());
    const double scale = k == 3 ? double(W + 1) / 2 : double(rank_sum);
    CHECK_MATCHES(tensors[k], [&](int64_t i) { return scale * double(pattern(i) + k); });
  }
}

TEST_CASE("barrier holds every rank until the last arrives", "[comm][barrier]") {
  // Ordered by messages, not by time: rank 0 enters the barrier only after every other rank
  // has entered it and reported it still open, so an early completion is seen for certain.
  ProcessGroup& group = comm_group();
  const int W = group.world_size();
  if (group.rank() == 0) {
    for (int peer = 1; peer < W; ++peer) {
      Tensor open = zeros({1}, TensorOptions{}.with(DType::i64));
      group.recv(open, peer, 11)->wait();
      INFO("rank " << peer << " saw the barrier open before rank 0 arrived");
      CHECK(open.to_vector<int64_t>()[0] == 1);
    }
    auto work = group.barrier();
    work->wait();
    CHECK(work->completed());
  } else {
    auto work = group.barrier();
    const bool open_before_rank0 = !work->completed();
    Tensor report = from_vector(std::vector<int64_t>{open_before_rank0 ? 1 : 0}, {1});
    group.send(report, 0, 11)->wait();
    work->wait();
    CHECK(open_before_rank0);
  }
}

TEST_CASE("split makes groups of one color ranked by key", "[comm][split]") {
  ProcessGroup& group = comm_group();
  const int r = group.rank(), W = group.world_size();
  // Even and odd ranks, each part ranked in reverse.
  const std::shared_ptr<ProcessGroup> part = group.split(r % 2, -r);
  int size = 0;
  std::vector<int> members;
  for (int k = 0; k < W; ++k)
    if (k % 2 == r % 2) members.push_back(k);
  size = int(members.size());
  CHECK(part->world_size() == size);
  // Reverse order: the highest rank of the part is its rank 0.
  const int expected_rank = int(std::find(members.rbegin(), members.rend(), r) - members.rbegin());
  CHECK(part->rank() == expected_rank);
  Tensor t = make(1, DType::i64, [&](int64_t) { return r + 1; });
  part->all_reduce(t, ReduceOp::sum)->wait();
  int64_t member_sum = 0;
  for (int k : members) member_sum += k + 1;
  CHECK_MATCHES(t, [&](int64_t) { return member_sum; });
  // A duplicate orders its collectives apart from the parent's: both in flight at once.
  const std::shared_ptr<ProcessGroup> duplicate = group.split(0, r);
  CHECK(duplicate->rank() == r);
  Tensor a = make(3, DType::f32, [&](int64_t) { return 1; });
  Tensor b = make(3, DType::f32, [&](int64_t) { return 2; });
  auto on_duplicate = duplicate->all_reduce(b, ReduceOp::sum);
  auto on_parent = group.all_reduce(a, ReduceOp::sum);
  on_parent->wait();
  on_duplicate->wait();
  CHECK_MATCHES(a, [&](int64_t) { return W; });
  CHECK_MATCHES(b, [&](int64_t) { return 2 * W; });
  CHECK_THROWS_WITH(group.split(-1, 0), Catch::Contains("color -1"));
}
