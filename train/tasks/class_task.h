#pragma once
// Music-genre classification with a model of the image-classifier family (VGG19_BN or
// VGG16_BN, models/vgg.h, or any other ImageClassifier of the registry) on spectrogram images: the
// dataset (data/datasets/image_dataset.h: --slice-seconds slices as --image-height x --image-width
// dB mel images, or constant-Q with --features cqt, or image files; --brightness / --contrast
// jitter) fed to the model, cross-entropy, and evaluation reporting slice accuracy, the
// confusion matrix, and track accuracy by majority vote over a track's slices.
#include <memory>
#include <string>
#include <vector>

#include "data/datasets/image_dataset.h"
#include "data/features/cqt.h"
#include "data/features/spectrogram.h"
#include "data/manifest/label_map.h"
#include "models/model_family.h"
#include "train/bad_input.h"
#include "train/task.h"
#include "train/tasks/task_options.h"

namespace sonata {

class ClassTask : public Task {
 public:
  explicit ClassTask(const ClassTaskOptions& options);

  Module& model() override { return *model_; }
  std::shared_ptr<Module> shared_model() override { return model_; }
  // The model's layers, ending at the logits.
  const LayerSequence& layers() const override { return model_->layers(); }
  int64_t train_items() const override { return int64_t(train_.images.size()); }
  std::vector<int64_t> train_lengths() const override;
  std::vector<int64_t> train_labels() const override { return train_.labels; }
  // Fixed-size items: uniform, or class-balanced under --class-balanced.
  SamplingKind sampling() const override;
  HostBatch prepare(const std::vector<int64_t>& items, int64_t epoch) const override;
  // {images}: jittered here under --features-on step, in the compute dtype.
  LayerValue input(const HostBatch& batch, Device device) override;
  // {labels}.
  std::vector<Tensor> targets(const HostBatch& batch) const override;
  // Cross-entropy of the logits, in f32.
  Tensor loss(const LayerValue& output, const std::vector<Tensor>& targets, Device device) override;
  bool has_split(const std::string& split) const override;
  std::unique_ptr<EvalPass> eval_pass(const std::string& split, int64_t rank,
                                      int64_t world) override;
  EvalResult summarize(const EvalCounts& totals) const override;
  std::string best_metric() const override { return "accuracy"; }
  bool lower_is_better() const override { return false; }
  std::map<std::string, std::string> checkpoint_texts() const override;
  // "inputs": "image files" or "audio", what the model was trained on (classify refuses the
  // other kind).
  std::map<std::string, std::string> checkpoint_notes() const override;
  std::string describe() const override;
  const char* item_name() const override { return "img"; }
  DataReport data_report() const override;

 private:
  friend class ClassEvalPass;

  const ImageSplit& split(const std::string& name) const;
  ImageSplit load(const std::string& name, const std::string& manifest) const;
  ClassTaskOptions options_;
  FeatureExtractor extractor_;
  InputPolicy policy_;
  std::shared_ptr<const ConstantQ> cqt_;  // --features cqt
  ImageBatcher batcher_;
  LabelMap labels_;  // from the first manifest given (train, else val, else test)
  ImageSplit train_, val_, test_;
  std::shared_ptr<ImageClassifier> model_;
  int64_t parameter_count_ = 0;  // the whole model's, as built
  int64_t in_channels_ = 3;
  DType compute_dtype_ = DType::f32;
};

}  // namespace sonata
