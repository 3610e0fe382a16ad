// Checkpoints written from a source of tensors and read in part (engine/checkpoint/
// checkpoint.h): CheckpointManager::save of a TrainingStateSource writes the files of the
// same TrainingState byte for byte; load_checkpoint_part returns exactly the selected
// tensors with every scalar and text, what every model tensor is for check_compatible, and
// refuses a damaged step folder naming the file.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "tests/support/error_of.h"

using namespace sonata;
using sonata::testing::error_of;
namespace fs = std::filesystem;

namespace {

fs::path fresh_folder(const std::string& name) {
  const fs::path path = fs::temp_directory_path() /
                        ("sonata_test_checkpoint_part_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(path);
  fs::create_directories(path);
  return path;
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed) {
  Generator generator(seed);
  return mul(randn(shape, TensorOptions{}.with(DType::f64), &generator), 10.0).to(dtype);
}

TrainingState two_layer_state() {
  TrainingState state;
  state.model = {{"conv.weight", random_tensor({4, 3}, DType::f32, 1)},
                 {"conv.bias", random_tensor({4}, DType::f32, 2)},
                 {"fc.weight", random_tensor({2, 4}, DType::f32, 3)},
                 {"bn.num_batches_tracked", full({}, 3, TensorOptions{}.with(DType::i64))}};
  state.optimizer.tensors = {{"state.0.exp_avg", random_tensor({4, 3}, DType::f32, 4)},
                             {"state.0.exp_avg_sq", random_tensor({4, 3}, DType::f32, 5)},
                             {"state.2.exp_avg", random_tensor({2, 4}, DType::f32, 6)},
                             {"state.2.exp_avg_sq", random_tensor({2, 4}, DType::f32, 7)}};
  state.optimizer.scalars = {{"param_groups.0.lr", 1e-3},
                             {"param_groups.0.params", 3},
                             {"state.0.step", 3},
                             {"state.2.step", 3}};
  state.scalars = {{"step", 3}, {"epoch", 1}};
  state.texts = {{"model", "ds2"}, {"vocabulary", "abc"}};
  return state;
}

std::vector<std::string> names_of(const NamedTensors& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors) names.push_back(name);
  return names;
}

}  // namespace

TEST_CASE("a checkpoint saved from a source of tensors is the one saved from the state",
          "[nn][checkpoint]") {
  const fs::path root = fresh_folder("source");
  const TrainingState state = two_layer_state();
  CheckpointManager whole((root / "whole").string(), 0, "min");
  CheckpointManager streamed((root / "streamed").string(), 0, "min");
  const std::string a = whole.save(state, 3, 0.5);
  // The source hands over copies, one at a time, in the files' order.
  TrainingStateSource source = training_state_source(state);
  std::vector<std::string> fetched;
  auto copying = [&](TensorSource files, const NamedTensors& tensors) {
    files.fetch = [&fetched, &tensors](size_t i) {
      fetched.push_back(tensors[i].first);
      return tensors[i].second.clone();
    };
    return files;
  };
  source.model = copying(source.model, state.model);
  source.optimizer_tensors = copying(source.optimizer_tensors, state.optimizer.tensors);
  const std::string b = streamed.save(source, 3, 0.5);
  std::vector<std::string> order = names_of(state.model);
  for (const std::string& name : names_of(state.optimizer.tensors)) order.push_back(name);
  CHECK(fetched == order);
  for (const char* file : {"model.safetensors", "state.safetensors"}) {
    INFO(file);
    CHECK(read_bytes(fs::path(a) / file) == read_bytes(fs::path(b) / file));
  }
  CHECK(fs::read_symlink(root / "streamed" / "latest") == "step-000000000003");
  CHECK(fs::read_symlink(root / "streamed" / "best") == "step-000000000003");
  fs::remove_all(root);
}

TEST_CASE("a checkpoint read in part holds the selected tensors and all the rest",
          "[nn][checkpoint]") {
  const fs::path root = fresh_folder("part");
  const TrainingState state = two_layer_state();
  CheckpointManager manager(root.string(), 0, "min");
  const std::string folder = manager.save(state, 3);
  const TrainingState whole = load_checkpoint(folder);

  // The second layer's tensors: fc.weight and parameter 2's optimizer state.
  CheckpointSelection selection;
  selection.model = [](const std::string& name) { return name.rfind("fc.", 0) == 0; };
  selection.optimizer = [](const std::string& name) { return name.rfind("state.2.", 0) == 0; };
  CheckpointSource source;
  const PartialTrainingState part = load_checkpoint_part(root.string(), selection, &source);
  CHECK(source.folder == folder);
  REQUIRE(names_of(part.state.model) == std::vector<std::string>{"fc.weight"});
  CHECK(part.state.model[0].second.to_vector<float>() == state.model[2].second.to_vector<float>());
  REQUIRE(names_of(part.state.optimizer.tensors) ==
          std::vector<std::string>{"state.2.exp_avg", "state.2.exp_avg_sq"});
  CHECK(part.state.optimizer.tensors[1].second.to_vector<float>() ==
        state.optimizer.tensors[3].second.to_vector<float>());
  CHECK(part.state.optimizer.scalars == whole.optimizer.scalars);
  CHECK(part.state.scalars == whole.scalars);
  CHECK(part.state.texts == whole.texts);
  // What every model tensor is, in the file's order: one process's.
  REQUIRE(part.model_in_file.size() == state.model.size());
  for (size_t i = 0; i < state.model.size(); ++i) {
    INFO(state.model[i].first);
    CHECK(part.model_in_file[i].name == state.model[i].first);
    CHECK(part.model_in_file[i].shape == state.model[i].second.shape());
    CHECK(part.model_in_file[i].dtype == state.model[i].second.dtype());
  }

  // The compatibility check judges the header as it judges the loaded tensors.
  NamedTensors other_model = state.model;
  other_model[0].second = zeros({8, 3});
  other_model.pop_back();
  const std::map<std::string, std::string> texts{{"model", "ds2"}, {"vocabulary", "abd"}};
  const std::string from_tensors = error_of([&] { check_compatible(whole, other_model, texts); });
  const std::string from_header =
      error_of([&] { check_compatible(part.model_in_file, part.state.texts, other_model, texts); });
  CHECK_THAT(from_header, Catch::Contains("tensor 'conv.weight' is f32 [4, 3] in the checkpoint "
                                          "but f32 [8, 3] in the model") &&
                              Catch::Contains("'bn.num_batches_tracked' is not in the model") &&
                              Catch::Contains("'vocabulary' is \"abc\""));
  CHECK(from_header == from_tensors);
  CHECK_NOTHROW(
      check_compatible(part.model_in_file, part.state.texts, state.model, {{"model", "ds2"}}));

  // A byte flipped in a tensor this process does not read: refused, naming the file.
  const fs::path model_file = fs::path(folder) / "model.safetensors";
  std::vector<uint8_t> bytes = read_bytes(model_file);
  bytes[bytes.size() - 8 - 32 - 16 - 40] ^= 0x01;  // inside conv.weight
  {
    std::ofstream out(model_file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  CHECK_THAT(
      error_of([&] { load_checkpoint_part(folder, selection); }),
      Catch::Contains(model_file.string()) && Catch::Contains("do not match the file's checksum"));
  fs::remove_all(root);
}
