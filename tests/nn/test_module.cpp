#include <catch2/catch.hpp>

#include "engine/nn/module.h"
#include "engine/ops.h"

using namespace sonata;

namespace {
// A linear layer written with the core ops, enough to exercise the module machinery.
class TinyLinear : public Module {
 public:
  TinyLinear(int64_t in, int64_t out) {
    weight_ = register_parameter("weight", full({out, in}, 0.5));
    bias_ = register_parameter("bias", zeros({out}));
    register_buffer("calls", zeros({}, TensorOptions{}.with(DType::i64)));
  }
  Tensor forward(const Tensor& x) override { return addmm(bias_, x, weight_.t()); }

 private:
  Tensor weight_, bias_;
};

class Block : public Module {
 public:
  Block() {
    auto seq = std::make_shared<Sequential>();
    seq->push_back(std::make_shared<TinyLinear>(3, 4));
    seq->push_back(std::make_shared<TinyLinear>(4, 2));
    features_ = register_module("features", seq);
    register_buffer("running_mean", zeros({2}));
  }
  Tensor forward(const Tensor& x) override { return features_->forward(x); }

 private:
  std::shared_ptr<Sequential> features_;
};
}  // namespace

TEST_CASE("modules name parameters and buffers as torch's state_dict", "[nn][module]") {
  Block block;
  std::vector<std::string> names;
  for (const auto& [name, t] : block.state_dict()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"running_mean", "features.0.weight", "features.0.bias",
                                          "features.0.calls", "features.1.weight",
                                          "features.1.bias", "features.1.calls"});
  CHECK(block.named_parameters().size() == 4);
  CHECK(block.parameter_count() == 4 * 3 + 4 + 2 * 4 + 2);
  for (const Tensor& p : block.parameters()) CHECK(p.requires_grad());
}

TEST_CASE("train and eval reach every child", "[nn][module]") {
  Block block;
  CHECK(block.is_training());
  block.eval();
  for (const auto& [name, child] : block.children()) CHECK_FALSE(child->is_training());
  block.train();
  CHECK(block.children()[0].second->is_training());
}

TEST_CASE("moving a module keeps the handles its layers hold", "[nn][module]") {
  Block block;
  block.to(DType::f64);
  for (const auto& [name, t] : block.named_parameters()) CHECK(t.dtype() == DType::f64);
  for (const auto& [name, t] : block.named_buffers()) {
    INFO(name);
    CHECK(t.dtype() == (name.ends_with("calls") ? DType::i64 : DType::f64));
  }
  // The layers' own copies of the handles see the new dtype: forward works in f64.
  const Tensor x = ones({5, 3}, TensorOptions{}.with(DType::f64));
  const Tensor y = block.forward(x);
  CHECK(y.dtype() == DType::f64);
  CHECK(y.to_vector<double>()[0] == Approx(0.5 * 4 * (0.5 * 3)));
  sum(y).backward();
  for (const Tensor& p : block.parameters()) CHECK(p.grad().defined());
  block.zero_grad();
  for (const Tensor& p : block.parameters()) CHECK_FALSE(p.grad().defined());
}

TEST_CASE("registering a name twice is an error", "[nn][module]") {
  struct Twice : Module {
    Twice() {
      register_parameter("w", zeros({1}));
      register_parameter("w", zeros({1}));
    }
  };
  CHECK_THROWS_WITH(Twice(), Catch::Contains("'w' registered twice"));
}
