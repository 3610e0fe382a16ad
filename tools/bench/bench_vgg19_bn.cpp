// peer_torch.py --work vgg19_bn: torchvision VGG19_BN, 16 classes, SGD momentum 0.9 lr 0.01,
// cross-entropy, input CxHxW (default 1x128x128 on the CPU, 3x224x224 on CUDA).
#include <sstream>

#include "base/error.h"
#include "engine/ops.h"
#include "engine/ops/loss.h"
#include "engine/optim/sgd.h"
#include "engine/random.h"
#include "models/registry.h"
#include "tools/bench/bench_work.h"

namespace sonata {

BenchFields bench_vgg19_bn(const BenchOptions& options) {
  const Device device = options.device;
  const int64_t batch = options.batch ? options.batch : device.is_cuda() ? 64 : 8;
  const std::string size =
      options.size.empty() ? (device.is_cuda() ? "3x224x224" : "1x128x128") : options.size;
  int64_t c = 0, h = 0, w = 0;
  char x1 = 0, x2 = 0;
  std::istringstream(size) >> c >> x1 >> h >> x2 >> w;
  SONATA_CHECK(x1 == 'x' && x2 == 'x' && c > 0 && h > 0 && w > 0, "bench_models: --size '", size,
               "' is not CxHxW");
  SONATA_CHECK(options.precision == "fp32", "bench_models: vgg19_bn runs in fp32 only so far");

  manual_seed(0);
  ModelConfig config;
  config.set("num-classes", "16");
  config.set("in-channels", std::to_string(c));
  auto model = make_model("vgg19_bn", config);
  model->to(device);
  const Tensor x = randn({batch, c, h, w}, TensorOptions{}.with(device));
  const Tensor y = from_vector(std::vector<int64_t>(size_t(batch), 3), {batch}, device);
  SGD sgd(model->parameters(), SgdOptions{.lr = 0.01, .momentum = 0.9});

  const double seconds = time_steps(options, [&] {
    sgd.zero_grad();
    cross_entropy(model->forward(x), y).backward();
    sgd.step();
  });
  return {{"batch", std::to_string(batch)},
          {"step_ms", str(seconds * 1e3)},
          {"images_per_s", str(double(batch) / seconds)}};
}

}  // namespace sonata
