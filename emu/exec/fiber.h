#pragma once
// Fibers for CUDA threads: Boost.Context's fcontext (make/jump), on stacks of our own
// (mmap'd, a guard page below each) that are reused from block to block. A fiber runs one
// CUDA thread after another: when a thread exits, the fiber takes the next one, so a kernel
// without barriers runs its whole grid on one stack.
#include <cstddef>
#include <vector>

#include <boost/context/detail/fcontext.hpp>

namespace sonata::emu::exec {

struct Stack {
  void* base = nullptr;  // lowest address, the guard page
  size_t bytes = 0;      // including the guard page
  void* top() const { return static_cast<char*>(base) + bytes; }
  void* usable_bottom() const;
  size_t usable_bytes() const;
};

// Hands out stacks and takes them back; frees them only at process exit.
class StackPool {
 public:
  explicit StackPool(size_t usable_bytes);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  Stack acquire();
  void release(Stack stack);

 private:
  size_t usable_bytes_;
  std::vector<Stack> free_;
  std::vector<Stack> all_;
};

using Context = boost::context::detail::fcontext_t;

// Switches from the current context to `to`, whose stack is [bottom, bottom + size),
// telling AddressSanitizer (when it is linked) which stack runs next. Returns the context
// that switched back and its data. `from_bottom`/`from_size` receive the stack that
// switched back (for a fiber: the host thread's stack, which it needs to switch back).
boost::context::detail::transfer_t switch_to(Context to, void* data, const void* bottom,
                                             size_t size, const void** from_bottom,
                                             size_t* from_size);
// Called first thing on a fiber's stack when it starts (the other half of the annotation).
void finish_first_switch(const void** from_bottom, size_t* from_size);

}  // namespace sonata::emu::exec
