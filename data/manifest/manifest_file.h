#pragma once
// What every manifest reader shares: the format chosen by the file's extension, the lines
// with their numbers, audio paths resolved against the manifest's folder, and errors that
// name the manifest and the line.
//
// Formats: `.tsv` is tab-separated text, one entry per line; `.jsonl` and `.json` are JSON
// lines, one object per line (NeMo's manifests are .json files written this way, not one
// JSON document). Files are UTF-8; a byte-order mark, CRLF line ends, blank lines and a
// missing or present final newline are all accepted.
#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sonata {

struct ManifestOptions {
  // Check that every listed audio file exists while the manifest is read, so that a wrong
  // relative path fails at once naming its line instead of hours into training.
  bool check_files = true;
};

namespace manifest {

enum class Format { tsv, jsonl };

struct Line {
  size_t number;       // 1-based, counting blank lines
  size_t begin, size;  // into ManifestText::text; '\r' already excluded
};

struct ManifestText {
  std::string kind;              // "ASR manifest", "classification manifest": for errors
  std::string path;              // as given
  std::filesystem::path folder;  // relative audio paths resolve against it
  Format format = Format::tsv;
  std::string text;         // the whole file
  std::vector<Line> lines;  // the non-blank ones

  std::string_view line_text(const Line& line) const {
    return std::string_view(text).substr(line.begin, line.size);
  }
  // "ASR manifest 'data/train.tsv' line 3", the subject of every line error.
  std::string place(const Line& line) const;
  std::string name() const;  // "ASR manifest 'data/train.tsv'"
};

// Reads the file and splits it into lines. Throws sonata::Error naming it for an unknown
// extension, a file that cannot be opened, and a manifest without a single entry.
ManifestText read_manifest(const std::string& path, const std::string& kind);

// A TSV line "path<TAB>value"; `columns` names both fields for the error a line without
// exactly one tab gets ("path<TAB>transcript").
std::pair<std::string_view, std::string_view> split_tsv(const ManifestText& manifest,
                                                        const Line& line, const char* columns);

// One JSON object per line.
nlohmann::json parse_json_object(const ManifestText& manifest, const Line& line);
// The string under `key`, or nullptr when the key is absent or null; a value of another type
// throws naming the key and the line.
const std::string* json_string(const nlohmann::json& object, const char* key,
                               const ManifestText& manifest, const Line& line);
// Throws naming the key and the line.
[[noreturn]] void fail_missing_key(const ManifestText& manifest, const Line& line,
                                   const std::string& keys);

// An entry's audio path: relative paths joined to the manifest's folder, absolute ones kept.
// An empty path throws; so does a file that does not exist when options.check_files.
std::string audio_path(const ManifestText& manifest, const Line& line, std::string_view path,
                       const ManifestOptions& options);

}  // namespace manifest
}  // namespace sonata
