#include "kernels/cpu/conv.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "base/nvtx.h"
#include "kernels/cpu/conv_direct.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_packed.h"

namespace sonata::kernels::cpu {
namespace {

// Columns of as many images as fit in this many bytes go into one GEMM: 128 MiB holds a
// whole batch of 8 VGG-sized 64-channel 64x64 maps, yet bounds memory on big batches.
constexpr size_t kWorkspaceCap = size_t(128) << 20;
// These loops only move memory: below this many elements OpenMP's fork costs more than it
// saves, and its idle threads keep spinning while OpenBLAS's own threads run the GEMM.
constexpr int64_t kParallelMin = int64_t(1) << 20;

// Per image: its im2col columns [patch, hw_out] plus its [c_out, hw_out] slice of the
// GEMM's other operand or result.
int64_t elements_per_image(const Conv2dShape& s) {
  return (s.patch() + s.c_out) * s.h_out * s.w_out;
}

int64_t images_per_chunk(const Conv2dShape& s, size_t element_size, size_t workspace_bytes) {
  const size_t per_image = size_t(elements_per_image(s)) * element_size;
  SONATA_CHECK(workspace_bytes >= per_image, "sonata::cpu::conv2d: workspace of ", workspace_bytes,
               " bytes is smaller than one image's ", per_image,
               " (size it with conv2d_workspace_bytes)");
  return std::clamp<int64_t>(int64_t(workspace_bytes / per_image), 1, std::max<int64_t>(s.n, 1));
}

// Output columns [lo, hi) whose input column ow * stride + offset lies inside [0, w).
struct ValidRange {
  int64_t lo, hi;
};
ValidRange valid_columns(int64_t offset, int64_t stride, int64_t w, int64_t w_out) {
  const int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t last = w - 1 - offset;  // the largest ow * stride allowed
  const int64_t hi = last < 0 ? 0 : std::min(w_out, last / stride + 1);
  return {std::min(lo, w_out), std::max(std::min(lo, w_out), hi)};
}

// cols[r, b * hw_out + p]: row r = (c, i, j) of the patch, image b of the chunk, output
// pixel p; zero where the window reaches into the padding.
template <typename T>
void im2col(const Conv2dShape& s, const T* x, int64_t images, T* cols) {
  const int64_t hw_out = s.h_out * s.w_out, row_len = images * hw_out, rows = s.patch();
#pragma omp parallel for collapse(2) schedule(static) if (rows * row_len >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < images; ++b) {
      const int64_t c = r / (s.kh * s.kw), i = (r / s.kw) % s.kh, j = r % s.kw;
      const T* plane = x + (b * s.c_in + c) * s.h * s.w;
      T* dst = cols + r * row_len + b * hw_out;
      const int64_t w_offset = j * s.dil_w - s.pad_w;
      const ValidRange valid = valid_columns(w_offset, s.stride_w, s.w, s.w_out);
      for (int64_t oh = 0; oh < s.h_out; ++oh) {
        T* out = dst + oh * s.w_out;
        const int64_t ih = oh * s.stride_h - s.pad_h + i * s.dil_h;
        if (ih < 0 || ih >= s.h) {
          std::fill(out, out + s.w_out, T(0));
          continue;
        }
        const T* src = plane + ih * s.w + w_offset;
        std::fill(out, out + valid.lo, T(0));
        for (int64_t ow = valid.lo; ow < valid.hi; ++ow) out[ow] = src[ow * s.stride_w];
        std::fill(out + valid.hi, out + s.w_out, T(0));
      }
    }
  }
}

// The adjoint of im2col: sums the columns back into the images' planes (overwritten). Each
// (image, channel) plane is written by its own thread, so there are no races.
template <typename T>
void col2im(const Conv2dShape& s, const T* cols, int64_t images, T* x) {
  const int64_t hw_out = s.h_out * s.w_out, row_len = images * hw_out;
#pragma omp parallel for collapse(2) schedule(static) if (s.patch() * row_len >= kParallelMin)
  for (int64_t b = 0; b < images; ++b) {
    for (int64_t c = 0; c < s.c_in; ++c) {
      T* plane = x + (b * s.c_in + c) * s.h * s.w;
      std::fill(plane, plane + s.h * s.w, T(0));
      for (int64_t i = 0; i < s.kh; ++i) {
        for (int64_t j = 0; j < s.kw; ++j) {
          const T* src = cols + ((c * s.kh + i) * s.kw + j) * row_len + b * hw_out;
          const int64_t w_offset = j * s.dil_w - s.pad_w;
          const ValidRange valid = valid_columns(w_offset, s.stride_w, s.w, s.w_out);
          for (int64_t oh = 0; oh < s.h_out; ++oh) {
            const int64_t ih = oh * s.stride_h - s.pad_h + i * s.dil_h;
            if (ih < 0 || ih >= s.h) continue;
            T* dst = plane + ih * s.w + w_offset;
            const T* row = src + oh * s.w_out;
            for (int64_t ow = valid.lo; ow < valid.hi; ++ow) dst[ow * s.stride_w] += row[ow];
          }
        }
      }
    }
  }
}

