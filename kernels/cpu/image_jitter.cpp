#include "kernels/cpu/image_jitter.h"

#include <algorithm>

#include "base/nvtx.h"

namespace sonata::kernels::cpu {

void image_jitter(float* images, int64_t items, int64_t size, const double* brightness,
                  const double* contrast) {
  SONATA_NVTX_RANGE("sonata::cpu::image_jitter");
  // Items in parallel, each summed in order, so the mean does not depend on the threads.
#pragma omp parallel for schedule(static) if (items > 1 && items * size >= (1 << 15))
  for (int64_t n = 0; n < items; ++n) {
    float* image = images + n * size;
    const double b = brightness[n], c = contrast[n];
    double sum = 0;
    for (int64_t i = 0; i < size; ++i) {
      const double u = std::clamp((double(image[i]) + 1) / 2 * b, 0.0, 1.0);
      image[i] = float(u);  // kept in [0, 1] until the contrast step
      sum += u;
    }
    const double mean = sum / double(size);
    for (int64_t i = 0; i < size; ++i) {
      const double u = std::clamp(c * double(image[i]) + (1 - c) * mean, 0.0, 1.0);
      image[i] = float(u * 2 - 1);
    }
  }
}

}  // namespace sonata::kernels::cpu
