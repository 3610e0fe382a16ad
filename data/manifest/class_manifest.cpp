#include "data/manifest/class_manifest.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <utility>

#include "base/error.h"

namespace sonata {
namespace {

namespace fs = std::filesystem;
using manifest::Line;
using manifest::ManifestText;

constexpr std::array<std::string_view, 11> kAudioExtensions = {
    ".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".au", ".snd", ".aif", ".aiff", ".aifc"};

constexpr std::array<std::string_view, 3> kImageExtensions = {".png", ".jpg", ".jpeg"};

// An audio file or an image (data/image/image_file.h reads .png, .jpg, .jpeg).
bool is_item(const fs::path& file) {
  std::string extension = file.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  const auto among = [&](const auto& list) {
    return std::find(list.begin(), list.end(), extension) != list.end();
  };
  return among(kAudioExtensions) || among(kImageExtensions);
}

bool is_hidden(const fs::path& path) {
  return path.filename().string().starts_with('.');
}

ClassEntry tsv_entry(const ManifestText& m, const Line& line, const ManifestOptions& options) {
  const auto [path, label] = manifest::split_tsv(m, line, "path<TAB>label");
  SONATA_CHECK(!label.empty(), m.place(line), " has an empty label");
  return {manifest::audio_path(m, line, path, options), std::string(label)};
}

ClassEntry jsonl_entry(const ManifestText& m, const Line& line, const ManifestOptions& options) {
  const nlohmann::json object = manifest::parse_json_object(m, line);
  const std::string* path = manifest::json_string(object, "audio_filepath", m, line);
  if (path == nullptr) path = manifest::json_string(object, "path", m, line);
  if (path == nullptr) manifest::fail_missing_key(m, line, "\"audio_filepath\" (or \"path\")");
  const auto label = object.find("label");
  if (label == object.end() || label->is_null()) manifest::fail_missing_key(m, line, "\"label\"");
  std::string text;
  if (label->is_string())
    text = label->get<std::string>();
  else if (label->is_number_integer())
    text = label->dump();
  else
    throw Error(str(m.place(line), " has a ", label->type_name(),
                    " under \"label\" where a string or an integer belongs"));
  SONATA_CHECK(!text.empty(), m.place(line), " has an empty label");
  return {manifest::audio_path(m, line, *path, options), std::move(text)};
}

// torchvision walks each class folder with sorted(os.walk(...)) and sorts the file names of
// each folder: files are ordered by (folder, name), which is not the order of whole paths
// ("a/z.wav" comes before "a/b/c.wav").
std::vector<fs::path> audio_files(const fs::path& folder) {
  std::vector<std::pair<std::string, std::string>> found;
  const auto options = fs::directory_options::follow_directory_symlink;
  for (auto it = fs::recursive_directory_iterator(folder, options);
       it != fs::recursive_directory_iterator(); ++it) {
    if (is_hidden(it->path())) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_directory() && is_item(it->path()))
      found.emplace_back(it->path().parent_path().string(), it->path().filename().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> files;
  for (const auto& [parent, name] : found) files.push_back(fs::path(parent) / name);
  return files;
}

}  // namespace

std::vector<ClassEntry> read_class_manifest(const std::string& path,
                                            const ManifestOptions& options) {
  const ManifestText m = manifest::read_manifest(path, "classification manifest");
  std::vector<ClassEntry> entries;
  entries.reserve(m.lines.size());
  for (const Line& line : m.lines)
    entries.push_back(m.format == manifest::Format::tsv ? tsv_entry(m, line, options)
                                                        : jsonl_entry(m, line, options));
  return entries;
}

std::vector<ClassEntry> scan_class_folders(const std::string& root) {
  std::error_code error;
  SONATA_CHECK(fs::is_directory(root, error), "the class folder tree '", root, "' is not a folder");
  std::vector<fs::path> classes;
  for (const fs::directory_entry& entry : fs::directory_iterator(root))
    if (entry.is_directory() && !is_hidden(entry.path())) classes.push_back(entry.path());
  SONATA_CHECK(!classes.empty(), "the class folder tree '", root,
               "' has no class folders: expected ROOT/<class>/<audio files>");
  std::sort(classes.begin(), classes.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string() < b.filename().string();
  });

  std::vector<ClassEntry> entries;
  std::vector<std::string> empty;
  for (const fs::path& folder : classes) {
    const std::string label = folder.filename().string();
    const std::vector<fs::path> files = audio_files(folder);
    if (files.empty()) empty.push_back(label);
    for (const fs::path& file : files) entries.push_back({file.string(), label});
  }
  if (!empty.empty()) {
    std::string names;
    for (const std::string& name : empty) names += str(names.empty() ? "'" : ", '", name, "'");
    throw Error(
        str("the class folder tree '", root, "' has no audio file in the class",
            empty.size() > 1 ? "es " : " ", names,
            " (audio: .wav .flac .ogg .oga .opus .mp3 .au .snd .aif .aiff .aifc; images: .png .jpg "
            ".jpeg)"));
  }
  return entries;
}

LabelMap label_map_of(const std::vector<ClassEntry>& entries) {
  std::vector<std::string> labels;
  labels.reserve(entries.size());
  for (const ClassEntry& entry : entries) labels.push_back(entry.label);
  return LabelMap::from_labels(std::move(labels));
}

}  // namespace sonata
