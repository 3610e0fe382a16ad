#pragma once
// Music-genre classification with VGG19_BN on spectrogram images, the CCMusic way: each track
// is cut into fixed-length slices (--slice-seconds; the remainder is dropped, and a track
// shorter than one slice is bad input, see bad_input.h), each slice becomes a dB mel image
// (--image-height mel bands, the frames resized linearly to --image-width), scaled to [0, 1] over
// the top 80 dB, replicated to the model's input channels and normalised (x - 0.5) / 0.5.
// Evaluation reports slice accuracy, the confusion matrix, and track accuracy by majority vote over
// a track's slices.
#include <memory>
#include <string>
#include <vector>

#include "data/features/spectrogram.h"
#include "data/manifest/label_map.h"
#include "tools/trainer/bad_input.h"
#include "tools/trainer/task.h"
#include "tools/trainer/trainer_options.h"

namespace sonata {

struct ImageSplit {
  std::string name;
  std::vector<Tensor> images;  // [H, W] f32 in [-1, 1], one per slice
  std::vector<int64_t> labels;
  std::vector<int64_t> tracks;  // the slice's track (among the tracks kept), for the vote
  int64_t track_count = 0;
  double seconds = 0;
  std::vector<std::string> skipped;  // why each skipped track was bad (--bad-input skip)
};

// The dB mel image of a slice: [height, width], values in [-1, 1].
Tensor spectrogram_image(std::span<const float> slice, const FeatureExtractor& extractor,
                         int64_t width);

class ClassTask : public Task {
 public:
  explicit ClassTask(const TrainerOptions& options);

  Module& model() override { return *model_; }
  std::shared_ptr<Module> shared_model() override { return model_; }
  int64_t train_items() const override { return int64_t(train_.images.size()); }
  std::vector<int64_t> train_lengths() const override;
  std::vector<int64_t> train_labels() const override { return train_.labels; }
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
  PipelineLayers pipeline_layers() override;
  PipeValue pipeline_input(const HostBatch& batch, Device device) override;
  Tensor pipeline_loss(const PipeValue& output, const std::vector<Tensor>& batch_tensors,
                       Device device) override;

 private:
  // The model's input of a batch on `device`: features (computed here under --features-on
  // step) or images (jittered here under --features-on step), in the compute dtype.
  Tensor model_input(const HostBatch& batch, Device device) const;
  const ImageSplit& split(const std::string& name) const;
  ImageSplit load(const std::string& name, const std::string& manifest) const;
  HostBatch batch_of(const ImageSplit& split, const std::vector<int64_t>& items) const;

  TrainerOptions options_;
  FeatureExtractor extractor_;
  InputPolicy policy_;
  LabelMap labels_;  // from the first manifest given (train, else val, else test)
  ImageSplit train_, val_, test_;
  std::shared_ptr<Module> model_;
  int64_t in_channels_ = 3;
  DType compute_dtype_ = DType::f32;
};

}  // namespace sonata
