#pragma once
// Classifying with an image-classifier checkpoint (VGG19_BN, ...), as the trainer evaluates: an
// audio track decoded, resampled to the trained rate, cut into the trained slices (a track shorter
// than one slice is refused, as the trainer refuses it), each slice drawn as the trained image (dB
// mel, or dB constant-Q under --features cqt), the slices' classes voted (track_vote.h); an image
// file
// (.png, .jpg, .jpeg) is one slice, read as the trainer reads image files (the trained
// channels, size and --image-mean / --image-std).
#include <memory>
#include <string>
#include <vector>

#include "data/features/cqt.h"
#include "data/features/spectrogram.h"
#include "data/image/image_normalize.h"
#include "data/image/pixels.h"
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
  // Refuses a checkpoint of a model that is not an image classifier (require_family).
  GenreClassifier(const TrainedCheckpoint& checkpoint, Device device);

  // A file that cannot be decoded throws naming it, as does a file of the other kind than
  // the model was trained on (an image file to a model of audio tracks, or audio to a model
  // of image files).
  TrackClasses classify(const std::string& path);

  const LabelMap& labels() const { return labels_; }
  // Image files declaring more pixels are refused before decoding (data/image/pixels.h).
  void set_max_image_pixels(int64_t pixels) { max_image_pixels_ = pixels; }

 private:
  TrackClasses classify_image(const std::string& path);
  TrackClasses classify_track(const std::string& path);
  // The class probabilities of model inputs [count, C, H, W], appended to `out`.
  void add_probabilities(const Tensor& images, std::vector<double>& out);

  LabelMap labels_;
  FeatureExtractor extractor_;
  double slice_seconds_ = 0;
  int64_t image_height_ = 0, image_width_ = 0;
  int64_t in_channels_ = 3;
  std::shared_ptr<const ConstantQ> cqt_;  // checkpoints trained with --features cqt
  ImageNormalize normalize_;              // of image files
  std::shared_ptr<Module> model_;
  Device device_;
  std::string checkpoint_path_;
  std::string trained_inputs_;  // "image files", "audio", or "" when the checkpoint cannot tell
  int64_t max_image_pixels_ = kMaxImagePixels;
};

}  // namespace sonata
