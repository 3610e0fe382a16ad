// The emulated cuFFT against a DFT written here, and its work-area rules.
#include <cufft.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <numbers>

#include "emu/libs/counters.h"
#include "tests/emu/test_emu_libs_support.h"

namespace {

using sonata::emu::test::DeviceBuffer;
using sonata::emu::test::TestStream;

// The layout mel.cu uses: rows of n reals in, rows of n/2 + 1 complex values out.
cufftResult make_r2c(cufftHandle plan, int n, int rows, size_t* work) {
  int dims[1] = {n}, inembed[1] = {n}, onembed[1] = {n / 2 + 1};
  return cufftMakePlanMany(plan, 1, dims, inembed, 1, n, onembed, 1, n / 2 + 1, CUFFT_R2C, rows,
                           work);
}

void check_against_dft(const std::vector<float>& input, const std::vector<float>& spectrum, int n,
                       int rows) {
  const int bins = n / 2 + 1;
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < bins; ++k) {
      double re = 0, im = 0;
      for (int t = 0; t < n; ++t) {
        const double angle = -2.0 * std::numbers::pi * double(k) * double(t) / double(n);
        re += input[size_t(r * n + t)] * std::cos(angle);
        im += input[size_t(r * n + t)] * std::sin(angle);
      }
      CHECK(spectrum[size_t(2 * (r * bins + k))] == Approx(re).margin(1e-4));
      CHECK(spectrum[size_t(2 * (r * bins + k) + 1)] == Approx(im).margin(1e-4));
    }
}

}  // namespace

TEST_CASE("emulated cufftExecR2C matches a direct DFT", "[emu][cufft]") {
  TestStream stream;
  const int n = 12, rows = 3;
  const auto input = sonata::emu::test::random_floats(size_t(n * rows), 21);
  DeviceBuffer in(input.size() * 4), out(size_t(rows * (n / 2 + 1)) * 8);
  in.upload(input);
  int dims[1] = {n}, inembed[1] = {n}, onembed[1] = {n / 2 + 1};
  cufftHandle plan = 0;
  REQUIRE(cufftPlanMany(&plan, 1, dims, inembed, 1, n, onembed, 1, n / 2 + 1, CUFFT_R2C, rows) ==
          CUFFT_SUCCESS);
  REQUIRE(cufftSetStream(plan, stream.get()) == CUFFT_SUCCESS);
  REQUIRE(cufftExecR2C(plan, in.as<cufftReal>(), out.as<cufftComplex>()) == CUFFT_SUCCESS);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  check_against_dft(input, out.download<float>(size_t(2 * rows * (n / 2 + 1))), n, rows);
  REQUIRE(cufftDestroy(plan) == CUFFT_SUCCESS);
}

// Planted defect (issue #37 item 7's fix path): a plan made with auto-allocation off runs
// only with a work area; its twin, given one of the size cufftMakePlanMany reported, runs and
// is right.
TEST_CASE("emulated cuFFT refuses a plan without auto-allocation and without a work area",
          "[emu][cufft]") {
  TestStream stream;
  const int n = 8, rows = 2;
  const auto input = sonata::emu::test::random_floats(size_t(n * rows), 22);
  DeviceBuffer in(input.size() * 4), out(size_t(rows * (n / 2 + 1)) * 8);
  in.upload(input);
  cufftHandle plan = 0;
  REQUIRE(cufftCreate(&plan) == CUFFT_SUCCESS);
  REQUIRE(cufftSetAutoAllocation(plan, 0) == CUFFT_SUCCESS);
  size_t work = 0;
  REQUIRE(make_r2c(plan, n, rows, &work) == CUFFT_SUCCESS);
  CHECK(work > 0);
  size_t asked = 0;
  REQUIRE(cufftGetSize(plan, &asked) == CUFFT_SUCCESS);
  CHECK(asked == work);
  REQUIRE(cufftSetStream(plan, stream.get()) == CUFFT_SUCCESS);
  CHECK(cufftExecR2C(plan, in.as<cufftReal>(), out.as<cufftComplex>()) == CUFFT_NO_WORKSPACE);
  CHECK(sonata::emu::last_library_message().find("no work area") != std::string::npos);

  DeviceBuffer area(work);
  REQUIRE(cufftSetWorkArea(plan, area.get()) == CUFFT_SUCCESS);
  REQUIRE(cufftExecR2C(plan, in.as<cufftReal>(), out.as<cufftComplex>()) == CUFFT_SUCCESS);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  check_against_dft(input, out.download<float>(size_t(2 * rows * (n / 2 + 1))), n, rows);
  // The caller's work area is not the library's to free: no device synchronisation.
  const int64_t syncs = sonata::emu::cufft_device_syncs();
  REQUIRE(cufftDestroy(plan) == CUFFT_SUCCESS);
  CHECK(sonata::emu::cufft_device_syncs() == syncs);
}

