// peer_torch.py --work vgg19_bn: torchvision VGG19_BN, 16 classes, SGD momentum 0.9 lr 0.01,
// cross-entropy, input CxHxW (default 1x128x128 on the CPU, 3x224x224 on CUDA).
#include <sstream>

#include "base/error.h"
#include "bench/bench_work.h"
#include "engine/ops.h"
#include "engine/ops/loss.h"
#include "engine/optim/sgd.h"
#include "engine/random.h"
#include "models/model_family.h"
#include "models/registry.h"

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
  // Half precision runs the whole model in f16/bf16 (BN statistics, the loss and the SGD
  // master weights in fp32 inside the kernels), the closest sonata has to PyTorch AMP until
  // the trainer's autocast lands.
  const DType dtype = options.precision == "fp32"   ? DType::f32
                      : options.precision == "fp16" ? DType::f16
                      : options.precision == "bf16"
                          ? DType::bf16
                          : throw Error(str("bench_models: --precision '", options.precision,
                                            "' is not fp32, fp16 or bf16"));
  SONATA_CHECK(dtype == DType::f32 || device.is_cuda(), "bench_models: --precision ",
               options.precision, " needs --device cuda (the CPU kernels are f32/f64)");

  manual_seed(0);
  ModelConfig config;
  config.set("num-classes", "16");
  config.set("in-channels", std::to_string(c));
  config.set("channels-last", options.channels_last ? "true" : "false");
  auto model = make_model("vgg19_bn", config);
  model->to(device);
  model->to(dtype);
  const Tensor x = randn({batch, c, h, w}, TensorOptions{}.with(device)).to(dtype);
  const Tensor y = from_vector(std::vector<int64_t>(size_t(batch), 3), {batch}, device);
  SGD sgd(model->parameters(), SgdOptions{.lr = 0.01, .momentum = 0.9});

  const double seconds = time_steps(options, [&] {
    sgd.zero_grad();
    cross_entropy(model->forward(x), y).backward();
    sgd.step();
  });
  BenchFields fields{
      {"batch", std::to_string(batch)},
      {"memory_format", options.channels_last ? "\"channels_last\"" : "\"contiguous\""},
      {"step_ms", str(seconds * 1e3)},
      {"images_per_s", str(double(batch) / seconds)}};
  if (dtype == DType::f32 && !options.channels_last)
    add_step_peak_share(fields, options, std::dynamic_pointer_cast<LayeredModel>(model)->layers(),
                        {x, Tensor()}, seconds);
  return fields;
}

}  // namespace sonata
