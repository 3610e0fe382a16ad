#include "tools/inference/speech_recognizer.h"

#include "base/error.h"
#include "data/audio/decode.h"
#include "data/audio/resample.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "models/ctc_decode.h"

namespace sonata {
namespace {

Vocabulary checkpoint_vocabulary(const TrainedCheckpoint& checkpoint, const std::string& command) {
  require_family(checkpoint, ModelFamily::speech, command);
  return Vocabulary::parse(checkpoint.text("vocabulary"),
                           str("the vocabulary of '", checkpoint.path, "'"));
}

// As the trainer builds it (train/tasks/speech_task.cpp): the saved model options, the
// features' mel bands as its input width, the vocabulary as its classes.
std::shared_ptr<SpeechModel> make_recognizer_model(const TrainedCheckpoint& checkpoint,
                                                   const FeatureConfig& features, int64_t classes) {
  ModelConfig config = checkpoint.model_config();
  config.set("num-mels", std::to_string(features.n_mels));
  config.set("num-classes", std::to_string(classes));
  return make_speech_model(checkpoint.model, config);
}

}  // namespace

SpeechRecognizer::SpeechRecognizer(const TrainedCheckpoint& checkpoint, Device device)
    : vocabulary_(checkpoint_vocabulary(checkpoint, "transcribe")),
      extractor_(checkpoint.features()),
      model_(make_recognizer_model(checkpoint, extractor_.config(), vocabulary_.size())),
      device_(device) {
  load_weights(*model_, checkpoint, device_);
}

std::string SpeechRecognizer::transcribe(const std::string& path, int64_t beam_width) {
  SONATA_CHECK(beam_width >= 0, "--beam-width must not be negative, got ", beam_width);
  const int64_t rate = extractor_.config().sample_rate;
  Audio audio = decode_audio(path);
  const std::vector<float> samples = audio.sample_rate == rate
                                         ? std::move(audio.samples)
                                         : resample(audio.samples, audio.sample_rate, rate);
  const FeatureConfig& config = extractor_.config();
  const int64_t need = config.center ? config.n_fft / 2 + 1 : config.n_fft;
  SONATA_CHECK(int64_t(samples.size()) >= need, path, " holds ", samples.size(), " samples at ",
               rate, " Hz, fewer than the ", need, " one feature frame needs");
  const Tensor features = extractor_.log_mel(samples);  // [frames, n_mels]
  const int64_t frames = features.size(0);

  NoGradGuard no_grad;
  const Tensor input = features.reshape({1, 1, frames, features.size(1)}).to(device_);
  const SpeechOutput out = model_->forward(input, from_vector(std::vector<int64_t>{frames}, {1}));
  const Tensor log_probs = out.output.to(Device::cpu());
  if (beam_width == 0)
    return vocabulary_.decode(
        ctc_greedy_decode(log_probs, out.output_lengths, Vocabulary::kBlank).front());
  return vocabulary_.decode(ctc_beam_search(log_probs, out.output_lengths,
                                            {.blank = Vocabulary::kBlank, .beam_width = beam_width})
                                .front()
                                .ids);
}

}  // namespace sonata
