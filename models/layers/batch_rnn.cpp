#include "models/layers/batch_rnn.h"

#include "engine/ops.h"

namespace sonata {

std::shared_ptr<RecurrentBase> make_recurrent(RnnKind kind, const RnnOptions& options) {
  if (kind == RnnKind::gru) return std::make_shared<GRU>(options);
  return std::make_shared<LSTM>(options);
}

BatchRnn::BatchRnn(const BatchRnnOptions& options) : options_(options) {
  // Registered before the RNN, as deepspeech.pytorch does, so the state_dict lists it first.
  if (options.batch_norm)
    bn_ = register_module("bn", std::make_shared<BatchNorm>(options.input_size));
  RnnOptions rnn;
  rnn.input_size = options.input_size;
  rnn.hidden_size = options.hidden_size;
  rnn.bidirectional = options.bidirectional;
  rnn_ = register_module("rnn", make_recurrent(options.kind, rnn));
}

int64_t BatchRnn::output_size() const {
  const bool concat = options_.bidirectional && !options_.sum_directions;
  return options_.hidden_size * (concat ? 2 : 1);
}

Tensor BatchRnn::forward(const Tensor& x, const Tensor& lengths) {
  Tensor input = x;
  if (bn_ && options_.mask_padding && lengths.defined()) {
    // [T, N, H] as [N, H, T], the layout masked_batch_norm reads its lengths along.
    input = bn_->forward_masked(x.permute({1, 2, 0}), lengths).permute({2, 0, 1});
  } else if (bn_) {
    const Shape shape = x.shape();
    input = bn_->forward(x.reshape({-1, shape.back()})).reshape(shape);
  }
  const Tensor output = rnn_->forward(input, lengths).output;
  if (!options_.bidirectional || !options_.sum_directions) return output;
  const int64_t hidden = options_.hidden_size;
  return add(output.slice(2, 0, hidden), output.slice(2, hidden, 2 * hidden));
}

}  // namespace sonata
