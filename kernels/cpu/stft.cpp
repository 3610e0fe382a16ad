#include "kernels/cpu/stft.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "base/error.h"
#include "base/nvtx.h"
#include "kernels/cpu/capability_region.h"

SONATA_CPU_BEGIN
namespace {

constexpr int64_t kLanes = StftPlan::kLanes;
// One float per frame of a block: GCC and clang turn each operator into one (AVX-512) or a
// few vector instructions. may_alias: the gather writes the same memory as floats. V is
// passed by reference, never by value, so no function's calling convention depends on the
// ISA (GCC's -Wpsabi note without AVX-512). aligned: GCC aligns a vector type to at most the
// ISA's register size *where the alignment is asked*, so inside this AVX2 region V was 32-byte
// aligned while std::vector<Complex>'s allocator (a header template, baseline) took it for
// 16 and allocated on 16 bytes: the aligned loads faulted. One explicit alignment for all.
//
// A row of the buffers holds kLanes frames; V holds kVectorLanes of them, one register of the
// capability, and a row is kSplit V's. The FFT of each V-wide share of the frames is run on
// its own (the lanes never mix): with 16-frame vectors the AVX2 copy held each in two ymm
// registers and its butterflies spilled (2 487 of its 4 291 instructions addressed the stack,
// log-mel ran 6x slower than AVX-512, not 2x).
#if SONATA_CPU_CAPABILITY == 2
constexpr int64_t kVectorLanes = 16;
#elif SONATA_CPU_CAPABILITY == 1
constexpr int64_t kVectorLanes = 8;
#else
constexpr int64_t kVectorLanes = 4;
#endif
constexpr int64_t kSplit = kLanes / kVectorLanes;
typedef float V __attribute__((vector_size(kVectorLanes * sizeof(float)),
                               aligned(kVectorLanes * sizeof(float)), __may_alias__));
constexpr int64_t kAlign = alignof(V) / sizeof(float);
// StftPlan::workspace_floats (the baseline compile) leaves room for this alignment.
static_assert(kAlign * kSplit == StftPlan::kLanes);

struct Complex {
  V re, im;
};

inline Complex operator+(const Complex& a, const Complex& b) {
  return {a.re + b.re, a.im + b.im};
}
inline Complex operator-(const Complex& a, const Complex& b) {
  return {a.re - b.re, a.im - b.im};
}
inline Complex scale(const Complex& a, float s) {
  return {a.re * s, a.im * s};
}
// a * (c + i s) with a broadcast constant.
inline Complex rotate(const Complex& a, float c, float s) {
  return {a.re * c - a.im * s, a.re * s + a.im * c};
}
// a * (-i)
inline Complex minus_i(const Complex& a) {
  return {a.im, -a.re};
}

// Forward butterflies: A[q] = sum_r a[r] e^{-2 pi i r q / R}.
inline void butterfly2(Complex* a) {
  const Complex t = a[0] - a[1];
  a[0] = a[0] + a[1];
  a[1] = t;
}

inline void butterfly3(Complex* a) {
  constexpr float kSin60 = 0.866025403784438646763723170752936f;
  const Complex sum = a[1] + a[2];
  const Complex mid = a[0] - scale(sum, 0.5f);
  const Complex turn = scale(minus_i(a[1] - a[2]), kSin60);
  a[0] = a[0] + sum;
  a[1] = mid + turn;
  a[2] = mid - turn;
}

inline void butterfly4(Complex* a) {
  const Complex t0 = a[0] + a[2], t1 = a[0] - a[2];
  const Complex t2 = a[1] + a[3], t3 = minus_i(a[1] - a[3]);
  a[0] = t0 + t2;
  a[1] = t1 + t3;
  a[2] = t0 - t2;
  a[3] = t1 - t3;
}

inline void butterfly5(Complex* a) {
  const float c1 = float(std::cos(2 * std::numbers::pi / 5));
  const float c2 = float(std::cos(4 * std::numbers::pi / 5));
  const float s1 = float(std::sin(2 * std::numbers::pi / 5));
  const float s2 = float(std::sin(4 * std::numbers::pi / 5));
  const Complex b1 = a[1] + a[4], b2 = a[2] + a[3];
  const Complex d1 = a[1] - a[4], d2 = a[2] - a[3];
  const Complex r1 = a[0] + scale(b1, c1) + scale(b2, c2);
  const Complex r2 = a[0] + scale(b1, c2) + scale(b2, c1);
  // -i times the odd parts.
  const Complex i1 = minus_i(scale(d1, s1) + scale(d2, s2));
  const Complex i2 = minus_i(scale(d1, s2) - scale(d2, s1));
  a[0] = a[0] + b1 + b2;
  a[1] = r1 + i1;
  a[4] = r1 - i1;
  a[2] = r2 + i2;
  a[3] = r2 - i2;
}

// Any radix by definition; `roots` holds e^{-2 pi i q / radix} for q < radix.
void butterfly_direct(Complex* a, int64_t radix, const float* roots, Complex* out) {
  for (int64_t q = 0; q < radix; ++q) {
    Complex sum = a[0];
    for (int64_t r = 1; r < radix; ++r) {
      const int64_t at = (r * q) % radix;
      sum = sum + rotate(a[r], roots[2 * at], roots[2 * at + 1]);
    }
    out[q] = sum;
  }
  std::copy(out, out + radix, a);
}

// One Stockham pass (Govindaraju et al. 2008): y[(j / span) * span * R + j % span + q * span]
// = DFT_R over r of x[j + r * n / R] * w^{r (j % span)}, w = e^{-2 pi i / (span R)}.
// Element e of a row buffer is V number e * kSplit (the pointers start at a row's share).
template <int64_t R>
void stockham_pass(int64_t n, int64_t span, const float* twiddles, const V* src_re, const V* src_im,
                   V* dst_re, V* dst_im, int64_t radix, const float* roots) {
  const int64_t stride = n / radix;
  // Fixed radices keep a[] in registers; the direct DFT takes any prime.
  Complex fixed[R > 0 ? R : 1];
  std::vector<Complex> any(R > 0 ? 0 : size_t(2 * radix));
  Complex* a = R > 0 ? fixed : any.data();
  for (int64_t j0 = 0; j0 < stride; j0 += span) {
    for (int64_t k = 0; k < span; ++k) {
      const int64_t j = j0 + k;
      a[0] = {src_re[j * kSplit], src_im[j * kSplit]};
      const float* w = twiddles + 2 * k * (radix - 1);
      for (int64_t r = 1; r < radix; ++r) {
        const Complex x{src_re[(j + r * stride) * kSplit], src_im[(j + r * stride) * kSplit]};
        a[r] = span == 1 ? x : rotate(x, w[2 * (r - 1)], w[2 * (r - 1) + 1]);
      }
      if constexpr (R == 2)
        butterfly2(a);
      else if constexpr (R == 3)
        butterfly3(a);
      else if constexpr (R == 4)
        butterfly4(a);
      else if constexpr (R == 5)
        butterfly5(a);
      else
        butterfly_direct(a, radix, roots, a + radix);
      const int64_t out = j0 * radix + k;
      for (int64_t q = 0; q < radix; ++q) {
        dst_re[(out + q * span) * kSplit] = a[q].re;
        dst_im[(out + q * span) * kSplit] = a[q].im;
      }
    }
  }
}

// |X|^power per lane, from |X|^2, into kVectorLanes floats.
inline void store_power(float* out, const V& squared, float power) {
  if (power == 2.0f) {
    std::memcpy(out, &squared, sizeof(V));
  } else if (power == 1.0f) {
    for (int64_t l = 0; l < kVectorLanes; ++l) out[l] = std::sqrt(squared[l]);
  } else {
    for (int64_t l = 0; l < kVectorLanes; ++l) out[l] = std::pow(squared[l], 0.5f * power);
  }
}

// Windowed frames into lanes: re[n * kLanes + lane], im likewise (packed: even and odd
// samples; else the samples and zeros).
void gather(const StftPlan& plan, const float* samples, int64_t length, int64_t first,
            int64_t count, float* re, float* im, float* edge) {
  const StftPlan::Tables& t = plan.tables();
  const StftConfig& config = plan.config();
  const int64_t n_fft = config.n_fft;
  const int64_t pad = config.center ? n_fft / 2 : 0;
  const float* window = t.window.data();
  for (int64_t lane = 0; lane < kLanes; ++lane) {
    float* out_re = re + lane;
    float* out_im = im + lane;
    if (lane >= count) {
      for (int64_t n = 0; n < t.size; ++n) out_re[n * kLanes] = out_im[n * kLanes] = 0.0f;
      continue;
    }
    const int64_t start = (first + lane) * config.hop_length - pad;
    const float* x = samples + start;
    if (start < 0 || start + n_fft > length) {
      // An edge frame: built with its padding first.
      for (int64_t n = 0; n < n_fft; ++n) {
        int64_t at = start + n;
        if (config.padding == StftPadding::reflect) {
          if (at < 0) at = -at;
          if (at >= length) at = 2 * (length - 1) - at;
          edge[n] = samples[at];
        } else {
          edge[n] = at < 0 || at >= length ? 0.0f : samples[at];
        }
      }
      x = edge;
    }
    if (t.packed) {
      for (int64_t n = 0; n < t.size; ++n) {
        out_re[n * kLanes] = x[2 * n] * window[2 * n];
        out_im[n * kLanes] = x[2 * n + 1] * window[2 * n + 1];
      }
    } else {
      for (int64_t n = 0; n < t.size; ++n) {
        out_re[n * kLanes] = x[n] * window[n];
        out_im[n * kLanes] = 0.0f;
      }
    }
  }
}

}  // namespace

