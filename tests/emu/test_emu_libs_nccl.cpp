// The emulated NCCL with ranks as threads of one process, each on its own emulated device.
// Catch2's assertions are not thread-safe: the ranks record what they saw and the test
// checks it after joining them.
#include <nccl.h>

#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <functional>
#include <thread>

#include "emu/libs/counters.h"
#include "tests/emu/test_emu_libs_support.h"

namespace {

using sonata::emu::test::DeviceBuffer;
using sonata::emu::test::ScopedEnv;
using sonata::emu::test::TestStream;

std::string shm_path(const ncclUniqueId& id) {
  static const char digits[] = "0123456789abcdef";
  std::string path = "/dev/shm/sonata_nccl_";
  for (int i = 0; i < 16; ++i) {
    const auto byte = uint8_t(id.internal[i]);
    path += digits[byte >> 4];
    path += digits[byte & 15];
  }
  return path;
}

// Runs `body(rank, comm, stream)` on `n` threads, rank r on device r; returns the id.
ncclUniqueId run_ranks(int n, const std::function<void(int, ncclComm_t, cudaStream_t)>& body,
                       std::vector<ncclResult_t>* init_results = nullptr) {
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  std::vector<ncclResult_t> results(size_t(n), ncclSuccess);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      cudaSetDevice(r);
      cudaStream_t stream = nullptr;
      cudaStreamCreate(&stream);
      ncclComm_t comm = nullptr;
      results[size_t(r)] = ncclCommInitRank(&comm, n, id, r);
      if (results[size_t(r)] == ncclSuccess) body(r, comm, stream);
      cudaStreamDestroy(stream);
    });
  for (auto& t : threads) t.join();
  if (init_results) *init_results = results;
  return id;
}

template <typename T>
std::vector<T> download(const void* p, size_t count) {
  std::vector<T> values(count);
  cudaMemcpy(values.data(), p, count * sizeof(T), cudaMemcpyDeviceToHost);
  return values;
}

template <typename T>
void* upload(const std::vector<T>& values) {
  void* p = nullptr;
  cudaMalloc(&p, values.size() * sizeof(T));
  cudaMemcpy(p, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice);
  return p;
}

struct RankResults {
  ncclResult_t status = ncclSuccess;
  std::vector<float> all_reduce, avg, broadcast, reduce_scatter, p2p, all_to_all, split;
  std::vector<uint16_t> bf16;
  std::vector<int64_t> i64;
  std::vector<int32_t> all_gather;
  int split_rank = -1, split_size = 0;
};

}  // namespace

