#pragma once
// Checks an LSTM / GRU module against tests/fixtures/rnn/<name>.txt (written by
// tests/fixtures/make_rnn.py from torch.nn.LSTM / torch.nn.GRU in float64 on a ragged batch
// packed with pack_padded_sequence, with a non-zero initial state) on `device`: outputs,
// final states and the gradients w.r.t. input, initial state and every parameter within 1e-9.
// Shared by the CPU test (tests/models/test_rnn_fixtures.cpp) and the CUDA one, where the
// layers run through cuDNN (tests/cuda/test_cuda_rnn_fused.cpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "models/layers/rnn.h"
#include "tests/ops/op_test_util.h"
#include "tests/support/text_fixture.h"

namespace sonata::testing::rnn_fixture {

using Fixture = std::map<std::string, std::vector<double>>;

inline Fixture read_fixture(const std::string& name) {
  const TextFixture text =
      read_text_fixture(std::string(SONATA_FIXTURES_DIR) + "/rnn/" + name + ".txt");
  Fixture fixture;
  for (const auto& [key, words] : text) fixture[key] = fixture_doubles(text, key);
  return fixture;
}

inline Tensor fixture_tensor(const Fixture& f, const std::string& key, const Shape& shape) {
  INFO("fixture field " << key);
  REQUIRE(f.count(key) == 1);
  return f64_tensor(f.at(key), shape);
}

inline void require_close(const Tensor& actual, const std::vector<double>& expected,
                          const std::string& what) {
  REQUIRE(actual.defined());
  const std::vector<double> values = values_of(actual.to(Device::cpu()));
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO(what << "[" << i << "]: " << values[i] << " vs PyTorch " << expected[i]);
    CHECK(std::abs(values[i] - expected[i]) <= 1e-9 * std::max(1.0, std::abs(expected[i])));
  }
}

template <typename Module>
void check_against_torch(const std::string& name, bool with_cell_state,
                         Device device = Device::cpu()) {
  INFO("fixture " << name);
  const Fixture f = read_fixture(name);
  const std::vector<double> config = f.at("config"), shape = f.at("shape");
  const int64_t input_size = int64_t(config[0]), hidden = int64_t(config[1]);
  const int64_t layers = int64_t(config[2]), steps = int64_t(shape[0]), batch = int64_t(shape[1]);
  Module module(RnnOptions{.input_size = input_size,
                           .hidden_size = hidden,
                           .num_layers = layers,
                           .bidirectional = config[3] != 0});
  module.to(DType::f64);
  module.to(device);
  {
    NoGradGuard no_grad;
    for (auto& [pname, p] : module.named_parameters()) {
      Tensor target = p;
      target.copy_(fixture_tensor(f, "param." + pname, p.shape()).to(device));
    }
  }
  std::vector<int64_t> lengths;
  for (double v : f.at("lengths")) lengths.push_back(int64_t(v));
  const Shape state_shape{layers * 2, batch, hidden};
  Tensor x = fixture_tensor(f, "input", {steps, batch, input_size}).to(device);
  Tensor h0 = fixture_tensor(f, "h0", state_shape).to(device), c0;
  x.set_requires_grad(true);
  h0.set_requires_grad(true);
  if (with_cell_state) {
    c0 = fixture_tensor(f, "c0", state_shape).to(device);
    c0.set_requires_grad(true);
  }

  const RnnResult r = module.forward(x, i64_tensor(lengths, {batch}), h0, c0);
  require_close(r.output, f.at("output"), "output");
  require_close(r.h_n, f.at("h_n"), "h_n");
  Tensor loss = add(sum(mul(r.output, fixture_tensor(f, "w", r.output.shape()).to(device))),
                    sum(mul(r.h_n, fixture_tensor(f, "wh", state_shape).to(device))));
  if (with_cell_state) {
    require_close(r.c_n, f.at("c_n"), "c_n");
    loss = add(loss, sum(mul(r.c_n, fixture_tensor(f, "wc", state_shape).to(device))));
  }
  loss.backward();
  require_close(x.grad(), f.at("grad.input"), "grad.input");
  require_close(h0.grad(), f.at("grad.h0"), "grad.h0");
  if (with_cell_state) require_close(c0.grad(), f.at("grad.c0"), "grad.c0");
  for (const auto& [pname, p] : module.named_parameters())
    require_close(p.grad(), f.at("grad." + pname), "grad." + pname);
}

}  // namespace sonata::testing::rnn_fixture
