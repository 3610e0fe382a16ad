#include "tools/trainer/class_task.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "base/nvtx.h"
#include "data/audio/decode.h"
#include "data/audio/resample.h"
#include "data/augment/augment_key.h"
#include "data/augment/image_jitter.h"
#include "data/image/image_file.h"
#include "data/image/image_resize.h"
#include "data/manifest/class_manifest.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/ops/loss.h"
#include "models/registry.h"
#include "models/vgg.h"
#include "tools/trainer/precision.h"

namespace sonata {
namespace {

constexpr double kTopDb = 80.0;

std::vector<ClassEntry> entries_of(const std::string& path, const InputPolicy& policy) {
  return std::filesystem::is_directory(path) ? scan_class_folders(path)
                                             : read_class_manifest(path, manifest_options(policy));
}

const std::string& first_manifest(const TrainerOptions& o) {
  if (!o.train_manifest.empty()) return o.train_manifest;
  return o.val_manifest.empty() ? o.test_manifest : o.val_manifest;
}

FeatureConfig image_features(const TrainerOptions& o) {
  FeatureFlags flags = o.features;
  flags.n_mels = o.image_height;
  flags.log = "db";
  flags.top_db = kTopDb;
  flags.normalize = "none";
  return flags.config();
}

}  // namespace

Tensor spectrogram_image(std::span<const float> slice, const FeatureExtractor& extractor,
                         int64_t width) {
  const Tensor mel = extractor.log_mel(slice);  // [frames, H] in dB, floored at max - 80
  const int64_t frames = mel.size(0), height = mel.size(1);
  const float* db = mel.data<float>();
  const float peak = *std::max_element(db, db + mel.numel());
  Tensor image = empty({height, width});
  float* out = image.data<float>();
  // Linear resize along time with half-pixel centres (align_corners = False).
  const double scale = double(frames) / double(width);
  for (int64_t x = 0; x < width; ++x) {
    const double source = std::clamp((double(x) + 0.5) * scale - 0.5, 0.0, double(frames - 1));
    const int64_t left = int64_t(source);
    const int64_t right = std::min(left + 1, frames - 1);
    const double t = source - double(left);
    for (int64_t y = 0; y < height; ++y) {
      const double value = (1 - t) * db[left * height + y] + t * db[right * height + y];
      // Top row is the highest band, as an image of the spectrogram is drawn.
      const double unit = std::clamp((value - (peak - kTopDb)) / kTopDb, 0.0, 1.0);
      out[(height - 1 - y) * width + x] = float((unit - 0.5) / 0.5);
    }
  }
  return image;
}

Tensor cqt_image(std::span<const float> slice, const ConstantQ& cqt, int64_t height,
                 int64_t width) {
  const Tensor db = cqt.db(slice);  // [bins, frames], in [-top_db, 0]
  const int64_t bins = db.size(0), frames = db.size(1);
  const double top_db = cqt.config().top_db > 0 ? cqt.config().top_db : kTopDb;
  Tensor flipped = empty({1, bins, frames});
  const float* in = db.data<float>();
  float* out = flipped.data<float>();
  for (int64_t k = 0; k < bins; ++k)
    for (int64_t t = 0; t < frames; ++t)
      out[(bins - 1 - k) * frames + t] =
          float(std::clamp((double(in[k * frames + t]) + top_db) / top_db, 0.0, 1.0));
  Tensor image = resize_bilinear(flipped, height, width);
  normalize_image(image, {{0.5}, {0.5}});
  return image.view({height, width});
}

Tensor image_file_item(const std::string& path, int64_t channels, int64_t height, int64_t width,
                       const ImageNormalize& normalize) {
  Tensor image = resize_bilinear(read_image(path, channels), height, width);
  normalize_image(image, normalize);
  return image;
}

ClassTask::ClassTask(const TrainerOptions& options)
    : options_(options),
      extractor_(image_features(options)),
      policy_(input_policy(options)),
      labels_(label_map_of(entries_of(first_manifest(options), policy_))),
      compute_dtype_(compute_dtype(options.precision)) {
  in_channels_ = ModelConfig(options.model_config).get_int("in-channels", 3);  // image files
  if (options.image_features == "cqt")
    cqt_ =
        std::make_shared<const ConstantQ>(CqtConfig{.sample_rate = options.features.sample_rate});
  if (!options.train_manifest.empty()) train_ = load("train", options.train_manifest);
  if (!options.val_manifest.empty()) val_ = load("val", options.val_manifest);
  if (!options.test_manifest.empty()) test_ = load("test", options.test_manifest);
  ModelConfig config(options.model_config);
  config.set("num-classes", std::to_string(labels_.size()));
  model_ = make_model("vgg19_bn", config);
  in_channels_ = config.get_int("in-channels", 3);
}

void ClassTask::check_image_split(const std::string& name, const std::string& manifest,
                                  int64_t image_files, int64_t entries) const {
  SONATA_CHECK(image_files == 0 || image_files == entries, "--", name, " ", manifest, " mixes ",
               image_files, " image files with ", entries - image_files,
               " audio files; one split holds one kind");
  if (image_files == 0) return;
  SONATA_CHECK(options_.brightness == 0 && options_.contrast == 0,
               "--brightness and --contrast apply to spectrogram images of audio, not to the "
               "image files of --",
               name, " ", manifest);
  check_image_normalize({options_.image_mean, options_.image_std}, in_channels_,
                        "--image-mean / --image-std");
}

ImageSplit ClassTask::load(const std::string& name, const std::string& manifest) const {
  const std::vector<ClassEntry> entries = entries_of(manifest, policy_);
  SONATA_CHECK(!entries.empty(), "--", name, " ", manifest, " lists no tracks");
  // A label outside the map is a mistake in the manifests, not a bad track: it always stops.
  std::vector<int64_t> labels;
  for (const ClassEntry& entry : entries) {
    const auto label = labels_.find(entry.label);
    SONATA_CHECK(label.has_value(), manifest, ": label '", entry.label, "' of ", entry.path,
                 " is not among the ", labels_.size(), " labels of ", first_manifest(options_));
    labels.push_back(*label);
  }
  const int64_t rate = options_.features.sample_rate;
  const int64_t slice = int64_t(std::llround(options_.slice_seconds * double(rate)));
  const int64_t image_files = std::count_if(
      entries.begin(), entries.end(), [](const ClassEntry& e) { return is_image_path(e.path); });
  check_image_split(name, manifest, image_files, int64_t(entries.size()));
  const ImageNormalize normalize{options_.image_mean, options_.image_std};
  std::vector<std::vector<Tensor>> images(entries.size());
  std::vector<double> seconds(entries.size());
  const std::vector<std::string> problems =
      load_inputs(int64_t(entries.size()), options_.workers, policy_, [&](int64_t i) {
        const ClassEntry& entry = entries[size_t(i)];
        if (image_files > 0) {
          images[size_t(i)].push_back(image_file_item(
              entry.path, in_channels_, options_.image_height, options_.image_width, normalize));
          return;
        }
        Audio decoded = decode_audio(entry.path);
        const std::vector<float> audio = decoded.sample_rate == rate
                                             ? std::move(decoded.samples)
                                             : resample(decoded.samples, decoded.sample_rate, rate);
        seconds[size_t(i)] = double(audio.size()) / double(rate);
        // Padding a short track to a slice would make a mostly silent image the model learns
        // as the track's class.
        SONATA_CHECK(int64_t(audio.size()) >= slice, entry.path, " lasts ", seconds[size_t(i)],
                     " s, shorter than one --slice-seconds ", options_.slice_seconds, " slice");
        check_duration(entry.path, seconds[size_t(i)], policy_);
        for (int64_t start = 0; start + slice <= int64_t(audio.size()); start += slice) {
          const std::span<const float> piece(audio.data() + start, size_t(slice));
          images[size_t(i)].push_back(
              cqt_ ? cqt_image(piece, *cqt_, options_.image_height, options_.image_width)
                   : spectrogram_image(piece, extractor_, options_.image_width));
        }
      });
  ImageSplit split;
  split.name = name;
  split.skipped = bad_inputs(problems);
  for (const size_t i : good_inputs(problems)) {
    for (Tensor& image : images[i]) {
      split.images.push_back(std::move(image));
      split.labels.push_back(labels[i]);
      split.tracks.push_back(split.track_count);
    }
    ++split.track_count;
    split.seconds += seconds[i];
  }
  SONATA_CHECK(split.track_count > 0, "--", name, " ", manifest, ": every track is bad (",
               split.skipped.front(), ")");
  return split;
}

std::vector<int64_t> ClassTask::train_lengths() const {
  return std::vector<int64_t>(train_.images.size(), 1);
}

SamplingKind ClassTask::sampling() const {
  return options_.class_balanced ? SamplingKind::class_balanced : SamplingKind::uniform;
}

const ImageSplit& ClassTask::split(const std::string& name) const {
  if (name == "train") return train_;
  if (name == "val") return val_;
  SONATA_CHECK(name == "test", "no split named '", name, "'");
  return test_;
}

bool ClassTask::has_split(const std::string& name) const {
  return !split(name).images.empty();
}

HostBatch ClassTask::prepare(const std::vector<int64_t>& items, int64_t epoch) const {
  HostBatch host = batch_of(train_, items);
  const ImageJitter jitter{options_.brightness, options_.contrast};
  if (jitter.brightness == 0 && jitter.contrast == 0) return host;
  if (options_.features_on == "step") {
    // The jitter runs on the device in loss(), keyed by these (their bits as i64).
    std::vector<int64_t> keys;
    for (const int64_t item : items) keys.push_back(int64_t(augment_key(epoch, item)));
    host.tensors.push_back(from_vector(keys, {int64_t(items.size())}));
    return host;
  }
  // One draw per image, the same for its replicated channels; seed + 1 as every augmentation.
  const int64_t plane = options_.image_height * options_.image_width;
  float* images = host.tensors[0].data<float>();
  for (size_t n = 0; n < items.size(); ++n) {
    float* first = images + int64_t(n) * in_channels_ * plane;
    image_jitter(std::span<float>(first, size_t(plane)), jitter, options_.seed + 1,
                 augment_key(epoch, items[n]));
    for (int64_t c = 1; c < in_channels_; ++c) std::copy_n(first, plane, first + c * plane);
  }
  return host;
}

// tensors: images [N, C, H, W], labels i64 [N].
HostBatch ClassTask::batch_of(const ImageSplit& data, const std::vector<int64_t>& items) const {
  const int64_t batch = int64_t(items.size());
  const int64_t height = options_.image_height, width = options_.image_width;
  Tensor images = empty({batch, in_channels_, height, width});
  float* out = images.data<float>();
  std::vector<int64_t> labels;
  for (int64_t n = 0; n < batch; ++n) {
    const Tensor& item = data.images[size_t(items[size_t(n)])];
    const float* image = item.data<float>();
    // A spectrogram plane is replicated to the channels; an image file has them all.
    const bool all_channels = item.numel() == in_channels_ * height * width;
    for (int64_t c = 0; c < in_channels_; ++c)
      std::copy_n(image + (all_channels ? c * height * width : 0), height * width,
                  out + (n * in_channels_ + c) * height * width);
    labels.push_back(data.labels[size_t(items[size_t(n)])]);
  }
  HostBatch host;
  host.items = batch;
  host.audio_seconds = double(batch) * options_.slice_seconds;
  host.tensors = {images, from_vector(labels, {batch})};
  return host;
}

Tensor ClassTask::model_input(const HostBatch& batch, Device device) const {
  Tensor images;
  {
    SONATA_NVTX_RANGE("sonata::step::host_to_device");
    images = batch.tensors[0].to(device, true);
    if (batch.tensors.size() == 2) images = images.to(compute_dtype_);
  }
  if (batch.tensors.size() > 2) {
    // --features-on step: prepare()'s jitter here, on the device: one draw per image, made on
    // its first channel and copied to the others.
    SONATA_NVTX_RANGE("sonata::step::augment");
    std::vector<uint64_t> keys;
    for (const int64_t key : batch.tensors[2].to_vector<int64_t>()) keys.push_back(uint64_t(key));
    const Tensor first = image_jitter_batch(
        images.slice(1, 0, 1), {options_.brightness, options_.contrast}, options_.seed + 1, keys);
    images = first.expand({-1, in_channels_, -1, -1}).contiguous().to(compute_dtype_);
  }
  return images;
}

Tensor ClassTask::loss(const HostBatch& batch, Device device) {
  const Tensor images = model_input(batch, device);
  const Tensor labels = batch.tensors[1].to(device, true);
  SONATA_NVTX_RANGE("sonata::step::forward");
  const Tensor logits = model_->forward(images);
  return cross_entropy(cast(logits, DType::f32), labels);
}

EvalCounts ClassTask::evaluate(const std::string& name, Device device, int64_t rank,
                               int64_t world) {
  const ImageSplit& data = split(name);
  const int64_t classes = labels_.size();
  // Whole tracks per rank (tracks rank, rank + world, ...), so each vote sees all its slices.
  std::vector<int64_t> mine;
  for (int64_t i = 0; i < int64_t(data.images.size()); ++i)
    if (data.tracks[size_t(i)] % world == rank) mine.push_back(i);
  NoGradGuard no_grad;
  model_->eval();
  std::vector<double> track_scores(size_t(data.track_count * classes), 0.0);
  std::vector<int64_t> track_votes(size_t(data.track_count * classes), 0);
  std::vector<int64_t> confusion(size_t(classes * classes), 0);  // [true][predicted]
  double loss_sum = 0;
  int64_t correct = 0;
  const int64_t eval_batch = std::max<int64_t>(options_.batch_size, 16);
  for (size_t start = 0; start < mine.size(); start += size_t(eval_batch)) {
    const std::vector<int64_t> items(
        mine.begin() + start, mine.begin() + std::min(mine.size(), start + size_t(eval_batch)));
    const HostBatch batch = batch_of(data, items);
    const Tensor images = batch.tensors[0].to(device, true).to(compute_dtype_);
    const Tensor logits = cast(model_->forward(images), DType::f32);
    loss_sum += cross_entropy(logits, batch.tensors[1].to(device, true), Tensor(),
                              {.reduction = Reduction::sum})
                    .item();
    const auto probabilities =
        softmax(logits, 1).to(Device::cpu()).to(DType::f64).to_vector<double>();
    for (size_t n = 0; n < items.size(); ++n) {
      const double* row = probabilities.data() + n * size_t(classes);
      const int64_t best = int64_t(std::max_element(row, row + classes) - row);
      const int64_t label = data.labels[size_t(items[n])];
      correct += best == label;
      ++confusion[size_t(label * classes + best)];
      const int64_t track = data.tracks[size_t(items[n])];
      ++track_votes[size_t(track * classes + best)];
      for (int64_t c = 0; c < classes; ++c) track_scores[size_t(track * classes + c)] += row[c];
    }
  }
  model_->train();

  // Majority vote per track; a tie goes to the class with the larger summed probability.
  std::vector<int64_t> track_label(size_t(data.track_count), -1);
  for (const int64_t i : mine) track_label[size_t(data.tracks[size_t(i)])] = data.labels[size_t(i)];
  int64_t tracks = 0, tracks_correct = 0;
  for (int64_t t = rank; t < data.track_count; t += world) {
    if (track_label[size_t(t)] < 0) continue;
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) {
      const int64_t votes = track_votes[size_t(t * classes + c)];
      const int64_t best_votes = track_votes[size_t(t * classes + best)];
      if (votes > best_votes ||
          (votes == best_votes &&
           track_scores[size_t(t * classes + c)] > track_scores[size_t(t * classes + best)]))
        best = c;
    }
    ++tracks;
    tracks_correct += best == track_label[size_t(t)];
  }

