#include "emu/exec/kernel_name.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace sonata::emu {
namespace {

// Strips the parameter list: the last top-level "(...)" of a demangled function name.
std::string without_parameters(std::string name) {
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    if (name[i] == '(' && --depth == 0) {
      name.resize(i);
      break;
    }
  }
  return name;
}

std::string demangle(const char* symbol) {
  int status = 0;
  char* plain = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  if (status != 0 || plain == nullptr) return symbol;
  std::string name = without_parameters(plain);
  std::free(plain);
  // A template's mangled name carries its return type, which every kernel shares.
  if (name.starts_with("void ")) name.erase(0, 5);
  return name;
}

// The load bias of the main executable (0 for a non-PIE one).
uintptr_t main_program_bias() {
  uintptr_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        *static_cast<uintptr_t*>(out) = info->dlpi_addr;
        return 1;  // the first object is the main program
      },
      &bias);
  return bias;
}

// A file mapped read-only (empty when it cannot be).
class MappedFile {
 public:
  explicit MappedFile(const char* path) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat info {};
    if (fstat(fd, &info) == 0 && info.st_size > 0) {
      void* pages = mmap(nullptr, size_t(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (pages != MAP_FAILED) {
        data_ = static_cast<const char*>(pages);
        size_ = size_t(info.st_size);
      }
    }
    close(fd);
  }
  ~MappedFile() {
    if (data_) munmap(const_cast<char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// Every function symbol of /proc/self/exe, by run-time address.
std::map<uintptr_t, std::string> read_function_symbols() {
  std::map<uintptr_t, std::string> symbols;
  // Mapped, not read: a test binary with debug lines is hundreds of MiB, and every test
  // process names its kernels; only the section headers and the symbol tables are touched.
  const MappedFile image("/proc/self/exe");
  if (image.size() < sizeof(Elf64_Ehdr)) return symbols;
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(image.data());
  if (header->e_shoff == 0 || header->e_shoff + header->e_shnum * sizeof(Elf64_Shdr) > image.size())
    return symbols;
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(image.data() + header->e_shoff);
  const uintptr_t bias = main_program_bias();
  for (int s = 0; s < header->e_shnum; ++s) {
    if (sections[s].sh_type != SHT_SYMTAB || sections[s].sh_link >= header->e_shnum) continue;
    const Elf64_Shdr& strings = sections[sections[s].sh_link];
    if (sections[s].sh_offset + sections[s].sh_size > image.size() ||
        strings.sh_offset + strings.sh_size > image.size())
      continue;
    const auto* entries = reinterpret_cast<const Elf64_Sym*>(image.data() + sections[s].sh_offset);
    const size_t count = sections[s].sh_size / sizeof(Elf64_Sym);
    for (size_t i = 0; i < count; ++i) {
      if (ELF64_ST_TYPE(entries[i].st_info) != STT_FUNC || entries[i].st_value == 0 ||
          entries[i].st_name >= strings.sh_size)
        continue;
      symbols.emplace(bias + entries[i].st_value,
                      image.data() + strings.sh_offset + entries[i].st_name);
    }
  }
  return symbols;
}

}  // namespace

const char* kernel_name(const void* kernel) {
  static std::mutex mutex;
  static std::map<uintptr_t, std::string>* symbols = nullptr;
  static std::map<const void*, std::string> names;  // demangled once per kernel
  const std::lock_guard lock(mutex);
  if (const auto found = names.find(kernel); found != names.end()) return found->second.c_str();
  if (symbols == nullptr) symbols = new std::map<uintptr_t, std::string>(read_function_symbols());
  std::string name;
  if (const auto found = symbols->find(reinterpret_cast<uintptr_t>(kernel));
      found != symbols->end()) {
    name = demangle(found->second.c_str());
  } else {
    char buffer[48];
    std::snprintf(buffer, sizeof(buffer), "kernel at %p", kernel);
    name = buffer;
  }
  return names.emplace(kernel, std::move(name)).first->second.c_str();
}

}  // namespace sonata::emu
