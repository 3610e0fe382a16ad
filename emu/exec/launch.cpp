#include "emu/exec/launch.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>

#include "emu/exec/access_profile.h"
#include "emu/exec/executor.h"
#include "emu/runtime/device_work.h"
#include "emu/runtime/error_state.h"
#include "emu/runtime/function_attributes.h"

namespace sonata::emu {

namespace {

std::atomic<uint64_t> g_launches{0};
std::atomic<int64_t> g_seed_override{-1};

uint64_t base_seed() {
  const int64_t override_seed = g_seed_override.load();
  if (override_seed >= 0) return uint64_t(override_seed);
  static const uint64_t seed = [] {
    const char* text = std::getenv("SONATA_EMU_SEED");
    if (!text || !*text) return uint64_t(1);
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 10);
    if (*end != '\0') {
      std::fprintf(stderr, "sonata emu: SONATA_EMU_SEED=%s is not a non-negative integer\n", text);
      std::exit(2);
    }
    return uint64_t(value);
  }();
  return seed;
}

cudaError_t refuse(cudaError_t error, const char* kernel_name, const std::string& why) {
  std::fprintf(stderr, "sonata emu: launch of kernel %s refused (%s): %s\n", kernel_name,
               error == cudaErrorInvalidConfiguration ? "cudaErrorInvalidConfiguration"
                                                      : "cudaErrorInvalidValue",
               why.c_str());
  record_error(error);
  return error;
}

std::string dims(dim3 d) {
  std::ostringstream out;
  out << '(' << d.x << ',' << d.y << ',' << d.z << ')';
  return out.str();
}

}  // namespace

void reset_lane_order(uint64_t seed) {
  g_seed_override = int64_t(seed & 0x7fffffffffffffffull);
  g_launches = 0;
}

cudaError_t launch_kernel(const void* kernel, const char* kernel_name, dim3 grid, dim3 block,
                          size_t dynamic_shared_bytes, cudaStream_t stream,
                          std::function<void()> thread_body) {
  const char* name = kernel_name ? kernel_name : "(unnamed kernel)";
  if (block.x == 0 || block.y == 0 || block.z == 0)
    return refuse(cudaErrorInvalidConfiguration, name,
                  "block " + dims(block) + " has a zero extent");
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    return refuse(cudaErrorInvalidConfiguration, name, "grid " + dims(grid) + " has a zero extent");
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  if (threads > kMaxThreadsPerBlock)
    return refuse(
        cudaErrorInvalidConfiguration, name,
        "block " + dims(block) + " has " + std::to_string(threads) + " threads, more than 1024");
  if (block.x > kMaxBlockX || block.y > kMaxBlockY || block.z > kMaxBlockZ)
    return refuse(cudaErrorInvalidConfiguration, name,
                  "block " + dims(block) + " exceeds (1024,1024,64)");
  if (grid.x > kMaxGridX || grid.y > kMaxGridYZ || grid.z > kMaxGridYZ)
    return refuse(cudaErrorInvalidConfiguration, name,
                  "grid " + dims(grid) + " exceeds (2147483647,65535,65535)");
  const size_t limit = size_t(max_dynamic_shared_bytes(kernel));
  if (dynamic_shared_bytes > limit)
    return refuse(cudaErrorInvalidValue, name,
                  std::to_string(dynamic_shared_bytes) + " bytes of dynamic shared memory, above " +
                      std::to_string(limit) +
                      (limit == kDefaultSharedBytes
                           ? " (48 KiB without cudaFuncAttributeMaxDynamicSharedMemorySize)"
                           : " (the function's cudaFuncAttributeMaxDynamicSharedMemorySize)"));

  auto launch = std::make_shared<exec::GridLaunch>();
  launch->kernel = kernel;
  launch->name = name;
  launch->grid = grid;
  launch->block = block;
  launch->dynamic_shared_bytes = dynamic_shared_bytes;
  launch->body = std::move(thread_body);
  launch->seed = base_seed() * 0x9e3779b97f4a7c15ull + ++g_launches;
  Work work;
  work.name = std::string("kernel ") + name;
  work.kind = WorkKind::kernel;
  exec::g_access_profile = profile::enabled();
  work.run = [launch] { exec::run_grid(*launch); };
  return enqueue(stream, std::move(work));
}

}  // namespace sonata::emu
