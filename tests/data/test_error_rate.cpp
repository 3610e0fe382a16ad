// Edit distances and corpus error rates: hand-worked examples, the textbook full-matrix
// dynamic programme as an independent truth for the one-row version, corpus sums (not means
// of per-utterance rates), empty references, and characters as code points.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/text/error_rate.h"

using namespace sonata;
using Catch::Contains;

namespace {

// Wagner-Fischer with the whole (|a|+1) x (|b|+1) matrix.
int64_t full_matrix_distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<std::vector<int64_t>> d(a.size() + 1, std::vector<int64_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = int64_t(i);
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = int64_t(j);
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j)
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
  return d[a.size()][b.size()];
}

}  // namespace

TEST_CASE("Edit distance: hand-worked examples", "[error_rate]") {
  // kitten -> sitting: k->s, e->i, insert g.
  CHECK(character_edit_distance("kitten", "sitting") == 3);
  CHECK(character_edit_distance("sitting", "kitten") == 3);
  CHECK(character_edit_distance("flaw", "lawn") == 2);
  CHECK(character_edit_distance("", "abc") == 3);
  CHECK(character_edit_distance("abc", "") == 3);
  CHECK(character_edit_distance("", "") == 0);
  CHECK(character_edit_distance("same", "same") == 0);
  // Code points, not bytes: é is two bytes but one substitution.
  CHECK(character_edit_distance("caf\xC3\xA9", "cafe") == 1);
  CHECK(edit_distance(std::u32string_view(U"caf\u00E9"), std::u32string_view(U"cafe")) == 1);
  CHECK(edit_distance(std::vector<int64_t>{1, 2, 3}, std::vector<int64_t>{1, 3}) == 1);
  CHECK(edit_distance(std::vector<int64_t>{1, 2, 3}, std::vector<int64_t>{}) == 3);
  CHECK(edit_distance(std::vector<int64_t>{1, 2, 3}, std::vector<int64_t>{3, 2, 1}) == 2);
  // the cat sat on the mat -> the cat sit on mat: sat->sit, delete "the".
  CHECK(word_edit_distance("the cat sat on the mat", "the cat sit on mat") == 2);
  CHECK(edit_distance(std::vector<std::string>{"a", "b"}, std::vector<std::string>{"b", "a"}) == 2);
}

TEST_CASE("Edit distance equals the full-matrix dynamic programme", "[error_rate]") {
  std::mt19937 random(1234);
  std::uniform_int_distribution<int> length(0, 7), symbol(0, 2);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<int64_t> a(size_t(length(random))), b(size_t(length(random)));
    for (auto& x : a) x = symbol(random);
    for (auto& x : b) x = symbol(random);
    INFO("trial " << trial);
    REQUIRE(edit_distance(a, b) == full_matrix_distance(a, b));
  }
}

TEST_CASE("split_words: runs of whitespace, nothing empty", "[error_rate]") {
  CHECK(split_words("  a  bc\td \n") == std::vector<std::string>{"a", "bc", "d"});
  CHECK(split_words("").empty());
  CHECK(split_words("   ").empty());
}

TEST_CASE("ErrorRate: CER and WER of one utterance", "[error_rate]") {
  ErrorRate rate;
  rate.add("sitting", "kitten");  // reference first
  CHECK(rate.characters().edits == 3);
  CHECK(rate.characters().reference_length == 7);
  CHECK(rate.cer() == Approx(3.0 / 7.0).epsilon(1e-15));
  CHECK(rate.wer() == 1.0);  // one word, substituted

  ErrorRate words;
  words.add("the cat sat on the mat", "the cat sit on mat");
  CHECK(words.words().edits == 2);
  CHECK(words.words().reference_length == 6);
  CHECK(words.wer() == Approx(2.0 / 6.0).epsilon(1e-15));
  // Characters: "sat" -> "sit" (1) and "the " deleted (4) over 22 characters.
  CHECK(words.characters().edits == 5);
  CHECK(words.cer() == Approx(5.0 / 22.0).epsilon(1e-15));
}

TEST_CASE("ErrorRate: corpus rates sum edits and lengths, not per-utterance rates",
          "[error_rate]") {
  ErrorRate rate;
  rate.add("a b c d", "a b c d");  // 0 of 4 words, 0 of 7 characters
  rate.add("x y", "x z w");        // y->z, insert w: 2 of 2 words; y->z, insert " w": 3 of 3
  CHECK(rate.utterances() == 2);
  CHECK(rate.words().edits == 2);
  CHECK(rate.words().reference_length == 6);
  CHECK(rate.wer() == Approx(2.0 / 6.0).epsilon(1e-15));  // the mean of rates would be 0.5
  CHECK(rate.characters().edits == 3);
  CHECK(rate.characters().reference_length == 10);
  CHECK(rate.cer() == Approx(0.3).epsilon(1e-15));

  // Gathering per-rank accumulators gives the corpus numbers.
  ErrorRate first, second;
  first.add("a b c d", "a b c d");
  second.add("x y", "x z w");
  first += second;
  CHECK(first.words().edits == rate.words().edits);
  CHECK(first.words().reference_length == rate.words().reference_length);
  CHECK(first.characters().edits == rate.characters().edits);
  CHECK(first.utterances() == 2);
}

TEST_CASE("ErrorRate: empty references count insertions over a length of at least 1",
          "[error_rate]") {
  ErrorRate silence;
  CHECK(silence.wer() == 0.0);  // nothing added
  silence.add("", "");
  CHECK(silence.wer() == 0.0);
  CHECK(silence.cer() == 0.0);
  silence.add("", "uh oh");
  CHECK(silence.words().edits == 2);
  CHECK(silence.words().reference_length == 0);
  CHECK(silence.wer() == 2.0);
  CHECK(silence.characters().edits == 5);
  CHECK(silence.cer() == 5.0);
  silence.add("yes", "");
  CHECK(silence.wer() == Approx(3.0 / 1.0));  // 2 insertions + 1 deletion over 1 word
}

TEST_CASE("ErrorRate: text that is not UTF-8 is an error naming it", "[error_rate]") {
  ErrorRate rate;
  REQUIRE_THROWS_WITH(rate.add("ok\xFF", "ok"),
                      Contains("reference 'ok") && Contains("not valid UTF-8"));
  REQUIRE_THROWS_WITH(rate.add("ok", "\xE2\x80"),
                      Contains("hypothesis '") && Contains("cut short"));
  CHECK(rate.utterances() == 0);
}
