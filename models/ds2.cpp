#include "models/ds2.h"

#include <algorithm>
#include <array>
#include <string>

#include "base/error.h"
#include "engine/ops.h"
#include "models/layers/batch_norm.h"
#include "models/layers/conv2d.h"
#include "models/layers/simple.h"

namespace sonata {
namespace {

constexpr double kHardtanhMax = 20.0;

struct ConvSpec {
  std::array<int64_t, 2> kernel, stride, padding;  // (time, frequency)
};
constexpr ConvSpec kConvs[] = {
    {{11, 41}, {2, 2}, {5, 20}},
    {{11, 21}, {1, 2}, {5, 10}},
};

// torch's conv output size; the floor matters for an empty sequence (numerator -1).
int64_t conv_output_size(int64_t size, int64_t kernel, int64_t stride, int64_t padding) {
  const int64_t numerator = size + 2 * padding - (kernel - 1) - 1;
  const int64_t floor = numerator >= 0 ? numerator / stride : -((-numerator + stride - 1) / stride);
  return floor + 1;
}

// A sample's frames after the first `convs` convolutions.
int64_t frames_after(int64_t frames, size_t convs) {
  for (size_t k = 0; k < convs; ++k)
    frames =
        conv_output_size(frames, kConvs[k].kernel[0], kConvs[k].stride[0], kConvs[k].padding[0]);
  return frames;
}

// x [N, C, T, F] with each sample's frames from lengths[n] on set to 0 (x itself when every
// sample is full length).
Tensor zero_padded_frames(const Tensor& x, const std::vector<int64_t>& lengths) {
  const int64_t batch = x.size(0), frames = x.size(2);
  if (std::all_of(lengths.begin(), lengths.end(), [&](int64_t l) { return l >= frames; })) return x;
  std::vector<double> valid(size_t(batch * frames), 0.0);
  for (int64_t n = 0; n < batch; ++n)
    std::fill_n(valid.begin() + n * frames, lengths[size_t(n)], 1.0);
  const Tensor mask = from_vector(valid, {batch, 1, frames, 1}, TensorOptions{}.with(DType::f64))
                          .to(x.dtype())
                          .to(x.device());
  return mul(x, mask);
}

int64_t conv_output_features(int64_t num_mels) {
  int64_t features = num_mels;
  for (const ConvSpec& conv : kConvs)
    features = conv_output_size(features, conv.kernel[1], conv.stride[1], conv.padding[1]);
  return features;
}

std::vector<int64_t> checked_lengths(const Tensor& lengths, int64_t batch, int64_t frames) {
  if (!lengths.defined()) return std::vector<int64_t>(size_t(batch), frames);
  SONATA_CHECK((lengths.dtype() == DType::i64 || lengths.dtype() == DType::i32) &&
                   lengths.shape() == Shape{batch},
               "ds2: input lengths must be integers [", batch, "], got ",
               dtype_name(lengths.dtype()), " ", shape_str(lengths.shape()));
  const std::vector<int64_t> values = lengths.to(Device::cpu()).to(DType::i64).to_vector<int64_t>();
  for (size_t n = 0; n < values.size(); ++n)
    SONATA_CHECK(values[n] >= 0 && values[n] <= frames, "ds2: input length ", values[n],
                 " of sample ", n, " is outside [0, ", frames, "] (the input's frames)");
  return values;
}

}  // namespace

Ds2::Ds2(const Ds2Options& options) : options_(options) {
  SONATA_CHECK(options.num_mels > 0, "ds2: --num-mels must be positive");
  SONATA_CHECK(options.num_classes > 1,
               "ds2: --num-classes must be at least 2 (blank and one label)");
  SONATA_CHECK(options.hidden > 0, "ds2: --hidden must be positive");
  SONATA_CHECK(options.layers > 0, "ds2: --layers must be positive");
  SONATA_CHECK(options.conv_channels > 0, "ds2: --conv-channels must be positive");
  SONATA_CHECK(options.bidirectional || !options.sum_directions,
               "ds2: --merge sum needs a bidirectional RNN (--bidirectional 1)");

  conv_ = register_module("conv", std::make_shared<Sequential>());
  int64_t in_channels = 1;
  for (const ConvSpec& spec : kConvs) {
    conv_->push_back(std::make_shared<Conv2d>(in_channels, options.conv_channels, spec.kernel,
                                              Conv2dParams{spec.stride, spec.padding, {1, 1}}));
    conv_->push_back(std::make_shared<BatchNorm>(options.conv_channels));
    conv_->push_back(std::make_shared<Hardtanh>(0.0, kHardtanhMax));
    in_channels = options.conv_channels;
  }

  const int64_t features = options.conv_channels * conv_output_features(options.num_mels);
  const bool sum = options.bidirectional && options.sum_directions;
  if (options.seq_batch_norm || sum) {
    auto rnns = register_module("rnns", std::make_shared<Sequential>());
    int64_t inputs = features;
    for (int64_t k = 0; k < options.layers; ++k) {
      BatchRnnOptions layer;
      layer.kind = options.rnn;
      layer.input_size = inputs;
      layer.hidden_size = options.hidden;
      layer.bidirectional = options.bidirectional;
      layer.sum_directions = sum;
      layer.batch_norm = options.seq_batch_norm && k > 0;
      layer.mask_padding = options.mask_padding;
      rnns_.push_back(std::make_shared<BatchRnn>(layer));
      rnns->push_back(rnns_.back());
      inputs = rnns_.back()->output_size();
    }
  } else {
    RnnOptions rnn;
    rnn.input_size = features;
    rnn.hidden_size = options.hidden;
    rnn.num_layers = options.layers;
    rnn.bidirectional = options.bidirectional;
    rnn_ = register_module("rnn", make_recurrent(options.rnn, rnn));
  }
  const int64_t fc_inputs = options.hidden * (options.bidirectional && !sum ? 2 : 1);
  fc_ = register_module("fc", std::make_shared<Linear>(fc_inputs, options.num_classes));
  layers_ = make_layers();
  logit_layers_ = make_logit_layers();
}

int64_t Ds2::output_frames(int64_t frames) const {
  return frames_after(frames, std::size(kConvs));
}

Tensor Ds2::forward(const Tensor& x) {
  return forward(x, Tensor()).output;
}

Ds2Output Ds2::forward(const Tensor& x, const Tensor& lengths) {
  const LayerValue out = run_layers(layers_, {0, layers_.size()}, {x, lengths});
  return {out.x, out.lengths};
}

Ds2Output Ds2::forward_logits(const Tensor& x, const Tensor& lengths) {
  const LayerValue out = run_layers(logit_layers_, {0, logit_layers_.size()}, {x, lengths});
  return {out.x, out.lengths};
}

ModelLayer Ds2::conv_block(size_t block) {
  const auto& conv = conv_->children();
  const size_t per_block = conv.size() / std::size(kConvs);
  const size_t begin = block * per_block, end = begin + per_block;
  ModelLayer layer;
  layer.name = str("conv.", begin, "-", end - 1);
  std::vector<Module*> modules;
  for (size_t k = begin; k < end; ++k) {
    layer.modules.emplace_back("conv." + conv[k].first, conv[k].second);
    modules.push_back(conv[k].second.get());
  }
  const bool opens = block == 0, closes = block + 1 == std::size(kConvs);
  layer.forward = [this, modules, opens, closes, block](const LayerValue& in) {
    LayerValue out = in;
    if (opens) {  // the input checks; the lengths become explicit
      SONATA_CHECK(in.x.defined() && in.x.dim() == 4 && in.x.size(1) == 1 &&
                       in.x.size(3) == options_.num_mels,
                   "ds2: expected input [N, 1, T, ", options_.num_mels, "], got ",
                   in.x.defined() ? shape_str(in.x.shape()) : std::string("undefined"));
      const int64_t batch = in.x.size(0);
      const std::vector<int64_t> lengths = checked_lengths(in.lengths, batch, in.x.size(2));
      out.lengths = from_vector(lengths, {batch});
      if (options_.mask_padding) out.x = zero_padded_frames(out.x, lengths);
    }
    // Between blocks the lengths stay the input's; this block's conv output has these.
    std::vector<int64_t> valid = out.lengths.to_vector<int64_t>();
    for (int64_t& length : valid) length = frames_after(length, block + 1);
    const Tensor conv_lengths = from_vector(valid, {int64_t(valid.size())});
    for (Module* module : modules) {
      auto* batch_norm = dynamic_cast<BatchNorm*>(module);
      out.x = options_.mask_padding && batch_norm ? batch_norm->forward_masked(out.x, conv_lengths)
                                                  : module->forward(out.x);
    }
    if (closes) {  // [N, C, T', F'] -> [T', N, C * F'], and the lengths along T'
      const int64_t steps = out.x.size(2), batch = out.x.size(0);
      out.x = out.x.permute({2, 0, 1, 3}).reshape({steps, batch, -1});
      out.lengths = conv_lengths;
    }
    return out;
  };
  return layer;
}

LayerSequence Ds2::make_layers() {
  LayerSequence layers;
  for (size_t block = 0; block < std::size(kConvs); ++block) layers.push_back(conv_block(block));
  if (layered()) {
    for (size_t k = 0; k < rnns_.size(); ++k) {
      BatchRnn* rnn = rnns_[k].get();
      layers.push_back(
          module_layer(str("rnns.", k), {{str("rnns.", k), rnns_[k]}}, [rnn](const LayerValue& in) {
            return LayerValue{rnn->forward(in.x, in.lengths), in.lengths};
          }));
    }
  } else {
    RecurrentBase* rnn = rnn_.get();
    layers.push_back(module_layer("rnn", {{"rnn", rnn_}}, [rnn](const LayerValue& in) {
      return LayerValue{rnn->forward(in.x, in.lengths).output, in.lengths};
    }));
  }
  Linear* fc = fc_.get();
  layers.push_back(module_layer("fc", {{"fc", fc_}}, [fc](const LayerValue& in) {
    return LayerValue{speech_log_probabilities(fc->forward(in.x)), in.lengths};
  }));
  return layers;
}

LayerSequence Ds2::make_logit_layers() const {
  LayerSequence layers = layers_;
  // fc's Linear alone, without the normalisation.
  Linear* fc = fc_.get();
  layers.back().forward = [fc](const LayerValue& in) {
    return LayerValue{fc->forward(in.x), in.lengths};
  };
  return layers;
}

std::shared_ptr<Module> make_ds2(const ModelConfig& config) {
  config.check_keys(
      "ds2", {"num-mels", "num-classes", "vocab-size", "conv-channels", "hidden", "layers", "rnn",
              "bidirectional", "merge", "seq-batch-norm", "mask-padding"});
  Ds2Options options;
  options.num_mels = config.get_int("num-mels", options.num_mels);
  options.num_classes = config.get_int("num-classes", options.num_classes);
  if (config.has("vocab-size")) {
    const int64_t vocab = config.get_int("vocab-size", options.num_classes);
    SONATA_CHECK(!config.has("num-classes") || vocab == options.num_classes, "ds2: --vocab-size ",
                 vocab, " and --num-classes ", options.num_classes,
                 " disagree (they name the same thing; give one)");
    options.num_classes = vocab;
  }
  options.conv_channels = config.get_int("conv-channels", options.conv_channels);
  options.hidden = config.get_int("hidden", options.hidden);
  options.layers = config.get_int("layers", options.layers);
  // The choices' defaults are Ds2Options' own.
  const auto bit = [](bool value) { return value ? "1" : "0"; };
  options.rnn = config.get_choice("rnn", options.rnn == RnnKind::gru ? "gru" : "lstm",
                                  {"lstm", "gru"}) == "gru"
                    ? RnnKind::gru
                    : RnnKind::lstm;
  options.bidirectional =
      config.get_choice("bidirectional", bit(options.bidirectional), {"0", "1"}) == "1";
  options.sum_directions = config.get_choice("merge", options.sum_directions ? "sum" : "concat",
                                             {"concat", "sum"}) == "sum";
  options.seq_batch_norm =
      config.get_choice("seq-batch-norm", bit(options.seq_batch_norm), {"0", "1"}) == "1";
  options.mask_padding =
      config.get_choice("mask-padding", bit(options.mask_padding), {"0", "1"}) == "1";
  return std::make_shared<Ds2>(options);
}

std::vector<ModelOption> ds2_model_options() {
  const Ds2Options ds2;
  const auto bit = [](bool value) { return value ? "1" : "0"; };
  return {{"conv-channels", str(ds2.conv_channels)},
          {"hidden", str(ds2.hidden)},
          {"layers", str(ds2.layers)},
          {"rnn", str("lstm | gru; ", ds2.rnn == RnnKind::gru ? "gru" : "lstm")},
          {"bidirectional", str("0 | 1; ", bit(ds2.bidirectional))},
          {"merge", str("concat | sum; ", ds2.sum_directions ? "sum" : "concat")},
          {"seq-batch-norm", str("0 | 1; ", bit(ds2.seq_batch_norm))},
          {"mask-padding", str("0 | 1; ", bit(ds2.mask_padding))}};
}

}  // namespace sonata
