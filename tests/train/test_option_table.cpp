// The trainer's option table (train/option_table.h): one row per option, and the checkpoint's
// JSON it writes keeps exactly the keys checkpoints have always kept, so that a resume
// compares every one of them with the checkpoint's and checkpoints written before still load.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "train/option_table.h"
#include "train/resume_changes.h"
#include "train/trainer_options.h"

using namespace sonata;

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
