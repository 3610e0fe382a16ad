// Manifests as NeMo / torchaudio / torchvision users write them: TSV and JSON-lines ASR and
// classification manifests (relative paths, extra keys, blank lines, CRLF), the
// folder-per-class tree in torchvision's order, the one-sentence errors naming the line, and
// the label map's save/load round trip.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/manifest/asr_manifest.h"
#include "data/manifest/class_manifest.h"
#include "data/manifest/label_map.h"

using namespace sonata;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// A fresh folder per test case, removed at the end.
class TempFolder {
 public:
  explicit TempFolder(const std::string& name)
      : root_(fs::temp_directory_path() / ("sonata_test_manifest_" + name)) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~TempFolder() {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  // Writes `text` to root/relative (creating folders) and returns the full path.
  std::string write(const std::string& relative, const std::string& text = "RIFF") const {
    const fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }
  std::string path(const std::string& relative) const { return (root_ / relative).string(); }

 private:
  fs::path root_;
};

}  // namespace

TEST_CASE("ASR manifest: TSV with relative and absolute paths", "[manifest]") {
  TempFolder dir("asr_tsv");
  dir.write("clips/a.wav");
  dir.write("clips/b.wav");
  const std::string absolute = dir.write("elsewhere/c.wav");
  // A byte-order mark, CRLF, a blank line, an empty transcript, no final newline.
  const std::string manifest = dir.write(
      "lists/train.tsv",
      "\xEF\xBB\xBF../clips/a.wav\tcall five oh\r\n\n../clips/b.wav\t\n" + absolute + "\tnine");
  const std::vector<AsrEntry> entries = read_asr_manifest(manifest);
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].path == dir.path("clips/a.wav"));
  CHECK(entries[0].transcript == "call five oh");
  CHECK(entries[0].duration == -1);
  CHECK(entries[1].path == dir.path("clips/b.wav"));
  CHECK(entries[1].transcript.empty());
  CHECK(entries[2].path == absolute);
  CHECK(entries[2].transcript == "nine");
}

TEST_CASE("ASR manifest: NeMo JSON lines, extra keys ignored, duration optional", "[manifest]") {
  TempFolder dir("asr_jsonl");
  dir.write("wav/a.wav");
  dir.write("wav/b.wav");
  const std::string text =
      "{\"audio_filepath\": \"wav/a.wav\", \"text\": \"two one\", \"duration\": 1.25, "
      "\"offset\": 0, \"lang\": \"en\", \"speaker\": {\"id\": 3}}\n"
      "\n"
      "{\"text\": \"it's\", \"audio_filepath\": \"wav/b.wav\"}\n";
  for (const std::string name : {"train.jsonl", "train.json"}) {
    const std::vector<AsrEntry> entries = read_asr_manifest(dir.write(name, text));
    REQUIRE(entries.size() == 2);
    CHECK(entries[0].path == dir.path("wav/a.wav"));
    CHECK(entries[0].transcript == "two one");
    CHECK(entries[0].duration == 1.25);
    CHECK(entries[1].path == dir.path("wav/b.wav"));
    CHECK(entries[1].transcript == "it's");
    CHECK(entries[1].duration == -1);
  }
}

TEST_CASE("ASR manifest: a file-less check reads paths it cannot see", "[manifest]") {
  TempFolder dir("asr_nocheck");
  const std::string manifest = dir.write("m.tsv", "x/missing.wav\thello\n");
  ManifestOptions options;
  options.check_files = false;
  const std::vector<AsrEntry> entries = read_asr_manifest(manifest, options);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].path == dir.path("x/missing.wav"));
  REQUIRE_THROWS_WITH(read_asr_manifest(manifest), Contains("line 1") &&
                                                       Contains("does not exist") &&
                                                       Contains(dir.path("x/missing.wav")));
}

