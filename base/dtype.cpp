#include "base/dtype.h"

#include <string>

#include "base/error.h"

namespace sonata {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::u8:
    case DType::boolean:
      return 1;
  }
  SONATA_UNREACHABLE("dtype_size");
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::u8:
      return "u8";
    case DType::boolean:
      return "bool";
  }
  SONATA_UNREACHABLE("dtype_name");
}

bool is_floating(DType dtype) {
  return dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::f32 || dtype == DType::f64;
}

bool is_half(DType dtype) {
  return dtype == DType::f16 || dtype == DType::bf16;
}

DType parse_dtype(std::string_view name) {
  struct Alias {
    std::string_view name;
    DType dtype;
  };
  static constexpr Alias aliases[] = {
      {"f16", DType::f16},     {"fp16", DType::f16},   {"float16", DType::f16},
      {"half", DType::f16},    {"bf16", DType::bf16},  {"bfloat16", DType::bf16},
      {"f32", DType::f32},     {"fp32", DType::f32},   {"float32", DType::f32},
      {"float", DType::f32},   {"f64", DType::f64},    {"fp64", DType::f64},
      {"float64", DType::f64}, {"double", DType::f64}, {"i32", DType::i32},
      {"int32", DType::i32},   {"i64", DType::i64},    {"int64", DType::i64},
      {"long", DType::i64},    {"u8", DType::u8},      {"uint8", DType::u8},
      {"bool", DType::boolean}};
  for (const Alias& alias : aliases)
    if (alias.name == name) return alias.dtype;
  throw Error(
      str("unknown dtype '", name, "': expected one of f16, bf16, f32, f64, i32, i64, u8, bool"));
}

namespace {
int float_rank(DType d) {
  switch (d) {
    case DType::f16:
      return 1;
    case DType::bf16:
      return 1;
    case DType::f32:
      return 2;
    case DType::f64:
      return 3;
    default:
      return 0;
  }
}
int int_rank(DType d) {
  switch (d) {
    case DType::boolean:
      return 0;
    case DType::u8:
      return 1;
    case DType::i32:
      return 2;
    case DType::i64:
      return 3;
    default:
      return -1;
  }
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  const bool fa = is_floating(a), fb = is_floating(b);
  if (fa && fb) {
    if (is_half(a) && is_half(b)) return DType::f32;  // f16 x bf16
    return float_rank(a) >= float_rank(b) ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  return int_rank(a) >= int_rank(b) ? a : b;
}

}  // namespace sonata
