#include "tools/trainer/speech_task.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "base/nvtx.h"
#include "data/audio/decode.h"
#include "data/audio/resample.h"
#include "data/augment/augment_key.h"
#include "data/augment/spec_augment.h"
#include "data/augment/speed_perturb.h"
#include "data/cache/feature_cache.h"
#include "data/manifest/asr_manifest.h"
#include "data/text/error_rate.h"
#include "data/text/normalise.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/ops/ctc.h"
#include "models/ctc_decode.h"
#include "tools/trainer/ctc_reachability.h"
#include "tools/trainer/ds2_training_loss.h"
#include "tools/trainer/precision.h"

namespace sonata {
namespace {

// Clips named in a start-up warning; the count gives the rest.
constexpr size_t kNamedClips = 5;

// Kaldi's and NeMo's usual speed-perturbation set.
constexpr double kSpeedFactors[] = {0.9, 1.0, 1.1};

std::shared_ptr<Ds2> make_speech_model(const TrainerOptions& options, int64_t classes) {
  ModelConfig config(options.model_config);
  config.set("num-mels", std::to_string(options.features.n_mels));
  config.set("num-classes", std::to_string(classes));
  return std::dynamic_pointer_cast<Ds2>(make_ds2(config));
}

CtcOptions ctc_options() {
  return ds2_ctc_options();
}

SpecAugmentOptions spec_augment_options(const TrainerOptions& options) {
  SpecAugmentOptions masks;
  masks.freq_masks = options.freq_masks;
  masks.freq_max_width = options.freq_mask_width;
  masks.time_masks = options.time_masks;
  masks.time_max_width = options.time_mask_width;
  // Features are normalised per utterance by default, so 0 is their mean.
  masks.mask_value = 0.0f;
  return masks;
}

// seed + 1: the samplers draw from the seed itself (data/augment/augment_key.h).
uint64_t augment_seed(const TrainerOptions& options) {
  return options.seed + 1;
}

// --speed-perturb: the training item's speed in `epoch`; 1 when off or not training.
double speed_factor(const TrainerOptions& options, const SpeechSplit& split, bool training,
                    int64_t epoch, int64_t item) {
  return training && options.speed_perturb && !split.audio.empty()
             ? choose_speed_factor(kSpeedFactors, augment_seed(options), augment_key(epoch, item))
             : 1.0;
}

// --features-on step's batch: tensors = samples [N, L] f32 zero-padded, frames [N], targets
// concatenated, target lengths [N], samples per clip [N], augmentation keys [N] (the keys'
// bits as i64). The first four mean what batch_of's do, so the loss reads them alike.
HostBatch waveform_batch(const SpeechSplit& split, const std::vector<int64_t>& items, int64_t epoch,
                         const TrainerOptions& options, const FeatureExtractor& extractor) {
  const int64_t batch = int64_t(items.size());
  std::vector<std::vector<float>> perturbed(items.size());
  std::vector<std::span<const float>> clips;
  for (size_t n = 0; n < items.size(); ++n) {
    const std::vector<float>& stored = split.audio[size_t(items[n])];
    const double factor = speed_factor(options, split, true, epoch, items[n]);
    if (factor != 1.0) perturbed[n] = speed_perturb(stored, options.features.sample_rate, factor);
    clips.emplace_back(factor == 1.0 ? stored : perturbed[n]);
  }
  int64_t longest = 0;
  for (const auto& clip : clips) longest = std::max(longest, int64_t(clip.size()));
  HostBatch host;
  Tensor samples = zeros({batch, longest});
  std::vector<int64_t> frames, targets, target_lengths, lengths, keys;
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t item = items[size_t(n)];
    const std::span<const float> clip = clips[size_t(n)];
    std::copy(clip.begin(), clip.end(), samples.data<float>() + n * longest);
    lengths.push_back(int64_t(clip.size()));
    frames.push_back(extractor.frames(int64_t(clip.size())));
    keys.push_back(int64_t(augment_key(epoch, item)));
    const auto& labels = split.targets[size_t(item)];
    targets.insert(targets.end(), labels.begin(), labels.end());
    target_lengths.push_back(int64_t(labels.size()));
    host.audio_seconds += double(frames.back()) * double(options.features.hop_length) /
                          double(options.features.sample_rate);
  }
  host.items = batch;
  host.tensors = {samples,
                  from_vector(frames, {batch}),
                  from_vector(targets, {int64_t(targets.size())}),
                  from_vector(target_lengths, {batch}),
                  from_vector(lengths, {batch}),
                  from_vector(keys, {batch})};
  return host;
}

// A waveform batch's features on the samples' device, [N, 1, T, n_mels] (T: the most frames),
// zero past each clip's frames, masked when --spec-augment is on: the GPU log-mel on CUDA, the
// CPU's otherwise.
Tensor step_features(const Tensor& samples, const HostBatch& batch,
                     const FeatureExtractor& extractor, const TrainerOptions& options) {
  const std::vector<int64_t> lengths = batch.tensors[4].to_vector<int64_t>();
  Tensor features;
  if (samples.device().is_cuda()) {
    features = extractor.log_mel_batch(samples, lengths);
  } else {
    const Tensor host = samples.contiguous();
    std::vector<std::span<const float>> clips;
    for (size_t n = 0; n < lengths.size(); ++n)
      clips.emplace_back(host.data<float>() + int64_t(n) * host.size(1), size_t(lengths[n]));
    const std::vector<Tensor> per_clip = extractor.log_mel(clips);
    int64_t longest = 0;
    for (const Tensor& clip : per_clip) longest = std::max(longest, clip.size(0));
    const int64_t mels = extractor.config().n_mels;
    features = zeros({int64_t(per_clip.size()), longest, mels});
    for (size_t n = 0; n < per_clip.size(); ++n)
      std::copy_n(per_clip[n].data<float>(), per_clip[n].numel(),
                  features.data<float>() + int64_t(n) * longest * mels);
  }
  features = features.unsqueeze(1);
  if (!options.spec_augment) return features;
  std::vector<uint64_t> keys;
  for (const int64_t key : batch.tensors[5].to_vector<int64_t>()) keys.push_back(uint64_t(key));
  return spec_augment_batch(features, batch.tensors[1].to_vector<int64_t>(),
                            spec_augment_options(options), augment_seed(options), keys);
}

}  // namespace

