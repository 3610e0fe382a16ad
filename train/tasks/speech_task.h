#pragma once
// CTC speech recognition with a model of the speech family (DeepSpeech2, models/ds2.h, or any
// other SpeechModel of the registry, models/model_family.h): the speech dataset
// (data/datasets/speech_dataset.h: ASR manifests featurised once, at start, and kept in memory; the
// demo corpus is an hour of audio, a second of features extraction, 300 MB at most) fed to the
// model, CTC from the logits (ctc_loss_from_logits), and greedy + beam CER/WER on evaluation. With
// --features-on step the training split keeps its audio instead, and each step featurises its batch
// on the device (log_mel_batch on CUDA) and masks it there (spec_augment_batch); evaluation splits
// stay precomputed.
#include <memory>
#include <string>
#include <vector>

#include "data/datasets/speech_dataset.h"
#include "data/features/spectrogram.h"
#include "data/text/vocabulary.h"
#include "models/model_family.h"
#include "train/bad_input.h"
#include "train/task.h"
#include "train/tasks/task_options.h"

namespace sonata {

class SpeechTask : public Task {
 public:
  // Loads and featurises every split named in `options`, and builds the model.
  SpeechTask(const SpeechTaskOptions& options, Vocabulary vocabulary);

  Module& model() override { return *model_; }
  std::shared_ptr<Module> shared_model() override { return model_; }
  // The model's layers ending at the logits (SpeechModel::logit_layers): loss() fuses
  // log_softmax with CTC, and the evaluation normalises them itself.
  const LayerSequence& layers() const override { return model_->logit_layers(); }
  int64_t train_items() const override { return train_.clips(); }
  std::vector<int64_t> train_lengths() const override;
  // Utterances differ in length: batches of similar ones pad little.
  SamplingKind sampling() const override { return SamplingKind::length_buckets; }
  HostBatch prepare(const std::vector<int64_t>& items, int64_t epoch) const override;
  // {features, frames}: of a batch of samples (--features-on step) computed here.
  LayerValue input(const HostBatch& batch, Device device) override;
  // {targets, target_lengths}.
  std::vector<Tensor> targets(const HostBatch& batch) const override;
  // The fused log_softmax + CTC of the logits (ctc_training_loss, speech_training_loss.h).
  Tensor loss(const LayerValue& output, const std::vector<Tensor>& targets, Device device) override;
  bool has_split(const std::string& split) const override;
  std::unique_ptr<EvalPass> eval_pass(const std::string& split, int64_t rank,
                                      int64_t world) override;
  EvalResult summarize(const EvalCounts& totals) const override;
  std::string best_metric() const override { return "cer"; }
  bool lower_is_better() const override { return true; }
  std::map<std::string, std::string> checkpoint_texts() const override;
  std::string describe() const override;
  const char* item_name() const override { return "utt"; }
  DataReport data_report() const override;

 private:
  friend class SpeechEvalPass;

  const SpeechSplit& split(const std::string& name) const;

  SpeechTaskOptions options_;
  Vocabulary vocabulary_;
  FeatureExtractor extractor_;
  SpeechBatcher batcher_;
  SpeechSplit train_, val_, test_;
  std::shared_ptr<SpeechModel> model_;
  int64_t parameter_count_ = 0;  // the whole model's, as built
  DType compute_dtype_ = DType::f32;
};

}  // namespace sonata
