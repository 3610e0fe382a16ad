#pragma once
// What transcribe and classify share on their command lines.
#include <cstdint>
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

// No file is a folder (a command line that names one meant its files); else throws naming
// the first, before anything is printed. A missing file is that file's error alone
// (for_each_input), as a corrupt one is: the others are still answered.
void check_input_files(const std::vector<std::string>& files);

// Runs `one` on each file in order. A file that does not exist, or whose `one` throws, gets one
// line on `err`,
// "<name>: <what>" (the file named first when `what` does not name it), and the next file is
// tried: one bad file in a list costs that file's line only. Returns how many failed.
int64_t for_each_input(const std::vector<std::string>& files, std::ostream& err, const char* name,
                       const std::function<void(const std::string&)>& one);

// The shape of both commands: parses the command line into `app` (help and usage errors as
// CLI11 prints them), checks the input files, then runs `body`, which returns how many inputs
// failed (for_each_input). Any error outside the inputs (the checkpoint, a folder as input) is
// one line "<name>: <what>" on `err` and exit code 1; inputs that failed give exit code 1
// after the last input, with a line counting them.
int run_inference_command(CLI::App& app, const InferenceArguments& arguments, int argc,
                          const char* const* argv, std::ostream& out, std::ostream& err,
                          const char* name, const std::function<int64_t()>& body);

}  // namespace sonata
