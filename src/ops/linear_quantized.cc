#include "ops/linear_quantized.h"

#include "cpu/int8_quant.h"
#include "cpu/nf4.h"
#include "tach/error.h"

namespace tach::ops {

namespace {

Tensor host_f32(const Tensor& w) {
  check(w.dim() == 2, "quantizing a linear weight: it must be [out, in], got " + w.describe());
  return w.on(Device::cpu(), MemoryCategory::workspace).to(DType::f32, MemoryCategory::workspace).contiguous();
}

}  // namespace

QuantizedWeight quantize_int8_weight(const Tensor& w) {
  const Tensor f = host_f32(w);
  const int64_t N = f.size(0), K = f.size(1);
  QuantizedWeight q;
  q.codes = Tensor::empty({N, K}, DType::i8, Device::cpu(), MemoryCategory::workspace);
  q.scales = Tensor::empty({N}, DType::f32, Device::cpu(), MemoryCategory::workspace);
  cpu::quantize_rows_symmetric(f.data<float>(), N, K, K, 127, q.codes.data<int8_t>(), q.scales.data<float>());
  return q;
}

QuantizedWeight quantize_nf4_weight(const Tensor& w) {
  const Tensor f = host_f32(w);
  const int64_t N = f.size(0), K = f.size(1);
  check(N * K % cpu::kNf4Block == 0,
        "linear in nf4: the weight " + w.describe() + " does not split into blocks of 64 (bitsandbytes' block size)");
  const cpu::Nf4Tensor t = cpu::quantize_nf4(f.data<float>(), N, K);
  QuantizedWeight q;
  q.codes = t.codes.on(Device::cpu(), MemoryCategory::workspace);
  q.scales = Tensor::empty({N * K / cpu::kNf4Block}, DType::f32, Device::cpu(), MemoryCategory::workspace);
  t.absmax(q.scales.data<float>());
  return q;
}

Tensor dequantize_weight(const QuantizedWeight& q, DType compute, int64_t N, int64_t K) {
  check(compute == DType::i8 || compute == DType::nf4,
        "dequantize_weight: " + std::string(dtype_name(compute)) + " is not a quantized dtype (int8, nf4)");
  const Tensor codes = q.codes.on(Device::cpu(), MemoryCategory::workspace);
  const Tensor scales = q.scales.on(Device::cpu(), MemoryCategory::workspace);
  Tensor out = Tensor::empty({N, K}, DType::f32, Device::cpu(), MemoryCategory::workspace);
  float* o = out.data<float>();
  const float* s = scales.data<float>();
  if (compute == DType::i8) {
    const int8_t* c = codes.data<int8_t>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) o[n * K + k] = float(c[n * K + k]) * s[n];
    return out;
  }
  const uint8_t* c = codes.data<uint8_t>();
  const float* book = cpu::nf4_code_book();
  for (int64_t i = 0; i < N * K; ++i) {
    const uint8_t byte = c[i / 2];
    const int code = i % 2 == 0 ? byte >> 4 : byte & 0x0F;
    o[i] = book[code] * s[i / cpu::kNf4Block];
  }
  return out;
}

}  // namespace tach::ops
