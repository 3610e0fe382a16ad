#include "comm/pipeline/stage_state.h"

#include <map>
#include <string>

#include "base/error.h"
#include "comm/pipeline/message_tags.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"

namespace sonata {
namespace {

// Tags of their own, apart from the pipeline's per-micro-batch ones (message_tags.h).
constexpr int kSizeTag = tag_of(StateTag::size), kNamesTag = tag_of(StateTag::names),
              kShapesTag = tag_of(StateTag::shapes), kStatusTag = tag_of(StateTag::status),
              kTensorTag = tag_of(StateTag::tensor);
constexpr int64_t kMaxDims = 8;
constexpr int64_t kShapeWords = 2 + kMaxDims;  // dtype, dims, sizes

// A state dict's names and shapes, as tensors that can travel.
struct Manifest {
  std::vector<std::string> names;
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
};

void send_manifest(ProcessGroup& group, const NamedTensors& state, int peer) {
  std::string names;
  std::vector<int64_t> shapes;
  for (const auto& [name, tensor] : state) {
    SONATA_CHECK(tensor.dim() <= kMaxDims, "pipeline state: ", name, " has too many dimensions");
    names += name;
    names.push_back('\n');
    shapes.push_back(int64_t(tensor.dtype()));
    shapes.push_back(tensor.dim());
    for (int64_t d = 0; d < kMaxDims; ++d) shapes.push_back(d < tensor.dim() ? tensor.size(d) : 0);
  }
  const Device device = group.device();
  Tensor size =
      from_vector(std::vector<int64_t>{int64_t(state.size()), int64_t(names.size())}, {2}, device);
  group.send(size, peer, kSizeTag)->synchronize();
  if (state.empty()) return;
  Tensor name_bytes =
      from_host(names.data(), {int64_t(names.size())}, DType::u8, TensorOptions{}.with(DType::u8))
          .to(device);
  auto sent = group.send(name_bytes, peer, kNamesTag);
  group.send(from_vector(shapes, {int64_t(shapes.size())}, device), peer, kShapesTag)
      ->synchronize();
  sent->synchronize();
}

Manifest recv_manifest(ProcessGroup& group, int peer) {
  const Device device = group.device();
  Tensor size = empty({2}, TensorOptions{}.with(DType::i64).with(device));
  group.recv(size, peer, kSizeTag)->synchronize();
  const std::vector<int64_t> counts = size.to_vector<int64_t>();
  Manifest manifest;
  if (counts[0] == 0) return manifest;
  Tensor name_bytes = empty({counts[1]}, TensorOptions{}.with(DType::u8).with(device));
  Tensor shapes = empty({counts[0] * kShapeWords}, TensorOptions{}.with(DType::i64).with(device));
  auto names_work = group.recv(name_bytes, peer, kNamesTag);
  group.recv(shapes, peer, kShapesTag)->synchronize();
  names_work->synchronize();
  const Tensor host_names = name_bytes.to(Device::cpu());
  const char* text = static_cast<const char*>(host_names.data_ptr());
  std::string current;
  for (int64_t i = 0; i < counts[1]; ++i) {
    if (text[i] == '\n') {
      manifest.names.push_back(current);
      current.clear();
    } else {
      current.push_back(text[i]);
    }
  }
  const std::vector<int64_t> words = shapes.to_vector<int64_t>();
  for (int64_t e = 0; e < counts[0]; ++e) {
    const int64_t* entry = words.data() + e * kShapeWords;
    manifest.dtypes.push_back(DType(entry[0]));
    manifest.shapes.emplace_back(entry + 2, entry + 2 + entry[1]);
  }
  SONATA_CHECK(manifest.names.size() == size_t(counts[0]),
               "pipeline state: a malformed list of names arrived from rank ", peer);
  return manifest;
}

// Why `full` cannot fill `manifest` ("" when it can).
std::string mismatch(const std::map<std::string, Tensor>& full, const Manifest& manifest,
                     int rank) {
  for (size_t e = 0; e < manifest.names.size(); ++e) {
    const auto found = full.find(manifest.names[e]);
    if (found == full.end())
      return str("the state dict has no '", manifest.names[e], "' (needed by stage rank ", rank,
                 ")");
    if (found->second.shape() != manifest.shapes[e])
      return str("'", manifest.names[e], "' has shape ", shape_str(found->second.shape()),
                 " but stage rank ", rank, " holds ", shape_str(manifest.shapes[e]));
    const bool convertible = is_floating(found->second.dtype()) && is_floating(manifest.dtypes[e]);
    if (found->second.dtype() != manifest.dtypes[e] && !convertible)
      return str("'", manifest.names[e], "' is ", dtype_name(found->second.dtype()),
                 " but stage rank ", rank, " holds ", dtype_name(manifest.dtypes[e]));
  }
  return "";
}

void copy_into(const Tensor& target, const Tensor& source) {
  NoGradGuard no_grad;
  Tensor(target).copy_(source.to(target.dtype()).to(target.device()));
}

}  // namespace

NamedTensors gather_state_dict(ProcessGroup& group, const NamedTensors& stage_state) {
  if (group.rank() != 0) {
    send_manifest(group, stage_state, 0);
    for (const auto& [name, tensor] : stage_state)
      group.send(tensor.detach().contiguous(), 0, kTensorTag)->synchronize();
    return {};
  }
  NamedTensors full;
  for (const auto& [name, tensor] : stage_state)
    full.emplace_back(name, tensor.detach().to(Device::cpu()).clone());
  for (int peer = 1; peer < group.world_size(); ++peer) {
    const Manifest manifest = recv_manifest(group, peer);
    for (size_t e = 0; e < manifest.names.size(); ++e) {
      Tensor value =
          empty(manifest.shapes[e], TensorOptions{}.with(manifest.dtypes[e]).with(group.device()));
      group.recv(value, peer, kTensorTag)->synchronize();
      full.emplace_back(manifest.names[e], value.to(Device::cpu()));
    }
  }
  return full;
}

NamedTensors merge_row_pieces(const NamedTensors& gathered) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<Tensor>> pieces;
  for (const auto& [name, tensor] : gathered) {
    std::vector<Tensor>& of_name = pieces[name];
    if (of_name.empty()) order.push_back(name);
    of_name.push_back(tensor);
  }
  NamedTensors merged;
  for (const std::string& name : order) {
    const std::vector<Tensor>& of_name = pieces.at(name);
    merged.emplace_back(name, of_name.size() == 1 ? of_name[0] : cat(of_name, 0));
  }
  return merged;
}

