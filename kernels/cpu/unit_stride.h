#pragma once
// Loops over a dimension of stride `inner` (softmax, cross entropy over [N, C, *]): where
// inner is 1, body gets the stride as a compile-time 1, so that GCC vectorises the loops
// over the dimension; with a run-time stride it left them scalar (the [1024, 1000] cross
// entropy took 1.6 ms forward, against PyTorch's 0.46).
#include <cstdint>
#include <type_traits>

namespace sonata::kernels::cpu {

template <typename Body>
void with_unit_stride(int64_t inner, Body body) {
  if (inner == 1)
    body(std::integral_constant<int64_t, 1>{});
  else
    body(inner);
}

}  // namespace sonata::kernels::cpu
