#pragma once
// Character and word error rates of a speech recognizer, computed over a corpus the way
// torchaudio and NeMo compute corpus WER: the edit distances of every utterance summed, then
// divided by the summed reference lengths (not the mean of per-utterance rates, which would
// weigh a two-word utterance like a fifty-word one).
//
// Characters are Unicode code points and the space between words counts as one (as in
// NeMo's CER over list(text)); words are the runs of non-space characters. Compare
// normalised text (normalise.h) on both sides.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sonata {

// Levenshtein distance: the fewest insertions, deletions and substitutions that turn the
// reference into the hypothesis. O(|reference| * |hypothesis|) time, O(min of the two)
// memory.
int64_t edit_distance(const std::vector<int64_t>& reference,
                      const std::vector<int64_t>& hypothesis);
int64_t edit_distance(std::u32string_view reference, std::u32string_view hypothesis);
int64_t edit_distance(const std::vector<std::string>& reference,
                      const std::vector<std::string>& hypothesis);

// UTF-8 text; throws sonata::Error naming the text when it is not valid UTF-8.
int64_t character_edit_distance(std::string_view reference, std::string_view hypothesis);
int64_t word_edit_distance(std::string_view reference, std::string_view hypothesis);
// Splits on runs of ASCII whitespace; leading and trailing whitespace yields no empty word.
std::vector<std::string> split_words(std::string_view text);

// Edits summed over utterances, and the reference length they are measured against.
struct EditCounts {
  int64_t edits = 0;
  int64_t reference_length = 0;

  // edits / max(reference_length, 1): an empty reference (or corpus) gives the number of
  // inserted units rather than a division by zero, so 0 when nothing was inserted.
  double rate() const;
  EditCounts& operator+=(const EditCounts& other);
};

class ErrorRate {
 public:
  // One utterance: its reference transcript and the recognizer's hypothesis.
  void add(std::string_view reference, std::string_view hypothesis);
  // Sums another accumulator in (e.g. one per data-parallel rank, gathered).
  ErrorRate& operator+=(const ErrorRate& other);

  const EditCounts& characters() const { return characters_; }
  const EditCounts& words() const { return words_; }
  double cer() const { return characters_.rate(); }
  double wer() const { return words_.rate(); }
  int64_t utterances() const { return utterances_; }

 private:
  EditCounts characters_, words_;
  int64_t utterances_ = 0;
};

}  // namespace sonata
