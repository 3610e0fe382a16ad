#pragma once
// Everything `trainer` can be told, on its command line or in a config file (the same keys),
// with the defaults `trainer --help` shows. check() turns an invalid combination into one
// sentence saying what to change.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "comm/reducer.h"
#include "data/image/pixels.h"
#include "engine/device.h"
#include "models/model_family.h"
#include "train/feature_flags.h"
#include "train/option_modes.h"

namespace CLI {
class App;
}

namespace sonata {

// --max-duration's value for "the task's default" (input_policy, train/bad_input.h).
constexpr double kTaskMaxDuration = -1;

// The options come in parts, each handed to the code that needs it alone (make_optimizer
// takes OptimizerOptions, reducer_options ParallelOptions); TrainerOptions is all of them.
// Each plain option's flag, --help text, config and checkpoint key and resume rule are
// declared once, in train/option_table.cpp.

// What to train on: data, features, augmentation, sampling.
struct DataOptions {
  std::string train_manifest, val_manifest, test_manifest;
  std::string vocabulary;  // ASR: a vocabulary file; default blank, space, ', a-z

  // Features (torchaudio's names; see data/features/feature_config.h). Classification
  // takes its sample rate and STFT from here and draws dB images of image_height bands.
  FeatureFlags features;
  std::string feature_cache;  // ASR: features precomputed by `featurize` with the same flags
  // ASR: load (training features computed at start, SpecAugment on the workers) | step (the
  // training audio kept, featurised and masked on the device in each step). Classification:
  // step moves the image jitter to the device.
  Choice<FeaturesOn> features_on = FeaturesOn::load;
  int64_t pad_frames_to = 8;  // ASR: batches' time axis, kSpeechTimeMultiple (speech_dataset.h)
  Choice<BadInput> bad_input = BadInput::stop;  // stop | skip (and count) on an unusable clip
  // Seconds; longer clips are left out and counted (0: no limit; kTaskMaxDuration: the task's
  // default, train/bad_input.h).
  double max_duration = kTaskMaxDuration;
  // Image files: a header declaring more pixels is refused before decoding (bad input), as
  // PIL's MAX_IMAGE_PIXELS (data/image/pixels.h).
  int64_t max_image_pixels = kMaxImagePixels;
  // Classification images: dB mel of fixed-length slices, resized to image_size.
  double slice_seconds = 3.0;
  int64_t image_height = 128, image_width = 128;
  // Classification: mel | cqt, the spectrogram an audio slice becomes (data/features/cqt.h).
  Choice<ImageFeatures> image_features = ImageFeatures::mel;
  // Classification, image files (.png / .jpg in a manifest or class folder): torchvision's
  // Normalize(mean, std) per channel after the resize (one value: every channel).
  std::vector<double> image_mean{0.5}, image_std{0.5};

  // Regularisation (ASR).
  bool spec_augment = false;
  bool speed_perturb = false;  // ASR: speed 0.9 / 1.0 / 1.1 per item and epoch (Kaldi's set)
  double brightness = 0, contrast = 0;  // classification: ColorJitter on the images
  int64_t freq_masks = 2, freq_mask_width = 15, time_masks = 2, time_mask_width = 20;

  bool sortagrad = false;
  bool class_balanced = false;  // classification: sample classes equally often
  int64_t workers = 2;          // threads preparing batches and features
};

// The optimizer and its learning-rate schedule.
struct OptimizerOptions {
  Choice<OptimizerKind> optimizer = OptimizerKind::adamw;
  double lr = 1e-3;
  double momentum = 0.9, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool nesterov = false;
  double weight_decay = 1e-2;
  bool decay_norm_and_bias = false;  // weight decay on BN and biases too (off: torch recipes)
  Choice<ScheduleShape> schedule = ScheduleShape::cosine;
  Choice<ScheduleUnit> schedule_unit = ScheduleUnit::epochs;
  double warmup = 0;  // units of schedule_unit, linear from warmup_start_lr
  double warmup_start_lr = 0;
  double min_lr = 0;     // cosine / linear floor
  double flat_tail = 0;  // units held at the floor at the end
  double step_every = 30, step_gamma = 0.1;
  // none | linear | sqrt, from reference_batch to the global batch
  Choice<LrScalingRule> lr_scaling = LrScalingRule::none;
  int64_t reference_batch = 256;
  double grad_clip = 0;  // max global norm; 0 = off (the norm is still logged)
};

// Data parallel (under mpirun / srun) and pipeline parallel.
struct ParallelOptions {
  double bucket_mb = 25;  // gradient bucket cap (the first bucket: 1 MiB)
  bool find_unused_parameters = false;
  bool sync_bn = false;  // BatchNorm statistics over every rank's batch
  Choice<CommDtype> ddp_comm_dtype = CommDtype::same;  // the all-reduce's wire dtype
  // Seconds any wait on communication may block before the job ends naming the collective
  // and the ranks that did not arrive; 0: SONATA_NCCL_TIMEOUT_S if set, else 600.
  double comm_timeout = 0;

