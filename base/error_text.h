#pragma once
// What a command (trainer, transcribe, ...) prints when it stops on an error: one line,
// "trainer: <cause>", once per job. The source location a SONATA_CHECK appends
// ("(train/x.cpp:62)") is for developers: kept with --verbose or in a debug build, dropped
// otherwise.
#include <string>

namespace sonata {

// `what` on one line (line breaks become "; " joins), without source locations unless
// `with_location`.
std::string error_text(const std::string& what, bool with_location);

// CLI11's parse errors in the trainer's words: "--lr: At Most 1 required but received 2"
// becomes "--lr is given 2 times; give it once"; others are kept.
std::string parse_error_text(const std::string& what);

}  // namespace sonata
