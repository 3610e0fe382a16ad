#include "data/loader/host_batch.h"

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

}  // namespace sonata
