#pragma once
// The initcheck shadow of one device block: one bit per byte; a large one in anonymous pages
// that the kernel commits only when written. An emulated H100 has 80 GiB; a test that fills it
// touches the shadow (and the data) only where it writes, so it runs in a fraction of the
// RAM a committed bitmap (capacity / 8 bytes) would take.
#include <cstddef>
#include <cstdint>

namespace sonata::emu {

class ShadowBits {
 public:
  ShadowBits() = default;
  ShadowBits(const ShadowBits&) = delete;
  ShadowBits& operator=(const ShadowBits&) = delete;
  ~ShadowBits();

  // `bits` bits, all clear.
  void allocate(size_t bits);
  // Every bit clear again, its pages given back.
  void clear_all();
  // Words [first, end) clear again: the whole pages among them given back, not written (a
  // large region handed out again must not commit its shadow).
  void clear_words(size_t first, size_t end);
  bool empty() const { return words_ == nullptr; }
  uint64_t& word(size_t index) { return words_[index]; }
  uint64_t word(size_t index) const { return words_[index]; }

 private:
  void release();

  uint64_t* words_ = nullptr;
  size_t bytes_ = 0;
  bool mapped_ = false;
};

}  // namespace sonata::emu
