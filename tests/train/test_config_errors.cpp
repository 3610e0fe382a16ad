// Config files that would be misread are refused in one sentence naming the key and the file:
// a key that is no option (CLI11 alone says "INI was not able to parse"), and a key given
// twice (a YAML reader keeps one of them silently, and which one differs between readers).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/support/audio_files.h"
#include "tests/train/trainer_test_util.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

TEST_CASE("trainer config: an unknown key is named with its file", "[trainer][config]") {
  TemporaryFolder folder("config_unknown_key");
  const std::string json = folder.file("run.json");
  write_text(json, R"({"lr": 0.01, "batch-sise": 8})");
  CHECK_THROWS_WITH(parse_command_line({"--config", json}),
                    Contains("'batch-sise'") && Contains(json) && !Contains("INI"));
  const std::string yaml = folder.file("run.yaml");
  write_text(yaml, "lr: 0.01\n\nbatch_sise: 8\n");
  CHECK_THROWS_WITH(
      parse_command_line({"--config", yaml}),
      Contains("'batch_sise'") && Contains(yaml) && Contains("line 3") && !Contains("INI"));
  // Known keys still read, with underscores for dashes.
  write_text(yaml, "lr: 0.01\nbatch_size: 8\n");
  CHECK(parse_command_line({"--config", yaml}).batch_size == 8);
}

TEST_CASE("trainer config: a UTF-8 byte-order mark before the first key is read past",
          "[trainer][config]") {
  TemporaryFolder folder("config_byte_order_mark");
  const std::string bom = "\xEF\xBB\xBF";
  const std::string yaml = folder.file("run.yaml");
  write_text(yaml, bom + "model: ds2\nbatch_size: 8\n");
  CHECK(parse_command_line({"--config", yaml}).batch_size == 8);
  const std::string json = folder.file("run.json");
  write_text(json, bom + R"({"model": "ds2", "batch-size": 6})");
  CHECK(parse_command_line({"--config", json}).batch_size == 6);
  // Still JSON: its errors say so.
  write_text(json, bom + R"({"model": "ds2", "batch-sise": 6})");
  CHECK_THROWS_WITH(parse_command_line({"--config", json}),
                    Contains("(JSON)") && Contains("'batch-sise'"));
}

TEST_CASE("trainer config: a key given twice is refused naming it, the file and the lines",
          "[trainer][config]") {
  TemporaryFolder folder("config_duplicate_key");
  const std::string yaml = folder.file("run.yaml");
  write_text(yaml, "lr: 0.01\nepochs: 3\nlr: 0.5\n");
  CHECK_THROWS_WITH(parse_command_line({"--config", yaml}),
                    Contains("'lr'") && Contains(yaml) && Contains("line 3") &&
                        Contains("line 1") && Contains("twice"));
  // batch_size and batch-size set the same option.
  write_text(yaml, "batch_size: 8\nbatch-size: 16\n");
  CHECK_THROWS_WITH(parse_command_line({"--config", yaml}),
                    Contains("'batch-size'") && Contains("line 2") && Contains("twice"));
  const std::string json = folder.file("run.json");
  write_text(json, R"({"lr": 0.01, "epochs": 3, "lr": 0.5})");
  CHECK_THROWS_WITH(parse_command_line({"--config", json}),
                    Contains("'lr'") && Contains(json) && Contains("twice"));
}

TEST_CASE("trainer config: what the reader does not support is refused naming file, line, key",
          "[trainer][config]") {
  TemporaryFolder folder("config_unsupported");
  const std::string yaml = folder.file("run.yaml");
  auto refused = [&](const std::string& text, int line, const std::string& key,
                     const std::string& words) {
    INFO(text);
    write_text(yaml, text);
    CHECK_THROWS_WITH(parse_command_line({"--config", yaml}),
                      Contains(yaml) && Contains("line " + std::to_string(line)) &&
                          Contains("'" + key + "'") && Contains(words));
  };
  // A second document: a YAML library reads the first only (or fails); never both.
  refused("lr: 0.01\n---\nepochs: 3\n", 2, "lr", "second YAML document");
  refused("lr: 0.01\n...\nepochs: 3\n", 3, "epochs", "end of the document");
  // A list for an option of one value, block or flow.
  refused("epochs: 3\nlr: [1, 2]\n", 2, "lr", "takes one value");
  refused("lr:\n  - 1\n  - 2\n", 1, "lr", "takes one value");
  // A value not of the option's type.
  refused("batch-size: 8.5\n", 1, "batch-size", "must be an integer");
  refused("epochs: 2\nlr: fast\n", 2, "lr", "must be a number");
  // Anchors, aliases, merge keys, tags, block scalars.
  refused("lr: &rate 0.01\n", 1, "lr", "anchor");
  refused("lr: 0.01\nmin-lr: *rate\n", 2, "min-lr", "alias");
  refused("<<: *defaults\n", 1, "<<", "merge key");
  refused("lr: !!float 1\n", 1, "lr", "tag");
  refused("train: |\n  a.tsv\n", 1, "train", "block scalar");
  // JSON: the line of the key too.
  const std::string json = folder.file("run.json");
  write_text(json, "{\n  \"lr\": 0.01,\n  \"batch-size\": 8.5\n}\n");
  CHECK_THROWS_WITH(parse_command_line({"--config", json}), Contains(json) && Contains("line 3") &&
                                                                Contains("'batch-size'") &&
                                                                Contains("must be an integer"));
  write_text(json, "{\n  \"lr\": [1, 2]\n}\n");
  CHECK_THROWS_WITH(parse_command_line({"--config", json}), Contains(json) && Contains("line 2") &&
                                                                Contains("'lr'") &&
                                                                Contains("takes one value"));

  // What it supports still reads: a leading "---", a trailing "...", lists for list options
  // (also split at their delimiter), numbers in any form CLI11 takes.
  write_text(yaml,
             "---\nlr: 2e-3\nbatch_size: 8\nimage-mean: [0.4, 0.5]\nimage-std: 0.2,0.3\n...\n");
  const TrainerOptions options = parse_command_line({"--config", yaml});
  CHECK(options.lr == 2e-3);
  CHECK(options.batch_size == 8);
  CHECK(options.image_mean == std::vector<double>{0.4, 0.5});
  CHECK(options.image_std == std::vector<double>{0.2, 0.3});
}
