#include "data/text/normalise.h"

#include "base/error.h"
#include "data/text/utf8.h"

namespace sonata {
namespace {

char32_t lower_case(char32_t c) {
  if (c >= U'A' && c <= U'Z') return c + 0x20;
  if (c < 0xC0) return c;
  if (c <= 0xDE) return c == 0xD7 ? c : c + 0x20;  // Latin-1 À..Þ, not ×
  // Latin Extended-A pairs each capital with the next code point; the pairs start on even
  // code points except in 0x139..0x148 and 0x179..0x17E. 0x130 İ, 0x131 ı, 0x138 ĸ, 0x149 ŉ
  // and 0x17F ſ have no one-to-one partner here.
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x178) return 0xFF;  // Ÿ
    const bool odd_pairs = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    const bool unpaired = c == 0x130 || c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17F;
    if (unpaired) return c;
    return (c % 2 == 1) == odd_pairs ? c + 1 : c;
  }
  if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 0x20;  // Greek Α..Ϋ
  if (c == 0x386) return 0x3AC;                                 // Ά
  if (c >= 0x388 && c <= 0x38A) return c + 0x25;                // Έ Ή Ί
  if (c == 0x38C) return 0x3CC;                                 // Ό
  if (c == 0x38E || c == 0x38F) return c + 0x3F;                // Ύ Ώ
  if (c >= 0x410 && c <= 0x42F) return c + 0x20;                // Cyrillic А..Я
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;                // Cyrillic Ѐ..Џ
  return c;
}

bool is_apostrophe(char32_t c) {
  return c == 0x2018 || c == 0x2019 || c == 0x02BC;
}

std::string quoted(std::string_view transcript, std::string_view where) {
  std::string text = str("transcript '", transcript, "'");
  if (!where.empty()) text += str(" (", where, ")");
  return text;
}

}  // namespace

bool is_white_space(char32_t c) {
  return c == U' ' || (c >= U'\t' && c <= U'\r') || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool is_control(char32_t c) {
  return c < 0x20 || (c >= 0x7F && c < 0xA0);
}

char32_t normalise_character(char32_t c) {
  if (is_white_space(c)) return U' ';
  if (is_apostrophe(c)) return U'\'';
  return lower_case(c);
}

NormalisedText normalise(const Vocabulary& vocabulary, std::string_view transcript,
                         std::string_view where) {
  const std::u32string characters = decode_utf8(transcript, quoted(transcript, where));
  NormalisedText out;
  out.text.reserve(transcript.size());
  // A space is written only once the next kept character arrives, so runs of whitespace,
  // whitespace around dropped characters and whitespace at either end all vanish.
  bool space_pending = false;
  for (const char32_t raw : characters) {
    const char32_t c = normalise_character(raw);
    if (c == U' ') {
      space_pending = vocabulary.has_space();
    } else if (vocabulary.contains(c)) {
      if (space_pending && !out.text.empty()) out.text.push_back(' ');
      space_pending = false;
      append_utf8(out.text, c);
    } else {
      ++out.dropped;
      ++out.dropped_characters[c];
    }
  }
  if (out.text.empty()) {
    SONATA_CHECK(out.dropped > 0, quoted(transcript, where), " is empty");
    std::string held;
    for (const auto& [c, count] : out.dropped_characters) {
      if (held.size() > 60) {
        held += ", ...";
        break;
      }
      held += (held.empty() ? "" : ", ") + describe_code_point(c);
    }
    SONATA_CHECK(false, quoted(transcript, where),
                 " has no character in the vocabulary (it holds only ", held, ")");
  }
  return out;
}

}  // namespace sonata
