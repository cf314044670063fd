// Element types. f32, f16 and bf16 are computed on; the integer types and bool exist so that
// checkpoints holding them can be read and validated; nf4 is reserved for QLoRA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tach {

enum class DType : uint8_t { f32, f16, bf16, f64, i64, i32, i16, i8, u8, boolean, nf4 };

// Bits per element: nf4 packs two elements per byte.
int dtype_bits(DType dt);
// Bytes for n elements, rounding a trailing half byte up.
size_t dtype_bytes(DType dt, size_t n);
std::string_view dtype_name(DType dt);  // "f32", "bf16", ...
// A compute dtype as the commands spell it: f32, bf16, f16, int8 (DType::i8: the linears
// quantized dynamically, everything else in f32) or nf4 (the linears' weights in 4-bit NF4,
// computed in f32); anything else is an error.
DType parse_compute_dtype(const std::string& name);
bool is_floating(DType dt);

// safetensors' spelling ("F32", "BF16", "I64", ...). parse returns false for unknown names.
std::string_view dtype_safetensors_name(DType dt);
bool parse_safetensors_dtype(std::string_view name, DType* out);

// Scalar conversions. Float to half types round to nearest, ties to even; NaN stays NaN
// (quiet), infinities stay infinite, values past the half range become infinities, and
// subnormals are produced and read exactly.
uint16_t f32_to_bf16(float x);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_f16(float x);
float f16_to_f32(uint16_t h);

// Bulk conversions. n elements; src and dst must not overlap.
void convert_to_f32(DType src_dtype, const void* src, float* dst, size_t n);
void convert_from_f32(DType dst_dtype, const float* src, void* dst, size_t n);

}  // namespace tach
