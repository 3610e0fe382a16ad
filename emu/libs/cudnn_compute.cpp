// The convolution passes as direct loops over the descriptors' strides (NCHW, NHWC or any),
// with cuDNN's arithmetic: fp32 operands rounded to TF32 where tensor cores are allowed and
// summed in double; fp16/bf16 summed in fp32; fp64 in double.
#include <algorithm>
#include <vector>

#include "emu/libs/cudnn_internal.h"

namespace sonata::emu::dnn {
namespace {

template <typename Acc>
void run(Pass pass, const ConvGeometry& g, double alpha, double beta) {
  const cudnnConvolutionStruct& cv = *g.conv;
  const View &x = g.x, &w = g.w, &y = g.y;
  auto operand = [&](const View& v, int64_t index) {
    double value = load_elem(v.elem, v.data, index);
    if (g.tf32) value = round_to_tf32(float(value));
    if (g.to_half) value = half_to_float(float_to_half(float(value)));
    return value;
  };
  const int64_t k_per_group = w.n / cv.groups;
  const bool flip = cv.mode == CUDNN_CONVOLUTION;
  // Visits every (output element, filter tap, input element) triple once; the caller sums
  // into the pass's output.
  auto for_each_tap = [&](auto body) {
    for (int64_t n = 0; n < y.n; ++n)
      for (int64_t k = 0; k < y.c; ++k) {
        const int64_t group = k / k_per_group;
        for (int64_t oh = 0; oh < y.h; ++oh)
          for (int64_t ow = 0; ow < y.w; ++ow)
            for (int64_t c = 0; c < w.c; ++c)
              for (int64_t r = 0; r < w.h; ++r) {
                const int64_t ih = oh * cv.u - cv.pad_h + r * cv.dil_h;
                if (ih < 0 || ih >= x.h) continue;
                for (int64_t s = 0; s < w.w; ++s) {
                  const int64_t iw = ow * cv.v - cv.pad_w + s * cv.dil_w;
                  if (iw < 0 || iw >= x.w) continue;
                  const int64_t fr = flip ? w.h - 1 - r : r, fs = flip ? w.w - 1 - s : s;
                  body(x.offset(n, group * w.c + c, ih, iw), w.offset(k, c, fr, fs),
                       y.offset(n, k, oh, ow));
                }
              }
      }
  };
  const View& out = pass == Pass::forward ? y : pass == Pass::backward_data ? x : w;
  // Sums per output element in a dense buffer indexed like `out`'s logical shape.
  const int64_t count = out.n * out.c * out.h * out.w;
  std::vector<Acc> sums(size_t(count), Acc(0));
  std::vector<int64_t> slot_of;  // `out`'s strided offset -> index into sums
  int64_t max_offset = 0;
  for (int64_t a = 0; a < out.n; ++a)
    for (int64_t b = 0; b < out.c; ++b)
      for (int64_t c = 0; c < out.h; ++c)
        for (int64_t d = 0; d < out.w; ++d)
          max_offset = std::max(max_offset, out.offset(a, b, c, d));
  slot_of.assign(size_t(max_offset + 1), -1);
  {
    int64_t i = 0;
    for (int64_t a = 0; a < out.n; ++a)
      for (int64_t b = 0; b < out.c; ++b)
        for (int64_t c = 0; c < out.h; ++c)
          for (int64_t d = 0; d < out.w; ++d) slot_of[size_t(out.offset(a, b, c, d))] = i++;
  }
  for_each_tap([&](int64_t xi, int64_t wi, int64_t yi) {
    switch (pass) {
      case Pass::forward:
        sums[size_t(slot_of[size_t(yi)])] += Acc(operand(x, xi)) * Acc(operand(w, wi));
        break;
      case Pass::backward_data:
        sums[size_t(slot_of[size_t(xi)])] += Acc(operand(y, yi)) * Acc(operand(w, wi));
        break;
      case Pass::backward_filter:
        sums[size_t(slot_of[size_t(wi)])] += Acc(operand(x, xi)) * Acc(operand(y, yi));
        break;
    }
  });
  int64_t i = 0;
  for (int64_t a = 0; a < out.n; ++a)
    for (int64_t b = 0; b < out.c; ++b)
      for (int64_t c = 0; c < out.h; ++c)
        for (int64_t d = 0; d < out.w; ++d, ++i) {
          const int64_t at = out.offset(a, b, c, d);
          double value = double(sums[size_t(i)]);
          if (!g.f64) value = double(float(value));
          value *= alpha;
          // beta == 0: the output is not read (it may be uninitialised or NaN).
          if (beta != 0.0) value += beta * load_elem(out.elem, out.data, at);
          store_elem(out.elem, out.data, at, value);
        }
}

}  // namespace

void convolve(Pass pass, const ConvGeometry& g, double alpha, double beta) {
  if (g.float_accumulate)
    run<float>(pass, g, alpha, beta);
  else
    run<double>(pass, g, alpha, beta);
}

}  // namespace sonata::emu::dnn
