#include "train/trainer_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <variant>

#include "base/error.h"
#include "data/manifest/input_policy.h"
#include "models/registry.h"
#include "train/config_file.h"
#include "train/option_table.h"
#include "train/option_values.h"

namespace sonata {
namespace {

// The models taking the option `key` (models/registry.cpp), in the registry's order.
std::vector<const ModelEntry*> models_taking(const std::string& key) {
  std::vector<const ModelEntry*> entries;
  for (const ModelEntry& entry : model_registry())
    for (const ModelOption& option : entry.options)
      if (option.key == key) entries.push_back(&entry);
  return entries;
}

std::vector<std::string> names_of(const std::vector<const ModelEntry*>& entries) {
  std::vector<std::string> names;
  for (const ModelEntry* entry : entries) names.push_back(entry->name);
  return names;
}

// The models' own options, offered as flags of the same names, each once: its help names
// the models taking it and the first one's header, and gives that one's choices and default
// (from the models' option structs, so that there is one source of the defaults).
void add_model_options(CLI::App& app, TrainerOptions& o) {
  for (const ModelEntry& entry : model_registry())
    for (const ModelOption& option : entry.options) {
      const std::string flag = "--" + option.key;
      if (app.get_option_no_throw(flag)) continue;
      const std::vector<const ModelEntry*> takers = models_taking(option.key);
      app.add_option(flag, o.model_config[option.key],
                     str(name_list(names_of(takers), ", "), " (", takers.front()->header,
                         "): ", option.help))
          ->group("Model");
    }
}

// "speech models only (--model ds2)": the models an option applies to, for a refusal.
std::string only_for(ModelFamily family) {
  return str(family == ModelFamily::speech ? "speech models" : "image classifiers",
             " only (--model ", name_list(model_names(family)), ")");
}

template <class Value>
struct IsChoice : std::false_type {};
template <class Mode>
struct IsChoice<Choice<Mode>> : std::true_type {};

// Every mode's word is one of its row's (option_modes.h): "--precision must be fp32, fp16 or
// bf16, got 'fp8'", in the words the user wrote.
void check_modes(const TrainerOptions& o) {
  for (const OptionRow& row : option_table())
    std::visit(
        [&](auto member) {
          const auto& value = o.*member;
          using Value = std::decay_t<decltype(value)>;
          if constexpr (IsChoice<Value>::value)
            SONATA_CHECK(value.known(), "--", row.name, " must be ", Value::words(), ", got '",
                         value.word(), "'");
        },
        row.field);
}

// Each row for one family's models (OptionRow::family) is left at its default by the others:
// "--sortagrad applies to speech models only (--model ds2)".
void check_families(const TrainerOptions& o, ModelFamily family) {
  const TrainerOptions defaults;
  for (const OptionRow& row : option_table()) {
    if (!row.family || *row.family == family) continue;
    std::visit(
        [&](auto member) {
          const auto& value = o.*member;
          using Value = std::decay_t<decltype(value)>;
          std::string subject = *row.refused_as ? row.refused_as : "--" + row.name;
          bool set = false;
          if constexpr (IsChoice<Value>::value) {
            set = value.word() != (defaults.*member).word();
            if (!*row.refused_as) subject += " " + value.word();
          } else {
            set = !(value == defaults.*member);
          }
          const bool two = subject.find(" and ") != std::string::npos;
          SONATA_CHECK(!set, subject, two ? " apply to " : " applies to ", only_for(*row.family));
        },
        row.field);
  }
}

// One row of the table on the command line (and so in config files).
CLI::Option* add_option_row(CLI::App& app, TrainerOptions& o, const OptionRow& row) {
  const std::string flag = "--" + row.name;
  CLI::Option* option = std::visit(
      [&](auto member) -> CLI::Option* {
        auto& value = o.*member;
        using Value = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<Value, bool>) {
          return app.add_flag(flag, value, row.help);
        } else {
          CLI::Option* added = app.add_option(flag, value, row.help);
          if constexpr (std::is_same_v<Value, std::vector<double>>) added->delimiter(',');
          return added;
        }
      },
      row.field);
  if (row.show_default) option->capture_default_str();
  return option->group(row.group);
}

// --max-duration's default (kTaskMaxDuration) is a value a user could also write: a written
// value is checked here, where CLI11 still knows it was written, so that -1 is refused rather
// than taken for the default.
CLI::Validator seconds_limit() {
  return CLI::Validator(
      [](std::string& text) {
        double seconds = 0;
        if (CLI::detail::lexical_cast(text, seconds) && std::isfinite(seconds) && seconds >= 0)
          return std::string();
        return str("must be a number of seconds, 0 or more (0: no limit), got ", text);
      },
      "");
}

}  // namespace