SpeechSplit load_speech_split(const std::string& name, const std::string& manifest,
                              const Vocabulary& vocabulary, const FeatureExtractor& extractor,
                              int64_t workers, const InputPolicy& policy, const FeatureCache* cache,
                              bool keep_audio, bool featurise) {
  SpeechSplit split;
  split.name = name;
  const std::vector<AsrEntry> entries = read_asr_manifest(manifest, manifest_options(policy));
  SONATA_CHECK(!entries.empty(), "--", name, " manifest ", manifest, " lists no clips");
  const int64_t count = int64_t(entries.size());
  const int64_t rate = extractor.config().sample_rate;

  std::vector<std::vector<float>> audio(entries.size());
  std::vector<Tensor> features(cache ? entries.size() : 0);
  std::vector<std::vector<int64_t>> targets(entries.size());
  std::vector<std::string> transcripts(entries.size());
  std::vector<int64_t> dropped(entries.size(), 0);
  const double frame_seconds = double(extractor.config().resolved_hop_length()) / double(rate);
  const std::vector<std::string> problems = load_inputs(count, workers, policy, [&](int64_t i) {
    const AsrEntry& entry = entries[size_t(i)];
    double seconds = 0;
    if (cache) {
      // f32 stays memory-mapped; f16 is widened once here, since batches are built in f32.
      const Tensor cached = cache->features(entry.path);
      features[size_t(i)] = cached.dtype() == DType::f32 ? cached : cached.to(DType::f32);
      seconds = double(cached.size(0)) * frame_seconds;
    } else {
      Audio decoded = decode_audio(entry.path);
      audio[size_t(i)] = decoded.sample_rate == rate
                             ? std::move(decoded.samples)
                             : resample(decoded.samples, decoded.sample_rate, rate);
      seconds = double(audio[size_t(i)].size()) / double(rate);
      // Too short for one STFT frame: found here, where it can be skipped, not in log_mel.
      const FeatureConfig& config = extractor.config();
      const int64_t need = config.center ? config.n_fft / 2 + 1 : config.n_fft;
      SONATA_CHECK(int64_t(audio[size_t(i)].size()) >= need, entry.path, " holds ",
                   audio[size_t(i)].size(), " samples, fewer than the ", need,
                   " one feature frame needs");
    }
    check_duration(entry.path, seconds, policy);
    const std::string where = manifest + " line " + std::to_string(i + 1);
    const NormalisedText text = normalise(vocabulary, entry.transcript, where);
    transcripts[size_t(i)] = text.text;
    targets[size_t(i)] = vocabulary.encode(text.text);
    dropped[size_t(i)] = text.dropped;
  });
  // --bad-input skip: the bad clips leave every list, and their reasons are kept.
  split.skipped = bad_inputs(problems);
  for (const size_t i : good_inputs(problems)) {
    split.paths.push_back(entries[i].path);
    if (cache) split.features.push_back(std::move(features[i]));
    split.targets.push_back(std::move(targets[i]));
    split.transcripts.push_back(std::move(transcripts[i]));
    split.dropped_characters += dropped[i];
    const size_t kept = split.paths.size() - 1;
    if (kept != i) audio[kept] = std::move(audio[i]);  // a self-move would empty it
  }
  audio.resize(split.paths.size());
  SONATA_CHECK(!split.paths.empty(), "--", name, " manifest ", manifest, ": every clip is bad (",
               split.skipped.empty() ? std::string("none listed") : split.skipped.front(), ")");

  if (cache) {
    for (const Tensor& clip : split.features) split.seconds += double(clip.size(0)) * frame_seconds;
    return split;
  }
  std::vector<std::span<const float>> clips;
  for (const auto& samples : audio) {
    clips.emplace_back(samples);
    split.seconds += double(samples.size()) / double(rate);
  }
  if (featurise) split.features = extractor.log_mel(clips);
  if (keep_audio || !featurise) split.audio = std::move(audio);
  return split;
}