TEST_CASE("emulated cuFFT catches a work area smaller than the plan asked for", "[emu][cufft]") {
  TestStream stream;
  const int n = 8, rows = 2;
  DeviceBuffer in(size_t(n * rows) * 4), out(size_t(rows * (n / 2 + 1)) * 8);
  in.upload(std::vector<float>(size_t(n * rows), 1.0f));
  cufftHandle plan = 0;
  REQUIRE(cufftCreate(&plan) == CUFFT_SUCCESS);
  REQUIRE(cufftSetAutoAllocation(plan, 0) == CUFFT_SUCCESS);
  size_t work = 0;
  REQUIRE(make_r2c(plan, n, rows, &work) == CUFFT_SUCCESS);
  REQUIRE(cufftSetStream(plan, stream.get()) == CUFFT_SUCCESS);
  DeviceBuffer enough(work), short_area(work / 2);
  REQUIRE(cufftSetWorkArea(plan, enough.get()) == CUFFT_SUCCESS);
  REQUIRE(cufftExecR2C(plan, in.as<cufftReal>(), out.as<cufftComplex>()) == CUFFT_SUCCESS);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  REQUIRE(cufftSetWorkArea(plan, short_area.get()) == CUFFT_SUCCESS);
  REQUIRE(cufftExecR2C(plan, in.as<cufftReal>(), out.as<cufftComplex>()) == CUFFT_SUCCESS);
  CHECK(cudaStreamSynchronize(stream.get()) != cudaSuccess);
  cufftDestroy(plan);
}

TEST_CASE("emulated cufftDestroy of an auto-allocated plan synchronises the device",
          "[emu][cufft]") {
  const int64_t syncs = sonata::emu::cufft_device_syncs();
  const int64_t allocations = sonata::emu::cufft_auto_allocations();
  cufftHandle plan = 0;
  REQUIRE(cufftPlan1d(&plan, 16, CUFFT_R2C, 4) == CUFFT_SUCCESS);
  CHECK(sonata::emu::cufft_auto_allocations() == allocations + 1);
  REQUIRE(cufftDestroy(plan) == CUFFT_SUCCESS);
  CHECK(sonata::emu::cufft_device_syncs() == syncs + 1);
  CHECK(cufftDestroy(plan) == CUFFT_INVALID_PLAN);
}

TEST_CASE("emulated cuFFT refuses a plan run on a stream of another device", "[emu][cufft]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cufftHandle plan = 0;
  REQUIRE(cufftPlan1d(&plan, 8, CUFFT_R2C, 1) == CUFFT_SUCCESS);
  DeviceBuffer in(8 * 4), out(5 * 8);
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  {
    TestStream other;
    REQUIRE(cufftSetStream(plan, other.get()) == CUFFT_SUCCESS);
    CHECK(cufftExecR2C(plan, in.as<cufftReal>(), out.as<cufftComplex>()) == CUFFT_INVALID_DEVICE);
  }
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cufftDestroy(plan);
}

