// A checkpoint's files cannot be switched off their checks nor mixed: a file of sonata's own
// whose checksum key was renamed is refused, not loaded unchecked, and a step folder's model
// file, step and run are bound by its state file (engine/checkpoint/checkpoint_format.cpp).
// End to end: each defect planted in the newest checkpoint of a trained run, then
// --resume auto, which must fall back to the previous checkpoint, naming why.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/checkpoint/checkpoint.h"
#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/error_of.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

#if SONATA_WITH_SNDFILE
using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void overwrite(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The checksum's key renamed (the header keeps its length) and the last data byte flipped.
void unkey_and_damage(const std::string& path) {
  std::string bytes = contents(path);
  const size_t key = bytes.find("sonata.crc32c");
  REQUIRE(key != std::string::npos);
  bytes[key + 12] = 'd';
  bytes.back() = char(bytes.back() ^ 0x01);
  overwrite(path, bytes);
}

void train(const TrainerOptions& options) {
  manual_seed(options.seed);
  SpeechTask task(options, Vocabulary());
  run_training(options, task, Device::cpu());
}

// The last "resume" record of the run's log.
nlohmann::json resume_record(const std::string& run) {
  std::ifstream in(run + "/metrics.jsonl");
  nlohmann::json found;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_object() && record.value("event", "") == "resume") found = record;
  }
  return found;
}

}  // namespace

TEST_CASE(
    "trainer: a checkpoint whose checksum key was renamed, or whose files belong to "
    "another step or run, is refused and --resume auto falls back",
    "[trainer][checkpoint][binding]") {
  TemporaryFolder folder("checkpoint_binding");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 6, 3);
  // One epoch of 3 steps, a checkpoint after each.
  TrainerOptions options = tiny_ds2_options(manifest);
  options.epochs = 1;
  options.checkpoint_every = 1;
  options.checkpoint_dir = folder.file("pristine");
  REQUIRE(error_of([&] { train(options); }) == "no error");
  TrainerOptions other_run = options;
  other_run.checkpoint_dir = folder.file("other");
  REQUIRE(error_of([&] { train(other_run); }) == "no error");
  const std::string step2 = "/step-000000000002", step3 = "/step-000000000003";

  struct Defect {
    const char* what;
    std::function<void(const std::string&)> plant;  // on the run folder
    const char* refusal;
  };
  const Defect defects[] = {
      {"step 2's model file copied into step 3",
       [&](const std::string& run) {
         fs::copy_file(run + step2 + "/model.safetensors", run + step3 + "/model.safetensors",
                       fs::copy_options::overwrite_existing);
       },
       "is not the model file saved with"},
      {"the model file's checksum key renamed, a data byte flipped",
       [&](const std::string& run) { unkey_and_damage(run + step3 + "/model.safetensors"); },
       "model.safetensors carries no checksum"},
      {"the state file's checksum key renamed, a data byte flipped",
       [&](const std::string& run) { unkey_and_damage(run + step3 + "/state.safetensors"); },
       "state.safetensors carries no checksum"},
      {"step 2's folder copied as step 3",
       [&](const std::string& run) {
         fs::remove_all(run + step3);
         fs::copy(run + step2, run + step3);
       },
       "holds step 2, not the folder's step 3"},
      {"another run's step 3 copied in",
       [&](const std::string& run) {
         fs::remove_all(run + step3);
         fs::copy(other_run.checkpoint_dir + step3, run + step3);
       },
       "a checkpoint of another run"},
  };
  int index = 0;
  for (const Defect& defect : defects) {
    INFO(defect.what);
    const std::string run = folder.file("case" + std::to_string(index++));
    fs::copy(options.checkpoint_dir, run,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    defect.plant(run);
    CHECK_THAT(error_of([&] { load_checkpoint(run + step3); }), Contains(defect.refusal));
    TrainerOptions resumed = options;
    resumed.checkpoint_dir = run;
    resumed.resume = "auto";
    REQUIRE(error_of([&] { train(resumed); }) == "no error");
    const nlohmann::json record = resume_record(run);
    CHECK(record.value("checkpoint", "") == run + step2);
    REQUIRE(record.contains("skipped"));
    REQUIRE(record["skipped"].size() == 1);
    CHECK_THAT(record["skipped"][0].get<std::string>(), Contains(defect.refusal));
  }
}
#endif
