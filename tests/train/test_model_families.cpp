// The trainer asks the registry (models/registry.cpp) for its models: --model's choices, the
// models' own flags, which options apply, and the task, all by family, never by name.
#include <catch2/catch.hpp>

#include <CLI/CLI.hpp>

#include "models/registry.h"
#include "tests/train/trainer_test_util.h"
#include "train/trainer_options.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

TEST_CASE("trainer: --model and the models' flags come from the registry", "[trainer][models]") {
  TrainerOptions options;
  CLI::App app;
  add_trainer_options(app, options);
  const std::string help = app.help();
  for (const ModelEntry& entry : model_registry()) {
    INFO(entry.name);
    CHECK_THAT(help, Contains(entry.name + " (" + family_name(entry.family) + ", " + entry.header +
                              "): " + entry.help));
    for (const ModelOption& option : entry.options) CHECK_THAT(help, Contains("--" + option.key));
  }
  // A flag two models take is offered once, naming both.
  CHECK_THAT(help, Contains("vgg19_bn, vgg16_bn (models/vgg.h): channel multiplier; 1"));

  const TrainerOptions vgg16 =
      parse_command_line({"--model", "vgg16_bn", "--width", "0.5", "--train", "a.tsv"});
  vgg16.check();
  CHECK(vgg16.family() == ModelFamily::image_classifier);
  CHECK(vgg16.model_config == std::map<std::string, std::string>{{"width", "0.5"}});
  CHECK(parse_command_line({"--train", "a.tsv"}).family() == ModelFamily::speech);

  const auto refused = [](const std::vector<std::string>& arguments, const std::string& words) {
    INFO(words);
    const TrainerOptions o = parse_command_line(arguments);
    CHECK_THROWS_WITH(o.check(), Contains(words));
  };
  refused({"--model", "vgg16_bn", "--hidden", "8", "--train", "a.tsv"},
          "--hidden is an option of ds2, not of vgg16_bn; drop it or change --model");
  refused({"--model", "vgg16_bn", "--sortagrad", "--train", "a.tsv"},
          "--sortagrad applies to speech models only (--model ds2)");
  refused({"--model", "ds2", "--class-balanced", "--train", "a.tsv"},
          "--class-balanced applies to image classifiers only (--model vgg19_bn or vgg16_bn)");
  refused({"--model", "vgg11_bn", "--train", "a.tsv"},
          "--model must be ds2, vgg19_bn or vgg16_bn, got 'vgg11_bn'");
  TrainerOptions unknown = parse_command_line({"--train", "a.tsv"});
  unknown.model_config["depth"] = "11";
  CHECK_THROWS_WITH(unknown.check(), Contains("--depth is no model's option"));
  // The options of vgg16_bn's family apply to it as to vgg19_bn.
  parse_command_line({"--model", "vgg16_bn", "--class-balanced", "--brightness", "0.2",
                      "--features", "cqt", "--train", "a.tsv"})
      .check();
}
