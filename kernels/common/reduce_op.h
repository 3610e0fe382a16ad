#pragma once
#include <cstdint>

namespace sonata::kernels {
enum class ReduceOp : uint8_t { sum, max, min };
}
