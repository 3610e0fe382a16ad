#pragma once
// Whole-file reads for the readers in engine/io/, with the path in any error.
#include <cstdint>
#include <string>
#include <vector>

namespace sonata {

std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace sonata
