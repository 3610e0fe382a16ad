#include "train/tasks/speech_task.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "base/error.h"
#include "base/nvtx.h"
#include "data/augment/spec_augment.h"
#include "data/cache/feature_cache.h"
#include "data/text/error_rate.h"
#include "engine/autograd/grad_mode.h"
#include "engine/deferred_init.h"
#include "engine/ops.h"
#include "engine/ops/ctc.h"
#include "models/ctc_decode.h"
#include "models/registry.h"
#include "models/speech_training_loss.h"
#include "train/setup/precision.h"
#include "train/tasks/ctc_reachability.h"

namespace sonata {

// The loss (models/) and the decoders name the blank the vocabulary (data/) reserves.
static_assert(kCtcBlank == Vocabulary::kBlank, "CTC's blank is the vocabulary's");
namespace {

// Clips named in a start-up warning; the count gives the rest.
constexpr size_t kNamedClips = 5;

// --model's speech model, with the keys its family's task sets (models/model_family.h).
std::shared_ptr<SpeechModel> make_task_model(const SpeechTaskOptions& options, int64_t classes) {
  ModelConfig config(options.model_config);
  config.set("num-mels", std::to_string(options.features.n_mels));
  config.set("num-classes", std::to_string(classes));
  return make_speech_model(options.model, config);
}

SpecAugmentOptions spec_augment_options(const SpeechTaskOptions& options) {
  SpecAugmentOptions masks;
  masks.freq_masks = options.freq_masks;
  masks.freq_max_width = options.freq_mask_width;
  masks.time_masks = options.time_masks;
  masks.time_max_width = options.time_mask_width;
  // Features are normalised per utterance by default, so 0 is their mean.
  masks.mask_value = 0.0f;
  return masks;
}

// The training augmentations; seed + 1: the samplers draw from the seed itself
// (data/augment/augment_key.h).
SpeechAugment speech_augment(const SpeechTaskOptions& options) {
  return {.spec_augment = options.spec_augment,
          .masks = spec_augment_options(options),
          .speed_perturb = options.speed_perturb,
          .seed = options.seed + 1};
}

}  // namespace

SpeechTask::SpeechTask(const SpeechTaskOptions& options, Vocabulary vocabulary)
    : options_(options),
      vocabulary_(std::move(vocabulary)),
      extractor_(options.features.config()),
      batcher_(extractor_, speech_augment(options), options.pad_frames_to),
      compute_dtype_(compute_dtype(options.precision)) {
  const InputPolicy& policy = options.input_policy;
  std::unique_ptr<FeatureCache> cache;
  if (!options.feature_cache.empty())
    cache = std::make_unique<FeatureCache>(options.feature_cache, extractor_.config());
  auto load = [&](const char* name, const std::string& manifest) {
    const bool train = std::string(name) == "train";
    const bool keep_audio = options.speed_perturb && train;
    // --features-on step: the training audio is featurised in each step instead.
    const bool featurise = options.features_on == FeaturesOn::load || !train;
    return manifest.empty()
               ? SpeechSplit{}
               : load_speech_split(name, manifest, vocabulary_, extractor_, options.workers, policy,
                                   cache.get(), keep_audio, featurise);
  };
  train_ = load("train", options.train_manifest);
  val_ = load("val", options.val_manifest);
  test_ = load("test", options.test_manifest);
  DeferredInitScope deferred(options.build_deferred);
  model_ = make_task_model(options, vocabulary_.size());
  // Counted now: a pipeline stage later releases the other stages' tensors.
  parameter_count_ = model_->parameter_count();
}

std::vector<int64_t> SpeechTask::train_lengths() const {
  return input_frames(train_, extractor_);
}

DataReport SpeechTask::data_report() const {
  DataReport report;
  for (const SpeechSplit* data : {&train_, &val_, &test_}) {
    if (data->clips() == 0) continue;
    report_skipped(report, data->name, "clips", data->skipped);
    report_too_long(report, data->name, data->too_long, options_.input_policy);
    // At the recorded speed (--speed-perturb's 1.1 may shorten a clip below it some epochs).
    std::vector<int64_t> output_frames;
    for (const int64_t frames : input_frames(*data, extractor_))
      output_frames.push_back(model_->output_frames(frames));
    const std::vector<std::string> unreachable =
        ctc_unreachable_clips(data->paths, data->targets, output_frames);
    report.counts[data->name + "_ctc_unreachable"] = int64_t(unreachable.size());
    if (unreachable.empty()) continue;
    std::string line = str("warning: ", data->name, ": ", unreachable.size(), " of ", data->clips(),
                           " clips have a transcript too long for CTC to align in the model's "
                           "output frames; their loss is 0 (zero_infinity) and they teach nothing");
    for (size_t i = 0; i < unreachable.size() && i < kNamedClips; ++i)
      line += "\n  " + unreachable[i];
    if (unreachable.size() > kNamedClips)
      line += str("\n  ... and ", unreachable.size() - kNamedClips, " more");
    report.lines.push_back(line);
  }
  return report;
}

const SpeechSplit& SpeechTask::split(const std::string& name) const {
  if (name == "train") return train_;
  if (name == "val") return val_;
  SONATA_CHECK(name == "test", "no split named '", name, "'");
  return test_;
}

bool SpeechTask::has_split(const std::string& name) const {
  return split(name).clips() > 0;
}

HostBatch SpeechTask::prepare(const std::vector<int64_t>& items, int64_t epoch) const {
  if (options_.features_on == FeaturesOn::step) return batcher_.waveforms(train_, items, epoch);
  return batcher_.features(train_, items, epoch, /*training=*/true);
}

LayerValue SpeechTask::input(const HostBatch& batch, Device device) {
  // A batch of samples (prepare() under --features-on step) is featurised on the device;
  // one of features (the other training batches, and every evaluation batch) is not.
  const bool samples = batch.has(SpeechBatch::sample_lengths);
  Tensor input;
  {
    SONATA_NVTX_RANGE("sonata::step::host_to_device");
    input = batch[SpeechBatch::input].to(device, true);
    if (!samples) input = input.to(compute_dtype_);
  }
  if (samples) {
    SONATA_NVTX_RANGE("sonata::step::features");
    input = batcher_.step_features(input, batch).to(compute_dtype_);
  }
  return {input, batch[SpeechBatch::input_lengths]};
}

std::vector<Tensor> SpeechTask::targets(const HostBatch& batch) const {
  return {batch[SpeechBatch::targets], batch[SpeechBatch::target_lengths]};
}

Tensor SpeechTask::loss(const LayerValue& output, const std::vector<Tensor>& targets, Device) {
  return ctc_training_loss(output.x, output.lengths, targets.at(0), targets.at(1));
}

// An evaluation batch by batch: this shard's clips, longest first, so padding is small and the
// first batch shows the memory peak.
class SpeechEvalPass : public EvalPass {
 public:
  SpeechEvalPass(const SpeechTask& task, const std::string& name, int64_t rank, int64_t world)
      : task_(task), data_(task.split(name)) {
    const int64_t count = int64_t(data_.features.size());
    for (int64_t i = rank; i < count; i += world) order_.push_back(i);
    std::stable_sort(order_.begin(), order_.end(), [&](int64_t a, int64_t b) {
      return data_.features[size_t(a)].size(0) > data_.features[size_t(b)].size(0);
    });
    eval_batch_ = std::max<int64_t>(task_.options_.batch_size, 16);
    // The clips whose transcripts are shown: spread evenly over the whole split (a manifest
    // is often sorted, by word or speaker), each shard showing those it holds.
    const int64_t picks = std::min(count, task_.options_.show_transcripts * world);
    for (int64_t k = 0; k < picks; ++k) shown_items_.insert(k * count / picks);
  }

