// What a new user reads from a run: the decoded examples are spread over the evaluated set
// (not its first manifest lines, often one word or speaker), the metrics log's place is said
// when no --checkpoint-dir holds it, and a warmup longer than the run says how to fit it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/error_of.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/stdout_capture.h"
#include "tests/support/tiny_ds2.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

#if SONATA_WITH_SNDFILE
namespace {

std::vector<std::string> transcripts(const std::string& manifest) {
  std::ifstream in(manifest);
  std::vector<std::string> texts;
  for (std::string line; std::getline(in, line);) texts.push_back(line.substr(line.find('\t') + 1));
  return texts;
}

TrainResult train(const TrainerOptions& options) {
  manual_seed(options.seed);
  SpeechTask task(options, Vocabulary());
  return run_training(options, task, Device::cpu());
}

}  // namespace

TEST_CASE("trainer: the decoded examples are spread over the evaluated set", "[trainer]") {
  TemporaryFolder folder("run_messages_examples");
  const std::string val = write_letters_corpus(folder.path().string(), "val", 8, 11);
  const std::vector<std::string> texts = transcripts(val);
  REQUIRE(texts.size() == 8);
  REQUIRE(texts[1] != texts[4]);  // the first lines and the spread ones tell apart
  TrainerOptions options =
      tiny_ds2_options(write_letters_corpus(folder.path().string(), "train", 4, 3));
  options.val_manifest = val;
  options.epochs = 1;
  options.beam_width = 0;
  options.show_transcripts = 2;
  options.metrics = folder.file("metrics.jsonl");
  const TrainResult result = train(options);
  std::vector<std::string> references;
  for (const std::string& line : result.last_val.report)
    if (line.rfind("  ref:    ", 0) == 0) references.push_back(line.substr(10));
  CHECK(references == std::vector<std::string>{texts[0], texts[4]});
}

TEST_CASE("trainer: without --checkpoint-dir the run says where metrics.jsonl goes", "[trainer]") {
  TemporaryFolder folder("run_messages_metrics");
  TrainerOptions options =
      tiny_ds2_options(write_letters_corpus(folder.path().string(), "train", 4, 3));
  options.epochs = 1;
  options.progress = "lines";
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(folder.path());
  std::string printed;
  try {
    printed = stdout_of(folder.file("stdout"), [&] { train(options); });
  } catch (...) {
    std::filesystem::current_path(before);
    throw;
  }
  std::filesystem::current_path(before);
  CHECK_THAT(printed,
             Contains("no --checkpoint-dir: no checkpoints are written, and the metrics "
                      "go to " +
                      (folder.path() / "metrics.jsonl").string() + " (--metrics FILE to choose)"));
}

TEST_CASE("trainer: a warmup as long as the run says how to fit it", "[trainer]") {
  TemporaryFolder folder("run_messages_warmup");
  TrainerOptions options =
      tiny_ds2_options(write_letters_corpus(folder.path().string(), "train", 4, 3));
  options.epochs = 2;
  options.warmup = 2;
  options.metrics = folder.file("metrics.jsonl");
  CHECK_THAT(error_of([&] { train(options); }),
             Contains("--warmup 2 and --flat-tail 0 leave nothing of the 2 epochs of training: "
                      "shorten them to fit (e.g. --warmup 0.2 --flat-tail 0, a tenth of the run "
                      "warming up) or train longer"));
}
#endif
