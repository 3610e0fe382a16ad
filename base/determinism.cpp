#include "base/determinism.h"

#include <atomic>

namespace sonata {
namespace {
std::atomic<bool> deterministic{false};
}  // namespace

void set_deterministic_algorithms(bool enabled) { deterministic = enabled; }
bool deterministic_algorithms() { return deterministic; }

}  // namespace sonata
