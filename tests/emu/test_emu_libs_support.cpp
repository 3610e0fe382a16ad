#include "tests/emu/test_emu_libs_support.h"

#include <cmath>
#include <cstdlib>

namespace sonata::emu::test {

void DeviceBuffer::check(cudaError_t error, const char* what) {
  if (error != cudaSuccess)
    throw std::runtime_error(std::string("test ") + what + ": CUDA error " +
                             std::to_string(int(error)));
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  check(cudaMalloc(&data_, bytes), "cudaMalloc");
}

DeviceBuffer::~DeviceBuffer() {
  cudaFree(data_);
}

TestStream::TestStream() {
  DeviceBuffer::check(cudaStreamCreate(&stream_), "cudaStreamCreate");
}

TestStream::~TestStream() {
  cudaStreamDestroy(stream_);
}

std::vector<float> random_floats(size_t count, uint32_t seed, float lo, float hi) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(count);
  for (float& v : values) v = dist(engine);
  return values;
}

std::vector<double> random_doubles(size_t count, uint32_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> values(count);
  for (double& v : values) v = dist(engine);
  return values;
}

// Through double: the nearest half to the value, ties to even (exact for the test data).
uint16_t to_half(float value) {
  if (std::isnan(value)) return 0x7e00;
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  double magnitude = std::fabs(double(value));
  if (magnitude >= 65520.0) return uint16_t(sign | 0x7c00);
  if (magnitude < std::ldexp(1.0, -14))
    return uint16_t(sign | uint16_t(std::nearbyint(magnitude * std::ldexp(1.0, 24))));
  int exponent = int(std::floor(std::log2(magnitude)));
  double significand = std::nearbyint(magnitude / std::ldexp(1.0, exponent) * 1024.0);
  if (significand >= 2048.0) {
    significand /= 2;
    exponent += 1;
  }
  return uint16_t(sign | ((exponent + 15) << 10) | (uint16_t(significand) - 1024));
}

float from_half(uint16_t bits) {
  const int exponent = (bits >> 10) & 31, mantissa = bits & 1023;
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (exponent == 0) return float(sign * std::ldexp(double(mantissa), -24));
  if (exponent == 31) return mantissa ? NAN : float(sign * INFINITY);
  return float(sign * std::ldexp(double(1024 + mantissa), exponent - 25));
}

uint16_t to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint32_t lower = bits & 0xffff, upper = bits >> 16;
  if (lower > 0x8000 || (lower == 0x8000 && (upper & 1))) return uint16_t(upper + 1);
  return uint16_t(upper);
}

float from_bf16(uint16_t bits) {
  const uint32_t wide = uint32_t(bits) << 16;
  float out;
  std::memcpy(&out, &wide, 4);
  return out;
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) {
    had_ = true;
    old_ = old;
  }
  setenv(name, value, 1);
}

ScopedEnv::~ScopedEnv() {
  if (had_)
    setenv(name_.c_str(), old_.c_str(), 1);
  else
    unsetenv(name_.c_str());
}

}  // namespace sonata::emu::test
