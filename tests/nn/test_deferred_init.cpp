// Deferred initialisation (engine/deferred_init.h): a model built in a DeferredInitScope
// owns no memory, and materialising it gives exactly the eagerly built model's values.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "engine/allocator.h"
#include "engine/autograd/grad_mode.h"
#include "engine/deferred_init.h"
#include "engine/io/safetensors.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "models/layers/linear.h"
#include "models/registry.h"
#include "tests/support/audio_files.h"
#include "tests/support/error_of.h"
#include "train/setup/init_from.h"

using namespace sonata;
using Catch::Matchers::Contains;
using sonata::testing::error_of;
using sonata::testing::TemporaryFolder;

namespace {

using Config = std::map<std::string, std::string>;

// The elements as doubles (exact for every floating dtype used here).
std::vector<double> values_of(const Tensor& t) {
  return t.to(DType::f64).to_vector<double>();
}

// Built twice from the same seed, eagerly and deferred; the deferred one materialised.
void check_deferred_build_is_eager_build(const std::string& model, const Config& config) {
  manual_seed(11);
  const auto eager = make_model(model, ModelConfig(config));
  const uint64_t eager_offset = default_generator().offset();

  manual_seed(11);
  const int64_t allocated_before = cpu_memory_stats().allocated_bytes;
  std::shared_ptr<Module> deferred;
  {
    DeferredInitScope scope;
    deferred = make_model(model, ModelConfig(config));
  }
  // Nothing allocated for the model, and the generator moved on as far as eager building.
  CHECK(cpu_memory_stats().allocated_bytes == allocated_before);
  CHECK(default_generator().offset() == eager_offset);
  const NamedTensors state = deferred->state_dict();
  std::vector<Tensor> tensors;
  for (const auto& [name, tensor] : state) {
    INFO(name);
    CHECK(is_deferred(tensor));
    tensors.push_back(tensor);
  }
  materialise(tensors);

  const NamedTensors reference = eager->state_dict();
  REQUIRE(state.size() == reference.size());
  for (size_t i = 0; i < state.size(); ++i) {
    INFO(state[i].first);
    CHECK(!is_deferred(state[i].second));
    CHECK(state[i].second.dtype() == reference[i].second.dtype());
    CHECK(state[i].second.shape() == reference[i].second.shape());
    CHECK(state[i].second.requires_grad() == reference[i].second.requires_grad());
    CHECK(values_of(state[i].second) == values_of(reference[i].second));
  }
}

}  // namespace

TEST_CASE("deferred init: vgg19_bn and ds2 built deferred then materialised equal eager builds",
          "[nn][deferred]") {
  check_deferred_build_is_eager_build("vgg19_bn", {{"width", "0.0625"}, {"num-classes", "10"}});
  check_deferred_build_is_eager_build("ds2",
                                      {{"num-mels", "16"}, {"hidden", "8"}, {"layers", "2"}});
}

TEST_CASE("deferred init: rows of a deferred Linear equal rows of an eager one", "[nn][deferred]") {
  // 5 inputs: rows begin at elements that are not a multiple of a Philox block's 4 lanes.
  manual_seed(5);
  Linear eager(5, 7);
  Tensor normal_eager = empty({7, 3});
  normal_(normal_eager, 0.5, 2.0);
  manual_seed(5);
  std::shared_ptr<Linear> deferred;
  Tensor normal_deferred;
  {
    DeferredInitScope scope;
    deferred = std::make_shared<Linear>(5, 7);
    normal_deferred = empty({7, 3});
    normal_(normal_deferred, 0.5, 2.0);
  }
  for (const auto& [begin, end] : {std::pair<int64_t, int64_t>{0, 7}, {1, 4}, {3, 7}, {5, 6}}) {
    INFO("rows " << begin << ".." << end);
    const std::shared_ptr<Linear> piece = deferred->rows(begin, end);
    Tensor normal_rows = copy_rows(normal_deferred, begin, end);
    CHECK(is_deferred(piece->weight()));
    materialise({piece->weight(), piece->bias(), normal_rows});
    const std::shared_ptr<Linear> reference = eager.rows(begin, end);
    CHECK(values_of(piece->weight()) == values_of(reference->weight()));
    CHECK(values_of(piece->bias()) == values_of(reference->bias()));
    CHECK(values_of(normal_rows) == values_of(copy_rows(normal_eager, begin, end)));
  }
}

