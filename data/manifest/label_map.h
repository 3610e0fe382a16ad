#pragma once
// Class labels and their indices (the class index of a classifier's output), as torchvision's
// ImageFolder assigns them: the unique labels sorted by name (byte order, which for UTF-8 is
// code-point order, as Python's sorted), index = position.
//
// Saved as label_map.json, {"labels": ["blues", "classical", ...]} in index order, next to a
// checkpoint, so that a model keeps its output order whatever the data it meets later.
// load(path, dataset) refuses a file whose labels are not the dataset's and names the ones
// that differ; when they are the same, the file's order wins.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sonata {

class LabelMap {
 public:
  // Sorted, duplicates merged. Throws on an empty list or an empty label.
  static LabelMap from_labels(std::vector<std::string> labels);

  static LabelMap load(const std::string& path);
  // As load, then refuses a file whose label set differs from `dataset`'s, naming the labels
  // only in the file and those only in the dataset.
  static LabelMap load(const std::string& path, const LabelMap& dataset);
  // The text of a label_map.json; `source` names it in errors.
  static LabelMap parse(std::string_view text, const std::string& source);

  int64_t size() const { return int64_t(labels_.size()); }
  const std::vector<std::string>& labels() const { return labels_; }
  // Throws on an index outside [0, size()).
  const std::string& label(int64_t index) const;
  std::optional<int64_t> find(std::string_view label) const;
  // As find, but an unknown label throws naming it.
  int64_t index(std::string_view label) const;

  std::string to_json() const;
  void save(const std::string& path) const;

  bool operator==(const LabelMap& other) const { return labels_ == other.labels_; }

 private:
  explicit LabelMap(std::vector<std::string> labels);

  std::vector<std::string> labels_;
  std::unordered_map<std::string, int64_t> indices_;
};

}  // namespace sonata
