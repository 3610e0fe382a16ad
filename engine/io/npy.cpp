#include "engine/io/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "engine/io/file_bytes.h"
#include "engine/storage.h"

namespace sonata {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct Descr {
  const char* text;
  DType dtype;
};
// '<' little-endian, '|' byte-sized (no order).
constexpr Descr kDescrs[] = {{"<f2", DType::f16},    {"<f4", DType::f32}, {"<f8", DType::f64},
                             {"<i4", DType::i32},    {"<i8", DType::i64}, {"|u1", DType::u8},
                             {"|b1", DType::boolean}};

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
std::string dict_value(std::string_view header, std::string_view key, const std::string& source) {
  std::string quoted(1, '\'');
  quoted.append(key).push_back('\'');
  const size_t at = header.find(quoted);
  if (at == std::string_view::npos) throw Error(str(source, ": .npy header has no ", quoted));
  size_t colon = header.find(':', at + quoted.size());
  if (colon == std::string_view::npos) throw Error(str(source, ": .npy header is malformed"));
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string_view::npos) throw Error(str(source, ": .npy header is malformed"));
  size_t end;
  if (header[start] == '\'') {
    end = header.find('\'', start + 1);
    if (end == std::string_view::npos) throw Error(str(source, ": .npy header is malformed"));
    return std::string(header.substr(start + 1, end - start - 1));
  }
  if (header[start] == '(') {
    end = header.find(')', start);
    if (end == std::string_view::npos) throw Error(str(source, ": .npy header is malformed"));
    return std::string(header.substr(start, end - start + 1));
  }
  end = header.find_first_of(",}", start);
  if (end == std::string_view::npos) throw Error(str(source, ": .npy header is malformed"));
  return std::string(header.substr(start, end - start));
}

Shape parse_shape(const std::string& text, const std::string& source) {
  Shape shape;
  size_t i = 1;  // after '('
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i >= text.size() || text[i] == ')') break;
    if (text[i] < '0' || text[i] > '9')
      throw Error(str(source, ": .npy shape ", text, " is not a tuple of sizes"));
    int64_t value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (value > (int64_t(1) << 50))
        throw Error(str(source, ": .npy shape ", text, " is too large"));
      value = value * 10 + (text[i++] - '0');
    }
    shape.push_back(value);
  }
  return shape;
}

}  // namespace

