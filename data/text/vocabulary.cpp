#include "data/text/vocabulary.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>

#include "base/error.h"
#include "data/text/normalise.h"
#include "data/text/utf8.h"

namespace sonata {
namespace {

constexpr std::string_view kSpaceLine = "<space>";
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// Rejects what could never be matched by a normalised transcript, or would be ambiguous.
// `where(i)` names symbol i (0-based, blank excluded) in an error.
void check_symbols(std::u32string_view symbols, const std::function<std::string(size_t)>& where) {
  std::unordered_map<char32_t, size_t> first;
  for (size_t i = 0; i < symbols.size(); ++i) {
    const char32_t c = symbols[i];
    SONATA_CHECK(!is_control(c), where(i), " is the control character ", describe_code_point(c),
                 ", which cannot be a symbol");
    const char32_t normal = normalise_character(c);
    SONATA_CHECK(normal == c, where(i), " is ", describe_code_point(c),
                 ", which transcripts never contain: normalisation turns it into ",
                 describe_code_point(normal));
    const auto [seen, added] = first.emplace(c, i);
    SONATA_CHECK(added, where(i), " repeats ", describe_code_point(c), ", already id ",
                 seen->second + 1);
  }
}

}  // namespace

Vocabulary::Vocabulary() : Vocabulary(U" 'abcdefghijklmnopqrstuvwxyz") {}

Vocabulary::Vocabulary(std::u32string symbols) : symbols_(std::u32string(1, U'\0') + symbols) {
  for (size_t i = 1; i < symbols_.size(); ++i) ids_.emplace(symbols_[i], int64_t(i));
}

Vocabulary Vocabulary::from_symbols(std::u32string_view symbols, const std::string& source) {
  SONATA_CHECK(!symbols.empty(), "vocabulary ", source, " holds no symbol");
  check_symbols(symbols,
                [&](size_t i) { return str("symbol ", i + 1, " of vocabulary ", source); });
  return Vocabulary(std::u32string(symbols));
}

Vocabulary Vocabulary::parse(std::string_view text, const std::string& source) {
  const std::string file = str("vocabulary file '", source, "'");
  if (text.starts_with(kByteOrderMark)) text.remove_prefix(kByteOrderMark.size());
  if (text.ends_with('\n')) text.remove_suffix(1);
  SONATA_CHECK(!text.empty(), file, " holds no symbol");
  std::u32string symbols;
  size_t line_number = 0;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (line.ends_with('\r')) line.remove_suffix(1);
    const std::string place = str(file, " line ", line_number);
    SONATA_CHECK(!line.empty(), place, " is empty (one symbol per line, '<space>' for ' ')");
    if (line == kSpaceLine) {
      symbols.push_back(U' ');
      continue;
    }
    const std::u32string characters = decode_utf8(line, place);
    SONATA_CHECK(characters.size() == 1, place, " holds '", line,
                 "', not one character: each line is one Unicode code point, and the blank is "
                 "implied at id 0");
    symbols.push_back(characters[0]);
  }
  check_symbols(symbols, [&](size_t i) { return str(file, " line ", i + 1); });
  return Vocabulary(std::move(symbols));
}

Vocabulary Vocabulary::load(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  SONATA_CHECK(file.good(), "cannot open vocabulary file '", path, "'");
  std::ostringstream text;
  text << file.rdbuf();
  SONATA_CHECK(!file.bad(), "cannot read vocabulary file '", path, "'");
  return parse(text.str(), path);
}

char32_t Vocabulary::symbol(int64_t id) const {
  SONATA_CHECK(id >= 0 && id < size(), "symbol id ", id, " is outside the vocabulary's [0, ",
               size(), ")");
  return symbols_[size_t(id)];
}

std::optional<int64_t> Vocabulary::find(char32_t code_point) const {
  const auto found = ids_.find(code_point);
  if (found == ids_.end()) return std::nullopt;
  return found->second;
}

int64_t Vocabulary::id(char32_t code_point) const {
  const std::optional<int64_t> found = find(code_point);
  SONATA_CHECK(found.has_value(), "the character ", describe_code_point(code_point),
               " is not in the vocabulary");
  return *found;
}

std::vector<int64_t> Vocabulary::encode(std::string_view text) const {
  const std::string what = str("text '", text, "'");
  std::vector<int64_t> ids;
  for (const char32_t c : decode_utf8(text, what)) {
    const std::optional<int64_t> found = find(c);
    SONATA_CHECK(found.has_value(), "the character ", describe_code_point(c), " in ", what,
                 " is not in the vocabulary; normalise transcripts before encoding them");
    ids.push_back(*found);
  }
  return ids;
}

std::string Vocabulary::decode(const std::vector<int64_t>& ids) const {
  std::string text;
  text.reserve(ids.size());
  for (const int64_t id : ids)
    if (id != kBlank) append_utf8(text, symbol(id));
  return text;
}

std::string Vocabulary::to_file_text() const {
  std::string text;
  for (size_t i = 1; i < symbols_.size(); ++i) {
    if (symbols_[i] == U' ')
      text += kSpaceLine;
    else
      append_utf8(text, symbols_[i]);
    text.push_back('\n');
  }
  return text;
}

void Vocabulary::save(const std::string& path) const {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  SONATA_CHECK(file.good(), "cannot create vocabulary file '", path, "'");
  file << to_file_text();
  file.close();
  SONATA_CHECK(!file.fail(), "cannot write vocabulary file '", path, "'");
}

}  // namespace sonata
