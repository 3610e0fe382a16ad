#pragma once
// What a task is told of the run: its model, its data and how the run computes, and nothing
// else of TrainerOptions (the loop's, the optimizer's and the strategies' options are not a
// task's business). Filled from the run's options in one place, task_options.cpp; the
// conversion is implicit so that a task is built from TrainerOptions directly, as make_task
// and the tests do, while the task's headers know only these structs.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/features/image_features.h"
#include "data/image/pixels.h"
#include "data/manifest/input_policy.h"
#include "train/feature_flags.h"
#include "train/option_modes.h"

namespace sonata {

struct TrainerOptions;

// Every task's part.
struct TaskOptions {
  std::string model;                                // a name in models/registry.cpp
  std::map<std::string, std::string> model_config;  // the model's own options
  std::string train_manifest, val_manifest, test_manifest;
  FeatureFlags features;
  FeaturesOn features_on = FeaturesOn::load;
  // --bad-input and --max-duration, the family's default duration filled in (bad_input.h).
  InputPolicy input_policy;
  Precision precision = Precision::fp32;
  // A pipeline stage's task builds its model deferred (engine/deferred_init.h): each stage
  // then makes its own layers' tensors alone.
  bool build_deferred = false;
  int64_t workers = 2;
  int64_t batch_size = 16;  // the evaluation's batches are at least this (and 16)
  uint64_t seed = 1;        // the augmentations draw from seed + 1

 protected:
  TaskOptions() = default;
  explicit TaskOptions(const TrainerOptions& options);
};

// CTC speech recognition's (SpeechTask).
struct SpeechTaskOptions : TaskOptions {
  std::string feature_cache;
  int64_t pad_frames_to = 8;
  bool spec_augment = false;
  bool speed_perturb = false;
  int64_t freq_masks = 2, freq_mask_width = 15, time_masks = 2, time_mask_width = 20;
  int64_t beam_width = 8;
  int64_t show_transcripts = 5;

  SpeechTaskOptions() = default;
  SpeechTaskOptions(const TrainerOptions& options);  // NOLINT: the run's, narrowed
};

// Classification of spectrogram images or image files (ClassTask).
struct ClassTaskOptions : TaskOptions {
  double slice_seconds = 3.0;
  int64_t image_height = 128, image_width = 128;
  ImageFeatures image_features = ImageFeatures::mel;
  std::vector<double> image_mean{0.5}, image_std{0.5};
  int64_t max_image_pixels = kMaxImagePixels;
  double brightness = 0, contrast = 0;
  bool class_balanced = false;

  ClassTaskOptions() = default;
  ClassTaskOptions(const TrainerOptions& options);  // NOLINT: the run's, narrowed
};

}  // namespace sonata
