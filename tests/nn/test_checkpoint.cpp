// Checkpoints: a bitwise round trip of tensors, awkward doubles and texts; keep_last pruning
// that spares the best; best by min and by max, kept across a reopen; a truncated or corrupt
// newest checkpoint skipped when loading a directory and named when loading it directly;
// check_compatible's one error; no temporary folders left behind. Damaged checkpoints (bytes
// that do not match their checksum, truncated files): skipped with the reason, never pruned,
// counted or overwritten; checkpoints from before the checksum still load.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/io/safetensors.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "tests/support/error_of.h"

using namespace sonata;
using sonata::testing::error_of;
namespace fs = std::filesystem;

namespace {

// A fresh folder per test case, removed at the end.
class TempFolder {
 public:
  explicit TempFolder(const std::string& name)
      : root_(fs::temp_directory_path() /
              ("sonata_test_checkpoint_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~TempFolder() {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  std::string path(const std::string& relative = "") const {
    return relative.empty() ? root_.string() : (root_ / relative).string();
  }

 private:
  fs::path root_;
};

Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed) {
  Generator generator(seed);
  return mul(randn(shape, TensorOptions{}.with(DType::f64), &generator), 100.0).to(dtype);
}

// A small state whose "step" scalar says which save it came from.
TrainingState state_for(int64_t step) {
  TrainingState state;
  state.model = {{"features.0.weight", random_tensor({4, 3}, DType::f32, 1 + step)},
                 {"features.0.bias", random_tensor({4}, DType::f32, 2)}};
  state.optimizer.tensors = {{"state.0.momentum_buffer", random_tensor({4, 3}, DType::f32, 3)}};
  state.optimizer.scalars = {{"param_groups.0.lr", 0.1}, {"state.0.step", double(step)}};
  state.scalars = {{"step", double(step)}};
  state.texts = {{"model", "vgg19_bn"}};
  return state;
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  const uint8_t* p = static_cast<const uint8_t*>(c.data_ptr());
  return std::vector<uint8_t>(p, p + c.numel() * int64_t(dtype_size(c.dtype())));
}

void require_same_tensors(const NamedTensors& got, const NamedTensors& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("tensor " << want[i].first);
    CHECK(got[i].first == want[i].first);
    CHECK(got[i].second.dtype() == want[i].second.dtype());
    CHECK(got[i].second.shape() == want[i].second.shape());
    CHECK(bytes_of(got[i].second) == bytes_of(want[i].second));
  }
}

uint64_t bits_of(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  return bits;
}

std::set<std::string> entries(const std::string& folder) {
  std::set<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder))
    names.insert(entry.path().filename().string());
  return names;
}

std::string link_target(const std::string& path) {
  return fs::read_symlink(path).string();
}

}  // namespace