SpeechTask::SpeechTask(const TrainerOptions& options, Vocabulary vocabulary)
    : options_(options),
      vocabulary_(std::move(vocabulary)),
      extractor_(options.features.config()),
      compute_dtype_(compute_dtype(options.precision)) {
  const InputPolicy policy = input_policy(options);
  std::unique_ptr<FeatureCache> cache;
  if (!options.feature_cache.empty())
    cache = std::make_unique<FeatureCache>(options.feature_cache, extractor_.config());
  auto load = [&](const char* name, const std::string& manifest) {
    const bool train = std::string(name) == "train";
    const bool keep_audio = options.speed_perturb && train;
    // --features-on step: the training audio is featurised in each step instead.
    const bool featurise = options.features_on == "load" || !train;
    return manifest.empty()
               ? SpeechSplit{}
               : load_speech_split(name, manifest, vocabulary_, extractor_, options.workers, policy,
                                   cache.get(), keep_audio, featurise);
  };
  train_ = load("train", options.train_manifest);
  val_ = load("val", options.val_manifest);
  test_ = load("test", options.test_manifest);
  model_ = make_speech_model(options, vocabulary_.size());
}

std::vector<int64_t> SpeechTask::input_frames(const SpeechSplit& data) const {
  std::vector<int64_t> lengths;
  for (const Tensor& features : data.features) lengths.push_back(features.size(0));
  if (data.features.empty())
    for (const auto& samples : data.audio)
      lengths.push_back(extractor_.frames(int64_t(samples.size())));
  return lengths;
}

std::vector<int64_t> SpeechTask::train_lengths() const {
  return input_frames(train_);
}