// [images, c_out, hw_out] (a chunk of y or grad_y) <-> [c_out, images * hw_out] (the GEMM's).
template <typename T>
void images_to_rows(const T* images_data, int64_t images, int64_t channels, int64_t hw, T* rows) {
#pragma omp parallel for collapse(2) schedule(static) if (images * channels * hw >= kParallelMin)
  for (int64_t b = 0; b < images; ++b)
    for (int64_t c = 0; c < channels; ++c)
      std::memcpy(rows + (c * images + b) * hw, images_data + (b * channels + c) * hw,
                  size_t(hw) * sizeof(T));
}

template <typename T>
void rows_to_images(const T* rows, const T* bias, int64_t images, int64_t channels, int64_t hw,
                    T* images_data) {
#pragma omp parallel for collapse(2) schedule(static) if (images * channels * hw >= kParallelMin)
  for (int64_t b = 0; b < images; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      const T* src = rows + (c * images + b) * hw;
      T* dst = images_data + (b * channels + c) * hw;
      const T shift = bias ? bias[c] : T(0);
      for (int64_t p = 0; p < hw; ++p) dst[p] = src[p] + shift;
    }
  }
}

// Row-major C[m, n] = alpha * op(A) op(B) + beta * C, one product.
void gemm_once(DType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
               int64_t ldc) {
  GemmShape g;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  gemm(dtype, g, 1.0, a, b, beta, c);
}

// f32 products that the packed sgemm takes read their im2col columns straight from the
// images (ImageColumns): the columns are never written out and read back.
template <typename T>
bool columns_from_images(int64_t m, int64_t n, int64_t k) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;
  } else {
    GemmShape g;
    g.m = m, g.n = n, g.k = k;
    return packed_sgemm_applies(g);
  }
}

// With stride 1 the input gradient is itself a convolution: grad_y, padded by
// dil * (k - 1) - pad, correlated with the weights flipped in space and with their channel
// axes swapped. Run as the forward (its columns read from grad_y by the packed sgemm), it
// replaces a product of depth c_out (61-93 GFMA/s on VGG's 64- and 128-channel layers) and
// col2im's nine passes over grad_x. False (nothing done) where it does not apply.
bool backward_input_as_forward(const Conv2dShape& s, const float* grad_y, const float* weight,
                               float* grad_x, void* workspace, size_t workspace_bytes) {
  // Narrow images stay with columns: rows of 8 make every B panel six short runs, and
  // VGG's last 8 x 8 layers ran 10 % slower this way.
  if (s.stride_h != 1 || s.stride_w != 1 || s.pad_h > s.dil_h * (s.kh - 1) ||
      s.pad_w > s.dil_w * (s.kw - 1) || s.w < 16)
    return false;
  Conv2dShape t = s;
  t.c_in = s.c_out, t.h = s.h_out, t.w = s.w_out;
  t.c_out = s.c_in, t.h_out = s.h, t.w_out = s.w;
  t.pad_h = s.dil_h * (s.kh - 1) - s.pad_h, t.pad_w = s.dil_w * (s.kw - 1) - s.pad_w;
  const int64_t hw = s.h * s.w;
  // The GEMM's output rows [c_in, images * hw] live in the workspace.
  const int64_t chunk = std::min<int64_t>(
      s.n, int64_t(workspace_bytes / (sizeof(float) * size_t(std::max<int64_t>(s.c_in * hw, 1)))));
  if (chunk < 1 || !columns_from_images<float>(t.c_out, chunk * hw, t.patch())) return false;
  // flipped[ci, co, i, j] = weight[co, ci, kh - 1 - i, kw - 1 - j]
  thread_local std::vector<float> flipped;
  flipped.resize(size_t(s.c_in * s.c_out * s.kh * s.kw));
  const int64_t taps = s.kh * s.kw;
  float* flipped_data = flipped.data();
#pragma omp parallel for schedule(static) if (s.c_in * s.c_out * taps >= kParallelMin)
  for (int64_t ci = 0; ci < s.c_in; ++ci)
    for (int64_t co = 0; co < s.c_out; ++co)
      for (int64_t tap = 0; tap < taps; ++tap)
        flipped_data[(ci * s.c_out + co) * taps + (taps - 1 - tap)] =
            weight[(co * s.c_in + ci) * taps + tap];
  float* rows = static_cast<float*>(workspace);
  for (int64_t n0 = 0; n0 < s.n; n0 += chunk) {
    const int64_t images = std::min(chunk, s.n - n0), row_len = images * hw;
    GemmShape g;
    g.m = t.c_out, g.n = row_len, g.k = t.patch(), g.lda = t.patch(), g.ldc = row_len;
    packed_sgemm_image(g, 1.0f, flipped.data(),
                       {t, grad_y + n0 * s.c_out * s.h_out * s.w_out, images}, 0.0f, rows);
    rows_to_images(rows, static_cast<const float*>(nullptr), images, s.c_in, hw,
                   grad_x + n0 * s.c_in * hw);
  }
  return true;
}

