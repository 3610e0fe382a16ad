// save_safetensors and save_safetensors_streamed (engine/io/safetensors.h): one writer, so
// that a file streamed tensor by tensor is the file written from tensors in hand.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "engine/io/safetensors.h"
#include "engine/io/safetensors_checksum.h"
#include "engine/io/safetensors_header.h"

namespace sonata {
namespace {

namespace checksum = safetensors_checksum;

// `path` + ".tmp", written and renamed over `path` by finish(); removed if never finished.
class TemporaryFile {
 public:
  explicit TemporaryFile(const std::string& path) : path_(path), temporary_(path + ".tmp") {
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd_ < 0) throw Error(str("cannot write '", temporary_, "': ", std::strerror(errno)));
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!finished_) ::unlink(temporary_.c_str());
  }

  void append(const void* data, size_t size) {
    const char* at = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t written = ::write(fd_, at, size);
      if (written < 0) fail("writing");
      at += written;
      size -= size_t(written);
    }
  }
  // Overwrites bytes already appended (the checksum, known once the data is written).
  void write_at(uint64_t offset, const void* data, size_t size) {
    if (::pwrite(fd_, data, size, off_t(offset)) != ssize_t(size)) fail("writing");
  }
  void finish() {
    if (::fsync(fd_) != 0) fail("flushing");
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("flushing");
    if (std::rename(temporary_.c_str(), path_.c_str()) != 0)
      throw Error(
          str("renaming '", temporary_, "' to '", path_, "' failed: ", std::strerror(errno)));
    finished_ = true;
  }

 private:
  [[noreturn]] void fail(const char* what) {
    throw Error(str(what, " '", temporary_, "' failed: ", std::strerror(errno)));
  }

  std::string path_, temporary_;
  int fd_ = -1;
  bool finished_ = false;
};

}  // namespace

TensorSource tensor_source(const NamedTensors& tensors) {
  TensorSource source;
  for (const auto& [name, tensor] : tensors)
    source.specs.push_back({name, tensor.dtype(), tensor.shape()});
  source.fetch = [&tensors](size_t index) { return tensors[index].second; };
  return source;
}

void save_safetensors_streamed(const std::string& path, const TensorSource& source,
                               const Metadata& metadata) {
  SONATA_CHECK(!metadata.count(checksum::kKey), "save_safetensors '", path, "': the metadata key '",
               checksum::kKey, "' is the file's checksum, which save_safetensors writes itself");
  Metadata with_checksum = metadata;
  with_checksum[checksum::kKey] = checksum::kPlaceholder;
  const std::string text = safetensors_header::compose(source.specs, with_checksum, path);
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  const size_t digits_at = checksum::digits_offset(text.data(), text.size(), path);
  checksum::FileChecksum file_checksum(8 + digits_at);
  file_checksum.update(length, 8);
  file_checksum.update(text.data(), text.size());

  TemporaryFile file(path);
  file.append(length, 8);
  file.append(text.data(), text.size());
  for (size_t i = 0; i < source.specs.size(); ++i) {
    const TensorSpec& spec = source.specs[i];
    // Dropped at the end of the iteration: one tensor in hand at a time.
    const Tensor fetched = source.fetch(i);
    SONATA_CHECK(fetched.dtype() == spec.dtype && fetched.shape() == spec.shape,
                 "save_safetensors '", path, "': tensor '", spec.name, "' arrived as ",
                 dtype_name(fetched.dtype()), " ", shape_str(fetched.shape()),
                 " but the header says ", dtype_name(spec.dtype), " ", shape_str(spec.shape));
    const Tensor host = fetched.detach().to(Device::cpu()).contiguous();
    const size_t bytes = size_t(host.numel()) * dtype_size(host.dtype());
    file_checksum.update(host.data_ptr(), bytes);
    file.append(host.data_ptr(), bytes);
  }
  const std::string digits = checksum::format_checksum(file_checksum.value());
  file.write_at(8 + digits_at, digits.data(), digits.size());
  file.finish();
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata) {
  save_safetensors_streamed(path, tensor_source(tensors), metadata);
}

}  // namespace sonata
