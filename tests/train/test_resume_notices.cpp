// What a resume must tell the user is told whatever --progress says (train/progress.h
// notice): under --progress none on stderr, and the "resume" record of metrics.jsonl lists
// every change.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/stdout_capture.h"
#include "tests/support/tiny_ds2.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

#if SONATA_WITH_SNDFILE
using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

namespace {

void train(const TrainerOptions& options) {
  manual_seed(options.seed);
  SpeechTask task(options, Vocabulary());
  run_training(options, task, Device::cpu());
}

}  // namespace

TEST_CASE(
    "resume under --progress none: a changed --lr and a finished run are still said, and "
    "the resume record lists the change",
    "[trainer][resume][notice]") {
  TemporaryFolder folder("resume_notices");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 4, 5);
  TrainerOptions options = tiny_ds2_options(manifest);  // --progress none
  options.epochs = 2;                                   // 2 steps an epoch
  options.schedule = "constant";
  options.lr = 1e-2;
  options.checkpoint_dir = folder.file("run");
  options.stop_after = 2;
  train(options);
  options.stop_after = 0;
  options.resume = "auto";
  options.lr = 2e-2;
  const std::string changed = stderr_of(folder.file("stderr"), [&] { train(options); });
  CHECK_THAT(changed, Contains("resumed run changes --lr from 0.01 to 0.02"));
  nlohmann::json resume;
  std::ifstream log(options.checkpoint_dir + "/metrics.jsonl");
  for (std::string line; std::getline(log, line);) {
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_object() && record.value("event", "") == "resume") resume = record;
  }
  REQUIRE(resume.contains("changes"));
  REQUIRE(resume["changes"].size() == 1);
  CHECK_THAT(resume["changes"][0].get<std::string>(),
             Contains("resumed run changes --lr from 0.01 to 0.02"));

  const std::string complete = stderr_of(folder.file("stderr"), [&] { train(options); });
  CHECK_THAT(complete, Contains("the run is already complete: its checkpoint is at step 4"));
}
#endif
