#include "train/trainer_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/math_mode.h"
#include "data/manifest/input_policy.h"
#include "models/ds2.h"
#include "models/vgg.h"
#include "train/config_file.h"

namespace sonata {
namespace {

// The models' own options, offered as flags of the same names (see models/registry.h).
const char* const kDs2Keys[] = {"conv-channels", "hidden", "layers",        "rnn",
                                "bidirectional", "merge",  "seq-batch-norm"};
const char* const kVggKeys[] = {"width", "dropout", "in-channels", "channels-last"};
// Their --help text: the choices and the default, taken from the models' option structs so
// that there is one source of the defaults.
std::map<std::string, std::string> model_option_help() {
  const Ds2Options ds2;
  const VggOptions vgg;
  const auto bit = [](bool value) { return value ? "1" : "0"; };
  return {{"conv-channels", str(ds2.conv_channels)},
          {"hidden", str(ds2.hidden)},
          {"layers", str(ds2.layers)},
          {"rnn", str("lstm | gru; ", ds2.rnn == RnnKind::gru ? "gru" : "lstm")},
          {"bidirectional", str("0 | 1; ", bit(ds2.bidirectional))},
          {"merge", str("concat | sum; ", ds2.sum_directions ? "sum" : "concat")},
          {"seq-batch-norm", str("0 | 1; ", bit(ds2.seq_batch_norm))},
          {"width", str("channel multiplier; ", vgg.width)},
          {"dropout", str(vgg.dropout)},
          {"in-channels", str(vgg.in_channels)},
          {"channels-last", str("true | false; ", vgg.channels_last ? "true" : "false")}};
}

bool one_of(const std::string& value, std::initializer_list<const char*> choices) {
  for (const char* choice : choices)
    if (value == choice) return true;
  return false;
}

}  // namespace

void add_trainer_options(CLI::App& app, TrainerOptions& o) {
  app.config_formatter(std::make_shared<JsonYamlConfig>(&app));
  app.set_config("--config", "", "JSON or YAML file with any of these options (same names)");
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.get_formatter()->column_width(34);

  app.add_option("--model", o.model, "ds2 | vgg19_bn")->capture_default_str()->group("Model");
  const std::map<std::string, std::string> model_help = model_option_help();
  for (const char* key : kDs2Keys)
    app.add_option(std::string("--") + key, o.model_config[key],
                   "ds2 (models/ds2.h): " + model_help.at(key))
        ->group("Model");
  for (const char* key : kVggKeys)
    app.add_option(std::string("--") + key, o.model_config[key],
                   "vgg19_bn (models/vgg.h): " + model_help.at(key))
        ->group("Model");
  app.add_option("--vocabulary", o.vocabulary,
                 "ASR vocabulary file (default: blank, space, ', a-z)")
      ->group("Model");

  const char* data = "Data";
  app.add_option("--train", o.train_manifest, "training manifest (.tsv | .jsonl | class folder)")
      ->group(data);
  app.add_option("--val", o.val_manifest, "validation manifest")->group(data);
  app.add_option("--test", o.test_manifest, "test manifest, evaluated after training")->group(data);
  add_feature_flags(app, o.features, "Features");
  app.add_option("--feature-cache", o.feature_cache,
                 "ASR: a featurize cache of the manifests (same feature flags)")
      ->group(data);
  app.add_option("--features-on", o.features_on,
                 "load | step: training features (and their augmentation) computed once at "
                 "start, or from the audio on the device in each step")
      ->capture_default_str()
      ->group(data);
  app.add_option("--pad-frames-to", o.pad_frames_to,
                 "ASR: pad each batch's time axis to a multiple of this many frames (fewer "
                 "convolution shapes, so fewer cudnnFind runs; 1: to the longest item)")
      ->capture_default_str()
      ->group(data);
  app.add_option("--bad-input", o.bad_input,
                 "stop | skip: an unreadable, corrupt or empty clip stops the run, or is skipped "
                 "and counted")
      ->capture_default_str()
      ->group(data);
  app.add_option("--max-duration", o.max_duration,
                 str("seconds; a longer clip is left out and counted, whatever --bad-input (0: "
                     "no limit; default: ",
                     kSpeechMaxDuration, " for ds2, none for vgg19_bn)"))
      ->group(data);
  app.add_option("--max-image-pixels", o.max_image_pixels,
                 "classification, image files: an image declaring more pixels (width x height) "
                 "is bad input, refused before decoding (PIL's MAX_IMAGE_PIXELS)")
      ->capture_default_str()
      ->group(data);
  app.add_option("--slice-seconds", o.slice_seconds, "classification: seconds per slice")
      ->capture_default_str()
      ->group(data);
  app.add_option("--image-height", o.image_height, "classification: image rows (mel bins)")
      ->capture_default_str()
      ->group(data);
  app.add_option("--image-width", o.image_width, "classification: image columns (frames)")
      ->capture_default_str()
      ->group(data);
  app.add_option("--features", o.image_features,
                 "classification: mel | cqt, the image of an audio slice (cqt: librosa.cqt's "
                 "hop 512, fmin C1, 84 bins, 12 per octave)")
      ->capture_default_str()
      ->group(data);
  app.add_option("--image-mean", o.image_mean,
                 "classification, image files: Normalize mean per channel (comma-separated)")
      ->delimiter(',')
      ->capture_default_str()
      ->group(data);
  app.add_option("--image-std", o.image_std,
                 "classification, image files: Normalize std per channel (comma-separated)")
      ->delimiter(',')
      ->capture_default_str()
      ->group(data);
  app.add_flag("--spec-augment", o.spec_augment, "ASR: SpecAugment masks on training features")
      ->group(data);
  app.add_flag("--speed-perturb", o.speed_perturb,
               "ASR: play each training clip at 0.9, 1.0 or 1.1 speed (keeps the audio in memory)")
      ->group(data);
  app.add_option("--brightness", o.brightness,
                 "classification: brightness jitter, factor in [1 - b, 1 + b] (0: off)")
      ->capture_default_str()
      ->group(data);
  app.add_option("--contrast", o.contrast,
                 "classification: contrast jitter, factor in [1 - c, 1 + c] (0: off)")
      ->capture_default_str()
      ->group(data);
  app.add_option("--freq-masks", o.freq_masks, "SpecAugment frequency masks")
      ->capture_default_str()
      ->group(data);
  app.add_option("--freq-mask-width", o.freq_mask_width, "SpecAugment widest frequency mask")
      ->capture_default_str()
      ->group(data);
  app.add_option("--time-masks", o.time_masks, "SpecAugment time masks")
      ->capture_default_str()
      ->group(data);
  app.add_option("--time-mask-width", o.time_mask_width, "SpecAugment widest time mask")
      ->capture_default_str()
      ->group(data);
  app.add_flag("--sortagrad", o.sortagrad, "ASR: first epoch in ascending length order")
      ->group(data);
  app.add_flag("--class-balanced", o.class_balanced,
               "classification: draw items with weights inverse to their class's frequency")
      ->group(data);
  app.add_option("--workers", o.workers,
                 "threads decoding clips at start and building batches ahead")
      ->capture_default_str()
      ->group(data);

  const char* optim = "Optimisation";
  app.add_option("--batch-size", o.batch_size, "items per step and process")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--epochs", o.epochs, "passes over the training set")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--max-steps", o.max_steps, "stop after this many optimizer steps (0: epochs)")
      ->capture_default_str()
      ->group(optim);
  CLI::Option* accum =
      app.add_option("--accum-steps", o.accum_steps, "micro-batches per optimizer step")
          ->capture_default_str()
          ->group(optim);
  app.add_option("--optimizer", o.optimizer, "sgd | adam | adamw")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--lr", o.lr, "peak learning rate")->capture_default_str()->group(optim);
  app.add_option("--momentum", o.momentum, "sgd momentum")->capture_default_str()->group(optim);
  app.add_flag("--nesterov", o.nesterov, "sgd: Nesterov momentum")->group(optim);
  app.add_option("--beta1", o.beta1, "adam(w) beta1")->capture_default_str()->group(optim);
  app.add_option("--beta2", o.beta2, "adam(w) beta2")->capture_default_str()->group(optim);
  app.add_option("--eps", o.eps, "adam(w) epsilon")->capture_default_str()->group(optim);
  app.add_option("--weight-decay", o.weight_decay, "weight decay (decoupled for adamw)")
      ->capture_default_str()
      ->group(optim);
  app.add_flag("--decay-norm-and-bias", o.decay_norm_and_bias,
               "also decay BatchNorm parameters and biases")
      ->group(optim);
  app.add_option("--schedule", o.schedule, "constant | cosine | step | linear (after warmup)")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--schedule-unit", o.schedule_unit, "epochs | steps")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--warmup", o.warmup, "linear warmup length (schedule units)")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--warmup-start-lr", o.warmup_start_lr, "lr at the start of the warmup")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--min-lr", o.min_lr, "floor of cosine / linear decay")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--flat-tail", o.flat_tail, "units held at the floor at the end")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--step-every", o.step_every, "step schedule: units between decays")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--step-gamma", o.step_gamma, "step schedule: factor per decay")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--lr-scaling", o.lr_scaling,
                 "none | linear | sqrt: scale --lr from --reference-batch to the global batch")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--reference-batch", o.reference_batch, "the batch --lr was tuned for")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--grad-clip", o.grad_clip, "clip the global gradient norm (0: off)")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--precision", o.precision, "fp32 | fp16 (loss scaling) | bf16; half on cuda")
      ->capture_default_str()
      ->group(optim);
  app.add_option("--max-bad-steps", o.max_bad_steps,
                 "stop after this many consecutive non-finite losses")
      ->capture_default_str()
      ->group(optim);

  const char* run = "Running";
  app.add_option("--seed", o.seed, "seed of initialisation, shuffling and augmentation")
      ->capture_default_str()
      ->group(run);
  app.add_flag("--deterministic", o.deterministic,
               "bitwise-reproducible kernels only (slower on cuda)")
      ->group(run);
  app.add_option("--tf32", o.tf32,
                 "off | conv | all: f32 convolutions (conv) or convolutions and GEMMs (all) "
                 "on TF32 tensor cores (cuda)")
      ->capture_default_str()
      ->group(run);
  app.add_option("--device", o.device, "auto | cpu | cuda | cuda:N")
      ->capture_default_str()
      ->group(run);
  app.add_option("--profile-steps", o.profile_steps,
                 "A:B: capture steps A..B only (nsys --capture-range=cudaProfilerApi)")
      ->group(run);
  app.add_option("--range-times", o.range_times,
                 "JSONL file: host time per NVTX range (op, phase), written when the run ends; "
                 "a CPU profile (on cuda only launch time)")
      ->group(run);

  const char* parallel = "Data parallel (mpirun -np R ./trainer ...)";
  app.add_option("--bucket-mb", o.bucket_mb, "gradient bucket size in MiB (the first: 1 MiB)")
      ->capture_default_str()
      ->group(parallel);
  app.add_flag("--find-unused-parameters", o.find_unused_parameters,
               "allow parameters that get no gradient in a step")
      ->group(parallel);
  app.add_flag("--sync-bn", o.sync_bn, "BatchNorm statistics over every process's batch")
      ->group(parallel);
  app.add_option("--ddp-comm-dtype", o.ddp_comm_dtype,
                 "same | fp16 | bf16: gradients travel in this dtype, summed in fp32")
      ->capture_default_str()
      ->group(parallel);
  app.add_option("--comm-timeout", o.comm_timeout,
                 "seconds a collective may wait for a peer before the job ends, naming the "
                 "ranks that did not arrive (0: SONATA_NCCL_TIMEOUT_S, else 600)")
      ->group(parallel);

  const char* pipeline = "Pipeline parallel (mpirun -np R ./trainer --pipeline-stages S ...)";
  app.add_option("--pipeline-stages", o.pipeline_stages,
                 "stages of the model, one process each; R / S data-parallel replicas")
      ->capture_default_str()
      ->group(pipeline);
  app.add_option("--micro-batches", o.accum_steps,
                 "batches per optimizer step, run through the pipeline (= --accum-steps)")
      ->excludes(accum)
      ->group(pipeline);
  app.add_option("--pipeline-schedule", o.pipeline_schedule, "1f1b | gpipe")
      ->capture_default_str()
      ->group(pipeline);
  app.add_option("--pipeline-balance", o.pipeline_balance,
                 "bytes | time: balance the stages by parameter bytes or measured time")
      ->capture_default_str()
      ->group(pipeline);
  app.add_option("--pipeline-cuts", o.pipeline_cuts,
                 "explicit cuts: the first layer of each stage after the first, e.g. 7,12")
      ->group(pipeline);
  app.add_option("--checkpoint-dir", o.checkpoint_dir, "where checkpoints (and metrics) go")
      ->group(run);
  app.add_option("--keep-checkpoints", o.keep_checkpoints, "newest checkpoints kept (+ the best)")
      ->capture_default_str()
      ->group(run);
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "optimizer steps between checkpoints (0: at epoch ends)")
      ->capture_default_str()
      ->group(run);
  app.add_option("--stop-after", o.stop_after,
                 "end this run after this many steps in all, checkpointed (resume later)")
      ->group(run);
  app.add_option("--resume", o.resume, "auto (newest in --checkpoint-dir) or a checkpoint folder")
      ->group(run);
  app.add_option("--init-from", o.init_from, "start from these weights (.safetensors)")->group(run);
  app.add_flag("--eval-only", o.eval_only, "evaluate --init-from or --resume, then stop")
      ->group(run);
  app.add_option("--eval-every", o.eval_every, "epochs between evaluations")
      ->capture_default_str()
      ->group(run);
  app.add_option("--beam-width", o.beam_width, "ASR beam search width (0: greedy only)")
      ->capture_default_str()
      ->group(run);
  app.add_option("--show-transcripts", o.show_transcripts, "ASR: decoded examples printed")
      ->capture_default_str()
      ->group(run);
  app.add_option("--metrics", o.metrics, "JSONL metrics log (default: in --checkpoint-dir)")
      ->group(run);
  app.add_option("--progress", o.progress, "auto | bar | lines | none")
      ->capture_default_str()
      ->group(run);
  app.add_option("--log-every", o.log_every, "steps between metric lines")
      ->capture_default_str()
      ->group(run);

  // Model options left empty on the command line are not options at all.
  app.final_callback([&o] {
    std::erase_if(o.model_config, [](const auto& entry) { return entry.second.empty(); });
  });
}

