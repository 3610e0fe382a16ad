// What a resume must tell the user is told whatever --progress says (train/progress.h
// notice): under --progress none on stderr, and the "resume" record of metrics.jsonl lists
// every change.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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
// (The name does not start with "--": Catch would read it as an option when ctest runs it.)
TEST_CASE(
    "evaluation only, in a folder whose metrics log cannot be written, still evaluates "
    "and says the log is not kept",
    "[trainer][resume][notice]") {
  TemporaryFolder folder("eval_only_read_only");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 4, 6);
  TrainerOptions options = tiny_ds2_options(manifest);  // --progress none
  options.max_steps = 1;
  options.checkpoint_dir = folder.file("run");
  train(options);
  // What a read-only folder does to the log, also to root (whom permissions do not stop):
  // the log's path cannot be opened for writing.
  std::filesystem::remove(options.checkpoint_dir + "/metrics.jsonl");
  std::filesystem::create_directory(options.checkpoint_dir + "/metrics.jsonl");
  TrainerOptions evaluate = options;
  evaluate.train_manifest.clear();
  evaluate.val_manifest = manifest;
  evaluate.eval_only = true;
  evaluate.resume = "auto";
  TrainResult result;
  const std::string err = stderr_of(folder.file("stderr"), [&] {
    manual_seed(evaluate.seed);
    SpeechTask task(evaluate, Vocabulary());
    result = run_training(evaluate, task, Device::cpu());
  });
  CHECK_THAT(err, Contains("--eval-only: cannot write the metrics log " + options.checkpoint_dir +
                           "/metrics.jsonl"));
  CHECK(result.last_val.metrics.count("cer") == 1);
}
TEST_CASE(
    "a training manifest edited in place between the stop and the resume is refused in the "
    "middle of an epoch and said at an epoch's start",
    "[trainer][resume][notice]") {
  TemporaryFolder folder("resume_manifest_edited");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 4, 7);
  std::ifstream in(manifest);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  in.close();
  REQUIRE(lines.size() == 4);
  // The same clips with two transcripts swapped (`swapped`): as many items and steps, other
  // data.
  auto write_manifest = [&](bool swapped) {
    std::vector<std::string> written = lines;
    if (swapped) {
      const size_t tab0 = lines[0].find('\t'), tab1 = lines[1].find('\t');
      written[0] = lines[0].substr(0, tab0) + lines[1].substr(tab1);
      written[1] = lines[1].substr(0, tab1) + lines[0].substr(tab0);
      REQUIRE(written[0] != lines[0]);
    }
    std::string text;
    for (const std::string& line : written) text += line + "\n";
    write_text(manifest, text);
  };
  TrainerOptions options = tiny_ds2_options(manifest);  // --progress none
  options.epochs = 2;                                   // 2 steps an epoch
  options.checkpoint_dir = folder.file("run");
  options.stop_after = 1;
  train(options);

  write_manifest(true);
  options.resume = "auto";
  options.stop_after = 2;
  CHECK_THROWS_WITH(train(options), Contains("--train '" + manifest + "' changed since ") &&
                                        Contains(options.checkpoint_dir + "/step-") &&
                                        Contains("--init-from"));
  // Put back, it resumes to the epoch's end; edited there, the next epoch trains on it, said.
  write_manifest(false);
  train(options);
  write_manifest(true);
  options.stop_after = 0;
  const std::string said = stderr_of(folder.file("stderr"), [&] { train(options); });
  CHECK_THAT(said, Contains("--train '" + manifest + "' changed since ") &&
                       Contains("its new items are trained on from this epoch on"));
}
#endif
