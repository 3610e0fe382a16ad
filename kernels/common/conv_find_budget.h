#pragma once
// How many shapes of one convolution layer cudnnFind may measure (kernels/cuda/conv_cudnn.cpp).
// cudnnFind blocks the host while it times every algorithm; a layer whose input length
// varies (DS2's time axis) meets a new shape at nearly every batch, and measuring each one
// made the first epoch look hung and stalled ranks at different moments. A layer is the
// convolution without its batch and spatial sizes; once it has spent its budget of
// measurements, its new shapes take cuDNN's heuristics (cudnnGetConvolution*Algorithm_v7),
// which run no kernels. Plain C++, so the CPU tests check it. Thread-safe.
#include <array>
#include <cstdint>
#include <map>
#include <mutex>

#include "kernels/common/conv_shape.h"

namespace sonata::kernels {

// Measured shapes per layer and pass before the heuristics take over.
inline constexpr int kConvFindsPerLayer = 8;

// (device, dtype, pass, TF32 mode, determinism) + the shape without n, h, w, h_out, w_out.
using ConvLayerKey = std::array<int64_t, 16>;
ConvLayerKey conv_layer_key(int device, int64_t dtype, int pass, bool tf32, bool deterministic,
                            const Conv2dShape& shape);

class ConvFindBudget {
 public:
  explicit ConvFindBudget(int per_layer = kConvFindsPerLayer) : per_layer_(per_layer) {}
  // True (and counted) while the layer has measurements left.
  bool take(const ConvLayerKey& layer);
  int spent(const ConvLayerKey& layer) const;

 private:
  int per_layer_;
  mutable std::mutex mutex_;
  std::map<ConvLayerKey, int> spent_;
};

}  // namespace sonata::kernels
