#include <CLI/CLI.hpp>

#include "base/error.h"
#include "tools/inference/command_files.h"
#include "tools/inference/commands.h"
#include "tools/inference/speech_recognizer.h"

namespace sonata {

int transcribe_command(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"sonata transcribe: each audio file's transcript from a DeepSpeech2 checkpoint"};
  InferenceArguments arguments;
  int64_t beam_width = 0;
  add_inference_arguments(app, arguments);
  app.add_option("--beam-width", beam_width, "prefix beam search this wide (0: greedy)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  return run_inference_command(app, arguments, argc, argv, out, err, "transcribe", [&] {
    SpeechRecognizer recognizer(read_trained_checkpoint(arguments.checkpoint),
                                inference_device(arguments.device));
    // The transcript first: a file that fails prints nothing on `out`, not half a line.
    return for_each_input(arguments.files, err, "transcribe", [&](const std::string& file) {
      const std::string transcript = recognizer.transcribe(file, beam_width);
      out << file << '\t' << transcript << '\n' << std::flush;
    });
  });
}

}  // namespace sonata
