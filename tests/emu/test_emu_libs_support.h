#pragma once
// Helpers of the emulated libraries' tests: device buffers through the (emulated) runtime,
// seeded random data, and element conversions written independently of emu/libs.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace sonata::emu::test {

// A cudaMalloc'd buffer of `bytes`, freed when destroyed.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  void* get() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }
  template <typename T>
  void upload(const std::vector<T>& values) {
    check(cudaMemcpy(data_, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice),
          "upload");
  }
  template <typename T>
  std::vector<T> download(size_t count) const {
    std::vector<T> values(count);
    check(cudaMemcpy(values.data(), data_, count * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return values;
  }
  static void check(cudaError_t error, const char* what);

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// A stream created on the calling thread's current device, destroyed with it.
class TestStream {
 public:
  TestStream();
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  ~TestStream();
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

std::vector<float> random_floats(size_t count, uint32_t seed, float lo = -1.0f, float hi = 1.0f);
std::vector<double> random_doubles(size_t count, uint32_t seed);

// IEEE half and bfloat16 conversions, written here rather than taken from emu/libs.
uint16_t to_half(float value);
float from_half(uint16_t bits);
uint16_t to_bf16(float value);
float from_bf16(uint16_t bits);

// Sets an environment variable for the scope (restores the old value).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();

 private:
  std::string name_, old_;
  bool had_ = false;
};

}  // namespace sonata::emu::test