DataReport SpeechTask::data_report() const {
  DataReport report;
  for (const SpeechSplit* data : {&train_, &val_, &test_}) {
    if (data->clips() == 0) continue;
    report_skipped(report, data->name, "clips", data->skipped);
    // At the recorded speed (--speed-perturb's 1.1 may shorten a clip below it some epochs).
    std::vector<int64_t> output_frames;
    for (const int64_t frames : input_frames(*data))
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
  if (options_.features_on == "step")
    return waveform_batch(train_, items, epoch, options_, extractor_);
  return batch_of(train_, items, epoch, /*training=*/true);
}

// tensors: input [N, 1, T, F] zero-padded, input lengths [N], targets concatenated, target
// lengths [N].
HostBatch SpeechTask::batch_of(const SpeechSplit& split, const std::vector<int64_t>& items,
                               int64_t epoch, bool training) const {
  const int64_t batch = int64_t(items.size());
  const int64_t mels = options_.features.n_mels;
  // --speed-perturb: each item at its (seed, epoch, item) speed, featurised here on a worker.
  std::vector<Tensor> item_features;
  for (int64_t item : items) {
    const Tensor& stored = split.features[size_t(item)];
    const double factor = speed_factor(options_, split, training, epoch, item);
    item_features.push_back(
        factor == 1.0 ? stored
                      : extractor_.log_mel(speed_perturb(split.audio[size_t(item)],
                                                         options_.features.sample_rate, factor)));
  }
  int64_t frames = 0;
  for (const Tensor& features : item_features) frames = std::max(frames, features.size(0));
  HostBatch host;
  Tensor input = zeros({batch, 1, frames, mels});
  std::vector<int64_t> input_lengths, targets, target_lengths;
  float* out = input.data<float>();
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t item = items[size_t(n)];
    const Tensor& features = item_features[size_t(n)];
    std::copy_n(features.data<float>(), features.numel(), out + n * frames * mels);
    if (training && options_.spec_augment)
      spec_augment_item(out + n * frames * mels, features.size(0), epoch, item);
    input_lengths.push_back(features.size(0));
    const auto& labels = split.targets[size_t(item)];
    targets.insert(targets.end(), labels.begin(), labels.end());
    target_lengths.push_back(int64_t(labels.size()));
    host.audio_seconds += double(features.size(0)) * double(options_.features.hop_length) /
                          double(options_.features.sample_rate);
  }
  host.items = batch;
  host.tensors = {input, from_vector(input_lengths, {batch}),
                  from_vector(targets, {int64_t(targets.size())}),
                  from_vector(target_lengths, {batch})};
  return host;
}

void SpeechTask::spec_augment_item(float* frames, int64_t count, int64_t epoch,
                                   int64_t item) const {
  Tensor view = from_blob(frames, {count, options_.features.n_mels}, DType::f32);
  spec_augment(view, spec_augment_options(options_), augment_seed(options_),
               augment_key(epoch, item));
}

Tensor SpeechTask::model_input(const HostBatch& batch, Device device) {
  Tensor input;
  {
    SONATA_NVTX_RANGE("sonata::step::host_to_device");
    input = batch.tensors[0].to(device, true);
    if (options_.features_on == "load") input = input.to(compute_dtype_);
  }
  if (options_.features_on == "step") {
    SONATA_NVTX_RANGE("sonata::step::features");
    input = step_features(input, batch, extractor_, options_).to(compute_dtype_);
  }
  return input;
}

Tensor SpeechTask::loss(const HostBatch& batch, Device device) {
  const Tensor input = model_input(batch, device);
  SONATA_NVTX_RANGE("sonata::step::forward");
  return ds2_training_loss(*model_, input, batch.tensors[1], batch.tensors[2], batch.tensors[3]);
}

