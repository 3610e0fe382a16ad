#include "emu/libs/nccl_shm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

namespace sonata::emu::nccl {

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    if (data_) munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Segment::~Segment() {
  if (data_) munmap(data_, size_);
}

Segment Segment::create(const std::string& name, size_t bytes, bool exclusive, std::string* error) {
  Segment segment;
  const int flags = O_CREAT | O_RDWR | (exclusive ? O_EXCL : 0);
  const int fd = shm_open(name.c_str(), flags, 0600);
  if (fd < 0) {
    *error = "shm_open(" + name + "): " + std::strerror(errno);
    return segment;
  }
  const size_t mapped = bytes == 0 ? 1 : bytes;
  // Every rank truncates to the same size; growing zero-fills, the same size changes nothing.
  if (ftruncate(fd, off_t(mapped)) != 0) {
    *error = "ftruncate(" + name + "): " + std::strerror(errno);
    close(fd);
    return segment;
  }
  void* data = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (data == MAP_FAILED) {
    *error = "mmap(" + name + "): " + std::strerror(errno);
    return segment;
  }
  segment.data_ = data;
  segment.size_ = mapped;
  return segment;
}

Segment Segment::open(const std::string& name, bool writable, std::string* error) {
  Segment segment;
  const int fd = shm_open(name.c_str(), writable ? O_RDWR : O_RDONLY, 0);
  if (fd < 0) {
    *error = "shm_open(" + name + "): " + std::strerror(errno);
    return segment;
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || info.st_size <= 0) {
    *error = "fstat(" + name + "): empty segment";
    close(fd);
    return segment;
  }
  void* data = mmap(nullptr, size_t(info.st_size), writable ? PROT_READ | PROT_WRITE : PROT_READ,
                    MAP_SHARED, fd, 0);
  close(fd);
  if (data == MAP_FAILED) {
    *error = "mmap(" + name + "): " + std::strerror(errno);
    return segment;
  }
  segment.data_ = data;
  segment.size_ = size_t(info.st_size);
  return segment;
}

void Segment::unlink(const std::string& name) {
  shm_unlink(name.c_str());
}

namespace {
size_t align64(size_t bytes) {
  return (bytes + 63) / 64 * 64;
}
}  // namespace

size_t control_bytes(int nranks) {
  return align64(sizeof(Header)) + size_t(nranks) * align64(sizeof(RankSlot)) +
         size_t(nranks) * size_t(nranks) * align64(sizeof(PairSlot));
}

Header* header_of(void* control) {
  return static_cast<Header*>(control);
}

RankSlot* slot_of(void* control, int rank) {
  return reinterpret_cast<RankSlot*>(static_cast<char*>(control) + align64(sizeof(Header)) +
                                     size_t(rank) * align64(sizeof(RankSlot)));
}

PairSlot* pair_of(void* control, int nranks, int from, int to) {
  return reinterpret_cast<PairSlot*>(static_cast<char*>(control) + align64(sizeof(Header)) +
                                     size_t(nranks) * align64(sizeof(RankSlot)) +
                                     (size_t(from) * size_t(nranks) + size_t(to)) *
                                         align64(sizeof(PairSlot)));
}

namespace {
void lock(RankSlot* slot) {
  uint32_t expected = 0;
  while (!slot->text_lock.compare_exchange_weak(expected, 1, std::memory_order_acquire)) {
    expected = 0;
    std::this_thread::yield();
  }
}
void unlock(RankSlot* slot) {
  slot->text_lock.store(0, std::memory_order_release);
}
}  // namespace

void set_text(RankSlot* slot, const std::string& text) {
  lock(slot);
  const size_t n = std::min(text.size(), size_t(kTextBytes - 1));
  std::memcpy(slot->state, text.data(), n);
  slot->state[n] = '\0';
  unlock(slot);
}

void set_device_text(RankSlot* slot, const std::string& text) {
  lock(slot);
  const size_t n = std::min(text.size(), size_t(kTextBytes - 1));
  std::memcpy(slot->device_state, text.data(), n);
  slot->device_state[n] = '\0';
  unlock(slot);
}

std::string get_device_text(RankSlot* slot) {
  lock(slot);
  std::string text(slot->device_state);
  unlock(slot);
  return text;
}

std::string get_text(RankSlot* slot) {
  lock(slot);
  std::string text(slot->state);
  unlock(slot);
  return text;
}

}  // namespace sonata::emu::nccl
