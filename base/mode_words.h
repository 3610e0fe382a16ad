#pragma once
// A mode's words (--precision fp16, a checkpoint's saved image-features cqt), written once
// beside its enum with SONATA_SPELLINGS, so that a word is read into the enum in one place
// and the code compares enums, never words. The trainer's options read theirs through
// train/option_choice.h; a checkpoint's reader (tools/inference) reads a saved word back with
// mode_of_word.
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sonata {

template <class Mode>
struct Spelling {
  Mode mode;
  const char* word;
};

// Each mode's words, in --help's order; specialised beside the enum (SONATA_SPELLINGS).
template <class Mode>
std::span<const Spelling<Mode>> spellings();

// The mode `word` names; nothing for a word outside its spellings.
template <class Mode>
std::optional<Mode> mode_of_word(std::string_view word) {
  for (const Spelling<Mode>& spelling : spellings<Mode>())
    if (word == spelling.word) return spelling.mode;
  return std::nullopt;
}

// "?" for a mode no word names (an internal one, as a silent rank's progress).
template <class Mode>
const char* word_of_mode(Mode mode) {
  for (const Spelling<Mode>& spelling : spellings<Mode>())
    if (spelling.mode == mode) return spelling.word;
  return "?";
}

// "fp32, fp16 or bf16": the words a refusal offers.
template <class Mode>
std::string mode_words() {
  const auto all = spellings<Mode>();
  std::string text;
  for (size_t i = 0; i < all.size(); ++i)
    text += std::string(i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + all[i].word;
  return text;
}

}  // namespace sonata

// Mode's words, in --help's order: SONATA_SPELLINGS(Precision, {Precision::fp32, "fp32"}, ...),
// at namespace sonata's scope beside the enum.
#define SONATA_SPELLINGS(Mode, ...)                           \
  template <>                                                 \
  inline std::span<const Spelling<Mode>> spellings<Mode>() {  \
    static constexpr Spelling<Mode> kWords[] = {__VA_ARGS__}; \
    return kWords;                                            \
  }