  // Pipeline parallel (under mpirun): world = replicas x pipeline_stages; the micro-batches
  // are accum_steps (the loader batches of one optimizer step, run through the pipeline).
  int64_t pipeline_stages = 1;
  Choice<PipelineSchedule> pipeline_schedule = PipelineSchedule::one_f_one_b;
  Choice<PipelineBalance> pipeline_balance = PipelineBalance::bytes;
  std::string pipeline_cuts;  // "7,12": explicit first layers of stages 1..S-1
  // After a pipelined run_training, every rank's task.model() whole again (the trained model
  // left in the task, as one process leaves it). The trainer command, which only reports,
  // turns it off: then no rank ever holds another stage's parameters.
  bool gather_model = true;
};

// The loop: steps, precision, device, checkpoints, evaluation and output.
struct LoopOptions {
  int64_t batch_size = 16;  // per process
  int64_t epochs = 10;
  int64_t max_steps = 0;  // > 0: stop after this many optimizer steps (overrides epochs)
  int64_t accum_steps = 1;
  Choice<Precision> precision = Precision::fp32;
  int64_t max_bad_steps = 50;  // stop after this many consecutive non-finite losses

  uint64_t seed = 1;
  bool deterministic = false;
  Choice<Tf32Mode> tf32 = kDefaultTf32Mode;  // where f32 may use TF32 (base/math_mode.h)
  std::string device = "auto";               // auto | cpu | cuda | cuda:N
  std::string profile_steps;  // "A:B": cudaProfilerStart before step A, Stop after step B
  std::string range_times;    // JSONL of host time per NVTX range, written at the end

  // Checkpoints and evaluation.
  std::string checkpoint_dir;
  int64_t keep_checkpoints = 3;
  int64_t checkpoint_every = 0;  // steps between checkpoints; 0: at epoch ends only
  int64_t stop_after = 0;  // > 0: end this run after that many steps in all (checkpointed), as
                           // a preempted job would; the schedule still spans the whole run
  std::string resume;      // "auto" (the newest in checkpoint_dir), or a checkpoint folder
  std::string init_from;   // weights (.safetensors) to start from, e.g. ImageNet VGG19_BN
  bool eval_only = false;
  bool overwrite = false;  // a run not resumed in a folder holding one moves that one aside
  int64_t eval_every = 1;  // epochs
  int64_t beam_width = 8;  // ASR: the beam search's width; 0 skips the beam figures
  int64_t show_transcripts = 5;

  // Output.
  std::string metrics;  // JSONL log; default <checkpoint_dir>/metrics.jsonl or metrics.jsonl
  Choice<ProgressMode> progress = ProgressMode::automatic;
  int64_t log_every = 10;  // steps between metric lines (and host reads of the loss)
};

struct TrainerOptions : DataOptions, OptimizerOptions, ParallelOptions, LoopOptions {
  // What to train.
  std::string model = "ds2";                        // a name in models/registry.cpp
  std::map<std::string, std::string> model_config;  // the model's own options (registry keys)

  std::string config_file;

  // --model's family, from the registry (throws naming the known models for another name).
  ModelFamily family() const;
  bool is_speech() const { return family() == ModelFamily::speech; }
  // --resume auto: the newest checkpoint in checkpoint_dir (else resume names a folder).
  bool resumes_newest() const { return resume == "auto"; }
  // --device: nothing for auto (the first GPU if there is one, else the CPU), else the
  // device named (check() has refused any other word).
  std::optional<Device> chosen_device() const;
  // --profile-steps as [first, last] optimizer steps (counted from 1); {0, 0} when unset.
  std::pair<int64_t, int64_t> profile_range() const;
  // One sentence for the first invalid setting or combination, else nothing.
  void check() const;
  // Every option the checkpoint keeps, as JSON text (--resume compares it).
  std::string to_json() const;
};

// Registers every option on `app` (with --config for a JSON or YAML file of the same keys).
void add_trainer_options(CLI::App& app, TrainerOptions& options);

// The gradient reducer's settings (DDP, and the replicas of a pipeline).
ReducerOptions reducer_options(const ParallelOptions& options);

}  // namespace sonata
