#pragma once
// What the trainer tests share: a command line parsed exactly as `trainer` parses its own.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "train/trainer_options.h"

namespace sonata::testing {

inline TrainerOptions parse_command_line(std::vector<std::string> arguments) {
  TrainerOptions options;
  CLI::App app;
  add_trainer_options(app, options);
  arguments.insert(arguments.begin(), "trainer");
  std::vector<char*> argv;
  for (std::string& argument : arguments) argv.push_back(argument.data());
  app.parse(int(argv.size()), argv.data());
  return options;
}

}  // namespace sonata::testing