// cuFFT's data layout: in place, the real rows of the basic layout (cufftPlan1d, or null
// embeds) are padded to 2 * (n/2 + 1) reals, so each row's spectrum fits where it was.
TEST_CASE("emulated in-place R2C and C2R use real rows padded to 2 * (n/2 + 1)", "[emu][cufft]") {
  TestStream stream;
  const int n = 8, rows = 2, padded = 2 * (n / 2 + 1);
  const auto input = sonata::emu::test::random_floats(size_t(n * rows), 23);
  std::vector<float> laid_out(size_t(padded * rows), 1e6f);  // the padding must not count
  for (int r = 0; r < rows; ++r)
    for (int t = 0; t < n; ++t) laid_out[size_t(r * padded + t)] = input[size_t(r * n + t)];
  DeviceBuffer data(laid_out.size() * 4);
  data.upload(laid_out);
  cufftHandle forward = 0, inverse = 0;
  REQUIRE(cufftPlan1d(&forward, n, CUFFT_R2C, rows) == CUFFT_SUCCESS);
  REQUIRE(cufftPlan1d(&inverse, n, CUFFT_C2R, rows) == CUFFT_SUCCESS);
  REQUIRE(cufftSetStream(forward, stream.get()) == CUFFT_SUCCESS);
  REQUIRE(cufftSetStream(inverse, stream.get()) == CUFFT_SUCCESS);
  REQUIRE(cufftExecR2C(forward, data.as<cufftReal>(), data.as<cufftComplex>()) == CUFFT_SUCCESS);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  check_against_dft(input, data.download<float>(laid_out.size()), n, rows);
  // Back in place: n * the input, in the padded rows.
  REQUIRE(cufftExecC2R(inverse, data.as<cufftComplex>(), data.as<cufftReal>()) == CUFFT_SUCCESS);
  const auto back = data.download<float>(laid_out.size());
  for (int r = 0; r < rows; ++r)
    for (int t = 0; t < n; ++t)
      CHECK(back[size_t(r * padded + t)] == Approx(n * input[size_t(r * n + t)]).margin(1e-4));
  REQUIRE(cufftDestroy(forward) == CUFFT_SUCCESS);
  REQUIRE(cufftDestroy(inverse) == CUFFT_SUCCESS);
}

// cuFFT does not preserve the input of an out-of-place C2R: a caller that reads its
// spectrum again after the inverse transform reads garbage on a card, NaN here.
TEST_CASE("emulated out-of-place C2R overwrites its input", "[emu][cufft]") {
  TestStream stream;
  const int n = 8, rows = 2, bins = n / 2 + 1;
  const auto spectrum = sonata::emu::test::random_floats(size_t(2 * bins * rows), 24);
  DeviceBuffer in(spectrum.size() * 4), out(size_t(n * rows) * 4);
  in.upload(spectrum);
  cufftHandle plan = 0;
  REQUIRE(cufftPlan1d(&plan, n, CUFFT_C2R, rows) == CUFFT_SUCCESS);
  REQUIRE(cufftSetStream(plan, stream.get()) == CUFFT_SUCCESS);
  REQUIRE(cufftExecC2R(plan, in.as<cufftComplex>(), out.as<cufftReal>()) == CUFFT_SUCCESS);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  size_t kept = 0;
  for (const float v : in.download<float>(spectrum.size())) kept += !std::isnan(v);
  CHECK(kept == 0);
  // The output is still the inverse DFT of the Hermitian rows it read.
  const auto real = out.download<float>(size_t(n * rows));
  for (int r = 0; r < rows; ++r)
    for (int t = 0; t < n; ++t) {
      double sum = 0;
      for (int k = 0; k < n; ++k) {
        const int stored = k < bins ? k : n - k;
        const double re = spectrum[size_t(2 * (r * bins + stored))];
        const double im = (k < bins ? 1 : -1) * spectrum[size_t(2 * (r * bins + stored) + 1)];
        const double angle = 2.0 * std::numbers::pi * double(k) * double(t) / double(n);
        sum += re * std::cos(angle) - im * std::sin(angle);
      }
      CHECK(real[size_t(r * n + t)] == Approx(sum).margin(1e-4));
    }
  REQUIRE(cufftDestroy(plan) == CUFFT_SUCCESS);
}
