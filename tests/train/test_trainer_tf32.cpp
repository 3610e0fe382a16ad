// trainer --tf32: its default (PyTorch's: convolutions only), the values it takes on the
// command line and in a config file, and the one-sentence refusal of anything else.
#include <catch2/catch.hpp>

#include <string>

#include "base/error.h"
#include "base/math_mode.h"
#include "tests/support/audio_files.h"
#include "tests/train/trainer_test_util.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Matchers::Contains;

TEST_CASE("trainer --tf32: conv by default, off | conv | all accepted, else refused",
          "[trainer][tf32]") {
  const TrainerOptions defaults = parse_command_line({"--train", "a.tsv"});
  CHECK(defaults.tf32 == "conv");
  CHECK(parse_tf32_mode(defaults.tf32.word()) == Tf32Mode::conv);
  CHECK(kDefaultTf32Mode == Tf32Mode::conv);
  defaults.check();
  for (const char* value : {"off", "conv", "all"}) {
    INFO(value);
    const TrainerOptions o = parse_command_line({"--train", "a.tsv", "--tf32", value});
    CHECK(o.tf32 == value);
    o.check();
    CHECK(o.to_json().find(std::string("\"tf32\":\"") + value + "\"") != std::string::npos);
  }
  const TrainerOptions bad = parse_command_line({"--train", "a.tsv", "--tf32", "fast"});
  CHECK_THROWS_WITH(bad.check(), Contains("--tf32 must be off, conv or all, got 'fast'"));
}

TEST_CASE("trainer --tf32: the config file key is tf32", "[trainer][tf32]") {
  TemporaryFolder folder("trainer_tf32");
  write_text(folder.file("run.yaml"), "train: a.tsv\ntf32: all\n");
  const TrainerOptions o = parse_command_line({"--config", folder.file("run.yaml")});
  CHECK(o.tf32 == "all");
  CHECK(o.to_json() == parse_command_line({"--train", "a.tsv", "--tf32", "all"}).to_json());
}
