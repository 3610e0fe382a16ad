// release_storage: a pipeline stage gives back the other stages' weights while the handles
// its layers hold stay valid and can be filled again; a released tensor is deferred again,
// its shape kept.
#include <catch2/catch.hpp>

#include "engine/deferred_init.h"
#include "engine/nn/module.h"
#include "engine/nn/release.h"
#include "engine/ops.h"

using namespace sonata;

namespace {
class TwoLinear : public Module {
 public:
  TwoLinear() {
    first_ = register_parameter("first", full({3, 4}, 0.5));
    second_ = register_parameter("second", full({4}, 2.0));
    register_buffer("count", zeros({2}, TensorOptions{}.with(DType::i64)));
  }
  const Tensor& first() const { return first_; }

 private:
  Tensor first_, second_;
};
}  // namespace

TEST_CASE("release_storage frees a module's tensors and keeps their handles", "[nn][release]") {
  TwoLinear module;
  sum(module.first() * 2.0).backward();
  REQUIRE(module.first().grad().defined());
  CHECK(named_tensor_bytes(module.state_dict()) == (12 + 4) * 4 + 2 * 8);

  NamedTensors first_and_buffer{module.state_dict()[0], module.state_dict()[2]};
  release_storage(first_and_buffer);
  // The layer's own handle sees the release: no memory, no gradient, shape and dtype kept.
  CHECK(is_deferred(module.first()));
  CHECK(module.first().shape() == Shape{3, 4});
  CHECK(is_deferred(module.named_buffers()[0].second));
  CHECK(!module.first().grad().defined());
  CHECK(module.first().dtype() == DType::f32);
  CHECK(module.first().requires_grad());
  CHECK(module.named_buffers()[0].second.dtype() == DType::i64);
  CHECK(named_tensor_bytes(module.state_dict()) == 4 * 4);
  CHECK(module.named_parameters()[1].second.to_vector<float>() == std::vector<float>(4, 2.0f));
  CHECK_THROWS_WITH(module.first().to_vector<float>(), Catch::Contains("deferred tensor"));

  // Filled again through the same handle.
  Tensor handle = module.first();
  handle.set_data(full({3, 4}, 1.5));
  CHECK(module.first().to_vector<float>() == std::vector<float>(12, 1.5f));
}
