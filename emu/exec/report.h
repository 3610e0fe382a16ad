#pragma once
// The text of a failed check, in compute-sanitizer's layout: the check on the first line,
// then the kernel, the thread and the block, then the details (address, allocation, the
// other thread of a race...).
#include <string>

#include "emu/include/vector_types.h"

namespace sonata::emu::exec {

std::string format_report(const std::string& check, const std::string& kernel, uint3 block,
                          uint3 thread, const std::string& detail);

}  // namespace sonata::emu::exec
