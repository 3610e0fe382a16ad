#pragma once
// Element types shared by every floor: kernels/ switch on them, engine/ tags tensors with them.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sonata {

enum class DType : uint8_t { f16, bf16, f32, f64, i32, i64, u8, boolean };

inline constexpr DType kAllDTypes[] = {DType::f16, DType::bf16, DType::f32, DType::f64,
                                       DType::i32, DType::i64,  DType::u8,  DType::boolean};

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);  // "f32", "bf16", ... as the CLI spells them
bool is_floating(DType dtype);
bool is_half(DType dtype);  // f16 or bf16: computed with fp32 accumulation
// Parses "f32", "float32", "fp16", "half", "bf16", "bfloat16", "int64", ...; throws on others.
DType parse_dtype(std::string_view name);
// PyTorch's promotion for two operands of a binary op (float beats int, wider wins,
// f16 with bf16 gives f32).
DType promote_types(DType a, DType b);

}  // namespace sonata
