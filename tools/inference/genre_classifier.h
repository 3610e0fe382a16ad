#pragma once
// Classifying audio tracks with a VGG19_BN checkpoint, as the trainer evaluates them: each
// track decoded, resampled to the trained rate, cut into the trained slices (a track shorter
// than one is padded with silence), each slice drawn as the trained dB mel image, the slices'
// classes voted (track_vote.h).
#include <memory>
#include <string>
#include <vector>

#include "data/features/spectrogram.h"
#include "data/manifest/label_map.h"
#include "engine/nn/module.h"
#include "tools/inference/track_vote.h"
#include "tools/inference/trained_checkpoint.h"

namespace sonata {

struct TrackClasses {
  int64_t slices = 0;
  std::vector<ClassVotes> ranked;  // every class, best first
};

class GenreClassifier {
 public:
  // Refuses a checkpoint that is not a vgg19_bn one (require_model).
  GenreClassifier(const TrainedCheckpoint& checkpoint, Device device);

  // A file that cannot be decoded throws naming it.
  TrackClasses classify(const std::string& path);

  const LabelMap& labels() const { return labels_; }

 private:
  LabelMap labels_;
  FeatureExtractor extractor_;
  double slice_seconds_ = 0;
  int64_t image_width_ = 0;
  int64_t in_channels_ = 3;
  std::shared_ptr<Module> model_;
  Device device_;
};

}  // namespace sonata
