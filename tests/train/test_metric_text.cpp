// Error rates and accuracies read as labelled percentages on the terminal ("CER 0.27 %"),
// while metrics.jsonl keeps them as fractions (train/metric_text.h).
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/stdout_capture.h"
#include "tests/support/tiny_ds2.h"
#include "train/loop/metric_text.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

TEST_CASE("metric text: rates in percent with their labels, other figures as they are",
          "[trainer][metrics]") {
  CHECK(metric_text("cer", 0.0027) == "CER 0.27 %");
  CHECK(metric_text("beam_wer", 0.011) == "beam WER 1.10 %");
  CHECK(metric_text("track_accuracy", 0.9375) == "track accuracy 93.75 %");
  CHECK(metric_text("loss", 0.41234) == "loss 0.4123");
  CHECK(metrics_text({{"cer", 0.5}, {"loss", 2.0}}) == "CER 50.00 %  loss 2.0000");
}

#if SONATA_WITH_SNDFILE
TEST_CASE("trainer: the evaluation line prints CER and WER in percent, the log fractions",
          "[trainer][metrics]") {
  TemporaryFolder folder("metric_text_trainer");
  const std::string train = write_letters_corpus(folder.path().string(), "train", 6, 3);
  const std::string val = write_letters_corpus(folder.path().string(), "val", 4, 4);
  TrainerOptions options = tiny_ds2_options(train);
  options.val_manifest = val;
  options.epochs = 1;
  options.beam_width = 0;
  options.progress = "lines";
  options.metrics = folder.file("metrics.jsonl");
  const std::string printed = stdout_of(folder.file("stdout"), [&] {
    manual_seed(options.seed);
    SpeechTask task(options, Vocabulary());
    run_training(options, task, Device::cpu());
  });
  std::ifstream log(options.metrics);
  nlohmann::json eval;
  for (std::string line; std::getline(log, line);)
    if (nlohmann::json::parse(line)["event"] == "eval") eval = nlohmann::json::parse(line);
  REQUIRE(eval.contains("cer"));
  const double cer = eval["cer"].get<double>(), wer = eval["wer"].get<double>();
  CHECK_THAT(printed, Contains("epoch 1 val: ") && Contains(metric_text("cer", cer)) &&
                          Contains(metric_text("wer", wer)) && !Contains(" cer "));
}
#endif
