// transcribe and classify (tools/inference/): a tiny model trained here for a few steps, then
// the commands run in-process on its checkpoint. A model that young decodes noise, so the
// tests check what must hold whatever it learned: one line per file in the documented format,
// the checkpoint folder and its best/ both usable, the same transcript (greedy and beam) as the
// trainer's own evaluation decodes for that clip, the same track votes as the trainer's track
// accuracy counts, any sample rate, and a checkpoint of the other kind refused in one sentence.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "data/features/feature_config.h"
#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tools/inference/commands.h"
#include "tools/inference/feature_description.h"
#include "tools/inference/track_vote.h"
#include "tools/inference/trained_checkpoint.h"
#include "train/tasks/class_task.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

namespace {

struct CommandResult {
  int code = -1;
  std::vector<std::string> lines;  // stdout
  std::string out, err;
};

CommandResult run_command(int (*command)(int, const char* const*, std::ostream&, std::ostream&),
                          std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), "command");
  std::vector<const char*> argv;
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());
  std::ostringstream out, err;
  CommandResult result;
  result.code = command(int(argv.size()), argv.data(), out, err);
  std::istringstream text(out.str());
  for (std::string line; std::getline(text, line);) result.lines.push_back(line);
  result.out = out.str();
  result.err = err.str();
  return result;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
    fields.push_back(line.substr(start, tab - start));
  fields.push_back(line.substr(start));
  return fields;
}

// One sentence: a single line, ending in a newline.
void check_one_line_error(const CommandResult& result, const std::string& word) {
  INFO(result.err);
  CHECK(result.code == 1);
  CHECK(result.lines.empty());
  CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
  CHECK_THAT(result.err, Contains(word));
}

TrainerOptions tiny_ds2(const std::string& train, const std::string& val,
                        const std::string& checkpoints) {
  TrainerOptions options;
  options.model = "ds2";
  options.model_config = {{"conv-channels", "4"}, {"hidden", "24"}, {"layers", "1"}};
  options.features.n_mels = 40;
  options.train_manifest = train;
  options.val_manifest = val;
  options.batch_size = 4;
  options.epochs = 3;
  options.lr = 1e-2;
  options.beam_width = 4;
  options.progress = "none";
  options.workers = 1;
  options.checkpoint_dir = checkpoints;
  return options;
}

TrainerOptions tiny_vgg(const std::string& train, const std::string& checkpoints) {
  TrainerOptions options;
  options.model = "vgg19_bn";
  options.model_config = {{"width", "0.0625"}, {"in-channels", "1"}, {"dropout", "0"}};
  options.train_manifest = train;
  options.val_manifest = train;
  options.features.sample_rate = 16000;
  options.slice_seconds = 0.5;
  options.image_height = 32;
  options.image_width = 32;
  options.batch_size = 4;
  options.epochs = 12;
  options.lr = 3e-3;
  options.progress = "none";
  options.workers = 1;
  options.checkpoint_dir = checkpoints;
  return options;
}

// The trainer's own decoding of one clip (--eval-only on a manifest of it alone, so that no
// padding of a batch touches it): {greedy, beam}.
std::pair<std::string, std::string> trainer_transcripts(const TrainerOptions& trained,
                                                        const std::string& checkpoint,
                                                        const std::string& manifest) {
  TrainerOptions options = trained;
  options.train_manifest.clear();
  options.val_manifest = manifest;
  options.eval_only = true;
  options.resume = checkpoint;
  options.checkpoint_dir.clear();
  options.metrics = std::filesystem::path(manifest).replace_extension(".jsonl").string();
  SpeechTask task(options, Vocabulary());
  const TrainResult result = run_training(options, task, Device::cpu());
  const std::vector<std::string>& report = result.last_val.report;
  REQUIRE(report.size() == 3);
  REQUIRE(report[1].rfind("  greedy: ", 0) == 0);
  REQUIRE(report[2].rfind("  beam:   ", 0) == 0);
  return {report[1].substr(10), report[2].substr(10)};
}

}  // namespace