  int64_t batch_count() const override {
    return (int64_t(order_.size()) + eval_batch_ - 1) / eval_batch_;
  }

  HostBatch batch(int64_t index) const override {
    return task_.batcher_.features(data_, items(index), 0, /*training=*/false);
  }

  // `output`: the logits. Normalised as the model's forward() does, so that the counts are
  // those of its log-probabilities.
  void add(const LayerValue& output, const HostBatch& batch) override {
    const std::vector<int64_t> clips = items(added_++);
    const Tensor device_log_probs = speech_log_probabilities(output.x);
    // Per-clip losses divided by their target lengths (the mean reduction's weighting).
    CtcOptions none_options = speech_ctc_options();
    none_options.reduction = Reduction::none;
    const Tensor target_lengths = batch[SpeechBatch::target_lengths];
    const Tensor losses = ctc_loss(device_log_probs, batch[SpeechBatch::targets], output.lengths,
                                   target_lengths, none_options)
                              .to(Device::cpu());
    const auto lengths = target_lengths.to_vector<int64_t>();
    const auto values = losses.to(DType::f64).to_vector<double>();
    for (size_t n = 0; n < values.size(); ++n)
      loss_sum_ += values[n] / double(std::max<int64_t>(lengths[n], 1));

    const SpeechTaskOptions& options = task_.options_;
    const Tensor log_probs = device_log_probs.to(Device::cpu());
    std::vector<std::vector<int64_t>> greedy;
    {
      SONATA_NVTX_RANGE("sonata::eval::greedy_decode");
      greedy = ctc_greedy_decode(log_probs, output.lengths, Vocabulary::kBlank);
    }
    std::vector<CtcHypothesis> beams;
    if (options.beam_width > 0) {
      SONATA_NVTX_RANGE("sonata::eval::beam_search");
      beams = ctc_beam_search(log_probs, output.lengths,
                              {.blank = Vocabulary::kBlank, .beam_width = options.beam_width});
    }
    for (size_t n = 0; n < clips.size(); ++n) {
      const size_t item = size_t(clips[n]);
      const std::string greedy_text = task_.vocabulary_.decode(greedy[n]);
      greedy_rate_.add(data_.transcripts[item], greedy_text);
      std::string beam_text;
      if (!beams.empty()) {
        beam_text = task_.vocabulary_.decode(beams[n].ids);
        beam_rate_.add(data_.transcripts[item], beam_text);
      }
      if (shown_items_.count(int64_t(item))) shown_[int64_t(item)] = {greedy_text, beam_text};
    }
  }

