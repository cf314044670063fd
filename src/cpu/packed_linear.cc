#include "cpu/packed_linear.h"
#include "cpu/gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "cpu/bf16_weight_linear.h"
#include "cpu/int8_linear.h"
#include "cpu/nf4_linear.h"
#include "cpu/onednn_engine.h"
#include "cpu/panel_linear.h"
#include "cpu/vec_math.h"
#include "tach/error.h"

namespace tach::cpu {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct PackedLinear::Impl {
  dnnl::memory::desc weights_md;             // packed layout
  dnnl::memory weights;                      // packed bytes, owned by oneDNN's memory object
  std::shared_ptr<Storage> weights_storage;  // our counted allocation behind `weights`
  dnnl::memory bias;
  bool has_bias = false;
  bool gelu_after = false;  // GELU applied by vec_math after the GEMM, not as a post-op
  dnnl::primitive_attr attr;
  dt src_dt = dt::f32;
  mutable std::mutex mu;
  mutable std::map<int64_t, dnnl::matmul> by_rows;  // one primitive per M (and stride)

  dnnl::matmul::primitive_desc make_pd(int64_t M, int64_t K, int64_t N, int64_t ldx, int64_t ldy,
                                       const dnnl::memory::desc& w) const {
    dnnl::memory::desc src({M, K}, src_dt, {ldx, 1});
    dnnl::memory::desc dst({M, N}, dt::f32, {ldy, 1});
    dnnl::memory::desc b = has_bias ? dnnl::memory::desc({1, N}, dt::f32, tag::ab) : dnnl::memory::desc();
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, w, b, dst), attr, onednn_engine());
  }
};

PackedLinear::PackedLinear(const Tensor& weight, const Tensor& bias, DType compute, FusedActivation activation,
                           int64_t packing_rows, bool decoding)
    : impl_(std::make_unique<Impl>()), compute_(compute), has_bias_(bias.defined()) {
  check(weight.dim() == 2, "PackedLinear: weight must be [out, in], got " + weight.describe());
  check(
      compute == DType::f32 || compute == DType::bf16 || compute == DType::i8 || compute == DType::nf4,
      "linear on cpu: compute dtype " + std::string(dtype_name(compute)) + " is not supported (f32, bf16, int8, nf4)");

  N_ = weight.size(0);
  K_ = weight.size(1);
  if (compute == DType::bf16 && !onednn_bf16_supported()) {
    bf16_weights_ = std::make_unique<Bf16WeightLinear>(weight, bias, activation);
    return;
  }
  if (compute == DType::i8) {
    int8_ = std::make_unique<Int8Linear>(weight, bias, activation, packing_rows);
    return;
  }
  if (compute == DType::nf4) {
    // A weight that does not split into 64-blocks (a small head: [labels, hidden]) stays f32,
    // as bitsandbytes users keep such modules out of quantization; its spans then say f32.
    if (N_ * K_ % kNf4Block == 0) {
      nf4_ = std::make_unique<Nf4Linear>(weight, bias, activation);
      return;
    }
    compute_ = compute = DType::f32;
  }
  if (compute == DType::f32 && PanelLinear::chosen_for(decoding)) {
    panels_ = std::make_unique<PanelLinear>(weight, bias, activation);
    return;
  }
  impl_->src_dt = compute == DType::bf16 ? dt::bf16 : dt::f32;
  // oneDNN 2.6 applies a gelu_erf post-op outside its JIT kernels (~4 ns per element, +40% on
  // an FFN GEMM); our vectorised pass after the GEMM costs a fraction of that (docs/perf.md).
  impl_->gelu_after = activation == FusedActivation::gelu_erf;
  if (activation != FusedActivation::none && !impl_->gelu_after) {
    dnnl::post_ops po;
    const dnnl::algorithm alg = activation == FusedActivation::gelu_erf    ? dnnl::algorithm::eltwise_gelu_erf
                                : activation == FusedActivation::relu      ? dnnl::algorithm::eltwise_relu
                                : activation == FusedActivation::gelu_tanh ? dnnl::algorithm::eltwise_gelu_tanh
                                                                           : dnnl::algorithm::eltwise_tanh;
    po.append_eltwise(1.0f, alg, 0.0f, 0.0f);
    impl_->attr.set_post_ops(po);
  }
  impl_->has_bias = bias.defined();
  if (impl_->has_bias) {
    check(bias.numel() == N_, "PackedLinear: bias " + bias.describe() + " does not match weight " + weight.describe());
    Tensor b32 = bias.to(DType::f32, MemoryCategory::weights);
    impl_->bias = dnnl::memory({{1, N_}, dt::f32, tag::ab}, onednn_engine());
    std::memcpy(impl_->bias.get_data_handle(), b32.raw(), static_cast<size_t>(N_) * sizeof(float));
  }

  // Logical weights for matmul are [K, N]; our [N, K] row-major storage is that with strides {1, K}.
  Tensor w = weight.to(compute, MemoryCategory::workspace).contiguous();
  dnnl::memory::desc plain({K_, N_}, impl_->src_dt, {1, K_});
  dnnl::memory::desc any({K_, N_}, impl_->src_dt, tag::any);
  auto pd = impl_->make_pd(packing_rows, K_, N_, K_, N_, any);
  impl_->weights_md = pd.weights_desc();
  impl_->weights_storage = Storage::allocate(Device::cpu(), impl_->weights_md.get_size(), MemoryCategory::weights);
  impl_->weights = dnnl::memory(impl_->weights_md, onednn_engine(), impl_->weights_storage->data());
  dnnl::memory src(plain, onednn_engine(), w.raw());
  dnnl::stream s(onednn_engine());
  dnnl::reorder(src, impl_->weights).execute(s, src, impl_->weights);
  s.wait();
}

