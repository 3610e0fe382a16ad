// The character vocabulary and transcript normalisation: the default English symbols by id,
// vocabulary files (UTF-8, <space>, CRLF, BOM) and the one-sentence errors for bad ones,
// and normalisation as a NeMo/torchaudio recipe expects it (digits dropped and counted).
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.h"
#include "data/text/normalise.h"
#include "data/text/vocabulary.h"

using namespace sonata;
using Catch::Contains;

namespace {

std::string temporary_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("sonata_test_" + name)).string();
}

}  // namespace

TEST_CASE("Default vocabulary: blank, space, apostrophe, a..z", "[vocabulary]") {
  const Vocabulary v;
  CHECK(v.size() == 29);
  CHECK(v.symbol(0) == U'\0');
  CHECK(v.symbol(1) == U' ');
  CHECK(v.symbol(2) == U'\'');
  CHECK(v.symbol(3) == U'a');
  CHECK(v.symbol(28) == U'z');
  CHECK(v.id(U'a') == 3);
  CHECK(v.id(U'z') == 28);
  CHECK(v.id(U' ') == 1);
  CHECK_FALSE(v.find(U'A').has_value());
  CHECK_FALSE(v.find(U'7').has_value());
  CHECK_FALSE(v.find(U'\0').has_value());  // the blank is not a character
  REQUIRE_THROWS_WITH(v.id(U'7'), Contains("'7'") && Contains("not in the vocabulary"));
  REQUIRE_THROWS_WITH(v.symbol(29), Contains("symbol id 29 is outside"));
  REQUIRE_THROWS_WITH(v.symbol(-1), Contains("symbol id -1 is outside"));
}

TEST_CASE("Vocabulary encode and decode", "[vocabulary]") {
  const Vocabulary v;
  // i = 3 + 8, t = 3 + 19, ' = 2, s = 3 + 18, space = 1, o = 3 + 14, k = 3 + 10.
  const std::vector<int64_t> ids = {11, 22, 2, 21, 1, 17, 13};
  CHECK(v.encode("it's ok") == ids);
  CHECK(v.decode(ids) == "it's ok");
  CHECK(v.encode("").empty());
  CHECK(v.decode({0, 11, 0, 0, 22, 0}) == "it");  // blanks carry no text
  CHECK(v.decode({11, 11}) == "ii");              // no collapsing: decoding already did it
  REQUIRE_THROWS_WITH(v.encode("it's OK"),
                      Contains("'O'") && Contains("text 'it's OK'") && Contains("normalise"));
  REQUIRE_THROWS_WITH(v.decode({3, 40}), Contains("symbol id 40 is outside"));
}

TEST_CASE("Vocabulary file: one code point per line, <space>, blank implied", "[vocabulary]") {
  const Vocabulary v = Vocabulary::parse("<space>\na\nb\n\xC3\xA9\n", "fr.txt");  // é
  CHECK(v.size() == 5);
  CHECK(v.symbol(1) == U' ');
  CHECK(v.symbol(4) == U'\u00E9');
  CHECK(v.encode("\xC3\xA9 a") == std::vector<int64_t>{4, 1, 2});
  CHECK(v.decode({4, 1, 3}) == "\xC3\xA9 b");

  // CRLF, a byte-order mark, no newline after the last line, a bare space line.
  const Vocabulary crlf = Vocabulary::parse("\xEF\xBB\xBFx\r\n \r\ny", "crlf.txt");
  CHECK(crlf.size() == 4);
  CHECK(crlf.symbol(1) == U'x');
  CHECK(crlf.symbol(2) == U' ');
  CHECK(crlf.symbol(3) == U'y');

  const Vocabulary listed = Vocabulary::from_symbols(U"ab ", "listed");
  CHECK(listed.size() == 4);
  CHECK(listed.id(U' ') == 3);
}

TEST_CASE("Vocabulary file: save then load gives the same vocabulary", "[vocabulary]") {
  const Vocabulary original = Vocabulary::from_symbols(U"\u0142 a\u00F3'", "original");
  CHECK(original.to_file_text() == "\xC5\x82\n<space>\na\n\xC3\xB3\n'\n");
  const std::string path = temporary_path("vocabulary.txt");
  original.save(path);
  const Vocabulary loaded = Vocabulary::load(path);
  std::remove(path.c_str());
  REQUIRE(loaded.size() == original.size());
  for (int64_t id = 0; id < original.size(); ++id) CHECK(loaded.symbol(id) == original.symbol(id));

  const Vocabulary english;
  CHECK(Vocabulary::parse(english.to_file_text(), "english").to_file_text() ==
        english.to_file_text());
}

