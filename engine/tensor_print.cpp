#include <iomanip>
#include <ostream>
#include <sstream>

#include "engine/tensor.h"

namespace sonata {
namespace {
constexpr int64_t kEdgeItems = 3;  // per dim, at each end, once a dim is longer than 2*this

void print_values(std::ostream& out, const std::vector<double>& values, const Shape& shape,
                  size_t d, int64_t base, int indent) {
  if (shape.empty()) {
    out << values[0];
    return;
  }
  const int64_t n = shape[d];
  int64_t block = 1;
  for (size_t k = d + 1; k < shape.size(); ++k) block *= shape[k];
  out << "[";
  for (int64_t i = 0; i < n; ++i) {
    if (n > 2 * kEdgeItems && i == kEdgeItems) {
      out << (d + 1 == shape.size() ? "..., " : "...,\n" + std::string(indent + 1, ' '));
      i = n - kEdgeItems;
    }
    if (d + 1 == shape.size())
      out << values[size_t(base + i)];
    else
      print_values(out, values, shape, d + 1, base + i * block, indent + 1);
    if (i + 1 < n) out << (d + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  out << "]";
}
}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream out;
  out << "Tensor(";
  out << std::setprecision(6);
  print_values(out, to_vector<double>(), shape(), 0, 0, 7);
  out << ", shape=" << shape_str(shape()) << ", dtype=" << dtype_name(dtype())
      << ", device=" << device().str();
  if (requires_grad()) out << ", requires_grad";
  out << ")";
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) {
  return out << tensor.to_string();
}

}  // namespace sonata