PackedLinear::~PackedLinear() = default;

void add_bias_rows(float* y, int64_t M, int64_t N, int64_t ld, const float* bias) {
  if (bias == nullptr) return;
  for (int64_t m = 0; m < M; ++m)
#pragma omp simd
    for (int64_t n = 0; n < N; ++n) y[m * ld + n] += bias[n];
}

void apply_fused_activation(FusedActivation activation, float* y, int64_t M, int64_t N, int64_t ld) {
  if (activation == FusedActivation::gelu_erf) return gelu_erf_inplace(y, M, N, ld);
  if (activation == FusedActivation::none) return;
  constexpr float kSqrt2OverPi = 0.7978845608028654f, kGeluCubic = 0.044715f;  // as ops/silu_gate_cpu.cc
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float& v = y[m * ld + n];
      if (activation == FusedActivation::gelu_tanh)
        v = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v)));
      else v = activation == FusedActivation::relu ? std::max(v, 0.f) : std::tanh(v);
    }
}

size_t PackedLinear::packed_bytes() const {
  if (int8_) return int8_->packed_bytes();
  if (bf16_weights_) return bf16_weights_->packed_bytes();
  if (nf4_) return nf4_->packed_bytes();
  if (panels_) return panels_->packed_bytes();
  return impl_->weights_md.get_size();
}

size_t PackedLinear::bytes_read() const {
  if (int8_) return int8_->bytes_read();
  if (bf16_weights_ || nf4_ || panels_) return packed_bytes();
  return size_t(N_) * size_t(K_) * dtype_bytes(compute_, 1);
}

void PackedLinear::forward(const float* x, int64_t M, int64_t ldx, float* y, int64_t ldy) const {
  if (int8_) return int8_->forward(x, M, ldx, y, ldy);
  if (bf16_weights_) return bf16_weights_->forward(x, M, ldx, y, ldy);
  if (nf4_) return nf4_->forward(x, M, ldx, y, ldy);
  if (panels_) return panels_->forward(x, M, ldx, y, ldy);
  if (M == 0) return;
  check(ldx >= K_ && ldy >= N_, "PackedLinear::forward: row strides smaller than the matrix");
  dnnl::matmul prim;
  {
    // Keyed by M and the strides; the common case (contiguous) has ldx == K and ldy == N.
    const int64_t src_ld = impl_->src_dt == dt::bf16 ? K_ : ldx;  // bf16 input is converted to a dense copy
    const int64_t key = (M * 1'000'003 + src_ld) * 1'000'003 + ldy;
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->by_rows.find(key);
    if (it == impl_->by_rows.end())
      it = impl_->by_rows.emplace(key, dnnl::matmul(impl_->make_pd(M, K_, N_, src_ld, ldy, impl_->weights_md))).first;
    prim = it->second;
  }
  dnnl::stream s(onednn_engine());
  dnnl::memory::desc dst_md({M, N_}, dt::f32, {ldy, 1});
  dnnl::memory dst(dst_md, onednn_engine(), y);
  std::vector<uint16_t> x_bf16;
  dnnl::memory src;
  if (impl_->src_dt == dt::bf16) {
    // Activations are rounded to bf16 here; the packed weights already are.
    x_bf16.resize(static_cast<size_t>(M * K_));
    for (int64_t r = 0; r < M; ++r)
      convert_from_f32(DType::bf16, x + r * ldx, x_bf16.data() + r * K_, static_cast<size_t>(K_));
    src = dnnl::memory(dnnl::memory::desc({M, K_}, dt::bf16, {K_, 1}), onednn_engine(), x_bf16.data());
  } else {
    src = dnnl::memory(dnnl::memory::desc({M, K_}, dt::f32, {ldx, 1}), onednn_engine(), const_cast<float*>(x));
  }
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src},
                                             {DNNL_ARG_WEIGHTS, impl_->weights},
                                             {DNNL_ARG_DST, dst}};
  if (impl_->has_bias) args.emplace(DNNL_ARG_BIAS, impl_->bias);
  prim.execute(s, args);
  s.wait();
  if (impl_->gelu_after) gelu_erf_inplace(y, M, N_, ldy);
}

}  // namespace tach::cpu
