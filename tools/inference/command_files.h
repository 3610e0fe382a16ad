#pragma once
// What transcribe and classify share on their command lines.
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace sonata {

struct InferenceArguments {
  std::string checkpoint;
  std::string device = "auto";
  std::vector<std::string> files;
};

// --checkpoint, --device and the FILE... positionals.
void add_inference_arguments(CLI::App& app, InferenceArguments& arguments);

// Every file exists and is not a folder; else throws naming the first that is not, before
// anything is printed.
void check_input_files(const std::vector<std::string>& files);

}  // namespace sonata
