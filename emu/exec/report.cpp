#include "emu/exec/report.h"

#include <sstream>

namespace sonata::emu::exec {

std::string format_report(const std::string& check, const std::string& kernel, uint3 block,
                          uint3 thread, const std::string& detail) {
  std::ostringstream out;
  out << "========= " << check << "\n";
  out << "=========     in kernel " << kernel << "\n";
  out << "=========     by thread (" << thread.x << ',' << thread.y << ',' << thread.z
      << ") in block (" << block.x << ',' << block.y << ',' << block.z << ")\n";
  std::istringstream lines(detail);
  for (std::string line; std::getline(lines, line);) out << "=========     " << line << "\n";
  return out.str();
}

}  // namespace sonata::emu::exec
