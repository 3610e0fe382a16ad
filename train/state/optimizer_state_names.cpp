#include "train/state/optimizer_state_names.h"

#include "base/error.h"

namespace sonata {

int64_t optimizer_state_index(const std::string& name) {
  if (name.rfind("state.", 0) != 0) return -1;
  const size_t dot = name.find('.', 6);
  return dot == std::string::npos ? -1 : std::stoll(name.substr(6, dot - 6));
}

std::string renumbered_optimizer_state(const std::string& name, int64_t index) {
  return str("state.", index, name.substr(name.find('.', 6)));
}

}  // namespace sonata
