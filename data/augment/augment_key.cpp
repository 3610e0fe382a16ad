#include "data/augment/augment_key.h"

#include "base/error.h"

namespace sonata {

uint64_t augment_key(int64_t epoch, int64_t item) {
  SONATA_CHECK(epoch >= 0 && epoch < (int64_t(1) << 24), "augment_key: epoch ", epoch,
               " is outside [0, 2^24)");
  SONATA_CHECK(item >= 0 && item < (int64_t(1) << 40), "augment_key: item ", item,
               " is outside [0, 2^40)");
  return uint64_t(epoch) << 40 | uint64_t(item);
}

}  // namespace sonata
