#include "kernels/cpu/conv_direct.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/nvtx.h"
#include "kernels/cpu/capability_region.h"
#include "kernels/cpu/dispatch.h"

SONATA_CPU_BEGIN
namespace direct_conv {
namespace {

// Channels sit in the vector lanes, pixels in the register rows: L lanes (8, 16 or 32
// channels: one to four vectors of this capability) times up to P pixels of sums stay in
// registers while the product runs over its terms. Each term costs L / (vector width) vector
// loads, P broadcasts and P * L / (vector width) FMAs, so wider L and more P raise the FMAs
// per load; the register file bounds L * P (AVX-512: 32 registers of 16 floats; AVX2: 16 of
// 8). A layer of at most 8 lane channels keeps L = 8 (no idle lanes in DeepSpeech2's
// 8-channel front end); a wider one takes the widest L the capability holds.
constexpr int kPixels = 8;     // the most pixels of any (capability, L): sizes `out`
constexpr size_t kAlign = 64;  // each workspace region starts on a cache line
// As in the im2col path: the padded copies of as many images as fit in 128 MiB are made at
// once, which holds a whole DeepSpeech2 batch yet bounds memory on long inputs.
constexpr size_t kWorkspaceCap = size_t(128) << 20;
// Multiply-adds below which OpenMP's fork costs more than the second thread gives.
constexpr int64_t kParallelWork = int64_t(1) << 18;
// The weight gradient's terms are output pixels: its products run over tiles of them whose
// grad_y vectors (tile * L elements) stay in a core's L2 while every filter tap reads them,
// instead of streaming the whole batch's grad_y from memory once per tap.
constexpr size_t kWeightTileBytes = size_t(64) << 10;

#if SONATA_CPU_CAPABILITY == 2
constexpr int64_t kWidestLanes = 32;  // two zmm per pixel, 8 pixels: 16 of 32 registers
#elif SONATA_CPU_CAPABILITY == 1
constexpr int64_t kWidestLanes = 16;  // two ymm per pixel, 6 pixels: 12 of 16 registers
#else
constexpr int64_t kWidestLanes = 8;
#endif

// The lanes of a product whose lane dimension has `channels` channels.
int64_t lanes_for(int64_t channels) {
  return channels <= 8 ? 8 : channels <= 16 ? std::min<int64_t>(16, kWidestLanes) : kWidestLanes;
}

// The pixels one product keeps in registers at L lanes.
template <int64_t L>
constexpr int pixels_for() {
  return (SONATA_CPU_CAPABILITY == 1 && L == 16) ? 6 : kPixels;
}

// The pixels of each product along a run of `count`: as few products as P allows, as even
// as they can be (8 pixels at P = 6 run as 4 + 4, not 6 + 2, whose 2 would pay a whole
// term's loads for two rows of FMAs).
int64_t even_step(int64_t count, int pixels) {
  const int64_t products = (count + pixels - 1) / pixels;
  return products == 0 ? pixels : (count + products - 1) / products;
}

size_t aligned(size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}
int64_t lane_blocks(int64_t channels, int64_t lanes) {
  return (channels + lanes - 1) / lanes;
}
int64_t floor_mod(int64_t value, int64_t modulus) {
  const int64_t r = value % modulus;
  return r < 0 ? r + modulus : r;
}

// out[p][l] = sum_t vecs[t][l] * in[offsets[t] + p * pixel_stride] for p < P: the one loop
// every pass runs. P * L sums live in registers; each term costs L / width vector loads and
// P broadcasts. A pixel stride known at compile time (S, 0 for any) puts the broadcasts'
// offsets in their instructions instead of an add each, which AVX2's short terms notice.
template <typename T, int64_t L, int P, int64_t S>
void product(int64_t terms, const T* vecs, const int64_t* offsets, const T* in,
             int64_t pixel_stride, T (&out)[kPixels][L]) {
  const int64_t stride = S != 0 ? S : pixel_stride;
  T sums[P][L] = {};
  for (int64_t t = 0; t < terms; ++t) {
    const T* vec = vecs + t * L;
    const T* src = in + offsets[t];
    for (int p = 0; p < P; ++p) {
      const T value = src[p * stride];
#pragma omp simd
      for (int64_t l = 0; l < L; ++l) sums[p][l] += value * vec[l];
    }
  }
  for (int p = 0; p < P; ++p)
    for (int64_t l = 0; l < L; ++l) out[p][l] = sums[p][l];
}

// product() for a run-time pixel count of at most pixels_for<L>(): one instantiation each,
// for pixel strides 1, 2 and any.
template <typename T, int64_t L, int P = pixels_for<L>()>
void product_of(int pixels, int64_t terms, const T* vecs, const int64_t* offsets, const T* in,
                int64_t pixel_stride, T (&out)[kPixels][L]) {
  if constexpr (P > 1) {
    if (pixels < P)
      return product_of<T, L, P - 1>(pixels, terms, vecs, offsets, in, pixel_stride, out);
  }
  if (pixel_stride == 1) return product<T, L, P, 1>(terms, vecs, offsets, in, 1, out);
  if (pixel_stride == 2) return product<T, L, P, 2>(terms, vecs, offsets, in, 2, out);
  product<T, L, P, 0>(terms, vecs, offsets, in, pixel_stride, out);
}

// planes [count][h][w] into [count][rows][cols] with the data at (top, left), zero elsewhere.
template <typename T>
void pad_planes(const T* src, int64_t count, int64_t h, int64_t w, int64_t top, int64_t left,
                int64_t rows, int64_t cols, T* dst) {
#pragma omp parallel for schedule(static) if (count * rows * cols >= kParallelWork)
  for (int64_t plane = 0; plane < count; ++plane) {
    T* out = dst + plane * rows * cols;
    const T* in = src + plane * h * w;
    std::fill(out, out + top * cols, T(0));
    for (int64_t r = 0; r < h; ++r) {
      T* row = out + (top + r) * cols;
      std::fill(row, row + left, T(0));
      std::memcpy(row + left, in + r * w, size_t(w) * sizeof(T));
      std::fill(row + left + w, row + cols, T(0));
    }
    std::fill(out + (top + h) * cols, out + rows * cols, T(0));
  }
}

// Regions of the caller's workspace, handed out in order, each cache-line aligned.
class Carver {
 public:
  Carver(void* base, size_t bytes) : next_(static_cast<char*>(base)), end_(next_ + bytes) {}
  template <typename U>
  U* take(int64_t count) {
    const size_t bytes = aligned(size_t(count) * sizeof(U));
    SONATA_CHECK(size_t(end_ - next_) >= bytes,
                 "sonata::cpu::conv2d (direct): workspace too small");
    U* region = reinterpret_cast<U*>(next_);
    next_ += bytes;
    return region;
  }