  EvalCounts counts;
  counts.sums = {{"slices", double(mine.size())},
                 {"loss_sum", loss_sum},
                 {"correct", double(correct)},
                 {"tracks", double(tracks)},
                 {"tracks_correct", double(tracks_correct)}};
  for (int64_t t = 0; t < classes; ++t)
    for (int64_t c = 0; c < classes; ++c)
      counts.sums[str("confusion.", t, ".", c)] = double(confusion[size_t(t * classes + c)]);
  return counts;
}

EvalResult ClassTask::summarize(const EvalCounts& totals) const {
  const auto& sum = totals.sums;
  const int64_t classes = labels_.size();
  EvalResult result;
  result.metrics["loss"] = sum.at("loss_sum") / std::max(sum.at("slices"), 1.0);
  result.metrics["accuracy"] = sum.at("correct") / std::max(sum.at("slices"), 1.0);
  result.metrics["track_accuracy"] = sum.at("tracks_correct") / std::max(sum.at("tracks"), 1.0);
  size_t label_width = 4;
  for (const std::string& label : labels_.labels())
    label_width = std::max(label_width, label.size());
  result.report.push_back("  confusion matrix (rows: true class; columns: predicted class)");
  std::string header = str("  ", std::string(label_width + 3, ' '));
  for (int64_t c = 0; c < classes; ++c) {
    char cell[24];
    std::snprintf(cell, sizeof cell, "%5lld", (long long)c);
    header += cell;
  }
  result.report.push_back(header);
  for (int64_t t = 0; t < classes; ++t) {
    std::string line = labels_.label(t);
    line.resize(label_width, ' ');
    char index[24];
    std::snprintf(index, sizeof index, "%2lld", (long long)t);
    line = str("  ", index, " ", line);
    for (int64_t c = 0; c < classes; ++c) {
      char cell[24];
      std::snprintf(cell, sizeof cell, "%5lld", (long long)sum.at(str("confusion.", t, ".", c)));
      line += cell;
    }
    result.report.push_back(line);
  }
  return result;
}