// The CPU kernels are the NCHW reference; the engine converts channels-last tensors first.
void require_nchw(const Conv2dShape& s) {
  SONATA_CHECK(!s.channels_last,
               "sonata::cpu::conv2d: the CPU kernels take NCHW tensors, not channels-last");
}

// `automatic` made definite. Both algorithms take every NCHW shape; the choice is speed.
CpuConvAlgorithm resolve(const Conv2dShape& s, ConvPass pass, CpuConvAlgorithm algorithm) {
  if (algorithm == CpuConvAlgorithm::automatic) return conv2d_algorithm(s, pass);
  return algorithm;
}

}  // namespace

CpuConvAlgorithm conv2d_algorithm(const Conv2dShape& shape, ConvPass pass) {
  return direct_conv::suits(shape, pass) ? CpuConvAlgorithm::direct : CpuConvAlgorithm::im2col_gemm;
}

size_t conv2d_workspace_bytes(DType dtype, const Conv2dShape& shape, ConvPass pass,
                              CpuConvAlgorithm algorithm) {
  require_nchw(shape);
  if (resolve(shape, pass, algorithm) == CpuConvAlgorithm::direct)
    return direct_conv::workspace_bytes(dtype, shape, pass);
  const size_t per_image = size_t(elements_per_image(shape)) * dtype_size(dtype);
  if (per_image == 0) return 0;
  const int64_t images =
      std::clamp<int64_t>(int64_t(kWorkspaceCap / per_image), 1, std::max<int64_t>(shape.n, 1));
  return per_image * size_t(images);
}

void conv2d_forward(DType dtype, const Conv2dShape& s, const void* x, const void* weight,
                    const void* bias, void* y, void* workspace, size_t workspace_bytes,
                    CpuConvAlgorithm algorithm) {
  require_nchw(s);
  if (resolve(s, ConvPass::forward, algorithm) == CpuConvAlgorithm::direct)
    return direct_conv::forward(dtype, s, x, weight, bias, y, workspace, workspace_bytes);
  SONATA_NVTX_RANGE("sonata::cpu::conv2d_forward");
  dispatch_f32_f64(dtype, "conv2d", [&]<typename T>() {
    if (s.n == 0 || s.h_out * s.w_out == 0) return;
    const int64_t chunk = images_per_chunk(s, sizeof(T), workspace_bytes);
    const int64_t hw_out = s.h_out * s.w_out;
    for (int64_t n0 = 0; n0 < s.n; n0 += chunk) {
      const int64_t images = std::min(chunk, s.n - n0), row_len = images * hw_out;
      T* cols = static_cast<T*>(workspace);
      T* rows = cols + s.patch() * row_len;
      const T* chunk_x = static_cast<const T*>(x) + n0 * s.c_in * s.h * s.w;
      if (columns_from_images<T>(s.c_out, row_len, s.patch())) {
        if constexpr (std::is_same_v<T, float>) {
          GemmShape g;
          g.m = s.c_out, g.n = row_len, g.k = s.patch(), g.lda = s.patch(), g.ldc = row_len;
          packed_sgemm_image(g, 1.0f, static_cast<const float*>(weight), {s, chunk_x, images}, 0.0f,
                             rows);
        }
      } else {
        im2col(s, chunk_x, images, cols);
        gemm_once(dtype, false, false, s.c_out, row_len, s.patch(), weight, s.patch(), cols,
                  row_len, 0.0, rows, row_len);
      }
      rows_to_images(rows, static_cast<const T*>(bias), images, s.c_out, hw_out,
                     static_cast<T*>(y) + n0 * s.c_out * hw_out);
    }
  });
}

