#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/io/npy.h"
#include "engine/io/safetensors.h"
#include "engine/random.h"
#include "models/registry.h"
#include "tools/probe/probe_run.h"

using namespace sonata;

namespace {

std::map<std::string, std::string> vgg_options(int classes) {
  return {{"num-classes", std::to_string(classes)},
          {"in-channels", "1"},
          {"width", "0.03125"},
          {"dropout", "0"}};
}

std::string temp_path(const std::string& name) {
  return "/tmp/sonata_probe_backbone_" + std::to_string(::getpid()) + "_" + name;
}

bool starts_with(const std::string& name, const std::string& prefix) {
  return name.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

TEST_CASE("probe --backbone-only loads features.* and keeps a new 16-class head", "[probe]") {
  // An ImageNet-shaped checkpoint (1000 classes) whose BatchNorm statistics are away from a
  // fresh model's 0/1, so a loaded buffer is told apart from an initialised one.
  manual_seed(7);
  auto imagenet = make_model("vgg19_bn", ModelConfig(vgg_options(1000)));
  for (auto& [name, buffer] : imagenet->named_buffers()) {
    if (name.ends_with("running_mean")) uniform_(buffer, -0.5, 0.5);
    if (name.ends_with("running_var")) uniform_(buffer, 0.5, 2.0);
  }
  const std::string weights = temp_path("imagenet.safetensors");
  const std::string input = temp_path("x.npy");
  save_safetensors(weights, imagenet->state_dict());
  const Tensor x = randn({2, 1, 32, 32});
  save_npy(input, x);
  std::map<std::string, Tensor> file;
  for (const auto& [name, t] : imagenet->state_dict()) file[name] = t;

  ProbeOptions options;
  options.model = "vgg19_bn";
  options.model_options = vgg_options(16);
  options.weights = weights;
  options.input = input;

  SECTION("with the flag: the backbone from the file, the head as initialised") {
    options.backbone_only = true;
    std::map<std::string, Tensor> result;
    for (const auto& [name, t] : run_probe(options)) result[name] = t;

    // Eval mode leaves the buffers as loaded: every features.* buffer is the file's.
    int buffers = 0;
    for (const auto& [name, t] : file) {
      if (!starts_with(name, "features.") || !result.count(name)) continue;
      INFO(name);
      CHECK(result[name].to_vector<double>() == t.to_vector<double>());
      ++buffers;
    }
    CHECK(buffers == 16 * 3);  // running_mean, running_var, num_batches_tracked per BN

    // The expected model, built without load_state_dict: the probe's seed gives the same
    // fresh head, and features.* are copied from the file by hand. Loading classifier.0 or
    // classifier.3 too (their shapes fit) would change the logits.
    manual_seed(0);
    auto expected = make_model("vgg19_bn", ModelConfig(vgg_options(16)));
    {
      NoGradGuard no_grad;
      for (auto& [name, t] : expected->state_dict()) {
        if (!starts_with(name, "features.")) continue;
        Tensor target = t;
        target.copy_(file.at(name));
      }
    }
    const auto head = expected->state_dict();
    for (const auto& [name, t] : head)
      if (name == "classifier.0.weight")
        CHECK(t.to_vector<double>() != file.at(name).to_vector<double>());
    expected->train(false);
    const Tensor logits = expected->forward(x);
    REQUIRE(result["logits"].shape() == Shape{2, 16});
    CHECK(result["logits"].to_vector<double>() == logits.to_vector<double>());
  }

  SECTION("without the flag: the classifier's mismatches are listed, the backbone's are not") {
    try {
      run_probe(options);
      FAIL("1000-class weights must not load into a 16-class model");
    } catch (const Error& error) {
      const std::string text = error.what();
      CHECK_THAT(text, Catch::Contains("classifier.6.weight: shape [1000, 128] in the file, "
                                       "[16, 128] in the model"));
      CHECK_THAT(text, Catch::Contains("classifier.6.bias: shape [1000] in the file, [16] in "
                                       "the model"));
      CHECK_THAT(text, !Catch::Contains("features."));
    }
  }

  SECTION("the flag needs weights") {
    options.backbone_only = true;
    options.weights.clear();
    CHECK_THROWS_WITH(run_probe(options), Catch::Contains("--backbone-only needs --weights"));
  }

  std::remove(weights.c_str());
  std::remove(input.c_str());
}
