// trainer: trains vgg19_bn or ds2 from manifests; `trainer --help` lists every option.
//   trainer --model ds2 --train train.tsv --val dev.tsv --test test.tsv --hidden 128
//           --epochs 12 --lr 3e-3 --checkpoint-dir runs/ds2
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "base/determinism.h"
#include "base/error.h"
#include "engine/device.h"
#include "engine/random.h"
#include "tools/trainer/class_task.h"
#include "tools/trainer/speech_task.h"
#include "tools/trainer/train_loop.h"

namespace {

sonata::Device pick_device(const std::string& name) {
  if (name == "auto")
    return sonata::cuda_device_count() > 0 ? sonata::Device::cuda(0) : sonata::Device::cpu();
  const sonata::Device device = sonata::Device::parse(name);
  SONATA_CHECK(!device.is_cuda() || device.index < sonata::cuda_device_count(), "--device ", name,
               ": this machine has ", sonata::cuda_device_count(), " CUDA devices");
  return device;
}

void print_eval(const char* what, const sonata::EvalResult& result) {
  std::printf("%s:", what);
  for (const auto& [name, value] : result.metrics) std::printf("  %s %.4f", name.c_str(), value);
  std::printf("\n");
  for (const std::string& line : result.report) std::printf("%s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  sonata::TrainerOptions options;
  CLI::App app{"sonata trainer: DeepSpeech2 (CTC) or VGG19_BN (classification) from manifests"};
  sonata::add_trainer_options(app, options);
  CLI11_PARSE(app, argc, argv);
  try {
    options.check();
    const sonata::Device device = pick_device(options.device);
    SONATA_CHECK(options.precision == "fp32" || device.is_cuda(), "--precision ", options.precision,
                 " needs a GPU and none was found; use --precision fp32");
    sonata::manual_seed(options.seed);
    sonata::set_deterministic_algorithms(options.deterministic);
    std::unique_ptr<sonata::Task> task;
    if (options.is_asr()) {
      task = std::make_unique<sonata::SpeechTask>(
          options, options.vocabulary.empty() ? sonata::Vocabulary()
                                              : sonata::Vocabulary::load(options.vocabulary));
    } else {
      task = std::make_unique<sonata::ClassTask>(options);
    }
    const sonata::TrainResult result = sonata::run_training(options, *task, device);
    if (!result.last_val.metrics.empty()) print_eval("val", result.last_val);
    if (!result.test.metrics.empty()) print_eval("test", result.test);
    return result.stopped_bad ? 3 : 0;
  } catch (const std::exception& error) {
    std::fflush(stdout);
    std::fprintf(stderr, "\ntrainer: %s\n", error.what());
    return 1;
  }
}
