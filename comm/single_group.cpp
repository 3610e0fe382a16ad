#include "comm/single_group.h"

#include "base/error.h"

namespace sonata {
namespace {
// all_gather and reduce_scatter over one rank copy `in` to `out` unchanged.
void copy_whole(const Tensor& in, Tensor& out, const char* what) {
  SONATA_CHECK(in.dtype() == out.dtype(), what, ": in is ", dtype_name(in.dtype()), " but out is ",
               dtype_name(out.dtype()));
  SONATA_CHECK(in.numel() == out.numel(), what, ": out has ", out.numel(),
               " elements but a world of 1 needs ", in.numel());
  if (in.numel() > 0 && !in.same(out)) out.view({in.numel()}).copy_(in.view({in.numel()}));
}
}  // namespace

std::shared_ptr<Work> SingleGroup::all_reduce(Tensor& tensor, ReduceOp op) {
  check_comm_tensor(tensor, device_, "all_reduce", "input");
  check_reduce(tensor.dtype(), op, "all_reduce");
  return completed_work();
}

std::shared_ptr<Work> SingleGroup::broadcast(Tensor& tensor, int root) {
  check_comm_tensor(tensor, device_, "broadcast", "input");
  check_rank(root, 1, "broadcast", "root");
  return completed_work();
}

std::shared_ptr<Work> SingleGroup::all_gather(const Tensor& in, Tensor& out) {
  check_comm_tensor(in, device_, "all_gather", "in");
  check_comm_tensor(out, device_, "all_gather", "out");
  copy_whole(in, out, "all_gather");
  return completed_work();
}

std::shared_ptr<Work> SingleGroup::reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) {
  check_comm_tensor(in, device_, "reduce_scatter", "in");
  check_comm_tensor(out, device_, "reduce_scatter", "out");
  check_reduce(in.dtype(), op, "reduce_scatter");
  copy_whole(in, out, "reduce_scatter");
  return completed_work();
}

std::shared_ptr<Work> SingleGroup::all_to_all(const Tensor& in, Tensor& out) {
  check_all_to_all(in, out, device_, 1);
  copy_whole(in, out, "all_to_all");
  return completed_work();
}

std::shared_ptr<Work> SingleGroup::barrier() {
  return completed_work();
}

std::shared_ptr<Work> SingleGroup::send(const Tensor&, int peer, int) {
  throw Error(str("send: peer ", peer, " does not exist in a single-process group"));
}

std::shared_ptr<Work> SingleGroup::recv(Tensor&, int peer, int) {
  throw Error(str("recv: peer ", peer, " does not exist in a single-process group"));
}

std::shared_ptr<ProcessGroup> SingleGroup::split(int color, int) {
  SONATA_CHECK(color >= 0, "split: color ", color, " must not be negative");
  auto part = std::make_shared<SingleGroup>(device_);
  part->set_timeout(timeout());
  return part;
}

}  // namespace sonata
