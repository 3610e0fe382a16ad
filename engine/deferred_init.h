#pragma once
// Deferred initialisation: a model built inside a DeferredInitScope gets tensors that own no
// memory but remember how their values are made (a random fill's Philox seed and blocks, a
// constant, a tensor of a weights file), as torchdistx's deferred_init and PyTorch's meta
// device. A pipeline stage then materialises its own layers' tensors alone: every rank
// describes the whole model once, and no rank allocates another stage's parameters.
//
// Materialised values equal eager construction bit for bit: the generator reserves the same
// blocks whether a fill is deferred or not (engine/random.h), and the moves and casts done
// to a deferred tensor (Tensor::to) are replayed in order on the made values.
//
// What a deferred tensor allows: its shape, dtype and device, views, detach(), to() (another
// deferred tensor), set_data, whole fills (fill_, uniform_, normal_), rows of it
// (copy_rows). Anything that reads or writes its elements is an error naming the scope.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace sonata {

struct DeferredInit {
  enum class Kind { uninitialised, uniform, normal, constant, file };
  Kind kind = Kind::uninitialised;
  int64_t numel = 0;           // elements of the tensor this recipe makes
  DType made_as = DType::f32;  // the dtype the values are made in (then cast to the tensor's)
  // uniform: [first, second); normal: mean first, std second; constant: first.
  double first = 0, second = 0;
  // Random fills: the generator's stream and the first block the whole fill reserved, and
  // which element of that fill this recipe's first is (rows of a filled tensor).
  uint64_t seed = 0, subsequence = 0, first_block = 0;
  int64_t first_element = 0;
  // file: the tensor `name` of the safetensors file `path`, rows [first_row, end_row) of its
  // dim 0 (end_row < 0: all of it).
  std::string path, name;
  int64_t first_row = 0, end_row = -1;
  // Each Tensor::to() done to the deferred tensor since it was made, in order: replayed on
  // the made values (casts round: f32 -> f16 -> f32 is not f32).
  struct Move {
    Device device;
    DType dtype;
  };
  std::vector<Move> moves;
};

// While one is alive (per thread, nesting), empty() makes deferred tensors; pinned memory
// is never deferred. DeferredInitScope(false) turns deferral off inside an enabled one.
class DeferredInitScope {
 public:
  explicit DeferredInitScope(bool enabled = true);
  ~DeferredInitScope();
  DeferredInitScope(const DeferredInitScope&) = delete;
  DeferredInitScope& operator=(const DeferredInitScope&) = delete;

 private:
  bool previous_;
};
bool deferred_init_enabled();

bool is_deferred(const Tensor& t);
// A deferred tensor of `shape`, no memory, values not yet made (empty() in a scope).
Tensor deferred_empty(const Shape& shape, const TensorOptions& options);
// The recipe of a deferred tensor that covers its whole storage; `what` names the operation
// in the error for a view of part of one.
DeferredInit& deferred_recipe(const Tensor& t, const char* what);
// A deferred copy of `t` on `device` in `dtype` (Tensor::to on a deferred tensor).
Tensor deferred_moved(const Tensor& t, Device device, DType dtype);
// `t` (deferred, whole) now made by filling with `value`, or by a random fill whose blocks
// start at `first_block` of the generator `seed`/`subsequence`.
void defer_constant(const Tensor& t, double value);
void defer_random(const Tensor& t, DeferredInit::Kind kind, double first, double second,
                  uint64_t seed, uint64_t subsequence, uint64_t first_block);
// A deferred tensor of `shape` and `dtype` on `device`, to be read from tensor `name` of the
// safetensors file `path` (in `file_dtype`, cast to `dtype`).
Tensor deferred_from_file(const std::string& path, const std::string& name, const Shape& shape,
                          DType file_dtype, Device device, DType dtype);
[[noreturn]] void throw_deferred_access(const Tensor& t);

// Rows [begin, end) of `t` along dim 0 as a new tensor of their own: a detached clone, or
// for a deferred tensor a deferred one that makes just those rows.
Tensor copy_rows(const Tensor& t, int64_t begin, int64_t end);

// Makes the values of every deferred tensor among `tensors` (others are left as they are)
// and points it at them with set_data, so that every handle of it sees real memory. Reads of
// one weights file are batched into one pass over it.
void materialise(const std::vector<Tensor>& tensors);

}  // namespace sonata
