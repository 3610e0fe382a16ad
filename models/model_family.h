#pragma once
// The model families: what the trainer and the inference tools may ask of a model, whatever
// its architecture. A family is one task (train/tasks/): speech models are trained with CTC
// on feature sequences (SpeechTask, transcribe), image classifiers with cross-entropy on
// images (ClassTask, classify). Every model of a registry row (models/registry.h) derives from
// its family's interface here, so a new model of an existing family needs nothing outside
// models/ and its tests.
#include <cstdint>

#include "engine/nn/layer_sequence.h"
#include "engine/nn/module.h"
#include "engine/tensor.h"

namespace sonata {

enum class ModelFamily {
  // SpeechModel. The task sets the registry keys "num-mels" (the features' width) and
  // "num-classes" (the vocabulary's size).
  speech,
  // ImageClassifier. The task sets "num-classes" (the label map's size) and reads
  // "in-channels" (default 3) to build the images.
  image_classifier,
};

// "speech model" | "image classifier": for messages.
const char* family_name(ModelFamily family);

// A model is its ordered layers (engine/nn/layer_sequence.h): forward runs all of them, a
// pipeline stage a range. They refer to the model, which is not copyable.
class LayeredModel : public Module {
 public:
  virtual const LayerSequence& layers() const = 0;
  // The same layers, copied for the pipeline runtime and the benchmarks.
  LayerSequence pipeline_layers() const { return layers(); }
};

struct SpeechOutput {
  Tensor output;          // [T', N, C]: log-probabilities, or logits from forward_logits
  Tensor output_lengths;  // i64 CPU [N]: each sample's valid frames of the output
};

// A CTC acoustic model over features [N, 1, T, F] with per-sample lengths; its layers run on
// the LayerValue {features, lengths} and end in log-probabilities [T', N, C].
class SpeechModel : public LayeredModel {
 public:
  using Module::forward;
  // lengths i64 or i32 [N] with values in [0, T] (undefined: all T).
  virtual SpeechOutput forward(const Tensor& x, const Tensor& lengths) = 0;
  // The same before log_softmax, for ctc_loss_from_logits.
  virtual SpeechOutput forward_logits(const Tensor& x, const Tensor& lengths) = 0;
  // layers() ending at the logits: the same layers, the last without its log_softmax
  // (speech_log_probabilities). forward_logits runs them all. What the trainer's task trains
  // and evaluates through, in one process and in a pipeline alike, so that its loss fuses
  // log_softmax with CTC (ctc_loss_from_logits) in both.
  virtual const LayerSequence& logit_layers() const = 0;
  // Output frames for `frames` input frames (CTC needs at least as many as labels).
  virtual int64_t output_frames(int64_t frames) const = 0;
};

// The log_softmax over the classes of a speech model's logits [T', N, C] that ends its
// forward(); half-precision logits are normalised in f32, as the peer's
// .float().log_softmax(-1).
Tensor speech_log_probabilities(const Tensor& logits);

// An image classifier: images [N, in-channels, H, W] to logits [N, num-classes]; its layers
// run on the LayerValue {images, undefined lengths}.
class ImageClassifier : public LayeredModel {};

}  // namespace sonata
