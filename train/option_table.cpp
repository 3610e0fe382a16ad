#include "train/option_table.h"

#include "base/error.h"
#include "data/manifest/input_policy.h"
#include "models/registry.h"

namespace sonata {
namespace {

const char* const kModel = "Model";
const char* const kData = "Data";
const char* const kOptim = "Optimisation";
const char* const kRun = "Running";
const char* const kParallel = "Data parallel (mpirun -np R ./trainer ...)";
const char* const kPipeline = "Pipeline parallel (mpirun -np R ./trainer --pipeline-stages S ...)";

// Why an option fixed by the checkpoint cannot change: the state it saved depends on it.
const char* const kOptimizerState = "the checkpoint holds that optimizer's state";
const char* const kOptimizerGroups = "the checkpoint's optimizer state has its groups";
const char* const kWeightsPrecision = "the checkpoint's weights are stored in that precision";
const char* const kBatches =
    "the checkpoint's step count, epoch length and schedule position count batches of that "
    "size";

// The image jitter's two options, refused together.
const char* const kJitter = "--brightness and --contrast";

using T = TrainerOptions;
constexpr OnResume kRunOnly = OnResume::run_only;
constexpr OnResume kFixed = OnResume::fixed;
constexpr OnResume kEpochStart = OnResume::epoch_start;

// A row for one family's models only; --help says which before the row's text.
OptionRow speech(OptionRow row) {
  row.family = ModelFamily::speech;
  row.help = "ASR: " + row.help;
  return row;
}
OptionRow images(OptionRow row, const char* refused_as = "") {
  row.family = ModelFamily::image_classifier;
  row.help = "classification: " + row.help;
  row.refused_as = refused_as;
  return row;
}

// --model's choices, each with its family and line of help (models/registry.cpp).
std::string model_help() {
  std::string help;
  for (const ModelEntry& entry : model_registry())
    help += str(help.empty() ? "" : "; ", entry.name, " (", family_name(entry.family), ", ",
                entry.header, "): ", entry.help);
  return help;
}

std::vector<OptionRow> make_table() {
  // name, field, group, help, --help shows the default, checkpoint key, on resume, why fixed.
  return {
      {"model", &T::model, kModel, model_help(), true, "model"},
      {"vocabulary", &T::vocabulary, kModel, "ASR vocabulary file (default: blank, space, ', a-z)",
       false, "vocabulary"},

      {"train", &T::train_manifest, kData, "training manifest (.tsv | .jsonl | class folder)",
       false, "train"},
      {"val", &T::val_manifest, kData, "validation manifest", false, "val"},
      {"test", &T::test_manifest, kData, "test manifest, evaluated after training", false, "test"},
      speech({"feature-cache", &T::feature_cache, kData,
              "a featurize cache of the manifests (same feature flags)", false}),
      {"features-on", &T::features_on, kData,
       "load | step: training features (and their augmentation) computed once at start, or "
       "from the audio on the device in each step",
       true, "features-on"},
      {"pad-frames-to", &T::pad_frames_to, kData,
       "ASR: pad each batch's time axis to a multiple of this many frames (fewer convolution "
       "shapes, so fewer cudnnFind runs; 1: to the longest item)"},
      {"bad-input", &T::bad_input, kData,
       "stop | skip: an unreadable, corrupt or empty clip stops the run, or is skipped and "
       "counted"},
      {"max-duration", &T::max_duration, kData,
       str("seconds; a longer clip is left out and counted, whatever --bad-input (0: no limit; "
           "default: ",
           kSpeechMaxDuration, " for speech models, none for image classifiers)"),
       false},
      {"max-image-pixels", &T::max_image_pixels, kData,
       "classification, image files: an image declaring more pixels (width x height) is bad "
       "input, refused before decoding (PIL's MAX_IMAGE_PIXELS)"},
      {"slice-seconds", &T::slice_seconds, kData, "classification: seconds per slice", true,
       "slice-seconds"},
      {"image-height", &T::image_height, kData, "classification: image rows (mel bins)", true,
       "image-height"},
      {"image-width", &T::image_width, kData, "classification: image columns (frames)", true,
       "image-width"},
      images({"features", &T::image_features, kData,
              "mel | cqt, the image of an audio slice (cqt: librosa.cqt's hop "
              "512, fmin C1, 84 bins, 12 per octave)",
              true, "image-features"}),
      {"image-mean", &T::image_mean, kData,
       "classification, image files: Normalize mean per channel (comma-separated)", true,
       "image-mean"},
      {"image-std", &T::image_std, kData,
       "classification, image files: Normalize std per channel (comma-separated)", true,
       "image-std"},
      speech({"spec-augment", &T::spec_augment, kData, "SpecAugment masks on training features",
              false, "spec-augment"}),
      speech({"speed-perturb", &T::speed_perturb, kData,
              "play each training clip at 0.9, 1.0 or 1.1 speed (keeps the audio in memory)", false,
              "speed-perturb"}),
      images({"brightness", &T::brightness, kData,
              "brightness jitter, factor in [1 - b, 1 + b] (0: off)", true, "brightness"},
             kJitter),
      images({"contrast", &T::contrast, kData, "contrast jitter, factor in [1 - c, 1 + c] (0: off)",
              true, "contrast"},
             kJitter),
      {"freq-masks", &T::freq_masks, kData, "SpecAugment frequency masks", true, "freq-masks"},
      {"freq-mask-width", &T::freq_mask_width, kData, "SpecAugment widest frequency mask", true,
       "freq-mask-width"},
      {"time-masks", &T::time_masks, kData, "SpecAugment time masks", true, "time-masks"},
      {"time-mask-width", &T::time_mask_width, kData, "SpecAugment widest time mask", true,
       "time-mask-width"},
      speech({"sortagrad", &T::sortagrad, kData, "first epoch in ascending length order", false,
              "sortagrad", kEpochStart}),
      images({"class-balanced", &T::class_balanced, kData,
              "draw items with weights inverse to their class's frequency", false, "class-balanced",
              kEpochStart}),
      {"workers", &T::workers, kData, "threads decoding clips at start and building batches ahead"},

      {"batch-size", &T::batch_size, kOptim, "items per step and process", true, "batch-size",
       kFixed, kBatches},
      {"epochs", &T::epochs, kOptim, "passes over the training set", true, "epochs"},
      {"max-steps", &T::max_steps, kOptim, "stop after this many optimizer steps (0: epochs)", true,
       "max-steps"},
      {"accum-steps", &T::accum_steps, kOptim, "micro-batches per optimizer step", true,
       "accum-steps", kFixed, kBatches},
      {"optimizer", &T::optimizer, kOptim, "sgd | adam | adamw", true, "optimizer", kFixed,
       kOptimizerState},
      {"lr", &T::lr, kOptim, "peak learning rate", true, "lr"},
      {"momentum", &T::momentum, kOptim, "sgd momentum", true, "momentum"},
      {"nesterov", &T::nesterov, kOptim, "sgd: Nesterov momentum", false, "nesterov"},
      {"beta1", &T::beta1, kOptim, "adam(w) beta1", true, "beta1"},
      {"beta2", &T::beta2, kOptim, "adam(w) beta2", true, "beta2"},
      {"eps", &T::eps, kOptim, "adam(w) epsilon", true, "eps"},
      {"weight-decay", &T::weight_decay, kOptim, "weight decay (decoupled for adamw)", true,
       "weight-decay"},
      {"decay-norm-and-bias", &T::decay_norm_and_bias, kOptim,
       "also decay BatchNorm parameters and biases", false, "decay-norm-and-bias", kFixed,
       kOptimizerGroups},
      {"schedule", &T::schedule, kOptim, "constant | cosine | step | linear (after warmup)", true,
       "schedule"},
      {"schedule-unit", &T::schedule_unit, kOptim, "epochs | steps", true, "schedule-unit"},
      {"warmup", &T::warmup, kOptim, "linear warmup length (schedule units)", true, "warmup"},
      {"warmup-start-lr", &T::warmup_start_lr, kOptim, "lr at the start of the warmup", true,
       "warmup-start-lr"},
      {"min-lr", &T::min_lr, kOptim, "floor of cosine / linear decay", true, "min-lr"},
      {"flat-tail", &T::flat_tail, kOptim, "units held at the floor at the end", true, "flat-tail"},
      {"step-every", &T::step_every, kOptim, "step schedule: units between decays", true,
       "step-every"},
      {"step-gamma", &T::step_gamma, kOptim, "step schedule: factor per decay", true, "step-gamma"},
      {"lr-scaling", &T::lr_scaling, kOptim,
       "none | linear | sqrt: scale --lr from --reference-batch to the global batch", true,
       "lr-scaling"},
      {"reference-batch", &T::reference_batch, kOptim, "the batch --lr was tuned for", true,
       "reference-batch"},
      {"grad-clip", &T::grad_clip, kOptim, "clip the global gradient norm (0: off)", true,
       "grad-clip"},
      {"precision", &T::precision, kOptim, "fp32 | fp16 (loss scaling) | bf16; half on cuda", true,
       "precision", kFixed, kWeightsPrecision},
      {"max-bad-steps", &T::max_bad_steps, kOptim,
       "stop after this many consecutive non-finite losses", true, "max-bad-steps"},

      {"seed", &T::seed, kRun, "seed of initialisation, shuffling and augmentation", true, "seed",
       kEpochStart},
      {"deterministic", &T::deterministic, kRun,
       "bitwise-reproducible kernels only (slower on cuda)", false, "deterministic"},
      {"tf32", &T::tf32, kRun,
       "off | conv | all: f32 convolutions (conv) or convolutions and GEMMs (all) on TF32 tensor "
       "cores (cuda)",
       true, "tf32"},
      {"device", &T::device, kRun, "auto | cpu | cuda | cuda:N", true, "device", kRunOnly},
      {"profile-steps", &T::profile_steps, kRun,
       "A:B: capture steps A..B only (nsys --capture-range=cudaProfilerApi)", false},
      {"range-times", &T::range_times, kRun,
       "JSONL file: host time per NVTX range (op, phase), written when the run ends; a CPU "
       "profile (on cuda only launch time)",
       false},

      {"bucket-mb", &T::bucket_mb, kParallel, "gradient bucket size in MiB (the first: 1 MiB)",
       true, "bucket-mb"},
      {"find-unused-parameters", &T::find_unused_parameters, kParallel,
       "allow parameters that get no gradient in a step", false, "find-unused-parameters"},
      {"sync-bn", &T::sync_bn, kParallel, "BatchNorm statistics over every process's batch", false,
       "sync-bn"},
      {"ddp-comm-dtype", &T::ddp_comm_dtype, kParallel,
       "same | fp16 | bf16: gradients travel in this dtype, summed in fp32", true,
       "ddp-comm-dtype"},
      {"comm-timeout", &T::comm_timeout, kParallel,
       "seconds a collective may wait for a peer before the job ends, naming the ranks that did "
       "not arrive (0: SONATA_NCCL_TIMEOUT_S, else 600)",
       false},

      {"pipeline-stages", &T::pipeline_stages, kPipeline,
       "stages of the model, one process each; R / S data-parallel replicas", true,
       "pipeline-stages"},
      {"pipeline-schedule", &T::pipeline_schedule, kPipeline, "1f1b | gpipe", true,
       "pipeline-schedule"},
      {"pipeline-balance", &T::pipeline_balance, kPipeline,
       "bytes | time: balance the stages by parameter bytes or measured time", true,
       "pipeline-balance"},
      {"pipeline-cuts", &T::pipeline_cuts, kPipeline,
       "explicit cuts: the first layer of each stage after the first, e.g. 7,12", false,
       "pipeline-cuts"},

      {"checkpoint-dir", &T::checkpoint_dir, kRun, "where checkpoints (and metrics) go", false},
      {"keep-checkpoints", &T::keep_checkpoints, kRun, "newest checkpoints kept (+ the best)"},
      {"checkpoint-every", &T::checkpoint_every, kRun,
       "optimizer steps between checkpoints (0: at epoch ends)"},
      {"stop-after", &T::stop_after, kRun,
       "end this run after this many steps in all, checkpointed (resume later)", false},
      {"resume", &T::resume, kRun, "auto (newest in --checkpoint-dir) or a checkpoint folder",
       false},
      {"overwrite", &T::overwrite, kRun,
       "start this run in a --checkpoint-dir that holds another, moving that one aside into "
       "previous-run-<N>/ (never deleted)",
       false, "", kRunOnly},
      {"init-from", &T::init_from, kRun, "start from these weights (.safetensors)", false},
      {"eval-only", &T::eval_only, kRun, "evaluate --init-from or --resume, then stop", false},
      {"eval-every", &T::eval_every, kRun, "epochs between evaluations"},
      {"beam-width", &T::beam_width, kRun, "ASR beam search width (0: greedy only)"},
      {"show-transcripts", &T::show_transcripts, kRun, "ASR: decoded examples printed"},
      {"metrics", &T::metrics, kRun, "JSONL metrics log (default: in --checkpoint-dir)", false, "",
       kRunOnly},
      {"progress", &T::progress, kRun, "auto | bar | lines | none", true, "", kRunOnly},
      {"log-every", &T::log_every, kRun, "steps between metric lines", true, "", kRunOnly},
  };
}

}  // namespace

const std::vector<OptionRow>& option_table() {
  static const std::vector<OptionRow> table = make_table();
  return table;
}

const OptionRow* option_of_checkpoint_key(const std::string& key) {
  for (const OptionRow& row : option_table())
    if (key == row.checkpoint_key) return &row;
  // Not kept in a checkpoint, yet named the same way (a hand-written config).
  for (const OptionRow& row : option_table())
    if (key == row.name && std::string(row.checkpoint_key).empty()) return &row;
  return nullptr;
}

}  // namespace sonata
