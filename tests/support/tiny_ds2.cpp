#include "tests/support/tiny_ds2.h"

#include <filesystem>

namespace sonata::testing {

std::string rank_corpus_folder(const std::string& job_folder, int rank) {
  const std::string folder = job_folder + "/corpus_" + std::to_string(rank);
  std::filesystem::create_directories(folder);
  return folder;
}

TrainerOptions tiny_ds2_options(const std::string& train_manifest) {
  TrainerOptions options;
  options.model = "ds2";
  options.model_config = {{"conv-channels", "4"}, {"hidden", "16"}, {"layers", "1"}};
  options.features.n_mels = 40;
  options.train_manifest = train_manifest;
  options.batch_size = 2;
  options.progress = "none";
  options.workers = 1;
  return options;
}

TrainerOptions tiny_vgg_options(const std::string& train_manifest) {
  TrainerOptions options;
  options.model = "vgg19_bn";
  options.model_config = {{"width", "0.0625"}, {"dropout", "0"}};
  options.train_manifest = train_manifest;
  options.features.sample_rate = 16000;
  options.slice_seconds = 1.0;
  options.image_height = 32;
  options.image_width = 32;
  options.batch_size = 2;
  options.accum_steps = 2;
  options.progress = "none";
  options.workers = 1;
  return options;
}

}  // namespace sonata::testing
