#include "data/text/error_rate.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"
#include "data/text/utf8.h"

namespace sonata {
namespace {

// The classic dynamic programme, one row at a time over the shorter sequence (distance is
// symmetric, so the two may be swapped).
template <typename Sequence>
int64_t levenshtein(const Sequence& reference, const Sequence& hypothesis) {
  const Sequence& longer = reference.size() >= hypothesis.size() ? reference : hypothesis;
  const Sequence& shorter = reference.size() >= hypothesis.size() ? hypothesis : reference;
  // row[j]: distance between the first i elements of `longer` and the first j of `shorter`.
  std::vector<int64_t> row(shorter.size() + 1);
  std::iota(row.begin(), row.end(), int64_t(0));
  for (size_t i = 1; i <= longer.size(); ++i) {
    int64_t diagonal = row[0];  // row[i - 1][j - 1]
    row[0] = int64_t(i);
    for (size_t j = 1; j <= shorter.size(); ++j) {
      const int64_t above = row[j];
      const int64_t substitute = diagonal + (longer[i - 1] == shorter[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row.back();
}

}  // namespace

int64_t edit_distance(const std::vector<int64_t>& reference,
                      const std::vector<int64_t>& hypothesis) {
  return levenshtein(reference, hypothesis);
}

int64_t edit_distance(std::u32string_view reference, std::u32string_view hypothesis) {
  return levenshtein(reference, hypothesis);
}

int64_t edit_distance(const std::vector<std::string>& reference,
                      const std::vector<std::string>& hypothesis) {
  return levenshtein(reference, hypothesis);
}

int64_t character_edit_distance(std::string_view reference, std::string_view hypothesis) {
  return levenshtein(decode_utf8(reference, str("reference '", reference, "'")),
                     decode_utf8(hypothesis, str("hypothesis '", hypothesis, "'")));
}

int64_t word_edit_distance(std::string_view reference, std::string_view hypothesis) {
  return levenshtein(split_words(reference), split_words(hypothesis));
}

std::vector<std::string> split_words(std::string_view text) {
  auto is_space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > start) words.emplace_back(text.substr(start, i - start));
  }
  return words;
}

double EditCounts::rate() const {
  return double(edits) / double(std::max<int64_t>(reference_length, 1));
}

EditCounts& EditCounts::operator+=(const EditCounts& other) {
  edits += other.edits;
  reference_length += other.reference_length;
  return *this;
}

void ErrorRate::add(std::string_view reference, std::string_view hypothesis) {
  const std::u32string reference_chars = decode_utf8(reference, str("reference '", reference, "'"));
  const std::u32string hypothesis_chars =
      decode_utf8(hypothesis, str("hypothesis '", hypothesis, "'"));
  const std::vector<std::string> reference_words = split_words(reference);
  characters_ += {levenshtein(reference_chars, hypothesis_chars), int64_t(reference_chars.size())};
  words_ +=
      {levenshtein(reference_words, split_words(hypothesis)), int64_t(reference_words.size())};
  ++utterances_;
}

ErrorRate& ErrorRate::operator+=(const ErrorRate& other) {
  characters_ += other.characters_;
  words_ += other.words_;
  utterances_ += other.utterances_;
  return *this;
}

}  // namespace sonata