TEST_CASE("a checkpoint round-trips tensors, doubles and texts bitwise", "[nn][checkpoint]") {
  TempFolder folder("round_trip");
  TrainingState state;
  state.model = {
      {"conv.weight", random_tensor({2, 3, 3}, DType::f32, 1)},
      {"fc.weight", random_tensor({5}, DType::f64, 2)},
      {"bn.num_batches_tracked", from_vector(std::vector<int64_t>{(int64_t(1) << 53) + 1}, {})},
      {"half.weight", random_tensor({7}, DType::f16, 3)},
      {"empty", zeros({0, 4})}};
  state.optimizer.tensors = {{"state.0.exp_avg", random_tensor({2, 3, 3}, DType::f32, 4)},
                             {"state.1.master", random_tensor({7}, DType::f32, 5)}};
  state.optimizer.scalars = {{"param_groups.0.lr", 3e-4}, {"state.0.step", 12345}};
  const double awkward[] = {0.1,
                            1e-300,
                            std::nextafter(1.0, 2.0),
                            std::nextafter(1.0, 0.0),
                            std::numeric_limits<double>::denorm_min(),
                            std::numeric_limits<double>::max(),
                            -0.0,
                            1.0 / 3.0,
                            9007199254740992.0,
                            std::numeric_limits<double>::infinity()};
  for (size_t i = 0; i < std::size(awkward); ++i)
    state.scalars["value." + std::to_string(i)] = awkward[i];
  state.scalars["nan"] = std::numeric_limits<double>::quiet_NaN();
  state.texts = {{"model", "ds2"},
                 {"counter", "18446744073709551615"},
                 {"config", "{\"lr\": 0.1,\n \"name\": \"caf\xc3\xa9 \\\"x\\\"\"}"},
                 {"empty", ""}};

  CheckpointManager manager(folder.path(), 3, "min");
  const std::string saved = manager.save(state, 42, 0.25);
  CHECK(saved == folder.path("step-000000000042"));
  CHECK(entries(folder.path()) == std::set<std::string>{"step-000000000042", "latest", "best"});
  CHECK(entries(saved) == std::set<std::string>{"model.safetensors", "state.safetensors"});

  const TrainingState loaded = load_checkpoint(saved);
  require_same_tensors(loaded.model, state.model);
  require_same_tensors(loaded.optimizer.tensors, state.optimizer.tensors);
  CHECK(loaded.optimizer.scalars == state.optimizer.scalars);
  CHECK(loaded.texts == state.texts);
  REQUIRE(loaded.scalars.size() == state.scalars.size());
  for (size_t i = 0; i < std::size(awkward); ++i) {
    INFO("value " << i);
    CHECK(bits_of(loaded.scalars.at("value." + std::to_string(i))) == bits_of(awkward[i]));
  }
  CHECK(std::isnan(loaded.scalars.at("nan")));

  // model.safetensors is exactly the state_dict (what torch's load_state_dict takes);
  // state.safetensors records the step and the metric.
  const SafetensorsContents model = load_safetensors(saved + "/model.safetensors");
  require_same_tensors(model.tensors, state.model);
  CHECK(model.metadata.empty());
  const SafetensorsContents rest = load_safetensors(saved + "/state.safetensors");
  CHECK(rest.metadata.at("step") == "42");
  CHECK(rest.metadata.at("metric") == "0.25");
  CHECK(rest.metadata.at("format") == "sonata-checkpoint-1");
  CHECK(rest.metadata.at("scalar.value.0") == "0.10000000000000001");
}

TEST_CASE("keep_last prunes old checkpoints but keeps the best", "[nn][checkpoint]") {
  TempFolder folder("prune");
  CheckpointManager manager(folder.path(), 2, "min");
  manager.save(state_for(1), 1, 0.5);
  manager.save(state_for(2), 2, 0.3);
  manager.save(state_for(3), 3, 0.4);
  manager.save(state_for(4), 4, 0.35);
  manager.save(state_for(5), 5);
  CHECK(entries(folder.path()) == std::set<std::string>{"step-000000000002", "step-000000000004",
                                                        "step-000000000005", "latest", "best"});
  CHECK(link_target(folder.path("best")) == "step-000000000002");
  CHECK(link_target(folder.path("latest")) == "step-000000000005");
  CHECK(manager.best_metric() == 0.3);
  CHECK(manager.best_checkpoint() == folder.path("step-000000000002"));
  CHECK(load_checkpoint(folder.path("best")).scalars.at("step") == 2);
  CHECK(load_checkpoint(folder.path("latest")).scalars.at("step") == 5);

  // A new best frees the old one for pruning.
  manager.save(state_for(6), 6, 0.1);
  CHECK(entries(folder.path()) ==
        std::set<std::string>{"step-000000000005", "step-000000000006", "latest", "best"});
  CHECK(link_target(folder.path("best")) == "step-000000000006");
}