void TrainerOptions::check() const {
  SONATA_CHECK(one_of(model, {"ds2", "vgg19_bn"}), "--model must be ds2 or vgg19_bn, got '", model,
               "'");
  for (const auto& [key, value] : model_config) {
    bool for_ds2 = false;
    for (const char* ds2_key : kDs2Keys) for_ds2 |= key == ds2_key;
    SONATA_CHECK(for_ds2 == is_asr(), "--", key, " is a ", for_ds2 ? "ds2" : "vgg19_bn",
                 " option; drop it or use --model ", for_ds2 ? "ds2" : "vgg19_bn");
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
  SONATA_CHECK(one_of(optimizer, {"sgd", "adam", "adamw"}),
               "--optimizer must be sgd, adam or adamw, got '", optimizer, "'");
  SONATA_CHECK(lr > 0, "--lr must be positive, got ", lr);
  SONATA_CHECK(!nesterov || optimizer == "sgd", "--nesterov applies to --optimizer sgd only");
  SONATA_CHECK(one_of(schedule, {"constant", "cosine", "step", "linear"}),
               "--schedule must be constant, cosine, step or linear, got '", schedule, "'");
  SONATA_CHECK(one_of(schedule_unit, {"epochs", "steps"}),
               "--schedule-unit must be epochs or steps, got '", schedule_unit, "'");
  SONATA_CHECK(schedule_unit == "steps" || max_steps == 0 || epochs > 0,
               "--max-steps without --epochs needs --schedule-unit steps");
  SONATA_CHECK(warmup >= 0 && flat_tail >= 0, "--warmup and --flat-tail must not be negative");
  SONATA_CHECK(min_lr >= 0 && min_lr <= lr, "--min-lr must lie in [0, --lr]");
  SONATA_CHECK(one_of(lr_scaling, {"none", "linear", "sqrt"}),
               "--lr-scaling must be none, linear or sqrt, got '", lr_scaling, "'");
  SONATA_CHECK(reference_batch > 0, "--reference-batch must be positive");
  SONATA_CHECK(grad_clip >= 0, "--grad-clip must not be negative (0 turns clipping off)");
  SONATA_CHECK(one_of(precision, {"fp32", "fp16", "bf16"}),
               "--precision must be fp32, fp16 or bf16, got '", precision, "'");
  SONATA_CHECK(precision == "fp32" || device.rfind("cuda", 0) == 0 || device == "auto",
               "--precision ", precision,
               " runs on a GPU only; use --device cuda or --precision fp32");
  SONATA_CHECK(max_bad_steps > 0, "--max-bad-steps must be positive");
  features.config();  // throws naming a bad feature flag
  SONATA_CHECK(feature_cache.empty() || is_asr(), "--feature-cache applies to --model ds2 only");
  SONATA_CHECK(pad_frames_to >= 1, "--pad-frames-to must be at least 1, got ", pad_frames_to);
  SONATA_CHECK(one_of(features_on, {"load", "step"}), "--features-on must be load or step, got '",
               features_on, "'");
  SONATA_CHECK(features_on == "load" || feature_cache.empty(),
               "--features-on step needs the audio: it cannot use --feature-cache");
  SONATA_CHECK(!spec_augment || is_asr(), "--spec-augment applies to --model ds2 only");
  SONATA_CHECK(!speed_perturb || is_asr(), "--speed-perturb applies to --model ds2 only");
  SONATA_CHECK(!speed_perturb || feature_cache.empty(),
               "--speed-perturb needs the audio: it cannot use --feature-cache");
  SONATA_CHECK((brightness == 0 && contrast == 0) || !is_asr(),
               "--brightness and --contrast apply to --model vgg19_bn only");
  SONATA_CHECK(brightness >= 0 && contrast >= 0,
               "--brightness and --contrast must not be negative");
  SONATA_CHECK(!sortagrad || is_asr(), "--sortagrad applies to --model ds2 only");
  SONATA_CHECK(!class_balanced || !is_asr(), "--class-balanced applies to --model vgg19_bn only");
  SONATA_CHECK(workers >= 1, "--workers must be at least 1");
  SONATA_CHECK(one_of(bad_input, {"stop", "skip"}), "--bad-input must be stop or skip, got '",
               bad_input, "'");
  SONATA_CHECK(max_duration >= 0 || max_duration == kTaskMaxDuration,
               "--max-duration must not be negative (0: no limit), got ", max_duration);
  SONATA_CHECK(max_image_pixels > 0, "--max-image-pixels must be positive, got ", max_image_pixels);
  parse_tf32_mode(tf32, "--tf32");  // throws naming a bad value
  SONATA_CHECK(device == "auto" || device == "cpu" || device.rfind("cuda", 0) == 0,
               "--device must be auto, cpu, cuda or cuda:N, got '", device, "'");
  SONATA_CHECK(resume.empty() || resume != "auto" || !checkpoint_dir.empty(),
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
  SONATA_CHECK(one_of(progress, {"auto", "bar", "lines", "none"}),
               "--progress must be auto, bar, lines or none, got '", progress, "'");
  SONATA_CHECK(log_every >= 1, "--log-every must be at least 1");
  SONATA_CHECK(bucket_mb > 0, "--bucket-mb must be positive, got ", bucket_mb);
  SONATA_CHECK(comm_timeout >= 0 && std::isfinite(comm_timeout),
               "--comm-timeout must be a number of seconds (0: the default), got ", comm_timeout);
  SONATA_CHECK(one_of(ddp_comm_dtype, {"same", "fp16", "bf16"}),
               "--ddp-comm-dtype must be same, fp16 or bf16, got '", ddp_comm_dtype, "'");
  SONATA_CHECK(pipeline_stages >= 1, "--pipeline-stages must be at least 1, got ", pipeline_stages);
  SONATA_CHECK(one_of(pipeline_schedule, {"1f1b", "gpipe"}),
               "--pipeline-schedule must be 1f1b or gpipe, got '", pipeline_schedule, "'");
  SONATA_CHECK(one_of(pipeline_balance, {"bytes", "time"}),
               "--pipeline-balance must be bytes or time, got '", pipeline_balance, "'");
  SONATA_CHECK(pipeline_stages > 1 || pipeline_cuts.empty(),
               "--pipeline-cuts needs --pipeline-stages 2 or more");
  SONATA_CHECK(pipeline_stages == 1 || !sync_bn,
               "--sync-bn does not combine with --pipeline-stages: a pipeline normalises each "
               "micro-batch on its own, as GPipe");
  profile_range();  // throws naming a malformed --profile-steps
  SONATA_CHECK(slice_seconds > 0 && image_height > 0 && image_width > 0,
               "--slice-seconds, --image-height and --image-width must be positive");
  SONATA_CHECK(one_of(image_features, {"mel", "cqt"}), "--features must be mel or cqt, got '",
               image_features, "'");
  SONATA_CHECK(image_features == "mel" || !is_asr(),
               "--features cqt applies to --model vgg19_bn only");
  SONATA_CHECK(!image_mean.empty() && !image_std.empty(),
               "--image-mean and --image-std need at least one value");
  for (const double s : image_std)
    SONATA_CHECK(s > 0, "--image-std values must be positive, got ", s);
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
  json["model"] = model;
  for (const auto& [key, value] : model_config) json[key] = value;
  json["train"] = train_manifest;
  json["val"] = val_manifest;
  json["test"] = test_manifest;
  json["vocabulary"] = vocabulary;
  json["features"] = describe(features.config());
  json["slice-seconds"] = slice_seconds;
  json["image-height"] = image_height;
  json["image-width"] = image_width;
  json["image-features"] = image_features;
  json["image-mean"] = image_mean;
  json["image-std"] = image_std;
  json["batch-size"] = batch_size;
  json["epochs"] = epochs;
  json["max-steps"] = max_steps;
  json["accum-steps"] = accum_steps;
  json["optimizer"] = optimizer;
  json["lr"] = lr;
  json["momentum"] = momentum;
  json["nesterov"] = nesterov;
  json["beta1"] = beta1;
  json["beta2"] = beta2;
  json["eps"] = eps;
  json["weight-decay"] = weight_decay;
  json["decay-norm-and-bias"] = decay_norm_and_bias;
  json["schedule"] = schedule;
  json["schedule-unit"] = schedule_unit;
  json["warmup"] = warmup;
  json["warmup-start-lr"] = warmup_start_lr;
  json["min-lr"] = min_lr;
  json["flat-tail"] = flat_tail;
  json["step-every"] = step_every;
  json["step-gamma"] = step_gamma;
  json["lr-scaling"] = lr_scaling;
  json["reference-batch"] = reference_batch;
  json["grad-clip"] = grad_clip;
  json["precision"] = precision;
  json["max-bad-steps"] = max_bad_steps;
  json["spec-augment"] = spec_augment;
  json["speed-perturb"] = speed_perturb;
  json["features-on"] = features_on;
  json["brightness"] = brightness;
  json["contrast"] = contrast;
  json["freq-masks"] = freq_masks;
  json["freq-mask-width"] = freq_mask_width;
  json["time-masks"] = time_masks;
  json["time-mask-width"] = time_mask_width;
  json["seed"] = seed;
  json["deterministic"] = deterministic;
  json["tf32"] = tf32;
  json["sortagrad"] = sortagrad;
  json["class-balanced"] = class_balanced;
  json["device"] = device;
  json["bucket-mb"] = bucket_mb;
  json["find-unused-parameters"] = find_unused_parameters;
  json["sync-bn"] = sync_bn;
  json["ddp-comm-dtype"] = ddp_comm_dtype;
  json["pipeline-stages"] = pipeline_stages;
  json["pipeline-schedule"] = pipeline_schedule;
  json["pipeline-balance"] = pipeline_balance;
  json["pipeline-cuts"] = pipeline_cuts;
  return json.dump();
}

ReducerOptions reducer_options(const TrainerOptions& options) {
  ReducerOptions reducer;
  reducer.bucket_cap_bytes = int64_t(options.bucket_mb * double(1 << 20));
  reducer.first_bucket_cap_bytes = std::min(reducer.bucket_cap_bytes, int64_t(1) << 20);
  reducer.find_unused_parameters = options.find_unused_parameters;
  if (options.ddp_comm_dtype != "same")
    reducer.comm_dtype = options.ddp_comm_dtype == "fp16" ? DType::f16 : DType::bf16;
  return reducer;
}

}  // namespace sonata
