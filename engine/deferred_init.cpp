#include "engine/deferred_init.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/io/safetensors.h"
#include "engine/random.h"

namespace sonata {
namespace {

thread_local bool deferral_enabled = false;

// What one deferred tensor needs to be made: the handle to point at the values, its recipe.
struct Pending {
  Tensor target;
  DeferredInit recipe;  // a copy: set_data on the target frees the storage holding it
};

Tensor deferred_with(const std::shared_ptr<DeferredInit>& recipe, const Shape& shape, DType dtype,
                     Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = Storage::deferred(device, recipe);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(impl);
}

// The values of a random or constant recipe, on the CPU in the dtype they were made in.
Tensor make_values(const DeferredInit& recipe) {
  using Kind = DeferredInit::Kind;
  const TensorOptions options = TensorOptions{}.with(recipe.made_as);
  switch (recipe.kind) {
    case Kind::uninitialised:
      return empty({recipe.numel}, options);
    case Kind::constant:
      return full({recipe.numel}, recipe.first, options);
    case Kind::uniform:
    case Kind::normal: {
      // The fill's element e came from block first_block + e / 4, lane e % 4: start at the
      // block holding this recipe's first element and drop the lanes before it.
      const int64_t lead = recipe.first_element % 4;
      Generator generator(recipe.seed, recipe.subsequence);
      generator.set_offset(recipe.first_block + uint64_t(recipe.first_element / 4));
      Tensor values = empty({recipe.numel + lead}, options);
      if (recipe.kind == Kind::uniform)
        uniform_(values, recipe.first, recipe.second, &generator);
      else
        normal_(values, recipe.first, recipe.second, &generator);
      return lead == 0 ? values : values.slice(0, lead, lead + recipe.numel).contiguous();
    }
    case Kind::file:
      break;
  }
  throw Error("deferred initialisation: a file recipe is read with its file");
}

// Moved and cast as the deferred tensor was (Tensor::to replays), then pointed at.
void finish(const Tensor& target, const DeferredInit& recipe, Tensor values) {
  values = values.reshape(target.shape());
  for (const DeferredInit::Move& move : recipe.moves)
    values = values.to(move.device).to(move.dtype);
  values = values.to(target.device()).to(target.dtype());
  Tensor handle = target;
  handle.set_data(values);
}

void materialise_from_file(const std::string& path, const std::vector<Pending>& pending) {
  // One pass over the file per batch; a tensor wanted twice (two row ranges) takes another.
  std::vector<Pending> rest = pending;
  while (!rest.empty()) {
    std::vector<std::string> names;
    SafetensorsRows rows;
    std::vector<Pending> batch, later;
    for (const Pending& p : rest) {
      const bool taken = std::find(names.begin(), names.end(), p.recipe.name) != names.end();
      if (taken) {
        later.push_back(p);
        continue;
      }
      names.push_back(p.recipe.name);
      if (p.recipe.end_row >= 0) rows[p.recipe.name] = {p.recipe.first_row, p.recipe.end_row};
      batch.push_back(p);
    }
    const SafetensorsContents file = load_safetensors_tensors(path, names, rows);
    std::map<std::string, Tensor> by_name;
    for (const auto& [name, tensor] : file.tensors) by_name.emplace(name, tensor);
    for (const Pending& p : batch) {
      const Tensor& values = by_name.at(p.recipe.name);
      SONATA_CHECK(values.numel() == p.recipe.numel, "deferred initialisation: ", path, ": '",
                   p.recipe.name, "' now holds ", values.numel(), " elements, not the ",
                   p.recipe.numel, " it held when the model was built");
      finish(p.target, p.recipe, values.to(p.recipe.made_as));
    }
    rest = std::move(later);
  }
}

}  // namespace

DeferredInitScope::DeferredInitScope(bool enabled) : previous_(deferral_enabled) {
  deferral_enabled = enabled;
}
DeferredInitScope::~DeferredInitScope() {
  deferral_enabled = previous_;
}
bool deferred_init_enabled() {
  return deferral_enabled;
}

bool is_deferred(const Tensor& t) {
  return t.defined() && t.storage() && t.storage()->deferred_init() != nullptr;
}

Tensor deferred_empty(const Shape& shape, const TensorOptions& options) {
  auto recipe = std::make_shared<DeferredInit>();
  recipe->numel = shape_numel(shape);
  recipe->made_as = options.dtype;
  Tensor t = deferred_with(recipe, shape, options.dtype, options.device);
  if (options.requires_grad) t.set_requires_grad(true);
  return t;
}

DeferredInit& deferred_recipe(const Tensor& t, const char* what) {
  DeferredInit* recipe = t.storage()->deferred_init();
  SONATA_CHECK(recipe, what, ": the tensor is not deferred");
  SONATA_CHECK(t.offset() == 0 && t.is_contiguous() && t.numel() == recipe->numel, what,
               " on part of a deferred tensor (", shape_str(t.shape()), " of its ", recipe->numel,
               " elements): a deferred tensor is filled, moved and made whole, not in parts; "
               "materialise() the whole tensor first");
  return *recipe;
}

Tensor deferred_moved(const Tensor& t, Device device, DType dtype) {
  const DeferredInit& recipe = deferred_recipe(t, "to()");
  auto moved_recipe = std::make_shared<DeferredInit>(recipe);
  moved_recipe->moves.push_back({device, dtype});
  Tensor moved = deferred_with(moved_recipe, t.shape(), dtype, device);
  if (t.requires_grad() && is_floating(dtype)) moved.set_requires_grad(true);
  return moved;
}

void defer_constant(const Tensor& t, double value) {
  DeferredInit& recipe = deferred_recipe(t, "fill_");
  DeferredInit made;
  made.kind = DeferredInit::Kind::constant;
  made.numel = recipe.numel;
  made.made_as = t.dtype();
  made.first = value;
  recipe = made;
}

void defer_random(const Tensor& t, DeferredInit::Kind kind, double first, double second,
                  uint64_t seed, uint64_t subsequence, uint64_t first_block) {
  DeferredInit& recipe = deferred_recipe(t, "random fill");
  DeferredInit made;
  made.kind = kind;
  made.numel = recipe.numel;
  made.made_as = t.dtype();
  made.first = first;
  made.second = second;
  made.seed = seed;
  made.subsequence = subsequence;
  made.first_block = first_block;
  recipe = made;
}

Tensor deferred_from_file(const std::string& path, const std::string& name, const Shape& shape,
                          DType file_dtype, Device device, DType dtype) {
  auto recipe = std::make_shared<DeferredInit>();
  recipe->kind = DeferredInit::Kind::file;
  recipe->numel = shape_numel(shape);
  recipe->made_as = file_dtype;
  recipe->path = path;
  recipe->name = name;
  return deferred_with(recipe, shape, dtype, device);
}

void throw_deferred_access(const Tensor& t) {
  throw Error(str("a deferred tensor (", shape_str(t.shape()), " ", dtype_name(t.dtype()),
                  ", built inside a DeferredInitScope) has no data yet: materialise() it "
                  "before reading or writing its elements"));
}

Tensor copy_rows(const Tensor& t, int64_t begin, int64_t end) {
  SONATA_CHECK(t.dim() >= 1 && 0 <= begin && begin <= end && end <= t.size(0), "copy_rows: rows [",
               begin, ", ", end, ") of a tensor of shape ", shape_str(t.shape()));
  if (!is_deferred(t)) {
    NoGradGuard no_grad;
    return t.detach().slice(0, begin, end).clone();
  }
  const DeferredInit& recipe = deferred_recipe(t, "copy_rows");
  const int64_t row = t.size(0) == 0 ? 0 : t.numel() / t.size(0);
  auto rows = std::make_shared<DeferredInit>(recipe);
  rows->numel = (end - begin) * row;
  rows->first_element += begin * row;
  if (recipe.kind == DeferredInit::Kind::file) {
    rows->first_row += begin;
    rows->end_row = rows->first_row + (end - begin);
  }
  Shape shape = t.shape();
  shape[0] = end - begin;
  return deferred_with(rows, shape, t.dtype(), t.device());
}

void materialise(const std::vector<Tensor>& tensors) {
  NoGradGuard no_grad;
  DeferredInitScope eager(false);
  std::map<std::string, std::vector<Pending>> by_file;
  std::set<const TensorImpl*> seen;  // a handle listed twice is made once
  for (const Tensor& t : tensors) {
    if (!is_deferred(t) || !seen.insert(t.impl_ptr().get()).second) continue;
    const DeferredInit& recipe = deferred_recipe(t, "materialise");
    if (recipe.kind == DeferredInit::Kind::file) {
      by_file[recipe.path].push_back({t, recipe});
      continue;
    }
    finish(t, recipe, make_values(recipe));
  }
  for (const auto& [path, pending] : by_file) materialise_from_file(path, pending);
}

}  // namespace sonata
