#include "tools/inference/genre_classifier.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "data/audio/decode.h"
#include "data/audio/resample.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "tools/trainer/class_task.h"

namespace sonata {
namespace {

// Slices per forward pass: bounds memory for long tracks.
constexpr int64_t kSlicesPerBatch = 16;

LabelMap checkpoint_labels(const TrainedCheckpoint& checkpoint, const std::string& command) {
  require_model(checkpoint, "vgg19_bn", command);
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

}  // namespace

GenreClassifier::GenreClassifier(const TrainedCheckpoint& checkpoint, Device device)
    : labels_(checkpoint_labels(checkpoint, "classify")),
      extractor_(image_features(checkpoint)),
      image_width_(saved_integer(checkpoint, "image-width")),
      device_(device) {
  const nlohmann::json& seconds = checkpoint.option("slice-seconds");
  SONATA_CHECK(seconds.is_number() && seconds.get<double>() > 0, "checkpoint '", checkpoint.path,
               "' saved slice-seconds as ", seconds.dump(), ", not a positive number");
  slice_seconds_ = seconds.get<double>();
  ModelConfig config = checkpoint.model_config();
  config.set("num-classes", std::to_string(labels_.size()));
  in_channels_ = config.get_int("in-channels", 3);
  model_ = make_model("vgg19_bn", config);
  load_weights(*model_, checkpoint, device_);
}

TrackClasses GenreClassifier::classify(const std::string& path) {
  const int64_t rate = extractor_.config().sample_rate;
  Audio audio = decode_audio(path);
  std::vector<float> samples = audio.sample_rate == rate
                                   ? std::move(audio.samples)
                                   : resample(audio.samples, audio.sample_rate, rate);
  // As the trainer cuts tracks (ClassTask::load): whole slices, a short track padded to one.
  const int64_t slice = int64_t(std::llround(slice_seconds_ * double(rate)));
  if (int64_t(samples.size()) < slice) samples.resize(size_t(slice), 0.0f);
  const int64_t slices = int64_t(samples.size()) / slice;
  const int64_t height = extractor_.config().n_mels, plane = height * image_width_;
  const int64_t classes = labels_.size();

  NoGradGuard no_grad;
  std::vector<double> probabilities;
  for (int64_t first = 0; first < slices; first += kSlicesPerBatch) {
    const int64_t count = std::min(kSlicesPerBatch, slices - first);
    Tensor images = empty({count, in_channels_, height, image_width_});
    for (int64_t n = 0; n < count; ++n) {
      const Tensor image = spectrogram_image(
          std::span<const float>(samples.data() + (first + n) * slice, size_t(slice)), extractor_,
          image_width_);
      for (int64_t c = 0; c < in_channels_; ++c)
        std::copy_n(image.data<float>(), plane,
                    images.data<float>() + (n * in_channels_ + c) * plane);
    }
    const Tensor logits = cast(model_->forward(images.to(device_)), DType::f32);
    const std::vector<double> batch =
        softmax(logits, 1).to(Device::cpu()).to(DType::f64).to_vector<double>();
    probabilities.insert(probabilities.end(), batch.begin(), batch.end());
  }
  return {slices, rank_by_slice_votes(probabilities, classes)};
}

}  // namespace sonata