TEST_CASE("Vocabulary file: bad files name the file and the line", "[vocabulary]") {
  REQUIRE_THROWS_WITH(Vocabulary::parse("a\nb\na\n", "v.txt"),
                      Contains("vocabulary file 'v.txt' line 3 repeats 'a', already id 1"));
  REQUIRE_THROWS_WITH(Vocabulary::parse("a\n\nb\n", "v.txt"),
                      Contains("vocabulary file 'v.txt' line 2 is empty"));
  REQUIRE_THROWS_WITH(Vocabulary::parse("a\nb\n\n", "v.txt"),
                      Contains("vocabulary file 'v.txt' line 3 is empty"));
  REQUIRE_THROWS_WITH(Vocabulary::parse("a\nab\n", "v.txt"),
                      Contains("line 2 holds 'ab', not one character"));
  REQUIRE_THROWS_WITH(Vocabulary::parse("<blank>\na\n", "v.txt"),
                      Contains("line 1 holds '<blank>'") && Contains("blank is implied"));
  REQUIRE_THROWS_WITH(Vocabulary::parse("a\nB\n", "v.txt"),
                      Contains("line 2 is 'B'") && Contains("turns it into 'b'"));
  REQUIRE_THROWS_WITH(Vocabulary::parse("\xE2\x80\x99\n", "v.txt"),  // ’
                      Contains("line 1") && Contains("turns it into '''"));
  REQUIRE_THROWS_WITH(Vocabulary::parse("a\n\t\n", "v.txt"),
                      Contains("line 2 is the control character U+0009"));
  REQUIRE_THROWS_WITH(Vocabulary::parse("a\n\xFF\n", "v.txt"),
                      Contains("line 2 is not valid UTF-8"));
  REQUIRE_THROWS_WITH(Vocabulary::parse("", "v.txt"), Contains("'v.txt' holds no symbol"));
  REQUIRE_THROWS_WITH(Vocabulary::parse("\n", "v.txt"), Contains("'v.txt' holds no symbol"));
  REQUIRE_THROWS_WITH(Vocabulary::from_symbols(U"abca", "listed"),
                      Contains("symbol 4 of vocabulary listed repeats 'a'"));
  REQUIRE_THROWS_WITH(
      Vocabulary::load(temporary_path("no_such_vocabulary.txt")),
      Contains("cannot open vocabulary file") && Contains("no_such_vocabulary.txt"));
}

TEST_CASE("normalise: case, whitespace, apostrophes, dropped characters", "[vocabulary]") {
  const Vocabulary v;
  const NormalisedText hello = normalise(v, "  Hello,\tWORLD!\r\n");
  CHECK(hello.text == "hello world");
  CHECK(hello.dropped == 2);
  CHECK(hello.dropped_characters == std::map<char32_t, int64_t>{{U',', 1}, {U'!', 1}});

  // Digits are dropped and counted, not spelled out; the spaces around them collapse.
  const NormalisedText clock = normalise(v, "It\xE2\x80\x99s 42  O'Clock");  // It’s
  CHECK(clock.text == "it's o'clock");
  CHECK(clock.dropped == 2);
  CHECK(clock.dropped_characters == std::map<char32_t, int64_t>{{U'2', 1}, {U'4', 1}});

  CHECK(normalise(v, "x-ray").text == "xray");
  CHECK(normalise(v,
                  "a\xC2\xA0\xE2\x80\x83"
                  "b")
            .text == "a b");  // no-break and em spaces
  CHECK(normalise(v, "ok").dropped == 0);

  const NormalisedText french = normalise(v,
                                          "\xC3\x87"
                                          "a va");  // Ça va
  CHECK(french.text == "a va");
  CHECK(french.dropped_characters == std::map<char32_t, int64_t>{{U'\u00E7', 1}});  // ç
  const Vocabulary with_cedilla = Vocabulary::from_symbols(U" av\u00E7", "french");
  CHECK(normalise(with_cedilla,
                  "\xC3\x87"
                  "a va")
            .text ==
        "\xC3\xA7"
        "a va");
}

TEST_CASE("normalise: lower case beyond ASCII, and vocabularies without a space", "[vocabulary]") {
  const Vocabulary polish = Vocabulary::from_symbols(U" \u0142\u00F3d\u017A", "polish");
  CHECK(normalise(polish, "\u0141\u00D3D\u0179").text == "\u0142\u00F3d\u017A");  // ŁÓDŹ
  const Vocabulary russian = Vocabulary::from_symbols(U"\u043F\u0440\u0438\u0432\u0435\u0442\u0451",
                                                      "russian");  // привет ё
  CHECK(normalise(russian, "\u041F\u0420\u0418\u0412\u0415\u0422 \u0401").text ==
        "\u043F\u0440\u0438\u0432\u0435\u0442\u0451");  // ПРИВЕТ Ё, no space in the vocabulary
  CHECK(normalise(russian, "\u041F\u0420\u0418 \u0412").dropped == 0);  // whitespace is not counted
  CHECK(normalise_character(U'\u03A9') == U'\u03C9');                   // Ω
  CHECK(normalise_character(U'\u00DF') == U'\u00DF');  // ß has no one-character upper case
  CHECK(normalise_character(U'\u00D7') == U'\u00D7');  // × is not a letter
}

TEST_CASE("normalise: a transcript left empty is an error naming it", "[vocabulary]") {
  const Vocabulary v;
  REQUIRE_THROWS_WITH(
      normalise(v, "123"),
      Contains("transcript '123' has no character in the vocabulary") && Contains("'1', '2', '3'"));
  REQUIRE_THROWS_WITH(normalise(v, "  \t", "train.jsonl line 12"),
                      Contains("transcript '  \t' (train.jsonl line 12) is empty"));
  REQUIRE_THROWS_WITH(normalise(v, ""), Contains("transcript '' is empty"));
  REQUIRE_THROWS_WITH(normalise(v, "caf\xC3"), Contains("transcript 'caf") &&
                                                   Contains("is not valid UTF-8") &&
                                                   Contains("cut short"));
  REQUIRE_THROWS_WITH(normalise(v, "\xC0\xAF"), Contains("overlong"));
}
