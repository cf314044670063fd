#include "ops/rope.h"

#include <algorithm>
#include <cmath>

#include "ops/activation_dtype.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"
#include "tach/error.h"

namespace tach::ops {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Llama 3.1: wavelengths longer than the old context / low_freq_factor are divided by factor,
// shorter than old / high_freq_factor kept, and those between blended smoothly (f32, as torch).
void llama3_scaling(std::vector<float>& inv, const RopeSettings& s) {
  const float old_len = float(s.original_max_positions), factor = float(s.factor);
  const float low = float(s.low_freq_factor), high = float(s.high_freq_factor);
  const float low_wavelen = old_len / low, high_wavelen = old_len / high;
  for (float& f : inv) {
    const float wavelen = float(2 * kPi) / f;
    float scaled = wavelen > low_wavelen ? f / factor : f;
    if (!(wavelen < high_wavelen) && !(wavelen > low_wavelen)) {
      const float smooth = (old_len / wavelen - low) / (high - low);
      scaled = (1 - smooth) * scaled / factor + smooth * scaled;
    }
    f = scaled;
  }
}

// YaRN: frequencies that turn fewer than beta_slow times over the old context are interpolated
// (divided by factor), more than beta_fast kept, with a linear ramp over the dimensions between.
void yarn_scaling(std::vector<float>& inv, const RopeSettings& s) {
  const double D = double(s.head_dim), base = s.theta, old_len = double(s.original_max_positions);
  auto correction_dim = [&](double rotations) {
    return D * std::log(old_len / (rotations * 2 * kPi)) / (2 * std::log(base));
  };
  double low = correction_dim(s.beta_fast), high = correction_dim(s.beta_slow);
  if (s.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0), high = std::min(high, D - 1);
  if (low == high) high += 0.001;  // no division by zero
  for (size_t i = 0; i < inv.size(); ++i) {
    const float ramp = std::clamp(float((double(i) - low) / (high - low)), 0.0f, 1.0f);
    const float extrapolation_weight = 1 - ramp;
    const float extrapolated = inv[i], interpolated = inv[i] / float(s.factor);
    inv[i] = interpolated * (1 - extrapolation_weight) + extrapolated * extrapolation_weight;
  }
}

double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

}  // namespace

std::vector<float> rope_inverse_frequencies(const RopeSettings& s, int64_t seq_len) {
  const int64_t D = s.head_dim;
  check(D > 0 && D % 2 == 0, "rope: head_dim must be even, got " + std::to_string(D));
  double base = s.theta;
  if (s.type == "dynamic" && seq_len > s.max_positions)
    base = base *
           std::pow(s.factor * double(seq_len) / double(s.max_positions) - (s.factor - 1), double(D) / double(D - 2));
  std::vector<float> inv(size_t(D / 2));
  for (int64_t i = 0; i < D / 2; ++i) {
    // transformers: 1 / base ** (arange(0, D, 2).float() / D), the exponent in f32.
    const float exponent = float(2 * i) / float(D);
    inv[size_t(i)] = float(1.0 / std::pow(base, double(exponent)));
    if (s.type == "linear") inv[size_t(i)] /= float(s.factor);
  }
  if (s.type == "llama3") llama3_scaling(inv, s);
  if (s.type == "yarn") yarn_scaling(inv, s);
  return inv;
}

double rope_attention_factor(const RopeSettings& s) {
  if (s.type != "yarn") return 1.0;
  if (s.attention_factor > 0) return s.attention_factor;
  if (s.mscale > 0 && s.mscale_all_dim > 0)
    return yarn_mscale(s.factor, s.mscale) / yarn_mscale(s.factor, s.mscale_all_dim);
  return yarn_mscale(s.factor, 1.0);
}

RopeTable rope_table(const Tensor& positions, const RopeSettings& s, int64_t seq_len) {
  return rope_table(positions, rope_inverse_frequencies(s, seq_len), rope_attention_factor(s));
}

