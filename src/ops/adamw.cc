#include "ops/adamw.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

namespace {

// Allocates nothing unless it fails: a step checks every trainable tensor.
void check_entry(const AdamWTensors& t, size_t i, Device device) {
  const Tensor& p = t.params[i];
  if (!p.defined() || p.dtype() != DType::f32 || !dense(p))
    bad_tensor("adamw", "parameter", p, "a contiguous f32 tensor");
  const int64_t n = p.numel();
  expect_f32("adamw", "gradient", t.grads[i], n);
  expect_f32("adamw", "exp_avg", t.m[i], n);
  expect_f32("adamw", "exp_avg_sq", t.v[i], n);
  check_device("adamw", device, {&p, &t.grads[i], &t.m[i], &t.v[i]});
}

}  // namespace

void AdamWTensors::add(const Tensor& param, const Tensor& grad, const Tensor& m_, const Tensor& v_, bool decay_) {
  params.push_back(param);
  grads.push_back(grad);
  m.push_back(m_);
  v.push_back(v_);
  decay.push_back(decay_);
  const size_t i = params.size() - 1;
  const int64_t n = param.defined() ? param.numel() : 0;
  for (int64_t b = 0; b < n; b += kChunk) chunks.push_back({i, b, std::min(n, b + kChunk)});
  elements += n;
}

OpCost adamw_cost(int64_t n) {
  OpCost c;
  c.flops = 12.0 * double(n);
  c.bytes_read = 16.0 * double(n);
  c.bytes_written = 12.0 * double(n);
  return c;
}

void adamw_update(const AdamWTensors& t, int64_t step, const AdamWConfig& c, bool chunked) {
  const size_t n = t.params.size();
  if (t.grads.size() != n || t.m.size() != n || t.v.size() != n || t.decay.size() != n)
    throw Error("adamw: " + std::to_string(n) + " parameters listed with " + std::to_string(t.grads.size()) +
                " gradients and " + std::to_string(t.m.size()) + " and " + std::to_string(t.v.size()) + " moments");
  if (n == 0) return;  // nothing trains
  if (step < 1) throw Error("adamw: step counts from 1, got " + std::to_string(step));
  if (!std::isfinite(c.lr) || c.lr < 0) throw Error("adamw: learning rate must be a finite number >= 0");
  const Device device = t.params.front().device();
  for (size_t i = 0; i < n; ++i) check_entry(t, i, device);
  if (on_cuda("adamw", device, DType::f32)) unsupported("adamw", device, DType::f32);
  if (!chunked) {
    for (size_t i = 0; i < n; ++i) {
      const int64_t numel = t.params[i].numel();
      core::Span span(core::SpanKind::op, "adamw");
      if (span.active()) {
        const OpCost cost = adamw_cost(numel);
        span.set_cost(cost.flops, cost.bytes());
      }
      adamw_update_cpu(t.params[i].data<float>(), t.grads[i].data<float>(), t.m[i].data<float>(), t.v[i].data<float>(),
                       numel, step, c, t.decay[i] && c.weight_decay != 0.f);
    }
    return;
  }
  core::Span span(core::SpanKind::op, "adamw_fused");
  if (span.active()) {
    const OpCost cost = adamw_cost(t.elements);
    span.set_cost(cost.flops, cost.bytes());
  }
  adamw_update_chunks_cpu(t, step, c);
}

}  // namespace tach::ops
