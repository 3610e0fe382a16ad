#include "comm/broadcast_coalesced.h"

#include <map>
#include <memory>

#include "base/error.h"
#include "base/nvtx.h"
#include "engine/autograd/grad_mode.h"

namespace sonata {

void broadcast_coalesced(ProcessGroup& group, const std::vector<Tensor>& tensors, int root) {
  SONATA_NVTX_RANGE("sonata::broadcast_coalesced");
  check_rank(root, group.world_size(), "broadcast_coalesced", "root");
  if (group.world_size() == 1) return;
  NoGradGuard no_grad;
  std::map<DType, std::vector<Tensor>> by_dtype;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& t = tensors[k];
    SONATA_CHECK(t.defined() && t.device() == group.device(), "broadcast_coalesced: tensor ", k,
                 " is undefined or not on ", group.device().str(),
                 ", where the group communicates");
    if (t.numel() > 0) by_dtype[t.dtype()].push_back(t);
  }
  struct Packed {
    Tensor flat;
    std::vector<Tensor> members;
    std::shared_ptr<Work> work;
  };
  std::vector<Packed> packed;
  for (auto& [dtype, members] : by_dtype) {
    int64_t numel = 0;
    for (const Tensor& t : members) numel += t.numel();
    Packed p{empty({numel}, members.front().options()), std::move(members), nullptr};
    if (group.rank() == root) {
      int64_t offset = 0;
      for (const Tensor& t : p.members) {
        p.flat.slice(0, offset, offset + t.numel()).copy_(t.reshape({t.numel()}));
        offset += t.numel();
      }
    }
    p.work = group.broadcast(p.flat, root);
    packed.push_back(std::move(p));
  }
  for (Packed& p : packed) {
    p.work->wait();
    if (group.rank() == root) continue;
    int64_t offset = 0;
    for (const Tensor& t : p.members) {
      Tensor target = t;
      target.copy_(p.flat.slice(0, offset, offset + t.numel()).view(t.shape()));
      offset += t.numel();
    }
  }
}

}  // namespace sonata