TEST_CASE("the best checkpoint follows the metric mode", "[nn][checkpoint]") {
  for (const char* mode : {"min", "max"}) {
    INFO("mode " << mode);
    TempFolder folder(std::string("best_") + mode);
    CheckpointManager manager(folder.path(), 0, mode);
    CHECK(!manager.best_metric());
    CHECK(manager.best_checkpoint().empty());
    manager.save(state_for(10), 10, 3.0);
    manager.save(state_for(20), 20, 1.0);
    manager.save(state_for(30), 30, std::numeric_limits<double>::quiet_NaN());
    manager.save(state_for(40), 40, 2.0);
    manager.save(state_for(50), 50, mode == std::string("min") ? 1.0 : 3.0);  // ties keep the first
    const bool min = mode == std::string("min");
    CHECK(manager.best_metric() == (min ? 1.0 : 3.0));
    CHECK(link_target(folder.path("best")) == (min ? "step-000000000020" : "step-000000000010"));
    CHECK(entries(folder.path()).size() == 7);  // keep_last 0 keeps all
  }
  CHECK_THROWS_WITH(CheckpointManager(TempFolder("bad_mode").path(), 1, "lowest"),
                    Catch::Contains("metric mode 'lowest' is neither"));
}

TEST_CASE("reopening a checkpoint folder keeps its best and continues", "[nn][checkpoint]") {
  TempFolder folder("reopen");
  {
    CheckpointManager manager(folder.path(), 2, "max");
    manager.save(state_for(1), 1, 0.6);
    manager.save(state_for(2), 2, 0.9);
    manager.save(state_for(3), 3, 0.7);
  }
  // What crashed saves of other processes leave (removed on opening), and one of this
  // process's own (left alone until this process saves that step).
  fs::create_directories(folder.path(".step-000000000004.tmp-999999999/x"));
  fs::create_directories(folder.path(".step-000000000003.tmp-1.removed"));
  const std::string own = ".step-000000000004.tmp-" + std::to_string(::getpid());
  fs::create_directories(folder.path(own));
  CheckpointManager manager(folder.path(), 2, "max");
  CHECK(manager.best_metric() == 0.9);
  CHECK(manager.best_checkpoint() == folder.path("step-000000000002"));
  CHECK(entries(folder.path()) ==
        std::set<std::string>{"step-000000000002", "step-000000000003", "latest", "best", own});
  manager.save(state_for(4), 4, 0.8);
  manager.save(state_for(5), 5, 0.85);
  CHECK(entries(folder.path()) == std::set<std::string>{"step-000000000002", "step-000000000004",
                                                        "step-000000000005", "latest", "best"});
  manager.save(state_for(6), 6, 0.95);
  CHECK(manager.best_metric() == 0.95);
  CHECK(entries(folder.path()) ==
        std::set<std::string>{"step-000000000005", "step-000000000006", "latest", "best"});
  CHECK(latest_checkpoint(folder.path()) == folder.path("step-000000000006"));
}

TEST_CASE("saving a step again replaces its folder", "[nn][checkpoint]") {
  TempFolder folder("resave");
  CheckpointManager manager(folder.path(), 0, "min");
  manager.save(state_for(7), 7, 0.5);
  TrainingState second = state_for(7);
  second.texts["model"] = "ds2";
  manager.save(second, 7);
  CHECK(load_checkpoint(folder.path()).texts.at("model") == "ds2");
  CHECK(!manager.best_metric());  // the folder that held the best metric is gone
  CHECK(entries(folder.path()) == std::set<std::string>{"step-000000000007", "latest"});
}

