#include "tools/inference/genre_classifier.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "base/error.h"
#include "data/audio/decode.h"
#include "data/audio/resample.h"
#include "data/datasets/image_dataset.h"
#include "data/features/image_features.h"
#include "data/image/image_file.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"

namespace sonata {
namespace {

// Slices per forward pass: bounds memory for long tracks.
constexpr int64_t kSlicesPerBatch = 16;

LabelMap checkpoint_labels(const TrainedCheckpoint& checkpoint, const std::string& command) {
  require_family(checkpoint, ModelFamily::image_classifier, command);
  return LabelMap::parse(checkpoint.text("label_map"),
                         str("the label map of '", checkpoint.path, "'"));
}

int64_t saved_integer(const TrainedCheckpoint& checkpoint, const char* key) {
  const nlohmann::json& value = checkpoint.option(key);
  SONATA_CHECK(value.is_number_integer() && value.get<int64_t>() > 0, "checkpoint '",
               checkpoint.path, "' saved ", key, " as ", value.dump(), ", not a positive integer");
  return value.get<int64_t>();
}

// The trainer's image features (ClassTask: the run's STFT and rate, --image-height mel bands
// in dB over the top 80 dB, no normalisation); the saved description is of the run's flags.
FeatureConfig image_features(const TrainedCheckpoint& checkpoint) {
  FeatureConfig config = checkpoint.features();
  config.n_mels = saved_integer(checkpoint, "image-height");
  config.log = FeatureLog::db;
  config.top_db = 80.0;
  config.normalize = FeatureNormalize::none;
  config.validate();
  return config;
}

// What the model was trained on: the checkpoint's note (ClassTask::checkpoint_notes), or
// for checkpoints written before it, the saved manifests' files while they can still be read;
// "" when neither tells.
std::string trained_inputs(const TrainedCheckpoint& checkpoint) {
  const auto note = checkpoint.state.texts.find("inputs");
  if (note != checkpoint.state.texts.end()) return note->second;
  for (const char* split : {"train", "val", "test"}) {
    const auto manifest = checkpoint.config.find(split);
    if (manifest == checkpoint.config.end() || !manifest->is_string() ||
        manifest->get<std::string>().empty())
      continue;
    try {
      // Listed files are not opened (skip_bad): only their names are looked at.
      const std::vector<ClassEntry> entries =
          class_entries(manifest->get<std::string>(), InputPolicy{.skip_bad = true});
      if (!entries.empty()) return is_image_path(entries.front().path) ? "image files" : "audio";
    } catch (const Error&) {
      // Moved or deleted since training: the next split, else no check.
    }
  }
  return "";
}

}  // namespace

GenreClassifier::GenreClassifier(const TrainedCheckpoint& checkpoint, Device device)
    : labels_(checkpoint_labels(checkpoint, "classify")),
      extractor_(image_features(checkpoint)),
      image_height_(saved_integer(checkpoint, "image-height")),
      image_width_(saved_integer(checkpoint, "image-width")),
      device_(device),
      checkpoint_path_(checkpoint.path),
      trained_inputs_(trained_inputs(checkpoint)) {
  const nlohmann::json& seconds = checkpoint.option("slice-seconds");
  SONATA_CHECK(seconds.is_number() && seconds.get<double>() > 0, "checkpoint '", checkpoint.path,
               "' saved slice-seconds as ", seconds.dump(), ", not a positive number");
  slice_seconds_ = seconds.get<double>();
  ModelConfig config = checkpoint.model_config();
  config.set("num-classes", std::to_string(labels_.size()));
  in_channels_ = config.get_int("in-channels", 3);
  // Checkpoints written before image files and CQT were trainable hold neither option: mel
  // images, and image files normalised as CCMusic's (0.5, 0.5).
  const nlohmann::json& saved = checkpoint.config;
  const std::string word = saved.value("image-features", std::string("mel"));
  const std::optional<ImageFeatures> features = mode_of_word<ImageFeatures>(word);
  SONATA_CHECK(features, "checkpoint '", checkpoint.path, "' saved image-features '", word,
               "', not ", mode_words<ImageFeatures>());
  if (features == ImageFeatures::cqt)
    cqt_ = std::make_shared<const ConstantQ>(
        CqtConfig{.sample_rate = extractor_.config().sample_rate});
  normalize_ = {saved.value("image-mean", std::vector<double>{0.5}),
                saved.value("image-std", std::vector<double>{0.5})};
  model_ = make_image_classifier(checkpoint.model, config);
  load_weights(*model_, checkpoint, device_);
}

TrackClasses GenreClassifier::classify(const std::string& path) {
  const bool image = is_image_path(path);
  const std::string kind = image ? "image files" : "audio";
  SONATA_CHECK(trained_inputs_.empty() || trained_inputs_ == kind, "'", path, "' is ",
               image ? "an image file" : "audio", ", but '", checkpoint_path_, "' was trained on ",
               trained_inputs_, ": classify gives it ", trained_inputs_, " only");
  return image ? classify_image(path) : classify_track(path);
}

void GenreClassifier::add_probabilities(const Tensor& images, std::vector<double>& out) {
  const Tensor logits = cast(model_->forward(images.to(device_)), DType::f32);
  const std::vector<double> batch =
      softmax(logits, 1).to(Device::cpu()).to(DType::f64).to_vector<double>();
  out.insert(out.end(), batch.begin(), batch.end());
}

TrackClasses GenreClassifier::classify_image(const std::string& path) {
  NoGradGuard no_grad;
  const Tensor image = image_file_item(path, in_channels_, image_height_, image_width_, normalize_,
                                       max_image_pixels_);
  std::vector<double> probabilities;
  add_probabilities(image.view({1, in_channels_, image_height_, image_width_}), probabilities);
  return {1, rank_by_slice_votes(probabilities, labels_.size())};
}

TrackClasses GenreClassifier::classify_track(const std::string& path) {
  const int64_t rate = extractor_.config().sample_rate;
  Audio audio = decode_audio(path);
  const std::vector<float> samples = audio.sample_rate == rate
                                         ? std::move(audio.samples)
                                         : resample(audio.samples, audio.sample_rate, rate);
  // As the trainer cuts tracks (ClassTask::load): whole slices; a track shorter than one slice
  // is not classified (padding it would draw a mostly silent image).
  const int64_t slice = int64_t(std::llround(slice_seconds_ * double(rate)));
  SONATA_CHECK(int64_t(samples.size()) >= slice, path, " lasts ",
               double(samples.size()) / double(rate), " s, shorter than the ", slice_seconds_,
               " s slice the model was trained on");
  const int64_t slices = int64_t(samples.size()) / slice;
  const int64_t plane = image_height_ * image_width_;

  NoGradGuard no_grad;
  std::vector<double> probabilities;
  for (int64_t first = 0; first < slices; first += kSlicesPerBatch) {
    const int64_t count = std::min(kSlicesPerBatch, slices - first);
    Tensor images = empty({count, in_channels_, image_height_, image_width_});
    for (int64_t n = 0; n < count; ++n) {
      const std::span<const float> piece(samples.data() + (first + n) * slice, size_t(slice));
      const Tensor image = cqt_ ? cqt_image(piece, *cqt_, image_height_, image_width_)
                                : spectrogram_image(piece, extractor_, image_width_);
      for (int64_t c = 0; c < in_channels_; ++c)
        std::copy_n(image.data<float>(), plane,
                    images.data<float>() + (n * in_channels_ + c) * plane);
    }
    add_probabilities(images, probabilities);
  }
  return {slices, rank_by_slice_votes(probabilities, labels_.size())};
}

}  // namespace sonata
