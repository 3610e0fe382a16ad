#include "tools/inference/command_files.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <ostream>

#include "base/error.h"
#include "base/error_text.h"

namespace sonata {

void add_inference_arguments(CLI::App& app, InferenceArguments& arguments) {
  app.add_option("--checkpoint", arguments.checkpoint,
                 "the trainer's --checkpoint-dir (its newest checkpoint), DIR/best, or a step "
                 "folder")
      ->required();
  app.add_option("--device", arguments.device, "auto | cpu | cuda | cuda:N")->capture_default_str();
  app.add_option("files", arguments.files,
                 "audio files (any format and rate the trainer reads); classify also reads "
                 "images (.png, .jpg, .jpeg) with a checkpoint trained on them")
      ->required();
}

void check_input_files(const std::vector<std::string>& files) {
  for (const std::string& file : files) {
    std::error_code error;
    SONATA_CHECK(!std::filesystem::is_directory(file, error), "input '", file,
                 "' is a folder, not an audio file");
  }
}

int64_t for_each_input(const std::vector<std::string>& files, std::ostream& err, const char* name,
                       const std::function<void(const std::string&)>& one) {
  int64_t failed = 0;
  for (const std::string& file : files) {
    try {
      std::error_code error;
      SONATA_CHECK(std::filesystem::exists(file, error), "input file '", file, "' does not exist");
      one(file);
    } catch (const std::exception& error) {
      // std::bad_alloc and the like say nothing of the file; sonata's errors usually name it.
      // In the user's words: no source location (base/error_text.h).
      const std::string what = error_text(error.what(), false);
      err << name << ": " << (what.find(file) == std::string::npos ? file + ": " : "") << what
          << '\n'
          << std::flush;
      ++failed;
    }
  }
  return failed;
}

int run_inference_command(CLI::App& app, const InferenceArguments& arguments, int argc,
                          const char* const* argv, std::ostream& out, std::ostream& err,
                          const char* name, const std::function<int64_t()>& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error, out, err);
  }
  try {
    check_input_files(arguments.files);
    const int64_t failed = body();
    if (failed == 0) return 0;
    out.flush();
    err << name << ": " << failed << " of " << arguments.files.size()
        << " inputs failed (each named above)\n";
    return 1;
  } catch (const std::exception& error) {
    out.flush();
    err << name << ": " << error_text(error.what(), false) << '\n';
    return 1;
  }
}

}  // namespace sonata
