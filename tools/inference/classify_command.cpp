#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "data/image/pixels.h"
#include "tools/inference/command_files.h"
#include "tools/inference/commands.h"
#include "tools/inference/genre_classifier.h"

namespace sonata {
namespace {

// "jazz 3/4 0.712": the votes of the track's slices and the mean probability over them.
std::string score_text(const LabelMap& labels, const ClassVotes& score, int64_t slices) {
  char mean[32];
  std::snprintf(mean, sizeof mean, "%.3f", score.probability_sum / double(slices));
  return str(labels.label(score.label), ' ', score.votes, '/', slices, ' ', mean);
}

}  // namespace

int classify_command(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"sonata classify: each track's top classes from a VGG19_BN checkpoint"};
  InferenceArguments arguments;
  int64_t top_k = 3;
  int64_t max_image_pixels = kMaxImagePixels;
  add_inference_arguments(app, arguments);
  app.add_option("--top-k", top_k, "labels printed per file (at most the model's classes)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-image-pixels", max_image_pixels,
                 "an image file declaring more pixels is refused before decoding (PIL's "
                 "MAX_IMAGE_PIXELS)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  return run_inference_command(app, arguments, argc, argv, out, err, "classify", [&] {
    GenreClassifier classifier(read_trained_checkpoint(arguments.checkpoint),
                               inference_device(arguments.device));
    classifier.set_max_image_pixels(max_image_pixels);
    const size_t shown = size_t(std::min(top_k, classifier.labels().size()));
    return for_each_input(arguments.files, err, "classify", [&](const std::string& file) {
      const TrackClasses track = classifier.classify(file);
      std::string line = file;
      for (size_t k = 0; k < shown; ++k)
        line += '\t' + score_text(classifier.labels(), track.ranked[k], track.slices);
      out << line << '\n' << std::flush;
    });
  });
}

}  // namespace sonata
