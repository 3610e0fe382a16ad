#include "data/text/utf8.h"

#include <cstdint>
#include <cstdio>

#include "base/error.h"

namespace sonata {

std::u32string decode_utf8(std::string_view text, std::string_view what) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<uint8_t>(text[i]);
    int extra = 0;
    char32_t value = 0, smallest = 0;
    if (lead < 0x80) {
      value = lead;
    } else if ((lead & 0xE0) == 0xC0) {
      extra = 1, value = lead & 0x1F, smallest = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      extra = 2, value = lead & 0x0F, smallest = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      extra = 3, value = lead & 0x07, smallest = 0x10000;
    } else {
      SONATA_CHECK(false, what, " is not valid UTF-8: byte ", i, " cannot start a character");
    }
    SONATA_CHECK(i + size_t(extra) < text.size(), what,
                 " is not valid UTF-8: the character at byte ", i, " is cut short");
    for (int k = 1; k <= extra; ++k) {
      const auto next = static_cast<uint8_t>(text[i + size_t(k)]);
      SONATA_CHECK((next & 0xC0) == 0x80, what, " is not valid UTF-8: the character at byte ", i,
                   " is cut short");
      value = (value << 6) | (next & 0x3F);
    }
    // Overlong forms and surrogates would let two byte strings spell one text.
    SONATA_CHECK(value >= smallest && value <= 0x10FFFF && (value < 0xD800 || value > 0xDFFF), what,
                 " is not valid UTF-8: the character at byte ", i,
                 " is overlong, a surrogate or past U+10FFFF");
    out.push_back(value);
    i += size_t(extra) + 1;
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(char(c));
  } else if (c < 0x800) {
    out.push_back(char(0xC0 | (c >> 6)));
    out.push_back(char(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(char(0xE0 | (c >> 12)));
    out.push_back(char(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(char(0x80 | (c & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (c >> 18)));
    out.push_back(char(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(char(0x80 | (c & 0x3F)));
  }
}

std::string encode_utf8(char32_t code_point) {
  std::string out;
  append_utf8(out, code_point);
  return out;
}

std::string encode_utf8(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (const char32_t c : code_points) append_utf8(out, c);
  return out;
}

std::string describe_code_point(char32_t c) {
  const bool printable = c >= 0x20 && c != 0x7F && !(c >= 0x80 && c < 0xA0);
  if (printable) {
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) about "'" + std::string.
    std::string quoted(1, '\'');
    append_utf8(quoted, c);
    quoted.push_back('\'');
    return quoted;
  }
  char name[16];
  std::snprintf(name, sizeof name, "U+%04X", unsigned(c));
  return name;
}

}  // namespace sonata
