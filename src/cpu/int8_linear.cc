#include "cpu/int8_linear.h"

#include <cstring>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "cpu/int8_quant.h"
#include "cpu/onednn_engine.h"
#include "tach/error.h"

namespace tach::cpu {

using dt = dnnl::memory::data_type;

struct Int8Linear::Impl {
  dnnl::memory::desc weights_md;  // packed s8 layout (with oneDNN's s8·s8 compensation)
  std::shared_ptr<Storage> weights_storage;
  dnnl::memory weights;
  Tensor weight_scale;  // [N] f32: max|W[n, :]| / limit
  Tensor bias;          // [N] f32, or undefined
  FusedActivation activation = FusedActivation::none;
  mutable std::mutex mu;
  mutable std::map<std::pair<int64_t, int64_t>, dnnl::matmul> by_rows;  // (M, ldy) → primitive

  // src: [M, K] s8, dense  weights: [K, N] s8  dst: [M, N] s32 (row stride ldy)
  static dnnl::matmul::primitive_desc make_pd(int64_t M, int64_t K, int64_t N, int64_t ldy,
                                              const dnnl::memory::desc& w) {
    dnnl::memory::desc src({M, K}, dt::s8, {K, 1});
    dnnl::memory::desc dst({M, N}, dt::s32, {ldy, 1});
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, w, dnnl::memory::desc(), dst), onednn_engine());
  }
};

Int8Linear::Int8Linear(const Tensor& weight, const Tensor& bias, FusedActivation activation, int64_t packing_rows)
    : impl_(std::make_unique<Impl>()), limit_(int8_weight_code_limit()) {
  check(weight.dim() == 2, "Int8Linear: weight must be [out, in], got " + weight.describe());
  N_ = weight.size(0), K_ = weight.size(1);
  impl_->activation = activation;
  if (bias.defined()) {
    check(bias.numel() == N_, "Int8Linear: bias " + bias.describe() + " does not match weight " + weight.describe());
    impl_->bias = bias.to(DType::f32, MemoryCategory::weights).contiguous();
  }
  // Per output channel: row n of W [N, K] gets its own scale.
  const Tensor w = weight.to(DType::f32, MemoryCategory::workspace).contiguous();
  Tensor codes = Tensor::empty({N_, K_}, DType::i8, Device::cpu(), MemoryCategory::workspace);
  impl_->weight_scale = Tensor::empty({N_}, DType::f32, Device::cpu(), MemoryCategory::weights);
  quantize_rows_symmetric(w.data<float>(), N_, K_, K_, limit_, codes.data<int8_t>(), impl_->weight_scale.data<float>());

  // oneDNN 2.6 without VNNI (AVX-512 before it; not AVX2) runs a one-column product with more
  // than one row as a GEMV with the operands' roles swapped: the activations land on vpmaddubsw's
  // signed side, where full-range codes saturate whatever the weights' range (measured: 111 of
  // 130 rows wrong at K = 300). A second, zero column keeps it a GEMM, where 7-bit weights are exact.
  columns_ = N_ == 1 && limit_ < 127 ? 2 : N_;
  if (columns_ != N_) {
    Tensor padded = Tensor::zeros({columns_, K_}, DType::i8, Device::cpu(), MemoryCategory::workspace);
    std::memcpy(padded.raw(), codes.raw(), size_t(N_ * K_));
    codes = padded;
  }
  // Logical weights for matmul are [K, N]; the [N, K] codes are that with strides {1, K}.
  dnnl::memory::desc plain({K_, columns_}, dt::s8, {1, K_});
  dnnl::memory::desc any({K_, columns_}, dt::s8, dnnl::memory::format_tag::any);
  impl_->weights_md = Impl::make_pd(packing_rows, K_, columns_, columns_, any).weights_desc();
  impl_->weights_storage = Storage::allocate(Device::cpu(), impl_->weights_md.get_size(), MemoryCategory::weights);
  impl_->weights = dnnl::memory(impl_->weights_md, onednn_engine(), impl_->weights_storage->data());
  dnnl::memory src(plain, onednn_engine(), codes.raw());
  dnnl::stream s(onednn_engine());
  dnnl::reorder(src, impl_->weights).execute(s, src, impl_->weights);
  s.wait();
}

Int8Linear::~Int8Linear() = default;

size_t Int8Linear::packed_bytes() const { return impl_->weights_md.get_size() + size_t(N_) * sizeof(float); }

void Int8Linear::multiply_codes(const int8_t* codes, int64_t M, int32_t* acc, int64_t ldacc) const {
  if (M == 0) return;
  if (columns_ != N_) {  // the zero column's sums land beside the real ones, then those are copied
    std::vector<int32_t> wide(size_t(M * columns_));
    multiply_columns(codes, M, wide.data(), columns_);
    for (int64_t m = 0; m < M; ++m)
      std::memcpy(acc + m * ldacc, wide.data() + m * columns_, size_t(N_) * sizeof(int32_t));
    return;
  }
  multiply_columns(codes, M, acc, ldacc);
}

void Int8Linear::multiply_columns(const int8_t* codes, int64_t M, int32_t* acc, int64_t ldacc) const {
  dnnl::matmul prim;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->by_rows.find({M, ldacc});
    if (it == impl_->by_rows.end())
      it = impl_->by_rows
               .emplace(std::pair{M, ldacc}, dnnl::matmul(Impl::make_pd(M, K_, columns_, ldacc, impl_->weights_md)))
               .first;
    prim = it->second;
  }
  dnnl::stream s(onednn_engine());
  dnnl::memory src({{M, K_}, dt::s8, {K_, 1}}, onednn_engine(), const_cast<int8_t*>(codes));
  dnnl::memory dst({{M, columns_}, dt::s32, {ldacc, 1}}, onednn_engine(), acc);
  prim.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, impl_->weights}, {DNNL_ARG_DST, dst}});
  s.wait();
}

void Int8Linear::forward(const float* x, int64_t M, int64_t ldx, float* y, int64_t ldy) const {
  if (M == 0) return;
  check(ldx >= K_ && ldy >= N_, "Int8Linear::forward: row strides smaller than the matrix");
  // Activations per token: x [M, K] f32 → codes [M, K] s8 and scales [M].
  Tensor codes = Tensor::empty({M, K_}, DType::i8, Device::cpu(), MemoryCategory::workspace);
  Tensor row_scale = Tensor::empty({M}, DType::f32, Device::cpu(), MemoryCategory::workspace);
  quantize_rows_symmetric(x, M, K_, ldx, 127, codes.data<int8_t>(), row_scale.data<float>());
  multiply_codes(codes.data<int8_t>(), M, reinterpret_cast<int32_t*>(y), ldy);  // int32 sums, in y's bytes
  dequantize_int32_inplace(y, M, N_, ldy, row_scale.data<float>(), impl_->weight_scale.data<float>(),
                           impl_->bias.defined() ? impl_->bias.data<float>() : nullptr);
  apply_fused_activation(impl_->activation, y, M, N_, ldy);
}

}  // namespace tach::cpu
