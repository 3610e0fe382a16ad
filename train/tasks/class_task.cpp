#include "train/tasks/class_task.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "base/nvtx.h"
#include "engine/autograd/grad_mode.h"
#include "engine/deferred_init.h"
#include "engine/ops.h"
#include "engine/ops/loss.h"
#include "models/registry.h"
#include "train/setup/precision.h"

namespace sonata {
namespace {

constexpr double kTopDb = 80.0;

const std::string& first_manifest(const ClassTaskOptions& o) {
  if (!o.train_manifest.empty()) return o.train_manifest;
  return o.val_manifest.empty() ? o.test_manifest : o.val_manifest;
}

FeatureConfig image_features(const ClassTaskOptions& o) {
  FeatureFlags flags = o.features;
  flags.n_mels = o.image_height;
  flags.log = "db";
  flags.top_db = kTopDb;
  flags.normalize = "none";
  return flags.config();
}

}  // namespace

ClassTask::ClassTask(const ClassTaskOptions& options)
    : options_(options),
      extractor_(image_features(options)),
      policy_(options.input_policy),
      batcher_(ModelConfig(options.model_config).get_int("in-channels", 3), options.image_height,
               options.image_width, options.slice_seconds, {options.brightness, options.contrast},
               options.seed + 1, options.features_on == FeaturesOn::step),
      labels_(label_map_of(class_entries(first_manifest(options), policy_))),
      compute_dtype_(compute_dtype(options.precision)) {
  in_channels_ = ModelConfig(options.model_config).get_int("in-channels", 3);  // image files
  if (options.image_features == ImageFeatures::cqt)
    cqt_ =
        std::make_shared<const ConstantQ>(CqtConfig{.sample_rate = options.features.sample_rate});
  if (!options.train_manifest.empty()) train_ = load("train", options.train_manifest);
  if (!options.val_manifest.empty()) val_ = load("val", options.val_manifest);
  if (!options.test_manifest.empty()) test_ = load("test", options.test_manifest);
  ModelConfig config(options.model_config);
  config.set("num-classes", std::to_string(labels_.size()));
  {
    DeferredInitScope deferred(options.build_deferred);
    model_ = make_image_classifier(options.model, config);
  }
  // Counted now: a pipeline stage later releases the other stages' tensors.
  parameter_count_ = model_->parameter_count();
  in_channels_ = config.get_int("in-channels", 3);
}

ImageSplit ClassTask::load(const std::string& name, const std::string& manifest) const {
  ImageSplitOptions split_options;
  split_options.sample_rate = options_.features.sample_rate;
  split_options.slice_seconds = options_.slice_seconds;
  split_options.height = options_.image_height;
  split_options.width = options_.image_width;
  split_options.channels = in_channels_;
  split_options.normalize = {options_.image_mean, options_.image_std};
  split_options.max_pixels = options_.max_image_pixels;
  split_options.jitter = {options_.brightness, options_.contrast};
  split_options.mel = &extractor_;
  split_options.cqt = cqt_.get();
  return load_image_split(name, manifest, labels_, first_manifest(options_), split_options,
                          options_.workers, policy_);
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
  // seed + 1 for the jitter, as every augmentation.
  return batcher_.training(train_, items, epoch);
}

LayerValue ClassTask::input(const HostBatch& batch, Device device) {
  Tensor images;
  {
    SONATA_NVTX_RANGE("sonata::step::host_to_device");
    images = batch[ImageBatch::image].to(device, true);
  }
  if (!batch.has(ImageBatch::augment_keys)) return {images.to(compute_dtype_), Tensor()};
  // --features-on step: prepare()'s jitter here, on the device.
  SONATA_NVTX_RANGE("sonata::step::augment");
  return {batcher_.step_jitter(images, batch).to(compute_dtype_), Tensor()};
}

std::vector<Tensor> ClassTask::targets(const HostBatch& batch) const {
  return {batch[ImageBatch::label]};
}

Tensor ClassTask::loss(const LayerValue& output, const std::vector<Tensor>& targets,
                       Device device) {
  return cross_entropy(cast(output.x, DType::f32), targets.at(0).to(device, true));
}

// An evaluation batch by batch. Whole tracks per shard (tracks rank, rank + world, ...), so each
// vote sees all its slices.
class ClassEvalPass : public EvalPass {
 public:
  ClassEvalPass(const ClassTask& task, const std::string& name, int64_t rank, int64_t world)
      : task_(task),
        data_(task.split(name)),
        rank_(rank),
        world_(world),
        classes_(int64_t(task.labels_.size())),
        eval_batch_(std::max<int64_t>(task.options_.batch_size, 16)),
        track_scores_(size_t(data_.track_count * classes_), 0.0),
        track_votes_(size_t(data_.track_count * classes_), 0),
        confusion_(size_t(classes_ * classes_), 0) {
    for (int64_t i = 0; i < int64_t(data_.images.size()); ++i)
      if (data_.tracks[size_t(i)] % world == rank) mine_.push_back(i);
  }

