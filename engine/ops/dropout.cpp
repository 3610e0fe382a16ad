#include "engine/ops/dropout.h"

#include <cmath>
#include <vector>

#include "base/error.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "engine/random.h"
#include "kernels/cpu/dropout.h"
#if SONATA_WITH_CUDA
#include "kernels/cuda/dropout.h"
#endif

namespace sonata {

Tensor dropout(const Tensor& x, double p, bool training, Generator* generator) {
  SONATA_CHECK(x.defined(), "dropout: x is undefined");
  SONATA_CHECK(is_floating(x.dtype()), "dropout: x must be floating-point, got ",
               dtype_name(x.dtype()));
  SONATA_CHECK(p >= 0 && p <= 1, "dropout: probability p = ", p, " is outside [0, 1]");
  if (!training || p == 0) return x;
  if (p == 1) return mul(x, 0.0);

  Generator& g = generator ? *generator : default_generator();
  const uint64_t seed = g.seed(), subsequence = g.subsequence(), offset = g.reserve(x.numel());
  const double scale = 1.0 / (1.0 - p);
  const Tensor in = x.detach().contiguous();
  Tensor out = empty_like(in);
  if (in.numel() > 0)
    SONATA_BACKEND(in.device(), dropout, in.dtype(), in.data_ptr(), out.data_ptr(), in.numel(), p,
                   scale, seed, subsequence, offset);
  record("dropout", {x}, {&out}, [=](const std::vector<Tensor>& grads) {
    // The same draws on the gradient: the mask is a pure function of (seed, offset).
    const Tensor gy = grads[0].contiguous();
    Tensor gx = empty_like(gy);
    if (gy.numel() > 0)
      SONATA_BACKEND(gy.device(), dropout, gy.dtype(), gy.data_ptr(), gx.data_ptr(), gy.numel(), p,
                     scale, seed, subsequence, offset);
    return std::vector<Tensor>{gx};
  });
  return out;
}

}  // namespace sonata
