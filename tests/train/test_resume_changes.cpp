// A resume that changes an option either does what its note says from the resumed step on,
// or is refused in one sentence (train/resume_changes.h). The corpus:
// tests/support/letters_corpus.h, the tiny DS2 of the trainer tests.
#include <catch2/catch.hpp>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

#if SONATA_WITH_SNDFILE
namespace {

std::unique_ptr<SpeechTask> train(const TrainerOptions& options) {
  manual_seed(options.seed);
  auto task = std::make_unique<SpeechTask>(options, Vocabulary());
  run_training(options, *task, Device::cpu());
  return task;
}

std::vector<double> weights(Task& task) {
  std::vector<double> values;
  for (const auto& [name, tensor] : task.model().state_dict()) {
    const auto v = tensor.to(DType::f64).to_vector<double>();
    values.insert(values.end(), v.begin(), v.end());
  }
  return values;
}

// The lr of each logged training step after `after`.
std::vector<double> logged_lrs(const std::string& metrics, int64_t after) {
  std::ifstream in(metrics);
  std::vector<double> lrs;
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record["event"] == "train" && record["step"].get<int64_t>() > after)
      lrs.push_back(record["lr"].get<double>());
  }
  return lrs;
}

// Options of a run of 3 epochs of 4 steps with a constant lr, and its first `stop_after`
// steps trained and checkpointed in `folder`/`name`.
TrainerOptions stopped_run(const TemporaryFolder& folder, const std::string& name,
                           const std::string& train_manifest, int64_t stop_after = 6) {
  TrainerOptions options = tiny_ds2_options(train_manifest);
  options.batch_size = 4;  // 14 clips: 4 batches an epoch
  options.epochs = 3;
  options.schedule = "constant";
  options.lr = 1e-2;
  options.log_every = 1;
  options.checkpoint_dir = folder.file(name);
  options.stop_after = stop_after;
  train(options);
  options.stop_after = 0;
  options.resume = "auto";
  return options;
}

std::string refusal(const TrainerOptions& options) {
  try {
    train(options);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("resume: a changed --lr, --weight-decay or --beta1 applies from the resumed step on",
          "[trainer][resume]") {
  TemporaryFolder folder("resume_changes_hyper");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 14, 5);
  const TrainerOptions same = stopped_run(folder, "same", manifest);
  const std::vector<double> unchanged = weights(*train(same));

  TrainerOptions lr = stopped_run(folder, "lr", manifest);
  lr.lr = 2e-2;
  const std::vector<double> with_lr = weights(*train(lr));
  CHECK(logged_lrs(lr.checkpoint_dir + "/metrics.jsonl", 6) == std::vector<double>(6, 2e-2));
  CHECK(with_lr != unchanged);

  TrainerOptions decay = stopped_run(folder, "decay", manifest);
  decay.weight_decay = 0.5;
  CHECK(weights(*train(decay)) != unchanged);

  TrainerOptions beta1 = stopped_run(folder, "beta1", manifest);
  beta1.beta1 = 0.5;
  CHECK(weights(*train(beta1)) != unchanged);
}

TEST_CASE("resume: what the checkpoint fixes is refused in one sentence", "[trainer][resume]") {
  TemporaryFolder folder("resume_changes_refused");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 14, 5);
  const TrainerOptions resume = stopped_run(folder, "run", manifest);

  TrainerOptions sgd = resume;
  sgd.optimizer = "sgd";
  CHECK_THAT(refusal(sgd), Contains("--optimizer cannot change on resume (\"adamw\" in the "
                                    "checkpoint, \"sgd\" here)") &&
                               Contains("resume with --optimizer \"adamw\""));
  TrainerOptions groups = resume;
  groups.decay_norm_and_bias = true;
  CHECK_THAT(refusal(groups), Contains("--decay-norm-and-bias cannot change on resume"));
  // Step 6 is batch 2 of epoch 2: the rest of that epoch was drawn with seed 1.
  TrainerOptions seed = resume;
  seed.seed = 7;
  CHECK_THAT(refusal(seed), Contains("--seed cannot change in the middle of an epoch") &&
                                Contains("batch 2 of epoch 2"));
}

TEST_CASE("resume: another --batch-size or --accum-steps is refused, saying why and what to do",
          "[trainer][resume]") {
  TemporaryFolder folder("resume_changes_batch");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 14, 5);
  const TrainerOptions resume = stopped_run(folder, "run", manifest);

  // Batches of 2 would make 7 steps an epoch: step 6 of batches of 4 is no place in them.
  TrainerOptions batch = resume;
  batch.batch_size = 2;
  CHECK_THAT(refusal(batch),
             Contains("--batch-size cannot change on resume (4 in the checkpoint, 2 here): the "
                      "checkpoint's step count, epoch length and schedule position count "
                      "batches of that size; resume with --batch-size 4, or start a new run "
                      "from its weights with --init-from"));
  TrainerOptions accum = resume;
  accum.accum_steps = 2;
  CHECK_THAT(refusal(accum), Contains("--accum-steps cannot change on resume (1 in the "
                                      "checkpoint, 2 here)"));
  // At an epoch's end another training set may come in, but not one of another epoch length:
  // 20 clips make 5 steps an epoch where the checkpoint's run had 4.
  TrainerOptions at_epoch_end = stopped_run(folder, "epoch_end", manifest, 4);
  at_epoch_end.train_manifest = write_letters_corpus(folder.path().string(), "more", 20, 6);
  CHECK_THAT(refusal(at_epoch_end),
             Contains("this run's epochs have 5 steps, the checkpoint's run's had 4 (its "
                      "training items, --batch-size, --accum-steps or number of processes "
                      "differ): its step 4 would fall elsewhere in an epoch and in the schedule"));
  at_epoch_end.train_manifest = write_letters_corpus(folder.path().string(), "other", 14, 7);
  CHECK(refusal(at_epoch_end) == "(no error)");  // 14 other clips: 4 steps an epoch again
  // The refused resumes left the run as it was: the same batch size resumes to step 12.
  train(resume);
  CHECK(logged_lrs(resume.checkpoint_dir + "/metrics.jsonl", 6).size() == 6);
}
#endif
