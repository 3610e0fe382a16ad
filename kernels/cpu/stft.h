#pragma once
// Short-time Fourier transform power spectra with torch.stft's framing (what
// torchaudio.transforms.Spectrogram calls): frames of n_fft samples every hop_length, each
// multiplied by an n_fft-long window, one-sided DFT, |X|^power per bin.
//
// The DFT is a mixed-radix Stockham FFT (radices 4, 2, 3, 5, and a direct DFT for any other
// prime) run on kLanes frames at once, one frame per SIMD lane: every butterfly is a
// vector operation with broadcast twiddles and no shuffles. (Each capability's copy works on
// as many of the kLanes frames as one of its registers holds at a time: stft.cpp's V.) An even n_fft packs its real
// samples into a complex FFT of half the length (x[2n] + i x[2n+1]) and unpacks after.
// Chosen over the DFT as one SGEMM (frames [F, 400] x basis [400, 402]): for peer_torch.py's
// mel batch (16 clips of 10 s, F = 16016) OpenBLAS's SGEMM alone took 77-90 ms on one core of
// this machine, this whole FFT path (framing, window, FFT, power) 5-10 ms.
#include <cstdint>
#include <vector>

namespace sonata::kernels::cpu {

// How samples outside the clip are made when center pads it by n_fft / 2 on both sides:
// reflect mirrors around the edge samples (x[-1] = x[1]; needs length > n_fft / 2), constant
// pads with zeros.
enum class StftPadding { reflect, constant };

struct StftConfig {
  int64_t n_fft = 400;
  int64_t hop_length = 200;
  bool center = true;
  StftPadding padding = StftPadding::reflect;
};

// Frames of a clip of `length` samples, as torch.stft counts them (0 when the clip is shorter
// than one frame).
int64_t stft_frame_count(const StftConfig& config, int64_t length);
// Whether a clip of `length` samples gives at least one frame that its padding can build
// (reflect with center mirrors once, so it needs length > n_fft / 2, as torch.stft).
bool stft_length_ok(const StftConfig& config, int64_t length);

// torch.hann_window(win_length, periodic) zero-padded on both sides to n_fft (torch.stft's
// placement of a shorter window: (n_fft - win_length) / 2 zeros on the left), in `out[n_fft]`.
void hann_window(int64_t win_length, int64_t n_fft, bool periodic, float* out);

// The factorisation, twiddles and window for one configuration; built once, shared by threads.
class StftPlan {
 public:
  static constexpr int64_t kLanes = 16;

  // `window`: n_fft values (see hann_window).
  StftPlan(const StftConfig& config, const float* window);

  const StftConfig& config() const { return config_; }
  int64_t bins() const { return config_.n_fft / 2 + 1; }
  int64_t frames(int64_t length) const { return stft_frame_count(config_, length); }
  // Floats of scratch that power_block needs (one workspace per thread).
  int64_t workspace_floats() const;

  // |X[bin]|^power of frames [first, first + count) of one clip, count <= kLanes, into
  // block[bin * kLanes + lane] (lanes >= count hold zeros). The clip must be long enough for
  // the padding (reflect with center: length > n_fft / 2; no center: length >= n_fft).
  void power_block(const float* samples, int64_t length, int64_t first, int64_t count, float power,
                   float* block, float* workspace) const;

  // The factorisation and tables, read by the FFT passes (kernels/cpu/stft.cpp, compiled
  // once per CPU capability).
  struct Stage {
    int64_t radix;
    int64_t span;      // product of the radices of the stages before
    int64_t twiddles;  // offset in twiddles
    int64_t roots;     // offset in roots (direct-DFT radices only)
  };
  struct Tables {
    int64_t size = 0;     // complex FFT length: n_fft / 2 when packed, else n_fft
    bool packed = false;  // even n_fft: two real samples per complex one
    std::vector<float> window;
    std::vector<Stage> stages;
    std::vector<float> twiddles;  // (re, im) pairs: per stage, per k < span, per 1 <= r < radix
    std::vector<float> roots;     // (re, im) of e^{-2 pi i q / p} for the direct-DFT radices
    std::vector<float> unpack;    // (re, im) of e^{-2 pi i k / n_fft}, k <= size
  };
  const Tables& tables() const { return tables_; }

 private:
  StftConfig config_;
  Tables tables_;
};

// [bins, frames] power spectrogram of one clip (torchaudio's layout), OpenMP over frame blocks.
void power_spectrogram(const StftPlan& plan, const float* samples, int64_t length, float power,
                       float* out);

}  // namespace sonata::kernels::cpu