  EvalCounts finish() override {
    EvalCounts counts;
    counts.sums = {{"clips", double(order_.size())},
                   {"loss_sum", loss_sum_},
                   {"char_edits", double(greedy_rate_.characters().edits)},
                   {"chars", double(greedy_rate_.characters().reference_length)},
                   {"word_edits", double(greedy_rate_.words().edits)},
                   {"words", double(greedy_rate_.words().reference_length)},
                   {"beam_char_edits", double(beam_rate_.characters().edits)},
                   {"beam_word_edits", double(beam_rate_.words().edits)}};
    // This shard's picks in manifest order, the same every run, so runs compare by eye.
    const SpeechTaskOptions& options = task_.options_;
    for (const auto& [item, texts] : shown_) {
      if (int64_t(counts.examples.size()) >= 3 * options.show_transcripts) break;
      counts.examples.push_back(str("  ref:    ", data_.transcripts[size_t(item)]));
      counts.examples.push_back(str("  greedy: ", texts.first));
      if (options.beam_width > 0) counts.examples.push_back(str("  beam:   ", texts.second));
    }
    return counts;
  }

 private:
  std::vector<int64_t> items(int64_t index) const {
    const int64_t mine = int64_t(order_.size());
    return {order_.begin() + index * eval_batch_,
            order_.begin() + std::min(mine, (index + 1) * eval_batch_)};
  }

  const SpeechTask& task_;
  const SpeechSplit& data_;
  std::vector<int64_t> order_;
  int64_t eval_batch_ = 16, added_ = 0;
  ErrorRate greedy_rate_, beam_rate_;
  std::set<int64_t> shown_items_;
  std::map<int64_t, std::pair<std::string, std::string>> shown_;  // picked clips: greedy, beam
  double loss_sum_ = 0;
};

std::unique_ptr<EvalPass> SpeechTask::eval_pass(const std::string& name, int64_t rank,
                                                int64_t world) {
  return std::make_unique<SpeechEvalPass>(*this, name, rank, world);
}

EvalResult SpeechTask::summarize(const EvalCounts& totals) const {
  const auto& sum = totals.sums;
  const auto rate = [](double edits, double length) { return edits / std::max(length, 1.0); };
  EvalResult result;
  result.metrics["loss"] = sum.at("loss_sum") / std::max(sum.at("clips"), 1.0);
  result.metrics["cer"] = rate(sum.at("char_edits"), sum.at("chars"));
  result.metrics["wer"] = rate(sum.at("word_edits"), sum.at("words"));
  if (options_.beam_width > 0) {
    result.metrics["beam_cer"] = rate(sum.at("beam_char_edits"), sum.at("chars"));
    result.metrics["beam_wer"] = rate(sum.at("beam_word_edits"), sum.at("words"));
  }
  result.report = totals.examples;
  return result;
}

std::map<std::string, std::string> SpeechTask::checkpoint_texts() const {
  return {{"vocabulary", vocabulary_.to_file_text()}};
}

std::string SpeechTask::describe() const {
  std::string text = str(options_.model, " (", parameter_count_, " parameters), vocabulary of ",
                         vocabulary_.size(), " symbols");
  for (const SpeechSplit* data : {&train_, &val_, &test_}) {
    if (data->clips() == 0) continue;
    char hours[32];
    std::snprintf(hours, sizeof hours, "%.2f h", data->seconds / 3600.0);
    text += str("; ", data->name, " ", data->clips(), " clips, ", hours);
    if (data->dropped_characters > 0)
      text += str(" (", data->dropped_characters, " characters outside the vocabulary dropped)");
    text += skipped_text(data->skipped, data->too_long, "clips", options_.input_policy);
  }
  return text;
}

}  // namespace sonata
