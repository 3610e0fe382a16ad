#include "kernels/cpu/dropout.h"

#include "base/nvtx.h"
#include "base/philox.h"
#include "kernels/cpu/dispatch.h"

namespace sonata::kernels::cpu {

void dropout(DType dtype, const void* x, void* y, int64_t n, double p, double scale, uint64_t seed,
             uint64_t subsequence, uint64_t offset) {
  SONATA_NVTX_RANGE("sonata::cpu::dropout");
  dispatch_f32_f64(dtype, "dropout", [&]<typename T>() {
    using C = compute_t<T>;
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    const float threshold = float(p);
    const C kept_scale = C(scale);
    const int64_t blocks = (n + 3) / 4;
#pragma omp parallel for schedule(static) if (n >= (1 << 15))
    for (int64_t b = 0; b < blocks; ++b) {
      const Philox4 bits = philox_block(seed, subsequence, offset + uint64_t(b));
      for (int lane = 0; lane < 4 && b * 4 + lane < n; ++lane) {
        const int64_t e = b * 4 + lane;
        // Multiplying (not selecting) keeps PyTorch's NaN propagation through dropped inputs.
        const C factor = philox_uniform(bits.v[lane]) >= threshold ? kept_scale : C(0);
        out[e] = store<T>(load(in[e]) * factor);
      }
    }
  });
}

}  // namespace sonata::kernels::cpu
