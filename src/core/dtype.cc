#include "tach/dtype.h"

#include <bit>
#include <cstring>

#include "tach/error.h"

namespace tach {

int dtype_bits(DType dt) {
  switch (dt) {
    case DType::f64:
    case DType::i64: return 64;
    case DType::f32:
    case DType::i32: return 32;
    case DType::f16:
    case DType::bf16:
    case DType::i16: return 16;
    case DType::i8:
    case DType::u8:
    case DType::boolean: return 8;
    case DType::nf4: return 4;
  }
  throw Error("dtype_bits: invalid dtype");
}

size_t dtype_bytes(DType dt, size_t n) { return (n * static_cast<size_t>(dtype_bits(dt)) + 7) / 8; }

std::string_view dtype_name(DType dt) {
  switch (dt) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
    case DType::i64: return "i64";
    case DType::i32: return "i32";
    case DType::i16: return "i16";
    case DType::i8: return "int8";
    case DType::u8: return "u8";
    case DType::boolean: return "bool";
    case DType::nf4: return "nf4";
  }
  return "?";
}

DType parse_compute_dtype(const std::string& name) {
  if (name == "f32") return DType::f32;
  if (name == "bf16") return DType::bf16;
  if (name == "f16") return DType::f16;
  if (name == "int8") return DType::i8;
  if (name == "nf4") return DType::nf4;
  throw Error("dtype '" + name + "': expected f32, bf16, int8 or nf4 (or f16 on cuda)");
}

bool is_floating(DType dt) { return dt == DType::f32 || dt == DType::f16 || dt == DType::bf16 || dt == DType::f64; }

namespace {
struct SafetensorsName {
  std::string_view name;
  DType dtype;
};
// nf4 has no safetensors spelling: QLoRA stores it as U8 with its own metadata.
constexpr SafetensorsName kSafetensorsNames[] = {
    {"F32", DType::f32}, {"F16", DType::f16}, {"BF16", DType::bf16}, {"F64", DType::f64}, {"I64", DType::i64},
    {"I32", DType::i32}, {"I16", DType::i16}, {"I8", DType::i8},     {"U8", DType::u8},   {"BOOL", DType::boolean},
};
}  // namespace

std::string_view dtype_safetensors_name(DType dt) {
  for (const auto& e : kSafetensorsNames)
    if (e.dtype == dt) return e.name;
  return "?";
}

bool parse_safetensors_dtype(std::string_view name, DType* out) {
  for (const auto& e : kSafetensorsNames) {
    if (e.name == name) {
      *out = e.dtype;
      return true;
    }
  }
  return false;
}

uint16_t f32_to_bf16(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  // Round to nearest even: add 0x7fff plus the lowest kept bit, then truncate. Overflow
  // of the largest finite values carries into the exponent and yields inf, as it should.
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

uint16_t f32_to_f16(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t mag = bits & 0x7fffffffu;
  if (mag > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));  // NaN
  if (mag >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (mag < 0x38800000u) {
    // Result is an f16 subnormal (or zero): value = m * 2^-24 with m < 1024.
    if (mag < 0x33000000u) return static_cast<uint16_t>(sign);  // below 2^-25: rounds to zero
    const uint32_t exp = mag >> 23;                             // 102..112
    const uint32_t mant = (mag & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14..24: bits dropped from the 24-bit mantissa
    uint32_t m = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (m & 1u))) ++m;
    return static_cast<uint16_t>(sign | m);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  uint32_t h = ((mag - 0x38000000u) >> 13);
  const uint32_t rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return std::bit_cast<float>(sign);
  // Subnormal: normalise the mantissa.
  int e = -1;
  do {
    ++e;
    mant <<= 1;
  } while ((mant & 0x400u) == 0);
  return std::bit_cast<float>(sign | static_cast<uint32_t>(112 - e) << 23 | ((mant & 0x3ffu) << 13));
}

void convert_to_f32(DType src_dtype, const void* src, float* dst, size_t n) {
  switch (src_dtype) {
    case DType::f32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::bf16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::f16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case DType::f64: {
      const auto* s = static_cast<const double*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
    default: throw Error("convert_to_f32: cannot convert " + std::string(dtype_name(src_dtype)) + " to f32");
  }
}

void convert_from_f32(DType dst_dtype, const float* src, void* dst, size_t n) {
  switch (dst_dtype) {
    case DType::f32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::bf16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    case DType::f16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    default: throw Error("convert_from_f32: cannot convert f32 to " + std::string(dtype_name(dst_dtype)));
  }
}

}  // namespace tach
