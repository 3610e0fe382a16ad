#pragma once
// Number formats of the emulated libraries, written here rather than taken from sonata's
// base/half.h: the libraries' results are compared with sonata's own CPU kernels, so they
// must not share code with them.
#include <cstdint>

namespace sonata::emu {

// IEEE binary16 and bfloat16 stored as their bits; conversions round to nearest even.
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float value);

// What a tensor core does to an fp32 operand in TF32 mode: keeps 10 mantissa bits, rounding
// to nearest with ties away from zero (the cvt.rna.tf32.f32 conversion).
float round_to_tf32(float value);

// A value of one of the element types the libraries read and write, as a double, and back
// (rounded to the type; integers saturate nowhere, they wrap as a cast does).
enum class Elem { f16, bf16, f32, f64, i8, u8, i32, u32, i64, u64 };
int elem_size(Elem elem);
const char* elem_name(Elem elem);
double load_elem(Elem elem, const void* base, int64_t index);
void store_elem(Elem elem, void* base, int64_t index, double value);

}  // namespace sonata::emu