RopeTable rope_table(const Tensor& positions, const std::vector<float>& inv_freq, double attention_factor) {
  const int64_t N = positions.numel(), F = int64_t(inv_freq.size());
  RopeTable t{Tensor::empty({N, F}, DType::f32), Tensor::empty({N, F}, DType::f32)};
  const int32_t* pos = positions.data<int32_t>();
  const float factor = float(attention_factor);
  float* c = t.cos.data<float>();
  float* s = t.sin.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < F; ++i) {
      const float angle = float(pos[n]) * inv_freq[size_t(i)];  // f32 product, as transformers
      c[n * F + i] = std::cos(angle) * factor;  // f32 times f32, as torch's emb.cos() * attention_scaling
      s[n * F + i] = std::sin(angle) * factor;
    }
  return t;
}

OpCost rope_cost(int64_t N, int64_t heads, int64_t D, DType dtype) {
  OpCost c;
  c.flops = double(N * heads * D) * 3;
  c.bytes_read = double(dtype_bytes(dtype, size_t(N * heads * D))) + double(N * D) * 4;  // the f32 tables
  c.bytes_written = double(dtype_bytes(dtype, size_t(N * heads * D)));
  return c;
}

namespace {

void rope(Tensor& qkv, int64_t q_heads, int64_t k_heads, int64_t D, const RopeTable& table, bool backward) {
  const char* name = backward ? "rope_backward" : "rope";
  const DType A = qkv.dtype();
  check((backward ? A == DType::f32 : is_activation_dtype(A)) && qkv.dim() == 2 && qkv.is_contiguous() && D > 0 &&
            qkv.size(1) >= (q_heads + k_heads) * D,
        std::string(name) + ": expected a contiguous " + (backward ? "f32" : "f32, bf16 or f16") +
            " [N, >= " + std::to_string((q_heads + k_heads) * D) + "] buffer, got " + qkv.describe());
  check_device(name, qkv.device(), {&table.cos, &table.sin});
  check_activation_dtype(name, qkv.device(), A);
  [[maybe_unused]] const bool cuda = on_cuda(name, qkv.device(), A);
  const int64_t N = qkv.size(0), ld = qkv.size(1);
  // The kernels read N·D/2 entries of each table: a table built for other rows would be read past
  // its end. (The message is built only on failure: a step calls this for every layer.)
  for (const Tensor* t : {&table.cos, &table.sin})
    if (t->dtype() != DType::f32 || t->numel() != N * (D / 2) || !dense(*t))
      bad_tensor(name, "cos/sin table", *t,
                 "a contiguous f32 [" + std::to_string(N) + ", " + std::to_string(D / 2) + "] for " +
                     std::to_string(N) + " rows");
  core::Span span(core::SpanKind::op, name);
  if (span.active()) {
    const OpCost c = rope_cost(N, q_heads + k_heads, D, A);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(
        core::concat("q [", N, ", ", q_heads, "x", D, "], k [", N, ", ", k_heads, "x", D, "] ", dtype_name(A)));
  }
#if TACH_HAS_CUDA
  if (cuda) {
    // q's and k's heads sit side by side in the row, so one launch rotates both.
    rope_rotate_cuda(qkv.device().index, A, qkv.raw(), N, q_heads + k_heads, D, ld, table.cos.data<float>(),
                     table.sin.data<float>(), backward);
    return;
  }
#endif
  float* x = qkv.data<float>();
  rope_rotate_cpu(x, N, q_heads, D, ld, table, backward);
  rope_rotate_cpu(x + q_heads * D, N, k_heads, D, ld, table, backward);
}

}  // namespace

void rope_forward(Tensor& qkv, int64_t q_heads, int64_t k_heads, int64_t D, const RopeTable& table) {
  rope(qkv, q_heads, k_heads, D, table, false);
}

void rope_backward(Tensor& d_qkv, int64_t q_heads, int64_t k_heads, int64_t D, const RopeTable& table) {
  rope(d_qkv, q_heads, k_heads, D, table, true);
}

}  // namespace tach::ops
