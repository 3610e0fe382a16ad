#include "data/manifest/manifest_file.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace sonata::manifest {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return text;
}

bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t'; });
}

}  // namespace

std::string ManifestText::name() const {
  return str(kind, " '", path, "'");
}

std::string ManifestText::place(const Line& line) const {
  return str(name(), " line ", line.number);
}

ManifestText read_manifest(const std::string& path, const std::string& kind) {
  ManifestText manifest;
  manifest.kind = kind;
  manifest.path = path;
  const std::filesystem::path file(path);
  manifest.folder = file.parent_path();
  const std::string extension = lower(file.extension().string());
  if (extension == ".tsv")
    manifest.format = Format::tsv;
  else if (extension == ".jsonl" || extension == ".json")
    manifest.format = Format::jsonl;
  else
    throw Error(str("cannot tell the format of ", manifest.name(),
                    " from its extension: use .tsv (path<TAB>value lines) or .jsonl / .json "
                    "(one JSON object per line)"));

  std::ifstream in(path, std::ios::binary);
  SONATA_CHECK(in.good(), "cannot open ", manifest.name());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  SONATA_CHECK(!in.bad(), "cannot read ", manifest.name());
  manifest.text = bytes.str();

  const std::string_view text = manifest.text;
  size_t start = text.starts_with(kByteOrderMark) ? kByteOrderMark.size() : 0;
  for (size_t number = 1; start < text.size(); ++number) {
    const size_t end = std::min(text.find('\n', start), text.size());
    size_t size = end - start;
    if (size > 0 && text[start + size - 1] == '\r') --size;
    if (!is_blank(text.substr(start, size))) manifest.lines.push_back({number, start, size});
    start = end + 1;
  }
  SONATA_CHECK(!manifest.lines.empty(), manifest.name(),
               " lists no audio: it is empty or holds only blank lines");
  return manifest;
}

std::pair<std::string_view, std::string_view> split_tsv(const ManifestText& manifest,
                                                        const Line& line, const char* columns) {
  const std::string_view text = manifest.line_text(line);
  const size_t tab = text.find('\t');
  SONATA_CHECK(tab != std::string_view::npos, manifest.place(line),
               " has no tab: each line must be ", columns);
  SONATA_CHECK(text.find('\t', tab + 1) == std::string_view::npos, manifest.place(line),
               " has more than one tab: each line must be ", columns);
  return {text.substr(0, tab), text.substr(tab + 1)};
}

nlohmann::json parse_json_object(const ManifestText& manifest, const Line& line) {
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(manifest.line_text(line));
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(str(manifest.place(line), " is not valid JSON (near character ", e.byte,
                    "): each line must be one JSON object"));
  }
  SONATA_CHECK(object.is_object(), manifest.place(line), " holds a JSON ", object.type_name(),
               ", not the object each line must be");
  return object;
}

const std::string* json_string(const nlohmann::json& object, const char* key,
                               const ManifestText& manifest, const Line& line) {
  const auto found = object.find(key);
  if (found == object.end() || found->is_null()) return nullptr;
  SONATA_CHECK(found->is_string(), manifest.place(line), " has a ", found->type_name(), " under \"",
               key, "\" where a string belongs");
  return found->get_ptr<const std::string*>();
}

void fail_missing_key(const ManifestText& manifest, const Line& line, const std::string& keys) {
  throw Error(str(manifest.place(line), " has no ", keys, " key"));
}

std::string audio_path(const ManifestText& manifest, const Line& line, std::string_view path,
                       const ManifestOptions& options) {
  SONATA_CHECK(!path.empty(), manifest.place(line), " has an empty audio path");
  std::filesystem::path resolved(path);
  if (resolved.is_relative()) resolved = (manifest.folder / resolved).lexically_normal();
  std::string text = resolved.string();
  if (options.check_files) {
    std::error_code error;
    const std::filesystem::file_status status = std::filesystem::status(resolved, error);
    SONATA_CHECK(std::filesystem::exists(status), manifest.place(line), " lists audio file '", text,
                 "', which does not exist",
                 resolved == std::filesystem::path(path)
                     ? ""
                     : " (relative paths are taken from the manifest's folder)");
    SONATA_CHECK(!std::filesystem::is_directory(status), manifest.place(line), " lists '", text,
                 "', which is a folder, not an audio file");
  }
  return text;
}

}  // namespace sonata::manifest
