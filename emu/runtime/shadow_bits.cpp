#include "emu/runtime/shadow_bits.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sonata::emu {

namespace {
// Shadows up to this size live on the heap and are cleared with memset: a mapping each would
// cost two system calls per allocation and one kernel mapping per block (the process limit
// on mappings is about 65 000); larger ones are mapped, so that only written pages commit.
constexpr size_t kMappedShadowBytes = size_t(64) << 10;
}  // namespace

ShadowBits::~ShadowBits() {
  release();
}

void ShadowBits::release() {
  if (!words_) return;
  if (mapped_)
    munmap(words_, bytes_);
  else
    std::free(words_);
  words_ = nullptr;
}

void ShadowBits::allocate(size_t bits) {
  release();
  bytes_ = (bits + 63) / 64 * sizeof(uint64_t);
  mapped_ = bytes_ >= kMappedShadowBytes;
  void* memory = nullptr;
  if (mapped_) {
    memory = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (memory == MAP_FAILED) memory = nullptr;
  } else {
    memory = std::calloc(bytes_, 1);
  }
  if (!memory) {
    std::fprintf(stderr, "sonata emu: cannot allocate %zu bytes for an initcheck shadow\n", bytes_);
    std::abort();
  }
  words_ = static_cast<uint64_t*>(memory);
}

void ShadowBits::clear_all() {
  if (!words_) return;
  if (mapped_)
    madvise(words_, bytes_, MADV_DONTNEED);  // private anonymous pages read as zero again
  else
    std::memset(words_, 0, bytes_);
}

void ShadowBits::clear_words(size_t first, size_t end) {
  if (!words_ || first >= end) return;
  const auto clear = [this](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i)
      if (words_[i]) words_[i] = 0;  // an untouched page stays uncommitted
  };
  if (mapped_) {
    constexpr size_t kPageWords = 4096 / sizeof(uint64_t);  // words_ is page-aligned
    const size_t page_first = (first + kPageWords - 1) / kPageWords * kPageWords;
    const size_t page_end = end / kPageWords * kPageWords;
    if (page_end > page_first) {
      clear(first, page_first);
      madvise(words_ + page_first, (page_end - page_first) * sizeof(uint64_t), MADV_DONTNEED);
      clear(page_end, end);
      return;
    }
  }
  clear(first, end);
}

}  // namespace sonata::emu
