#include "tools/inference/command_files.h"

#include <CLI/CLI.hpp>
#include <filesystem>

#include "base/error.h"

namespace sonata {

void add_inference_arguments(CLI::App& app, InferenceArguments& arguments) {
  app.add_option("--checkpoint", arguments.checkpoint,
                 "the trainer's --checkpoint-dir (its newest checkpoint), DIR/best, or a step "
                 "folder")
      ->required();
  app.add_option("--device", arguments.device, "auto | cpu | cuda | cuda:N")->capture_default_str();
  app.add_option("files", arguments.files, "audio files (any format and rate the trainer reads)")
      ->required();
}

void check_input_files(const std::vector<std::string>& files) {
  for (const std::string& file : files) {
    std::error_code error;
    const auto status = std::filesystem::status(file, error);
    SONATA_CHECK(std::filesystem::exists(status), "input file '", file, "' does not exist");
    SONATA_CHECK(!std::filesystem::is_directory(status), "input '", file,
                 "' is a folder, not an audio file");
  }
}

}  // namespace sonata
