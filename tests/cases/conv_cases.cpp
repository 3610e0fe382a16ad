#include "tests/cases/conv_cases.h"

namespace sonata::testing {

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {"3x3 plain", {2, 3, 5, 6}, {4, 3, 3, 3}, {}, true},
      {"3x3 stride 2 padding 1", {2, 2, 7, 6}, {3, 2, 3, 3}, {{2, 2}, {1, 1}, {1, 1}}, true},
      {"dilation 2", {1, 2, 7, 8}, {2, 2, 3, 2}, {{1, 1}, {2, 1}, {2, 2}}, true},
      {"mixed stride and dilation", {2, 2, 9, 7}, {3, 2, 2, 3}, {{2, 1}, {0, 2}, {1, 3}}, true},
      // DeepSpeech2's first layer: (11, 41) kernel, stride 2, padding (5, 20), on a tiny input.
      {"DeepSpeech2 11x41", {1, 1, 13, 45}, {2, 1, 11, 41}, {{2, 2}, {5, 20}, {1, 1}}, true},
      {"1x1 without bias", {2, 4, 3, 3}, {5, 4, 1, 1}, {}, false},
      {"kernel as large as the padded input",
       {1, 2, 3, 4},
       {2, 2, 5, 4},
       {{1, 1}, {1, 0}, {1, 1}},
       false},
      {"3x3 plain, 6x7", {2, 3, 6, 7}, {4, 3, 3, 3}, {}, true},
      {"VGG 3x3 padding 1", {2, 16, 12, 12}, {16, 16, 3, 3}, {{1, 1}, {1, 1}, {1, 1}}, true, true},
      {"VGG first layer, 3 channels", {2, 3, 16, 16}, {8, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}}, true},
      {"3x3 stride 2 padding 1, 8 channels",
       {2, 4, 9, 8},
       {8, 4, 3, 3},
       {{2, 2}, {1, 1}, {1, 1}},
       true},
      {"dilation 2, 4 channels", {1, 4, 9, 10}, {4, 4, 3, 2}, {{1, 1}, {2, 1}, {2, 2}}, true},
      {"DeepSpeech2 11x41, 21x60",
       {2, 1, 21, 60},
       {8, 1, 11, 41},
       {{2, 2}, {5, 20}, {1, 1}},
       true,
       true},
      {"DeepSpeech2 21x11", {1, 8, 11, 30}, {8, 8, 21, 11}, {{2, 1}, {10, 5}, {1, 1}}, true, true},
      {"1x1 without bias, 8 channels", {2, 8, 5, 5}, {16, 8, 1, 1}, {}, false},
      // 20 lane channels: a partial block of 32 lanes (AVX-512), of 16 (AVX2) or of 8.
      {"3x3, 20 output channels", {1, 3, 5, 5}, {20, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}}, true},
      {"3x3 stride 2, 20 input channels",
       {1, 20, 5, 4},
       {3, 20, 3, 3},
       {{2, 2}, {1, 1}, {1, 1}},
       true},
      // Stride 1 on images 16 wide and more with products the packed sgemm takes: its
      // forward and weight gradient read their columns from the images, and the input
      // gradient runs as a forward convolution of grad_y with flipped weights (padding
      // dil * (k - 1) - pad: 1, 2 and 4 here).
      {"VGG 3x3 padding 1, 20x24",
       {2, 16, 20, 24},
       {32, 16, 3, 3},
       {{1, 1}, {1, 1}, {1, 1}},
       true,
       true},
      {"3x3 without padding, 18x20", {2, 16, 18, 20}, {24, 16, 3, 3}, {}, false, true},
      {"dilation 2 padding 0, 16x20",
       {2, 8, 16, 20},
       {16, 8, 3, 3},
       {{1, 1}, {0, 0}, {2, 2}},
       true,
       true},
      // DeepSpeech2's second layer (11x21, stride (1, 2)) with 36 output and 18 input
      // channels: full and partial blocks of lanes at every width.
      {"DeepSpeech2 11x21 stride (1, 2), 18 -> 36 channels",
       {1, 18, 4, 16},
       {36, 18, 11, 21},
       {{1, 2}, {5, 10}, {1, 1}},
       true,
       true},
      // 2 116 output pixels: the direct weight gradient runs over several tiles of them at
      // every lane width (kernels/cpu/conv_direct.cpp's kWeightTileBytes).
      {"5 columns wide over 46x46 pixels",
       {1, 3, 46, 46},
       {10, 3, 3, 5},
       {{1, 1}, {1, 2}, {1, 1}},
       true,
       true},
      {"stride 3 wider than the kernel",
       {1, 2, 8, 10},
       {3, 2, 2, 2},
       {{3, 3}, {1, 0}, {1, 1}},
       true},
  };
  return cases;
}

}  // namespace sonata::testing
