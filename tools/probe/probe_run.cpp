#include "tools/probe/probe_run.h"

#include "base/error.h"
#include "engine/io/npy.h"
#include "engine/io/safetensors.h"
#include "engine/nn/state_dict.h"
#include "engine/ops/loss.h"
#include "engine/random.h"
#include "models/registry.h"
#include "tools/probe/probe_ds2.h"
#include "tools/probe/probe_ops.h"

namespace sonata {
namespace {

// "logits", and with --labels the cross-entropy "loss" and its gradients.
NamedTensors probe_classifier(Module& model, const Tensor& x, const ProbeOptions& options,
                              Device device) {
  SONATA_CHECK(!options.backward || !options.labels.empty(),
               "probe: --backward needs --labels y.npy for the loss");
  NamedTensors out;
  const Tensor logits = model.forward(x);
  out.emplace_back("logits", logits);
  if (!options.labels.empty()) {
    const Tensor labels = load_npy(options.labels).to(DType::i64).to(device);
    const Tensor loss = cross_entropy(logits, labels);
    out.emplace_back("loss", loss);
    if (options.backward) {
      loss.backward();
      for (const auto& [name, p] : model.named_parameters())
        out.emplace_back("grad." + name, p.grad().defined() ? p.grad() : zeros_like(p));
    }
  }
  return out;
}

}  // namespace

NamedTensors run_probe(const ProbeOptions& options) {
  if (!options.op.empty()) return run_probe_op(options);
  SONATA_CHECK(!options.input.empty(), "probe: --input x.npy is required");
  const DType dtype = options.precision == "fp64"   ? DType::f64
                      : options.precision == "fp16" ? DType::f16
                      : options.precision == "bf16" ? DType::bf16
                      : options.precision == "fp32"
                          ? DType::f32
                          : throw Error(str("probe: --precision '", options.precision,
                                            "' is not fp32, fp64, fp16 or bf16"));
  const Device device = Device::parse(options.device);
  manual_seed(0);
  auto model = make_model(options.model, ModelConfig(options.model_options));
  // Convert first, so f64 weights reach an f64 model without a trip through f32.
  model->to(dtype);
  SONATA_CHECK(!options.backbone_only || !options.weights.empty(),
               "probe: --backbone-only needs --weights");
  if (!options.weights.empty()) {
    LoadStateOptions load;
    if (options.backbone_only) load.only_prefixes = {"features."};
    load_state_dict(*model, load_safetensors(options.weights).tensors, load);
  }
  model->to(device);
  model->train(options.train);

  const Tensor x = load_npy(options.input).to(dtype).to(device);
  // By the model's family (models/model_family.h), as the trainer picks its task.
  auto* speech = dynamic_cast<SpeechModel*>(model.get());
  NamedTensors out =
      speech ? probe_ds2(*speech, x, options) : probe_classifier(*model, x, options, device);
  for (const auto& [name, b] : model->named_buffers()) out.emplace_back(name, b);
  for (auto& [name, t] : out) t = t.detach().to(Device::cpu());
  return out;
}

}  // namespace sonata
