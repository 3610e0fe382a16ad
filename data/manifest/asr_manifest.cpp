#include "data/manifest/asr_manifest.h"

#include <cmath>

#include "base/error.h"

namespace sonata {
namespace {

using manifest::Line;
using manifest::ManifestText;

AsrEntry tsv_entry(const ManifestText& m, const Line& line, const ManifestOptions& options) {
  const auto [path, transcript] = manifest::split_tsv(m, line, "path<TAB>transcript");
  return {manifest::audio_path(m, line, path, options), std::string(transcript), -1};
}

AsrEntry jsonl_entry(const ManifestText& m, const Line& line, const ManifestOptions& options) {
  const nlohmann::json object = manifest::parse_json_object(m, line);
  const std::string* path = manifest::json_string(object, "audio_filepath", m, line);
  if (path == nullptr) manifest::fail_missing_key(m, line, "\"audio_filepath\"");
  const std::string* text = manifest::json_string(object, "text", m, line);
  if (text == nullptr) manifest::fail_missing_key(m, line, "\"text\"");
  AsrEntry entry{manifest::audio_path(m, line, *path, options), *text, -1};
  const auto duration = object.find("duration");
  if (duration != object.end() && !duration->is_null()) {
    SONATA_CHECK(duration->is_number(), m.place(line), " has a ", duration->type_name(),
                 " under \"duration\" where a number of seconds belongs");
    entry.duration = duration->get<double>();
    SONATA_CHECK(std::isfinite(entry.duration) && entry.duration >= 0, m.place(line),
                 " has the duration ", entry.duration, ", which is not a length in seconds");
  }
  return entry;
}

}  // namespace

std::vector<AsrEntry> read_asr_manifest(const std::string& path, const ManifestOptions& options) {
  const ManifestText m = manifest::read_manifest(path, "ASR manifest");
  std::vector<AsrEntry> entries;
  entries.reserve(m.lines.size());
  for (const Line& line : m.lines)
    entries.push_back(m.format == manifest::Format::tsv ? tsv_entry(m, line, options)
                                                        : jsonl_entry(m, line, options));
  return entries;
}

}  // namespace sonata
