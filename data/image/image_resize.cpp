#include "data/image/image_resize.h"

#include <algorithm>
#include <vector>

#include "base/error.h"

namespace sonata {
namespace {

// One axis of the resize: for each output index, the two input indices and the weight of the
// second, computed in float as PyTorch's CPU kernel does (area_pixel_compute_source_index).
struct Taps {
  std::vector<int64_t> first, second;
  std::vector<float> weight;
};

Taps taps(int64_t in, int64_t out) {
  Taps t;
  const float scale = float(in) / float(out);
  for (int64_t i = 0; i < out; ++i) {
    const float source = std::max(scale * (float(i) + 0.5f) - 0.5f, 0.0f);
    const int64_t first = std::min(int64_t(source), in - 1);
    t.first.push_back(first);
    t.second.push_back(first + (first < in - 1 ? 1 : 0));
    t.weight.push_back(std::clamp(source - float(first), 0.0f, 1.0f));
  }
  return t;
}

}  // namespace

Tensor resize_bilinear(const Tensor& image, int64_t height, int64_t width) {
  SONATA_CHECK(image.dim() == 3 && image.dtype() == DType::f32 && image.device().is_cpu(),
               "resize_bilinear takes a [C, H, W] f32 CPU image");
  SONATA_CHECK(height > 0 && width > 0, "resize_bilinear: the size ", height, "x", width,
               " must be positive");
  const Tensor in = image.contiguous();
  const int64_t channels = in.size(0), in_height = in.size(1), in_width = in.size(2);
  const Taps rows = taps(in_height, height), columns = taps(in_width, width);
  Tensor resized = empty({channels, height, width});
  const float* src = in.data<float>();
  float* dst = resized.data<float>();
  for (int64_t c = 0; c < channels; ++c) {
    const float* plane = src + c * in_height * in_width;
    for (int64_t y = 0; y < height; ++y) {
      const float* top = plane + rows.first[size_t(y)] * in_width;
      const float* bottom = plane + rows.second[size_t(y)] * in_width;
      const float wy = rows.weight[size_t(y)];
      float* out = dst + (c * height + y) * width;
      for (int64_t x = 0; x < width; ++x) {
        const int64_t x0 = columns.first[size_t(x)], x1 = columns.second[size_t(x)];
        const float wx = columns.weight[size_t(x)];
        out[x] = (1 - wy) * ((1 - wx) * top[x0] + wx * top[x1]) +
                 wy * ((1 - wx) * bottom[x0] + wx * bottom[x1]);
      }
    }
  }
  return resized;
}

}  // namespace sonata
