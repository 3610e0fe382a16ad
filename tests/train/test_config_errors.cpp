// Config files that would be misread are refused in one sentence naming the key and the file:
// a key that is no option (CLI11 alone says "INI was not able to parse"), and a key given
// twice (a YAML reader keeps one of them silently, and which one differs between readers).
#include <catch2/catch.hpp>

#include <string>

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
