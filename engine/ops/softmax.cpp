#include "base/error.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "engine/ops/op_utils.h"

namespace sonata {
namespace {

Tensor softmax_impl(const Tensor& x, int64_t dim, bool log, const char* name) {
  check_floating(name, x);
  dim = wrap_dim(dim, x.dim(), name);
  const Tensor in = x.contiguous();
  const AxisSplit axis = split_axis(in.shape(), dim);
  Tensor out = empty_like(in);
  if (in.numel() > 0)
    SONATA_BACKEND(in.device(), softmax, in.dtype(), log, in.data_ptr(), out.data_ptr(), axis.outer,
                   axis.n, axis.inner);
  const Tensor saved_out = save(out);
  record(name, {x}, {&out}, [=](const std::vector<Tensor>& g) {
    const Tensor gy = g[0].contiguous();
    Tensor gx = empty_like(gy);
    if (gy.numel() > 0)
      SONATA_BACKEND(gy.device(), softmax_backward, gy.dtype(), log, gy.data_ptr(),
                     saved_out.data_ptr(), gx.data_ptr(), axis.outer, axis.n, axis.inner);
    return std::vector<Tensor>{gx};
  });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) {
  return softmax_impl(x, dim, false, "softmax");
}
Tensor log_softmax(const Tensor& x, int64_t dim) {
  return softmax_impl(x, dim, true, "log_softmax");
}

}  // namespace sonata
