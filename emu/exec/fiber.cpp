#include "emu/exec/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

// AddressSanitizer's fiber annotations, called only when ASan is linked (weak symbols):
// without them ASan would take a fiber's stack frames for a stack overflow or keep stale
// red zones when a stack is reused.
extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size)
    __attribute__((weak));
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old,
                                     size_t* size_old) __attribute__((weak));
void __asan_unpoison_memory_region(void const volatile* addr, size_t size) __attribute__((weak));
}

namespace sonata::emu::exec {

namespace {
size_t page_size() {
  static const size_t size = size_t(sysconf(_SC_PAGESIZE));
  return size;
}
}  // namespace

void* Stack::usable_bottom() const {
  return static_cast<char*>(base) + page_size();
}
size_t Stack::usable_bytes() const {
  return bytes - page_size();
}

StackPool::StackPool(size_t usable_bytes)
    : usable_bytes_((usable_bytes + page_size() - 1) / page_size() * page_size()) {}

StackPool::~StackPool() {
  for (const Stack& stack : all_) munmap(stack.base, stack.bytes);
}

Stack StackPool::acquire() {
  if (!free_.empty()) {
    Stack stack = free_.back();
    free_.pop_back();
    // A stack abandoned after a fault may keep ASan's red zones of its frames.
    if (__asan_unpoison_memory_region)
      __asan_unpoison_memory_region(stack.usable_bottom(), stack.usable_bytes());
    return stack;
  }
  const size_t bytes = usable_bytes_ + page_size();
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    std::fprintf(stderr, "sonata emu: cannot map a %zu-byte fiber stack\n", bytes);
    std::abort();
  }
  mprotect(base, page_size(), PROT_NONE);  // guard page: an overflow faults at once
  Stack stack{base, bytes};
  all_.push_back(stack);
  return stack;
}

void StackPool::release(Stack stack) {
  free_.push_back(stack);
}

boost::context::detail::transfer_t switch_to(Context to, void* data, const void* bottom,
                                             size_t size, const void** from_bottom,
                                             size_t* from_size) {
  void* fake_stack = nullptr;
  if (__sanitizer_start_switch_fiber) __sanitizer_start_switch_fiber(&fake_stack, bottom, size);
  boost::context::detail::transfer_t back = boost::context::detail::jump_fcontext(to, data);
  if (__sanitizer_finish_switch_fiber)
    __sanitizer_finish_switch_fiber(fake_stack, from_bottom, from_size);
  return back;
}

void finish_first_switch(const void** from_bottom, size_t* from_size) {
  if (__sanitizer_finish_switch_fiber)
    __sanitizer_finish_switch_fiber(nullptr, from_bottom, from_size);
}

}  // namespace sonata::emu::exec
