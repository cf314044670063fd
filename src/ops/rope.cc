#include "ops/rope.h"

#include <cmath>

#include "core/parallel.h"
#include "tach/error.h"

namespace tach::ops {

std::vector<float> rope_inverse_frequencies(const RopeSettings& s, int64_t seq_len) {
  const int64_t D = s.head_dim;
  check(D > 0 && D % 2 == 0, "rope: head_dim must be even, got " + std::to_string(D));
  double base = s.theta;
  if (s.type == "dynamic" && seq_len > s.max_positions)
    base = base * std::pow(s.factor * double(seq_len) / double(s.max_positions) - (s.factor - 1),
                           double(D) / double(D - 2));
  std::vector<float> inv(size_t(D / 2));
  for (int64_t i = 0; i < D / 2; ++i) {
    // transformers: 1 / base ** (arange(0, D, 2).float() / D), the exponent in f32.
    const float exponent = float(2 * i) / float(D);
    inv[size_t(i)] = float(1.0 / std::pow(base, double(exponent)));
    if (s.type == "linear") inv[size_t(i)] /= float(s.factor);
  }
  return inv;
}

RopeTable rope_table(const Tensor& positions, const std::vector<float>& inv_freq) {
  const int64_t N = positions.numel(), F = int64_t(inv_freq.size());
  RopeTable t{Tensor::empty({N, F}, DType::f32), Tensor::empty({N, F}, DType::f32)};
  const int32_t* pos = positions.data<int32_t>();
  float* c = t.cos.data<float>();
  float* s = t.sin.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < F; ++i) {
      const float angle = float(pos[n]) * inv_freq[size_t(i)];  // f32 product, as transformers
      c[n * F + i] = std::cos(angle);
      s[n * F + i] = std::sin(angle);
    }
  return t;
}

OpCost rope_cost(int64_t N, int64_t heads, int64_t D) {
  OpCost c;
  c.flops = double(N * heads * D) * 3;
  c.bytes_read = double(N * heads * D) * 4 + double(N * D) * 4;
  c.bytes_written = double(N * heads * D) * 4;
  return c;
}

void rope_forward(float* x, int64_t N, int64_t heads, int64_t D, int64_t ld, const RopeTable& table) {
  const int64_t F = D / 2;
  check(table.cos.numel() == N * F, "rope: the table has " + std::to_string(table.cos.numel()) + " entries for " +
                                        std::to_string(N) + " rows of " + std::to_string(F) + " frequencies");
  const float* cs = table.cos.data<float>();
  const float* sn = table.sin.data<float>();
  core::parallel_for(N, 8, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const float* c = cs + n * F;
      const float* s = sn + n * F;
      for (int64_t h = 0; h < heads; ++h) {
        float* a = x + n * ld + h * D;  // first half
        float* b = a + F;               // second half
#pragma omp simd
        for (int64_t i = 0; i < F; ++i) {
          const float x1 = a[i], x2 = b[i];
          a[i] = x1 * c[i] - x2 * s[i];  // q*cos + rotate_half(q)*sin, first half: -x2
          b[i] = x2 * c[i] + x1 * s[i];  // second half: +x1
        }
      }
    }
  });
}

}  // namespace tach::ops