NpyLayout parse_npy_layout(const uint8_t* data, size_t size, const std::string& source) {
  if (size < 10 || std::memcmp(data, kMagic, 6) != 0)
    throw Error(str(source, ": not a .npy file (bad magic)"));
  const int major = data[6];
  size_t header_length, header_start;
  if (major == 1) {
    header_length = size_t(data[8]) | (size_t(data[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) throw Error(str(source, ": truncated .npy header"));
    header_length = size_t(data[8]) | (size_t(data[9]) << 8) | (size_t(data[10]) << 16) |
                    (size_t(data[11]) << 24);
    header_start = 12;
  } else {
    throw Error(str(source, ": .npy format version ", major, " is not supported"));
  }
  if (header_length > size - header_start)
    throw Error(str(source, ": .npy header runs past the end of the file"));
  const std::string_view header(reinterpret_cast<const char*>(data + header_start), header_length);
  const std::string descr = dict_value(header, "descr", source);
  const std::string fortran = dict_value(header, "fortran_order", source);
  const Shape shape = parse_shape(dict_value(header, "shape", source), source);
  if (fortran != "False")
    throw Error(str(source, ": Fortran-ordered .npy arrays are not supported (save with C order)"));
  DType dtype = DType::f32;
  bool known = false;
  for (const Descr& d : kDescrs)
    if (descr == d.text) dtype = d.dtype, known = true;
  if (!known)
    throw Error(str(source, ": .npy dtype '", descr,
                    "' is not supported (little-endian f2, f4, f8, i4, i8, u1, b1)"));
  const size_t payload = size - header_start - header_length;
  int64_t numel = 1, span = 1;
  for (int64_t s : shape) {
    if (s != 0 && numel > int64_t(payload) / s + 1)
      throw Error(str(source, ": .npy shape ", shape_str(shape), " is larger than the file"));
    numel *= s;
    // An empty array passes the size check whatever its other sizes; its strides (which
    // count a 0 as 1) must still fit in int64.
    if (s > 1 && span > std::numeric_limits<int64_t>::max() / s)
      throw Error(str(source, ": .npy shape ", shape_str(shape), " is too large"));
    span *= std::max<int64_t>(s, 1);
  }
  const size_t bytes = size_t(numel) * dtype_size(dtype);
  if (bytes != payload)
    throw Error(str(source, ": .npy data holds ", payload, " bytes but shape ", shape_str(shape),
                    " of ", dtype_name(dtype), " needs ", bytes));
  const uint8_t* values = data + header_start + header_length;
  // Any other byte in a bool would be undefined behaviour wherever the tensor is read.
  if (dtype == DType::boolean &&
      std::any_of(values, values + bytes, [](uint8_t b) { return b > 1; }))
    throw Error(str(source, ": .npy bool data holds bytes other than 0 and 1"));
  return {dtype, shape, header_start + header_length};
}

Tensor parse_npy(const uint8_t* data, size_t size, const std::string& source) {
  const NpyLayout layout = parse_npy_layout(data, size, source);
  Tensor t = empty(layout.shape, TensorOptions{}.with(layout.dtype));
  if (size > layout.data_offset)
    std::memcpy(t.data_ptr(), data + layout.data_offset, size - layout.data_offset);
  return t;
}

Tensor load_npy(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  return parse_npy(bytes.data(), bytes.size(), path);
}

Tensor map_npy(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(str("cannot open ", path, ": ", std::strerror(errno)));
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    const int error = errno;
    ::close(fd);
    throw Error(str("cannot read ", path, ": ", std::strerror(error)));
  }
  const size_t size = size_t(status.st_size);
  void* base = size ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  const int map_error = errno;
  ::close(fd);  // the mapping keeps the file
  if (size && base == MAP_FAILED)
    throw Error(str("cannot map ", path, ": ", std::strerror(map_error)));
  auto unmap = [base, size](void*) {
    if (base) ::munmap(base, size);
  };
  NpyLayout layout;
  try {
    layout = parse_npy_layout(static_cast<const uint8_t*>(base), size, path);
  } catch (...) {
    unmap(nullptr);
    throw;
  }
  auto impl = std::make_shared<TensorImpl>();
  // Private read-only pages: writing through the tensor would fault, so callers copy first.
  impl->storage = std::make_shared<Storage>(static_cast<uint8_t*>(base) + layout.data_offset,
                                            size - layout.data_offset, Device::cpu(), unmap);
  impl->shape = layout.shape;
  impl->strides = contiguous_strides(layout.shape);
  impl->dtype = layout.dtype;
  return Tensor(impl);
}

void save_npy(const std::string& path, const Tensor& tensor) {
  const Tensor host = tensor.detach().to(Device::cpu()).contiguous();
  const char* descr = nullptr;
  for (const Descr& d : kDescrs)
    if (d.dtype == host.dtype() && !descr) descr = d.text;
  if (!descr) throw Error(str("save_npy: dtype ", dtype_name(host.dtype()), " has no .npy form"));
  std::string shape = "(";
  for (int64_t s : host.shape()) shape += std::to_string(s) + ", ";
  if (host.dim() > 1) shape.resize(shape.size() - 2);
  if (host.dim() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header =
      str("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Pad with spaces so that the data starts on a 64-byte boundary, ending in a newline.
  const bool v2 = header.size() + 11 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes(kMagic, 6);
  bytes += char(v2 ? 2 : 1);
  bytes += char(0);
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) bytes += char((header.size() >> (8 * i)) & 0xff);
  bytes += header;
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(str("cannot write '", temporary, "': ", std::strerror(errno)));
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.write(static_cast<const char*>(host.data_ptr()),
              std::streamsize(size_t(host.numel()) * dtype_size(host.dtype())));
    if (!out) throw Error(str("writing '", temporary, "' failed"));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    throw Error(str("renaming '", temporary, "' to '", path, "' failed: ", std::strerror(errno)));
}

}  // namespace sonata