 private:
  char* next_;
  char* end_;
};

// Workspace of a pass: `fixed` bytes whatever the batch, plus `per_image` for each image of a
// chunk (its padded planes and tables). The alignment of each region is counted in fixed.
struct Plan {
  size_t fixed = 0, per_image = 0;
};

// The input gradient's padded grad_y: filter row i reaches input rows of one phase
// rh = (i*dil - pad) mod stride, from output row a + shift_i for input row a*stride + rh.
struct Phases {
  std::vector<int64_t> phase, shift;  // per filter row (or column)
  int64_t margin = 0, extent = 0;     // padded plane: `margin` zeros first, `extent` in all
};

Phases phases_along(int64_t size, int64_t size_out, int64_t kernel, int64_t stride, int64_t pad,
                    int64_t dil) {
  Phases p;
  p.phase.resize(size_t(kernel));
  p.shift.resize(size_t(kernel));
  int64_t lowest = 0, highest = size_out - 1;
  for (int64_t i = 0; i < kernel; ++i) {
    const int64_t rh = floor_mod(i * dil - pad, stride);
    const int64_t shift = (rh + pad - i * dil) / stride;  // exact by the choice of rh
    p.phase[size_t(i)] = rh;
    p.shift[size_t(i)] = shift;
    if (rh >= size) continue;  // this phase has no input pixels
    const int64_t last_a = (size - 1 - rh) / stride;
    lowest = std::min(lowest, shift);
    highest = std::max(highest, last_a + shift);
  }
  p.margin = -lowest;
  p.extent = highest - lowest + 1;
  return p;
}

// The lane channels of `pass`: the output channels, or the input channels for the input
// gradient.
int64_t lane_channels(const Conv2dShape& s, ConvPass pass) {
  return pass == ConvPass::backward_input ? s.c_in : s.c_out;
}

Plan plan_of(const Conv2dShape& s, ConvPass pass, size_t element) {
  const int64_t lanes = lanes_for(lane_channels(s, pass));
  const int64_t hp = s.h + 2 * s.pad_h, wp = s.w + 2 * s.pad_w, hw_out = s.h_out * s.w_out;
  const int64_t taps = s.patch();
  Plan plan;
  switch (pass) {
    case ConvPass::forward:
      plan.fixed = aligned(size_t(lane_blocks(s.c_out, lanes) * taps * lanes) * element) +
                   aligned(size_t(taps) * sizeof(int64_t)) + kAlign;
      plan.per_image = size_t(s.c_in * hp * wp) * element;
      break;
    case ConvPass::backward_weight:
      plan.fixed = 3 * kAlign;
      plan.per_image =
          size_t(s.c_in * hp * wp + lane_blocks(s.c_out, lanes) * hw_out * lanes) * element +
          size_t(hw_out) * sizeof(int64_t);
      break;
    case ConvPass::backward_input: {
      const Phases rows = phases_along(s.h, s.h_out, s.kh, s.stride_h, s.pad_h, s.dil_h);
      const Phases cols = phases_along(s.w, s.w_out, s.kw, s.stride_w, s.pad_w, s.dil_w);
      const int64_t terms = s.c_out * s.kh * s.kw, classes = s.stride_h * s.stride_w;
      plan.fixed = aligned(size_t(lane_blocks(s.c_in, lanes) * terms * lanes) * element) +
                   aligned(size_t(terms) * sizeof(int64_t)) +
                   aligned(size_t(classes + 1) * sizeof(int64_t)) + kAlign;
      plan.per_image = size_t(s.c_out * rows.extent * cols.extent) * element;
      break;
    }
  }
  return plan;
}

int64_t images_per_chunk(const Conv2dShape& s, ConvPass pass, size_t element,
                         size_t workspace_bytes) {
  const Plan plan = plan_of(s, pass, element);
  SONATA_CHECK(workspace_bytes >= plan.fixed + plan.per_image,
               "sonata::cpu::conv2d (direct): workspace of ", workspace_bytes,
               " bytes is smaller than one image's ", plan.fixed + plan.per_image,
               " (size it with conv2d_workspace_bytes)");
  const int64_t fits = int64_t((workspace_bytes - plan.fixed) / plan.per_image);
  return std::clamp<int64_t>(fits, 1, std::max<int64_t>(s.n, 1));
}

bool parallel_worth(const Conv2dShape& s) {
  return s.n * s.h_out * s.w_out * s.c_out * s.patch() >= kParallelWork;
}

template <typename T, int64_t L>
void forward_typed(const Conv2dShape& s, const T* x, const T* weight, const T* bias, T* y,
                   void* workspace, size_t workspace_bytes) {
  const int64_t hp = s.h + 2 * s.pad_h, wp = s.w + 2 * s.pad_w, hw_out = s.h_out * s.w_out;
  const int64_t taps = s.patch(), blocks = lane_blocks(s.c_out, L);
  constexpr int P = pixels_for<L>();
  const int64_t chunk = images_per_chunk(s, ConvPass::forward, sizeof(T), workspace_bytes);
  Carver carve(workspace, workspace_bytes);
  // vecs[block][tap][lane] = weight[block * L + lane, tap], zero past c_out.
  T* vecs = carve.take<T>(blocks * taps * L);
  int64_t* offsets = carve.take<int64_t>(taps);
  T* padded = carve.take<T>(chunk * s.c_in * hp * wp);
  for (int64_t block = 0; block < blocks; ++block)
    for (int64_t tap = 0; tap < taps; ++tap)
      for (int64_t l = 0; l < L; ++l) {
        const int64_t co = block * L + l;
        vecs[(block * taps + tap) * L + l] = co < s.c_out ? weight[co * taps + tap] : T(0);
      }
  for (int64_t ci = 0; ci < s.c_in; ++ci)
    for (int64_t i = 0; i < s.kh; ++i)
      for (int64_t j = 0; j < s.kw; ++j)
        offsets[(ci * s.kh + i) * s.kw + j] = ci * hp * wp + i * s.dil_h * wp + j * s.dil_w;

  for (int64_t n0 = 0; n0 < s.n; n0 += chunk) {
    const int64_t images = std::min(chunk, s.n - n0);
    pad_planes(x + n0 * s.c_in * s.h * s.w, images * s.c_in, s.h, s.w, s.pad_h, s.pad_w, hp, wp,
               padded);
    // The block outermost: a thread's rows share one block's weight vectors in its cache.
    const int64_t step = even_step(s.w_out, P);
#pragma omp parallel for collapse(3) schedule(static) if (parallel_worth(s))
    for (int64_t block = 0; block < blocks; ++block) {
      for (int64_t b = 0; b < images; ++b) {
        for (int64_t oh = 0; oh < s.h_out; ++oh) {
          const T* row = padded + b * s.c_in * hp * wp + oh * s.stride_h * wp;
          const int64_t lanes = std::min(L, s.c_out - block * L);
          T out[kPixels][L];
          for (int64_t ow0 = 0; ow0 < s.w_out; ow0 += step) {
            const int pixels = int(std::min(step, s.w_out - ow0));
            product_of(pixels, taps, vecs + block * taps * L, offsets, row + ow0 * s.stride_w,
                       s.stride_w, out);
            for (int64_t l = 0; l < lanes; ++l) {
              const int64_t co = block * L + l;
              const T shift = bias ? bias[co] : T(0);
              T* dst = y + ((n0 + b) * s.c_out + co) * hw_out + oh * s.w_out + ow0;
              for (int p = 0; p < pixels; ++p) dst[p] = out[p][l] + shift;
            }
          }
        }
      }
    }
  }
}

// The weight gradient's register rows: input channels where the filter has fewer columns
// than a product's pixels (VGG's 3x3) and there are more channels than columns.
bool weight_rows_are_channels(const Conv2dShape& s, int pixels) {
  return s.kw < pixels && s.c_in > s.kw;
}

template <typename T, int64_t L>
void backward_weight_typed(const Conv2dShape& s, const T* grad_y, const T* x, T* grad_weight,
                           T* grad_bias, void* workspace, size_t workspace_bytes) {
  const int64_t hp = s.h + 2 * s.pad_h, wp = s.w + 2 * s.pad_w, hw_out = s.h_out * s.w_out;
  const int64_t taps = s.patch(), blocks = lane_blocks(s.c_out, L);
  std::fill(grad_weight, grad_weight + s.c_out * taps, T(0));
  if (grad_bias) {
    // A long sum per channel: accumulated in double, as the GEMM path does.
    for (int64_t co = 0; co < s.c_out; ++co) {
      double total = 0;
      for (int64_t b = 0; b < s.n; ++b) {
        const T* plane = grad_y + (b * s.c_out + co) * hw_out;
        for (int64_t p = 0; p < hw_out; ++p) total += plane[p];
      }
      grad_bias[co] = T(total);
    }
  }
  const int64_t chunk = images_per_chunk(s, ConvPass::backward_weight, sizeof(T), workspace_bytes);
  Carver carve(workspace, workspace_bytes);
  T* padded = carve.take<T>(chunk * s.c_in * hp * wp);
  // vecs[block][pixel][lane] = grad_y[image, block * L + lane, pixel], zero past c_out.
  T* vecs = carve.take<T>(blocks * chunk * hw_out * L);
  int64_t* offsets = carve.take<int64_t>(chunk * hw_out);
  constexpr int P = pixels_for<L>();
  // The register rows are filter columns when the filter is wide enough to fill them
  // (DeepSpeech2's 11x21), else input channels (VGG's 3x3): an axis of the padded input and
  // of grad_weight, with its stride in each.
  struct Axis {
    int64_t count, input_stride, weight_stride;
  };
  const Axis columns{s.kw, s.dil_w, 1}, channels{s.c_in, hp * wp, s.kh * s.kw};
  const bool channel_rows = weight_rows_are_channels(s, P);
  const Axis rows = channel_rows ? channels : columns, across = channel_rows ? columns : channels;
  const int64_t step = even_step(rows.count, P), row_blocks = (rows.count + step - 1) / step;
  const int64_t tile = std::max<int64_t>(int64_t(kWeightTileBytes / (L * sizeof(T))), 1);

  for (int64_t n0 = 0; n0 < s.n; n0 += chunk) {
    const int64_t images = std::min(chunk, s.n - n0), pixels_total = images * hw_out;
    pad_planes(x + n0 * s.c_in * s.h * s.w, images * s.c_in, s.h, s.w, s.pad_h, s.pad_w, hp, wp,
               padded);
    for (int64_t b = 0; b < images; ++b)
      for (int64_t oh = 0; oh < s.h_out; ++oh)
        for (int64_t ow = 0; ow < s.w_out; ++ow)
          offsets[b * hw_out + oh * s.w_out + ow] =
              b * s.c_in * hp * wp + oh * s.stride_h * wp + ow * s.stride_w;
#pragma omp parallel for collapse(2) schedule(static) if (parallel_worth(s))
    for (int64_t block = 0; block < blocks; ++block) {
      for (int64_t b = 0; b < images; ++b) {
        T* dst = vecs + (block * pixels_total + b * hw_out) * L;
        for (int64_t l = 0; l < L; ++l) {
          const int64_t co = block * L + l;
          if (co >= s.c_out) {
            for (int64_t p = 0; p < hw_out; ++p) dst[p * L + l] = T(0);
            continue;
          }
          const T* plane = grad_y + ((n0 + b) * s.c_out + co) * hw_out;
          for (int64_t p = 0; p < hw_out; ++p) dst[p * L + l] = plane[p];
        }
      }
    }
    for (int64_t t0 = 0; t0 < pixels_total; t0 += tile) {
      const int64_t terms = std::min(tile, pixels_total - t0);
#pragma omp parallel for collapse(4) schedule(static) if (parallel_worth(s))
      for (int64_t block = 0; block < blocks; ++block) {
        for (int64_t o = 0; o < across.count; ++o) {
          for (int64_t i = 0; i < s.kh; ++i) {
            for (int64_t row_block = 0; row_block < row_blocks; ++row_block) {
              const int64_t r0 = row_block * step;
              const int pixels = int(std::min(step, rows.count - r0));
              T out[kPixels][L];
              product_of(
                  pixels, terms, vecs + (block * pixels_total + t0) * L, offsets + t0,
                  padded + o * across.input_stride + r0 * rows.input_stride + i * s.dil_h * wp,
                  rows.input_stride, out);
              const int64_t lanes = std::min(L, s.c_out - block * L);
              for (int64_t l = 0; l < lanes; ++l) {
                T* dst = grad_weight + (block * L + l) * taps + i * s.kw +
                         o * across.weight_stride + r0 * rows.weight_stride;
                for (int p = 0; p < pixels; ++p) dst[p * rows.weight_stride] += out[p][l];
              }
            }
          }
        }
      }
    }
  }
}

template <typename T, int64_t L>
void backward_input_typed(const Conv2dShape& s, const T* grad_y, const T* weight, T* grad_x,
                          void* workspace, size_t workspace_bytes) {
  const Phases rows = phases_along(s.h, s.h_out, s.kh, s.stride_h, s.pad_h, s.dil_h);
  const Phases cols = phases_along(s.w, s.w_out, s.kw, s.stride_w, s.pad_w, s.dil_w);
  const int64_t hg = rows.extent, wg = cols.extent, hw_out = s.h_out * s.w_out;
  const int64_t terms = s.c_out * s.kh * s.kw, classes = s.stride_h * s.stride_w;
  const int64_t blocks = lane_blocks(s.c_in, L);
  constexpr int P = pixels_for<L>();
  const int64_t chunk = images_per_chunk(s, ConvPass::backward_input, sizeof(T), workspace_bytes);
  Carver carve(workspace, workspace_bytes);
  // Terms grouped by phase class (rh, rw): class k's are [first[k], first[k + 1]).
  T* vecs = carve.take<T>(blocks * terms * L);
  int64_t* offsets = carve.take<int64_t>(terms);
  int64_t* first = carve.take<int64_t>(classes + 1);
  T* padded = carve.take<T>(chunk * s.c_out * hg * wg);
  int64_t term = 0;
  for (int64_t rh = 0; rh < s.stride_h; ++rh) {
    for (int64_t rw = 0; rw < s.stride_w; ++rw) {
      first[rh * s.stride_w + rw] = term;
      for (int64_t co = 0; co < s.c_out; ++co)
        for (int64_t i = 0; i < s.kh; ++i) {
          if (rows.phase[size_t(i)] != rh) continue;
          for (int64_t j = 0; j < s.kw; ++j) {
            if (cols.phase[size_t(j)] != rw) continue;
            offsets[term] = co * hg * wg + (rows.margin + rows.shift[size_t(i)]) * wg +
                            cols.margin + cols.shift[size_t(j)];
            for (int64_t block = 0; block < blocks; ++block)
              for (int64_t l = 0; l < L; ++l) {
                const int64_t ci = block * L + l;
                vecs[(block * terms + term) * L + l] =
                    ci < s.c_in ? weight[((co * s.c_in + ci) * s.kh + i) * s.kw + j] : T(0);
              }
            ++term;
          }
        }
    }
  }
  first[classes] = term;

  for (int64_t n0 = 0; n0 < s.n; n0 += chunk) {
    const int64_t images = std::min(chunk, s.n - n0);
    pad_planes(grad_y + n0 * s.c_out * hw_out, images * s.c_out, s.h_out, s.w_out, rows.margin,
               cols.margin, hg, wg, padded);
    // The block outermost, as in the forward pass.
#pragma omp parallel for collapse(3) schedule(static) if (parallel_worth(s))
    for (int64_t block = 0; block < blocks; ++block) {
      for (int64_t b = 0; b < images; ++b) {
        for (int64_t ih = 0; ih < s.h; ++ih) {
          const int64_t rh = ih % s.stride_h, a = ih / s.stride_h;
          const int64_t lanes = std::min(L, s.c_in - block * L);
          T out[kPixels][L];
          for (int64_t rw = 0; rw < s.stride_w && rw < s.w; ++rw) {
            const int64_t k = rh * s.stride_w + rw,
                          count = (s.w - rw + s.stride_w - 1) / s.stride_w;
            const int64_t begin = first[k], class_terms = first[k + 1] - begin;
            const T* row = padded + b * s.c_out * hg * wg + a * wg;
            const int64_t step = even_step(count, P);
            for (int64_t c0 = 0; c0 < count; c0 += step) {
              const int pixels = int(std::min(step, count - c0));
              product_of(pixels, class_terms, vecs + (block * terms + begin) * L, offsets + begin,
                         row + c0, 1, out);
              for (int64_t l = 0; l < lanes; ++l) {
                T* dst = grad_x + ((n0 + b) * s.c_in + block * L + l) * s.h * s.w + ih * s.w;
                for (int p = 0; p < pixels; ++p) dst[(c0 + p) * s.stride_w + rw] = out[p][l];
              }
            }
          }
        }
      }
    }
  }
}

// fn.template operator()<L>() at the lanes of `channels` lane channels.
template <typename Fn>
void with_lanes(int64_t channels, Fn&& fn) {
  const int64_t lanes = lanes_for(channels);
  if constexpr (kWidestLanes >= 32)
    if (lanes == 32) return fn.template operator()<32>();
  if constexpr (kWidestLanes >= 16)
    if (lanes == 16) return fn.template operator()<16>();
  fn.template operator()<8>();
}

}  // namespace

bool suits(const Conv2dShape& s, ConvPass pass) {
  if (s.channels_last) return false;
  switch (pass) {
    case ConvPass::forward:
      return true;
    case ConvPass::backward_input:
      // Fewer input channels than a vector leaves most lanes idle (a network's first layer,
      // whose input gradient training never asks for).
      return s.c_in >= cpu::direct_conv::kMinInputGradientChannels;
    case ConvPass::backward_weight:
      // The rows held in registers are filter columns or input channels: a 3x3 filter over
      // one input channel fills 3 of 8, and the GEMM over image columns does better.
      return s.kw >= cpu::direct_conv::kMinWeightGradientRows ||
             s.c_in >= cpu::direct_conv::kMinWeightGradientRows * 2;
  }
  return false;
}

size_t workspace_bytes(DType dtype, const Conv2dShape& s, ConvPass pass) {
  const Plan plan = plan_of(s, pass, dtype_size(dtype));
  if (plan.per_image == 0) return plan.fixed;
  const int64_t images =
      std::clamp<int64_t>(int64_t(kWorkspaceCap / plan.per_image), 1, std::max<int64_t>(s.n, 1));
  return plan.fixed + plan.per_image * size_t(images);
}

void forward(DType dtype, const Conv2dShape& s, const void* x, const void* weight, const void* bias,
             void* y, void* workspace, size_t workspace_bytes) {
  SONATA_NVTX_RANGE("sonata::cpu::conv2d_forward_direct");
  dispatch_f32_f64(dtype, "conv2d", [&]<typename T>() {
    if (s.n == 0 || s.h_out * s.w_out == 0) return;
    with_lanes(s.c_out, [&]<int64_t L>() {
      forward_typed<T, L>(s, static_cast<const T*>(x), static_cast<const T*>(weight),
                          static_cast<const T*>(bias), static_cast<T*>(y), workspace,
                          workspace_bytes);
    });
  });
}

void backward_input(DType dtype, const Conv2dShape& s, const void* grad_y, const void* weight,
                    void* grad_x, void* workspace, size_t workspace_bytes) {
  SONATA_NVTX_RANGE("sonata::cpu::conv2d_backward_input_direct");
  dispatch_f32_f64(dtype, "conv2d_backward_input", [&]<typename T>() {
    if (s.n == 0) return;
    T* gx = static_cast<T*>(grad_x);
    if (s.h_out * s.w_out == 0) {
      std::fill(gx, gx + s.n * s.c_in * s.h * s.w, T(0));
      return;
    }
    with_lanes(s.c_in, [&]<int64_t L>() {
      backward_input_typed<T, L>(s, static_cast<const T*>(grad_y), static_cast<const T*>(weight),
                                 gx, workspace, workspace_bytes);
    });
  });
}

void backward_weight(DType dtype, const Conv2dShape& s, const void* grad_y, const void* x,
                     void* grad_weight, void* grad_bias, void* workspace, size_t workspace_bytes) {
  SONATA_NVTX_RANGE("sonata::cpu::conv2d_backward_weight_direct");
  dispatch_f32_f64(dtype, "conv2d_backward_weight", [&]<typename T>() {
    T* gw = static_cast<T*>(grad_weight);
    T* gb = static_cast<T*>(grad_bias);
    if (s.n == 0 || s.h_out * s.w_out == 0) {
      std::fill(gw, gw + s.c_out * s.patch(), T(0));
      if (gb) std::fill(gb, gb + s.c_out, T(0));
      return;
    }
    with_lanes(s.c_out, [&]<int64_t L>() {
      backward_weight_typed<T, L>(s, static_cast<const T*>(grad_y), static_cast<const T*>(x), gw,
                                  gb, workspace, workspace_bytes);
    });
  });
}

}  // namespace direct_conv
SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The public functions: each runs the active capability's copy.
namespace sonata::kernels::cpu {

#define SONATA_DIRECT_CONV_DECLARE(ns)                                            \
  namespace ns::direct_conv {                                                     \
  decltype(::sonata::kernels::cpu::direct_conv::suits) suits;                     \
  decltype(::sonata::kernels::cpu::direct_conv::workspace_bytes) workspace_bytes; \
  decltype(::sonata::kernels::cpu::direct_conv::forward) forward;                 \
  decltype(::sonata::kernels::cpu::direct_conv::backward_input) backward_input;   \
  decltype(::sonata::kernels::cpu::direct_conv::backward_weight) backward_weight; \
  }
SONATA_CPU_FOR_EACH_NS(SONATA_DIRECT_CONV_DECLARE)
#undef SONATA_DIRECT_CONV_DECLARE

namespace direct_conv {

bool suits(const Conv2dShape& shape, ConvPass pass) {
  return SONATA_CPU_CALL(direct_conv::suits)(shape, pass);
}

size_t workspace_bytes(DType dtype, const Conv2dShape& shape, ConvPass pass) {
  return SONATA_CPU_CALL(direct_conv::workspace_bytes)(dtype, shape, pass);
}

void forward(DType dtype, const Conv2dShape& shape, const void* x, const void* weight,
             const void* bias, void* y, void* workspace, size_t workspace_bytes) {
  SONATA_CPU_CALL(direct_conv::forward)
  (dtype, shape, x, weight, bias, y, workspace, workspace_bytes);
}

void backward_input(DType dtype, const Conv2dShape& shape, const void* grad_y, const void* weight,
                    void* grad_x, void* workspace, size_t workspace_bytes) {
  SONATA_CPU_CALL(direct_conv::backward_input)
  (dtype, shape, grad_y, weight, grad_x, workspace, workspace_bytes);
}

void backward_weight(DType dtype, const Conv2dShape& shape, const void* grad_y, const void* x,
                     void* grad_weight, void* grad_bias, void* workspace, size_t workspace_bytes) {
  SONATA_CPU_CALL(direct_conv::backward_weight)
  (dtype, shape, grad_y, x, grad_weight, grad_bias, workspace, workspace_bytes);
}

}  // namespace direct_conv

}  // namespace sonata::kernels::cpu
#endif
