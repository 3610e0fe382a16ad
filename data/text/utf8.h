#pragma once
// UTF-8 to code points and back. Transcripts and vocabulary files are UTF-8; everything that
// counts characters (the vocabulary, normalisation, CER) works on code points, so that 'é' is
// one character, not two bytes.
#include <string>
#include <string_view>

namespace sonata {

// Throws sonata::Error naming `what` (e.g. "transcript 'abc'") and the byte offset on
// malformed input: a bad lead or continuation byte, a truncated sequence, an overlong form,
// a surrogate or a value past U+10FFFF.
std::u32string decode_utf8(std::string_view text, std::string_view what);

std::string encode_utf8(char32_t code_point);
void append_utf8(std::string& out, char32_t code_point);
std::string encode_utf8(std::u32string_view code_points);

// "'a'", or "U+0009" for a control character, for error messages and reports.
std::string describe_code_point(char32_t code_point);

}  // namespace sonata
