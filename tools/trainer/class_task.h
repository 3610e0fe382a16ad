#pragma once
// Music-genre classification with VGG19_BN on spectrogram images, the CCMusic way: each track
// is cut into fixed-length slices (--slice-seconds; the remainder is dropped, and a track
// shorter than one slice is bad input, see bad_input.h), each slice becomes a dB mel image
// (--image-height mel bands, the frames resized linearly to --image-width; with --features cqt
// a dB constant-Q image resized to both, cqt_image), scaled to [0, 1] over the top 80 dB,
// replicated to the model's input channels and normalised (x - 0.5) / 0.5. Evaluation reports
// slice accuracy, the confusion matrix, and track accuracy by majority vote over a track's
// slices. A split may instead list image files (.png, .jpg, .jpeg: CCMusic's released mel /
// CQT / chroma slices): each is one item (its own track), read by image_file_item with the
// model's input channels and --image-mean / --image-std; an unreadable one is bad input like an
// unreadable track. One split holds audio or images, not both.
#include <memory>
#include <string>
#include <vector>

#include "data/features/cqt.h"
#include "data/features/spectrogram.h"
#include "data/image/image_normalize.h"
#include "data/manifest/label_map.h"
#include "tools/trainer/bad_input.h"
#include "tools/trainer/task.h"
#include "tools/trainer/trainer_options.h"

namespace sonata {

struct ImageSplit {
  std::string name;
  std::vector<Tensor> images;  // [H, W] f32 in [-1, 1], one per slice; [C, H, W] of an image file
  std::vector<int64_t> labels;
  std::vector<int64_t> tracks;  // the slice's track (among the tracks kept), for the vote
  int64_t track_count = 0;
  double seconds = 0;
  std::vector<std::string> skipped;  // why each skipped track was bad (--bad-input skip)
};

// The dB mel image of a slice: [height, width], values in [-1, 1].
Tensor spectrogram_image(std::span<const float> slice, const FeatureExtractor& extractor,
                         int64_t width);

// --features cqt: the dB constant-Q image of a slice (data/features/cqt.h, ref = the slice's
// max, floored at -80 dB), the highest bin on top, resized bilinearly from [bins, frames] to
// [height, width] (half-pixel centres, as the image files), [0, 1] over the top 80 dB mapped to
// [-1, 1] as the mel images.
Tensor cqt_image(std::span<const float> slice, const ConstantQ& cqt, int64_t height, int64_t width);

// An image file (data/image/image_file.h) as the model reads it: converted to `channels`
// (PIL's convert("L") or convert("RGB")), resized bilinearly to [height, width] (torchvision's
// Resize on the float tensor, antialias off), normalised: [channels, height, width].
Tensor image_file_item(const std::string& path, int64_t channels, int64_t height, int64_t width,
                       const ImageNormalize& normalize);

class ClassTask : public Task {
 public:
  explicit ClassTask(const TrainerOptions& options);

  Module& model() override { return *model_; }
  std::shared_ptr<Module> shared_model() override { return model_; }
  int64_t train_items() const override { return int64_t(train_.images.size()); }
  std::vector<int64_t> train_lengths() const override;
  std::vector<int64_t> train_labels() const override { return train_.labels; }
  // Fixed-size items: uniform, or class-balanced under --class-balanced.
  SamplingKind sampling() const override;
  HostBatch prepare(const std::vector<int64_t>& items, int64_t epoch) const override;
  Tensor loss(const HostBatch& batch, Device device) override;
  EvalCounts evaluate(const std::string& split, Device device, int64_t rank,
                      int64_t world) override;
  EvalResult summarize(const EvalCounts& totals) const override;
  bool has_split(const std::string& split) const override;
  std::string best_metric() const override { return "accuracy"; }
  bool lower_is_better() const override { return false; }
  std::map<std::string, std::string> checkpoint_texts() const override;
  std::string describe() const override;
  const char* item_name() const override { return "img"; }
  DataReport data_report() const override;
  LayerSequence pipeline_layers() override;
  LayerValue pipeline_input(const HostBatch& batch, Device device) override;
  Tensor pipeline_loss(const LayerValue& output, const std::vector<Tensor>& batch_tensors,
                       Device device) override;

 private:
  // The model's input of a batch on `device`: features (computed here under --features-on
  // step) or images (jittered here under --features-on step), in the compute dtype.
  Tensor model_input(const HostBatch& batch, Device device) const;
  const ImageSplit& split(const std::string& name) const;
  ImageSplit load(const std::string& name, const std::string& manifest) const;
  // Refuses a split of both audio and image files, and options that do not fit image files.
  void check_image_split(const std::string& name, const std::string& manifest, int64_t image_files,
                         int64_t entries) const;
  HostBatch batch_of(const ImageSplit& split, const std::vector<int64_t>& items) const;

  TrainerOptions options_;
  FeatureExtractor extractor_;
  InputPolicy policy_;
  std::shared_ptr<const ConstantQ> cqt_;  // --features cqt
  LabelMap labels_;  // from the first manifest given (train, else val, else test)
  ImageSplit train_, val_, test_;
  std::shared_ptr<Module> model_;
  int64_t in_channels_ = 3;
  DType compute_dtype_ = DType::f32;
};

}  // namespace sonata
