#pragma once
// The image an audio slice becomes for an image classifier: a dB mel spectrogram, or a
// constant-Q transform (cqt.h). Its words are the trainer's --features and the image-features
// a checkpoint saves, which the inference tools read back.
#include "base/mode_words.h"

namespace sonata {

enum class ImageFeatures { mel, cqt };

SONATA_SPELLINGS(ImageFeatures, {ImageFeatures::mel, "mel"}, {ImageFeatures::cqt, "cqt"})

}  // namespace sonata
