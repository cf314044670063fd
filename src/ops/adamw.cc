#include "ops/adamw.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "ops/dispatch.h"
#include "ops/grad_norm.h"
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

// The clip's coefficient for a host-side norm, or nullopt when the norm is not finite (the update
// is skipped). No norm: 1.
std::optional<float> host_grad_scale(const AdamWClip& clip) {
  if (!clip.norm.defined()) return 1.0f;
  const double norm = clip.norm.data<double>()[0];
  if (!std::isfinite(norm)) return std::nullopt;
  return clip.max_norm > 0 ? clip_coefficient(norm, clip.max_norm) : 1.0f;
}

}  // namespace

#if TACH_HAS_CUDA
// The device chunk records, uploaded again only when a listed tensor's storage moved (the
// optimizer lists its tensors once: every later step compares pointers and uploads nothing).
const AdamWTensors::DeviceChunk* AdamWTensors::device_records(Device device) const {
  std::vector<DeviceChunk>& host = device_chunks_host;
  bool same = host.size() == chunks.size() && device_chunks.defined() && device_chunks.device() == device;
  for (size_t k = 0; same && k < chunks.size(); ++k) {
    const Chunk& ch = chunks[k];
    same = host[k].param == params[ch.tensor].data<float>() + ch.begin &&
           host[k].grad == grads[ch.tensor].data<float>() + ch.begin &&
           host[k].m == m[ch.tensor].data<float>() + ch.begin && host[k].v == v[ch.tensor].data<float>() + ch.begin;
  }
  if (!same) {
    host.clear();
    for (const Chunk& ch : chunks) {
      const size_t i = ch.tensor;
      host.push_back({params[i].data<float>() + ch.begin, grads[i].data<float>() + ch.begin,
                      m[i].data<float>() + ch.begin, v[i].data<float>() + ch.begin, ch.end - ch.begin,
                      int64_t(decay[i])});
    }
    const int64_t bytes = int64_t(host.size() * sizeof(DeviceChunk));
    const Tensor staged = Tensor::from_borrowed(host.data(), {bytes}, DType::u8, nullptr);
    device_chunks = staged.to_device(device, MemoryCategory::optimizer_state);
  }
  return static_cast<const DeviceChunk*>(device_chunks.raw());
}
#else
const AdamWTensors::DeviceChunk* AdamWTensors::device_records(Device device) const {
  throw Error("adamw: no CUDA in this build for " + device.str());
}
#endif

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

void adamw_update(const AdamWTensors& t, int64_t step, const AdamWConfig& c, bool fused, const AdamWClip& clip) {
  const size_t n = t.params.size();
  if (t.grads.size() != n || t.m.size() != n || t.v.size() != n || t.decay.size() != n)
    throw Error("adamw: " + std::to_string(n) + " parameters listed with " + std::to_string(t.grads.size()) +
                " gradients and " + std::to_string(t.m.size()) + " and " + std::to_string(t.v.size()) + " moments");
  if (n == 0) return;  // nothing trains
  if (step < 1) throw Error("adamw: step counts from 1, got " + std::to_string(step));
  if (!std::isfinite(c.lr) || c.lr < 0) throw Error("adamw: learning rate must be a finite number >= 0");
  const Device device = t.params.front().device();
  for (size_t i = 0; i < n; ++i) check_entry(t, i, device);
  if (clip.norm.defined()) expect_f64_on("adamw", "gradient norm", clip.norm, 1, device);
  const bool cuda = on_cuda("adamw", device, DType::f32);
  // One span for the whole update: every element's cost, whichever device runs it.
  core::Span span(core::SpanKind::op, fused ? "adamw_fused" : "adamw");
  if (span.active()) {
    const OpCost cost = adamw_cost(t.elements);
    span.set_cost(cost.flops, cost.bytes());
  }
  if (cuda) {
#if TACH_HAS_CUDA
    // The norm stays on the device: the kernel reads it and skips or scales there.
    adamw_update_cuda(device.index, t.device_records(device), int64_t(t.chunks.size()),
                      adamw_scalars(step, c, c.weight_decay != 0.f),
                      clip.norm.defined() ? clip.norm.data<double>() : nullptr, clip.max_norm);
#endif
    return;
  }
  const std::optional<float> scale = host_grad_scale(clip);
  if (scale) adamw_update_chunks_cpu(t, step, c, *scale);
}

}  // namespace tach::ops