TEST_CASE("a truncated or corrupt newest checkpoint falls back to the previous one",
          "[nn][checkpoint]") {
  struct Damage {
    const char* name;
    const char* file;
    std::function<void(const std::string&)> apply;
    const char* reason;
  };
  const std::vector<Damage> damages = {
      {"truncated model", "model.safetensors",
       [](const std::string& path) { fs::resize_file(path, fs::file_size(path) - 9); },
       "outside the"},
      {"corrupt state header", "state.safetensors",
       [](const std::string& path) {
         std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
         file.seekp(9);
         file.write("\x01\x02\x03", 3);
       },
       "not valid JSON"},
      {"missing model", "model.safetensors", [](const std::string& path) { fs::remove(path); },
       "cannot open"},
  };
  for (const Damage& damage : damages) {
    INFO(damage.name);
    TempFolder folder("damage");
    CheckpointManager manager(folder.path(), 0, "min");
    manager.save(state_for(1), 1);
    manager.save(state_for(2), 2);
    const std::string newest = manager.save(state_for(3), 3);
    damage.apply(newest + "/" + damage.file);

    const TrainingState loaded = load_checkpoint(folder.path());
    CHECK(loaded.scalars.at("step") == 2);
    require_same_tensors(loaded.model, state_for(2).model);
    CHECK(latest_checkpoint(folder.path()) == folder.path("step-000000000002"));

    const std::string message = error_of([&] { load_checkpoint(newest); });
    CHECK_THAT(message, Catch::Contains("checkpoint '" + newest + "' is unreadable"));
    CHECK_THAT(message, Catch::Contains(damage.file));
    CHECK_THAT(message, Catch::Contains(damage.reason));
  }
}

TEST_CASE("loading a directory without a readable checkpoint is one error", "[nn][checkpoint]") {
  TempFolder folder("none");
  CHECK(latest_checkpoint(folder.path()).empty());
  CHECK(latest_checkpoint(folder.path("absent")).empty());
  CHECK_THROWS_WITH(load_checkpoint(folder.path()), Catch::Contains("holds no checkpoint"));
  CHECK_THROWS_WITH(load_checkpoint(folder.path("absent")), Catch::Contains("is not a folder"));
  CheckpointManager manager(folder.path(), 0, "min");
  const std::string only = manager.save(state_for(1), 1);
  fs::resize_file(only + "/state.safetensors", 20);
  CHECK_THROWS_WITH(load_checkpoint(folder.path()), Catch::Contains("no checkpoint in"));
}

TEST_CASE("check_compatible lists every difference in one error", "[nn][checkpoint]") {
  TrainingState checkpoint;
  checkpoint.model = {{"conv.weight", zeros({8, 3, 3, 3})},
                      {"conv.bias", zeros({8})},
                      {"old.weight", zeros({2})},
                      {"bn.num_batches_tracked", zeros({}, TensorOptions{}.with(DType::i64))}};
  const std::string vocabulary(100, 'a');
  checkpoint.texts = {{"model", "ds2"}, {"vocabulary", vocabulary + "bcd"}};
  const NamedTensors model = {{"conv.weight", zeros({16, 3, 3, 3})},
                              {"conv.bias", zeros({8})},
                              {"fc.weight", zeros({4, 8})},
                              {"bn.num_batches_tracked", zeros({})}};

  const std::string message = error_of([&] {
    check_compatible(checkpoint, model, {{"model", "ds2"}, {"vocabulary", vocabulary + "bxd"}});
  });
  CHECK_THAT(message, Catch::Contains("tensor 'fc.weight' is missing"));
  CHECK_THAT(message, Catch::Contains("tensor 'old.weight' is not in the model"));
  CHECK_THAT(message, Catch::Contains("tensor 'conv.weight' is f32 [8, 3, 3, 3] in the "
                                      "checkpoint but f32 [16, 3, 3, 3] in the model"));
  CHECK_THAT(message, Catch::Contains("tensor 'bn.num_batches_tracked' is i64"));
  // Shown from 20 characters before the difference.
  const std::string context(19, 'a');
  CHECK_THAT(message, Catch::Contains("'vocabulary' is \"..." + context +
                                      "bcd\" in the checkpoint but \"..." + context +
                                      "bxd\" here (they differ from character 101)"));
  CHECK_THAT(message, !Catch::Contains("'model'"));
  CHECK_THAT(message, !Catch::Contains("conv.bias"));

  // The same model and texts pass.
  check_compatible(checkpoint, checkpoint.model, checkpoint.texts);

  NamedTensors many;
  for (int i = 0; i < 15; ++i) many.emplace_back("layer." + std::to_string(i), zeros({1}));
  TrainingState empty_checkpoint;
  const std::string long_message = error_of([&] {
    check_compatible(empty_checkpoint, many, {{"model", "vgg19_bn"}});
  });
  CHECK_THAT(long_message, Catch::Contains("tensor 'layer.9' is missing"));
  CHECK_THAT(long_message, !Catch::Contains("'layer.10'"));
  CHECK_THAT(long_message, Catch::Contains("and 5 more tensor differences"));
  CHECK_THAT(long_message, Catch::Contains("'model' is missing from the checkpoint"));
}