std::map<std::string, std::string> ClassTask::checkpoint_texts() const {
  return {{"label_map", labels_.to_json()}};
}

std::string ClassTask::describe() const {
  std::string text =
      str("vgg19_bn (", model_->parameter_count(), " parameters), ", labels_.size(), " classes");
  for (const ImageSplit* data : {&train_, &val_, &test_}) {
    if (data->images.empty()) continue;
    text +=
        str("; ", data->name, " ", data->track_count, " tracks, ", data->images.size(), " slices");
    if (!data->skipped.empty()) text += str(" (", data->skipped.size(), " bad tracks skipped)");
  }
  return text;
}

DataReport ClassTask::data_report() const {
  DataReport report;
  for (const ImageSplit* data : {&train_, &val_, &test_})
    if (!data->name.empty()) report_skipped(report, data->name, "tracks", data->skipped);
  return report;
}

LayerSequence ClassTask::pipeline_layers() {
  const auto vgg = std::dynamic_pointer_cast<Vgg>(model_);
  SONATA_CHECK(vgg, "--pipeline-stages: the classification model is not a Vgg");
  return vgg->pipeline_layers();
}

LayerValue ClassTask::pipeline_input(const HostBatch& batch, Device device) {
  return {model_input(batch, device), Tensor()};
}

Tensor ClassTask::pipeline_loss(const LayerValue& output, const std::vector<Tensor>& batch_tensors,
                                Device device) {
  return cross_entropy(cast(output.x, DType::f32), batch_tensors[1].to(device, true));
}

}  // namespace sonata
