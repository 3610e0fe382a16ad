// transcribe: each audio file's transcript from a checkpoint `trainer` wrote for a speech
// model (ds2: any model of that family in models/registry.cpp).
//   transcribe --checkpoint runs/speech/best [--beam-width 8] [--device cpu] a.wav b.flac
// See tools/inference/commands.h for the output.
#include <iostream>

#include "tools/inference/commands.h"

int main(int argc, char** argv) {
  return sonata::transcribe_command(argc, argv, std::cout, std::cerr);
}
