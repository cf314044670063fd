#include "ops/dropout.h"

#include <cstring>

#include "core/trace.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

namespace {

// splitmix64's finaliser: spreads (seed, micro-batch, site) over all 64 bits of the key.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

uint64_t dropout_key(uint64_t seed, int64_t micro_batch, int64_t site) {
  return mix64(mix64(seed * 0x9e3779b97f4a7c15ull + uint64_t(micro_batch)) + uint64_t(site) * 0xd1b54a32d192ed03ull);
}

OpCost dropout_cost(int64_t n) {
  OpCost c;
  c.flops = double(n);
  c.bytes_read = double(n) * 4;
  c.bytes_written = double(n) * 4;
  return c;
}

namespace {

// Both directions: the same mask on the same elements.
void run_dropout(const char* op, const Tensor& out, const Tensor& in, float p, uint64_t key, bool forward) {
  const int64_t n = in.numel();
  expect_f32(op, "input", in, n);
  expect_f32(op, "output", out, n);
  check_device(op, in.device(), {&out});
  if (!(p >= 0.f && p < 1.f)) throw Error(std::string(op) + ": p " + std::to_string(p) + " is outside [0, 1)");
  if (p == 0.f && out.raw() == in.raw()) return;
  [[maybe_unused]] const bool cuda = on_cuda(op, in.device(), DType::f32);
#if TACH_HAS_CUDA
  if (cuda && p == 0.f) {
    dropout_cuda(in.device().index, out.data<float>(), in.data<float>(), n, p, key);  // a copy
    return;
  }
#endif
  if (p == 0.f) {
    std::memcpy(out.raw(), in.raw(), in.nbytes());
    return;
  }
  core::Span span(core::SpanKind::op, op);
  if (span.active()) {
    const OpCost c = dropout_cost(n);
    span.set_cost(c.flops, c.bytes());
  }
#if TACH_HAS_CUDA
  if (cuda) {
    dropout_cuda(in.device().index, out.data<float>(), in.data<float>(), n, p, key);  // both directions: one mask
    return;
  }
#endif
  if (forward) dropout_forward_cpu(out.data<float>(), in.data<float>(), n, p, key);
  else dropout_backward_cpu(out.data<float>(), in.data<float>(), n, p, key);
}

}  // namespace

void dropout_forward(const Tensor& out, const Tensor& x, float p, uint64_t key) {
  run_dropout("dropout", out, x, p, key, true);
}

void dropout_backward(const Tensor& dx, const Tensor& dout, float p, uint64_t key) {
  run_dropout("dropout_backward", dx, dout, p, key, false);
}

}  // namespace tach::ops