  int64_t batch_count() const override {
    return (int64_t(mine_.size()) + eval_batch_ - 1) / eval_batch_;
  }

  HostBatch batch(int64_t index) const override {
    return task_.batcher_.batch(data_, items(index));
  }

  void add(const LayerValue& output, const HostBatch& batch) override {
    const std::vector<int64_t> slices = items(added_++);
    const Tensor logits = cast(output.x, DType::f32);
    loss_sum_ += cross_entropy(logits, batch[ImageBatch::label].to(logits.device(), true), Tensor(),
                               {.reduction = Reduction::sum})
                     .item();
    const auto probabilities =
        softmax(logits, 1).to(Device::cpu()).to(DType::f64).to_vector<double>();
    for (size_t n = 0; n < slices.size(); ++n) {
      const double* row = probabilities.data() + n * size_t(classes_);
      const int64_t best = int64_t(std::max_element(row, row + classes_) - row);
      const int64_t label = data_.labels[size_t(slices[n])];
      correct_ += best == label;
      ++confusion_[size_t(label * classes_ + best)];
      const int64_t track = data_.tracks[size_t(slices[n])];
      ++track_votes_[size_t(track * classes_ + best)];
      for (int64_t c = 0; c < classes_; ++c) track_scores_[size_t(track * classes_ + c)] += row[c];
    }
  }

  EvalCounts finish() override {
    const int64_t classes = classes_;
    // Majority vote per track; a tie goes to the class with the larger summed probability.
    std::vector<int64_t> track_label(size_t(data_.track_count), -1);
    for (const int64_t i : mine_)
      track_label[size_t(data_.tracks[size_t(i)])] = data_.labels[size_t(i)];
    int64_t tracks = 0, tracks_correct = 0;
    for (int64_t t = rank_; t < data_.track_count; t += world_) {
      if (track_label[size_t(t)] < 0) continue;
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c) {
        const int64_t votes = track_votes_[size_t(t * classes + c)];
        const int64_t best_votes = track_votes_[size_t(t * classes + best)];
        if (votes > best_votes ||
            (votes == best_votes &&
             track_scores_[size_t(t * classes + c)] > track_scores_[size_t(t * classes + best)]))
          best = c;
      }
      ++tracks;
      tracks_correct += best == track_label[size_t(t)];
    }
    EvalCounts counts;
    counts.sums = {{"slices", double(mine_.size())},
                   {"loss_sum", loss_sum_},
                   {"correct", double(correct_)},
                   {"tracks", double(tracks)},
                   {"tracks_correct", double(tracks_correct)}};
    for (int64_t t = 0; t < classes; ++t)
      for (int64_t c = 0; c < classes; ++c)
        counts.sums[str("confusion.", t, ".", c)] = double(confusion_[size_t(t * classes + c)]);
    return counts;
  }

 private:
  std::vector<int64_t> items(int64_t index) const {
    const int64_t count = int64_t(mine_.size());
    return {mine_.begin() + index * eval_batch_,
            mine_.begin() + std::min(count, (index + 1) * eval_batch_)};
  }

  const ClassTask& task_;
  const ImageSplit& data_;
  int64_t rank_, world_, classes_, eval_batch_, added_ = 0;
  std::vector<int64_t> mine_;
  std::vector<double> track_scores_;
  std::vector<int64_t> track_votes_;
  std::vector<int64_t> confusion_;  // [true][predicted]
  double loss_sum_ = 0;
  int64_t correct_ = 0;
};

std::unique_ptr<EvalPass> ClassTask::eval_pass(const std::string& name, int64_t rank,
                                               int64_t world) {
  return std::make_unique<ClassEvalPass>(*this, name, rank, world);
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

std::map<std::string, std::string> ClassTask::checkpoint_notes() const {
  // An image file's item is [C, H, W], an audio slice's [H, W] (ImageSplit).
  for (const ImageSplit* data : {&train_, &val_, &test_})
    if (!data->images.empty())
      return {{"inputs", data->images.front().dim() == 3 ? "image files" : "audio"}};
  return {};
}

std::string ClassTask::describe() const {
  std::string text =
      str(options_.model, " (", parameter_count_, " parameters), ", labels_.size(), " classes");
  for (const ImageSplit* data : {&train_, &val_, &test_}) {
    if (data->images.empty()) continue;
    text +=
        str("; ", data->name, " ", data->track_count, " tracks, ", data->images.size(), " slices");
    text += skipped_text(data->skipped, data->too_long, "tracks", policy_);
  }
  return text;
}

DataReport ClassTask::data_report() const {
  DataReport report;
  for (const ImageSplit* data : {&train_, &val_, &test_})
    if (!data->name.empty()) {
      report_skipped(report, data->name, "tracks", data->skipped);
      report_too_long(report, data->name, data->too_long, policy_);
    }
  return report;
}

}  // namespace sonata
