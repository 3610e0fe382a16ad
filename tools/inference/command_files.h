#pragma once
// What transcribe and classify share on their command lines.
#include <functional>
#include <iosfwd>
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

// The shape of both commands: parses the command line into `app` (help and usage errors as
// CLI11 prints them), checks the input files, then runs `body`; any error after parsing is one
// line "<name>: <what>" on `err` (what was printed before it stays) and exit code 1.
int run_inference_command(CLI::App& app, const InferenceArguments& arguments, int argc,
                          const char* const* argv, std::ostream& out, std::ostream& err,
                          const char* name, const std::function<void()>& body);

}  // namespace sonata
