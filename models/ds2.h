#pragma once
// DeepSpeech2, by default exactly the DS2-small of bench/peer_torch.py (the PyTorch peer):
//   conv: Conv2d(1, 32, (11, 41), stride (2, 2), padding (5, 20)), BatchNorm2d, Hardtanh(0, 20),
//         Conv2d(32, 32, (11, 21), stride (1, 2), padding (5, 10)), BatchNorm2d, Hardtanh(0, 20)
//   over log-mel input [N, 1, T, F = 80]; its output [N, 32, T', F'] becomes [T', N, 32 * F'];
//   rnn:  LSTM(32 * 20, 256, 3 layers, bidirectional, directions concatenated);
//   fc:   Linear(512, 29); log_softmax over the classes.
// State-dict names are that torch module's (conv.0.weight, conv.1.running_mean,
// rnn.weight_ih_l0_reverse, fc.weight, ...), so its weights load unchanged.
//
// Options: the RNN may be a GRU, of any size and depth, unidirectional, with the directions
// summed instead of concatenated, and with sequence-wise BatchNorm1d over the input of every
// RNN layer after the first. Summing and BatchNorm act between layers, so with either one
// each layer is its own module as in deepspeech.pytorch's BatchRNN stack: rnns.{k}.bn.*
// (k >= 1) and rnns.{k}.rnn.weight_ih_l0..., and the sum is taken after every layer (the next
// layer reads H features, and fc is Linear(H, C)).
//
// Ragged batches: by default (mask_padding) every sample's padded frames are zeroed at the
// input and each BatchNorm2d is masked_batch_norm over the valid frames of its conv's output
// (statistics of the valid frames alone, 0 on padding; Hardtanh(0, 20) keeps the 0), so the
// next conv reads zeros past each sample's end, as it reads its own zero padding past the
// longest one: the output on the valid frames, the loss and every gradient are the same
// whether the batch was padded to its longest clip or to a multiple of 8 frames
// (deepspeech.pytorch's MaskConv zeroes the same frames, but its BatchNorm2d still counts
// them). The sequence-wise BatchNorm1d of seq_batch_norm is masked to the valid frames alike.
// With mask_padding off the convs run over the padded batch as it is, as
// bench/peer_train_speech.py's torch model does: the padding enters the batch statistics and
// the last valid frames see padded neighbours. The RNN then takes each sample's output length
// (pack_padded_sequence semantics), and frames past it give 0 to fc.
#include <memory>
#include <vector>

#include "engine/nn/layer_sequence.h"
#include "engine/nn/module.h"
#include "models/layers/batch_rnn.h"
#include "models/layers/linear.h"
#include "models/model_family.h"
#include "models/registry.h"

namespace sonata {

struct Ds2Options {
  int64_t num_mels = 80;
  int64_t num_classes = 29;    // blank, space, apostrophe, a-z
  int64_t conv_channels = 32;  // of both convolutions; small models (the demo) use fewer
  int64_t hidden = 256;
  int64_t layers = 3;
  RnnKind rnn = RnnKind::lstm;
  bool bidirectional = true;
  bool sum_directions = false;
  bool seq_batch_norm = false;
  bool mask_padding = true;  // the convs' BatchNorm over valid frames only (above)
};

using Ds2Output = SpeechOutput;

// A model of the speech family (models/model_family.h).
class Ds2 : public SpeechModel {
 public:
  explicit Ds2(const Ds2Options& options);
  // Log-probabilities [T', N, C], every sample taken as full length.
  Tensor forward(const Tensor& x) override;
  // x [N, 1, T, F]; lengths i64 or i32 [N] with values in [0, T] (undefined: all T).
  // Runs every layer of layers().
  Ds2Output forward(const Tensor& x, const Tensor& lengths) override;
  // The same before log_softmax, for ctc_loss_from_logits: every layer of logit_layers().
  Ds2Output forward_logits(const Tensor& x, const Tensor& lengths) override;

  // Output frames for `frames` input frames: each conv's
  // floor((L + 2 * padding - dilation * (kernel - 1) - 1) / stride) + 1 along time.
  int64_t output_frames(int64_t frames) const override;
  const Ds2Options& options() const { return options_; }
  // The model as its ordered layers, cut between blocks: each conv block ("conv.0-2",
  // "conv.3-5"; the first checks the input and makes the lengths explicit, the second turns
  // [N, C, T', F'] into [T', N, C * F'] and the input lengths into output lengths), the RNN
  // stack ("rnn") or each of its layers ("rnns.k"), then fc with log_softmax. Run on
  // {x, lengths} they are forward(x, lengths); a pipeline stage runs a range of them. They
  // refer to this model.
  const LayerSequence& layers() const override { return layers_; }
  // layers() with fc's Linear alone, without its log_softmax, at the end.
  const LayerSequence& logit_layers() const override { return logit_layers_; }

 private:
  LayerSequence make_layers();
  LayerSequence make_logit_layers() const;
  ModelLayer conv_block(size_t block);
  bool layered() const { return !rnns_.empty(); }

  Ds2Options options_;
  std::shared_ptr<Sequential> conv_;
  std::shared_ptr<RecurrentBase> rnn_;           // the default: one torch-style RNN stack
  std::vector<std::shared_ptr<BatchRnn>> rnns_;  // or one module per layer (under "rnns")
  std::shared_ptr<Linear> fc_;
  LayerSequence layers_;        // built last, over the modules above
  LayerSequence logit_layers_;  // and from it
};

// Options from the registry's strings: num-mels, num-classes (or vocab-size), conv-channels,
// hidden, layers, rnn (lstm | gru), bidirectional (0 | 1), merge (concat | sum),
// seq-batch-norm (0 | 1), mask-padding (0 | 1).
std::shared_ptr<Module> make_ds2(const ModelConfig& config);
// The options a user sets (the task sets num-mels and num-classes), with Ds2Options' defaults,
// for the registry's row.
std::vector<ModelOption> ds2_model_options();

}  // namespace sonata
