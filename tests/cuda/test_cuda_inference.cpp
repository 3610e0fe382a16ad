// transcribe and classify on a GPU (tools/inference/): one checkpoint, run on the CPU and on
// CUDA, gives the same transcript (greedy and beam) and the same slice votes. The checkpoints
// are written here from freshly initialised models whose output layer is scaled up, so that
// the classes of a frame or slice are far apart and rounding differences between the devices
// cannot swap them.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "models/registry.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tools/inference/genre_classifier.h"
#include "tools/inference/speech_recognizer.h"
#include "train/trainer_options.h"

using namespace sonata;
using namespace sonata::testing;

// The audio clips the tests read need libsndfile (the lent GPU machine's build has none).
#if SONATA_WITH_SNDFILE
namespace {

// A checkpoint as the trainer writes one for `options`, of `model`'s weights with the tensor
// `output_weight` multiplied by 100.
std::string save_checkpoint(const std::string& folder, const Module& model,
                            const TrainerOptions& options, const std::string& output_weight,
                            std::map<std::string, std::string> texts) {
  TrainingState state;
  state.model = model.state_dict();
  bool scaled = false;
  for (auto& [name, tensor] : state.model)
    if (name == output_weight) {
      tensor = tensor * 100.0;
      scaled = true;
    }
  REQUIRE(scaled);
  state.texts = std::move(texts);
  state.texts["model"] = options.model;
  state.texts["config"] = options.to_json();
  CheckpointManager(folder, 1, "min").save(state, 1);
  return folder;
}

}  // namespace

TEST_CASE("cuda inference: transcribe on the GPU gives the CPU's transcript", "[inference]") {
  TemporaryFolder folder("cuda_inference_speech");
  TrainerOptions options;
  options.model = "ds2";
  options.model_config = {{"conv-channels", "4"}, {"hidden", "16"}, {"layers", "1"}};
  options.features.n_mels = 40;
  manual_seed(7);
  const auto model =
      make_model("ds2", ModelConfig({{"conv-channels", "4"},
                                     {"hidden", "16"},
                                     {"layers", "1"},
                                     {"num-mels", "40"},
                                     {"num-classes", std::to_string(Vocabulary().size())}}));
  const std::string checkpoint = save_checkpoint(folder.file("run"), *model, options, "fc.weight",
                                                 {{"vocabulary", Vocabulary().to_file_text()}});
  std::mt19937 generator(3);
  // At 8 kHz (every other sample), so the resampling to 16 kHz runs too.
  const std::vector<float> clip = letters_audio("abcab", generator);
  std::vector<float> slow;
  for (size_t i = 0; i < clip.size(); i += 2) slow.push_back(clip[i]);
  write_pcm16_wav(folder.file("abcab.wav"), slow, kLettersRate / 2);

  const TrainedCheckpoint trained = read_trained_checkpoint(checkpoint);
  SpeechRecognizer cpu(trained, Device::cpu()), gpu(trained, Device::cuda());
  for (const int64_t beam : {0, 4}) {
    INFO("beam width " << beam);
    CHECK(gpu.transcribe(folder.file("abcab.wav"), beam) ==
          cpu.transcribe(folder.file("abcab.wav"), beam));
  }
}

TEST_CASE("cuda inference: classify on the GPU gives the CPU's slice votes", "[inference]") {
  TemporaryFolder folder("cuda_inference_genre");
  TrainerOptions options;
  options.model = "vgg19_bn";
  options.model_config = {{"width", "0.0625"}, {"in-channels", "1"}};
  options.slice_seconds = 0.5;
  options.image_height = 32;
  options.image_width = 32;
  manual_seed(8);
  const auto model = make_model(
      "vgg19_bn", ModelConfig({{"width", "0.0625"}, {"in-channels", "1"}, {"num-classes", "3"}}));
  const std::string checkpoint =
      save_checkpoint(folder.file("run"), *model, options, "classifier.6.weight",
                      {{"label_map", LabelMap::from_labels({"blues", "jazz", "rock"}).to_json()}});
  // Three seconds of a rising tone at 22050 Hz: six slices of different content.
  std::vector<float> track(3 * 22050);
  for (size_t i = 0; i < track.size(); ++i) {
    const double t = double(i) / 22050.0;
    track[i] = 0.3f * float(std::sin(2 * 3.14159265358979 * (200.0 + 600.0 * t) * t));
  }
  write_pcm16_wav(folder.file("track.wav"), track, 22050);

  const TrainedCheckpoint trained = read_trained_checkpoint(checkpoint);
  GenreClassifier cpu(trained, Device::cpu()), gpu(trained, Device::cuda());
  const TrackClasses on_cpu = cpu.classify(folder.file("track.wav"));
  const TrackClasses on_gpu = gpu.classify(folder.file("track.wav"));
  REQUIRE(on_cpu.slices == 6);
  REQUIRE(on_gpu.slices == 6);
  REQUIRE(on_gpu.ranked.size() == 3);
  for (size_t k = 0; k < 3; ++k) {
    INFO("rank " << k);
    CHECK(on_gpu.ranked[k].label == on_cpu.ranked[k].label);
    CHECK(on_gpu.ranked[k].votes == on_cpu.ranked[k].votes);
    CHECK(on_gpu.ranked[k].probability_sum ==
          Approx(on_cpu.ranked[k].probability_sum).margin(1e-3));
  }
}
#endif