TEST_CASE("emulated NCCL collectives and point-to-point between two ranks in one process",
          "[emu][nccl]") {
  std::vector<RankResults> results(2);
  std::vector<ncclResult_t> init;
  const ncclUniqueId id = run_ranks(
      2,
      [&](int r, ncclComm_t comm, cudaStream_t stream) {
        RankResults& out = results[size_t(r)];
        auto check = [&](ncclResult_t s) {
          if (out.status == ncclSuccess) out.status = s;
        };
        const float f = float(r + 1);
        void* ar = upload(std::vector<float>{f, 2 * f, 3 * f});
        void* avg = upload(std::vector<float>{f, 10 * f});
        void* bf = upload(std::vector<uint16_t>{sonata::emu::test::to_bf16(1.5f * f)});
        void* i64 = upload(std::vector<int64_t>{int64_t(1) << (40 + r), -r});
        void* bc = upload(std::vector<float>{f, f});
        void* rs_in = upload(std::vector<float>{f, 2 * f, 3 * f, 4 * f});
        void* rs_out = upload(std::vector<float>{0, 0});
        void* ag_in = upload(std::vector<int32_t>{10 * r, 10 * r + 1});
        void* ag_out = upload(std::vector<int32_t>(4, -1));
        void* p2p_out = upload(std::vector<float>{0, 0, 0});
        void* p2p_in = upload(std::vector<float>{f, f, f});
        void* a2a_in = upload(std::vector<float>{10 * f, 10 * f + 1});
        void* a2a_out = upload(std::vector<float>{0, 0});
        check(ncclAllReduce(ar, ar, 3, ncclFloat32, ncclSum, comm, stream));
        check(ncclAllReduce(avg, avg, 2, ncclFloat32, ncclAvg, comm, stream));
        check(ncclAllReduce(bf, bf, 1, ncclBfloat16, ncclSum, comm, stream));
        check(ncclAllReduce(i64, i64, 2, ncclInt64, ncclSum, comm, stream));
        check(ncclBroadcast(bc, bc, 2, ncclFloat32, 1, comm, stream));
        check(ncclReduceScatter(rs_in, rs_out, 2, ncclFloat32, ncclSum, comm, stream));
        check(ncclAllGather(ag_in, ag_out, 2, ncclInt32, comm, stream));
        // Rank 0 sends, rank 1 receives (outside a group: a lone send waits for its receive).
        if (r == 0)
          check(ncclSend(p2p_in, 3, ncclFloat32, 1, comm, stream));
        else
          check(ncclRecv(p2p_out, 3, ncclFloat32, 0, comm, stream));
        // All-to-all as comm/nccl_group.cpp does it: every pair in one group, self included.
        check(ncclGroupStart());
        for (int peer = 0; peer < 2; ++peer) {
          check(ncclSend(static_cast<float*>(a2a_in) + peer, 1, ncclFloat32, peer, comm, stream));
          check(ncclRecv(static_cast<float*>(a2a_out) + peer, 1, ncclFloat32, peer, comm, stream));
        }
        check(ncclGroupEnd());
        // Split with the keys reversed: the new ranks are the old ones reversed.
        ncclComm_t split = nullptr;
        check(ncclCommSplit(comm, 0, -r, &split, nullptr));
        void* sp = upload(std::vector<float>{f});
        if (split) {
          ncclCommUserRank(split, &out.split_rank);
          ncclCommCount(split, &out.split_size);
          check(ncclAllReduce(sp, sp, 1, ncclFloat32, ncclMax, split, stream));
        }
        cudaStreamSynchronize(stream);
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(comm, &async);
        check(async);
        out.all_reduce = download<float>(ar, 3);
        out.avg = download<float>(avg, 2);
        out.bf16 = download<uint16_t>(bf, 1);
        out.i64 = download<int64_t>(i64, 2);
        out.broadcast = download<float>(bc, 2);
        out.reduce_scatter = download<float>(rs_out, 2);
        out.all_gather = download<int32_t>(ag_out, 4);
        out.p2p = download<float>(p2p_out, 3);
        out.all_to_all = download<float>(a2a_out, 2);
        out.split = download<float>(sp, 1);
        for (void* p : {ar, avg, bf, i64, bc, rs_in, rs_out, ag_in, ag_out, p2p_out, p2p_in, a2a_in,
                        a2a_out, sp})
          cudaFree(p);
        if (split) ncclCommDestroy(split);
        ncclCommDestroy(comm);
      },
      &init);
  CHECK(init == std::vector<ncclResult_t>{ncclSuccess, ncclSuccess});
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const RankResults& got = results[size_t(r)];
    CHECK(got.status == ncclSuccess);
    CHECK(got.all_reduce == std::vector<float>{3, 6, 9});
    CHECK(got.avg == std::vector<float>{1.5f, 15.0f});
    CHECK(sonata::emu::test::from_bf16(got.bf16.at(0)) == 4.5f);
    CHECK(got.i64 == std::vector<int64_t>{(int64_t(1) << 40) + (int64_t(1) << 41), -1});
    CHECK(got.broadcast == std::vector<float>{2, 2});
    CHECK(got.reduce_scatter == (r == 0 ? std::vector<float>{3, 6} : std::vector<float>{9, 12}));
    CHECK(got.all_gather == std::vector<int32_t>{0, 1, 10, 11});
    if (r == 1) CHECK(got.p2p == std::vector<float>{1, 1, 1});
    // Rank r receives element r of every rank's input: 10 * (peer + 1) + r.
    CHECK(got.all_to_all == std::vector<float>{10.0f + float(r), 20.0f + float(r)});
    CHECK(got.split_size == 2);
    CHECK(got.split_rank == 1 - r);
    CHECK(got.split == std::vector<float>{2});
  }
  // The last rank to destroy the communicator removed its shared memory.
  CHECK(access(shm_path(id).c_str(), F_OK) != 0);
}

// Planted defect: the ranks issue the same two collectives in opposite orders. Each rank's
// communicator reports an asynchronous error naming both collectives; the twin (same order,
// the case above) has none.
TEST_CASE("emulated NCCL reports collectives issued in different orders on two ranks",
          "[emu][nccl]") {
  const ScopedEnv timeout("SONATA_EMU_NCCL_TIMEOUT_S", "10");
  std::vector<ncclResult_t> async(2, ncclSuccess);
  std::vector<std::string> text(2);
  run_ranks(2, [&](int r, ncclComm_t comm, cudaStream_t stream) {
    void* buffer = upload(std::vector<float>{1, 2, 3, 4});
    if (r == 0) {
      ncclAllReduce(buffer, buffer, 4, ncclFloat32, ncclSum, comm, stream);
      ncclBroadcast(buffer, buffer, 4, ncclFloat32, 0, comm, stream);
    } else {
      ncclBroadcast(buffer, buffer, 4, ncclFloat32, 0, comm, stream);
      ncclAllReduce(buffer, buffer, 4, ncclFloat32, ncclSum, comm, stream);
    }
    cudaStreamSynchronize(stream);
    ncclCommGetAsyncError(comm, &async[size_t(r)]);
    text[size_t(r)] = ncclGetLastError(comm);
    cudaFree(buffer);
    ncclCommDestroy(comm);
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << text[size_t(r)]);
    CHECK(async[size_t(r)] == ncclInvalidUsage);
    CHECK(text[size_t(r)].find("ncclAllReduce #1") != std::string::npos);
    CHECK(text[size_t(r)].find("ncclBroadcast #1") != std::string::npos);
    CHECK(text[size_t(r)].find("on rank " + std::to_string(1 - r)) != std::string::npos);
  }
}

