// probe: compare sonata with PyTorch on the same weights and input.
//   probe --model vgg19_bn --num-classes 16 --in-channels 1 --width 0.25 --dropout 0
//         --weights W.safetensors --input x.npy --labels y.npy --train --backward
//         --device cpu --precision fp32 --out result.safetensors  (one command line)
// writes "logits", "loss", "grad.<param>" and the BatchNorm buffers after the step.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "engine/io/safetensors.h"
#include "tools/probe/probe_run.h"

int main(int argc, char** argv) {
  sonata::ProbeOptions options;
  CLI::App app{"sonata parity probe: one forward/backward, outputs named as PyTorch's"};
  app.add_option("--model", options.model, "model name")->capture_default_str();
  std::string num_classes, in_channels, width, dropout;
  app.add_option("--num-classes", num_classes, "model option");
  app.add_option("--in-channels", in_channels, "model option");
  app.add_option("--width", width, "model option: channel multiplier");
  app.add_option("--dropout", dropout, "model option");
  app.add_option("--weights", options.weights, "safetensors weights with PyTorch names");
  app.add_option("--input", options.input, "input batch (.npy)")->required();
  app.add_option("--labels", options.labels, "class labels (.npy, integers)");
  app.add_flag("--train", options.train, "train mode (batch statistics, dropout)");
  app.add_flag("--backward", options.backward, "loss and one backward");
  app.add_option("--device", options.device, "cpu | cuda | cuda:N")->capture_default_str();
  app.add_option("--precision", options.precision, "fp32 | fp64 | fp16 | bf16")
      ->capture_default_str();
  app.add_option("--out", options.out, "result file (.safetensors)")->required();
  CLI11_PARSE(app, argc, argv);
  for (auto [key, value] : {std::pair{"num-classes", &num_classes},
                            {"in-channels", &in_channels},
                            {"width", &width},
                            {"dropout", &dropout}})
    if (!value->empty()) options.model_options[key] = *value;
  try {
    sonata::save_safetensors(options.out, sonata::run_probe(options));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "probe: %s\n", error.what());
    return 1;
  }
  return 0;
}
