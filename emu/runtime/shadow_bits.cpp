#include "emu/runtime/shadow_bits.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>

namespace sonata::emu {

ShadowBits::~ShadowBits() {
  if (words_) munmap(words_, bytes_);
}

void ShadowBits::allocate(size_t bits) {
  if (words_) munmap(words_, bytes_);
  bytes_ = (bits + 63) / 64 * sizeof(uint64_t);
  void* pages = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (pages == MAP_FAILED) {
    std::fprintf(stderr, "sonata emu: cannot map %zu bytes for an initcheck shadow\n", bytes_);
    std::abort();
  }
  words_ = static_cast<uint64_t*>(pages);
}

void ShadowBits::clear_all() {
  // Private anonymous pages read as zero again after MADV_DONTNEED.
  if (words_) madvise(words_, bytes_, MADV_DONTNEED);
}

}  // namespace sonata::emu
