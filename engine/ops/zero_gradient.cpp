#include "engine/ops/zero_gradient.h"

#include <vector>

#include "base/error.h"
#include "engine/autograd/record.h"

namespace sonata {

Tensor pass_with_zero_gradient(const Tensor& y, const Tensor& cancelled) {
  SONATA_CHECK(y.defined() && cancelled.defined(),
               "pass_with_zero_gradient: y and the cancelled tensor must be defined");
  Tensor out = y.detach();
  const Shape shape = cancelled.shape();
  const TensorOptions options = cancelled.options();
  record("pass_with_zero_gradient", {y, cancelled}, {&out}, [=](const std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0], zeros(shape, options)};
  });
  return out;
}

}  // namespace sonata
