#include "engine/io/file_bytes.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "base/error.h"

namespace sonata {

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(str("cannot open '", path, "': ", std::strerror(errno)));
  const std::streamsize size = in.tellg();
  in.seekg(0);
  std::vector<uint8_t> bytes(static_cast<size_t>(std::max<std::streamsize>(size, 0)));
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), size))
    throw Error(str("cannot read '", path, "'"));
  return bytes;
}

}  // namespace sonata
