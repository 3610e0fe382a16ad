#include "engine/device_thread.h"

#include <optional>
#include <utility>

#include "engine/device_guard.h"

namespace sonata {

std::thread start_device_thread(Device device, std::function<void(std::exception_ptr)> body) {
  return std::thread([device, body = std::move(body)] {
    std::exception_ptr no_device;
    std::optional<CudaDeviceGuard> on_device;
    try {
      on_device.emplace(device);
    } catch (...) {
      no_device = std::current_exception();
    }
    body(no_device);
  });
}

}  // namespace sonata
