#include "engine/random.h"

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/deferred_init.h"
#include "engine/ops/backend.h"

namespace sonata {

uint64_t Generator::reserve(int64_t count) {
  const uint64_t first = offset_;
  offset_ += uint64_t((count + 3) / 4);
  return first;
}

Generator& default_generator() {
  static Generator generator(0);
  return generator;
}

void manual_seed(uint64_t seed) {
  default_generator() = Generator(seed);
}

namespace {
enum class Distribution { uniform, normal };

Tensor& fill_random(Tensor& t, Distribution distribution, double p0, double p1, Generator* gen) {
  SONATA_CHECK(is_floating(t.dtype()), "random fill: ", dtype_name(t.dtype()),
               " is not a floating-point dtype");
  SONATA_CHECK(!(GradMode::enabled() && t.requires_grad()),
               "random fill: in-place change of a tensor that requires grad");
  Generator& g = gen ? *gen : default_generator();
  if (is_deferred(t)) {
    // The same blocks reserved as an eager fill's, so that what follows draws alike.
    const DeferredInit::Kind kind = distribution == Distribution::uniform
                                        ? DeferredInit::Kind::uniform
                                        : DeferredInit::Kind::normal;
    defer_random(t, kind, p0, p1, g.seed(), g.subsequence(), g.reserve(t.numel()));
    return t;
  }
  Tensor target = t.is_contiguous() ? t : empty_like(t);
  const uint64_t offset = g.reserve(t.numel());
  if (t.numel() > 0) {
    if (distribution == Distribution::uniform)
      SONATA_BACKEND(t.device(), uniform, t.dtype(), target.data_ptr(), t.numel(), g.seed(),
                     g.subsequence(), offset, p0, p1);
    else
      SONATA_BACKEND(t.device(), normal, t.dtype(), target.data_ptr(), t.numel(), g.seed(),
                     g.subsequence(), offset, p0, p1);
  }
  if (!target.same(t)) t.copy_(target);
  return t;
}

Tensor make_random(const Shape& shape, const TensorOptions& options, Distribution distribution,
                   double p0, double p1, Generator* gen) {
  TensorOptions plain = options;
  plain.requires_grad = false;
  Tensor t = empty(shape, plain);
  fill_random(t, distribution, p0, p1, gen);
  if (options.requires_grad) t.set_requires_grad(true);
  return t;
}
}  // namespace

Tensor rand(const Shape& shape, const TensorOptions& options, Generator* generator) {
  return make_random(shape, options, Distribution::uniform, 0.0, 1.0, generator);
}
Tensor randn(const Shape& shape, const TensorOptions& options, Generator* generator) {
  return make_random(shape, options, Distribution::normal, 0.0, 1.0, generator);
}
Tensor& uniform_(Tensor& t, double low, double high, Generator* generator) {
  return fill_random(t, Distribution::uniform, low, high, generator);
}
Tensor& normal_(Tensor& t, double mean, double std, Generator* generator) {
  return fill_random(t, Distribution::normal, mean, std, generator);
}

}  // namespace sonata