// StftPlan::power_block's passes.
void stft_power_block(const StftPlan& plan, const float* samples, int64_t length, int64_t first,
                      int64_t count, float power, float* block, float* workspace) {
  const StftPlan::Tables& t = plan.tables();
  float* aligned =
      workspace +
      (kAlign - (reinterpret_cast<uintptr_t>(workspace) / sizeof(float)) % kAlign) % kAlign;
  const int64_t row = t.size * kSplit;  // V's per buffer
  V* re = reinterpret_cast<V*>(aligned);
  V* im = re + row;
  V* re2 = im + row;
  V* im2 = re2 + row;
  gather(plan, samples, length, first, count, reinterpret_cast<float*>(re),
         reinterpret_cast<float*>(im), reinterpret_cast<float*>(im2 + row));

  for (const StftPlan::Stage& stage : t.stages) {
    const float* w = t.twiddles.data() + stage.twiddles;
    const float* roots = t.roots.data() + stage.roots;
    for (int64_t share = 0; share < kSplit; ++share) {
      const V *from_re = re + share, *from_im = im + share;
      V *to_re = re2 + share, *to_im = im2 + share;
      switch (stage.radix) {
        case 2:
          stockham_pass<2>(t.size, stage.span, w, from_re, from_im, to_re, to_im, 2, roots);
          break;
        case 3:
          stockham_pass<3>(t.size, stage.span, w, from_re, from_im, to_re, to_im, 3, roots);
          break;
        case 4:
          stockham_pass<4>(t.size, stage.span, w, from_re, from_im, to_re, to_im, 4, roots);
          break;
        case 5:
          stockham_pass<5>(t.size, stage.span, w, from_re, from_im, to_re, to_im, 5, roots);
          break;
        default:
          stockham_pass<0>(t.size, stage.span, w, from_re, from_im, to_re, to_im, stage.radix,
                           roots);
      }
    }
    std::swap(re, re2);
    std::swap(im, im2);
  }

  for (int64_t share = 0; share < kSplit; ++share) {
    // Bin k of this share: V number k * kSplit + share; its frames' floats in the block at
    // k * kLanes + share * kVectorLanes.
    const V* z_re = re + share;
    const V* z_im = im + share;
    float* out = block + share * kVectorLanes;
    if (!t.packed) {
      for (int64_t k = 0; k < plan.bins(); ++k) {
        const V zr = z_re[k * kSplit], zi = z_im[k * kSplit];
        store_power(out + k * kLanes, zr * zr + zi * zi, power);
      }
      continue;
    }
    // Z = FFT(x_even + i x_odd): X[k] = E[k] + e^{-2 pi i k / N} O[k], with
    // E = (Z[k] + conj Z[M-k]) / 2 and O = (Z[k] - conj Z[M-k]) / 2i.
    const int64_t m = t.size;
    const V sum0 = z_re[0] + z_im[0], difference0 = z_re[0] - z_im[0];
    store_power(out, sum0 * sum0, power);
    store_power(out + m * kLanes, difference0 * difference0, power);
    for (int64_t k = 1; k < m; ++k) {
      const V ar = z_re[k * kSplit], ai = z_im[k * kSplit];
      const V br = z_re[(m - k) * kSplit], bi = -z_im[(m - k) * kSplit];
      const V er = (ar + br) * 0.5f, ei = (ai + bi) * 0.5f;
      const V or_ = (ai - bi) * 0.5f, oi = (br - ar) * 0.5f;
      const float c = t.unpack[size_t(2 * k)], s = t.unpack[size_t(2 * k + 1)];
      const V xr = er + or_ * c - oi * s;
      const V xi = ei + or_ * s + oi * c;
      store_power(out + k * kLanes, xr * xr + xi * xi, power);
    }
  }
}

