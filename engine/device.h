#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace sonata {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }
  // "cpu", "cuda", "cuda:1"; anything else throws naming the text.
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  std::string str() const;
  bool operator==(const Device&) const = default;
};

// Whether the machine has a usable device for this build (none without the CUDA backend).
int cuda_device_count();  // 0 without a driver, a device, or the CUDA build
bool cuda_available();
// Why cuda_available() is false, in one sentence (for skipped tests and --device errors).
std::string cuda_unavailable_reason();
// Blocks the host until everything queued on `device` has run (a no-op on the CPU). For
// timing and profiling boundaries, never inside a training step.
void device_synchronize(Device device);

}  // namespace sonata
