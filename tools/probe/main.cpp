// probe: compare sonata with PyTorch on the same weights and input.
//   probe --model vgg19_bn --num-classes 16 --in-channels 1 --width 0.25 --dropout 0
//         --weights W.safetensors --input x.npy --labels y.npy --train --backward
//         --device cpu --precision fp32 --out result.safetensors  (one command line)
// writes "logits", "loss", "grad.<param>" and the BatchNorm buffers after the step.
//   probe --model ds2 --num-mels 16 --hidden 32 --layers 2 --weights W.safetensors
//         --input x.npy --input-lengths il.npy --targets t.npy --target-lengths tl.npy
//         --train --backward --out result.safetensors
// writes "log_probs", "output_lengths", the CTC "loss", "grad.<param>" and the buffers.
//   probe --op ctc_loss --log-probs lp.npy --targets t.npy --input-lengths il.npy
//         --target-lengths tl.npy --reduction mean --zero-infinity --out result.safetensors
// writes "loss" and "grad" (w.r.t. log_probs).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>

#include "engine/io/safetensors.h"
#include "tools/probe/probe_run.h"

int main(int argc, char** argv) {
  sonata::ProbeOptions options;
  CLI::App app{"sonata parity probe: one forward/backward, outputs named as PyTorch's"};
  app.add_option("--model", options.model, "model name")->capture_default_str();
  std::string num_classes, in_channels, width, dropout, channels_last;
  app.add_option("--num-classes", num_classes, "model option");
  app.add_option("--in-channels", in_channels, "model option");
  app.add_option("--width", width, "model option: channel multiplier");
  app.add_option("--dropout", dropout, "model option");
  app.add_option("--channels-last", channels_last,
                 "model option: true | false (NHWC convolutions)");
  app.add_option("--weights", options.weights, "safetensors weights with PyTorch names");
  app.add_option("--input", options.input, "input batch (.npy); required unless --op");
  app.add_option("--labels", options.labels, "class labels (.npy, integers)");
  app.add_flag("--train", options.train, "train mode (batch statistics, dropout)");
  app.add_flag("--backward", options.backward, "loss and one backward");
  app.add_flag("--backbone-only", options.backbone_only,
               "load only features.* from --weights (a new classifier head)");
  app.add_option("--device", options.device, "cpu | cuda | cuda:N")->capture_default_str();
  app.add_option("--precision", options.precision, "fp32 | fp64 | fp16 | bf16")
      ->capture_default_str();
  app.add_option("--out", options.out, "result file (.safetensors)")->required();
  // CTC models (ds2) and the ctc_loss op.
  std::map<std::string, std::string> ds2_options;
  for (const char* key : {"num-mels", "vocab-size", "hidden", "layers", "rnn", "bidirectional",
                          "merge", "seq-batch-norm", "mask-padding"})
    app.add_option(std::string("--") + key, ds2_options[key], "model option (ds2)");
  app.add_option("--input-lengths", options.input_lengths, "frames per sample (.npy, integers)");
  app.add_option("--targets", options.targets, "CTC targets, [N, S] padded or concatenated (.npy)");
  app.add_option("--target-lengths", options.target_lengths, "CTC target lengths (.npy)");
  app.add_option("--reduction", options.reduction, "CTC: none | sum | mean")->capture_default_str();
  app.add_option("--blank", options.blank, "CTC blank index")->capture_default_str();
  app.add_flag("--zero-infinity", options.zero_infinity, "CTC: infeasible samples give 0");
  app.add_option("--op", options.op, "run one op instead of a model: ctc_loss");
  app.add_option("--log-probs", options.log_probs, "--op ctc_loss: log_probs [T, N, C] (.npy)");
  CLI11_PARSE(app, argc, argv);
  for (auto [key, value] : {std::pair{"num-classes", &num_classes},
                            {"in-channels", &in_channels},
                            {"width", &width},
                            {"dropout", &dropout},
                            {"channels-last", &channels_last}})
    if (!value->empty()) options.model_options[key] = *value;
  for (const auto& [key, value] : ds2_options)
    if (!value.empty()) options.model_options[key] = value;
  try {
    sonata::save_safetensors(options.out, sonata::run_probe(options));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "probe: %s\n", error.what());
    return 1;
  }
  return 0;
}
