#include "comm/process_group.h"

#include "base/error.h"

namespace sonata {
namespace {
class CompletedWork final : public Work {
 public:
  void wait() override {}
  bool completed() override { return true; }
};
}  // namespace

std::shared_ptr<Work> completed_work() {
  return std::make_shared<CompletedWork>();
}

void ProcessGroup::set_timeout(double seconds) {
  check_comm_timeout(seconds, "the communication timeout");
  timeout_s_ = seconds;
}

const char* reduce_op_name(ReduceOp op) {
  return op == ReduceOp::sum ? "sum" : "avg";
}

void check_comm_tensor(const Tensor& tensor, Device device, const char* what, const char* name) {
  SONATA_CHECK(tensor.defined(), what, ": the ", name, " tensor is undefined");
  SONATA_CHECK(tensor.device() == device, what, ": the ", name, " tensor is on ",
               tensor.device().str(), " but this process group communicates on ", device.str());
  SONATA_CHECK(tensor.is_contiguous(), what, ": the ", name, " tensor (shape ",
               shape_str(tensor.shape()), ") must be contiguous");
}

void check_reduce(DType dtype, ReduceOp op, const char* what) {
  const bool reducible = dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::f32 ||
                         dtype == DType::f64 || dtype == DType::i32 || dtype == DType::i64;
  SONATA_CHECK(reducible, what, ": cannot reduce ", dtype_name(dtype),
               " tensors (f16, bf16, f32, f64, i32, i64 only)");
  SONATA_CHECK(op != ReduceOp::avg || is_floating(dtype), what, ": avg of ", dtype_name(dtype),
               " tensors would truncate; use sum and divide, or a floating-point dtype");
}

void check_rank(int rank, int world_size, const char* what, const char* name) {
  SONATA_CHECK(rank >= 0 && rank < world_size, what, ": ", name, " ", rank,
               " is out of range for a world of ", world_size);
}

void check_all_to_all(const Tensor& in, const Tensor& out, Device device, int world_size) {
  check_comm_tensor(in, device, "all_to_all", "in");
  check_comm_tensor(out, device, "all_to_all", "out");
  SONATA_CHECK(in.dtype() == out.dtype(), "all_to_all: in is ", dtype_name(in.dtype()),
               " but out is ", dtype_name(out.dtype()));
  SONATA_CHECK(in.numel() == out.numel(), "all_to_all: in has ", in.numel(),
               " elements but out has ", out.numel());
  SONATA_CHECK(in.numel() % world_size == 0, "all_to_all: ", in.numel(),
               " elements do not split into ", world_size, " equal blocks");
  SONATA_CHECK(!in.same(out) || world_size == 1,
               "all_to_all: in and out must not be the same "
               "tensor");
}

}  // namespace sonata