std::vector<std::vector<TensorSpec>> gather_state_specs(ProcessGroup& group,
                                                        const NamedTensors& stage_state) {
  if (group.rank() != 0) {
    send_manifest(group, stage_state, 0);
    return {};
  }
  std::vector<std::vector<TensorSpec>> specs(size_t(group.world_size()));
  for (const auto& [name, tensor] : stage_state)
    specs[0].push_back({name, tensor.dtype(), tensor.shape()});
  for (int peer = 1; peer < group.world_size(); ++peer) {
    const Manifest manifest = recv_manifest(group, peer);
    for (size_t e = 0; e < manifest.names.size(); ++e)
      specs[size_t(peer)].push_back({manifest.names[e], manifest.dtypes[e], manifest.shapes[e]});
  }
  return specs;
}

void scatter_state_dict(ProcessGroup& group, const NamedTensors& full,
                        const NamedTensors& stage_state) {
  const Device device = group.device();
  Tensor status = zeros({1}, TensorOptions{}.with(DType::i64).with(device));
  if (group.rank() != 0) {
    send_manifest(group, stage_state, 0);
    group.recv(status, 0, kStatusTag)->synchronize();
    SONATA_CHECK(status.item() == 0, "pipeline state: stage rank 0 refused the state dict for ",
                 "this stage (rank ", group.rank(), "); its error names the entry");
    for (const auto& [name, tensor] : stage_state) {
      Tensor value = empty(tensor.shape(), tensor.options().with(device));
      group.recv(value, 0, kTensorTag)->synchronize();
      copy_into(tensor, value);
    }
    return;
  }
  std::map<std::string, Tensor> by_name;
  for (const auto& [name, tensor] : full) by_name[name] = tensor;
  // Every stage's manifest first, so that an error reaches every rank before any copy.
  std::vector<Manifest> manifests(size_t(group.world_size()));
  for (const auto& [name, tensor] : stage_state) {
    manifests[0].names.push_back(name);
    manifests[0].dtypes.push_back(tensor.dtype());
    manifests[0].shapes.push_back(tensor.shape());
  }
  std::string problem = mismatch(by_name, manifests[0], 0);
  for (int peer = 1; peer < group.world_size(); ++peer) {
    manifests[size_t(peer)] = recv_manifest(group, peer);
    if (problem.empty()) problem = mismatch(by_name, manifests[size_t(peer)], peer);
  }
  status.fill_(problem.empty() ? 0 : 1);
  for (int peer = 1; peer < group.world_size(); ++peer)
    group.send(status, peer, kStatusTag)->synchronize();
  SONATA_CHECK(problem.empty(), "pipeline state: ", problem);
  for (size_t e = 0; e < stage_state.size(); ++e)
    copy_into(stage_state[e].second, by_name.at(stage_state[e].first));
  for (int peer = 1; peer < group.world_size(); ++peer) {
    const Manifest& manifest = manifests[size_t(peer)];
    for (size_t e = 0; e < manifest.names.size(); ++e) {
      const Tensor value =
          by_name.at(manifest.names[e]).detach().to(manifest.dtypes[e]).contiguous().to(device);
      group.send(value, peer, kTensorTag)->synchronize();
    }
  }
}

}  // namespace sonata