TEST_CASE("feature description: a saved describe() text gives back its configuration",
          "[inference]") {
  std::vector<FeatureConfig> configs(4);
  configs[1].sample_rate = 8000;
  configs[1].n_fft = 256;
  configs[1].win_length = 200;
  configs[1].hop_length = 80;
  configs[1].f_min = 20.5;
  configs[1].f_max = 3800.25;
  configs[1].n_mels = 40;
  configs[1].normalize = FeatureNormalize::utterance;
  configs[1].log_offset = 1e-3;
  configs[2].center = false;
  configs[2].mel_scale = MelScale::slaney;
  configs[2].norm = MelNorm::slaney;
  configs[2].log = FeatureLog::db;
  configs[2].top_db = 80.0;
  configs[2].power = 1.0;
  configs[3].pad_mode = PadMode::constant;
  configs[3].log = FeatureLog::none;
  configs[3].normalize = FeatureNormalize::per_feature;
  for (const FeatureConfig& config : configs) {
    const std::string text = describe(config);
    INFO(text);
    const FeatureConfig parsed = parse_feature_description(text);
    CHECK(describe(parsed) == text);
    CHECK(parsed.sample_rate == config.sample_rate);
    CHECK(parsed.resolved_hop_length() == config.resolved_hop_length());
    CHECK(parsed.log == config.log);
    CHECK(parsed.top_db.has_value() == config.top_db.has_value());
  }
  const std::string text = describe(FeatureConfig{});
  CHECK_THROWS_WITH(parse_feature_description("sonata-features/2 sample_rate=1"),
                    Contains("sonata-features/1"));
  std::string no_mels = text;
  no_mels.replace(no_mels.find(" n_mels=80"), 10, "");
  CHECK_THROWS_WITH(parse_feature_description(no_mels), Contains("n_mels"));
  std::string bad_rate = text;
  bad_rate.replace(bad_rate.find("sample_rate=16000"), 17, "sample_rate=16k");
  CHECK_THROWS_WITH(parse_feature_description(bad_rate), Contains("sample_rate='16k'"));
}

TEST_CASE("track vote: slices vote for their most probable class, ties go to the larger sum",
          "[inference]") {
  // Classes 0, 1, 2. Slices vote 1, 2, 1, 2: a tie between 1 and 2, which class 2 wins by its
  // larger summed probability (2.0 against 1.6); class 0 has no vote but a sum of 0.4.
  const std::vector<double> probabilities = {0.0, 0.6, 0.4,  //
                                             0.1, 0.3, 0.6,  //
                                             0.1, 0.5, 0.4,  //
                                             0.2, 0.2, 0.6};
  const std::vector<ClassVotes> ranked = rank_by_slice_votes(probabilities, 3);
  REQUIRE(ranked.size() == 3);
  CHECK(ranked[0].label == 2);
  CHECK(ranked[0].votes == 2);
  CHECK(ranked[0].probability_sum == Approx(2.0));
  CHECK(ranked[1].label == 1);
  CHECK(ranked[1].votes == 2);
  CHECK(ranked[2].label == 0);
  CHECK(ranked[2].votes == 0);
  // Equal maxima within a slice: the first class gets the vote (torch.argmax's rule), and a
  // full tie keeps the lower class first.
  const std::vector<ClassVotes> even = rank_by_slice_votes({0.5, 0.5}, 2);
  CHECK(even[0].label == 0);
  CHECK(even[0].votes == 1);
  CHECK(even[1].votes == 0);
  CHECK_THROWS_WITH(rank_by_slice_votes({0.5, 0.25, 0.25}, 2), Contains("rows of 2"));
}

#if SONATA_WITH_SNDFILE
TEST_CASE("transcribe: one line per file, as the trainer decodes each clip, on any rate",
          "[inference]") {
  TemporaryFolder folder("inference_transcribe");
  const std::string root = folder.path().string();
  const std::string train = write_letters_corpus(root, "train", 16, 21);
  const std::string val = write_letters_corpus(root, "val", 4, 22);
  const TrainerOptions options = tiny_ds2(train, val, folder.file("run"));
  manual_seed(options.seed);
  {
    SpeechTask task(options, Vocabulary());
    run_training(options, task, Device::cpu());
  }
  REQUIRE(std::filesystem::exists(folder.file("run/best/model.safetensors")));

  // The val clips, and one of them at 8 kHz (every other sample) to be resampled.
  std::vector<std::string> files;
  for (int i = 0; i < 3; ++i) files.push_back(folder.file("val_" + std::to_string(i) + ".wav"));
  std::mt19937 generator(5);
  std::vector<float> clip = letters_audio("bca", generator), slow;
  for (size_t i = 0; i < clip.size(); i += 2) slow.push_back(clip[i]);
  write_pcm16_wav(folder.file("bca_8k.wav"), slow, 8000);
  files.push_back(folder.file("bca_8k.wav"));

  for (const std::string& checkpoint : {folder.file("run"), folder.file("run/best")}) {
    INFO(checkpoint);
    for (const int beam : {0, 4}) {
      std::vector<std::string> arguments = {"--checkpoint", checkpoint,     "--device",
                                            "cpu",          "--beam-width", std::to_string(beam)};
      arguments.insert(arguments.end(), files.begin(), files.end());
      const CommandResult result = run_command(transcribe_command, arguments);
      INFO(result.err);
      REQUIRE(result.code == 0);
      REQUIRE(result.lines.size() == files.size());
      for (size_t i = 0; i < files.size(); ++i) {
        const std::vector<std::string> fields = split_tabs(result.lines[i]);
        REQUIRE(fields.size() == 2);
        CHECK(fields[0] == files[i]);
        for (const char c : fields[1]) CHECK(Vocabulary().contains(char32_t(c)));
        if (checkpoint.ends_with("best")) {
          // The trainer's evaluation of the same clip with the same weights.
          const std::string manifest = folder.file("one_" + std::to_string(i) + ".tsv");
          write_text(manifest, files[i] + "\tabc\n");
          const auto [greedy, beam_text] = trainer_transcripts(options, checkpoint, manifest);
          CHECK(fields[1] == (beam == 0 ? greedy : beam_text));
        }
      }
    }
  }
}

