// classify: each audio track's top classes (its slices voted) from a checkpoint `trainer`
// wrote for an image classifier (vgg19_bn, vgg16_bn: that family in models/registry.cpp).
//   classify --checkpoint runs/genre/best [--top-k 3] [--device cpu] track.wav ...
// See tools/inference/commands.h for the output.
#include <iostream>

#include "tools/inference/commands.h"

int main(int argc, char** argv) {
  return sonata::classify_command(argc, argv, std::cout, std::cerr);
}
