// The trainer's start line names the CPU kernels' capability (kernels/cpu/capability.h), so
// that a log says which instruction set a CPU run's speed came from.
#include <catch2/catch.hpp>

#include <string>

#include "engine/random.h"
#include "kernels/cpu/capability.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/stdout_capture.h"
#include "tests/support/tiny_ds2.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

#if SONATA_WITH_SNDFILE
TEST_CASE("trainer: the start line names the CPU capability", "[trainer][cpu_capability]") {
  TemporaryFolder folder("start_line_capability");
  TrainerOptions options =
      tiny_ds2_options(write_letters_corpus(folder.path().string(), "train", 4, 3));
  options.epochs = 1;
  options.progress = "lines";
  options.metrics = folder.file("metrics.jsonl");
  // The lowest capability, forced: the line must name the one in force, not the best.
  const kernels::cpu::ScopedCapability baseline(kernels::cpu::Capability::baseline);
  const std::string printed = stdout_of(folder.file("stdout"), [&] {
    manual_seed(options.seed);
    SpeechTask task(options, Vocabulary());
    run_training(options, task, Device::cpu());
  });
  CHECK_THAT(printed, Contains("training on cpu (baseline): "));
}
#endif
