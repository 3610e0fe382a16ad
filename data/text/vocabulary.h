#pragma once
// The characters a CTC speech recognizer emits, and their ids (the class index in the model's
// output [T, N, C]). Id 0 is always the CTC blank, which has no text; every other id is one
// Unicode code point.
//
// The default vocabulary is the DeepSpeech2 / LibriSpeech English one, 29 symbols:
//   0 blank, 1 ' ', 2 '\'', 3..28 'a'..'z'.
//
// A vocabulary file is UTF-8 text with one symbol per line, in id order starting at 1 (the
// blank is implied at 0 and is not written). Each line holds exactly one code point; the line
// `<space>` stands for ' ' (so that the file survives editors that strip trailing spaces; a
// line holding a single space is accepted too). A trailing '\r' (CRLF files) is ignored, and
// so is the newline at the end of the last line. Rejected with one sentence naming the file
// and the line: duplicates, empty lines, lines of more than one code point (including
// `<blank>`: the blank is implied), whitespace other than ' ', control characters, and
// symbols that normalisation can never produce (upper-case letters, since transcripts are
// lower-cased first; the typographic apostrophe U+2019, since it becomes '\'').
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sonata {

class Vocabulary {
 public:
  static constexpr int64_t kBlank = 0;

  // blank, ' ', '\'', a..z.
  Vocabulary();
  static Vocabulary load(const std::string& path);
  // The text of a vocabulary file; `source` names it in errors.
  static Vocabulary parse(std::string_view text, const std::string& source);
  // Ids 1.. in the order given (the blank is added at 0), checked as a file's lines are.
  static Vocabulary from_symbols(std::u32string_view symbols, const std::string& source);

  // Number of classes, blank included: the C of the model's output.
  int64_t size() const { return int64_t(symbols_.size()); }
  // The code point of an id; the blank's is U+0000. Throws on an id outside [0, size()).
  char32_t symbol(int64_t id) const;
  // The id of a code point, or nullopt when it is not in the vocabulary.
  std::optional<int64_t> find(char32_t code_point) const;
  // As find, but a code point outside the vocabulary throws naming it.
  int64_t id(char32_t code_point) const;
  bool contains(char32_t code_point) const { return find(code_point).has_value(); }
  bool has_space() const { return contains(U' '); }

  // Normalised text (see normalise.h) to ids; a character outside the vocabulary throws
  // naming it and the text. The blank never results.
  std::vector<int64_t> encode(std::string_view text) const;
  // Ids to UTF-8 text. The blank contributes nothing; an id outside [0, size()) throws.
  // Decoding does not collapse repeats: CTC decoding has already done that.
  std::string decode(const std::vector<int64_t>& ids) const;

  // The file format above, `<space>` included: save(...) then load(...) gives this vocabulary.
  std::string to_file_text() const;
  void save(const std::string& path) const;

 private:
  explicit Vocabulary(std::u32string symbols);

  std::u32string symbols_;  // [0] is the blank
  std::unordered_map<char32_t, int64_t> ids_;
};

}  // namespace sonata