TEST_CASE("classify: top-k labels with their slice votes, as the trainer votes each track",
          "[inference]") {
  TemporaryFolder folder("inference_classify");
  const std::string train = write_tone_tracks(folder.path().string(), 4);
  const TrainerOptions options = tiny_vgg(train, folder.file("run"));
  manual_seed(options.seed);
  {
    ClassTask task(options);
    run_training(options, task, Device::cpu());
  }
  // Two-second tracks at 8 kHz (four slices each), labelled as the tone tracks are.
  write_tones(folder.path().string(), "eight", 4, 8000, 2.0);
  std::vector<std::string> files;
  for (int track = 0; track < 4; ++track)
    files.push_back(folder.file("eight_" + std::to_string(track) + ".wav"));

  for (const std::string& checkpoint : {folder.file("run"), folder.file("run/best")}) {
    INFO(checkpoint);
    std::vector<std::string> arguments = {"--checkpoint", checkpoint, "--top-k", "5"};
    arguments.insert(arguments.end(), files.begin(), files.end());
    const CommandResult result = run_command(classify_command, arguments);
    INFO(result.err);
    REQUIRE(result.code == 0);
    REQUIRE(result.lines.size() == files.size());
    int64_t correct = 0, true_votes = 0;
    for (size_t i = 0; i < files.size(); ++i) {
      const std::vector<std::string> fields = split_tabs(result.lines[i]);
      // --top-k 5 shows both of the model's two classes.
      REQUIRE(fields.size() == 3);
      CHECK(fields[0] == files[i]);
      int64_t votes = 0;
      std::vector<std::string> labels;
      for (size_t k = 1; k < fields.size(); ++k) {
        std::istringstream score(fields[k]);
        std::string label, fraction;
        double mean = -1;
        score >> label >> fraction >> mean;
        INFO(fields[k]);
        CHECK((label == "jazz" || label == "rock"));
        CHECK(fraction.substr(fraction.find('/')) == "/4");
        CHECK((mean >= 0 && mean <= 1));
        votes += std::stoll(fraction);
        if (label == (i % 2 ? "rock" : "jazz")) true_votes += std::stoll(fraction);
        labels.push_back(label);
      }
      CHECK(votes == 4);
      CHECK(labels[0] != labels[1]);
      correct += labels[0] == (i % 2 ? "rock" : "jazz");
    }
    // The trainer's track accuracy of the same tracks with the same weights.
    TrainerOptions evaluate = options;
    evaluate.train_manifest.clear();
    evaluate.val_manifest = folder.file("eight.tsv");
    evaluate.eval_only = true;
    evaluate.resume = checkpoint;
    evaluate.checkpoint_dir.clear();
    evaluate.metrics = folder.file("eval.jsonl");
    ClassTask task(evaluate);
    const TrainResult result_of_trainer = run_training(evaluate, task, Device::cpu());
    CHECK(result_of_trainer.last_val.metrics.at("track_accuracy") == Approx(double(correct) / 4));
    CHECK(result_of_trainer.last_val.metrics.at("accuracy") == Approx(double(true_votes) / 16));
  }
}

