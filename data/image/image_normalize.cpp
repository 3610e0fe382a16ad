#include "data/image/image_normalize.h"

#include <cmath>

#include "base/error.h"

namespace sonata {

void check_image_normalize(const ImageNormalize& n, int64_t channels, const char* what) {
  const auto fits = [&](size_t size) { return size == 1 || int64_t(size) == channels; };
  SONATA_CHECK(fits(n.mean.size()) && fits(n.std.size()), what,
               ": the mean and std lists need 1 or ", channels, " values (one per channel), got ",
               n.mean.size(), " and ", n.std.size());
  for (const double s : n.std)
    SONATA_CHECK(s > 0 && std::isfinite(s), what, ": every std must be positive, got ", s);
  for (const double m : n.mean) SONATA_CHECK(std::isfinite(m), what, ": a mean is not finite");
}

void normalize_image(Tensor& image, const ImageNormalize& n) {
  SONATA_CHECK(image.dim() == 3 && image.dtype() == DType::f32 && image.device().is_cpu() &&
                   image.is_contiguous(),
               "normalize_image takes a contiguous [C, H, W] f32 CPU image");
  const int64_t channels = image.size(0), plane = image.size(1) * image.size(2);
  check_image_normalize(n, channels, "normalize_image");
  float* values = image.data<float>();
  for (int64_t c = 0; c < channels; ++c) {
    // In float, as torchvision's x.sub_(mean).div_(std) on a float tensor.
    const float mean = float(n.mean[n.mean.size() == 1 ? 0 : size_t(c)]);
    const float std = float(n.std[n.std.size() == 1 ? 0 : size_t(c)]);
    for (int64_t i = 0; i < plane; ++i)
      values[c * plane + i] = (values[c * plane + i] - mean) / std;
  }
}

}  // namespace sonata
