#pragma once
// One recurrent layer of a DeepSpeech2 stack, as deepspeech.pytorch's BatchRNN: optional
// sequence-wise BatchNorm1d over the input features ("bn", every frame of every sample one
// row: padded frames included as there, or with mask_padding only each sample's valid frames,
// through masked_batch_norm), then a one-layer LSTM or GRU ("rnn") run over
// ragged lengths, with the two directions concatenated or summed. State-dict names:
// bn.weight, bn.running_mean, ..., rnn.weight_ih_l0, rnn.weight_ih_l0_reverse, ...
#include <memory>

#include "engine/nn/module.h"
#include "models/layers/batch_norm.h"
#include "models/layers/rnn.h"

namespace sonata {

enum class RnnKind { lstm, gru };

// A torch-named multi-layer LSTM or GRU.
std::shared_ptr<RecurrentBase> make_recurrent(RnnKind kind, const RnnOptions& options);

struct BatchRnnOptions {
  RnnKind kind = RnnKind::lstm;
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  bool bidirectional = true;
  bool sum_directions = false;  // output [T, N, H] instead of [T, N, 2H]
  bool batch_norm = false;
  bool mask_padding = false;  // bn's statistics over the valid frames only (needs lengths)
};

class BatchRnn : public Module {
 public:
  explicit BatchRnn(const BatchRnnOptions& options);
  // x [T, N, input_size]; lengths i64 CPU [N] or undefined (all T). Padded frames' outputs
  // are 0, as pad_packed_sequence gives.
  Tensor forward(const Tensor& x, const Tensor& lengths);
  Tensor forward(const Tensor& x) override { return forward(x, Tensor()); }
  // The feature size of forward's output.
  int64_t output_size() const;

 private:
  BatchRnnOptions options_;
  std::shared_ptr<BatchNorm> bn_;
  std::shared_ptr<RecurrentBase> rnn_;
};

}  // namespace sonata