namespace {

// Flips eight bytes in the middle of a safetensors file's data: the sizes still agree.
void flip_data_bytes(const std::string& path) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  uint8_t length[8];
  file.read(reinterpret_cast<char*>(length), 8);
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = (header << 8) | length[i];
  const uint64_t data = fs::file_size(path) - 8 - header;
  REQUIRE(data >= 8);
  const std::streamoff at = std::streamoff(8 + header + data / 2 - 4);
  char bytes[8];
  file.seekg(at);
  file.read(bytes, 8);
  for (char& b : bytes) b = char(~b);
  file.seekp(at);
  file.write(bytes, 8);
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("a checkpoint whose bytes do not match its checksum is skipped, and named",
          "[nn][checkpoint]") {
  for (const char* file : {"model.safetensors", "state.safetensors"}) {
    INFO(file);
    TempFolder folder("flipped");
    CheckpointManager manager(folder.path(), 0, "min");
    manager.save(state_for(1), 1);
    manager.save(state_for(2), 2);
    const std::string newest = manager.save(state_for(3), 3);
    flip_data_bytes(newest + "/" + file);

    CheckpointSource source;
    const TrainingState loaded = load_checkpoint(folder.path(), &source);
    CHECK(loaded.scalars.at("step") == 2);
    require_same_tensors(loaded.model, state_for(2).model);
    CHECK(source.folder == folder.path("step-000000000002"));
    REQUIRE(source.skipped.size() == 1);
    CHECK_THAT(source.skipped[0], Catch::Contains("checkpoint '" + newest + "' is unreadable"));
    CHECK_THAT(source.skipped[0], Catch::Contains(file));
    CHECK_THAT(source.skipped[0], Catch::Contains("do not match the file's checksum"));
    CHECK_THAT(error_of([&] { load_checkpoint(newest); }),
               Catch::Contains("do not match the file's checksum"));
  }
}

TEST_CASE("a directory whose every checkpoint is damaged is one error naming each",
          "[nn][checkpoint]") {
  TempFolder folder("all_damaged");
  CheckpointManager manager(folder.path(), 0, "min");
  const std::string first = manager.save(state_for(1), 1);
  const std::string second = manager.save(state_for(2), 2);
  fs::resize_file(first + "/model.safetensors", fs::file_size(first + "/model.safetensors") - 9);
  flip_data_bytes(second + "/state.safetensors");
  CHECK(has_step_folders(folder.path()));
  const std::string message = error_of([&] { load_checkpoint(folder.path()); });
  CHECK_THAT(message, Catch::Contains("no checkpoint in '" + folder.path() + "' loads"));
  CHECK_THAT(message, Catch::Contains("1. checkpoint '" + second + "' is unreadable"));
  CHECK_THAT(message, Catch::Contains("2. checkpoint '" + first + "' is unreadable"));
  CHECK_THAT(message, Catch::Contains("checksum"));
  CHECK_THAT(message, Catch::Contains("outside the"));

  TempFolder empty("no_step_folders");
  fs::create_directories(empty.path(".step-000000000001.tmp-1"));
  CHECK(!has_step_folders(empty.path()));
  CHECK(!has_step_folders(empty.path("absent")));
}

TEST_CASE("pruning never deletes a damaged checkpoint, nor counts it among those kept",
          "[nn][checkpoint]") {
  TempFolder folder("prune_damaged");
  {
    CheckpointManager manager(folder.path(), 2, "min");
    manager.save(state_for(1), 1);
    manager.save(state_for(2), 2);
    manager.save(state_for(3), 3);
  }
  const std::string two = folder.path("step-000000000002"),
                    three = folder.path("step-000000000003");
  fs::resize_file(two + "/model.safetensors", 100);  // truncated
  flip_data_bytes(three + "/model.safetensors");     // whole, but not the bytes written
  const std::string damaged_two = file_text(two + "/model.safetensors");
  const std::string damaged_three = file_text(three + "/model.safetensors");

  CheckpointManager manager(folder.path(), 2, "min");
  manager.save(state_for(4), 4);
  manager.save(state_for(5), 5);
  CHECK(entries(folder.path()) == std::set<std::string>{"step-000000000002", "step-000000000003",
                                                        "step-000000000004", "step-000000000005",
                                                        "latest"});
  manager.save(state_for(6), 6);  // two good ones newer than 4: it goes
  CHECK(entries(folder.path()) == std::set<std::string>{"step-000000000002", "step-000000000003",
                                                        "step-000000000005", "step-000000000006",
                                                        "latest"});
  CHECK(file_text(two + "/model.safetensors") == damaged_two);
  CHECK(file_text(three + "/model.safetensors") == damaged_three);
}

TEST_CASE("saving over a damaged checkpoint moves it aside instead", "[nn][checkpoint]") {
  TempFolder folder("resave_damaged");
  {
    CheckpointManager manager(folder.path(), 0, "min");
    manager.save(state_for(1), 1);
    manager.save(state_for(2), 2);
  }
  const std::string two = folder.path("step-000000000002");
  flip_data_bytes(two + "/state.safetensors");
  const std::string damaged = file_text(two + "/state.safetensors");

  CheckpointManager manager(folder.path(), 0, "min");
  TrainingState again = state_for(2);
  again.texts["model"] = "ds2";
  manager.save(again, 2);
  CHECK(load_checkpoint(two).texts.at("model") == "ds2");
  CHECK(file_text(folder.path("step-000000000002.damaged/state.safetensors")) == damaged);

  // A second damaged save of the step keeps both.
  flip_data_bytes(two + "/model.safetensors");
  CheckpointManager reopened(folder.path(), 0, "min");
  reopened.save(state_for(2), 2);
  CHECK(entries(folder.path()) == std::set<std::string>{"step-000000000001", "step-000000000002",
                                                        "step-000000000002.damaged",
                                                        "step-000000000002.damaged-2", "latest"});
  CHECK(load_checkpoint(folder.path()).texts.at("model") == "vgg19_bn");
}

TEST_CASE("a checkpoint written before checksums (none in its files) still loads and counts",
          "[nn][checkpoint]") {
  // Files as sonata wrote them before: the same header, no "sonata.crc32c". Built by hand.
  TempFolder folder("unchecked");
  const std::string step = folder.path("step-000000000007");
  fs::create_directories(step);
  auto write = [](const std::string& path, const std::string& header,
                  const std::vector<float>& data) {
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(char(uint8_t(n >> (8 * i))));
    out << header;
    out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * 4));
  };
  write(step + "/model.safetensors", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
        {1.0f, 2.0f});
  write(step + "/state.safetensors",
        R"({"__metadata__":{"format":"sonata-checkpoint-1","step":"7","scalar.step":"7"}})", {});
  const TrainingState loaded = load_checkpoint(folder.path());
  CHECK(loaded.model.at(0).second.to_vector<float>() == std::vector<float>{1.0f, 2.0f});
  CHECK(loaded.scalars.at("step") == 7);

  // Pruning counts it as good: with keep_last 1 it goes once a newer one is saved.
  CheckpointManager manager(folder.path(), 1, "min");
  manager.save(state_for(8), 8);
  CHECK(entries(folder.path()) == std::set<std::string>{"step-000000000008", "latest"});
}