EvalCounts SpeechTask::evaluate(const std::string& name, Device device, int64_t rank,
                                int64_t world) {
  const SpeechSplit& data = split(name);
  const int64_t count = int64_t(data.features.size());
  // This rank's clips, longest first, so padding is small and the first batch shows the
  // memory peak.
  std::vector<int64_t> order;
  for (int64_t i = rank; i < count; i += world) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return data.features[size_t(a)].size(0) > data.features[size_t(b)].size(0);
  });

  NoGradGuard no_grad;
  model_->eval();
  ErrorRate greedy_rate, beam_rate;
  std::map<int64_t, std::pair<std::string, std::string>> shown;  // first clips: greedy, beam
  double loss_sum = 0;
  const int64_t eval_batch = std::max<int64_t>(options_.batch_size, 16);
  const int64_t mine = int64_t(order.size());
  for (int64_t start = 0; start < mine; start += eval_batch) {
    const std::vector<int64_t> items(order.begin() + start,
                                     order.begin() + std::min(mine, start + eval_batch));
    const HostBatch batch = batch_of(data, items, 0, false);
    const Tensor input = batch.tensors[0].to(device, true).to(compute_dtype_);
    Ds2Output out = model_->forward(input, batch.tensors[1]);
    // Per-clip losses divided by their target lengths (the mean reduction's weighting).
    CtcOptions none_options = ctc_options();
    none_options.reduction = Reduction::none;
    const Tensor losses =
        ctc_loss(out.output, batch.tensors[2], out.output_lengths, batch.tensors[3], none_options)
            .to(Device::cpu());
    const auto lengths = batch.tensors[3].to_vector<int64_t>();
    const auto values = losses.to(DType::f64).to_vector<double>();
    for (size_t n = 0; n < values.size(); ++n)
      loss_sum += values[n] / double(std::max<int64_t>(lengths[n], 1));

    const Tensor log_probs = out.output.to(Device::cpu());
    const auto greedy = ctc_greedy_decode(log_probs, out.output_lengths, Vocabulary::kBlank);
    std::vector<CtcHypothesis> beams;
    if (options_.beam_width > 0)
      beams = ctc_beam_search(log_probs, out.output_lengths,
                              {.blank = Vocabulary::kBlank, .beam_width = options_.beam_width});
    for (size_t n = 0; n < items.size(); ++n) {
      const size_t item = size_t(items[n]);
      const std::string greedy_text = vocabulary_.decode(greedy[n]);
      greedy_rate.add(data.transcripts[item], greedy_text);
      std::string beam_text;
      if (!beams.empty()) {
        beam_text = vocabulary_.decode(beams[n].ids);
        beam_rate.add(data.transcripts[item], beam_text);
      }
      if (int64_t(item) < options_.show_transcripts * world)
        shown[int64_t(item)] = {greedy_text, beam_text};
    }
  }
  model_->train();

  EvalCounts counts;
  counts.sums = {{"clips", double(mine)},
                 {"loss_sum", loss_sum},
                 {"char_edits", double(greedy_rate.characters().edits)},
                 {"chars", double(greedy_rate.characters().reference_length)},
                 {"word_edits", double(greedy_rate.words().edits)},
                 {"words", double(greedy_rate.words().reference_length)},
                 {"beam_char_edits", double(beam_rate.characters().edits)},
                 {"beam_word_edits", double(beam_rate.words().edits)}};
  // This shard's first clips in manifest order, so runs can be compared by eye.
  for (const auto& [item, texts] : shown) {
    if (int64_t(counts.examples.size()) >= 3 * options_.show_transcripts) break;
    counts.examples.push_back(str("  ref:    ", data.transcripts[size_t(item)]));
    counts.examples.push_back(str("  greedy: ", texts.first));
    if (options_.beam_width > 0) counts.examples.push_back(str("  beam:   ", texts.second));
  }
  return counts;
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
  std::string text = str("ds2 (", model_->parameter_count(), " parameters), vocabulary of ",
                         vocabulary_.size(), " symbols");
  for (const SpeechSplit* data : {&train_, &val_, &test_}) {
    if (data->clips() == 0) continue;
    char hours[32];
    std::snprintf(hours, sizeof hours, "%.2f h", data->seconds / 3600.0);
    text += str("; ", data->name, " ", data->clips(), " clips, ", hours);
    if (data->dropped_characters > 0)
      text += str(" (", data->dropped_characters, " characters outside the vocabulary dropped)");
    if (!data->skipped.empty())
      text += str(" (", data->skipped.size(),
                  " bad clips skipped, the first: ", data->skipped.front(), ")");
  }
  return text;
}

LayerSequence SpeechTask::pipeline_layers() {
  return model_->pipeline_layers();
}

LayerValue SpeechTask::pipeline_input(const HostBatch& batch, Device device) {
  return {model_input(batch, device), batch.tensors[1]};
}

// The layers end in log_softmax (as forward()), so this is ctc_loss, not the fused
// ctc_loss_from_logits of loss(): equal up to rounding.
Tensor SpeechTask::pipeline_loss(const LayerValue& output, const std::vector<Tensor>& batch_tensors,
                                 Device) {
  return ctc_loss(output.x, batch_tensors[2], output.lengths, batch_tensors[3], ctc_options());
}

}  // namespace sonata
