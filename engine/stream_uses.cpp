#include "engine/stream_uses.h"

#include <algorithm>

namespace sonata {

void StreamUses::record(StreamHandle stream) {
  if (stream == home_) return;
  const std::lock_guard lock(mutex_);
  if (std::find(others_.begin(), others_.end(), stream) == others_.end()) others_.push_back(stream);
}

bool StreamUses::release(void* data, StreamOrdering& ordering) {
  std::vector<StreamHandle> others;
  {
    const std::lock_guard lock(mutex_);
    others.swap(others_);
  }
  for (StreamHandle used : others)
    if (!ordering.wait_for(home_, used)) return false;
  ordering.free_on(data, home_);
  return true;
}

}  // namespace sonata
