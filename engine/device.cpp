#include "engine/device.h"

#include <charconv>

#include "base/error.h"

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>

#include "base/cuda_check.h"
#include "engine/device_guard.h"
#endif

namespace sonata {

Device Device::parse(std::string_view text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda(0);
  if (text.starts_with("cuda:")) {
    int index = -1;
    const std::string_view digits = text.substr(5);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec == std::errc() && end == digits.data() + digits.size() && index >= 0) return cuda(index);
  }
  throw Error(sonata::str("unknown device '", text, "': expected cpu, cuda or cuda:N"));
}

std::string Device::str() const {
  return is_cpu() ? "cpu" : "cuda:" + std::to_string(index);
}

#if SONATA_WITH_CUDA
namespace {
struct CudaProbe {
  int count = 0;
  std::string reason;
};
const CudaProbe& probe() {
  static const CudaProbe result = [] {
    CudaProbe p;
    const cudaError_t status = cudaGetDeviceCount(&p.count);
    if (status != cudaSuccess) {
      p.count = 0;
      p.reason =
          sonata::str("no CUDA device (cudaGetDeviceCount: ", cudaGetErrorString(status), ")");
      cudaGetLastError();  // clear the sticky error so later calls do not see it
    } else if (p.count == 0) {
      p.reason = "no CUDA device on this machine";
    }
    return p;
  }();
  return result;
}
}  // namespace
int cuda_device_count() {
  return probe().count;
}
std::string cuda_unavailable_reason() {
  return probe().reason;
}
#else
int cuda_device_count() {
  return 0;
}
std::string cuda_unavailable_reason() {
  return "this build has no CUDA backend (SONATA_CUDA=OFF)";
}
#endif

bool cuda_available() {
  return cuda_device_count() > 0;
}

void device_synchronize(Device device) {
#if SONATA_WITH_CUDA
  if (device.is_cuda()) {
    set_cuda_device(device.index);
    CUDA_CHECK(cudaDeviceSynchronize());
  }
#else
  (void)device;
#endif
}

}  // namespace sonata
