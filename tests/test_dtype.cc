#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "tach/dtype.h"

namespace tach {
namespace {

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

TEST(Bf16, RoundsToNearestEven) {
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties go to the even one (1.0).
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808000u)), 0x3f80);
  // Just above halfway rounds up.
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f808001u)), 0x3f81);
  // Halfway with an odd lower bit rounds up to even.
  EXPECT_EQ(f32_to_bf16(from_bits(0x3f818000u)), 0x3f82);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xc000);
}

TEST(Bf16, SpecialValues) {
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
  const uint16_t nan = f32_to_bf16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(bf16_to_f32(nan)));
  // A signalling NaN whose payload lives only in the low bits must not become infinity.
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(from_bits(0x7f800001u)))));
  // The largest float rounds to infinity (it is past bf16's largest finite value + half ulp).
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  // Subnormals keep their top bits.
  EXPECT_EQ(f32_to_bf16(from_bits(0x00010000u)), 0x0001);
  EXPECT_EQ(bf16_to_f32(0x0001), from_bits(0x00010000u));
  EXPECT_EQ(bits(bf16_to_f32(0x8000)), 0x80000000u);  // -0 stays -0
}

TEST(F16, RoundTripsEveryHalf) {
  // Every finite f16 converts to f32 and back unchanged; NaNs stay NaN.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f)))) << h;
      continue;
    }
    EXPECT_EQ(f32_to_f16(f), h) << "half 0x" << std::hex << h;
  }
}

TEST(F16, RoundsToNearestEvenAndOverflows) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  // 1 + 2^-11 is halfway between 1 and the next half: ties to even (1.0).
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);  // largest finite half
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);  // below the rounding boundary
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // at it: infinity
  EXPECT_EQ(f32_to_f16(-1e9f), 0xfc00);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
}

TEST(F16, Subnormals) {
  const float smallest = std::ldexp(1.0f, -24);  // smallest f16 subnormal
  EXPECT_EQ(f32_to_f16(smallest), 0x0001);
  EXPECT_EQ(f16_to_f32(0x0001), smallest);
  EXPECT_EQ(f32_to_f16(smallest / 2), 0x0000);      // exactly half: ties to even (0)
  EXPECT_EQ(f32_to_f16(smallest * 0.75f), 0x0001);  // above half rounds up
  EXPECT_EQ(f32_to_f16(smallest * 1.5f), 0x0002);   // tie between 1 and 2 goes to 2
  EXPECT_EQ(f32_to_f16(-smallest * 3), 0x8003);
  EXPECT_EQ(f16_to_f32(0x03ff), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.0f, -24)), 0x03ff);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -30)), 0x0000);  // f32 values far below vanish
}

TEST(DType, SafetensorsNames) {
  DType d;
  ASSERT_TRUE(parse_safetensors_dtype("BF16", &d));
  EXPECT_EQ(d, DType::bf16);
  EXPECT_FALSE(parse_safetensors_dtype("F8_E4M3", &d));
  EXPECT_FALSE(parse_safetensors_dtype("f32", &d));  // case matters in the format
  EXPECT_EQ(dtype_bytes(DType::nf4, 3), 2u);
  EXPECT_EQ(dtype_bytes(DType::bf16, 3), 6u);
}

TEST(DType, BulkConversionMatchesScalar) {
  float src[5] = {0.1f, -3.5f, 1e-8f, 70000.f, -0.0f};
  uint16_t h[5];
  float back[5];
  convert_from_f32(DType::f16, src, h, 5);
  convert_to_f32(DType::f16, h, back, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(bits(back[i]), bits(f16_to_f32(f32_to_f16(src[i]))));
}

}  // namespace
}  // namespace tach
