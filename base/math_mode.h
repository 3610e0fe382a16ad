#pragma once
// The process-wide TF32 switch behind `trainer --tf32` (PyTorch's
// torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32 in one setting).
// TF32 reads only 10 of an fp32 operand's 23 mantissa bits on the tensor cores, at about
// 8x the FMA rate on Ampere and Hopper; accumulation stays fp32. It touches f32 only:
// f16 / bf16 always run on tensor cores, f64 never does, and the CPU ignores it.
//   off  - no TF32 anywhere (the CPU reference's rounding, to fp32 accuracy);
//   conv - cuDNN convolutions may use TF32, GEMMs do not (the default, as PyTorch's);
//   all  - convolutions and cuBLAS GEMMs both may.
// Like determinism it is read when a kernel runs; cached convolution algorithms are keyed by
// it, so changing it between steps is safe.
#include <string>

namespace sonata {

enum class Tf32Mode { off, conv, all };
inline constexpr Tf32Mode kDefaultTf32Mode = Tf32Mode::conv;

void set_tf32_mode(Tf32Mode mode);
Tf32Mode tf32_mode();
bool tf32_allowed_in_conv();
bool tf32_allowed_in_gemm();

// "off" | "conv" | "all"; anything else throws an Error naming `what` and the value.
Tf32Mode parse_tf32_mode(const std::string& text, const std::string& what = "--tf32");
const char* tf32_mode_name(Tf32Mode mode);

// Sets the mode for one scope and restores the previous one (tests, parity checks).
class Tf32ModeGuard {
 public:
  explicit Tf32ModeGuard(Tf32Mode mode);
  ~Tf32ModeGuard();
  Tf32ModeGuard(const Tf32ModeGuard&) = delete;
  Tf32ModeGuard& operator=(const Tf32ModeGuard&) = delete;

 private:
  Tf32Mode previous_;
};

}  // namespace sonata