void power_spectrogram(const StftPlan& plan, const float* samples, int64_t length, float power,
                       float* out) {
  SONATA_NVTX_RANGE("sonata::cpu::power_spectrogram");
  SONATA_CHECK(stft_length_ok(plan.config(), length), "power_spectrogram: a clip of ", length,
               " samples gives no frame for n_fft ", plan.config().n_fft);
  const int64_t frames = plan.frames(length), bins = plan.bins();
  const int64_t blocks = (frames + kLanes - 1) / kLanes;
#pragma omp parallel if (blocks > 1)
  {
    std::vector<float> workspace(size_t(plan.workspace_floats()));
    std::vector<float> block(size_t(bins * kLanes));
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = b * kLanes, count = std::min(kLanes, frames - first);
      stft_power_block(plan, samples, length, first, count, power, block.data(), workspace.data());
      for (int64_t k = 0; k < bins; ++k)
        std::copy(block.data() + k * kLanes, block.data() + k * kLanes + count,
                  out + k * frames + first);
    }
  }
}

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The plan is built once; its passes and the spectrogram are compiled per capability.
namespace sonata::kernels::cpu {
namespace {

constexpr int64_t kLanes = StftPlan::kLanes;
// stft_power_block aligns its workspace to its vectors, at most kLanes floats.
constexpr int64_t kAlign = kLanes;

// Radix 4 first (fewest passes over the data), then 2, 3, 5, then whatever primes remain.
std::vector<int64_t> factorise(int64_t n) {
  std::vector<int64_t> radices;
  for (const int64_t radix : {4, 2, 3, 5}) {
    while (n % radix == 0) {
      radices.push_back(radix);
      n /= radix;
    }
  }
  for (int64_t p = 7; n > 1; p += 2) {
    while (n % p == 0) {
      radices.push_back(p);
      n /= p;
    }
  }
  return radices;
}

}  // namespace

int64_t stft_frame_count(const StftConfig& config, int64_t length) {
  const int64_t padded = config.center ? length + 2 * (config.n_fft / 2) : length;
  return padded < config.n_fft ? 0 : 1 + (padded - config.n_fft) / config.hop_length;
}

bool stft_length_ok(const StftConfig& config, int64_t length) {
  if (length <= 0 || stft_frame_count(config, length) == 0) return false;
  return !config.center || config.padding != StftPadding::reflect || length > config.n_fft / 2;
}

void hann_window(int64_t win_length, int64_t n_fft, bool periodic, float* out) {
  std::fill(out, out + n_fft, 0.0f);
  const int64_t left = (n_fft - win_length) / 2;
  // torch.hann_window: periodic divides by N (the window of N + 1 points without its last).
  const double period = double(periodic ? win_length : win_length - 1);
  for (int64_t n = 0; n < win_length; ++n)
    out[left + n] =
        win_length == 1 ? 1.0f : float(0.5 - 0.5 * std::cos(2 * std::numbers::pi * n / period));
}

StftPlan::StftPlan(const StftConfig& config, const float* window) : config_(config) {
  SONATA_CHECK(config.n_fft >= 2 && config.hop_length >= 1,
               "stft: n_fft must be at least 2 and hop_length positive (got ", config.n_fft, ", ",
               config.hop_length, ")");
  tables_.size = config.n_fft % 2 == 0 ? config.n_fft / 2 : config.n_fft;
  tables_.packed = config.n_fft % 2 == 0;
  tables_.window.assign(window, window + config.n_fft);
  int64_t span = 1;
  for (const int64_t radix : factorise(tables_.size)) {
    Stage stage{radix, span, int64_t(tables_.twiddles.size()), int64_t(tables_.roots.size())};
    // Twiddles in double, rounded once: the FFT's error then grows only with its passes.
    for (int64_t k = 0; k < span; ++k) {
      for (int64_t r = 1; r < radix; ++r) {
        const double angle = -2 * std::numbers::pi * double(r * k) / double(span * radix);
        tables_.twiddles.push_back(float(std::cos(angle)));
        tables_.twiddles.push_back(float(std::sin(angle)));
      }
    }
    if (radix > 5) {
      for (int64_t q = 0; q < radix; ++q) {
        const double angle = -2 * std::numbers::pi * double(q) / double(radix);
        tables_.roots.push_back(float(std::cos(angle)));
        tables_.roots.push_back(float(std::sin(angle)));
      }
    }
    tables_.stages.push_back(stage);
    span *= radix;
  }
  for (int64_t k = 0; k <= tables_.size; ++k) {
    const double angle = -2 * std::numbers::pi * double(k) / double(config.n_fft);
    tables_.unpack.push_back(float(std::cos(angle)));
    tables_.unpack.push_back(float(std::sin(angle)));
  }
}

int64_t StftPlan::workspace_floats() const {
  return 4 * tables_.size * kLanes + config_.n_fft + kAlign;
}

using StftPowerBlock = void(const StftPlan& plan, const float* samples, int64_t length,
                            int64_t first, int64_t count, float power, float* block,
                            float* workspace);
SONATA_CPU_DECLARE_AS(stft_power_block, StftPowerBlock)
SONATA_CPU_DECLARE(power_spectrogram)

void StftPlan::power_block(const float* samples, int64_t length, int64_t first, int64_t count,
                           float power, float* block, float* workspace) const {
  SONATA_CPU_CALL(stft_power_block)(*this, samples, length, first, count, power, block, workspace);
}

void power_spectrogram(const StftPlan& plan, const float* samples, int64_t length, float power,
                       float* out) {
  SONATA_CPU_CALL(power_spectrogram)(plan, samples, length, power, out);
}

}  // namespace sonata::kernels::cpu
#endif
