// The convolution passes as direct loops, with cuDNN's arithmetic: fp32 operands rounded
// to TF32 where tensor cores are allowed and summed in double; fp16/bf16 summed in fp32;
// fp64 in double. Operands are first gathered from their strides (NCHW, NHWC or any) into
// dense logical-order arrays of the rounded values, so the loops do arithmetic only.
#include <vector>

#include "emu/libs/cudnn_internal.h"

namespace sonata::emu::dnn {
namespace {

// `v` in logical (n, c, h, w) order, each value as the pass's arithmetic sees it.
std::vector<double> gather(const View& v, const ConvGeometry& g) {
  std::vector<double> dense(size_t(v.n * v.c * v.h * v.w));
  size_t i = 0;
  for (int64_t a = 0; a < v.n; ++a)
    for (int64_t b = 0; b < v.c; ++b)
      for (int64_t c = 0; c < v.h; ++c)
        for (int64_t d = 0; d < v.w; ++d) {
          double value = load_elem(v.elem, v.data, v.offset(a, b, c, d));
          if (g.tf32) value = round_to_tf32(float(value));
          if (g.to_half) value = half_to_float(float_to_half(float(value)));
          dense[i++] = value;
        }
  return dense;
}

template <typename Acc>
void run(Pass pass, const ConvGeometry& g, double alpha, double beta) {
  const cudnnConvolutionStruct& cv = *g.conv;
  const View &x = g.x, &w = g.w, &y = g.y;
  const int64_t k_per_group = w.n / cv.groups;
  const bool flip = cv.mode == CUDNN_CONVOLUTION;
  const std::vector<double> xd = pass == Pass::backward_data ? std::vector<double>() : gather(x, g);
  const std::vector<double> wd =
      pass == Pass::backward_filter ? std::vector<double>() : gather(w, g);
  const std::vector<double> yd = pass == Pass::forward ? std::vector<double>() : gather(y, g);
  const View& out = pass == Pass::forward ? y : pass == Pass::backward_data ? x : w;
  std::vector<Acc> sums(size_t(out.n * out.c * out.h * out.w), Acc(0));
  auto xi = [&](int64_t n, int64_t c, int64_t h, int64_t ww) {
    return size_t(((n * x.c + c) * x.h + h) * x.w + ww);
  };
  auto wi = [&](int64_t k, int64_t c, int64_t r, int64_t s) {
    return size_t(((k * w.c + c) * w.h + r) * w.w + s);
  };
  auto yi = [&](int64_t n, int64_t k, int64_t h, int64_t ww) {
    return size_t(((n * y.c + k) * y.h + h) * y.w + ww);
  };
  // Every (output pixel, input channel, tap) once, in a fixed order.
  for (int64_t n = 0; n < y.n; ++n)
    for (int64_t k = 0; k < y.c; ++k) {
      const int64_t group = k / k_per_group;
      for (int64_t oh = 0; oh < y.h; ++oh)
        for (int64_t ow = 0; ow < y.w; ++ow) {
          const size_t at_y = yi(n, k, oh, ow);
          for (int64_t c = 0; c < w.c; ++c) {
            const int64_t xc = group * w.c + c;
            for (int64_t r = 0; r < w.h; ++r) {
              const int64_t ih = oh * cv.u - cv.pad_h + r * cv.dil_h;
              if (ih < 0 || ih >= x.h) continue;
              const int64_t fr = flip ? w.h - 1 - r : r;
              for (int64_t s = 0; s < w.w; ++s) {
                const int64_t iw = ow * cv.v - cv.pad_w + s * cv.dil_w;
                if (iw < 0 || iw >= x.w) continue;
                const size_t at_w = wi(k, c, fr, flip ? w.w - 1 - s : s);
                const size_t at_x = xi(n, xc, ih, iw);
                switch (pass) {
                  case Pass::forward:
                    sums[at_y] += Acc(xd[at_x]) * Acc(wd[at_w]);
                    break;
                  case Pass::backward_data:
                    sums[at_x] += Acc(yd[at_y]) * Acc(wd[at_w]);
                    break;
                  case Pass::backward_filter:
                    sums[at_w] += Acc(xd[at_x]) * Acc(yd[at_y]);
                    break;
                }
              }
            }
          }
        }
    }
  size_t i = 0;
  for (int64_t a = 0; a < out.n; ++a)
    for (int64_t b = 0; b < out.c; ++b)
      for (int64_t c = 0; c < out.h; ++c)
        for (int64_t d = 0; d < out.w; ++d, ++i) {
          const int64_t at = out.offset(a, b, c, d);
          double value = double(sums[i]);
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
