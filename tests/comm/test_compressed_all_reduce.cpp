// all_to_all and the 16-bit all-reduce with f32 accumulation (comm/compressed_all_reduce.h)
// on the group this run was started with (world 1, mpiexec -np 2 and 3). Expected values are
// closed forms in the rank r and world size W, or every rank's input regenerated from its
// seed and reduced here in float64. CHECK, never REQUIRE, between collectives.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/compressed_all_reduce.h"
#include "comm/single_group.h"
#include "engine/random.h"
#include "tests/comm/comm_group.h"
#include "tests/comm/recording_group.h"

using namespace sonata;
using sonata::testing::comm_group;

namespace {

Tensor values_of(const std::vector<double>& values, DType dtype) {
  return from_vector(values, {int64_t(values.size())}, TensorOptions{}.with(dtype));
}

// `value` rounded to `dtype` (f16 or bf16) and back.
double rounded(double value, DType dtype) {
  return values_of({value}, dtype).to_vector<double>()[0];
}

// Rank `rank`'s input in the random cases: its own seed, so every rank can regenerate all.
std::vector<double> random_input(int64_t rank, int64_t n) {
  Generator generator(uint64_t(500 + rank));
  return randn({n}, TensorOptions{}.with(DType::f32), &generator).to_vector<double>();
}

}  // namespace

TEST_CASE("all_to_all sends block p to rank p", "[comm][all_to_all]") {
  ProcessGroup& group = comm_group();
  const int64_t r = group.rank(), W = group.world_size();
  const int64_t block = 3;
  for (DType dtype : {DType::f32, DType::i64, DType::f16}) {
    INFO("dtype " << dtype_name(dtype));
    // Element i of block p on rank r: r * 100 + p * 10 + i (exact in f16).
    std::vector<double> mine;
    for (int64_t p = 0; p < W; ++p)
      for (int64_t i = 0; i < block; ++i) mine.push_back(double(r * 100 + p * 10 + i));
    const Tensor in = values_of(mine, dtype);
    Tensor out = zeros({W * block}, TensorOptions{}.with(dtype));
    group.all_to_all(in, out)->wait();
    const std::vector<double> got = out.to_vector<double>();
    int64_t wrong = 0;
    for (int64_t p = 0; p < W; ++p)
      for (int64_t i = 0; i < block; ++i)
        wrong += got[size_t(p * block + i)] != double(p * 100 + r * 10 + i);
    CHECK(wrong == 0);
  }
  const Tensor odd = zeros({W * block + 1});
  Tensor odd_out = zeros({W * block + 1});
  if (W > 1) CHECK_THROWS_WITH(group.all_to_all(odd, odd_out), Catch::Contains("equal blocks"));
  Tensor other_dtype = zeros({W * block}, TensorOptions{}.with(DType::f64));
  CHECK_THROWS_WITH(group.all_to_all(zeros({W * block}), other_dtype),
                    Catch::Contains("all_to_all: in is f32"));
}

TEST_CASE("a 16-bit all-reduce sums small integers exactly for any length", "[comm][compressed]") {
  ProcessGroup& group = comm_group();
  const int64_t r = group.rank(), W = group.world_size();
  for (DType wire : {DType::f16, DType::bf16}) {
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(1000)}) {
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
        INFO("wire " << dtype_name(wire) << ", n " << n << ", " << reduce_op_name(op));
        std::vector<double> mine(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) mine[size_t(i)] = double((r + 1) * (i % 5 + 1));
        Tensor tensor = values_of(mine, DType::f32);
        all_reduce_compressed(group, group, tensor, wire, op)->wait();
        const std::vector<double> got = tensor.to_vector<double>();
        const double scale = op == ReduceOp::sum ? double(W * (W + 1) / 2) : double(W + 1) / 2;
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; ++i) wrong += got[size_t(i)] != scale * double(i % 5 + 1);
        CHECK(wrong == 0);
      }
    }
  }
}