TEST_CASE(
    "transcribe and classify: a checkpoint of the other kind, a missing file or "
    "checkpoint, and a bad command line are refused",
    "[inference]") {
  TemporaryFolder folder("inference_refusals");
  const std::string root = folder.path().string();
  const std::string train = write_letters_corpus(root, "train", 4, 23);
  TrainerOptions speech = tiny_ds2(train, "", folder.file("speech"));
  speech.epochs = 1;
  manual_seed(1);
  {
    SpeechTask task(speech, Vocabulary());
    run_training(speech, task, Device::cpu());
  }
  std::filesystem::create_directory(folder.file("tones"));
  const std::string tones = write_tone_tracks(folder.file("tones"), 2);
  TrainerOptions genre = tiny_vgg(tones, folder.file("genre"));
  genre.val_manifest.clear();
  genre.epochs = 1;
  {
    ClassTask task(genre);
    run_training(genre, task, Device::cpu());
  }
  const std::string clip = folder.file("train_0.wav");

  const CommandResult classify_speech =
      run_command(classify_command, {"--checkpoint", folder.file("speech"), clip});
  check_one_line_error(classify_speech, "ds2 speech-recognition checkpoint (use transcribe)");
  CHECK_THAT(classify_speech.err, Contains("classify needs a vgg19_bn"));
  const CommandResult transcribe_genre =
      run_command(transcribe_command, {"--checkpoint", folder.file("genre"), clip});
  check_one_line_error(transcribe_genre, "vgg19_bn classification checkpoint (use classify)");

  // A missing file is that file's error alone, in its place: the files after it are answered.
  const std::string other_clip = folder.file("train_1.wav");
  const CommandResult with_missing = run_command(
      transcribe_command,
      {"--checkpoint", folder.file("speech"), clip, folder.file("missing.wav"), other_clip});
  INFO(with_missing.err);
  CHECK(with_missing.code == 1);
  REQUIRE(with_missing.lines.size() == 2);
  CHECK(split_tabs(with_missing.lines[0]).front() == clip);
  CHECK(split_tabs(with_missing.lines[1]).front() == other_clip);
  CHECK(with_missing.err == "transcribe: input file '" + folder.file("missing.wav") +
                                "' does not exist\ntranscribe: 1 of 3 inputs failed (each named "
                                "above)\n");
  check_one_line_error(run_command(classify_command, {"--checkpoint", folder.file("genre"), root}),
                       "is a folder");
  check_one_line_error(
      run_command(transcribe_command, {"--checkpoint", folder.file("nowhere"), clip}), "nowhere");
  CHECK(run_command(transcribe_command, {clip}).code != 0);  // --checkpoint is required
  CHECK(run_command(classify_command, {"--checkpoint", folder.file("genre"), "--top-k", "0", clip})
            .code != 0);
}
#endif

#if SONATA_WITH_SNDFILE
TEST_CASE("transcribe: a bad file among good ones gets its error line, the rest are answered",
          "[inference]") {
  TemporaryFolder folder("inference_bad_file");
  const std::string train = write_letters_corpus(folder.path().string(), "train", 4, 31);
  TrainerOptions options = tiny_ds2(train, "", folder.file("run"));
  options.epochs = 1;
  manual_seed(1);
  {
    SpeechTask task(options, Vocabulary());
    run_training(options, task, Device::cpu());
  }
  write_text(folder.file("broken.wav"), "RIFF....not a wave file");
  const std::vector<std::string> files = {folder.file("train_0.wav"), folder.file("broken.wav"),
                                          folder.file("train_1.wav")};
  std::vector<std::string> arguments = {"--checkpoint", folder.file("run"), "--device", "cpu"};
  arguments.insert(arguments.end(), files.begin(), files.end());
  const CommandResult result = run_command(transcribe_command, arguments);
  INFO(result.out);
  INFO(result.err);
  CHECK(result.code == 1);
  // The good files' lines, whole: newline-terminated, nothing of the bad file's.
  REQUIRE(result.lines.size() == 2);
  CHECK(split_tabs(result.lines[0]).front() == files[0]);
  CHECK(split_tabs(result.lines[1]).front() == files[2]);
  CHECK(result.out.ends_with('\n'));
  CHECK(std::count(result.out.begin(), result.out.end(), '\n') == 2);
  // One line naming the bad file, one counting the failures.
  CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 2);
  CHECK_THAT(result.err, Contains("transcribe: ") && Contains("broken.wav"));
  CHECK_THAT(result.err, Contains("1 of 3 inputs failed"));
}
#endif

TEST_CASE("transcribe and classify: errors are in the user's words, without source locations",
          "[inference]") {
  TemporaryFolder folder("inference_error_words");
  write_text(folder.file("clip.wav"), "not used");
  for (auto* command : {transcribe_command, classify_command}) {
    const CommandResult result =
        run_command(command, {"--checkpoint", folder.file("nowhere"), folder.file("clip.wav")});
    INFO(result.err);
    CHECK(result.code == 1);
    CHECK_THAT(result.err, Contains("nowhere"));
    CHECK_THAT(result.err, !Contains(".cpp:"));
    // A --checkpoint that is no checkpoint is named by its flag.
    CHECK_THAT(result.err, Contains("--checkpoint: '" + folder.file("nowhere") + "'"));
    CHECK_THAT(result.err, !Contains("load_checkpoint"));  // the loader's name, not the user's
  }
}
