#include "data/loader/host_batch.h"

#include <new>
#include <utility>

#include "base/error.h"

namespace sonata {
namespace {

template <typename Batch>
auto& field_of(Batch& batch, std::string_view name) {
  for (auto& field : batch.fields)
    if (field.name == name) return field.tensor;
  std::string names;
  for (const BatchField& field : batch.fields) names += (names.empty() ? "" : ", ") + field.name;
  throw Error(str("the batch has no tensor '", name,
                  "' (it holds: ", names.empty() ? std::string("nothing") : names, ")"));
}

}  // namespace

void HostBatch::add(std::string name, Tensor tensor, bool staged) {
  SONATA_CHECK(!has(name), "the batch already has a tensor '", name, "'");
  fields.push_back({std::move(name), std::move(tensor), staged});
}

bool HostBatch::has(std::string_view name) const {
  for (const BatchField& field : fields)
    if (field.name == name) return true;
  return false;
}

const Tensor& HostBatch::operator[](std::string_view name) const {
  return field_of(*this, name);
}

Tensor& HostBatch::operator[](std::string_view name) {
  return field_of(*this, name);
}

namespace {

// The batch's files for an error: all of them up to a few, then a count.
std::string named_sources(const HostBatch& batch) {
  constexpr size_t kNamed = 8;
  std::string text = str(" in a batch of ", batch.sources.size(), " inputs: ");
  for (size_t i = 0; i < batch.sources.size() && i < kNamed; ++i)
    text += (i ? ", " : "") + batch.sources[i];
  if (batch.sources.size() > kNamed) text += str(" and ", batch.sources.size() - kNamed, " more");
  return text + " (a long one may need --max-duration lower, or a smaller --batch-size)";
}

}  // namespace

void with_batch_named(const HostBatch& batch, const std::function<void()>& step) {
  if (batch.sources.empty()) return step();
  try {
    step();
  } catch (const std::bad_alloc&) {
    throw Error("out of memory" + named_sources(batch));
  } catch (const Error& error) {
    const std::string what = error.what();
    if (what.find("out of") == std::string::npos || what.find("memory") == std::string::npos) throw;
    throw Error(what + named_sources(batch));
  }
}

}  // namespace sonata
