// The trainer offers the models' own options as flags; its --help must show the defaults the
// models are really built with (the option structs), not a copy that can drift from them.
#include <catch2/catch.hpp>

#include <CLI/CLI.hpp>
#include <map>
#include <sstream>
#include <string>

#include "base/error.h"
#include "models/ds2.h"
#include "models/vgg.h"
#include "train/trainer_options.h"

using namespace sonata;

namespace {

// The text after "<model> (models/<model>.h): " on the help line of --<flag>.
std::string help_default(const std::string& help, const std::string& flag) {
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("--" + flag + " ") == std::string::npos) continue;
    const size_t colon = line.find(".h): ");
    REQUIRE(colon != std::string::npos);
    return line.substr(colon + 5);
  }
  FAIL("no help line for --" << flag);
  return {};
}

}  // namespace

TEST_CASE("trainer --help shows the defaults the models are built with", "[models][trainer]") {
  CLI::App app;
  TrainerOptions options;
  add_trainer_options(app, options);
  const std::string help = app.help();

  // ds2 as the registry builds it when no option is given.
  const auto ds2 =
      std::dynamic_pointer_cast<Ds2>(make_ds2(ModelConfig(std::map<std::string, std::string>{})));
  REQUIRE(ds2);
  const Ds2Options& built = ds2->options();
  const auto bit = [](bool value) { return value ? "1" : "0"; };
  CHECK(help_default(help, "conv-channels") == str(built.conv_channels));
  CHECK(help_default(help, "hidden") == str(built.hidden));
  CHECK(help_default(help, "layers") == str(built.layers));
  CHECK(help_default(help, "rnn") ==
        str("lstm | gru; ", built.rnn == RnnKind::gru ? "gru" : "lstm"));
  CHECK(help_default(help, "bidirectional") == str("0 | 1; ", bit(built.bidirectional)));
  CHECK(help_default(help, "merge") ==
        str("concat | sum; ", built.sum_directions ? "sum" : "concat"));
  CHECK(help_default(help, "seq-batch-norm") == str("0 | 1; ", bit(built.seq_batch_norm)));
  CHECK(help_default(help, "mask-padding") == str("0 | 1; ", bit(built.mask_padding)));

  // vgg19_bn's defaults build a 143M-parameter model: its options struct stands in for it.
  const VggOptions vgg;
  CHECK(help_default(help, "width") == str("channel multiplier; ", vgg.width));
  CHECK(help_default(help, "dropout") == str(vgg.dropout));
  CHECK(help_default(help, "in-channels") == str(vgg.in_channels));
  CHECK(help_default(help, "channels-last") ==
        str("true | false; ", vgg.channels_last ? "true" : "false"));
  // Today's values, so that a change of a default is a decision seen in review.
  CHECK(help_default(help, "hidden") == "256");
  CHECK(help_default(help, "rnn") == "lstm | gru; lstm");
  CHECK(help_default(help, "mask-padding") == "0 | 1; 1");
  CHECK(help_default(help, "width") == "channel multiplier; 1");
  CHECK(help_default(help, "dropout") == "0.5");
}
