#include "cpu/train_gemm.h"

#include <atomic>
#include <oneapi/dnnl/dnnl.hpp>

#include "core/allocator.h"
#include "cpu/gemm.h"

namespace tach::cpu {

namespace {

std::atomic<TrainPrecision> g_precision{TrainPrecision::f32};

// An operand's rounded copy for one call: workspace the allocator counts, so a bf16 training
// step's memory report includes it (the largest operands are the size of a weight or an
// activation), freed when the call returns. The allocator's block cache keeps the per-call
// allocation cheap.
template <typename T>
class RoundedCopy {
 public:
  RoundedCopy(int64_t rows, int64_t cols)
      : bytes_(size_t(rows * cols) * sizeof(T)),
        data_(static_cast<T*>(core::allocate_bytes(Device::cpu(), bytes_, MemoryCategory::workspace))) {}
  ~RoundedCopy() { core::deallocate_bytes(Device::cpu(), data_, bytes_, MemoryCategory::workspace); }
  RoundedCopy(const RoundedCopy&) = delete;
  RoundedCopy& operator=(const RoundedCopy&) = delete;
  T* data() const { return data_; }

 private:
  size_t bytes_;
  T* data_;
};

// The stored block of an operand (rows x cols with leading dimension ld) copied contiguous, each
// element rounded to bf16: as bf16 bits for a bf16 matmul, or as f32 values for the emulation.
void gather_bf16_bits(uint16_t* out, const float* src, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * ld;
    uint16_t* d = out + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      const float v = round_to_bf16(s[c]);
      uint32_t u;
      __builtin_memcpy(&u, &v, 4);
      d[c] = uint16_t(u >> 16);
    }
  }
}

void gather_rounded(float* out, const float* src, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * ld;
    float* d = out + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) d[c] = round_to_bf16(s[c]);
  }
}

}  // namespace

TrainPrecision train_precision() { return g_precision.load(std::memory_order_relaxed); }

TrainPrecisionScope::TrainPrecisionScope(TrainPrecision p) : previous(train_precision()) {
  g_precision.store(p, std::memory_order_relaxed);
}

TrainPrecisionScope::~TrainPrecisionScope() { g_precision.store(previous, std::memory_order_relaxed); }

bool bf16_train_gemm_onednn() { return default_gemm_backend() == GemmBackend::onednn && onednn_bf16_supported(); }

bool bf16_gemm_in_hardware() {
  static const bool hardware = [] {
    // oneDNN's ISA values are bit sets: an ISA includes every bit of the ones below it.
    const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (effective & bf16) == bf16;
  }();
  return bf16_train_gemm_onednn() && hardware;
}

void train_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const GemmBackend backend = default_gemm_backend();
  if (train_precision() == TrainPrecision::f32 || M == 0 || N == 0) {
    sgemm(backend, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  // The stored shapes: A is [M, K] ([K, M] transposed), B is [K, N] ([N, K] transposed).
  const int64_t a_rows = trans_a ? K : M, a_cols = trans_a ? M : K;
  const int64_t b_rows = trans_b ? N : K, b_cols = trans_b ? K : N;
  // Each call its own copies: attention calls this from the workers of its parallel loop.
  if (bf16_train_gemm_onednn()) {
    const RoundedCopy<uint16_t> a16(a_rows, a_cols), b16(b_rows, b_cols);
    gather_bf16_bits(a16.data(), A, a_rows, a_cols, lda);
    gather_bf16_bits(b16.data(), B, b_rows, b_cols, ldb);
    gemm_bf16(backend, trans_a, trans_b, M, N, K, alpha, a16.data(), a_cols, b16.data(), b_cols, beta, C, ldc);
    return;
  }
  const RoundedCopy<float> a32(a_rows, a_cols), b32(b_rows, b_cols);
  gather_rounded(a32.data(), A, a_rows, a_cols, lda);
  gather_rounded(b32.data(), B, b_rows, b_cols, ldb);
  sgemm(backend, trans_a, trans_b, M, N, K, alpha, a32.data(), a_cols, b32.data(), b_cols, beta, C, ldc);
}

}  // namespace tach::cpu