void add_trainer_options(CLI::App& app, TrainerOptions& o) {
  app.config_formatter(std::make_shared<JsonYamlConfig>(&app));
  app.set_config("--config", "", "JSON or YAML file with any of these options (same names)");
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.get_formatter()->column_width(34);

  // --help lists the options in the table's order, with the others where they belong: the
  // model's own options after --model, the feature flags after --test.
  for (const OptionRow& row : option_table()) {
    CLI::Option* option = add_option_row(app, o, row);
    if (row.name == "max-duration") option->check(seconds_limit());
    if (row.name == "model") add_model_options(app, o);
    if (row.name == "test") add_feature_flags(app, o.features, "Features");
  }
  // One name per concept: the pipeline's micro-batches are the step's --accum-steps. The old
  // name (on the command line or in a config file) is refused naming the kept one; hidden.
  app.add_option_function<std::string>(
         "--micro-batches",
         [](const std::string& value) {
           throw CLI::ValidationError(str("--micro-batches ", value, " is --accum-steps ", value,
                                          ": give --accum-steps (the batches of one optimizer "
                                          "step, run through the pipeline under "
                                          "--pipeline-stages)"));
         })
      ->group("");

  // Model options left empty on the command line are not options at all.
  app.final_callback([&o] {
    std::erase_if(o.model_config, [](const auto& entry) { return entry.second.empty(); });
  });
}

ModelFamily TrainerOptions::family() const {
  return model_entry(model).family;
}

void TrainerOptions::check() const {
  const ModelEntry* entry = find_model(model);
  SONATA_CHECK(entry, "--model must be ", name_list(model_names()), ", got '", model, "'");
  for (const auto& [key, value] : model_config) {
    bool taken = false;
    for (const ModelOption& option : entry->options) taken |= option.key == key;
    const std::vector<std::string> takers = names_of(models_taking(key));
    SONATA_CHECK(taken || takers.empty(), "--", key, " is an option of ",
                 name_list(takers, " and "), ", not of ", model, "; drop it or change --model");
    SONATA_CHECK(taken, "--", key, " is no model's option (models/registry.cpp)");
  }
  SONATA_CHECK(!train_manifest.empty() || eval_only,
               "--train is required (a manifest to train on)");
  SONATA_CHECK(!eval_only || !init_from.empty() || !resume.empty(),
               "--eval-only needs weights: give --init-from W.safetensors or --resume");
  SONATA_CHECK(!eval_only || !val_manifest.empty() || !test_manifest.empty(),
               "--eval-only needs --val or --test to evaluate on");
  SONATA_CHECK(batch_size > 0, "--batch-size must be positive, got ", batch_size);
  SONATA_CHECK(epochs > 0 || max_steps > 0, "give --epochs or --max-steps a positive value");
  SONATA_CHECK(accum_steps > 0, "--accum-steps must be at least 1, got ", accum_steps);
  check_modes(*this);
  // Finite as well: an optimizer or schedule would otherwise refuse it in its own words.
  SONATA_CHECK(lr > 0 && std::isfinite(lr), "--lr must be a positive number, got ", lr);
  SONATA_CHECK(weight_decay >= 0 && std::isfinite(weight_decay),
               "--weight-decay must be a number not below 0, got ", weight_decay);
  check_optimizer_values(*this);  // train/option_values.h
  SONATA_CHECK(!nesterov || optimizer == OptimizerKind::sgd,
               "--nesterov applies to --optimizer sgd only");
  SONATA_CHECK(schedule_unit == ScheduleUnit::steps || max_steps == 0 || epochs > 0,
               "--max-steps without --epochs needs --schedule-unit steps");
  SONATA_CHECK(warmup >= 0 && flat_tail >= 0, "--warmup and --flat-tail must not be negative");
  SONATA_CHECK(min_lr >= 0 && min_lr <= lr, "--min-lr must lie in [0, --lr]");
  SONATA_CHECK(reference_batch > 0, "--reference-batch must be positive");
  SONATA_CHECK(grad_clip >= 0, "--grad-clip must not be negative (0 turns clipping off)");
  SONATA_CHECK(precision == Precision::fp32 || device.rfind("cuda", 0) == 0 || device == "auto",
               "--precision ", precision,
               " runs on a GPU only; use --device cuda or --precision fp32");
  SONATA_CHECK(max_bad_steps > 0, "--max-bad-steps must be positive");
  features.config();  // throws naming a bad feature flag
  check_families(*this, entry->family);
  SONATA_CHECK(pad_frames_to >= 1, "--pad-frames-to must be at least 1, got ", pad_frames_to);
  SONATA_CHECK(features_on == FeaturesOn::load || feature_cache.empty(),
               "--features-on step needs the audio: it cannot use --feature-cache");
  SONATA_CHECK(!speed_perturb || feature_cache.empty(),
               "--speed-perturb needs the audio: it cannot use --feature-cache");
  SONATA_CHECK(brightness >= 0 && contrast >= 0,
               "--brightness and --contrast must not be negative");
  SONATA_CHECK(workers >= 1, "--workers must be at least 1");
  SONATA_CHECK(max_duration >= 0 || max_duration == kTaskMaxDuration,
               "--max-duration must not be negative (0: no limit), got ", max_duration);
  SONATA_CHECK(max_image_pixels > 0, "--max-image-pixels must be positive, got ", max_image_pixels);
  SONATA_CHECK(device == "auto" || device == "cpu" || device.rfind("cuda", 0) == 0,
               "--device must be auto, cpu, cuda or cuda:N, got '", device, "'");
  SONATA_CHECK(!resumes_newest() || !checkpoint_dir.empty(),
               "--resume auto needs --checkpoint-dir (where to look)");
  SONATA_CHECK(resume.empty() || init_from.empty(),
               "--resume and --init-from exclude each other (a resume restores the weights)");
  SONATA_CHECK(keep_checkpoints >= 1, "--keep-checkpoints must be at least 1");
  SONATA_CHECK(checkpoint_every >= 0 && stop_after >= 0,
               "--checkpoint-every and --stop-after must not be negative");
  SONATA_CHECK(stop_after == 0 || !checkpoint_dir.empty(),
               "--stop-after needs --checkpoint-dir (the run is resumed from there)");
  SONATA_CHECK(eval_every >= 1, "--eval-every must be at least 1");
  SONATA_CHECK(beam_width >= 0, "--beam-width must not be negative");
  SONATA_CHECK(log_every >= 1, "--log-every must be at least 1");
  SONATA_CHECK(bucket_mb > 0, "--bucket-mb must be positive, got ", bucket_mb);
  SONATA_CHECK(comm_timeout >= 0 && std::isfinite(comm_timeout),
               "--comm-timeout must be a number of seconds (0: the default), got ", comm_timeout);
  SONATA_CHECK(pipeline_stages >= 1, "--pipeline-stages must be at least 1, got ", pipeline_stages);
  SONATA_CHECK(pipeline_stages > 1 || pipeline_cuts.empty(),
               "--pipeline-cuts needs --pipeline-stages 2 or more");
  SONATA_CHECK(pipeline_stages == 1 || !sync_bn,
               "--sync-bn does not combine with --pipeline-stages: a pipeline normalises each "
               "micro-batch on its own, as GPipe");
  profile_range();  // throws naming a malformed --profile-steps
  SONATA_CHECK(slice_seconds > 0 && image_height > 0 && image_width > 0,
               "--slice-seconds, --image-height and --image-width must be positive");
  SONATA_CHECK(!image_mean.empty() && !image_std.empty(),
               "--image-mean and --image-std need at least one value");
  for (const double s : image_std)
    SONATA_CHECK(s > 0, "--image-std values must be positive, got ", s);
}