void conv2d_backward_input(DType dtype, const Conv2dShape& s, const void* grad_y,
                           const void* weight, void* grad_x, void* workspace,
                           size_t workspace_bytes, CpuConvAlgorithm algorithm) {
  require_nchw(s);
  if (resolve(s, ConvPass::backward_input, algorithm) == CpuConvAlgorithm::direct)
    return direct_conv::backward_input(dtype, s, grad_y, weight, grad_x, workspace,
                                       workspace_bytes);
  SONATA_NVTX_RANGE("sonata::cpu::conv2d_backward_input");
  dispatch_f32_f64(dtype, "conv2d_backward_input", [&]<typename T>() {
    if (s.n == 0) return;
    T* gx = static_cast<T*>(grad_x);
    const int64_t hw_out = s.h_out * s.w_out;
    if (hw_out == 0) {
      std::fill(gx, gx + s.n * s.c_in * s.h * s.w, T(0));
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      if (backward_input_as_forward(s, static_cast<const float*>(grad_y),
                                    static_cast<const float*>(weight), gx, workspace,
                                    workspace_bytes))
        return;
    }
    const int64_t chunk = images_per_chunk(s, sizeof(T), workspace_bytes);
    for (int64_t n0 = 0; n0 < s.n; n0 += chunk) {
      const int64_t images = std::min(chunk, s.n - n0), row_len = images * hw_out;
      T* cols = static_cast<T*>(workspace);
      T* rows = cols + s.patch() * row_len;
      images_to_rows(static_cast<const T*>(grad_y) + n0 * s.c_out * hw_out, images, s.c_out, hw_out,
                     rows);
      // cols[patch, row_len] = weight^T [patch, c_out] @ rows [c_out, row_len].
      gemm_once(dtype, true, false, s.patch(), row_len, s.c_out, weight, s.patch(), rows, row_len,
                0.0, cols, row_len);
      col2im(s, cols, images, gx + n0 * s.c_in * s.h * s.w);
    }
  });
}

void conv2d_backward_weight(DType dtype, const Conv2dShape& s, const void* grad_y, const void* x,
                            void* grad_weight, void* grad_bias, void* workspace,
                            size_t workspace_bytes, CpuConvAlgorithm algorithm) {
  require_nchw(s);
  if (resolve(s, ConvPass::backward_weight, algorithm) == CpuConvAlgorithm::direct)
    return direct_conv::backward_weight(dtype, s, grad_y, x, grad_weight, grad_bias, workspace,
                                        workspace_bytes);
  SONATA_NVTX_RANGE("sonata::cpu::conv2d_backward_weight");
  dispatch_f32_f64(dtype, "conv2d_backward_weight", [&]<typename T>() {
    T* gw = static_cast<T*>(grad_weight);
    T* gb = static_cast<T*>(grad_bias);
    std::fill(gw, gw + s.c_out * s.patch(), T(0));
    if (gb) std::fill(gb, gb + s.c_out, T(0));
    const int64_t hw_out = s.h_out * s.w_out;
    if (s.n == 0 || hw_out == 0) return;
    const int64_t chunk = images_per_chunk(s, sizeof(T), workspace_bytes);
    for (int64_t n0 = 0; n0 < s.n; n0 += chunk) {
      const int64_t images = std::min(chunk, s.n - n0), row_len = images * hw_out;
      T* cols = static_cast<T*>(workspace);
      T* rows = cols + s.patch() * row_len;
      const T* chunk_x = static_cast<const T*>(x) + n0 * s.c_in * s.h * s.w;
      images_to_rows(static_cast<const T*>(grad_y) + n0 * s.c_out * hw_out, images, s.c_out, hw_out,
                     rows);
      // grad_weight[c_out, patch] += rows [c_out, row_len] @ cols^T [row_len, patch].
      if (columns_from_images<T>(s.c_out, s.patch(), row_len)) {
        if constexpr (std::is_same_v<T, float>) {
          GemmShape g;
          g.trans_b = true;
          g.m = s.c_out, g.n = s.patch(), g.k = row_len, g.lda = row_len, g.ldc = s.patch();
          packed_sgemm_image(g, 1.0f, rows, {s, chunk_x, images}, 1.0f, gw);
        }
      } else {
        im2col(s, chunk_x, images, cols);
        gemm_once(dtype, false, true, s.c_out, s.patch(), row_len, rows, row_len, cols, row_len,
                  1.0, gw, s.patch());
      }
      if (!gb) continue;
#pragma omp parallel for schedule(static) if (s.c_out * row_len >= kParallelMin)
      for (int64_t c = 0; c < s.c_out; ++c) {
        double total = 0;  // a long sum: accumulate in double
        for (int64_t p = 0; p < row_len; ++p) total += rows[c * row_len + p];
        gb[c] += T(total);
      }
    }
  });
}

}  // namespace sonata::kernels::cpu
