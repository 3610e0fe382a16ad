#pragma once
// dtype -> C++ type for the CPU kernels. Only kernels/cpu/*.cpp include this.
#include <cstdint>
#include <type_traits>

#include "base/dtype.h"
#include "base/error.h"
#include "base/half.h"

namespace sonata::kernels::cpu {

// Compute type: double for f64, int64 for integers, float for the rest (halves are only
// converted on the CPU).
template <typename T>
struct Compute {
  using type = std::conditional_t<std::is_integral_v<T>, int64_t, float>;
};
template <>
struct Compute<double> {
  using type = double;
};
template <typename T>
using compute_t = typename Compute<T>::type;

template <typename T>
inline compute_t<T> load(T value) {
  return static_cast<compute_t<T>>(value);
}
template <typename T, typename C>
inline T store(C value) {
  return static_cast<T>(value);
}
template <>
inline float load<Half>(Half value) {
  return float(value);
}
template <>
inline float load<BFloat16>(BFloat16 value) {
  return float(value);
}
template <>
inline Half store<Half, float>(float value) {
  return Half(value);
}
template <>
inline BFloat16 store<BFloat16, float>(float value) {
  return BFloat16(value);
}
template <>
inline Half store<Half, double>(double value) {
  return Half(float(value));
}
template <>
inline BFloat16 store<BFloat16, double>(double value) {
  return BFloat16(float(value));
}

// The floating types the CPU reference computes in.
template <typename F>
void dispatch_f32_f64(DType dtype, const char* kernel, F&& body) {
  switch (dtype) {
    case DType::f32:
      return body.template operator()<float>();
    case DType::f64:
      return body.template operator()<double>();
    default:
      throw Error(str(kernel, ": dtype ", dtype_name(dtype),
                      " is not supported on the CPU (use f32 or f64)"));
  }
}

// Every floating type, half ones included (gradients of fp16 / bf16 models, f64 ones from
// the reference runs).
template <typename F>
void dispatch_f16_bf16_f32_f64(DType dtype, const char* kernel, F&& body) {
  switch (dtype) {
    case DType::f16:
      return body.template operator()<Half>();
    case DType::bf16:
      return body.template operator()<BFloat16>();
    case DType::f32:
      return body.template operator()<float>();
    case DType::f64:
      return body.template operator()<double>();
    default:
      throw Error(str(kernel, ": dtype ", dtype_name(dtype), " is not a floating-point type"));
  }
}

// Every dtype, for copies, fills and comparisons.
template <typename F>
void dispatch_all(DType dtype, F&& body) {
  switch (dtype) {
    case DType::f16:
      return body.template operator()<Half>();
    case DType::bf16:
      return body.template operator()<BFloat16>();
    case DType::f32:
      return body.template operator()<float>();
    case DType::f64:
      return body.template operator()<double>();
    case DType::i32:
      return body.template operator()<int32_t>();
    case DType::i64:
      return body.template operator()<int64_t>();
    case DType::u8:
      return body.template operator()<uint8_t>();
    case DType::boolean:
      return body.template operator()<bool>();
  }
}

// Numeric types for arithmetic that also makes sense on integers (add, compare, where).
template <typename F>
void dispatch_numeric(DType dtype, const char* kernel, F&& body) {
  switch (dtype) {
    case DType::f32:
      return body.template operator()<float>();
    case DType::f64:
      return body.template operator()<double>();
    case DType::i32:
      return body.template operator()<int32_t>();
    case DType::i64:
      return body.template operator()<int64_t>();
    case DType::u8:
      return body.template operator()<uint8_t>();
    case DType::boolean:
      return body.template operator()<bool>();
    default:
      throw Error(str(kernel, ": dtype ", dtype_name(dtype), " is not supported on the CPU"));
  }
}

}  // namespace sonata::kernels::cpu
