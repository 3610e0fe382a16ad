#pragma once
// CTC speech recognition with DeepSpeech2: ASR manifests decoded, resampled and turned into
// log-mel frames once, at start, and kept in memory (the demo corpus is an hour of audio: a
// second of features extraction, 300 MB at most), transcripts normalised to the vocabulary,
// CTC from the logits (ctc_loss_from_logits), and greedy + beam CER/WER on evaluation.
// With --features-on step the training split keeps its audio instead, and each step
// featurises its batch on the device (log_mel_batch on CUDA) and masks it there
// (spec_augment_batch); evaluation splits stay precomputed.
#include <memory>
#include <string>
#include <vector>

#include "data/features/spectrogram.h"
#include "data/text/vocabulary.h"
#include "models/ds2.h"
#include "tools/trainer/bad_input.h"
#include "tools/trainer/task.h"
#include "tools/trainer/trainer_options.h"

namespace sonata {

// One manifest's clips, featurised.
struct SpeechSplit {
  std::string name;
  std::vector<std::string> paths;  // each clip's audio file, as the manifest resolves it
  std::vector<Tensor> features;    // [frames, n_mels] f32 CPU; none when featurised per step
  // At the feature rate, when kept (--speed-perturb, --features-on step).
  std::vector<std::vector<float>> audio;
  std::vector<std::vector<int64_t>> targets;
  std::vector<std::string> transcripts;  // normalised references
  double seconds = 0;
  int64_t dropped_characters = 0;    // outside the vocabulary, over all transcripts
  std::vector<std::string> skipped;  // why each skipped clip was bad (--bad-input skip)

  int64_t clips() const { return int64_t(targets.size()); }
};

class FeatureCache;

// A clip that cannot be used (see bad_input.h) stops the load naming it, or under
// policy.skip_bad is left out with its reason in `skipped`.
// `cache`: features from a featurize cache (memory-mapped) instead of decoding the audio.
// `featurise` false (without a cache): the audio is kept and no features are computed.
SpeechSplit load_speech_split(const std::string& name, const std::string& manifest,
                              const Vocabulary& vocabulary, const FeatureExtractor& extractor,
                              int64_t workers, const InputPolicy& policy = {},
                              const FeatureCache* cache = nullptr, bool keep_audio = false,
                              bool featurise = true);

class SpeechTask : public Task {
 public:
  // Loads and featurises every split named in `options`, and builds the model.
  SpeechTask(const TrainerOptions& options, Vocabulary vocabulary);

  Module& model() override { return *model_; }
  std::shared_ptr<Module> shared_model() override { return model_; }
  int64_t train_items() const override { return train_.clips(); }
  std::vector<int64_t> train_lengths() const override;
  // Utterances differ in length: batches of similar ones pad little.
  SamplingKind sampling() const override { return SamplingKind::length_buckets; }
  HostBatch prepare(const std::vector<int64_t>& items, int64_t epoch) const override;
  Tensor loss(const HostBatch& batch, Device device) override;
  EvalCounts evaluate(const std::string& split, Device device, int64_t rank,
                      int64_t world) override;
  EvalResult summarize(const EvalCounts& totals) const override;
  bool has_split(const std::string& split) const override;
  std::string best_metric() const override { return "cer"; }
  bool lower_is_better() const override { return true; }
  std::map<std::string, std::string> checkpoint_texts() const override;
  std::string describe() const override;
  const char* item_name() const override { return "utt"; }
  DataReport data_report() const override;
  LayerSequence pipeline_layers() override;
  LayerValue pipeline_input(const HostBatch& batch, Device device) override;
  Tensor pipeline_loss(const LayerValue& output, const std::vector<Tensor>& batch_tensors,
                       Device device) override;

 private:
  // The model's input of a batch on `device`: features (computed here under --features-on
  // step) or images (jittered here under --features-on step), in the compute dtype.
  Tensor model_input(const HostBatch& batch, Device device);
  const SpeechSplit& split(const std::string& name) const;
  // Each clip's input frames (features, or the frames its kept audio gives).
  std::vector<int64_t> input_frames(const SpeechSplit& data) const;
  // `training`: the augmentations asked for (SpecAugment, speed) keyed by (epoch, item).
  HostBatch batch_of(const SpeechSplit& split, const std::vector<int64_t>& items, int64_t epoch,
                     bool training) const;
  // SpecAugment masks on one item's [count, n_mels] frames, keyed by (seed, epoch, item).
  void spec_augment_item(float* frames, int64_t count, int64_t epoch, int64_t item) const;

  TrainerOptions options_;
  Vocabulary vocabulary_;
  FeatureExtractor extractor_;
  SpeechSplit train_, val_, test_;
  std::shared_ptr<Ds2> model_;
  DType compute_dtype_ = DType::f32;
};

}  // namespace sonata
