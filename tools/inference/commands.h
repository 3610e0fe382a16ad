#pragma once
// The transcribe and classify commands as functions of their arguments and output streams, so
// that tests run them in-process exactly as the executables (tools/transcribe.cpp,
// tools/classify.cpp) do. Each returns the exit code: 0, 1 after one line on `err` saying what
// is wrong (an unusable checkpoint, a missing file, naming it), or CLI11's code for a bad
// command line.
//
//   transcribe --checkpoint DIR|DIR/best [--beam-width N] [--device D] FILE...
//       one line per FILE: FILE<TAB>transcript (itself an ASR manifest)
//   classify --checkpoint DIR|DIR/best [--top-k K] [--device D] FILE...
//       one line per FILE: FILE<TAB>label votes/slices mean_probability<TAB>... (K labels)
//
// Every FILE gets one newline-terminated line: its answer on `out`, or, when it cannot be
// used (corrupt, too short, of the wrong kind), its error on `err` ("transcribe: <error naming
// FILE>"), and the files after it are still answered. If any failed, a last line on `err`
// counts them and the exit code is 1.
#include <ostream>

namespace sonata {

int transcribe_command(int argc, const char* const* argv, std::ostream& out, std::ostream& err);
int classify_command(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace sonata
