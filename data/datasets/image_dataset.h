#pragma once
// The spectrogram-image dataset for classification, the CCMusic way: each track is cut into
// fixed-length slices (the remainder is dropped, and a track shorter than one slice is bad
// input, see input_policy.h), each slice becomes a dB mel image (`height` mel bands, the
// frames resized linearly to `width`; or a dB constant-Q image resized to both, cqt_image),
// scaled to [0, 1] over the top 80 dB and normalised (x - 0.5) / 0.5. A split may instead list
// image files (.png, .jpg, .jpeg: CCMusic's released mel / CQT / chroma slices): each is one
// item (its own track), read by image_file_item with the model's input channels and the given
// mean / std; an unreadable one is bad input like an unreadable track. One split holds audio
// or images, not both. Batches have named fields (ImageBatch); the brightness / contrast
// jitter is keyed by (seed, epoch, item). The trainer (train/tasks/class_task), classify and
// the tests build images and batches here.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/augment/image_jitter.h"
#include "data/features/cqt.h"
#include "data/features/spectrogram.h"
#include "data/image/image_normalize.h"
#include "data/image/pixels.h"
#include "data/loader/host_batch.h"
#include "data/manifest/class_manifest.h"
#include "data/manifest/input_policy.h"
#include "data/manifest/label_map.h"

namespace sonata {

struct ImageSplit {
  std::string name;
  std::vector<Tensor> images;  // [H, W] f32 in [-1, 1], one per slice; [C, H, W] of an image file
  std::vector<int64_t> labels;
  std::vector<int64_t> tracks;  // the slice's track (among the tracks kept), for the vote
  int64_t track_count = 0;
  double seconds = 0;
  std::vector<std::string> skipped;  // why each skipped track was bad (policy.skip_bad)
  std::vector<TooLong> too_long;     // tracks over policy.max_duration, left out (input_policy.h)
};

// The fields of an image batch.
struct ImageBatch {
  static constexpr std::string_view image = "image";                // [N, C, H, W] f32
  static constexpr std::string_view label = "label";                // [N] i64
  static constexpr std::string_view track = "track";                // [N] i64, the slice's track
  static constexpr std::string_view augment_keys = "augment_keys";  // [N], the jitter's keys
};

// The dB mel image of a slice: [height, width], values in [-1, 1].
Tensor spectrogram_image(std::span<const float> slice, const FeatureExtractor& extractor,
                         int64_t width);

// The dB constant-Q image of a slice (data/features/cqt.h, ref = the slice's max, floored at
// -80 dB), the highest bin on top, resized bilinearly from [bins, frames] to [height, width]
// (half-pixel centres, as the image files), [0, 1] over the top 80 dB mapped to [-1, 1] as the
// mel images.
Tensor cqt_image(std::span<const float> slice, const ConstantQ& cqt, int64_t height, int64_t width);

// An image file (data/image/image_file.h) as the model reads it: converted to `channels`
// (PIL's convert("L") or convert("RGB")), resized bilinearly to [height, width] (torchvision's
// Resize on the float tensor, antialias off), normalised: [channels, height, width]. A file
// declaring more than `max_pixels` pixels is refused before decoding (read_image).
Tensor image_file_item(const std::string& path, int64_t channels, int64_t height, int64_t width,
                       const ImageNormalize& normalize, int64_t max_pixels = kMaxImagePixels);

// A class manifest's entries, or a folder of class folders' (scan_class_folders).
std::vector<ClassEntry> class_entries(const std::string& path, const InputPolicy& policy);

struct ImageSplitOptions {
  int64_t sample_rate = 22050;
  double slice_seconds = 30;
  int64_t height = 128, width = 128;
  int64_t channels = 3;                   // of the model input (image files are converted to it)
  ImageNormalize normalize;               // of image files
  int64_t max_pixels = kMaxImagePixels;   // of image files, declared (--max-image-pixels)
  ImageJitter jitter;                     // asked for; refused for image files
  const FeatureExtractor* mel = nullptr;  // the dB mel front end (audio, unless `cqt`)
  const ConstantQ* cqt = nullptr;
};

// Loads one split on `workers` threads. Labels come from `labels`, built from `labels_source`
// (named in the error for a label outside it, which always stops: a mistake in the manifests,
// not a bad track).
ImageSplit load_image_split(const std::string& name, const std::string& manifest,
                            const LabelMap& labels, const std::string& labels_source,
                            const ImageSplitOptions& options, int64_t workers,
                            const InputPolicy& policy);

// Builds a split's batches. Thread-safe.
class ImageBatcher {
 public:
  // `jitter` with `seed`: the training jitter; `jitter_on_step`: drawn in the step on the
  // device (step_jitter) instead of on the host.
  ImageBatcher(int64_t channels, int64_t height, int64_t width, double slice_seconds,
               ImageJitter jitter, uint64_t seed, bool jitter_on_step);

  // Images (a spectrogram plane replicated to the channels), labels and tracks. Staged: the
  // image.
  HostBatch batch(const ImageSplit& split, const std::vector<int64_t>& items) const;
  // A training batch: jittered here, or carrying the jitter's keys for step_jitter.
  HostBatch training(const ImageSplit& split, const std::vector<int64_t>& items,
                     int64_t epoch) const;
  bool jitters_on_step() const;
  // The step's jitter of a training batch's images (on their device): one draw per image, made
  // on its first channel and copied to the others.
  Tensor step_jitter(const Tensor& images, const HostBatch& batch) const;

 private:
  int64_t channels_, height_, width_;
  double slice_seconds_;
  ImageJitter jitter_;
  uint64_t seed_;
  bool jitter_on_step_;
};

}  // namespace sonata
