#pragma once
// The trainer tests' smallest speech run: a DS2 of 4 conv channels and one recurrent layer of
// 16 on 40 mel bands, batches of 2, one loader worker, no progress output, on a letters
// corpus (tests/support/letters_corpus.h). Tests set what they vary on top.
#include <string>

#include "comm/pipeline/pipeline.h"
#include "train/task.h"
#include "train/trainer_options.h"

namespace sonata::testing {

// `job_folder`/corpus_<rank>, created: under mpiexec each rank writes its own copy of the
// (deterministic) corpus, so no rank reads a file another is still writing.
std::string rank_corpus_folder(const std::string& job_folder, int rank);

TrainerOptions tiny_ds2_options(const std::string& train_manifest);

// The image family's smallest run: VGG19_BN at width 1/16 without dropout (no dropout draws,
// so that parallel runs align with one process) on 32x32 images of 1 s slices of a tone-track
// manifest (tests/support/audio_files.h, 16 kHz), batches of 2 with 2 micro-batches per step.
TrainerOptions tiny_vgg_options(const std::string& train_manifest);

}  // namespace sonata::testing
