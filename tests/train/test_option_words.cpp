// Messages in the user's words: a value the user wrote is refused naming the flag and the
// value (not the optimizer or schedule that would refuse it later in its own terms), and the
// lines naming skipped clips carry no source location.
#include <catch2/catch.hpp>

#include <string>

#include "tests/train/trainer_test_util.h"
#include "train/bad_input.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

TEST_CASE("trainer options: --lr inf and --weight-decay -1 are refused naming the flag",
          "[trainer][options]") {
  const std::vector<std::string> base = {"--model", "ds2", "--train", "train.tsv"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    return parse_command_line(extra);
  };
  CHECK_THROWS_WITH(with({"--lr", "inf"}).check(),
                    Contains("--lr must be a positive number, got inf"));
  CHECK_THROWS_WITH(with({"--weight-decay", "-1"}).check(),
                    Contains("--weight-decay must be a number not below 0, got -1"));
  CHECK_NOTHROW(with({"--lr", "0.1", "--weight-decay", "0"}).check());
}

TEST_CASE("skipped clips are named without the source location of their error",
          "[trainer][options]") {
  DataReport report;
  report_skipped(report, "train", "clips",
                 {"'a.wav' is corrupt or truncated: libsndfile cannot open it (data/audio/"
                  "decode.cpp:149)"});
  REQUIRE(report.lines.size() == 1);
  CHECK_THAT(report.lines[0], Contains("'a.wav' is corrupt or truncated"));
  CHECK_THAT(report.lines[0], !Contains("decode.cpp"));
}
