// Training-step benchmark of the reference workloads, printing one JSON line in the schema of
// ../shared/bench/peer_torch.py so the two can be compared side by side:
//   bench_models --work vgg19_bn --device cpu [--batch 8] [--size 1x128x128] [--steps 5]
// vgg19_bn: VGG19_BN, 16 classes, SGD momentum 0.9 lr 0.01, cross-entropy, as peer_torch.py.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <sstream>

#include "base/error.h"
#include "engine/allocator.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/ops/loss.h"
#include "engine/random.h"
#include "models/registry.h"

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

using namespace sonata;

namespace {
void synchronize(Device device) {
#if SONATA_WITH_CUDA
  if (device.is_cuda()) cudaDeviceSynchronize();  // timing only, outside any step
#else
  (void)device;
#endif
}
}  // namespace

int main(int argc, char** argv) {
  std::string work = "vgg19_bn", device_name = "cpu", size;
  int batch = 0, steps = 5, warmup = 2;
  CLI::App app{"sonata training-step benchmark (peer_torch.py's workloads and JSON schema)"};
  app.add_option("--work", work, "vgg19_bn")->capture_default_str();
  app.add_option("--device", device_name, "cpu | cuda")->capture_default_str();
  app.add_option("--batch", batch, "batch size (default 8 on cpu, 64 on cuda)");
  app.add_option("--size", size, "CxHxW (default 1x128x128 on cpu, 3x224x224 on cuda)");
  app.add_option("--steps", steps, "timed steps")->capture_default_str();
  app.add_option("--warmup", warmup, "untimed steps first")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    if (work != "vgg19_bn")
      throw sonata::Error(sonata::str("bench_models: unknown --work '", work, "'"));
    const Device device = Device::parse(device_name);
    if (batch == 0) batch = device.is_cuda() ? 64 : 8;
    if (size.empty()) size = device.is_cuda() ? "3x224x224" : "1x128x128";
    int64_t c = 0, h = 0, w = 0;
    char x1 = 0, x2 = 0;
    std::istringstream(size) >> c >> x1 >> h >> x2 >> w;
    if (x1 != 'x' || x2 != 'x' || c <= 0 || h <= 0 || w <= 0)
      throw sonata::Error(sonata::str("bench_models: --size '", size, "' is not CxHxW"));

    manual_seed(0);
    ModelConfig config;
    config.set("num-classes", "16");
    config.set("in-channels", std::to_string(c));
    auto model = make_model("vgg19_bn", config);
    model->to(device);
    const TensorOptions opts = TensorOptions{}.with(device);
    const Tensor x = randn({batch, c, h, w}, opts);
    const Tensor y = from_vector(std::vector<int64_t>(size_t(batch), 3), {batch}, device);
    std::vector<Tensor> params = model->parameters(), momentum;
    for (const Tensor& p : params) momentum.push_back(zeros_like(p));

    auto step = [&] {
      model->zero_grad();
      cross_entropy(model->forward(x), y).backward();
      NoGradGuard no_grad;
      for (size_t i = 0; i < params.size(); ++i) {  // SGD, momentum 0.9, lr 0.01
        momentum[i].mul_(0.9);
        momentum[i].add_(params[i].grad());
        params[i].add_(momentum[i], -0.01);
      }
    };
    for (int i = 0; i < warmup; ++i) step();
    synchronize(device);
    if (device.is_cuda()) cuda_reset_peak_memory_stats(device.index);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) step();
    synchronize(device);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps;
    std::printf(
        "{\"work\": \"%s\", \"device\": \"%s\", \"precision\": \"fp32\", \"batch\": %d, "
        "\"step_ms\": %.3f, \"images_per_s\": %.3f, \"peer\": \"sonata\"",
        work.c_str(), device_name.c_str(), batch, seconds * 1e3, batch / seconds);
    if (device.is_cuda())
      std::printf(", \"peak_mem_mib\": %.1f",
                  double(cuda_memory_stats(device.index).peak_allocated_bytes) / (1 << 20));
    std::printf("}\n");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_models: %s\n", error.what());
    return 1;
  }
  return 0;
}
