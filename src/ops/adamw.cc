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

#if TACH_HAS_CUDA
// The device chunk records of t, uploaded again only when a listed tensor's storage moved (the
// optimizer lists its tensors once: every later step compares pointers and uploads nothing).
const AdamWTensors::DeviceChunk* device_chunks(const AdamWTensors& t, Device device) {
  std::vector<AdamWTensors::DeviceChunk>& host = t.device_chunks_host;
  bool same = host.size() == t.chunks.size() && t.device_chunks.defined() && t.device_chunks.device() == device;
  for (size_t k = 0; same && k < t.chunks.size(); ++k) {
    const AdamWTensors::Chunk& ch = t.chunks[k];
    same = host[k].param == t.params[ch.tensor].data<float>() + ch.begin &&
           host[k].grad == t.grads[ch.tensor].data<float>() + ch.begin &&
           host[k].m == t.m[ch.tensor].data<float>() + ch.begin && host[k].v == t.v[ch.tensor].data<float>() + ch.begin;
  }
  if (!same) {
    host.clear();
    for (const AdamWTensors::Chunk& ch : t.chunks) {
      const size_t i = ch.tensor;
      host.push_back({t.params[i].data<float>() + ch.begin, t.grads[i].data<float>() + ch.begin,
                      t.m[i].data<float>() + ch.begin, t.v[i].data<float>() + ch.begin, ch.end - ch.begin,
                      int64_t(t.decay[i])});
    }
    const int64_t bytes = int64_t(host.size() * sizeof(AdamWTensors::DeviceChunk));
    const Tensor staged = Tensor::from_borrowed(host.data(), {bytes}, DType::u8, nullptr);
    t.device_chunks = staged.to_device(device, MemoryCategory::optimizer_state);
  }
  return static_cast<const AdamWTensors::DeviceChunk*>(t.device_chunks.raw());
}

// One launch over every chunk (the fused span) or one per tensor (a span "adamw" each), as the CPU.
void adamw_update_on_cuda(const AdamWTensors& t, int64_t step, const AdamWConfig& c, bool chunked, Device device) {
  const AdamWTensors::DeviceChunk* chunks = device_chunks(t, device);
  const AdamWScalars s = adamw_scalars(step, c, c.weight_decay != 0.f);
  if (chunked) {
    core::Span span(core::SpanKind::op, "adamw_fused");
    if (span.active()) {
      const OpCost cost = adamw_cost(t.elements);
      span.set_cost(cost.flops, cost.bytes());
    }
    adamw_update_cuda(device.index, chunks, int64_t(t.chunks.size()), s);
    return;
  }
  int64_t first = 0;  // tensor i's chunks follow tensor i - 1's
  for (size_t i = 0; i < t.params.size(); ++i) {
    const int64_t numel = t.params[i].numel();
    const int64_t count = (numel + AdamWTensors::kChunk - 1) / AdamWTensors::kChunk;
    core::Span span(core::SpanKind::op, "adamw");
    if (span.active()) {
      const OpCost cost = adamw_cost(numel);
      span.set_cost(cost.flops, cost.bytes());
    }
    adamw_update_cuda(device.index, chunks + first, count, s);
    first += count;
  }
}
#endif

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
  if (on_cuda("adamw", device, DType::f32)) {
#if TACH_HAS_CUDA
    adamw_update_on_cuda(t, step, c, chunked, device);
#endif
    return;
  }
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
