// What the trainer prints for an error (base/error_text.h): one line, the source
// location a check appends only when asked for.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "base/error_text.h"
#include "tests/support/error_of.h"
#include "train/trainer_options.h"

using namespace sonata;

TEST_CASE("error text: one line, without the source location unless asked", "[trainer][errors]") {
  const std::string raised =
      sonata::testing::error_of([] { SONATA_CHECK(false, "cannot open manifest 'x.tsv'"); });
  REQUIRE(raised.find("tests/train/test_error_text.cpp:") != std::string::npos);
  CHECK(error_text(raised, false) == "cannot open manifest 'x.tsv'");
  CHECK(error_text(raised, true) == raised);
  // A wrapped message keeps its words, loses every location, and reads on one line.
  CHECK(error_text("--resume auto: checkpoint 'D/step-1' is unreadable (engine/checkpoint/"
                   "checkpoint.cpp:88)\nNot starting a fresh run over them: move them",
                   false) ==
        "--resume auto: checkpoint 'D/step-1' is unreadable; Not starting a fresh run over "
        "them: move them");
  CHECK(error_text("\nleading and trailing breaks\n", false) == "leading and trailing breaks");
  // The trainer's own floor, train/, is named from the repository root and dropped alike.
  const std::string from_train = sonata::testing::error_of([] {
    TrainerOptions options;
    options.model = "no_such_model";
    options.check();
  });
  REQUIRE(from_train.find("(train/trainer_options.cpp:") != std::string::npos);
  CHECK(error_text(from_train, false) ==
        "--model must be ds2, vgg19_bn or vgg16_bn, got 'no_such_model'");
  // Parentheses that are not a location stay.
  CHECK(error_text("bad value (expected 1 to 3)", false) == "bad value (expected 1 to 3)");
}

TEST_CASE("error text: a flag given twice is named", "[trainer][errors]") {
  CHECK(parse_error_text("--lr: At Most 1 required but received 2") ==
        "--lr is given 2 times; give it once");
  CHECK(parse_error_text("--lr: At Most 1 required but received two") ==
        "--lr: At Most 1 required but received two");
  CHECK(parse_error_text("The following argument was not expected: x") ==
        "The following argument was not expected: x");
}
