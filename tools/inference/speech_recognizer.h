#pragma once
// Transcribing audio files with a speech-model checkpoint (DeepSpeech2, ...): each file decoded,
// resampled to the rate the model was trained at, turned into the same log-mel features as in
// training, run through the model alone (a batch of one, so no padding touches it), and decoded
// greedily or by prefix beam search into the checkpoint's vocabulary.
#include <memory>
#include <string>

#include "data/features/spectrogram.h"
#include "data/text/vocabulary.h"
#include "models/model_family.h"
#include "tools/inference/trained_checkpoint.h"

namespace sonata {

class SpeechRecognizer {
 public:
  // Refuses a checkpoint of a model that is not a speech one (require_family).
  SpeechRecognizer(const TrainedCheckpoint& checkpoint, Device device);

  // The transcript of an audio file in any format and rate decode_audio reads: greedy when
  // beam_width is 0, else the best of a prefix beam search that wide. A file that cannot be
  // decoded, or is too short for one feature frame, throws naming it.
  std::string transcribe(const std::string& path, int64_t beam_width);

  const Vocabulary& vocabulary() const { return vocabulary_; }

 private:
  Vocabulary vocabulary_;
  FeatureExtractor extractor_;
  std::shared_ptr<SpeechModel> model_;
  Device device_;
};

}  // namespace sonata
