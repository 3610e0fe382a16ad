// The emulated profile's memory figures (emu/exec/access_profile.h) on access patterns whose
// answer the hardware's rules give: 32-byte sectors per warp request against the fewest that
// hold the requested bytes, narrow lanes, and shared-memory wavefronts. Each planted
// inefficiency (a strided gather, a bank conflict) must show, its twin must not.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "emu/runtime/profile.h"
#include "kernels/profile_kernels.h"
#include "test_emu_exec_support.h"

using namespace sonata::emu::test;

namespace {

// The profile's "work" line of the one launch of `kernel` that `launch` makes, as numbers.
std::map<std::string, double> profile_of(const std::string& kernel,
                                         const std::function<cudaError_t()>& launch) {
  char path[] = "/tmp/sonata_emu_profile_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  sonata::emu::profile::open_profile(path);
  const Outcome outcome = run(launch);
  sonata::emu::profile::close_profile();
  REQUIRE(outcome.sync == cudaSuccess);
  std::ifstream file(path);
  std::map<std::string, double> figures;
  const std::regex number("\"([a-z_]+)\":([0-9.e+]+)");
  for (std::string line; std::getline(file, line);) {
    if (line.find("\"ev\":\"work\"") == std::string::npos ||
        line.find("kernel " + kernel) == std::string::npos)
      continue;
    for (std::sregex_iterator it(line.begin(), line.end(), number), end; it != end; ++it)
      figures[(*it)[1]] = std::stod((*it)[2]);
  }
  std::remove(path);
  REQUIRE(!figures.empty());
  for (const auto& [name, value] : figures) UNSCOPED_INFO(name << " = " << value);
  return figures;
}

}  // namespace

TEST_CASE("emu profile: a coalesced gather needs no more sectors than its bytes",
          "[emu][exec][profile]") {
  const int n = 256;
  float* in = device_copy(std::vector<float>(size_t(n) * 8, 1.0f));
  float* out = device_array<float>(n);
  auto f = profile_of("strided_gather_kernel", [&] { return strided_gather(in, out, n, 1); });
  // 8 warps, one load and one store each, 128 bytes = 4 sectors a request.
  CHECK(f["ld_req"] == 8);
  CHECK(f["ld_bytes"] == n * 4);
  CHECK(f["ld_sectors"] == 32);
  CHECK(f["ld_ideal"] == 32);
  CHECK(f["st_sectors"] == 32);
  CHECK(f["st_ideal"] == 32);
  CHECK(f["narrow_acc"] == 0);
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("emu profile: a strided gather shows one sector per lane (planted)",
          "[emu][exec][profile][defect]") {
  const int n = 256;
  float* in = device_copy(std::vector<float>(size_t(n) * 8, 1.0f));
  float* out = device_array<float>(n);
  auto f = profile_of("strided_gather_kernel", [&] { return strided_gather(in, out, n, 8); });
  // 32 lanes 32 bytes apart: 32 sectors for 128 useful bytes (4 sectors): 12.5 %.
  CHECK(f["ld_sectors"] == 8 * 32);
  CHECK(f["ld_ideal"] == 8 * 4);
  CHECK(f["st_sectors"] == f["st_ideal"]);  // the stores stay coalesced
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("emu profile: a broadcast load is one sector per warp", "[emu][exec][profile]") {
  const int n = 64;
  float* in = device_copy(std::vector<float>(1, 3.0f));
  float* out = device_array<float>(n);
  auto f = profile_of("broadcast_kernel", [&] { return broadcast(in, out, n); });
  CHECK(f["ld_req"] == 2);
  CHECK(f["ld_sectors"] == 2);
  CHECK(f["ld_ideal"] == 2);
  CHECK(f["ld_bytes"] == 8);  // each request asks for the same 4 bytes once
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("emu profile: a 16-byte __ldg is one request per warp, not four",
          "[emu][exec][profile]") {
  const int n = 64;
  uint4* in = device_copy(std::vector<uint4>(n, uint4{1, 2, 3, 4}));
  uint4* out = device_array<uint4>(n);
  auto f = profile_of("vector_ldg_kernel", [&] { return vector_ldg(in, out, n); });
  CHECK(f["lane_acc"] == 2 * n);  // one load and one store per lane
  CHECK(f["ld_req"] == 2);
  CHECK(f["ld_sectors"] == 2 * 16);  // 512 bytes a warp
  CHECK(f["ld_ideal"] == 2 * 16);
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("emu profile: 2-byte lanes are counted as narrow", "[emu][exec][profile]") {
  const int n = 128;
  unsigned short* in = device_copy(std::vector<unsigned short>(n, 7));
  unsigned short* out = device_array<unsigned short>(n);
  auto f = profile_of("narrow_copy_kernel", [&] { return narrow_copy(in, out, n); });
  CHECK(f["lane_acc"] == 2 * n);
  CHECK(f["narrow_acc"] == 2 * n);
  CHECK(f["ld_sectors"] == 8);  // 4 warps x 64 bytes: coalesced all the same
  CHECK(f["ld_ideal"] == 8);
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("emu profile: shared-memory bank conflicts (planted) cost wavefronts",
          "[emu][exec][profile][defect]") {
  float* out = device_array<float>(32);
  auto clean = profile_of("shared_stride_kernel", [&] { return shared_stride(out, 1); });
  CHECK(clean["sh_req"] == 2);  // one store, one load
  CHECK(clean["sh_wavefronts"] == 2);
  CHECK(clean["sh_ideal"] == 2);
  auto conflicted = profile_of("shared_stride_kernel", [&] { return shared_stride(out, 32); });
  CHECK(conflicted["sh_req"] == 2);
  CHECK(conflicted["sh_wavefronts"] == 64);  // 32 words in bank 0, twice
  CHECK(conflicted["sh_ideal"] == 2);
  cudaFree(out);
}
