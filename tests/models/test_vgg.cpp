#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "engine/ops.h"
#include "engine/ops/loss.h"
#include "engine/random.h"
#include "models/model_family.h"
#include "models/registry.h"

using namespace sonata;

namespace {
struct Entry {
  std::string name, shape, dtype;
};

// Written by tools/dump_state_dict_names.py from torchvision itself.
std::vector<Entry> torchvision_state_dict(const std::string& file) {
  std::ifstream in(std::string(SONATA_FIXTURES_DIR) + "/" + file);
  REQUIRE(in.good());
  std::vector<Entry> entries;
  Entry e;
  while (in >> e.name >> e.shape >> e.dtype) entries.push_back(e);
  return entries;
}

std::string shape_text(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out.push_back('x');
    out.append(std::to_string(shape[i]));
  }
  return out;
}
// `model` (16 classes) against torchvision's state_dict of the same name.
void check_torchvision_state_dict(const std::string& name) {
  manual_seed(0);
  ModelConfig config;
  config.set("num-classes", "16");
  const auto model = make_model(name, config);
  const NamedTensors ours = model->state_dict();
  const std::vector<Entry> theirs = torchvision_state_dict(name + "_16.state_dict.txt");
  REQUIRE(ours.size() == theirs.size());
  int64_t parameters_from_torch = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    INFO(theirs[i].name);
    CHECK(ours[i].first == theirs[i].name);
    CHECK(shape_text(ours[i].second.shape()) == theirs[i].shape);
    CHECK(std::string(ours[i].second.dtype() == DType::i64 ? "int64" : "float32") ==
          theirs[i].dtype);
    if (theirs[i].dtype == "float32" && theirs[i].name.find("running") == std::string::npos)
      parameters_from_torch += ours[i].second.numel();
  }
  CHECK(model->parameter_count() == parameters_from_torch);
}
}  // namespace

TEST_CASE("vgg19_bn's state_dict matches torchvision's names, shapes and dtypes", "[models][vgg]") {
  check_torchvision_state_dict("vgg19_bn");
}

TEST_CASE("vgg16_bn's state_dict matches torchvision's names, shapes and dtypes", "[models][vgg]") {
  check_torchvision_state_dict("vgg16_bn");
}

TEST_CASE("vgg16_bn is configuration D: 13 convolutions, one fewer per late stage",
          "[models][vgg]") {
  manual_seed(4);
  ModelConfig config;
  config.set("width", "0.0625");
  config.set("in-channels", "1");
  config.set("num-classes", "7");
  config.set("dropout", "0");
  const auto model = std::dynamic_pointer_cast<ImageClassifier>(make_model("vgg16_bn", config));
  REQUIRE(model);
  int64_t convs = 0;
  for (const auto& [name, p] : model->named_parameters())
    if (name.starts_with("features.") && p.dim() == 4) ++convs;
  CHECK(convs == 13);
  // 13 conv blocks, 5 max pools, the average pool and 7 classifier modules.
  CHECK(model->layers().size() == 26);
  const Tensor logits = model->forward(randn({2, 1, 32, 32}));
  CHECK(logits.shape() == Shape{2, 7});
  CHECK_THROWS_WITH(
      make_model("vgg16_bn", ModelConfig(std::map<std::string, std::string>{{"hidden", "3"}})),
      Catch::Contains("model vgg16_bn has no option --hidden"));
  CHECK_THROWS_WITH(model->forward(randn({1, 3, 32, 32})),
                    Catch::Contains("vgg16_bn: expected input [N, 1, H, W]"));
}

TEST_CASE("torchvision's initialisation statistics", "[models][vgg]") {
  manual_seed(1);
  ModelConfig config;
  config.set("width", "0.25");
  config.set("num-classes", "10");
  const auto model = make_model("vgg19_bn", config);
  for (const auto& [name, t] : model->named_parameters()) {
    INFO(name);
    if (name == "features.3.weight") {  // conv 16->16 3x3: std sqrt(2 / (16 * 9))
      CHECK(std::sqrt(var(t).item()) == Approx(std::sqrt(2.0 / 144)).epsilon(0.05));
    } else if (name == "classifier.0.weight") {
      CHECK(std::sqrt(var(t).item()) == Approx(0.01).epsilon(0.05));
    } else if (name == "features.1.weight") {
      CHECK(t.to_vector<float>() == std::vector<float>(16, 1.0f));
    } else if (name.ends_with("bias")) {
      CHECK(sum(abs(t)).item() == 0.0);
    }
  }
}

TEST_CASE("a narrow vgg19_bn trains one step on a spectrogram-shaped batch", "[models][vgg]") {
  manual_seed(2);
  ModelConfig config;
  config.set("width", "0.0625");
  config.set("in-channels", "1");
  config.set("num-classes", "16");
  config.set("dropout", "0");
  const auto model = make_model("vgg19_bn", config);
  const Tensor x = randn({2, 1, 64, 64});
  const Tensor labels = from_vector(std::vector<int64_t>{3, 11}, {2});
  const Tensor logits = model->forward(x);
  CHECK(logits.shape() == Shape{2, 16});
  const Tensor loss = cross_entropy(logits, labels);
  CHECK(std::isfinite(loss.item()));
  loss.backward();
  for (const auto& [name, p] : model->named_parameters()) {
    INFO(name);
    REQUIRE(p.grad().defined());
    CHECK(std::isfinite(sum(abs(p.grad())).item()));
  }
  // BN layers counted the step and moved their running statistics.
  for (const auto& [name, b] : model->named_buffers())
    if (name == "features.1.num_batches_tracked") CHECK(b.item() == 1);
  CHECK_THROWS_WITH(
      make_model("vgg19_bn", ModelConfig(std::map<std::string, std::string>{{"depth", "3"}})),
      Catch::Contains("--depth"));
  CHECK_THROWS_WITH(model->forward(randn({1, 3, 32, 32})), Catch::Contains("[1, 3, 32, 32]"));
}