TEST_CASE("ASR manifest errors name the manifest and the line", "[manifest]") {
  TempFolder dir("asr_errors");
  dir.write("a.wav");
  const auto fails = [&](const std::string& name, const std::string& text) {
    const std::string path = dir.write(name, text);
    try {
      read_asr_manifest(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    FAIL("no error for " << name);
    return std::string();
  };
  const std::string tsv_head = "a.wav\tone\n\n";  // line 3 is the faulty one below
  CHECK_THAT(fails("no_tab.tsv", tsv_head + "a.wav one\n"),
             Contains("no_tab.tsv' line 3 has no tab") && Contains("path<TAB>transcript"));
  CHECK_THAT(fails("two_tabs.tsv", tsv_head + "a.wav\tone\ttwo\n"),
             Contains("line 3 has more than one tab"));
  CHECK_THAT(fails("empty_path.tsv", tsv_head + "\tone\n"),
             Contains("line 3 has an empty audio path"));
  CHECK_THAT(fails("missing.tsv", tsv_head + "b.wav\tone\n"),
             Contains("missing.tsv' line 3 lists audio file") && Contains("b.wav") &&
                 Contains("does not exist"));
  CHECK_THAT(fails("folder.tsv", tsv_head + ".\tone\n"),
             Contains("line 3 lists") && Contains("a folder"));

  const std::string json_head = "{\"audio_filepath\": \"a.wav\", \"text\": \"one\"}\n\n";
  CHECK_THAT(fails("bad.jsonl", json_head + "{\"audio_filepath\": \"a.wav\", \"text\": }\n"),
             Contains("bad.jsonl' line 3 is not valid JSON"));
  CHECK_THAT(fails("array.jsonl", json_head + "[1, 2]\n"), Contains("line 3 holds a JSON array"));
  CHECK_THAT(fails("no_text.jsonl", json_head + "{\"audio_filepath\": \"a.wav\"}\n"),
             Contains("no_text.jsonl' line 3 has no \"text\" key"));
  CHECK_THAT(fails("no_path.jsonl", json_head + "{\"text\": \"one\"}\n"),
             Contains("line 3 has no \"audio_filepath\" key"));
  CHECK_THAT(
      fails("number_text.jsonl", json_head + "{\"audio_filepath\": \"a.wav\", \"text\": 5}\n"),
      Contains("line 3 has a number under \"text\""));
  CHECK_THAT(fails("bad_duration.jsonl",
                   json_head + "{\"audio_filepath\": \"a.wav\", \"text\": \"x\", \"duration\": "
                               "\"long\"}\n"),
             Contains("line 3 has a string under \"duration\""));
  CHECK_THAT(fails("empty_path.jsonl", json_head + "{\"audio_filepath\": \"\", \"text\": \"x\"}\n"),
             Contains("line 3 has an empty audio path"));

  CHECK_THAT(fails("empty.tsv", ""),
             Contains("ASR manifest '") && Contains("empty.tsv' lists no audio"));
  CHECK_THAT(fails("blank.jsonl", "\n  \n\r\n"), Contains("blank.jsonl' lists no audio"));
  CHECK_THAT(fails("list.csv", "a.wav,one\n"),
             Contains("list.csv") && Contains(".tsv") && Contains(".jsonl"));
  REQUIRE_THROWS_WITH(read_asr_manifest(dir.path("absent.tsv")),
                      Contains("cannot open ASR manifest") && Contains("absent.tsv"));
}

TEST_CASE("Classification manifest: TSV and JSON lines", "[manifest]") {
  TempFolder dir("class_manifest");
  dir.write("audio/x.wav");
  dir.write("audio/y.flac");
  const std::vector<ClassEntry> tsv =
      read_class_manifest(dir.write("train.tsv", "audio/x.wav\tjazz\naudio/y.flac\tblues\n"));
  REQUIRE(tsv.size() == 2);
  CHECK(tsv[0].path == dir.path("audio/x.wav"));
  CHECK(tsv[0].label == "jazz");
  CHECK(tsv[1].label == "blues");

  const std::vector<ClassEntry> jsonl = read_class_manifest(
      dir.write("train.jsonl",
                "{\"audio_filepath\": \"audio/x.wav\", \"label\": \"jazz\", \"duration\": 30.0}\n"
                "{\"path\": \"audio/y.flac\", \"label\": 7}\n"));
  REQUIRE(jsonl.size() == 2);
  CHECK(jsonl[0].path == dir.path("audio/x.wav"));
  CHECK(jsonl[0].label == "jazz");
  CHECK(jsonl[1].path == dir.path("audio/y.flac"));
  CHECK(jsonl[1].label == "7");

  REQUIRE_THROWS_WITH(
      read_class_manifest(dir.write("no_label.jsonl", "{\"path\": \"audio/x.wav\"}\n")),
      Contains("classification manifest '") && Contains("line 1 has no \"label\""));
  REQUIRE_THROWS_WITH(read_class_manifest(dir.write(
                          "float_label.jsonl", "{\"path\": \"audio/x.wav\", \"label\": 1.5}\n")),
                      Contains("line 1 has a number under \"label\""));
  REQUIRE_THROWS_WITH(read_class_manifest(dir.write("no_path.jsonl", "{\"label\": \"a\"}\n")),
                      Contains("line 1 has no \"audio_filepath\" (or \"path\") key"));
  REQUIRE_THROWS_WITH(read_class_manifest(dir.write("empty_label.tsv", "audio/x.wav\t\n")),
                      Contains("line 1 has an empty label"));
  REQUIRE_THROWS_WITH(read_class_manifest(dir.write("no_tab.tsv", "\n\naudio/x.wav jazz\n")),
                      Contains("line 3 has no tab") && Contains("path<TAB>label"));
}

TEST_CASE("Class folder tree: classes sorted by name, files in torchvision's order", "[manifest]") {
  TempFolder dir("class_tree");
  dir.write("rock/b.WAV");
  dir.write("rock/a.au");
  dir.write("rock/notes.txt");
  dir.write("rock/z.wav");
  dir.write("rock/live/c.flac");  // after rock/z.wav: torchvision sorts by (folder, name)
  dir.write("Pop/p.mp3");         // upper case sorts first, as Python's sorted does
  dir.write("blues/x.ogg");
  dir.write("blues/.ipynb_checkpoints/x-checkpoint.wav");
  dir.write(".hidden/y.wav");
  dir.write("readme.md");

  const std::vector<ClassEntry> entries = scan_class_folders(dir.path(""));
  std::vector<std::string> got;
  for (const ClassEntry& e : entries)
    got.push_back(e.label + ":" + fs::relative(e.path, dir.path("")).string());
  const std::vector<std::string> expected = {"Pop:Pop/p.mp3",   "blues:blues/x.ogg",
                                             "rock:rock/a.au",  "rock:rock/b.WAV",
                                             "rock:rock/z.wav", "rock:rock/live/c.flac"};
  CHECK(got == expected);
  const LabelMap labels = label_map_of(entries);
  CHECK(labels.labels() == std::vector<std::string>{"Pop", "blues", "rock"});

  dir.write("empty_class/readme.txt");
  dir.write("also_empty/.keep");
  REQUIRE_THROWS_WITH(scan_class_folders(dir.path("")),
                      Contains("no audio file in the classes 'also_empty', 'empty_class'"));
  REQUIRE_THROWS_WITH(scan_class_folders(dir.path("rock/a.au")), Contains("is not a folder"));
  TempFolder flat("class_tree_flat");
  flat.write("a.wav");
  REQUIRE_THROWS_WITH(scan_class_folders(flat.path("")), Contains("has no class folders"));
}

TEST_CASE("Label map: sorted unique labels, save and load round trip", "[manifest]") {
  const LabelMap map = LabelMap::from_labels({"rock", "blues", "jazz", "blues", "rock"});
  CHECK(map.size() == 3);
  CHECK(map.labels() == std::vector<std::string>{"blues", "jazz", "rock"});
  CHECK(map.index("blues") == 0);
  CHECK(map.index("rock") == 2);
  CHECK(map.label(1) == "jazz");
  CHECK_FALSE(map.find("pop").has_value());
  REQUIRE_THROWS_WITH(map.index("pop"), Contains("'pop' is not in the label map"));
  REQUIRE_THROWS_WITH(map.label(3), Contains("label index 3 is outside"));
  REQUIRE_THROWS_AS(LabelMap::from_labels({}), Error);
  REQUIRE_THROWS_AS(LabelMap::from_labels({"a", ""}), Error);

  TempFolder dir("label_map");
  const std::string path = dir.path("label_map.json");
  map.save(path);
  CHECK(LabelMap::load(path) == map);
  CHECK(LabelMap::load(path, map) == map);

  // The file's order wins when the labels are the same (a trained head keeps its outputs).
  const std::string custom =
      dir.write("custom.json", "{\"labels\": [\"rock\", \"blues\", \"jazz\"]}");
  const LabelMap loaded = LabelMap::load(custom, map);
  CHECK(loaded.index("rock") == 0);
  CHECK(loaded.index("jazz") == 2);

  const LabelMap other = LabelMap::from_labels({"blues", "pop", "rock", "metal"});
  REQUIRE_THROWS_WITH(LabelMap::load(path, other),
                      Contains("label_map.json' does not match the dataset's labels") &&
                          Contains("'jazz' only in the file") &&
                          Contains("'metal', 'pop' only in the dataset"));

  REQUIRE_THROWS_WITH(LabelMap::load(dir.write("dup.json", "{\"labels\": [\"a\", \"b\", \"a\"]}")),
                      Contains("lists 'a' twice"));
  REQUIRE_THROWS_WITH(LabelMap::load(dir.write("bad.json", "{\"labels\": [\"a\",")),
                      Contains("bad.json' is not valid JSON"));
  REQUIRE_THROWS_WITH(LabelMap::load(dir.write("list.json", "[\"a\"]")),
                      Contains("\"labels\" list"));
  REQUIRE_THROWS_WITH(LabelMap::load(dir.write("number.json", "{\"labels\": [\"a\", 3]}")),
                      Contains("has 3 at index 1"));
  REQUIRE_THROWS_WITH(LabelMap::load(dir.write("none.json", "{\"labels\": []}")),
                      Contains("lists no labels"));
  REQUIRE_THROWS_WITH(LabelMap::load(dir.path("absent.json")), Contains("cannot open label map"));
}
