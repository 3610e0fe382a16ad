#pragma once
// The parity probe: one forward (train or eval mode) and optionally the loss and one
// backward of a named model on given weights and input, with every output a comparison with
// PyTorch needs, named as torch names them.
#include <map>
#include <string>

#include "engine/nn/module.h"

namespace sonata {

struct ProbeOptions {
  std::string model = "vgg19_bn";
  std::map<std::string, std::string> model_options;  // --num-classes 16 -> {"num-classes","16"}
  std::string weights, input, labels, out;
  bool train = false, backward = false;
  std::string device = "cpu";
  std::string precision = "fp32";  // fp32 | fp64 (the reference) | fp16 | bf16 (CUDA)
};

// Returns "logits", "loss" (with labels), "grad.<param>" (with backward) and every buffer
// after the forward (BatchNorm running statistics), all on the CPU.
NamedTensors run_probe(const ProbeOptions& options);

}  // namespace sonata
