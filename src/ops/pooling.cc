#include "ops/pooling.h"

#include "ops/activation_dtype.h"
#include "ops/dispatch.h"

namespace tach::ops {

const char* pooling_mode_name(PoolingMode mode) {
  switch (mode) {
    case PoolingMode::cls: return "cls";
    case PoolingMode::max: return "max";
    case PoolingMode::mean: return "mean";
    case PoolingMode::mean_sqrt_len: return "mean_sqrt_len";
    case PoolingMode::weighted_mean: return "weighted_mean";
    case PoolingMode::last_token: return "last_token";
  }
  return "?";
}

OpCost pooling_cost(int64_t B, int64_t T, int64_t C, size_t modes, DType hidden_dtype) {
  OpCost c;
  c.flops = double(B * T * C) * double(modes);  // one add (or max, or multiply-add) per element per mode
  c.bytes_read = double(dtype_bytes(hidden_dtype, size_t(B * T * C))) * double(modes) + double(B * T) * 4;
  c.bytes_written = double(B * C) * 4 * double(modes);
  return c;
}

OpCost l2_normalize_cost(int64_t B, int64_t E) {
  OpCost c;
  c.flops = double(B * E) * 3;
  c.bytes_read = double(B * E) * 8;  // two passes: the norm, then the division
  c.bytes_written = double(B * E) * 4;
  return c;
}

void pooling_forward(Tensor& out, const Tensor& hidden, const Tensor& mask, const std::vector<PoolingMode>& modes) {
  const DType A = hidden.dtype();
  check(hidden.dim() == 3 && is_activation_dtype(A) && hidden.is_contiguous(),
        "pooling: hidden must be contiguous f32, bf16 or f16 [B, T, C], got " + hidden.describe());
  const int64_t B = hidden.size(0), T = hidden.size(1), C = hidden.size(2);
  check(mask.dim() == 2 && mask.dtype() == DType::i32 && mask.size(0) == B && mask.size(1) == T && mask.is_contiguous(),
        "pooling: mask must be i32 [" + std::to_string(B) + ", " + std::to_string(T) + "], got " + mask.describe());
  check(!modes.empty(), "pooling: no pooling mode");
  const auto E = int64_t(modes.size()) * C;
  check(out.dim() == 2 && out.size(0) == B && out.size(1) == E && out.dtype() == DType::f32 && out.is_contiguous(),
        "pooling: out must be f32 [" + std::to_string(B) + ", " + std::to_string(E) + "], got " + out.describe());
  check_device("pooling", hidden.device(), {&mask, &out});
  check_activation_dtype("pooling", hidden.device(), A);
  [[maybe_unused]] const bool cuda = on_cuda("pooling", hidden.device(), A);
  core::Span span(core::SpanKind::op, "pooling");
  if (span.active()) {
    const OpCost c = pooling_cost(B, T, C, modes.size(), A);
    span.set_cost(c.flops, c.bytes());
    std::string names;
    for (auto m : modes) {
      if (!names.empty()) names += '+';
      names += pooling_mode_name(m);
    }
    span.set_detail(core::concat("[", B, ", ", T, ", ", C, "] ", dtype_name(A), " ", names, " -> f32"));
  }
  for (size_t i = 0; i < modes.size(); ++i) {
    float* o = out.data<float>() + int64_t(i) * C;
#if TACH_HAS_CUDA
    if (cuda) {
      pooling_forward_cuda(hidden.device().index, o, E, hidden.raw(), A, mask.data<int32_t>(), B, T, C, modes[i]);
      continue;
    }
#endif
    pooling_forward_cpu(o, E, hidden.data<float>(), mask.data<int32_t>(), B, T, C, modes[i]);
  }
}

void l2_normalize_forward(Tensor& x) {
  check(x.dim() == 2 && x.dtype() == DType::f32 && x.is_contiguous(),
        "l2_normalize: x must be contiguous f32 [B, E], got " + x.describe());
  [[maybe_unused]] const bool cuda = on_cuda("l2_normalize", x.device(), x.dtype());
  core::Span span(core::SpanKind::op, "l2_normalize");
  if (span.active()) {
    const OpCost c = l2_normalize_cost(x.size(0), x.size(1));
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", x.size(0), ", ", x.size(1), "] f32"));
  }
#if TACH_HAS_CUDA
  if (cuda) return l2_normalize_forward_cuda(x.device().index, x.data<float>(), x.size(0), x.size(1));
#endif
  l2_normalize_forward_cpu(x.data<float>(), x.size(0), x.size(1));
}

}  // namespace tach::ops