std::optional<Device> TrainerOptions::chosen_device() const {
  if (device == "auto") return std::nullopt;
  return Device::parse(device);
}

std::pair<int64_t, int64_t> TrainerOptions::profile_range() const {
  if (profile_steps.empty()) return {0, 0};
  const size_t colon = profile_steps.find(':');
  int64_t first = 0, last = 0;
  const auto parse = [&](const std::string& text, int64_t& value) {
    size_t used = 0;
    try {
      value = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    return used > 0 && used == text.size();
  };
  SONATA_CHECK(colon != std::string::npos && parse(profile_steps.substr(0, colon), first) &&
                   parse(profile_steps.substr(colon + 1), last) && first >= 1 && last >= first,
               "--profile-steps must be A:B with 1 <= A <= B (optimizer steps), got '",
               profile_steps, "'");
  return {first, last};
}

std::string TrainerOptions::to_json() const {
  nlohmann::ordered_json json;
  for (const OptionRow& row : option_table()) {
    if (std::string(row.checkpoint_key).empty()) continue;
    std::visit([&](auto member) { json[row.checkpoint_key] = this->*member; }, row.field);
  }
  for (const auto& [key, value] : model_config) json[key] = value;
  json["features"] = describe(features.config());
  return json.dump();
}

ReducerOptions reducer_options(const ParallelOptions& options) {
  ReducerOptions reducer;
  reducer.bucket_cap_bytes = int64_t(options.bucket_mb * double(1 << 20));
  reducer.first_bucket_cap_bytes = std::min(reducer.bucket_cap_bytes, int64_t(1) << 20);
  reducer.find_unused_parameters = options.find_unused_parameters;
  if (options.ddp_comm_dtype == CommDtype::fp16) reducer.comm_dtype = DType::f16;
  if (options.ddp_comm_dtype == CommDtype::bf16) reducer.comm_dtype = DType::bf16;
  return reducer;
}

}  // namespace sonata
