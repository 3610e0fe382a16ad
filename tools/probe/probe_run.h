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
  // Load only features.* from `weights`, keeping the model's fresh classifier head: the
  // fine-tuning start (16 genres over ImageNet's 1000 classes).
  bool backbone_only = false;
  std::string device = "cpu";
  std::string precision = "fp32";  // fp32 | fp64 (the reference) | fp16 | bf16 (CUDA)
  // CTC models (ds2) and --op ctc_loss: .npy files of per-sample input lengths (frames),
  // padded [N, S] or concatenated targets and target lengths; ctc_loss's options.
  std::string input_lengths, targets, target_lengths;
  std::string reduction = "mean";  // none | sum | mean
  int64_t blank = 0;
  bool zero_infinity = false;
  // One op instead of a model ("ctc_loss"), on --log-probs lp.npy.
  std::string op, log_probs;
};

// Returns "logits", "loss" (with labels), "grad.<param>" (with backward) and every buffer
// after the forward (BatchNorm running statistics), all on the CPU. CTC models (ds2) give
// "log_probs" and "output_lengths" instead of "logits", and their "loss" is the CTC loss
// over --targets (tools/probe/probe_ds2.h). With `op` set, runs that op alone instead
// (tools/probe/probe_ops.h).
NamedTensors run_probe(const ProbeOptions& options);

}  // namespace sonata
