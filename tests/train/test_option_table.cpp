// The trainer's option table (train/option_table.h): one row per option, and the checkpoint's
// JSON it writes keeps exactly the keys checkpoints have always kept, so that a resume
// compares every one of them with the checkpoint's and checkpoints written before still load.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <tuple>
#include <variant>

#include <nlohmann/json.hpp>

#include "tests/support/audio_files.h"
#include "tests/train/trainer_test_util.h"
#include "train/option_table.h"
#include "train/state/resume_changes.h"
#include "train/trainer_options.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

TEST_CASE("option table: names and checkpoint keys are unique, flags show no default",
          "[trainer][options]") {
  std::set<std::string> names, keys;
  for (const OptionRow& row : option_table()) {
    CHECK(names.insert(row.name).second);
    if (std::string(row.checkpoint_key).empty()) continue;
    CHECK(keys.insert(row.checkpoint_key).second);
    // A fixed option names why in its refusal.
    if (row.on_resume == OnResume::fixed) CHECK(!std::string(row.fixed_because).empty());
    if (std::holds_alternative<bool TrainerOptions::*>(row.field)) CHECK(!row.show_default);
  }
}

TEST_CASE("option table: the checkpoint keeps the same keys as before the table",
          "[trainer][options]") {
  // The keys of TrainerOptions::to_json when it was written by hand (checkpoints up to
  // 2026-12-07 hold these): a key dropped would no longer be compared on resume.
  const std::set<std::string> kept{"model",
                                   "train",
                                   "val",
                                   "test",
                                   "vocabulary",
                                   "features",
                                   "slice-seconds",
                                   "image-height",
                                   "image-width",
                                   "image-features",
                                   "image-mean",
                                   "image-std",
                                   "batch-size",
                                   "epochs",
                                   "max-steps",
                                   "accum-steps",
                                   "optimizer",
                                   "lr",
                                   "momentum",
                                   "nesterov",
                                   "beta1",
                                   "beta2",
                                   "eps",
                                   "weight-decay",
                                   "decay-norm-and-bias",
                                   "schedule",
                                   "schedule-unit",
                                   "warmup",
                                   "warmup-start-lr",
                                   "min-lr",
                                   "flat-tail",
                                   "step-every",
                                   "step-gamma",
                                   "lr-scaling",
                                   "reference-batch",
                                   "grad-clip",
                                   "precision",
                                   "max-bad-steps",
                                   "spec-augment",
                                   "speed-perturb",
                                   "features-on",
                                   "brightness",
                                   "contrast",
                                   "freq-masks",
                                   "freq-mask-width",
                                   "time-masks",
                                   "time-mask-width",
                                   "seed",
                                   "deterministic",
                                   "tf32",
                                   "sortagrad",
                                   "class-balanced",
                                   "device",
                                   "bucket-mb",
                                   "find-unused-parameters",
                                   "sync-bn",
                                   "ddp-comm-dtype",
                                   "pipeline-stages",
                                   "pipeline-schedule",
                                   "pipeline-balance",
                                   "pipeline-cuts"};
  TrainerOptions options;
  std::set<std::string> written;
  const nlohmann::json json = nlohmann::json::parse(options.to_json());
  for (const auto& [key, value] : json.items()) written.insert(key);
  CHECK(written == kept);
}

TEST_CASE("option table: what a resume may change comes from the rows", "[trainer][options]") {
  TrainerOptions before;
  nlohmann::json old = nlohmann::json::parse(before.to_json());
  const auto changed = [&](const std::string& key, const nlohmann::json& value) {
    nlohmann::json now = old;
    now[key] = value;
    return now;
  };
  // run_only: not compared; change: said; fixed: refused; epoch_start: refused mid-epoch.
  CHECK(resume_changes(old, changed("device", "cpu"), 4, 0, 2).empty());
  CHECK(resume_changes(old, changed("lr", 0.5), 4, 0, 2).size() == 1);
  CHECK_THROWS(resume_changes(old, changed("precision", "bf16"), 4, 0, 0));
  CHECK_THROWS(resume_changes(old, changed("seed", 7), 4, 0, 2));
  CHECK(resume_changes(old, changed("seed", 7), 4, 1, 0).size() == 1);
}

