#pragma once
// Transcript normalisation for a character vocabulary, as a NeMo or torchaudio recipe does it
// before training a CTC model: lower-case, one space between words, typographic apostrophes
// made ASCII, and every character the vocabulary lacks dropped and counted, never spelled
// out ("7" is dropped, not turned into "seven": number expansion is a text-normalisation
// model's job, and silently inventing words would corrupt the labels).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "data/text/vocabulary.h"

namespace sonata {

struct NormalisedText {
  std::string text;  // UTF-8, only vocabulary symbols, single spaces, no space at either end
  // Characters dropped because the vocabulary lacks them (after the mapping below), in total
  // and per distinct character, for a corpus report. Whitespace is never counted: in a
  // vocabulary without ' ' it is simply removed.
  int64_t dropped = 0;
  std::map<char32_t, int64_t> dropped_characters;
};

// Maps every whitespace character (tab, newline, no-break space, ...) to one space between
// words and trims both ends, maps U+2018, U+2019 and U+02BC to '\'', lower-cases (see
// normalise_character), then drops what the vocabulary lacks. A transcript left empty throws
// sonata::Error naming it ("transcript '123' has no character in the vocabulary"), and `where`
// (e.g. "train.jsonl line 12") when given; so does one that is not valid UTF-8.
NormalisedText normalise(const Vocabulary& vocabulary, std::string_view transcript,
                         std::string_view where = {});

// The per-character part of normalise: ' ' for whitespace, '\'' for the apostrophes above,
// else the lower case of ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic letters (a
// one-to-one mapping, not full Unicode case folding: 'ß', 'İ' and the like are unchanged).
char32_t normalise_character(char32_t code_point);
bool is_white_space(char32_t code_point);
// C0 and C1 control characters and DEL, whitespace controls included.
bool is_control(char32_t code_point);

}  // namespace sonata
