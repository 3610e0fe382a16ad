// Messages in the user's words: a value the user wrote is refused naming the flag and the
// value (not the optimizer or schedule that would refuse it later in its own terms), and the
// lines naming skipped clips carry no source location; a path is named by its flag. A written
// --max-duration -1 is not the default it stands for inside TrainerOptions.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "tests/support/audio_files.h"
#include "tests/support/error_of.h"
#include "tests/train/trainer_test_util.h"
#include "train/bad_input.h"
#include "train/state/training_state.h"

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

TEST_CASE("trainer options: a negative or non-finite --max-duration is refused naming the flag",
          "[trainer][options]") {
  // -1 is also the "task's default" inside TrainerOptions: written, it must not mean that.
  for (const char* value : {"-1", "-0.5", "-inf", "inf", "nan"}) {
    INFO(value);
    CHECK_THROWS_WITH(parse_command_line({"--train", "a.tsv", "--max-duration", value}),
                      Contains("--max-duration") && Contains("got " + std::string(value)));
  }
  CHECK(parse_command_line({"--train", "a.tsv", "--max-duration", "0"}).max_duration == 0);
  CHECK(parse_command_line({"--train", "a.tsv", "--max-duration", "2.5"}).max_duration == 2.5);
  CHECK(parse_command_line({"--train", "a.tsv"}).max_duration == kTaskMaxDuration);
}

TEST_CASE(
    "trainer options: the optimizer's and the schedule's numbers are refused naming the flag, "
    "not the class that would refuse them later",
    "[trainer][options]") {
  // Each passed check() before and reached an optimizer or the schedule, which refused it as
  // "SGD: group 0 has momentum -1 < 0", "AdamW: group 0 has beta1 1.5 ...", "LrSchedule: ...",
  // or (a NaN, an infinity) nothing refused at all.
  const std::vector<std::pair<std::string, std::string>> bad = {{"--momentum", "-1"},
                                                                {"--momentum", "nan"},
                                                                {"--beta1", "1.5"},
                                                                {"--beta2", "nan"},
                                                                {"--eps", "-1"},
                                                                {"--eps", "inf"},
                                                                {"--warmup-start-lr", "-1"},
                                                                {"--warmup-start-lr", "inf"},
                                                                {"--step-every", "0"},
                                                                {"--step-gamma", "inf"},
                                                                {"--step-gamma", "-0.5"},
                                                                {"--grad-clip", "inf"}};
  for (const auto& entry : bad) {
    const std::string& flag = entry.first;
    const std::string& value = entry.second;
    INFO(flag << " " << value);
    const TrainerOptions options = parse_command_line({"--train", "a.tsv", flag, value});
    CHECK_THROWS_WITH(options.check(), Contains(flag + " must be") && Contains("got " + value));
  }
  CHECK_NOTHROW(parse_command_line({"--train", "a.tsv", "--momentum", "0", "--beta1", "0", "--eps",
                                    "0", "--grad-clip", "1"})
                    .check());
}

TEST_CASE("a --resume or --checkpoint that is no checkpoint is named by its flag",
          "[trainer][options][checkpoint]") {
  TemporaryFolder folder("option_words_resume");
  TrainerOptions options;
  options.resume = folder.file("nowhere");
  CheckpointSource source;
  const std::string message =
      error_of([&] { load_resume_checkpoint(options.resume, options, &source); });
  CHECK_THAT(message, Contains("--resume: '" + options.resume + "' is not a folder"));
  CHECK_THAT(message, !Contains("load_checkpoint"));  // the loader's name is not the user's
}