TEST_CASE("option table: a mode's words read into its enum, and are written back as read",
          "[trainer][options]") {
  // The words checkpoints and config files have always held (strings before the enums).
  TemporaryFolder folder("option_table_modes");
  const std::string json = folder.file("modes.json");
  const nlohmann::json words = {{"precision", "bf16"},       {"features-on", "step"},
                                {"optimizer", "sgd"},        {"schedule", "step"},
                                {"schedule-unit", "steps"},  {"ddp-comm-dtype", "fp16"},
                                {"pipeline-balance", "time"}};
  nlohmann::json config = words;
  config.update(
      {{"model", "vgg19_bn"}, {"train", "a.tsv"}, {"bad-input", "skip"}, {"features", "cqt"}});
  write_text(json, config.dump());
  const TrainerOptions o = parse_command_line({"--config", json});
  CHECK(o.precision == Precision::bf16);
  CHECK(o.features_on == FeaturesOn::step);
  CHECK(o.optimizer == OptimizerKind::sgd);
  CHECK(o.schedule == ScheduleShape::step);
  CHECK(o.schedule_unit == ScheduleUnit::steps);
  CHECK(o.bad_input == BadInput::skip);
  CHECK(o.ddp_comm_dtype == CommDtype::fp16);
  CHECK(o.pipeline_balance == PipelineBalance::time);
  CHECK(o.image_features == ImageFeatures::cqt);
  const nlohmann::json saved = nlohmann::json::parse(o.to_json());
  for (const auto& [key, word] : words.items()) CHECK(saved.at(key) == word);
  CHECK(saved.at("image-features") == "cqt");

  // A word outside the row's, in the user's words; the pipeline's balance has one spelling.
  const TrainerOptions params =
      parse_command_line({"--train", "a.tsv", "--pipeline-balance", "params"});
  CHECK_THROWS_WITH(params.check(), Contains("--pipeline-balance must be bytes or time, got "
                                             "'params'"));
}

TEST_CASE("option table: --lr-scaling, --tf32, --pipeline-schedule and --progress are modes too",
          "[trainer][options]") {
  // Strings compared deep in the code before; a lower floor's enum each, but --progress.
  TemporaryFolder folder("option_table_more_modes");
  const std::string yaml = folder.file("run.yaml");
  write_text(yaml,
             "train: a.tsv\nlr-scaling: sqrt\ntf32: all\npipeline-schedule: gpipe\n"
             "progress: lines\n");
  const TrainerOptions o = parse_command_line({"--config", yaml});
  o.check();
  CHECK(o.lr_scaling == LrScalingRule::sqrt);
  CHECK(o.tf32 == Tf32Mode::all);
  CHECK(o.pipeline_schedule == PipelineSchedule::gpipe);
  CHECK(o.progress == ProgressMode::lines);
  const TrainerOptions defaults = parse_command_line({"--train", "a.tsv"});
  CHECK(defaults.lr_scaling == LrScalingRule::none);
  CHECK(defaults.pipeline_schedule == PipelineSchedule::one_f_one_b);
  CHECK(defaults.progress == ProgressMode::automatic);
  // The checkpoint keeps the words it always kept (--progress is not kept).
  const nlohmann::json saved = nlohmann::json::parse(o.to_json());
  CHECK(saved.at("lr-scaling") == "sqrt");
  CHECK(saved.at("tf32") == "all");
  CHECK(saved.at("pipeline-schedule") == "gpipe");
  CHECK_FALSE(saved.contains("progress"));
  CHECK(nlohmann::json::parse(defaults.to_json()).at("pipeline-schedule") == "1f1b");

  // Refused in the user's words; off is a silent rank's, not a word of --progress.
  for (const auto& [flag, word, words] :
       {std::tuple{"--lr-scaling", "cubic", "none, linear or sqrt"},
        std::tuple{"--pipeline-schedule", "zb", "1f1b or gpipe"},
        std::tuple{"--progress", "off", "auto, bar, lines or none"}}) {
    const TrainerOptions bad = parse_command_line({"--train", "a.tsv", flag, word});
    CHECK_THROWS_WITH(bad.check(),
                      Contains(std::string(flag) + " must be " + words + ", got '" + word + "'"));
  }
}

TEST_CASE("option table: --micro-batches is refused naming --accum-steps, the one name",
          "[trainer][options]") {
  CHECK_THROWS_WITH(parse_command_line({"--train", "a.tsv", "--micro-batches", "4"}),
                    Contains("--micro-batches 4 is --accum-steps 4: give --accum-steps"));
  TemporaryFolder folder("option_table_micro_batches");
  const std::string yaml = folder.file("old.yaml");
  write_text(yaml, "train: a.tsv\nmicro-batches: 2\n");
  CHECK_THROWS_WITH(parse_command_line({"--config", yaml}), Contains("give --accum-steps"));
  CHECK(parse_command_line({"--train", "a.tsv", "--accum-steps", "4"}).accum_steps == 4);
}
