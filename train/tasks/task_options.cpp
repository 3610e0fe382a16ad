#include "train/tasks/task_options.h"

#include "train/bad_input.h"
#include "train/task.h"
#include "train/trainer_options.h"

namespace sonata {

TaskOptions::TaskOptions(const TrainerOptions& options)
    : model(options.model),
      model_config(options.model_config),
      train_manifest(options.train_manifest),
      val_manifest(options.val_manifest),
      test_manifest(options.test_manifest),
      features(options.features),
      features_on(options.features_on.value()),
      input_policy(sonata::input_policy(options)),
      precision(options.precision.value()),
      build_deferred(builds_model_deferred(options)),
      workers(options.workers),
      batch_size(options.batch_size),
      seed(options.seed) {}

SpeechTaskOptions::SpeechTaskOptions(const TrainerOptions& options)
    : TaskOptions(options),
      feature_cache(options.feature_cache),
      pad_frames_to(options.pad_frames_to),
      spec_augment(options.spec_augment),
      speed_perturb(options.speed_perturb),
      freq_masks(options.freq_masks),
      freq_mask_width(options.freq_mask_width),
      time_masks(options.time_masks),
      time_mask_width(options.time_mask_width),
      beam_width(options.beam_width),
      show_transcripts(options.show_transcripts) {}

ClassTaskOptions::ClassTaskOptions(const TrainerOptions& options)
    : TaskOptions(options),
      slice_seconds(options.slice_seconds),
      image_height(options.image_height),
      image_width(options.image_width),
      image_features(options.image_features.value()),
      image_mean(options.image_mean),
      image_std(options.image_std),
      max_image_pixels(options.max_image_pixels),
      brightness(options.brightness),
      contrast(options.contrast),
      class_balanced(options.class_balanced) {}

}  // namespace sonata
