#include "data/manifest/label_map.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/error.h"

namespace sonata {
namespace {

// "'a', 'b'" with at most `shown` labels, then how many more.
std::string quoted_list(const std::vector<std::string>& labels, size_t shown = 8) {
  std::string out;
  for (size_t i = 0; i < std::min(labels.size(), shown); ++i)
    out += str(i ? ", '" : "'", labels[i], "'");
  if (labels.size() > shown) out += str(" and ", labels.size() - shown, " more");
  return out;
}

}  // namespace

LabelMap::LabelMap(std::vector<std::string> labels) : labels_(std::move(labels)) {
  for (size_t i = 0; i < labels_.size(); ++i) indices_.emplace(labels_[i], int64_t(i));
}

LabelMap LabelMap::from_labels(std::vector<std::string> labels) {
  SONATA_CHECK(!labels.empty(), "cannot make a label map without labels");
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  SONATA_CHECK(!labels.front().empty(), "cannot make a label map with an empty label");
  return LabelMap(std::move(labels));
}

LabelMap LabelMap::parse(std::string_view text, const std::string& source) {
  const std::string file = str("label map '", source, "'");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(str(file, " is not valid JSON (near character ", e.byte, ")"));
  }
  SONATA_CHECK(json.is_object() && json.contains("labels") && json["labels"].is_array(), file,
               " must be a JSON object with a \"labels\" list");
  std::vector<std::string> labels;
  std::set<std::string> seen;
  for (const nlohmann::json& label : json["labels"]) {
    SONATA_CHECK(label.is_string() && !label.get<std::string>().empty(), file, " has ",
                 label.dump(), " at index ", labels.size(), " where a non-empty string belongs");
    SONATA_CHECK(seen.insert(label.get<std::string>()).second, file, " lists '",
                 label.get<std::string>(), "' twice");
    labels.push_back(label.get<std::string>());
  }
  SONATA_CHECK(!labels.empty(), file, " lists no labels");
  return LabelMap(std::move(labels));
}

LabelMap LabelMap::load(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  SONATA_CHECK(file.good(), "cannot open label map '", path, "'");
  std::ostringstream text;
  text << file.rdbuf();
  SONATA_CHECK(!file.bad(), "cannot read label map '", path, "'");
  return parse(text.str(), path);
}

LabelMap LabelMap::load(const std::string& path, const LabelMap& dataset) {
  LabelMap saved = load(path);
  std::vector<std::string> only_saved, only_dataset;
  for (const std::string& label : saved.labels_)
    if (!dataset.find(label)) only_saved.push_back(label);
  for (const std::string& label : dataset.labels_)
    if (!saved.find(label)) only_dataset.push_back(label);
  std::sort(only_saved.begin(), only_saved.end());
  if (only_saved.empty() && only_dataset.empty()) return saved;
  std::string difference;
  if (!only_saved.empty()) difference = str(quoted_list(only_saved), " only in the file");
  if (!only_dataset.empty())
    difference +=
        str(difference.empty() ? "" : ", ", quoted_list(only_dataset), " only in the dataset");
  throw Error(str("label map '", path, "' does not match the dataset's labels: ", difference));
}

const std::string& LabelMap::label(int64_t index) const {
  SONATA_CHECK(index >= 0 && index < size(), "label index ", index,
               " is outside the label map's [0, ", size(), ")");
  return labels_[size_t(index)];
}

std::optional<int64_t> LabelMap::find(std::string_view label) const {
  const auto found = indices_.find(std::string(label));
  if (found == indices_.end()) return std::nullopt;
  return found->second;
}

int64_t LabelMap::index(std::string_view label) const {
  const std::optional<int64_t> found = find(label);
  SONATA_CHECK(found.has_value(), "the label '", label, "' is not in the label map (",
               quoted_list(labels_, 5), ")");
  return *found;
}

std::string LabelMap::to_json() const {
  return nlohmann::json{{"labels", labels_}}.dump(2) + "\n";
}

void LabelMap::save(const std::string& path) const {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  SONATA_CHECK(file.good(), "cannot create label map '", path, "'");
  file << to_json();
  file.close();
  SONATA_CHECK(!file.fail(), "cannot write label map '", path, "'");
}

}  // namespace sonata
