#pragma once
// A mode option's value (--precision fp16, --schedule cosine): an enum, parsed once from the
// words the user wrote (the command line, a config file, a checkpoint's saved options) by
// its spelling table (option_modes.h), so that the code compares enums, never words. A word
// outside the table is kept as written, for TrainerOptions::check's refusal in the user's
// words; value() of such a choice is a bug (check() runs first).
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/mode_words.h"

namespace sonata {

template <class Mode>
class Choice {
 public:
  Choice(Mode mode) : mode_(mode), word_(word_of_mode(mode)) {}  // NOLINT: a default is a mode
  Choice(const char* word) { *this = std::string(word); }        // NOLINT: as the user writes it
  Choice(const std::string& word) { *this = word; }              // NOLINT

  Choice& operator=(const char* word) { return *this = std::string(word); }
  // CLI11 and config files assign the word as written.
  Choice& operator=(const std::string& word) {
    word_ = word;
    const std::optional<Mode> mode = mode_of_word<Mode>(word);
    known_ = mode.has_value();
    if (known_) mode_ = *mode;
    return *this;
  }

  bool known() const { return known_; }
  Mode value() const {
    SONATA_CHECK(known_, "mode '", word_, "' used before TrainerOptions::check refused it");
    return mode_;
  }
  const std::string& word() const { return word_; }
  bool operator==(Mode mode) const { return known_ && mode_ == mode; }
  // The word as written: for the tests of the parsing, which read what the user wrote.
  bool operator==(std::string_view word) const { return word_ == word; }

  // "fp32, fp16 or bf16": the words a refusal offers.
  static std::string words() { return mode_words<Mode>(); }

 private:
  Mode mode_{};
  std::string word_;
  bool known_ = true;
};

// --help's defaults and messages show the word.
template <class Mode>
std::ostream& operator<<(std::ostream& out, const Choice<Mode>& choice) {
  return out << choice.word();
}

// The checkpoint's JSON and config files keep the word (today's strings, so that old
// checkpoints and configs load).
template <class Json, class Mode>
void to_json(Json& json, const Choice<Mode>& choice) {
  json = choice.word();
}

}  // namespace sonata