// Planted defect: a collective on a stream of another device than the communicator's; the
// twin uses the communicator's own device.
TEST_CASE("emulated NCCL refuses a collective on a stream of another device", "[emu][nccl]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclComm_t comm = nullptr;
  REQUIRE(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
  DeviceBuffer buffer(16);
  buffer.upload(std::vector<float>{1, 2, 3, 4});
  {
    TestStream own;
    CHECK(ncclAllReduce(buffer.get(), buffer.get(), 4, ncclFloat32, ncclSum, comm, own.get()) ==
          ncclSuccess);
    REQUIRE(cudaStreamSynchronize(own.get()) == cudaSuccess);
  }
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  {
    TestStream other;
    CHECK(ncclAllReduce(buffer.get(), buffer.get(), 4, ncclFloat32, ncclSum, comm, other.get()) ==
          ncclInvalidArgument);
    const std::string text = ncclGetLastError(comm);
    INFO(text);
    CHECK(text.find("device 1") != std::string::npos);
    CHECK(text.find("device 0") != std::string::npos);
  }
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}

// Planted defect: rank 1 never joins rank 0's all-reduce; rank 0's communicator reports a
// timeout naming the collective and what rank 1 was doing.
TEST_CASE("emulated NCCL times out a collective a peer never joins", "[emu][nccl]") {
  const ScopedEnv timeout("SONATA_EMU_NCCL_TIMEOUT_S", "1");
  std::atomic<bool> rank0_done{false};
  ncclResult_t async = ncclSuccess;
  std::string text;
  run_ranks(2, [&](int r, ncclComm_t comm, cudaStream_t stream) {
    if (r == 0) {
      void* buffer = upload(std::vector<float>{1});
      ncclAllReduce(buffer, buffer, 1, ncclFloat32, ncclSum, comm, stream);
      cudaStreamSynchronize(stream);
      ncclCommGetAsyncError(comm, &async);
      text = ncclGetLastError(comm);
      cudaFree(buffer);
      rank0_done = true;
    } else {
      while (!rank0_done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ncclCommDestroy(comm);
  });
  INFO(text);
  CHECK(async == ncclSystemError);
  CHECK(text.find("ncclAllReduce #1") != std::string::npos);
  CHECK(text.find("timed out") != std::string::npos);
  CHECK(text.find("rank 1 was idle after ncclCommInitRank") != std::string::npos);
}

TEST_CASE("emulated ncclCommAbort wakes a rank waiting for its peer", "[emu][nccl]") {
  const ScopedEnv timeout("SONATA_EMU_NCCL_TIMEOUT_S", "60");
  std::string text;
  std::atomic<bool> rank0_issued{false};
  run_ranks(2, [&](int r, ncclComm_t comm, cudaStream_t stream) {
    if (r == 0) {
      void* buffer = upload(std::vector<float>{1});
      rank0_issued = true;
      ncclAllReduce(buffer, buffer, 1, ncclFloat32, ncclSum, comm, stream);
      cudaStreamSynchronize(stream);
      text = sonata::emu::last_library_message();
      cudaFree(buffer);
      ncclCommDestroy(comm);
    } else {
      while (!rank0_issued) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ncclCommAbort(comm);
    }
  });
  INFO(text);
  CHECK(text.find("rank 1 aborted the communicator") != std::string::npos);
}

// Planted defect (issue #37 item 6's pattern): each rank uses two communicators on its device
// and starts their all-reduces in opposite orders. One NCCL operation holds a device until
// its peers join, so the ranks deadlock and report a timeout; the twin (same order on both
// ranks) completes. With SONATA_EMU_NCCL_CONCURRENT=1 (no such hold) the defect passes
// unnoticed, as it may on a card with room for both kernels.
TEST_CASE("emulated NCCL deadlocks two communicators used in different orders on two ranks",
          "[emu][nccl]") {
  const ScopedEnv timeout("SONATA_EMU_NCCL_TIMEOUT_S", "1");
  for (const bool same_order : {true, false}) {
    INFO((same_order ? "same order" : "opposite orders"));
    ncclUniqueId second_id;
    REQUIRE(ncclGetUniqueId(&second_id) == ncclSuccess);
    std::vector<ncclResult_t> async_first(2, ncclSuccess), async_second(2, ncclSuccess);
    std::vector<std::string> text(2);
    std::vector<float> sums(4, 0.0f);
    run_ranks(2, [&](int r, ncclComm_t first, cudaStream_t first_stream) {
      ncclComm_t second = nullptr;
      ncclCommInitRank(&second, 2, second_id, r);
      cudaStream_t second_stream = nullptr;
      cudaStreamCreate(&second_stream);
      void* a = upload(std::vector<float>{1});
      void* b = upload(std::vector<float>{10});
      if (same_order || r == 0) {
        ncclAllReduce(a, a, 1, ncclFloat32, ncclSum, first, first_stream);
        ncclAllReduce(b, b, 1, ncclFloat32, ncclSum, second, second_stream);
        cudaStreamSynchronize(first_stream);
        cudaStreamSynchronize(second_stream);
      } else {
        // Rank 1 starts the second communicator's all-reduce first (a query lets it start),
        // then waits for both at once, as a card would run them.
        ncclAllReduce(b, b, 1, ncclFloat32, ncclSum, second, second_stream);
        cudaStreamQuery(second_stream);
        cudaGetLastError();  // the query's not-ready
        ncclAllReduce(a, a, 1, ncclFloat32, ncclSum, first, first_stream);
        cudaDeviceSynchronize();
      }
      ncclCommGetAsyncError(first, &async_first[size_t(r)]);
      ncclCommGetAsyncError(second, &async_second[size_t(r)]);
      text[size_t(r)] = std::string(ncclGetLastError(first)) + " | " + ncclGetLastError(second);
      sums[size_t(2 * r)] = download<float>(a, 1)[0];
      sums[size_t(2 * r + 1)] = download<float>(b, 1)[0];
      cudaFree(a);
      cudaFree(b);
      cudaStreamDestroy(second_stream);
      ncclCommDestroy(second);
      ncclCommDestroy(first);
    });
    INFO("rank 0: " << text[0] << "\nrank 1: " << text[1]);
    if (same_order) {
      CHECK(async_first == std::vector<ncclResult_t>{ncclSuccess, ncclSuccess});
      CHECK(async_second == std::vector<ncclResult_t>{ncclSuccess, ncclSuccess});
      CHECK(sums == std::vector<float>{2, 20, 2, 20});
    } else {
      // Whichever rank's wait ends first reports the timeout; its device then runs the other
      // all-reduce, which meets a peer that gave up. Each rank ends with a communicator in error.
      const std::string both = text[0] + text[1];
      CHECK(both.find("ncclAllReduce #1") != std::string::npos);
      CHECK(both.find("timed out") != std::string::npos);
      CHECK(both.find("its device was running ncclAllReduce #1") != std::string::npos);
      for (int r = 0; r < 2; ++r)
        CHECK((async_first[size_t(r)] != ncclSuccess || async_second[size_t(r)] != ncclSuccess));
    }
  }
}

// Issue #37 item 4: NCCL takes its own buffers with plain cudaMalloc when a communicator first
// communicates, so memory a caching pool keeps is not available to it. Asked for more than the
// device has, the first operation fails and says so; the twin (default size) runs.
TEST_CASE("emulated NCCL allocates its buffers when it first communicates", "[emu][nccl]") {
  for (const bool too_big : {false, true}) {
    INFO((too_big ? "buffers larger than the device" : "default buffers"));
    const ScopedEnv bytes("SONATA_EMU_NCCL_BUFFER_BYTES", too_big ? "1e15" : "4194304");
    std::vector<ncclResult_t> issued(2, ncclSuccess);
    std::vector<std::string> text(2);
    run_ranks(2, [&](int r, ncclComm_t comm, cudaStream_t stream) {
      void* buffer = upload(std::vector<float>{1});
      issued[size_t(r)] = ncclAllReduce(buffer, buffer, 1, ncclFloat32, ncclSum, comm, stream);
      text[size_t(r)] = ncclGetLastError(comm);
      if (issued[size_t(r)] == ncclSuccess) cudaStreamSynchronize(stream);
      cudaFree(buffer);
      ncclCommDestroy(comm);
    });
    for (int r = 0; r < 2; ++r) {
      INFO("rank " << r << ": " << text[size_t(r)]);
      if (too_big) {
        CHECK(issued[size_t(r)] == ncclUnhandledCudaError);
        CHECK(text[size_t(r)].find("could not allocate NCCL's") != std::string::npos);
      } else {
        CHECK(issued[size_t(r)] == ncclSuccess);
      }
    }
  }
}