TEST_CASE("deferred init: moves and casts replay in order", "[nn][deferred]") {
  manual_seed(9);
  Tensor eager = rand({6, 5});
  eager.fill_(0);
  uniform_(eager, -3.0, 3.0);
  manual_seed(9);
  Tensor deferred;
  {
    DeferredInitScope scope;
    deferred = rand({6, 5});
    deferred.fill_(0);  // overwritten, as eagerly: the last fill makes the values
    uniform_(deferred, -3.0, 3.0);
  }
  Tensor as_f64 = deferred.to(DType::f64);
  Tensor as_bf16 = deferred.to(DType::bf16);
  Tensor as_f16_then_f32 = deferred.to(DType::f16).to(DType::f32);
  CHECK(is_deferred(as_bf16));
  CHECK(as_bf16.dtype() == DType::bf16);
  materialise({as_f64, as_bf16, as_f16_then_f32});
  CHECK(values_of(as_f64) == values_of(eager.to(DType::f64)));
  CHECK(values_of(as_bf16) == values_of(eager.to(DType::bf16)));
  CHECK(values_of(as_f16_then_f32) == values_of(eager.to(DType::f16).to(DType::f32)));
  // The source is still deferred: each handle is made on its own.
  CHECK(is_deferred(deferred));
}

TEST_CASE("deferred init: --init-from on a deferred model reads the file when materialised",
          "[nn][deferred]") {
  TemporaryFolder folder("deferred_init_from");
  const Config narrow = {{"width", "0.0625"}, {"num-classes", "10"}};
  manual_seed(3);
  const auto source = make_model("vgg19_bn", ModelConfig(narrow));
  save_safetensors(folder.file("w.safetensors"), source->state_dict());

  Config other_head = narrow;
  other_head["num-classes"] = "16";
  manual_seed(4);
  const auto eager = make_model("vgg19_bn", ModelConfig(other_head));
  const std::string eager_line = init_from_weights(*eager, folder.file("w.safetensors"));
  eager->to(DType::f64);
  manual_seed(4);
  std::shared_ptr<Module> deferred;
  {
    DeferredInitScope scope;
    deferred = make_model("vgg19_bn", ModelConfig(other_head));
  }
  CHECK(init_from_weights(*deferred, folder.file("w.safetensors")) == eager_line);
  deferred->to(DType::f64);
  const NamedTensors state = deferred->state_dict();
  std::vector<Tensor> tensors;
  for (const auto& [name, tensor] : state) {
    CHECK(is_deferred(tensor));
    tensors.push_back(tensor);
  }
  // A row piece of a file tensor reads only its rows.
  const Tensor head = state.back().second;  // classifier.6.bias, fresh (the head differs)
  const Tensor first_rows = copy_rows(state.front().second, 1, 3);
  tensors.push_back(first_rows);
  materialise(tensors);
  const NamedTensors reference = eager->state_dict();
  for (size_t i = 0; i < state.size(); ++i) {
    INFO(state[i].first);
    CHECK(state[i].second.dtype() == reference[i].second.dtype());
    CHECK(values_of(state[i].second) == values_of(reference[i].second));
  }
  CHECK(values_of(first_rows) == values_of(copy_rows(reference.front().second, 1, 3)));
  CHECK(!is_deferred(head));
}

TEST_CASE("deferred init: reading a deferred tensor, or filling part of one, is an error",
          "[nn][deferred]") {
  Tensor deferred;
  Tensor pinned_like;
  {
    DeferredInitScope scope;
    deferred = zeros({4, 3});
    {
      DeferredInitScope eager(false);
      CHECK(!is_deferred(zeros({2})));
    }
    CHECK(is_deferred(ones({2})));
  }
  CHECK(!deferred_init_enabled());
  CHECK(!is_deferred(zeros({2})));
  CHECK_THAT(error_of([&] { (void)deferred.data_ptr(); }), Contains("has no data yet"));
  CHECK_THAT(error_of([&] { (void)deferred.to_vector<float>(); }), Contains("materialise()"));
  CHECK_THAT(error_of([&] { (void)add(deferred, deferred); }), Contains("deferred tensor"));
  CHECK_THAT(error_of([&] { deferred.slice(0, 1, 3).fill_(2); }),
             Contains("part of a deferred tensor"));
  CHECK_THAT(error_of([&] {
               Tensor part = deferred.slice(0, 0, 2);
               uniform_(part, 0, 1);
             }),
             Contains("part of a deferred tensor"));
  // Still whole and deferred after the refused fills; materialised, it is zeros.
  CHECK(is_deferred(deferred));
  materialise({deferred});
  CHECK(values_of(deferred) == std::vector<double>(12, 0.0));
}