TEST_CASE("the 16-bit all-reduce accumulates in f32 and rounds once", "[comm][compressed]") {
  ProcessGroup& group = comm_group();
  const int64_t r = group.rank(), W = group.world_size();
  // 2048 + 1 + 1: a ring adding in f16 loses each 1 (f16's spacing at 2048 is 2); summed in
  // f32 and rounded once, three ranks give 2050.
  Tensor tensor = values_of({r == 0 ? 2048.0 : 1.0}, DType::f32);
  all_reduce_compressed(group, group, tensor, DType::f16, ReduceOp::sum)->wait();
  CHECK(tensor.to_vector<double>()[0] == rounded(2048.0 + double(W - 1), DType::f16));

  // Random f32 inputs: every rank's is regenerated here and reduced in f64.
  const int64_t n = 4099;
  for (DType wire : {DType::f16, DType::bf16}) {
    INFO("wire " << dtype_name(wire));
    Tensor mine = values_of(random_input(r, n), DType::f32);
    Tensor exact = mine.clone();
    auto work = all_reduce_compressed(group, group, mine, wire, ReduceOp::avg);
    while (!work->completed()) {
    }
    group.all_reduce(exact, ReduceOp::avg)->wait();
    std::vector<double> expected(static_cast<size_t>(n), 0.0);
    for (int64_t rank = 0; rank < W; ++rank) {
      const std::vector<double> input = random_input(rank, n);
      for (int64_t i = 0; i < n; ++i) expected[size_t(i)] += rounded(input[size_t(i)], wire);
    }
    const std::vector<double> got = mine.to_vector<double>();
    const std::vector<double> f32 = exact.to_vector<double>();
    const double ulp = wire == DType::f16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    int64_t wrong = 0;
    double compression_error = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double want = expected[size_t(i)] / double(W);
      wrong += std::abs(got[size_t(i)] - want) > ulp * std::abs(want) + 1e-7;
      compression_error = std::max(compression_error, std::abs(got[size_t(i)] - f32[size_t(i)]));
    }
    CHECK(wrong == 0);
    // The option really compresses: the result differs from the f32 all-reduce.
    CHECK(compression_error > 0);
    // Every rank ends with the same bits.
    Tensor all = zeros({W * n});
    group.all_gather(mine, all)->wait();
    const std::vector<double> every = all.to_vector<double>();
    int64_t differing = 0;
    for (int64_t k = 0; k < W * n; ++k) differing += every[size_t(k)] != every[size_t(k % n)];
    CHECK(differing == 0);
  }
}

TEST_CASE("a value beyond fp16's range becomes inf for the loss scaler to see",
          "[comm][compressed]") {
  ProcessGroup& group = comm_group();
  Tensor tensor = values_of({1e5, 1.0}, DType::f32);
  all_reduce_compressed(group, group, tensor, DType::f16, ReduceOp::avg)->wait();
  const std::vector<double> got = tensor.to_vector<double>();
  CHECK(std::isinf(got[0]));
  CHECK(got[1] == 1.0);
  Tensor in_bf16 = values_of({1e5}, DType::f32);
  all_reduce_compressed(group, group, in_bf16, DType::bf16, ReduceOp::avg)->wait();
  CHECK(in_bf16.to_vector<double>()[0] == rounded(1e5, DType::bf16));
  Tensor half = values_of({1.0}, DType::f16);
  CHECK_THROWS_WITH(all_reduce_compressed(group, group, half, DType::bf16),
                    Catch::Contains("must be f32 or f64"));
  Tensor f32 = values_of({1.0}, DType::f32);
  CHECK_THROWS_WITH(all_reduce_compressed(group, group, f32, DType::f64),
                    Catch::Contains("wire dtype must be f16 or bf16"));
}

TEST_CASE("on a stream-ordered group both phases are issued at once on one communicator",
          "[comm][compressed]") {
  using sonata::testing::RecordingGroup;
  for (const bool stream_ordered : {true, false}) {
    INFO("stream_ordered " << stream_ordered);
    RecordingGroup exchange(std::make_shared<SingleGroup>(), stream_ordered);
    RecordingGroup gather(std::make_shared<SingleGroup>(), stream_ordered);
    Tensor t = values_of({1.0 / 3.0, 300.5, -2.25}, DType::f32);
    auto work = all_reduce_compressed(exchange, gather, t, DType::bf16, ReduceOp::avg);
    if (stream_ordered) {
      // Both phases queued in call order on the exchange group, before anyone waits, and
      // the caller's stream (running backward) is not made to wait for the exchange: the
      // sum between the phases runs on the communication stream.
      CHECK(exchange.log() == std::vector<std::string>{"all_to_all", "all_gather"});
      CHECK(gather.log().empty());
      CHECK(exchange.caller_stream_waits() == 0);
    } else {
      // The host needs the exchange's result: the all-gather waits for a poll or a wait.
      CHECK(exchange.log() == std::vector<std::string>{"all_to_all"});
    }
    work->wait();
    CHECK(work->completed());
    // Only the end orders the caller's stream (NCCL): one wait, for the all-gather.
    if (stream_ordered) CHECK(exchange.caller_stream_waits() == 1);
    // One rank: the average is the tensor itself, rounded once to the wire dtype.
    CHECK(t.to_vector<double>() ==
          std::vector<double>{rounded(1.0 / 3.0, DType::bf16), rounded(300.5, DType::bf16), -2.25});
  }
}
